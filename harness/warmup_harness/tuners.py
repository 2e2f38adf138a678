"""Hooks into Triton's autotuners: where a decision is recorded, and where a recorded one is pinned.

Where to hook. Triton's `Autotuner.run` and the subclasses that replace it (FlagGems' `LibTuner`)
share little inside `run`: each computes its own key (LibTuner's strategies round shapes, to a
power of two for example), keeps decisions in its own store (a dict for Triton, a SQLite-backed
`ConfigCache` for FlagGems) and picks a winner its own way. What they all do is go through
`self.cache` with the tuner's own key:

    if key not in self.cache:        # a miss: prune, time every config, pick one
        ...
        self.cache[key] = best        # the decision
    config = self.cache[key]          # the config launched

(Triton 3.2 to 3.6 `Autotuner.run`; FlagGems 5.x `LibTuner.run`.) So `cache` becomes a property of
`Autotuner` that hands every tuner, subclass or not and however it was created, a view of its store
(`TunerCache`) that records or pins decisions at exactly those three points, keyed by the tuner's
own key. No tuner class is named or imported; a subclass that keeps its decisions somewhere other
than `self.cache` is not seen. Heuristics-only kernels are not autotuners and are left alone.

`cache_results` becomes a property too, always False while the hooks are in: Triton's on-disk
autotune cache (3.4+) would turn a sweep into a lookup the same way a warm FlagGems store does.

On a miss, Triton's and FlagGems' tuners prune their configs (`prune_configs`) right before they
time them: the hook there hands the pruned configs to the session's precompiler (precompile.py),
which compiles them all at once, and `_bench`, where each config is timed, goes through it too.

This module imports Triton; the plugin imports it only when a protocol variable is set.
"""

from __future__ import annotations

import inspect
import json
import sys
import time
import weakref
from typing import Any, Callable

from triton.runtime.autotuner import Autotuner

_MISSING = object()


def kernel_id(tuner: Any) -> str:
    """`module:qualified name` of the Python function under the tuner: unique when two modules
    define kernels of one name (FlagGems has two `mm_kernel_general`), the same in every process
    that imports the same code."""
    fn = getattr(tuner, "base_fn", None) or tuner.fn
    while not inspect.isfunction(fn) and hasattr(fn, "fn"):
        fn = fn.fn
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', getattr(fn, '__name__', '?'))}"


def key_text(key: Any) -> str:
    """The tuner's own key as a JSON text: a tuple `(1024, 512, 'torch.float16')` becomes
    `[1024, 512, "torch.float16"]`. Values JSON cannot hold are written with `str`."""
    return json.dumps(key, default=str)


def config_record(config: Any) -> dict:
    """Everything that rebuilds a `triton.Config` of this Triton version: its kwargs and every other
    attribute it has (num_warps, num_stages, num_ctas, maxnreg, ir_override, ... as the version
    defines them), except the pre-hook, which replay takes from the tuner's own config, and other
    functions: their text would differ between processes. The pre-hook is left out even when it is
    None, as in a config FlagGems' store rebuilt: the kernel's own config has a function there."""
    plain = {name: value for name, value in vars(config).items()
             if name != "pre_hook" and not callable(value)}
    return json.loads(json.dumps(plain, default=repr))


def _config_text(record: dict) -> str:
    """A config's record as one text, to compare by: without `pre_hook`, which records written
    before it was left out hold as null."""
    return json.dumps({k: v for k, v in record.items() if k != "pre_hook"}, sort_keys=True)


def device_name() -> str | None:
    """The device this process runs on, from modules the benchmark already imported."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            return str(torch.cuda.get_device_name(torch.cuda.current_device()))
    except Exception:
        pass
    try:
        from triton.runtime.driver import driver

        target = driver.active.get_current_target()
        return f"{target.backend} {target.arch}"
    except Exception:
        return None


_precompiler: Any = None  # the session's precompile.Precompiler while the hooks are in


def before_timing(tuner: Any, configs: list, launch_kwargs: dict) -> None:
    """Runs once per new key, after the tuner pruned its configs and before it times them:
    the session's precompiler compiles them (`tuner.nargs` holds the launch's positional arguments
    by name, `launch_kwargs` the rest)."""
    if _precompiler is not None:
        _precompiler.before_timing(kernel_id(tuner), tuner, configs, launch_kwargs)


class TunerState:
    """What the hooks keep per tuner: its id, keys swept but not yet decided, its config index, and
    the keys already settled, so that a launch after the first costs a dict lookup, as it does
    without the hooks (a replay's launches are what the benchmark measures)."""

    def __init__(self, tuner: Any):
        self.kernel = kernel_id(tuner)
        self.miss_started: dict[str, float] = {}
        self.pending: str | None = None  # a key whose sweep is about to prune and time
        self.pinned: dict[Any, Any] = {}  # replay: tuner key -> the tuner's config it is pinned to
        self.recorded: set[Any] = set()  # record: tuner keys whose decision is in the record
        self.unpinned: set[Any] = set()  # replay: tuner keys the record cannot answer
        self._index_of: tuple[int, int] | None = None
        self._index: dict[str, Any] = {}

    def config_index(self, configs: list) -> dict[str, Any]:
        """The tuner's configs by their record text (first of equal ones); rebuilt when the tuner
        swaps its list (FlagGems can)."""
        stamp = (id(configs), len(configs))
        if stamp != self._index_of:
            self._index = {}
            for config in configs:
                self._index.setdefault(_config_text(config_record(config)), config)
            self._index_of = stamp
        return self._index


class Policy:
    """What the store view does at a lookup, a miss and a decision; record and replay subclass it.

    It also notices two live tuners under one kernel id (a factory that wraps one function twice):
    their records would share one entry, so the session names them."""

    def __init__(self):
        self._tuners: dict[str, weakref.ref] = {}
        self.shared_ids: set[str] = set()

    def seen(self, kernel: str, tuner: Any) -> None:
        other = self._tuners.get(kernel)
        if other is not None and other() is not None and other() is not tuner:
            self.shared_ids.add(kernel)
        else:
            self._tuners[kernel] = weakref.ref(tuner)

    def contains(self, tuner: Any, state: TunerState, key: Any, raw: Any) -> bool:
        return key in raw

    def getitem(self, tuner: Any, state: TunerState, key: Any, raw: Any) -> Any:
        return raw[key]

    def setitem(self, tuner: Any, state: TunerState, key: Any, config: Any, raw: Any) -> None:
        raw[key] = config


def _remember(into: dict | set, key: Any, value: Any = None) -> None:
    """Remembers a settled key; an unhashable one is never settled and takes the slow path."""
    try:
        if isinstance(into, dict):
            into[key] = value
        else:
            into.add(key)
    except TypeError:
        pass


class TunerCache:
    """A tuner's store as the tuner sees it while the hooks are in: lookups and decisions go
    through the policy, everything else straight to the store."""

    __slots__ = ("raw", "_tuner", "_state", "_policy", "_pinned")

    def __init__(self, tuner: Any, raw: Any, state: TunerState, policy: Policy):
        self.raw = raw
        self._tuner = tuner
        self._state = state
        self._policy = policy
        self._pinned = state.pinned

    # A pinned key is answered first and inline: a replay's launches are what the benchmark times.
    def __contains__(self, key: Any) -> bool:
        try:
            if key in self._pinned:
                return True
        except TypeError:
            pass
        found = self._policy.contains(self._tuner, self._state, key, self.raw)
        if not found:
            text = key_text(key)
            self._state.miss_started[text] = time.perf_counter()
            self._state.pending = text
        return found

    def __getitem__(self, key: Any) -> Any:
        try:
            return self._pinned[key]
        except (KeyError, TypeError):
            return self._policy.getitem(self._tuner, self._state, key, self.raw)

    def __setitem__(self, key: Any, config: Any) -> None:
        self._policy.setitem(self._tuner, self._state, key, config, self.raw)

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def __len__(self) -> int:
        return len(self.raw)

    def __iter__(self):
        return iter(self.raw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def _state(tuner: Any, policy: Policy) -> TunerState:
    state = tuner.__dict__.get("_warmup_harness_state")
    if state is None:
        state = tuner.__dict__["_warmup_harness_state"] = TunerState(tuner)
        policy.seen(state.kernel, tuner)
    return state


_installed: dict[str, Any] | None = None


def install(policy: Policy, precompiler: Any = None) -> None:
    """Puts the hooks on `Autotuner`, for every subclass and every instance, existing or future.
    With a precompiler, a new key's configs go to it before they are timed, and each timing
    (`Autotuner._bench`, which FlagGems' LibTuner calls too) goes through its `bench`."""
    global _installed, _precompiler
    if _installed is not None:
        raise RuntimeError("warmup-harness: the autotuner hooks are already installed")

    def get_cache(self):
        d = self.__dict__
        try:
            raw = d["cache"]
        except KeyError:
            raise AttributeError("cache") from None
        view = d.get("_warmup_harness_view")
        if view is None or view.raw is not raw:
            view = d["_warmup_harness_view"] = TunerCache(self, raw, _state(self, policy), policy)
        return view

    def set_cache(self, value):
        # A tuner that saves and restores its store (FlagGems' use_benchmark_protocol) hands back
        # the view it was given: keep the store underneath.
        self.__dict__["cache"] = value.raw if isinstance(value, TunerCache) else value

    def del_cache(self):
        self.__dict__.pop("cache", None)

    def get_cache_results(self):
        return False

    def set_cache_results(self, value):
        self.__dict__["cache_results"] = value

    original_prune = Autotuner.prune_configs

    def prune_configs(self, *args, **kwargs):
        configs = original_prune(self, *args, **kwargs)
        state = _state(self, policy)
        if state.pending is not None:
            state.pending = None
            if precompiler is not None:
                _time_through(precompiler, type(self))
            before_timing(self, configs, args[0] if args else kwargs.get("kwargs", {}))
        return configs

    _installed = {name: Autotuner.__dict__.get(name, _MISSING)
                  for name in ("cache", "cache_results", "prune_configs")}
    Autotuner.cache = property(get_cache, set_cache, del_cache)
    Autotuner.cache_results = property(get_cache_results, set_cache_results)
    Autotuner.prune_configs = prune_configs
    if precompiler is not None:
        _time_through(precompiler, Autotuner)
        _precompiler = precompiler


_benches: list[tuple[type, Any]] = []  # (class, its own _bench) for each class whose _bench is wrapped


def _time_through(precompiler: Any, cls: type) -> None:
    """Sends each timing of `cls`'s tuners (`_bench`, where one config is timed) through the
    precompiler: Autotuner's when the hooks go in, and a subclass's own `_bench`, should it have
    one, at its first new key."""
    owner = next((c for c in cls.__mro__ if "_bench" in c.__dict__), None)
    if owner is None or getattr(owner.__dict__["_bench"], "_warmup_harness", False):
        return
    original = owner.__dict__["_bench"]

    def _bench(self, *args, config, **meta):
        return precompiler.bench(self, args, config, meta, lambda: original(self, *args, config=config, **meta))

    _bench._warmup_harness = True
    _benches.append((owner, original))
    owner._bench = _bench


def uninstall() -> None:
    """Takes the hooks off; every tuner's store is as the tuner left it."""
    global _installed, _precompiler
    _precompiler = None
    while _benches:
        cls, original = _benches.pop()
        cls._bench = original
    if _installed is None:
        return
    for name, value in _installed.items():
        if value is _MISSING:
            delattr(Autotuner, name)
        else:
            setattr(Autotuner, name, value)
    _installed = None


class Recorder(Policy):
    """Record mode: every decision goes to the writer, with the seconds its sweep took."""

    def __init__(self, add: Callable[[str, str, dict, float | None], None]):
        super().__init__()
        self._add = add
        self._recorded: dict[tuple[str, str], str] = {}

    def _record(self, state: TunerState, text: str, config: Any, seconds: float | None) -> None:
        record = config_record(config)
        canon = _config_text(record)
        if self._recorded.get((state.kernel, text)) != canon:
            self._add(state.kernel, text, record, seconds)
            self._recorded[state.kernel, text] = canon

    def setitem(self, tuner, state, key, config, raw):
        raw[key] = config
        text = key_text(key)
        started = state.miss_started.pop(text, None)
        self._record(state, text, config, time.perf_counter() - started if started is not None else None)
        _remember(state.recorded, key)

    def getitem(self, tuner, state, key, raw):
        # A decision the tuner found in its store (one the user chose with FLAGGEMS_DB_URL) is
        # recorded too, so that the record holds every config the run used.
        config = raw[key]
        try:
            if key in state.recorded:
                return config
        except TypeError:
            pass
        text = key_text(key)
        if (state.kernel, text) not in self._recorded:
            self._record(state, text, config, None)
        _remember(state.recorded, key)
        return config


class ReplayMiss(RuntimeError):
    """A key the replay cannot pin, under `--warmup-replay-miss=fail`."""


class Replayer(Policy):
    """Replay mode: a recorded key is answered with the tuner's own matching config; any other key
    goes to the tuner's sweep, counted."""

    def __init__(self, records: dict[str, dict[str, dict]], source: str, fail: bool,
                 first_lookup: Callable[[], None]):
        super().__init__()
        self._records = records
        self._source = source
        self.fail = fail  # a key the record cannot answer raises instead of being swept
        self._first_lookup: Callable[[], None] | None = first_lookup
        self.replayed: set[tuple[str, str]] = set()
        self.missed: dict[tuple[str, str], str] = {}

    def _pin(self, tuner: Any, state: TunerState, key: Any) -> Any:
        try:
            if key in state.unpinned and not self.fail:
                return None
        except TypeError:
            pass
        if self._first_lookup is not None:
            check, self._first_lookup = self._first_lookup, None
            check()
        text = key_text(key)
        recorded = self._records.get(state.kernel, {}).get(text)
        if recorded is None:
            return self._miss(state, key, text, "not in the record")
        config = state.config_index(tuner.configs).get(_config_text(recorded))
        if config is None:
            return self._miss(state, key, text, "its recorded config is not among the kernel's configs")
        self.replayed.add((state.kernel, text))
        _remember(state.pinned, key, config)
        return config

    def _miss(self, state: TunerState, key: Any, text: str, why: str) -> None:
        self.missed.setdefault((state.kernel, text), why)
        _remember(state.unpinned, key)
        if self.fail:
            raise ReplayMiss(
                f"warmup-harness: replay miss: kernel {state.kernel} key {text} {why} "
                f"({self._source}); --warmup-replay-miss=fail forbids sweeping it live"
            )
        return None

    def contains(self, tuner, state, key, raw):
        return self._pin(tuner, state, key) is not None or key in raw

    def getitem(self, tuner, state, key, raw):
        config = self._pin(tuner, state, key)
        return config if config is not None else raw[key]
