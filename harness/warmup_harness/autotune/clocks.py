"""Where a recording process's seconds go besides tuning, for the sidecar (docs/CONTRACT.md, "The
record/replay harness"): its start-up, from the interpreter's start to its first test (Python,
pytest, the benchmark's imports and collection), and its compiling. A later run reads them to
judge whether splitting a sweep pays. Standard library only.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable


def process_age() -> float | None:
    """Seconds since this process started, from its start time in /proc/self/stat (clock ticks
    since boot, on CLOCK_BOOTTIME); None where there is no /proc."""
    try:
        stat = Path("/proc/self/stat").read_text()
        started = int(stat[stat.rindex(")") + 2:].split()[19]) / os.sysconf("SC_CLK_TCK")
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class CompileClock:
    """The seconds a process spends compiling: ahead, as the precompiler reports each key
    (capture and compile), plus the part of each timing call outside the timed run and the wait
    for the device's lock, where the precompiler loads the config's kernel and compiles one that was
    left to Triton. Where nothing was compiled ahead (precompile off, or unusable here) the tuner
    compiles inside its timed runs, which cannot be told apart from timing: then None."""

    def __init__(self):
        self.loading = 0.0

    def bench(self, precompiler: Any, run: Callable[[Callable[[], Any]], Any], time_it: Callable[[], Any]) -> Any:
        """`run(timed)` through the precompiler, counting what it spends outside `time_it`."""
        inside = 0.0

        def timed() -> Any:
            nonlocal inside
            start = time.perf_counter()
            try:
                return time_it()
            finally:
                inside += time.perf_counter() - start

        lock = getattr(precompiler, "timing_lock", None)
        waited = getattr(lock, "waited_s", 0.0)
        start = time.perf_counter()
        try:
            return run(timed)
        finally:
            outside = time.perf_counter() - start - inside - (getattr(lock, "waited_s", 0.0) - waited)
            self.loading += max(0.0, outside)

    def total(self, precompiler: Any) -> float | None:
        reports = getattr(precompiler, "reports", None) or []
        if not reports:
            return None
        ahead = sum(getattr(r, "capture_s", 0.0) + getattr(r, "compile_s", 0.0) for r in reports)
        return round(ahead + self.loading, 6)
