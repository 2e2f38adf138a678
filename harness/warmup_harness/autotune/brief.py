"""How a race times a config briefly (race.py), and how it warms the device before its first race.

A short timing goes through the tuner's own `_bench` with its do_bench swapped (short_bench): Brief
where the tuner times as the driver does, else a do_bench that takes a budget, given a short one.

Warm-up. A cold device runs its first launches at lower clocks: timed first, the config the race
takes first looks slower than it is. So before a session's first race the first config runs for
about WARM_MS of kernel time, as do_bench's own warm-up does (Triton's default budget), its
timings thrown away: Brief times one launch and launches WARM_MS / its time more (WARM_MAX at
most); a do_bench with a budget is given WARM_MS as its warm-up. Standard library only; Triton's
names through triton_private.
"""

from __future__ import annotations

import inspect
import math
import statistics
from typing import Any, Callable

SHORT_WARMUP_MS = 1  # a do_bench's warm-up budget for a short timing: at least one launch
SHORT_REP_MS = 2  # ... and its timed budget: a few launches of a 0.25 ms kernel
BRIEF_FIRST = 2  # Brief: launches timed first, after one untimed
BRIEF_REP_MS = 2.0  # ... then more, up to about this much kernel time ...
BRIEF_MAX = 20  # ... and this many in all
OUTRUN = 2.0  # a config whose short timings all take this many times the best's is out-run
WARM_MS = 25  # kernel time run before a session's first race, untimed (do_bench's default warm-up)
WARM_MAX = 1000  # ... in this many launches at most


def score(result: Any) -> float:
    """A `_bench` answer as one number: Triton's is [median, p20, p80], a custom do_bench's may be a
    float; NaN where it is not a number."""
    value = result[0] if isinstance(result, (list, tuple)) and result else result
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def quantiles_of(samples: list[float], quantiles: Any) -> Any:
    """As testing.do_bench answers: the quantiles asked for (linear between samples, as
    torch.quantile), else the median."""
    ordered = sorted(samples)

    def at(q: float) -> float:
        position = q * (len(ordered) - 1)
        low = math.floor(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    return [at(q) for q in quantiles] if quantiles else at(0.5)


class Brief:
    """A short timing, the way the driver's do_bench times a launch (triton_private.BenchDevice),
    without its five-launch estimate: one launch untimed (it loads the kernel and fills the tuner's
    host-side caches), BRIEF_FIRST timed, then more up to BRIEF_REP_MS of kernel time and BRIEF_MAX
    launches in all. Where the first ones all exceed `cutoff_ms` (the race sets OUTRUN times its
    best so far), the config has lost by more than any noise explains and is timed no more: a
    loser costs three launches."""

    def __init__(self, device: Any):
        self._device = device
        self.cutoff_ms = math.inf

    def __call__(self, kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> Any:
        kernel_call()
        samples = self._device.time(kernel_call, BRIEF_FIRST)
        if min(samples) <= self.cutoff_ms:
            middle = statistics.median(samples)
            wanted = int(BRIEF_REP_MS / middle) if middle > 0 else BRIEF_MAX
            more = min(BRIEF_MAX, max(BRIEF_FIRST, wanted)) - BRIEF_FIRST
            if more:
                samples += self._device.time(kernel_call, more)
        return quantiles_of(samples, quantiles)

    def warm(self, kernel_call: Callable[[], Any], quantiles: Any = None) -> None:
        [one] = self._device.time(kernel_call, 1)
        count = min(WARM_MAX, math.ceil(WARM_MS / one)) if one > 0 else WARM_MAX
        self._device.time(kernel_call, count)


class Budgeted:
    """A short timing by a do_bench that takes a warm-up and a repetition budget."""

    def __init__(self, bench: Callable[..., Any]):
        self._bench = bench

    def __call__(self, kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> Any:
        return self._bench(kernel_call, warmup=SHORT_WARMUP_MS, rep=SHORT_REP_MS, quantiles=quantiles)

    def warm(self, kernel_call: Callable[[], Any], quantiles: Any = None) -> None:
        self._bench(kernel_call, warmup=WARM_MS, rep=SHORT_REP_MS, quantiles=quantiles)


def _takes_budget(bench: Any) -> bool:
    try:
        params = inspect.signature(bench).parameters.values()
    except (TypeError, ValueError):
        return False
    names = {p.name for p in params}
    return {"warmup", "rep"} <= names or any(p.kind is p.VAR_KEYWORD for p in params)


def short_bench(tuner: Any) -> Brief | Budgeted | None:
    """A do_bench that times briefly, for `tuner`: Brief where the tuner times as the driver does and
    the driver has its timing primitives; else the tuner's own do_bench where it takes a warm-up and
    a repetition budget, else the device driver's benchmarker; None where none of them can."""
    from .. import triton_private as tp

    if tp.times_by_driver(tuner):
        device = tp.bench_device()
        if device is not None:
            return Brief(device)
    for bench in (tp.tuner_do_bench(tuner), tp.device_benchmarker()):
        if bench is not None and _takes_budget(bench):
            return Budgeted(bench)
    return None
