"""Plain ``@triton.autotune`` kernels for the GPU proof: a matmul with a large config space, a row
softmax of another kind.

The kernels live in a module of their own (not in a test file) so that a precompile worker process
can import them by module name, as it would import a library's kernels.

Compile specializations: Triton specializes an integer argument on ``value % 16 == 0`` (and on
``value == 1``), so matmul shapes whose M is a multiple of 16 and shapes whose M is not compile to
two different kernels for every config; N and K stay multiples of 16 in the shape file so that the
strides (K, N) do not add more. float16 and bfloat16 are two more.

Autotuning times each config with ``do_bench(warmup=5, rep=20)``: the default (25/100 ms) would
spend a minute and a half per shape on 112 configs, longer than the compile work this proof is
about.
"""

from __future__ import annotations

import itertools
import os

import triton
import triton.language as tl


def _tune_bench(kernel_call, quantiles):
    return triton.testing.do_bench(kernel_call, warmup=5, rep=20, quantiles=quantiles)


def matmul_configs() -> list:
    """112 configs: BLOCK_M {64, 128} x BLOCK_N {64, 128, 256} x BLOCK_K {32, 64} x num_warps
    {4, 8} x num_stages {3, 4} x GROUP_M {1, 8}, and 16 of 256-row tiles with 8 warps; or 8 with
    ``GPU_BENCH_SMALL=1`` for a quick check of the scripts."""
    space = itertools.chain(
        itertools.product([64, 128], [64, 128, 256], [32, 64], [4, 8], [3, 4], [1, 8]),
        itertools.product([256], [64, 128], [32, 64], [8], [3, 4], [1, 8]),
    )
    configs = [
        triton.Config(
            {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": gm},
            num_warps=w,
            num_stages=s,
        )
        for bm, bn, bk, w, s, gm in space
    ]
    if os.environ.get("GPU_BENCH_SMALL") == "1":
        configs = configs[::14]
    return configs


@triton.autotune(configs=matmul_configs(), key=["M", "N", "K"], do_bench=_tune_bench)
@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * grid_n
    group_id = pid // width
    group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (pid % group_size)
    pid_n = (pid % width) // group_size

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b):
    import torch

    M, K = a.shape
    K2, N = b.shape
    assert K == K2, f"inner dimensions differ: {a.shape} @ {b.shape}"
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
    matmul_kernel[grid](
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
    )
    return c


def softmax_configs() -> list:
    """12 configs: the column tile x num_warps."""
    return [
        triton.Config({"TILE_N": t}, num_warps=w)
        for t, w in itertools.product([512, 1024, 2048, 4096], [4, 8, 16])
    ]


@triton.autotune(configs=softmax_configs(), key=["M", "N"], do_bench=_tune_bench)
@triton.jit
def softmax_kernel(out_ptr, in_ptr, M, N, stride_in, stride_out, TILE_N: tl.constexpr):
    """One program per row, an online softmax over tiles of TILE_N columns (two passes)."""
    row = tl.program_id(0)
    in_row = in_ptr + row.to(tl.int64) * stride_in
    out_row = out_ptr + row.to(tl.int64) * stride_out
    cols = tl.arange(0, TILE_N)
    m = tl.full((TILE_N,), -float("inf"), tl.float32)
    s = tl.zeros((TILE_N,), tl.float32)
    for start in range(0, N, TILE_N):
        x = tl.load(in_row + start + cols, mask=start + cols < N, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        # lanes that have seen only masked columns stay at -inf: shift them by 0, not by -inf
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp(m - shift) + tl.exp(x - shift)
        m = m_new
    row_max = tl.max(m, 0)
    total = tl.sum(s * tl.exp(m - row_max), 0)
    for start in range(0, N, TILE_N):
        mask = start + cols < N
        x = tl.load(in_row + start + cols, mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - row_max) / total
        tl.store(out_row + start + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    import torch

    M, N = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(M,)](out, x, M, N, x.stride(0), out.stride(0))
    return out
