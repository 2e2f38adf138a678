#!/usr/bin/env python3
"""Issue 10's micro-benchmark: compiling one specialization's autotune configs through Triton's own
path (one after another, as a tuner's sweep does), and with the harness's precompile
(warmup_harness.precompile) in N threads or N processes, forked (or spawned with
WARMUP_HARNESS_COMPILE_START=spawn: then a cold pool pays Python's, torch's and Triton's import; a
cold pool and a warm one), each into an empty Triton cache; then loading them
back as the tuner's launch does (cache hits). Prints a table, writes JSON.

Kernels: ``matmul`` (gpu_bench_kernels, 112 configs; M=1000 so M is not a multiple of 16) and
``flaggems_mm`` (FlagGems' Hopper TMA mm with its pre-hook, when flag_gems imports);
``cpu_matmul``: the matmul compiled on a machine without a GPU (a check of this script).

  python3 tests/gpu/bench_precompile.py --kernels matmul,flaggems_mm --configs 64 \\
      --modes triton,threads:1,threads:8,threads:16,processes:16,processes:32 --out $OUT
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent / "compile_fixture"))  # cpu_fakes


def matmul_case(limit: int):
    import torch

    import gpu_bench_kernels as k

    m, n, kk = 1000, 4096, 1024
    a = torch.empty(m, kk, device="cuda", dtype=torch.float16)
    b = torch.empty(kk, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    args = (a, b, c, m, n, kk, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    return k.matmul_kernel, k.matmul_kernel.configs[:limit], args, {"grid": (1,)}


def flaggems_mm_case(limit: int):
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    import flag_gems  # noqa: F401
    mm_module = sys.modules.get("hopper.ops.mm") or next(
        (mod for name, mod in sys.modules.items() if name.endswith("hopper.ops.mm")), None)
    if mm_module is None:
        raise RuntimeError("flag_gems did not load its Hopper mm (hopper.ops.mm): not an sm_90 device?")
    tuner = mm_module.mm_kernel_general_host_tma.fn  # LibEntry -> LibTuner
    m, n, kk = 1000, 4096, 1024
    a = torch.empty(m, kk, device="cuda", dtype=torch.float16)
    b = torch.empty(kk, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    descs = [TensorDescriptor(t, t.shape, t.stride(), [1, 1]) for t in (a, b, c)]
    args = (*descs, m, n, kk, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    kwargs = {"grid": (1,), "GROUP_M": 8, "A_ROW_MAJOR": True, "B_ROW_MAJOR": True, "dtype": "float16"}
    return tuner, tuner.configs[:limit], args, kwargs


def cpu_matmul_case(limit: int):
    """The matmul on a machine without a GPU (cpu_fakes: compiled for an H200, never run)."""
    from triton.runtime.driver import driver

    import cpu_fakes
    import gpu_bench_kernels as k

    driver.set_active(cpu_fakes.CpuDriver())
    m, n, kk = 1000, 4096, 1024
    a, b, c = cpu_fakes.Tensor(), cpu_fakes.Tensor(), cpu_fakes.Tensor()
    args = (a, b, c, m, n, kk, kk, 1, n, 1, n, 1)
    return k.matmul_kernel, k.matmul_kernel.configs[:limit], args, {"grid": (1,)}


CASES = {"matmul": matmul_case, "flaggems_mm": flaggems_mm_case, "cpu_matmul": cpu_matmul_case}


def fresh_cache(root: Path, label: str) -> str:
    path = tempfile.mkdtemp(prefix=f"{label}-", dir=root)
    os.environ["TRITON_CACHE_DIR"] = path
    return path


def load_all(tuner, configs, args, kwargs) -> float:
    """The tuner's launch path for each config, without launching: cache hits after a precompile."""
    nargs = dict(zip(tuner.arg_names, args))
    start = time.perf_counter()
    for config in configs:
        current = {**kwargs, **config.all_kwargs(), "warmup": True}
        if config.pre_hook is not None:
            config.pre_hook({**nargs, **current})
        try:
            tuner.fn.run(*args, **current)
        except Exception:
            pass
    return time.perf_counter() - start


def trial(pc, tuner, configs, args, kwargs, mode: str, pool, root: Path) -> dict:
    """One compile of `configs` into an empty cache: Triton's own path (`pool` None), or the
    harness's precompile in `pool`."""
    fresh_cache(root, f"{mode}{pool.workers if pool else 1}")
    pc.jit_function(tuner).device_caches.clear()
    start = time.perf_counter()
    if pool is None:  # Triton's own path, one config after another, as a plain sweep compiles
        load_all(tuner, configs, args, kwargs)
        report = None
    else:
        launch = {**dict(zip(tuner.arg_names, args)), **kwargs}
        report = pc.precompile(tuner, configs, launch, pool)
    seconds = time.perf_counter() - start
    row = {"mode": mode, "workers": pool.workers if pool else 1, "configs": len(configs), "seconds": round(seconds, 3)}
    if report is not None:
        pc.jit_function(tuner).device_caches.clear()
        seconds_load = load_all(tuner, configs, args, kwargs)
        row.update(compiled=report.compiled, found=report.found, left=report.left,
                   capture_s=round(report.capture_s, 3), compile_s=round(report.compile_s, 3),
                   load_s=round(seconds_load, 3), errors=report.errors[:3])
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kernels", default="matmul")
    p.add_argument("--configs", type=int, default=64, help="first N configs of each kernel")
    p.add_argument("--modes", default="triton,threads:8,threads:16,threads:32,processes:16,processes:32",
                   help="triton (Triton's own compile, one by one), threads:N, processes:N (threads:1: the "
                        "harness's precompile in the caller)")
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--budget", type=float, default=300, help="stop starting trials after this many seconds")
    args = p.parse_args()

    from warmup_harness.precompile import precompiler as pc

    root = Path(tempfile.mkdtemp(prefix="bench_precompile-"))
    began = time.monotonic()
    doc = {"cpus": len(os.sched_getaffinity(0)), "kernels": {}}
    try:
        import torch
        import triton

        doc.update(torch=torch.__version__, triton=triton.__version__, device=torch.cuda.get_device_name(0))
    except Exception as exc:
        doc["environment_error"] = f"{type(exc).__name__}: {exc}"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in [k.strip() for k in args.kernels.split(",") if k.strip()]:
        rows = doc["kernels"].setdefault(name, [])
        try:
            tuner, configs, kargs, kwargs = CASES[name](args.configs)
        except Exception as exc:
            rows.append({"error": f"{type(exc).__name__}: {exc}"})
            continue
        # One compile first, so that the first trial does not also pay for Triton's own start-up
        # (its compiler modules, LLVM's initialization).
        fresh_cache(root, "warm-up")
        load_all(tuner, configs[-1:], kargs, kwargs)
        for spec in args.modes.split(","):
            mode, _, n = spec.strip().partition(":")
            workers = int(n or 1)
            if time.monotonic() - began > args.budget:
                rows.append({"mode": mode, "workers": workers, "skipped": "budget"})
                continue
            if mode == "triton":
                rows.append(trial(pc, tuner, configs, kargs, kwargs, mode, None, root))
            elif mode == "processes":  # cold: the pool starts, and imports, inside the first trial
                chosen = pc.Settings.from_env(os.environ)
                pool = pc.CompilePool(mode, workers, chosen.preload, start_method=chosen.start)
                rows.append({**trial(pc, tuner, configs, kargs, kwargs, mode, pool, root), "pool": "cold"})
                rows.append({**trial(pc, tuner, configs, kargs, kwargs, mode, pool, root), "pool": "warm"})
                pool.close()
            else:
                rows.append(trial(pc, tuner, configs, kargs, kwargs, mode, pc.CompilePool(mode, workers), root))
            print(json.dumps(rows[-1]), flush=True)
            (out / "bench_precompile.json").write_text(json.dumps(doc, indent=2))
    (out / "bench_precompile.json").write_text(json.dumps(doc, indent=2))
    print(render(doc))
    return 0


def render(doc: dict) -> str:
    lines = [f"precompile micro-benchmark: {doc.get('device')} , {doc['cpus']} CPUs, triton {doc.get('triton')}", "",
             "| kernel | mode | workers | pool | configs | seconds | speedup vs triton | load s "
             "| compiled/found/left |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, rows in doc["kernels"].items():
        base = next((r["seconds"] for r in rows if r.get("mode") == "triton" and "seconds" in r), None)
        for r in rows:
            if "error" in r or "skipped" in r:
                lines.append(f"| {name} | {r.get('mode', '-')} | {r.get('workers', '-')} | | | "
                             f"{r.get('error') or 'skipped: ' + r['skipped']} | | | |")
                continue
            speed = f"{base / r['seconds']:.2f}x" if base and r["seconds"] else "-"
            counts = f"{r['compiled']}/{r['found']}/{r['left']}" if "compiled" in r else "-"
            lines.append(f"| {name} | {r['mode']} | {r['workers']} | {r.get('pool', '')} | {r['configs']} | "
                         f"{r['seconds']:.2f} | {speed} | {r.get('load_s', '-')} | {counts} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
