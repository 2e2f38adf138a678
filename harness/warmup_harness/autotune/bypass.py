"""FlagGems 5.3's ways around the decision table: noticed and said once per kernel and way; what
none of the tuner's configs is, is never pinned.

The hooks (tuners.py) see a decision as a lookup in the tuner's store and a write to it. FlagGems
5.3's LibTuner (flag_gems/utils/libentry.py) picks a config without them three ways:

* a run mode (`use_run_mode("force_policy" | "exhaustive_collection")`, FlagTune's pretune and
  train): `run` prunes, times and launches its pick without asking `self.cache`. The hooks see a
  pruning with no key missed first; nothing is recorded, nothing pinned: the pick is the tuner's;
* `benchmark_config(config, ...)`: one config timed through `_bench`, no table, no pruning;
* FlagTune's cost model (FlagTree's Triton only): the policy times configs it makes itself, so
  the decision goes through `self.cache` and is recorded as made, but a pick that is none of the
  kernel's configs cannot be pinned: a replay sweeps that key live.

And one way a race (race.py) outlives its key: 5.3's tuner asks its store for a config's timing
before `_bench` (the pre-check), so a key whose timings are stored, wholly or in part, leaves
answers of its race unasked. A bypass's `_bench` is never answered by such a race: it is ended
first.

FlagGems' names read here, and only here. Checked on FlagGems 5.3.4; 5.0.2 has none of them.
"""

from __future__ import annotations

from typing import Any, Callable

from .configs import kernel_id

RUN_MODE = "_run_mode"  # LibTuner's scoped run mode, a str Enum: "normal", "force_policy", "exhaustive_collection"
NORMAL = "normal"
BENCHMARK_CONFIG = "benchmark_config"  # LibTuner.benchmark_config(config, *, warmup, rep, ...)
FLAGTUNE_MODE = "_flagtune_mode"  # runtime.TuningMode, a str Enum: "default", "expanded", "cost_model"
COST_MODEL = "cost_model"
RACE = "_warmup_harness_race"  # race.Racer's race of a tuner's key under way


def _mode(tuner: Any, name: str) -> str | None:
    value = getattr(tuner, name, None)
    value = getattr(value, "value", value)
    return value if isinstance(value, str) else None


def end_race(tuner: Any) -> None:
    tuner.__dict__.pop(RACE, None)


class Bypasses:
    """One session's watch on the bypasses: a line per (kernel, way), said once; the classes whose
    `benchmark_config` it wraps, put back at `uninstall`."""

    def __init__(self, say: Callable[[str], None]):
        self._say = say
        self._said: set[tuple[str, str]] = set()
        self._classes: set[type] = set()
        self.wrapped: list[tuple[type, Any]] = []

    def _once(self, kernel: str, way: str, line: str) -> None:
        if (kernel, way) not in self._said:
            self._said.add((kernel, way))
            self._say(f"{kernel}: {line}")

    def met(self, tuner: Any) -> None:
        """A tuner seen by the hooks: its class's `benchmark_config`, if any, is watched."""
        cls = type(tuner)
        if cls in self._classes:
            return
        self._classes.add(cls)
        owner = next((c for c in cls.__mro__ if BENCHMARK_CONFIG in c.__dict__), None)
        if owner is None or getattr(owner.__dict__[BENCHMARK_CONFIG], "_warmup_harness", False):
            return
        original = owner.__dict__[BENCHMARK_CONFIG]
        bypasses = self

        def benchmark_config(tuner, *args, **kwargs):
            end_race(tuner)
            bypasses._once(kernel_id(tuner), BENCHMARK_CONFIG,
                           "FlagGems' benchmark_config() times a config outside the decision table: "
                           "its timings are the tuner's own, and nothing of it is recorded or replayed")
            return original(tuner, *args, **kwargs)

        benchmark_config._warmup_harness = True
        self.wrapped.append((owner, original))
        setattr(owner, BENCHMARK_CONFIG, benchmark_config)

    def pruned_unasked(self, tuner: Any, kernel: str) -> None:
        """The tuner pruned its configs with no key missed in its store: a run mode's sweep, or none."""
        mode = _mode(tuner, RUN_MODE)
        if mode is None or mode == NORMAL:
            return
        end_race(tuner)
        self._once(kernel, RUN_MODE, f"FlagGems' run mode {mode} skips the decision table: its picks are the "
                                     f"tuner's own, neither recorded nor replayed")

    def sweeping(self, tuner: Any, kernel: str) -> None:
        """A key missed in the store is about to be timed."""
        if _mode(tuner, FLAGTUNE_MODE) == COST_MODEL:
            self._once(kernel, FLAGTUNE_MODE, "FlagTune's cost model picks among configs it makes: each pick is "
                                              "recorded as made; one that is none of the kernel's configs is "
                                              "swept live on replay")

    def uninstall(self) -> None:
        while self.wrapped:
            cls, original = self.wrapped.pop()
            setattr(cls, BENCHMARK_CONFIG, original)
