"""A CPU dry run of the GPU proof's plumbing (``GPU_BENCH_DRY=1``; skipped otherwise).

Real Triton compiles a real ``@triton.autotune`` kernel for an H200's target
(tests/compile_fixture/cpu_fakes.py fakes the device queries), so the harness with its precompile,
scripts/warmup and proof.py run as they do on the GPU machine. Only the launch and the timer are
stubbed: a "launch" compiles and returns, and a config "times" as a pure function of kernel,
config and shape, so a replay of the same picks measures the same latency.

``python3 tests/gpu/proof.py --bench dry --gpus 1 --backend cuda --variants serial,plugin1x2,ours1x2``
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import sys
from pathlib import Path

import pytest

if os.environ.get("GPU_BENCH_DRY") != "1":
    pytest.skip("a dry run of the proof's plumbing: set GPU_BENCH_DRY=1", allow_module_level=True)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.runtime.driver import driver  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "compile_fixture"))
import cpu_fakes  # noqa: E402

OP = "gpu_dry"
KINDS = ("scale",)

driver.set_active(cpu_fakes.CpuDriver())
_compile_and_launch = JITFunction.run
_timed: list = []


def _compile_only(self, *args, grid, warmup, **kwargs):
    kernel = _compile_and_launch(self, *args, grid=grid, warmup=True, **kwargs)
    if _timed and _timed[-1] is None:
        _timed[-1] = (args, kwargs)
    return kernel


JITFunction.run = _compile_only


def dry_ms(args, config: dict) -> float:
    n = [a for a in args if isinstance(a, int)]
    text = json.dumps([n, sorted((k, v) for k, v in config.items() if isinstance(v, (int, str)))])
    return 1 + int.from_bytes(hashlib.sha256(text.encode()).digest()[:6], "big") / 2**48


def dry_bench(kernel_call, quantiles):
    _timed.append(None)
    kernel_call()
    args, kwargs = _timed.pop()
    ms = dry_ms(args, kwargs)
    return [ms] * len(quantiles)


CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b, w in itertools.product([64, 128, 256], [1, 2, 4, 8])]


@triton.autotune(configs=CONFIGS, key=["n"], do_bench=dry_bench)
@triton.jit
def dry_scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3, mask=mask)


def test_op(shape, bench):
    _, dtype, n = shape
    args = (cpu_fakes.Tensor(dtype), cpu_fakes.Tensor(dtype), n)
    dry_scale_kernel[(1,)](*args)
    config = dry_scale_kernel.best_config
    bench.record(shape, ms=dry_ms(args, config.all_kwargs()), config=str(config))
