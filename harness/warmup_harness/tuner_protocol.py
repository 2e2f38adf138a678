"""How a tuner times a config in full, where it says so, and the device primitives of the graph
replay a race's short timing mirrors (autotune/brief.py): every name of FlagGems' and of torch's
that racing relies on, in one place. Triton's own (`_do_bench`, the driver's benchmarker) are in
triton_private.py.

Checked against FlagGems 5.0.2 and 5.3.4:

* FlagGems 5.0.2's `LibTuner` passes Triton's deprecated `warmup`/`rep`: it times as Triton's
  driver does (triton_private.bench_kind "driver"), with an L2 flush before each launch;
* FlagGems 5.3's `LibTuner` resolves a benchmark protocol at construction (`resolve_benchmarker`
  in `flag_gems.flagtune.runtime._benchmark_protocol`, FlagTree's
  `triton.flagtune.runtime.benchmark_protocol`) and keeps it as `tuner.benchmark_protocol`, a
  `BenchmarkProtocol` whose `cache_policy` is "warm_l2" where it resolved to graph replay
  (`triton.testing.do_bench_cudagraph`: the NVIDIA and AMD drivers, by default) and "cold_l2"
  for event timing (the driver's benchmarker with the tuner's warm-up and repetition budget);
  `benchmark_protocol` is None where the tuner was given a do_bench of its own.
  `use_benchmark_protocol` swaps it with the tuner's do_bench. That do_bench takes two
  arguments, `(kernel_call, quantiles)`, its budget bound inside: it cannot be asked for a
  shorter timing, so the short pass times as it does, briefly.

The graph device mirrors `triton.testing.do_bench_cudagraph` (Triton 3.4 to 3.9) through
torch.cuda: launches on a side stream (capture needs one), a `CUDAGraph` of n launches, its
replays timed by events, the L2 warm (no flush). Unlike it, a capture goes through
`capture_begin`/`capture_end`, not `torch.cuda.graph`, which collects the interpreter's garbage
and empties the allocator's cache at each capture, and the events are made once. This module
imports torch only when a graph device is made.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Callable

WARM_L2 = "warm_l2"  # BenchmarkProtocol.cache_policy of graph replay (FlagGems 5.3)
COLD_L2 = "cold_l2"  # ... of event timing, an L2 flush before each launch


def bench_kind(tuner: Any) -> str | None:
    """How `tuner` times a config in full: "graph" (graph replay, the L2 warm), "driver" (as Triton's
    driver does, the L2 flushed) or None (a do_bench of the user's, or one not known)."""
    from .triton_private import bench_kind as triton_kind

    policy = getattr(getattr(tuner, "benchmark_protocol", None), "cache_policy", None)
    if policy == WARM_L2:
        return "graph"
    if policy == COLD_L2:
        return "driver"
    return triton_kind(tuner)


class GraphDevice:
    """What `do_bench_cudagraph` times with: a side stream, CUDA graphs, events. Milliseconds."""

    def __init__(self) -> None:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA or HIP device")
        self._cuda = torch.cuda
        self._stream = torch.cuda.Stream()
        self._events: list[Any] = []

    def _take(self, count: int) -> list[Any]:
        while len(self._events) < count:
            self._events.append(self._cuda.Event(enable_timing=True))
        return self._events[:count]

    @contextlib.contextmanager
    def _side(self) -> Iterator[None]:
        current = self._cuda.current_stream()
        self._stream.wait_stream(current)
        with self._cuda.stream(self._stream):
            yield
        current.wait_stream(self._stream)

    def launches(self, fn: Callable[[], Any], count: int) -> float:
        """`count` launches of `fn` back to back, timed together between two events (one
        synchronization)."""
        start, end = self._take(2)
        with self._side():
            start.record()
            for _ in range(count):
                fn()
            end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def capture(self, fn: Callable[[], Any], count: int) -> Any:
        """A graph of `count` launches of `fn` (a kernel already loaded: loading cannot be captured)."""
        graph = self._cuda.CUDAGraph()
        with self._side():
            graph.capture_begin()
            try:
                for _ in range(count):
                    fn()
            except BaseException:
                with contextlib.suppress(Exception):
                    graph.capture_end()
                raise
            graph.capture_end()
        return graph

    def replays(self, graph: Any, count: int) -> list[float]:
        """`count` replays of `graph`, each timed between two events (one synchronization)."""
        events = self._take(count + 1)
        with self._side():
            events[0].record()
            for event in events[1:]:
                graph.replay()
                event.record()
        events[-1].synchronize()
        return [a.elapsed_time(b) for a, b in zip(events, events[1:])]


def graph_device() -> GraphDevice | None:
    """The graph device, or None where torch has no CUDA or HIP device here."""
    try:
        return GraphDevice()
    except Exception:
        return None
