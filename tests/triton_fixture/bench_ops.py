"""The fixture benchmark: per shape (M, N, K), every kernel of the fixture runs once."""

import kernels_plain
import kernels_store
from conftest import FakeDescriptor, FakeTensor


def test_op(shape):
    m, n, k = shape
    a, b, c = FakeTensor(m, k), FakeTensor(k, n), FakeTensor(m, n)
    kernels_plain.mm_kernel_general[(1,)](a, b, c, FakeDescriptor(), m, n, k)
    kernels_store.mm_kernel_general[(1,)](a, b, c, FakeDescriptor(), m, n, k)
    kernels_plain.add_kernel[(1,)](a, b, c, m * n)
    kernels_plain.scale_kernel[(1,)](c, n)
