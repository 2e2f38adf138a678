"""The fixture benchmark: one case per shape of the op; see conftest.py for the protocol."""


def test_op(bench, shape):
    bench.run(shape)
