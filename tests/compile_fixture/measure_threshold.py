"""Measures where precompile's pool starts to pay (compile_pool's FORK_POOL_START_S and
POOL_START_S): for n new configs of one key, the seconds the harness takes to compile them in this
process one after another, against starting a pool of worker processes for the key (forked, and
spawned), as compile_pool decides it: the first config compiled here, then the pool started for
the rest; a forked pool takes all of a key of FORK_AT_ONCE or more new configs at once.

    python3 tests/compile_fixture/measure_threshold.py --summary threshold.txt

On a GPU host (torch and Triton 3.6 installed; FlagGems too where it is), from the repository's
root, with nothing but the repository:

    python3 tests/compile_fixture/measure_threshold.py --workers 16 --summary $OUT/threshold.txt

Real Triton compiling for an H200's target (Triton's driver is cpu_fakes.py's stand-in, so the
same kernel and launch serve every machine); every trial with a fresh, empty cache. Before
measuring, this process imports what a benchmark session has (`--imports`, default torch and
flag_gems where installed) and, where torch sees a GPU, starts CUDA on it (`--no-cuda`: not), so
that a forked pool's start-up is measured from a process like the session's. Prints one line per
n and writes the summary (the lines, the start-ups, the crossover) to `--summary`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent.parent / "harness")]

import triton  # noqa: E402
from triton.runtime.driver import driver  # noqa: E402

import cpu_fakes  # noqa: E402
from warmup_harness.precompile import pool as compile_pool  # noqa: E402
from warmup_harness.precompile import precompiler as pc  # noqa: E402
from warmup_harness.precompile.settings import compile_settings  # noqa: E402

NEVER = float("inf")


def configs(n: int) -> list:
    """n configs that each compile apart (block size, warps and stages differ)."""
    shapes = [(b, w, s) for s in (1, 2, 3, 4) for w in (1, 2, 4, 8) for b in (64, 128, 256, 512, 1024)]
    return [triton.Config({"BLOCK": b}, num_warps=w, num_stages=s) for b, w, s in shapes[:n]]


def fresh_cache() -> None:
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="measure-")
    triton.knobs.cache.dir = os.environ["TRITON_CACHE_DIR"]
    pc.jit_function(cpu_fakes.scale_kernel).device_caches.clear()


def trial(n: int, pool: pc.CompilePool, start_s: float) -> float:
    """Seconds for one key of n new configs, the pool started for it when the first config's
    seconds times n reach `start_s` (0: always; NEVER: all in this process)."""
    fresh_cache()
    launch = {"x_ptr": cpu_fakes.Tensor(), "y_ptr": cpu_fakes.Tensor(), "n": 1000 + n, "grid": (1,)}
    saved = compile_pool.FORK_POOL_START_S, compile_pool.POOL_START_S
    compile_pool.FORK_POOL_START_S = compile_pool.POOL_START_S = start_s
    try:
        begin = time.perf_counter()
        report = pc.precompile(cpu_fakes.scale_kernel, configs(n), launch, pool)
        seconds = time.perf_counter() - begin
    finally:
        compile_pool.FORK_POOL_START_S, compile_pool.POOL_START_S = saved
        pool.close()
    assert report.compiled == n, report.errors
    return seconds


def start_up(pool: pc.CompilePool) -> float:
    """Seconds from starting the pool to every worker answering."""
    begin = time.perf_counter()
    pool.start()
    assert pool.wait_started(600), "the pool's workers did not start in 600 s"
    seconds = time.perf_counter() - begin
    pool.close()
    return seconds


def session_like(imports: list[str], cuda: bool) -> list[str]:
    """Imports what a benchmark session has and starts CUDA where asked and possible; what it did."""
    did = []
    for name in imports:
        try:
            importlib.import_module(name)
            version = getattr(sys.modules[name], "__version__", "?")
            did.append(f"imported {name} {version}")
        except Exception as exc:  # not installed, or not importable here: measured without it
            did.append(f"{name} not imported ({type(exc).__name__}: {str(exc)[:120]})")
    torch = sys.modules.get("torch")
    if cuda and torch is not None and torch.cuda.is_available():
        torch.zeros(1, device="cuda")
        did.append(f"CUDA started on {torch.cuda.get_device_name()}")
    else:
        did.append("CUDA not started")
    return did


def rss_mb() -> str:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return f"{int(line.split()[1]) / 1024:.0f} MB"
    except OSError:
        pass
    return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=None,
                        help="pool size (default: the harness's, this process's CPUs up to 32)")
    parser.add_argument("--sizes", default="1,2,4,8,16,32", help="numbers of new configs, comma-separated")
    parser.add_argument("--trials", type=int, default=3, help="trials per case; the median is shown")
    parser.add_argument("--imports", default="torch,flag_gems",
                        help="modules this process imports first, as a session has them (comma-separated)")
    parser.add_argument("--no-cuda", action="store_true", help="do not start CUDA even where torch sees a GPU")
    parser.add_argument("--no-spawn", action="store_true", help="measure the forked pool only")
    parser.add_argument("--summary", type=Path, help="also write the summary to this file")
    args = parser.parse_args()
    workers = args.workers or compile_settings({}.get).workers
    imports = [m.strip() for m in args.imports.split(",") if m.strip()]
    did = session_like(imports, not args.no_cuda)
    preload = tuple(m for m in imports if m in sys.modules)
    driver.set_active(cpu_fakes.CpuDriver())
    trial(1, pc.CompilePool("inline", 1), NEVER)  # Triton's own first-use costs, paid once

    def pool(start_method: str) -> pc.CompilePool:
        made = pc.CompilePool("processes", workers, preload, start_method=start_method)
        assert made.start_method == start_method, made.describe()
        return made

    median = lambda runs: statistics.median(runs)  # noqa: E731
    lines = [f"measure_threshold: {time.strftime('%Y-%m-%d %H:%M')}, {platform.node()}, "
             f"{len(os.sched_getaffinity(0))} CPUs, load {os.getloadavg()[0]:.1f}, Python {platform.python_version()}, "
             f"Triton {triton.__version__}; {'; '.join(did)}; this process {rss_mb()}; pool of {workers}; "
             f"median of {args.trials}"]
    print(lines[0], flush=True)
    starts = {"fork": median([start_up(pool("fork")) for _ in range(args.trials)])}
    if not args.no_spawn:
        starts["spawn"] = start_up(pool("spawn"))
    shown = ", ".join(f"{how} {seconds:.2f}s" for how, seconds in starts.items())
    lines.append(f"start-up to every worker answering: {shown}" + (" (spawn: one trial)" if "spawn" in starts else ""))
    print(lines[-1], flush=True)
    rows = []
    for n in map(int, args.sizes.split(",")):
        here = median([trial(n, pc.CompilePool("inline", 1), NEVER) for _ in range(args.trials)])
        forked = median([trial(n, pool("fork"), 0.0) for _ in range(args.trials)])
        spawned = None if args.no_spawn else trial(n, pool("spawn"), 0.0)
        rows.append((n, here, forked))
        lines.append(f"n={n:3d}: in this process {here:6.2f}s ({here / n:.3f}s a config); pool started for the key: "
                     f"forked {forked:6.2f}s" + ("" if spawned is None else f", spawned {spawned:6.2f}s"))
        print(lines[-1], flush=True)
    pays = [(n, here) for n, here, forked in rows if forked < here]
    below = [here for n, here, forked in rows if forked >= here and (not pays or n < pays[0][0])]
    lines.append(f"the forked pool pays from {pays[0][1]:.2f}s of work in this process (n={pays[0][0]}"
                 + (f"; not at {max(below):.2f}s" if below else "") + ")" if pays else
                 "the forked pool never paid at these sizes")
    print(lines[-1], flush=True)
    if args.summary:
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        args.summary.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
