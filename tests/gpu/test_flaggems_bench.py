"""FlagGems' own autotuned ops under the record/replay harness: ``flag_gems.mm`` (on an H200 its
Hopper TMA kernel, a LibTuner with a TMA pre-hook and about 160 configs) and ``flag_gems.bmm``
(a LibTuner over a heuristics layer, 12 configs). Shapes: ``gpu_flaggems`` (or
``gpu_flaggems_dtypes``) in shapes.yaml."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
flag_gems = pytest.importorskip("flag_gems")

OP = "gpu_flaggems"
KINDS = ("mm", "bmm")


def test_op(shape, bench):
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    a, b = bench.inputs(shape)
    op = flag_gems.mm if shape[0] == "mm" else flag_gems.bmm
    run = lambda: op(a, b)  # noqa: E731
    out = run()  # the first call autotunes, or replays the recorded config
    with bench.gpu_lock():
        err = bench.check(out, torch.matmul(a.float(), b.float()), 1e-2)
    bench.record(shape, rel_err=err, **bench.time(run))
