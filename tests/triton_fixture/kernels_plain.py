"""Kernels tuned by Triton's own Autotuner, and one chosen by heuristics alone."""

import triton
import triton.language as tl
from conftest import set_block_hook

MM_CONFIGS = [
    triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": 32}, num_warps=w, num_stages=s,
                  pre_hook=set_block_hook)
    for m in (32, 64, 128) for n in (32, 64) for w in (4, 8) for s in (2, 3)
]


@triton.autotune(configs=MM_CONFIGS, key=["M", "N", "K"])
@triton.jit
def mm_kernel_general(a, b, c, desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(c + pid, tl.load(a + pid) + tl.load(b + pid))


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (128, 256, 512, 1024) for w in (2, 4)],
    key=["n"],
    prune_configs_by={"early_config_prune": lambda configs, nargs, **kw: [
        c for c in configs if c.kwargs["BLOCK"] <= max(128, nargs["n"])]},
)
@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n), mask=offs < n)


@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n"])})
@triton.jit
def scale_kernel(x, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs, tl.load(x + offs, mask=offs < n) * 2, mask=offs < n)
