"""The fixture benchmark: per shape (M, N, K), every kernel of the fixture runs once.

`FIXTURE_CRASH_AT=MxNxK`: the process dies (exit 3, no cleanup) when it reaches that shape.
`FIXTURE_HANG_AT=MxNxK`: the process makes the file `hung` in its folder, then sleeps until it is
killed, when it reaches that shape.
"""

import os
import time

import kernels_plain
import kernels_store
import pytest
from conftest import FakeDescriptor, FakeTensor


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
    kernels_store.mm_kernel_general[(1,)](a, b, c, FakeDescriptor(), m, n, k)
    kernels_plain.add_kernel[(1,)](a, b, c, m * n)
    kernels_plain.scale_kernel[(1,)](c, n)
