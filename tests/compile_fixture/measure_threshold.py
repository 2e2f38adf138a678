"""Measures where precompile's pool starts to pay (harness precompile's POOL_THRESHOLD): for n new
configs of one key, the seconds to compile them in this process one after another, against a pool
of processes started cold for the key (its workers' start-up and imports, then the compiles).

    .venv/bin/python tests/compile_fixture/measure_threshold.py [--workers 2] [--sizes 1,2,4,8,16]

Real Triton compiling for a faked H200 (cpu_fakes.py); every trial with a fresh, empty cache.
Prints one line per n: the seconds in this process, with a pool started cold, and with one started
early.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent.parent / "harness")]

import triton  # noqa: E402
from triton.runtime.driver import driver  # noqa: E402

import cpu_fakes  # noqa: E402
from warmup_harness import precompile as pc  # noqa: E402


def configs(n: int) -> list:
    """n configs that each compile apart (block size, warps and stages differ)."""
    shapes = [(b, w, s) for s in (1, 2, 3, 4) for w in (1, 2, 4, 8) for b in (64, 128, 256, 512, 1024)]
    return [triton.Config({"BLOCK": b}, num_warps=w, num_stages=s) for b, w, s in shapes[:n]]


def trial(n: int, pool: pc.CompilePool, start: str = "") -> float:
    """Seconds for one key of n new configs; `start`: "cold" (the pool starts with the key), "early"
    (started and given 3 s first, as a record session starts it while pytest collects)."""
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="measure-")
    triton.knobs.cache.dir = os.environ["TRITON_CACHE_DIR"]
    pc.jit_function(cpu_fakes.scale_kernel).device_caches.clear()
    launch = {"x_ptr": cpu_fakes.Tensor(), "y_ptr": cpu_fakes.Tensor(), "n": 1000 + n, "grid": (1,)}
    if start == "early":
        pool.start()
        time.sleep(3)
    begin = time.perf_counter()
    if start == "cold":
        pool.start()
    report = pc.precompile(cpu_fakes.scale_kernel, configs(n), launch, pool)
    seconds = time.perf_counter() - begin
    assert report.compiled == n, report.errors
    pool.close()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sizes", default="1,2,4,8,16")
    args = parser.parse_args()
    driver.set_active(cpu_fakes.CpuDriver())
    trial(1, pc.CompilePool("inline", 1))  # Triton's own first-use costs, paid once
    for n in map(int, args.sizes.split(",")):
        inline = trial(n, pc.CompilePool("inline", 1))
        cold = trial(n, pc.CompilePool("processes", args.workers), "cold")
        early = trial(n, pc.CompilePool("processes", args.workers), "early")
        print(f"n={n:3d}: in this process {inline:6.2f}s ({inline / n:.2f}s a config), pool of {args.workers} "
              f"started cold {cold:6.2f}s, started early {early:6.2f}s", flush=True)


if __name__ == "__main__":
    main()
