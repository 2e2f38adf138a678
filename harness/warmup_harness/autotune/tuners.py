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
time them: the hook there hands the pruned configs to the session's precompiler (precompile/),
which compiles them all at once, and `_bench`, where each config is timed, goes through it too;
with a racer (race.py) the hook runs the key's race and hands the tuner only the configs it keeps,
whose `_bench` calls it answers.

FlagGems 5.3's ways of picking without the store (run modes, `benchmark_config`, FlagTune's cost
model) are watched by bypass.py, which says each once.

The autotuner's names these hooks touch are listed, with the versions checked, in
triton_private.py. The hooks' state (what they replaced, the precompiler, the clock) is the
`Hooks` object the session holds, found again on `Autotuner` itself (its `_warmup_harness_view`
descriptor is the object's); no module global.

A decided key's launch is what the benchmark times: it makes no Python call more than without the
hooks. `cache`'s getter is C (`operator.attrgetter` of the view in the tuner's __dict__), and the
view's `key in view` and `view[key]` of a settled key are dict's own lookups (tuner_cache.py).

This module imports Triton; the plugin imports it only when a protocol variable is set.
"""

from __future__ import annotations

import operator
import weakref
from typing import Any

from triton.runtime.autotuner import Autotuner

from ..triton_private import do_bench_as
from .bypass import Bypasses
from .configs import kernel_id
from .tuner_cache import Policy, TunerCache, TunerState
# Record and replay, by the names the hooks' callers have always used.
from .policies import Recorder, ReplayMiss, Replayer  # noqa: F401

_MISSING = object()
PATCHED = ("cache", "cache_results", "prune_configs")  # Autotuner's names the hooks replace
VIEW = "_warmup_harness_view"  # a tuner's store view (TunerCache), in its __dict__
STATE = "_warmup_harness_state"  # what the hooks keep for a tuner (TunerState), in its __dict__


def _state(tuner: Any, policy: Policy) -> TunerState:
    state = tuner.__dict__.get(STATE)
    if state is None:
        state = tuner.__dict__[STATE] = TunerState(tuner)
        policy.seen(state.kernel, tuner)
    return state


class Hooks:
    """One session's hooks on `Autotuner`, for every subclass and every instance, existing or
    future, and their state. With a precompiler, a new key's configs go to it before they are
    timed, and each timing (`Autotuner._bench`, which FlagGems' LibTuner calls too) goes through its
    `bench`, counted by `clock` (clocks.CompileClock) when given."""

    def __init__(self, policy: Policy, precompiler: Any = None, clock: Any = None, racer: Any = None,
                 say: Any = None):
        self.policy = policy
        self.bypasses = Bypasses(say or (lambda line: None))  # FlagGems 5.3's ways around the store (bypass.py)
        self.racer = racer  # the session's race.Racer (record mode with racing on), or None
        self.precompiler = precompiler  # the session's precompiler.Precompiler, or None
        self.clock = clock  # the session's clocks.CompileClock, or None
        self.replaced: dict[str, Any] | None = None  # Autotuner's own attributes while the hooks are in
        self.benches: list[tuple[type, Any]] = []  # (class, its own _bench) for each class whose _bench is wrapped
        self.viewed: weakref.WeakSet = weakref.WeakSet()  # tuners given a view: their views and state go at uninstall

    # The store view, as Autotuner's `cache` property. Its getter is C (attrgetter): a launch reads
    # `self.cache` twice, and the view it finds in the tuner's __dict__ costs no Python call. The
    # view is made at the tuner's first read (Views, a non-data descriptor on Autotuner) and
    # dropped when the tuner sets its store.
    def _make_view(self, tuner):
        d = tuner.__dict__
        try:
            raw = d["cache"]
        except KeyError:
            raise AttributeError("cache") from None
        view = d[VIEW] = TunerCache(tuner, raw, _state(tuner, self.policy), self.policy)
        self.viewed.add(tuner)
        self.bypasses.met(tuner)
        return view

    @staticmethod
    def _set_cache(tuner, value):
        # A tuner that saves and restores its store (FlagGems' use_benchmark_protocol) hands back
        # the view it was given: keep the store underneath.
        tuner.__dict__["cache"] = value.raw if isinstance(value, TunerCache) else value
        tuner.__dict__.pop(VIEW, None)

    @staticmethod
    def _del_cache(tuner):
        tuner.__dict__.pop("cache", None)
        tuner.__dict__.pop(VIEW, None)

    def before_timing(self, tuner: Any, configs: list, launch_kwargs: dict) -> None:
        """Runs once per new key, after the tuner pruned its configs and before it times them:
        the session's precompiler compiles them (`tuner.nargs` holds the launch's positional
        arguments by name, `launch_kwargs` the rest)."""
        if self.precompiler is not None:
            self.precompiler.before_timing(kernel_id(tuner), tuner, configs, launch_kwargs)

    def install(self) -> None:
        """Puts the hooks on `Autotuner`; raises RuntimeError where a session's hooks are in."""
        if installed() is not None:
            raise RuntimeError("warmup-harness: the autotuner hooks are already installed")
        hooks = self
        original_prune = Autotuner.prune_configs

        def prune_configs(tuner, *args, **kwargs):
            configs = original_prune(tuner, *args, **kwargs)
            state = _state(tuner, hooks.policy)
            hooks.bypasses.met(tuner)
            if state.pending is None:
                hooks.bypasses.pruned_unasked(tuner, state.kernel)
            else:
                hooks.bypasses.sweeping(tuner, state.kernel)
                key, state.pending = state.pending, None
                progress = getattr(hooks.policy, "progress", None)  # record mode's (progress.py)
                if progress is not None:
                    progress.timing(len(configs))
                if hooks.precompiler is not None or hooks.racer is not None:
                    hooks._time_through(type(tuner))
                worth = configs  # all of them, but those a race's history holds back, best first
                launch_kwargs = args[0] if args else kwargs.get("kwargs", {})
                if hooks.racer is not None:
                    worth = hooks.racer.start(tuner, state.kernel, key, configs, lambda: state.fingerprint(tuner))
                hooks.before_timing(tuner, worth, launch_kwargs)
                if hooks.racer is not None:  # the tuner times only the configs its race keeps
                    return hooks.racer.decide(tuner, configs, hooks._timer(tuner, launch_kwargs),
                                              lambda more: hooks.before_timing(tuner, more, launch_kwargs))
            return configs

        self.replaced = {name: Autotuner.__dict__.get(name, _MISSING) for name in (*PATCHED, VIEW)}
        setattr(Autotuner, VIEW, Views(self))
        Autotuner.cache = property(operator.attrgetter(VIEW), self._set_cache, self._del_cache)
        Autotuner.cache_results = property(lambda tuner: False, _set_cache_results)
        Autotuner.prune_configs = prune_configs
        if self.precompiler is not None or self.racer is not None:
            self._time_through(Autotuner)

    def _time_through(self, cls: type) -> None:
        """Sends each timing of `cls`'s tuners (`_bench`, where one config is timed) through the
        precompiler: Autotuner's when the hooks go in, and a subclass's own `_bench`, should it
        have one, at its first new key."""
        owner = next((c for c in cls.__mro__ if "_bench" in c.__dict__), None)
        if owner is None or getattr(owner.__dict__["_bench"], "_warmup_harness", False):
            return
        original = owner.__dict__["_bench"]
        hooks = self

        def _bench(tuner, *args, config, **meta):
            timer = hooks._timing(tuner, original, args, meta)
            return timer(config) if hooks.racer is None else hooks.racer.bench(tuner, config, timer)

        _bench._warmup_harness = True
        _bench._warmup_harness_original = original
        self.benches.append((owner, original))
        owner._bench = _bench

    def _timing(self, tuner: Any, original: Any, args: tuple, meta: dict) -> Any:
        """One launch's timer: (config, do_bench or None) -> the tuner's own `_bench` answer for
        `config` with the tuner's do_bench or the race's short one, through the precompiler."""
        precompiler, clock = self.precompiler, self.clock

        def timer(config, do_bench=None):
            def time_it():
                if do_bench is None:
                    return original(tuner, *args, config=config, **meta)
                with do_bench_as(tuner, do_bench):
                    return original(tuner, *args, config=config, **meta)

            if precompiler is None:
                return time_it()
            if clock is None:
                return precompiler.bench(tuner, args, config, meta, time_it)
            return clock.bench(precompiler, lambda timed: precompiler.bench(tuner, args, config, meta, timed),
                               time_it)

        return timer

    def _timer(self, tuner: Any, launch_kwargs: dict) -> Any:
        """The timer of the launch being tuned, for its race: the launch's positional arguments are
        `tuner.nargs` (in order, as `run` made it), its keyword ones those pruning was given. None
        where the tuner's `run` set no `nargs`, or its `_bench` is not the hooks'."""
        nargs = getattr(tuner, "nargs", None)
        original = getattr(getattr(type(tuner), "_bench", None), "_warmup_harness_original", None)
        if not isinstance(nargs, dict) or original is None or "_bench" in tuner.__dict__:
            return None
        return self._timing(tuner, original, tuple(nargs.values()), dict(launch_kwargs))

    def uninstall(self) -> None:
        """Takes the hooks off; every tuner's store is as the tuner left it."""
        self.bypasses.uninstall()
        while self.benches:
            cls, original = self.benches.pop()
            cls._bench = original
        for tuner in list(self.viewed):  # a later session's hooks make their own views
            tuner.__dict__.pop(VIEW, None)
            tuner.__dict__.pop(STATE, None)
        self.viewed.clear()
        if self.replaced is None:
            return
        for name, value in self.replaced.items():
            if value is _MISSING:
                delattr(Autotuner, name)
            else:
                setattr(Autotuner, name, value)
        self.replaced = None


def _set_cache_results(tuner, value):
    tuner.__dict__["cache_results"] = value


class Views:
    """Autotuner's `_warmup_harness_view` while the hooks are in: a tuner's first read of it makes
    its view, which its __dict__ then answers (a non-data descriptor yields to the instance)."""

    def __init__(self, hooks: Hooks):
        self.hooks = hooks

    def __get__(self, tuner, owner=None):
        return self if tuner is None else self.hooks._make_view(tuner)


def installed() -> Hooks | None:
    """The hooks on `Autotuner` now, read off the class (its views are theirs)."""
    views = Autotuner.__dict__.get(VIEW)
    return views.hooks if isinstance(views, Views) else None


def install(policy: Policy, precompiler: Any = None, clock: Any = None, racer: Any = None,
            say: Any = None) -> Hooks:
    """Puts a session's hooks on `Autotuner` (Hooks) and returns them; the session takes them off.
    `say` says a line (a bypass of FlagGems 5.3's, bypass.py)."""
    hooks = Hooks(policy, precompiler, clock, racer, say)
    hooks.install()
    return hooks


def uninstall() -> None:
    """Takes off whichever hooks are on `Autotuner` (a test's cleanup; a session uses its own)."""
    hooks = installed()
    if hooks is not None:
        hooks.uninstall()
