"""Plain ``@triton.autotune`` kernels under the record/replay harness: gpu_bench_kernels' matmul
(112 configs) and row softmax (12 configs). Shapes: ``gpu_triton`` in shapes.yaml."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import gpu_bench_kernels as kernels  # noqa: E402

OP = "gpu_triton"
KINDS = ("mm", "softmax")


def test_op(shape, bench):
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    inputs = bench.inputs(shape)
    if shape[0] == "mm":
        a, b = inputs
        run = lambda: kernels.matmul(a, b)  # noqa: E731
        reference = lambda: a.float() @ b.float()  # noqa: E731
    else:
        (x,) = inputs
        run = lambda: kernels.softmax(x)  # noqa: E731
        reference = lambda: torch.softmax(x.float(), dim=-1)  # noqa: E731
    out = run()  # the first call autotunes, or replays the recorded config
    with bench.gpu_lock():
        err = bench.check(out, reference(), 1e-2)
    bench.record(shape, rel_err=err, **bench.time(run))
