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

(Triton 3.4 to 3.9 `Autotuner.run`; FlagGems 5.x `LibTuner.run`.) So `cache` becomes a property of
`Autotuner` that hands every tuner, subclass or not and however it was created, a view of its store
(`TunerCache`) that records or pins decisions at exactly those three points, keyed by the tuner's
own key. No tuner class is named or imported; a subclass that keeps its decisions somewhere other
than `self.cache` is not seen. Heuristics-only kernels are not autotuners and are left alone.

`cache_results` becomes a property too, always False while the hooks are in: Triton's on-disk
autotune cache (3.4+) would turn a sweep into a lookup the same way a warm FlagGems store does.

On a miss, Triton's and FlagGems' tuners prune their configs (`prune_configs`) right before they
time them: the hook there hands the pruned configs to the session's precompiler (precompile.py),
which compiles them all at once, and `_bench`, where each config is timed, goes through it too.

The autotuner's names these hooks touch are listed, with the versions checked, in
triton_private.py. This module imports Triton; the plugin imports it only when a protocol
variable is set.
"""

from __future__ import annotations

from typing import Any

from triton.runtime.autotuner import Autotuner

from .configs import kernel_id
from .store import Policy, TunerCache, TunerState
# Record and replay, by the names the hooks' callers have always used.
from .policies import Recorder, ReplayMiss, Replayer  # noqa: F401

_MISSING = object()

_precompiler: Any = None  # the session's precompile.Precompiler while the hooks are in


def before_timing(tuner: Any, configs: list, launch_kwargs: dict) -> None:
    """Runs once per new key, after the tuner pruned its configs and before it times them:
    the session's precompiler compiles them (`tuner.nargs` holds the launch's positional arguments
    by name, `launch_kwargs` the rest)."""
    if _precompiler is not None:
        _precompiler.before_timing(kernel_id(tuner), tuner, configs, launch_kwargs)


def _state(tuner: Any, policy: Policy) -> TunerState:
    state = tuner.__dict__.get("_warmup_harness_state")
    if state is None:
        state = tuner.__dict__["_warmup_harness_state"] = TunerState(tuner)
        policy.seen(state.kernel, tuner)
    return state


_installed: dict[str, Any] | None = None


def install(policy: Policy, precompiler: Any = None, clock: Any = None) -> None:
    """Puts the hooks on `Autotuner`, for every subclass and every instance, existing or future.
    With a precompiler, a new key's configs go to it before they are timed, and each timing
    (`Autotuner._bench`, which FlagGems' LibTuner calls too) goes through its `bench`, counted by
    `clock` (seconds.CompileClock) when given."""
    global _installed, _precompiler, _clock
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
        _clock = clock
        _time_through(precompiler, Autotuner)
        _precompiler = precompiler


_benches: list[tuple[type, Any]] = []  # (class, its own _bench) for each class whose _bench is wrapped
_clock: Any = None  # the session's seconds.CompileClock while the hooks are in


def _time_through(precompiler: Any, cls: type) -> None:
    """Sends each timing of `cls`'s tuners (`_bench`, where one config is timed) through the
    precompiler: Autotuner's when the hooks go in, and a subclass's own `_bench`, should it have
    one, at its first new key."""
    owner = next((c for c in cls.__mro__ if "_bench" in c.__dict__), None)
    if owner is None or getattr(owner.__dict__["_bench"], "_warmup_harness", False):
        return
    original = owner.__dict__["_bench"]

    def _bench(self, *args, config, **meta):
        def time_it():
            return original(self, *args, config=config, **meta)

        if _clock is None:
            return precompiler.bench(self, args, config, meta, time_it)
        return _clock.bench(precompiler, lambda timed: precompiler.bench(self, args, config, meta, timed), time_it)

    _bench._warmup_harness = True
    _benches.append((owner, original))
    owner._bench = _bench


def uninstall() -> None:
    """Takes the hooks off; every tuner's store is as the tuner left it."""
    global _installed, _precompiler, _clock
    _precompiler = _clock = None
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
