"""Racing a swept key's configs (`WARMUP_HARNESS_RACE`, `scripts/warmup --race`): every pruned config
is timed briefly first, the ones the short timing shows to lose by more than its noise are
dropped, and only the rest are timed in full, the tuner's own way; the winner is the fastest full
timing.

Why. Timing every config in full is most of a compile-heavy cold sweep once compiling is done
ahead: FlagGems' mm times about 160 configs a key, each for `warmup=5, rep=10` ms and do_bench's own
estimate runs, and most of them lose by a margin a few launches show.

How, at the seam the hooks time through (`_bench`, tuners.py), so that it serves Triton's
`Autotuner` and the subclasses that replace `run` (FlagGems' `LibTuner`) alike. At a key's first
`_bench` call the whole race runs, and each of the tuner's calls is then answered from it:

* short pass: each config through the tuner's own `_bench` (its hooks, its kernel call, the
  device lock), its `do_bench` swapped for a short one: the tuner's own do_bench where it takes
  `warmup` and `rep` (Triton's driver benchmarker, testing.do_bench, does), else the driver's,
  with SHORT_WARMUP_MS and SHORT_REP_MS. Configs go in the order their compiles finish
  (precompile/ahead.py), so that timing never waits on the slowest compile;
* noise: the short pass's best config is timed NOISE_SAMPLES times in all; its spread (the range
  over the median) is this key's noise on this device, measured, never assumed;
* a config is dropped when its short timing exceeds the best's median by more than NOISE_MARGIN
  times that spread; the rest are timed by the tuner's `_bench` unchanged (its own `warmup`/`rep`
  and do_bench), and a dropped config is answered `inf`, shaped as those answers are, so that the
  tuner's own minimum picks among the full timings only.

A tuner whose `_bench` never calls `do_bench` (it times its own way) cannot be timed briefly: its
first answer is kept as a full timing and that tuner is not raced again, said once. Only record
sessions race (session.py); a replay's live sweep times every config as without the harness.
Standard library only; Triton's names through triton_private.
"""

from __future__ import annotations

import inspect
import math
import os
import statistics
import time
from typing import Any, Callable

SHORT_WARMUP_MS = 1  # testing.do_bench's warm-up budget for a short timing: at least one launch
SHORT_REP_MS = 2  # ... and its timed budget: a few launches of a 0.25 ms kernel
NOISE_SAMPLES = 5  # short timings of the best config, whose spread is the key's noise
NOISE_MARGIN = 2.0  # a config is dropped past best * (1 + NOISE_MARGIN * spread)
RACE = "WARMUP_HARNESS_RACE"

Timer = Callable[[Any, Any], Any]  # (config, do_bench or None) -> the tuner's _bench answer


def score(result: Any) -> float:
    """A `_bench` answer as one number: Triton's is [median, p20, p80], a custom do_bench's may be a
    float."""
    value = result[0] if isinstance(result, (list, tuple)) and result else result
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.inf


def _takes_budget(bench: Any) -> bool:
    try:
        params = inspect.signature(bench).parameters.values()
    except (TypeError, ValueError):
        return False
    names = {p.name for p in params}
    return {"warmup", "rep"} <= names or any(p.kind is p.VAR_KEYWORD for p in params)


def short_bench(tuner: Any) -> Callable[..., Any] | None:
    """A do_bench that times briefly, for `tuner`: its own do_bench where it takes a warm-up and a
    repetition budget, else the device driver's benchmarker; None where neither does."""
    from .. import triton_private as tp

    for bench in (tp.tuner_do_bench(tuner), tp.device_benchmarker()):
        if bench is not None and _takes_budget(bench):
            def short(kernel_call, quantiles=None, _bench=bench, **_):
                return _bench(kernel_call, warmup=SHORT_WARMUP_MS, rep=SHORT_REP_MS, quantiles=quantiles)

            return short
    return None


class Race:
    """One key's race: its configs, and the answer for each once run."""

    def __init__(self, kernel: str, key: str, configs: list, order: Callable[[list], Any]):
        self.kernel = kernel
        self.key = key
        self.configs = list(configs)
        self.ids = {id(config) for config in self.configs}
        self._order = order  # configs -> the same configs, as their compiles finish
        self.answers: dict[int, Any] = {}  # id(config) -> the tuner's answer for it
        self.ran = False
        self.raced = 0
        self.retimed = 0
        self.short_s = 0.0
        self.full_s = 0.0
        self.spread: float | None = None

    def run(self, timer: Timer, short: Callable[..., Any]) -> bool:
        """Times the configs; False where the short timing never reached `short` (the tuner's
        `_bench` times its own way): the first answer is then a full one, kept, and the rest are
        left to the tuner."""
        self.ran = True
        used = []

        def counted(*args, **kwargs):
            used.append(True)
            return short(*args, **kwargs)

        first: dict[int, float] = {}
        start = time.perf_counter()
        for config in self._order(self.configs):
            answer = timer(config, counted)
            if not used:  # not briefly timed: a full timing
                self.answers[id(config)] = answer
                return False
            first[id(config)] = score(answer)
        best = min(self.configs, key=lambda c: first[id(c)])
        samples = [first[id(best)]] + [score(timer(best, counted)) for _ in range(NOISE_SAMPLES - 1)]
        self.short_s = time.perf_counter() - start
        middle = statistics.median(samples)
        if math.isfinite(middle) and middle > 0:
            self.spread = (max(samples) - min(samples)) / middle
            limit = middle * (1 + NOISE_MARGIN * self.spread)
            contenders = [c for c in self.configs if first[id(c)] <= limit]
        else:  # no config timed at all: nothing to drop on
            contenders = self.configs
        start = time.perf_counter()
        full = [timer(config, None) for config in contenders]
        self.full_s = time.perf_counter() - start
        lost = _losing(full[0] if full else None)
        for config in self.configs:
            self.answers[id(config)] = lost
        for config, answer in zip(contenders, full):
            self.answers[id(config)] = answer
        self.raced, self.retimed = len(self.configs), len(contenders)
        return True

    def line(self) -> str:
        spread = f"{self.spread:.1%}" if self.spread is not None else "none"
        return (f"race {self.kernel} key {self.key}: {self.raced} configs raced in {self.short_s:.2f}s "
                f"(noise {spread}), {self.retimed} re-timed in full in {self.full_s:.2f}s")


def _losing(shape: Any) -> Any:
    """`inf` as the tuner's answers look (Triton's: a list of quantiles)."""
    if isinstance(shape, (list, tuple)):
        return type(shape)([math.inf] * len(shape))
    return math.inf


class Racer:
    """A record session's racing: starts a race per swept key (tuners.py, at pruning), answers the
    tuner's timings from it, and keeps what each key cost, for the sidecar and the closing line."""

    def __init__(self, say: Callable[[str], None], order: Callable[[Any, list], Any] | None = None):
        self._say = say
        self._order = order or (lambda tuner, configs: configs)  # the precompiler's as_compiled
        self.keys: dict[str, dict[str, dict]] = {}  # kernel -> key -> {"raced": n, "retimed": m}
        self.raced = 0
        self.retimed = 0
        self.short_s = 0.0
        self.full_s = 0.0
        self._unraceable: set[type] = set()

    def start(self, tuner: Any, kernel: str, key: str | None, configs: list) -> None:
        """A key about to be timed: its race, unless it has fewer than two configs or its tuner
        cannot be timed briefly."""
        tuner.__dict__.pop("_warmup_harness_race", None)
        if (key is None or len(configs) < 2 or type(tuner) in self._unraceable
                or tuner.__dict__.get("_warmup_harness_unraced")):
            return
        tuner.__dict__["_warmup_harness_race"] = Race(kernel, key, configs,
                                                      lambda cs, t=tuner: self._order(t, cs))

    def bench(self, tuner: Any, config: Any, timer: Timer) -> Any:
        """The tuner's `_bench` answer for `config`: from its key's race (run at the first call),
        else timed as it always is."""
        race = tuner.__dict__.get("_warmup_harness_race")
        if race is None or id(config) not in race.ids:
            return timer(config, None)
        if not race.ran:
            short = short_bench(tuner)
            if short is None or not race.run(timer, short):
                self._give_up(tuner, race.kernel, short is not None)
                answer = race.answers.pop(id(config), None)
                tuner.__dict__.pop("_warmup_harness_race", None)
                return answer if answer is not None else timer(config, None)
            self._count(race)
        answer = race.answers.pop(id(config), None)
        if not race.answers:
            tuner.__dict__.pop("_warmup_harness_race", None)
        return answer if answer is not None else timer(config, None)

    def _give_up(self, tuner: Any, kernel: str, own_bench: bool) -> None:
        """No more races for this tuner's class (its `_bench` times without do_bench), or for this
        tuner (no do_bench takes a budget), said once."""
        cls = type(tuner)
        if own_bench:
            self._unraceable.add(cls)
            self._say(f"race: {cls.__module__}.{cls.__qualname__} is not raced (its _bench times without "
                      f"do_bench): its configs are each timed in full")
        else:
            tuner.__dict__["_warmup_harness_unraced"] = True
            self._say(f"race: {kernel} is not raced (no do_bench of its own or of the driver takes a warm-up "
                      f"and a repetition budget): its configs are each timed in full")

    def _count(self, race: Race) -> None:
        self.keys.setdefault(race.kernel, {})[race.key] = {"raced": race.raced, "retimed": race.retimed}
        self.raced += race.raced
        self.retimed += race.retimed
        self.short_s += race.short_s
        self.full_s += race.full_s
        if os.environ.get("TRITON_PRINT_AUTOTUNING") == "1":
            print(f"warmup-harness {race.line()}")

    def summary(self) -> str | None:
        if not self.keys:
            return None
        keys = sum(len(k) for k in self.keys.values())
        return (f"race: {keys} key(s), {self.raced} configs raced in {self.short_s:.1f}s, {self.retimed} "
                f"re-timed in full in {self.full_s:.1f}s")
