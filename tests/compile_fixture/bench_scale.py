"""One test per size n: the autotuned kernel runs once, which sweeps its configs on a new key."""

import triton
import triton.language as tl
from conftest import timer

import cpu_fakes

CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (64, 128, 256) for w in (1, 2)]


@triton.autotune(configs=CONFIGS, key=["n"], do_bench=timer)
@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3, mask=mask)


def test_scale(n):
    scale_kernel[(1,)](cpu_fakes.Tensor(), cpu_fakes.Tensor(), n)
    assert scale_kernel.best_config in CONFIGS
