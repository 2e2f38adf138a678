"""Row sums of an [M, N] float16 matrix, autotuned over block size and warps, timed per shape."""

import pytest
import triton
import triton.language as tl

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a GPU", allow_module_level=True)


@triton.autotune(
    configs=[triton.Config({"BLOCK_N": b}, num_warps=w, num_stages=s)
             for b in (256, 512, 1024, 2048, 4096) for w in (2, 4, 8) for s in (1, 2, 3)],
    key=["N"],  # one sweep per distinct N; rows are independent, M does not change the winner much
)
@triton.jit
def rowsum_kernel(x, out, M, N, stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        acc += tl.load(x + row * stride + cols, mask=cols < N, other=0.0).to(tl.float32)
    tl.store(out + row, tl.sum(acc, axis=0))


def rowsum(x):
    out = torch.empty(x.shape[0], device=x.device, dtype=torch.float32)
    rowsum_kernel[(x.shape[0],)](x, out, x.shape[0], x.shape[1], x.stride(0))
    return out


def test_rowsum(shape):
    m, n = shape
    x = torch.randn(m, n, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(rowsum(x), x.float().sum(dim=1), rtol=1e-3, atol=1e-2)  # tunes or replays
    ms = triton.testing.do_bench(lambda: rowsum(x))
    print(f"rowsum {m}x{n}: {ms * 1e3:.1f} us, {rowsum_kernel.best_config}")
