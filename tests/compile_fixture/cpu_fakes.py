"""The least a machine without a GPU needs to drive Triton's real JIT and compiler: a driver that
answers "which device, which stream, which target" (Hopper, sm_90), and tensors that have a dtype
and a data pointer. Compilation (Triton's passes, LLVM, the bundled ptxas) is real; nothing runs.

Also small autotuned kernels whose configs compile in well under a second each. Used by
tests/test_precompile.py, this folder's benchmark, and tests/gpu's dry run and micro-benchmark.
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.tools.tensor_descriptor import TensorDescriptor

HOPPER = GPUTarget("cuda", 90, 32)


class CpuDriver:
    """Stands in for ``driver.active``: device 0, stream 0, an H200's target."""

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        return HOPPER


class DType:
    """Prints as torch's dtype does, which is all Triton's specializer reads."""

    SIZES = {"float16": 2, "bfloat16": 2, "float32": 4}

    def __init__(self, name: str):
        self.name = name
        self.itemsize = self.SIZES[name]
        self.is_floating_point = True

    def __str__(self):
        return f"torch.{self.name}"

    __repr__ = __str__


class Tensor:
    def __init__(self, dtype: str = "float16", ptr: int = 0):
        self.dtype = DType(dtype)
        self.ptr = ptr

    def data_ptr(self):
        return self.ptr


def fake_bench(kernel_call, quantiles):
    """A do_bench that never launches: every config times as 1 ms."""
    return [1.0, 1.0, 1.0]


SCALE_CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (64, 128) for w in (1, 2)]


@triton.autotune(configs=SCALE_CONFIGS, key=["n"], do_bench=fake_bench)
@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


@triton.autotune(configs=SCALE_CONFIGS, key=["n"], do_bench=fake_bench)
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def scale_even_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)
    else:
        mask = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def tma_block_hook(nargs):
    """Sets the descriptors' block shape from the config, as FlagGems' Hopper mm does."""
    for name in ("x_desc", "y_desc"):
        nargs[name].block_shape = [nargs["BLOCK"], nargs["BLOCK"]]


TMA_CONFIGS = [triton.Config({"BLOCK": b}, num_warps=4, pre_hook=tma_block_hook) for b in (32, 64)]


@triton.autotune(configs=TMA_CONFIGS, key=["n"], do_bench=fake_bench)
@triton.jit
def tma_copy_kernel(x_desc, y_desc, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    y_desc.store([pid * BLOCK, 0], x_desc.load([pid * BLOCK, 0]))


def tma_args(n=256):
    """Host-side descriptors with a placeholder block shape, set per config by the pre-hook."""
    return tuple(TensorDescriptor(Tensor(), [n, n], [n, 1], [1, 1]) for _ in range(2)) + (n,)
