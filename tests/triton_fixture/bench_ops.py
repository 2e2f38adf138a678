"""The fixture benchmark: per shape (M, N, K), every kernel of the fixture runs once.

`FIXTURE_CRASH_AT=MxNxK`: the process dies (exit 3, no cleanup) when it reaches that shape.
`FIXTURE_HANG_AT=MxNxK`: the process makes the file `hung` in its folder, then sleeps until it is
killed, when it reaches that shape.

`FIXTURE_LIBTUNER=5.3`: the store-tuned kernel is kernels_store53's (FlagGems 5.3's shape) instead of
kernels_store's (5.0's). With it, `FIXTURE_RUN_MODE=MODE` launches that kernel once more per shape,
first, under `use_run_mode(MODE)`, and `FIXTURE_BENCHMARK_CONFIG=FILE` adds, after each shape, a JSON
line to FILE: what `benchmark_config` answers for each of the kernel's first two configs.
"""

import importlib
import json
import os
import time

import kernels_plain
import pytest
from conftest import FakeDescriptor, FakeTensor

store = importlib.import_module("kernels_store53" if os.environ.get("FIXTURE_LIBTUNER") == "5.3" else "kernels_store")


@pytest.mark.mm  # as FlagGems marks a benchmark with its op: `-m mm` selects it
def test_op(shape):
    m, n, k = shape
    if os.environ.get("FIXTURE_CRASH_AT") == f"{m}x{n}x{k}":
        os._exit(3)
    if os.environ.get("FIXTURE_HANG_AT") == f"{m}x{n}x{k}":
        open("hung", "w").close()
        time.sleep(600)
    a, b, c = FakeTensor(m, k), FakeTensor(k, n), FakeTensor(m, n)
    kernels_plain.mm_kernel_general[(1,)](a, b, c, FakeDescriptor(), m, n, k)
    if os.environ.get("FIXTURE_RUN_MODE"):
        with store.mm_kernel_general.use_run_mode(os.environ["FIXTURE_RUN_MODE"]):
            store.mm_kernel_general[(1,)](a, b, c, FakeDescriptor(), m, n, k)
    store.mm_kernel_general[(1,)](a, b, c, FakeDescriptor(), m, n, k)
    if os.environ.get("FIXTURE_BENCHMARK_CONFIG"):
        tuner = store.mm_kernel_general
        ms = [tuner.benchmark_config(config, warmup=1, rep=2) for config in tuner.configs[:2]]
        with open(os.environ["FIXTURE_BENCHMARK_CONFIG"], "a") as f:
            f.write(json.dumps([shape, ms]) + "\n")
    kernels_plain.add_kernel[(1,)](a, b, c, m * n)
    kernels_plain.scale_kernel[(1,)](c, n)
