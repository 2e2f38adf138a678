"""How a race times a config briefly (race.py), how it warms the device before its first race, and
where a key's short pass goes.

A short timing goes through the tuner's own `_bench` with its do_bench swapped (short_bench), timed
the way the tuner times in full (tuner_protocol.bench_kind): Brief where it times as Triton's
driver does (an L2 flush before each launch: Triton's Autotuner, FlagGems 5.0.2, FlagGems 5.3's
event protocol), Replay where it replays a CUDA graph with a warm L2 (FlagGems 5.3's replay
protocol, the default on NVIDIA and AMD; Triton's `use_cuda_graph=True`), else a do_bench that takes
a budget, given a short one. A short timing costs a few launches of the kernel: no estimate run, one
untimed launch at most, events made once, one synchronization per batch of launches.

Warm-up. A cold device runs its first launches at lower clocks: timed first, the config the race
takes first looks slower than it is. So before a session's first race the first config runs for
about WARM_MS of kernel time, as do_bench's own warm-up does (Triton's default budget), its
timings thrown away: Brief and Replay time one launch and launch WARM_MS / its time more (WARM_MAX
at most); a do_bench with a budget is given WARM_MS as its warm-up.

Cost: per key, the seconds the short pass waited for compiles, spent inside the short timings, and
measured on the device, and the launches it ran (the race audit's breakdown). Standard library
only; Triton's, FlagGems' and torch's names through triton_private and tuner_protocol.
"""

from __future__ import annotations

import inspect
import math
import statistics
import time
from collections.abc import Iterable, Iterator
from typing import Any, Callable

SHORT_WARMUP_MS = 1  # a do_bench's warm-up budget for a short timing: at least one launch
SHORT_REP_MS = 2  # ... and its timed budget: a few launches of a 0.25 ms kernel
BRIEF_FIRST = 2  # Brief: launches timed first, after one untimed
BRIEF_REP_MS = 1.0  # ... then more, up to about this much kernel time ...
BRIEF_MAX = 10  # ... and this many in all
REPLAY_MS = 1.0  # Replay: a graph of about this much kernel time ...
REPLAY_MAX = 20  # ... and this many launches at most ...
REPLAYS = 2  # ... replayed this many times
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


def _count(budget_ms: float, one_ms: float, most: int) -> int:
    """Launches of a `one_ms` kernel that fill `budget_ms`: one at least, `most` at most."""
    return min(most, max(1, int(budget_ms / one_ms))) if one_ms > 0 else most


class Cost:
    """Where one key's short pass goes: the seconds it waited for compiles (the race takes configs
    as they finish), the seconds inside its short timings and how many it took; the short timing
    (Brief, Replay, Budgeted) counts the launches it ran and the kernel time it measured."""

    def __init__(self) -> None:
        self.wait_s = 0.0
        self.timing_s = 0.0
        self.timings = 0

    def waited(self, configs: Iterable[Any]) -> Iterator[Any]:
        """`configs` as they come, the time each took to come counted as waiting."""
        it = iter(configs)
        while True:
            start = time.perf_counter()
            try:
                config = next(it)
            except StopIteration:
                return
            finally:
                self.wait_s += time.perf_counter() - start
            yield config

    def timed(self, bench: Callable[..., Any]) -> Callable[..., Any]:
        def timing(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return bench(*args, **kwargs)
            finally:
                self.timings += 1
                self.timing_s += time.perf_counter() - start
        return timing

    def fields(self, short: Any, short_s: float) -> dict:
        """The audit line's breakdown of `short_s`: `host_s` is what is neither waiting nor measured
        on the device (Python, launching, synchronizing, L2 flushes, loading kernels)."""
        device_s = getattr(short, "device_ms", 0.0) / 1000
        return {"wait_s": round(self.wait_s, 4), "timing_s": round(self.timing_s, 4),
                "device_s": round(device_s, 4), "host_s": round(max(0.0, short_s - self.wait_s - device_s), 4),
                "launches": getattr(short, "launches", 0), "timings": self.timings}


class Brief:
    """A short timing, the way the driver's do_bench times a launch (triton_private.BenchDevice: the
    L2 flushed before each), without its five-launch estimate: one launch untimed (it loads the
    kernel and fills the tuner's host-side caches), BRIEF_FIRST timed, then more up to BRIEF_REP_MS
    of kernel time and BRIEF_MAX launches in all. Where the first ones all exceed `cutoff_ms` (the
    race sets OUTRUN times its best so far), the config has lost by more than any noise explains
    and is timed no more: a loser costs three launches."""

    def __init__(self, device: Any):
        self._device = device
        self.cutoff_ms = math.inf
        self.launches = 0
        self.device_ms = 0.0  # kernel time measured, timed launches only

    def _time(self, kernel_call: Callable[[], Any], count: int) -> list[float]:
        samples = self._device.time(kernel_call, count)
        self.launches += count
        self.device_ms += sum(s for s in samples if math.isfinite(s))
        return samples

    def __call__(self, kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> Any:
        kernel_call()
        self.launches += 1
        samples = self._time(kernel_call, BRIEF_FIRST)
        if min(samples) <= self.cutoff_ms:
            wanted = _count(BRIEF_REP_MS, statistics.median(samples), BRIEF_MAX)
            more = max(BRIEF_FIRST, wanted) - BRIEF_FIRST  # _count keeps `wanted` to BRIEF_MAX
            if more:
                samples += self._time(kernel_call, more)
        return quantiles_of(samples, quantiles)

    def warm(self, kernel_call: Callable[[], Any], quantiles: Any = None) -> None:
        [one] = self._time(kernel_call, 1)
        self._time(kernel_call, _count(WARM_MS, one, WARM_MAX))


class Replay:
    """A short timing the way graph replay times (tuner_protocol.GraphDevice, as
    `do_bench_cudagraph`: the L2 warm, a graph of launches timed by events), briefly: one launch
    timed alone (it loads the kernel, warms the L2 and sizes the graph), a graph of about REPLAY_MS
    of launches (REPLAY_MAX at most) replayed REPLAYS times, each replay's time over its launches a
    sample. A config whose first replay is past `cutoff_ms` is out-run and replayed no more."""

    def __init__(self, device: Any):
        self._device = device
        self.cutoff_ms = math.inf
        self.launches = 0
        self.device_ms = 0.0
        self.uncapturable: str | None = None  # why a capture failed: later ones are not tried

    def _launch(self, kernel_call: Callable[[], Any], count: int) -> float:
        ms = self._device.launches(kernel_call, count)
        self.launches += count
        self.device_ms += ms if math.isfinite(ms) else 0.0
        return ms

    def __call__(self, kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> Any:
        n = _count(REPLAY_MS, self._launch(kernel_call, 1), REPLAY_MAX)
        graph = self._capture(kernel_call, n)
        first = 1 if math.isfinite(self.cutoff_ms) else REPLAYS  # all at once where none can be out-run
        samples = self._replay(graph, n, first)
        if first < REPLAYS and min(samples) <= self.cutoff_ms:
            samples += self._replay(graph, n, REPLAYS - first)
        return quantiles_of(samples, quantiles)

    def _capture(self, kernel_call: Callable[[], Any], n: int) -> Any:
        """A graph of `n` launches; where this kernel call cannot be captured (a pre-hook that
        synchronizes, say), the launches themselves, back to back on the same warm L2: a short
        timing never fails a sweep that the tuner's own timing would not."""
        if self.uncapturable is None:
            try:
                return self._device.capture(kernel_call, n)
            except Exception as exc:  # noqa: BLE001 (any failure to capture: time without a graph)
                self.uncapturable = f"{type(exc).__name__}: {exc}"
        return lambda: self._device.launches(kernel_call, n)  # one sample: n launches timed together

    def _replay(self, graph: Any, n: int, count: int) -> list[float]:
        replays = [graph() for _ in range(count)] if callable(graph) else self._device.replays(graph, count)
        self.launches += n * count
        self.device_ms += sum(ms for ms in replays if math.isfinite(ms))
        return [ms / n for ms in replays]

    def warm(self, kernel_call: Callable[[], Any], quantiles: Any = None) -> None:
        one = self._launch(kernel_call, 1)
        self._launch(kernel_call, _count(WARM_MS, one, WARM_MAX))


class Budgeted:
    """A short timing by a do_bench that takes a warm-up and a repetition budget. Its launches are
    counted, and their kernel time taken as their count times the timing."""

    def __init__(self, bench: Callable[..., Any]):
        self._bench = bench
        self.launches = 0
        self.device_ms = 0.0

    def _run(self, kernel_call: Callable[[], Any], quantiles: Any, warmup: int) -> Any:
        calls = 0

        def counted() -> Any:
            nonlocal calls
            calls += 1
            return kernel_call()

        answer = self._bench(counted, warmup=warmup, rep=SHORT_REP_MS, quantiles=quantiles)
        self.launches += calls
        ms = score(answer)
        self.device_ms += calls * ms if math.isfinite(ms) else 0.0
        return answer

    def __call__(self, kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> Any:
        return self._run(kernel_call, quantiles, SHORT_WARMUP_MS)

    def warm(self, kernel_call: Callable[[], Any], quantiles: Any = None) -> None:
        self._run(kernel_call, quantiles, WARM_MS)


def _takes_budget(bench: Any) -> bool:
    try:
        params = inspect.signature(bench).parameters.values()
    except (TypeError, ValueError):
        return False
    names = {p.name for p in params}
    return {"warmup", "rep"} <= names or any(p.kind is p.VAR_KEYWORD for p in params)


def short_bench(tuner: Any, devices: dict | None = None) -> Brief | Replay | Budgeted | None:
    """A do_bench that times `tuner` briefly the way it times in full: Brief where it times as the
    driver does, Replay where it replays a graph (each where this device has the primitives); else
    the tuner's own do_bench where it takes a warm-up and a repetition budget, else the device
    driver's benchmarker; None where none of them can. `devices` keeps the devices made, for the
    next key (the session's)."""
    from .. import triton_private as tp
    from .. import tuner_protocol

    devices = {} if devices is None else devices
    kind = tuner_protocol.bench_kind(tuner)
    if kind in ("driver", "graph"):
        if kind not in devices:
            devices[kind] = tp.bench_device() if kind == "driver" else tuner_protocol.graph_device()
        if devices[kind] is not None:
            return (Brief if kind == "driver" else Replay)(devices[kind])
    for bench in (tp.tuner_do_bench(tuner), tp.device_benchmarker()):
        if bench is not None and _takes_budget(bench):
            return Budgeted(bench)
    return None
