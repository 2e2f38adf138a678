"""The timing racing shadows, as Triton's own names allow (triton_private.py lists what is used and
the versions it was checked against; autotune/race.py and brief.py use it). Imports Triton.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Callable

from triton.runtime.driver import driver


# --- racing (autotune/race.py) ------------------------------------------------------------------
# `Autotuner.do_bench`, a cached_property (3.4 to 3.9): the tuner's `do_bench=` argument (kept as
# `_do_bench`), a lambda over testing.do_bench with its deprecated `warmup`/`rep` or over
# do_bench_cudagraph with `use_cuda_graph=True`, else the driver's benchmarker
# (`driver.active.get_benchmarker()`, testing.do_bench on CUDA and HIP), which `_bench` calls as
# `self.do_bench(kernel_call, quantiles=...)`. Being a non-data descriptor, an instance's own
# `do_bench` shadows it for one timing.


def tuner_do_bench(tuner: Any) -> Any:
    """The tuner's own do_bench, or None where asking fails."""
    try:
        return tuner.do_bench
    except Exception:
        return None


def device_benchmarker() -> Any:
    """The active driver's benchmarker, or None where it has none."""
    try:
        return driver.active.get_benchmarker()
    except Exception:
        return None


def bench_kind(tuner: Any) -> str | None:
    """How a tuner times by Triton's own means, read off its `_do_bench`: "driver" where it times as
    Triton's driver does (None: the driver's benchmarker; or the deprecated `warmup`/`rep`:
    Autotuner's own lambda over `triton.testing.do_bench`), "graph" where it replays a CUDA graph
    (the deprecated `use_cuda_graph=True`: the lambda over `triton.testing.do_bench_cudagraph`),
    None for a do_bench of the user's."""
    own = tuner.__dict__.get("_do_bench", _NOTHING)
    if own is None:
        return "driver"
    code = getattr(own, "__code__", None)
    if getattr(own, "__module__", None) != "triton.runtime.autotuner" or code is None:
        return None
    if "do_bench_cudagraph" in code.co_names + code.co_freevars:  # 3.4 to 3.9: a closure's free name
        return "graph"
    return "driver" if "do_bench" in code.co_names else None


class BenchDevice:
    """What `triton.testing.do_bench` times with (3.4 to 3.9): the driver's device interface (its
    `Event(enable_timing=True)`, `.record()`, `.elapsed_time()`, `synchronize()`), the buffer
    `get_empty_cache_for_benchmark()` and `clear_cache(buffer)`, which empties the L2 before each
    timed launch. Its events are made once, and reused."""

    def __init__(self) -> None:
        self._driver = driver.active
        self._device = self._driver.get_device_interface()
        self._buffer = self._driver.get_empty_cache_for_benchmark()
        self._pairs: list[tuple[Any, Any]] = []

    def time(self, fn: Callable[[], Any], count: int) -> list[float]:
        """`count` launches of `fn`, each timed alone between two events after the L2 is emptied,
        as do_bench times them; one synchronization at the end. Milliseconds."""
        while len(self._pairs) < count:
            self._pairs.append((self._device.Event(enable_timing=True), self._device.Event(enable_timing=True)))
        pairs = self._pairs[:count]
        for start, end in pairs:
            self._driver.clear_cache(self._buffer)
            start.record()
            fn()
            end.record()
        self._device.synchronize()
        return [start.elapsed_time(end) for start, end in pairs]


def bench_device() -> BenchDevice | None:
    """The driver's timing primitives, or None where this Triton or device has none."""
    try:
        return BenchDevice()
    except Exception:
        return None


@contextlib.contextmanager
def do_bench_as(tuner: Any, bench: Callable[..., Any]) -> Iterator[None]:
    """`tuner.do_bench` is `bench` for the duration (an instance attribute shadowing the class's)."""
    saved = tuner.__dict__.get("do_bench", _NOTHING)
    tuner.__dict__["do_bench"] = bench
    try:
        yield
    finally:
        if saved is _NOTHING:
            tuner.__dict__.pop("do_bench", None)
        else:
            tuner.__dict__["do_bench"] = saved


_NOTHING = object()
