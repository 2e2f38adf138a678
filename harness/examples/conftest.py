"""A minimal Triton benchmark that parallel-warmup can drive: copy this folder and change the kernel.

What the warmup needs from a benchmark, and all it needs:
* `--shape_file FILE`: the shapes come from the file's entry for the op (FLAGGEMS_PERF_CURRENT_OP,
  here "rowsum" by default), one test per shape; warmup-spawn hands each child its shard this way;
* the kernels are `@triton.autotune`d, and pytest loads warmup_harness (installed, or `-p`).
Run it: see README.md, "Your own Triton benchmark".
"""

import os

import pytest
import yaml


def pytest_addoption(parser):
    parser.addoption("--shape_file", default=os.path.join(os.path.dirname(__file__), "shapes.yaml"),
                     help="YAML file: {op: {shapes: [[M, N], ...]}}")


def pytest_generate_tests(metafunc):
    if "shape" in metafunc.fixturenames:
        op = os.environ.get("FLAGGEMS_PERF_CURRENT_OP", "").strip() or "rowsum"
        with open(metafunc.config.getoption("shape_file")) as f:
            entry = (yaml.safe_load(f) or {}).get(op)
        if entry is None:
            raise pytest.UsageError(f"{metafunc.config.getoption('shape_file')}: no entry {op!r}")
        shapes = entry["shapes"]
        metafunc.parametrize("shape", shapes, ids=["x".join(map(str, s)) for s in shapes])
