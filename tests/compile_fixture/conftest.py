"""A benchmark whose autotuned kernel Triton really compiles (for an H200, cpu_fakes.py) on a
machine without a GPU, for tests/test_precompile.py: what the harness's precompile does across
processes (compiles shared through one cache, timings serialized per device).

Only the launch and the timer are stubbed. A launch compiles (or loads) the kernel and returns; the
timer calls the tuner's kernel_call, then "times" for FIXTURE_TIME_MS (default 40) and notes the
interval. The test's shapes: FIXTURE_SHAPES, comma-separated sizes n.

`FIXTURE_TRACE=FILE`: at the end, one JSON object: the timing intervals (CLOCK_MONOTONIC, the same
in every process) and the compiles Triton did, split into the sweep's own (the main thread) and
the others (precompile's threads). `FIXTURE_BARRIER=DIR:N`: before any test, wait until N sessions
reached this point, so that children sharing a device sweep at the same time.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from triton import knobs
from triton.runtime.driver import driver
from triton.runtime.jit import JITFunction

import cpu_fakes

driver.set_active(cpu_fakes.CpuDriver())
_compile_and_launch = JITFunction.run
JITFunction.run = lambda self, *args, grid, warmup, **kwargs: _compile_and_launch(
    self, *args, grid=grid, warmup=True, **kwargs)

INTERVALS: list[tuple[float, float]] = []
COMPILED = {"sweep": 0, "other_threads": 0}


def listener(*, src, metadata, metadata_group, times, cache_hit):
    if not cache_hit:
        COMPILED["sweep" if threading.current_thread() is threading.main_thread() else "other_threads"] += 1


knobs.compilation.listener = listener


def timer(kernel_call, quantiles):
    kernel_call()
    start = time.monotonic()
    time.sleep(float(os.environ.get("FIXTURE_TIME_MS", "40")) / 1000)
    INTERVALS.append((start, time.monotonic()))
    return [1.0] * len(quantiles)


def pytest_generate_tests(metafunc):
    if "n" in metafunc.fixturenames:
        sizes = [int(s) for s in os.environ.get("FIXTURE_SHAPES", "1024").split(",")]
        metafunc.parametrize("n", sizes)


def pytest_sessionstart(session):
    barrier = os.environ.get("FIXTURE_BARRIER")
    if not barrier:
        return
    folder, count = barrier.rsplit(":", 1)
    Path(folder, str(os.getpid())).touch()
    deadline = time.monotonic() + 600  # a hang guard: a loaded machine starts sessions late
    while len(os.listdir(folder)) < int(count):
        if time.monotonic() > deadline:
            pytest.exit(f"compile fixture: fewer than {count} sessions reached the barrier in {folder}")
        time.sleep(0.02)


def pytest_sessionfinish(session):
    trace = os.environ.get("FIXTURE_TRACE")
    if trace:
        Path(trace).write_text(json.dumps({"intervals": INTERVALS, "compiled": COMPILED}))
