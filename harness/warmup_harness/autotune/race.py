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

With history (`WARMUP_HARNESS_RACE_HISTORY` N, History): each raced key records which of the
tuner's configs came within NEAR of the best short timing; a kernel whose record on this device
holds N such keys for its current fingerprint skips the configs near on none of them, before they
are compiled. N and NEAR are opt-in until measured.

A tuner whose `_bench` never calls `do_bench` (its class times its own way), or that has no
do_bench taking a budget, cannot be timed briefly: its first answer is kept as a full timing and
that class, or that tuner, is not raced again, said once. Only record sessions race (session.py);
a replay's live sweep times every config as without the harness. Standard library only; Triton's
names through triton_private.
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
NEAR = 0.10  # a config within this of the best short timing is `near` in the key's record (history)
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

    def __init__(self, kernel: str, key: str, configs: list, order: Callable[[list], Any],
                 index_of: dict[int, int] | None = None, skipped: set[int] = frozenset(), near: float = NEAR):
        self.kernel = kernel
        self.key = key
        self.configs = list(configs)
        self.ids = {id(config) for config in self.configs}
        self._index_of = index_of or {}  # id(config) -> its index among the tuner's configs
        self._skipped = skipped  # ids of configs the history rules out: neither compiled nor timed
        self._near_x = near
        self.near: list[int] = []  # indexes of the configs within `near` of the best short timing
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
        raced = [c for c in self.configs if id(c) not in self._skipped]
        for config in self._order(raced):
            answer = timer(config, counted)
            if not used:  # not briefly timed: a full timing
                self.answers[id(config)] = answer
                return False
            first[id(config)] = score(answer)
        best = min(raced, key=lambda c: first[id(c)])
        samples = [first[id(best)]] + [score(timer(best, counted)) for _ in range(NOISE_SAMPLES - 1)]
        self.short_s = time.perf_counter() - start
        middle = statistics.median(samples)
        if math.isfinite(middle) and middle > 0:
            self.spread = (max(samples) - min(samples)) / middle
            limit = middle * (1 + NOISE_MARGIN * self.spread)
            contenders = [c for c in raced if first[id(c)] <= limit]
            self.near = sorted({self._index_of[id(c)] for c in raced if id(c) in self._index_of
                                and (c is best or first[id(c)] <= middle * (1 + self._near_x))})
        else:  # no config timed at all: nothing to drop on
            contenders = raced
        start = time.perf_counter()
        full = [timer(config, None) for config in contenders]
        self.full_s = time.perf_counter() - start
        lost = _losing(full[0] if full else None)
        for config in self.configs:
            self.answers[id(config)] = lost
        for config, answer in zip(contenders, full):
            self.answers[id(config)] = answer
        self.raced, self.retimed = len(raced), len(contenders)
        return True

    def record(self) -> dict:
        """The key's entry in the sidecar's `race`."""
        return {"raced": self.raced, "retimed": self.retimed, "skipped": len(self.configs) - self.raced,
                "near": self.near}

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

    def __init__(self, say: Callable[[str], None], order: Callable[[Any, list], Any] | None = None,
                 history: History | None = None, near: float = NEAR):
        self._say = say
        self._order = order or (lambda tuner, configs: configs)  # the precompiler's as_compiled
        self._history = history
        self._near = near
        self.keys: dict[str, dict[str, dict]] = {}  # kernel -> key -> Race.record()
        self.skipped = 0
        self.raced = 0
        self.retimed = 0
        self.short_s = 0.0
        self.full_s = 0.0
        self._unraceable: set[type] = set()

    def start(self, tuner: Any, kernel: str, key: str | None, configs: list,
              fingerprint: Callable[[], str | None] = lambda: None) -> list:
        """A key about to be timed: its race, unless it has fewer than two configs or its tuner
        cannot be timed briefly. Returns the configs worth compiling: all but those the history
        rules out (`WARMUP_HARNESS_RACE_HISTORY`), which are neither compiled nor timed."""
        tuner.__dict__.pop("_warmup_harness_race", None)
        if (key is None or len(configs) < 2 or type(tuner) in self._unraceable
                or tuner.__dict__.get("_warmup_harness_unraced")):
            return configs
        index_of: dict[int, int] = {}
        for i, config in enumerate(getattr(tuner, "configs", None) or []):
            index_of.setdefault(id(config), i)
        skipped: set[int] = set()
        if self._history is not None:
            cold = self._history.cold(kernel, fingerprint, len(index_of))
            skipped = {id(c) for c in configs if index_of.get(id(c), -1) in cold}
            if len(skipped) >= len({id(c) for c in configs}):
                skipped = set()  # the history rules out every config left: race them all
        tuner.__dict__["_warmup_harness_race"] = Race(kernel, key, configs, lambda cs, t=tuner: self._order(t, cs),
                                                      index_of, skipped, self._near)
        return [c for c in configs if id(c) not in skipped]

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
        self.keys.setdefault(race.kernel, {})[race.key] = race.record()
        self.skipped += len(race.configs) - race.raced
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
        skipped = f", {self.skipped} skipped by history (neither compiled nor timed)" if self.skipped else ""
        return (f"race: {keys} key(s), {self.raced} configs raced in {self.short_s:.1f}s, {self.retimed} "
                f"re-timed in full in {self.full_s:.1f}s{skipped}")


class History:
    """What an earlier record on this device says of a kernel's configs (`WARMUP_HARNESS_RACE_HISTORY`
    N): with at least N raced keys in the sidecar's `race`, recorded for the kernel as it is now (its
    fingerprint) on this device model, a config that was `near` the best on none of them is cold.
    N and NEAR are to be set from measurement; a kernel short of N keys has no cold config."""

    def __init__(self, meta: dict | None, min_keys: int, device: Callable[[], str | None]):
        meta = meta if isinstance(meta, dict) else {}
        race = meta.get("race")
        kernels = meta.get("kernels")
        self._race = race if isinstance(race, dict) else {}
        self._kernels = kernels if isinstance(kernels, dict) else {}
        self._device = meta.get("device")
        self._here = device
        self.min_keys = min_keys
        self._cold: dict[str, set[int]] = {}

    def cold(self, kernel: str, fingerprint: Callable[[], str | None], count: int) -> set[int]:
        """Indexes among the kernel's `count` configs that its history rules out."""
        if kernel not in self._cold:
            self._cold[kernel] = self._rule_out(kernel, fingerprint, count)
        return self._cold[kernel]

    def _rule_out(self, kernel: str, fingerprint: Callable[[], str | None], count: int) -> set[int]:
        keys = self._race.get(kernel)
        if not isinstance(keys, dict) or len(keys) < self.min_keys:
            return set()
        here = fingerprint()
        if here is None or self._kernels.get(kernel) != here or not self._device or self._device != self._here():
            return set()
        nears = [v["near"] for v in keys.values() if isinstance(v, dict) and isinstance(v.get("near"), list)]
        if len(nears) < self.min_keys:
            return set()
        seen = {i for near in nears for i in near if isinstance(i, int)}
        return set(range(count)) - seen
