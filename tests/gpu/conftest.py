"""The GPU proof's benchmark conventions (FlagGems' own, reduced to what the proof needs).

* ``--shape_file FILE`` (default: shapes.yaml beside this file): a test module's shapes are the
  ``shapes`` list under the op's key, the op being ``$FLAGGEMS_PERF_CURRENT_OP`` (as warmup-shard
  and every warmup child see it) or else the module's ``OP``. A shape is ``[kind, dtype, dims...]``;
  a module runs the kinds it lists in ``KINDS``.
* Each test runs its op once (which autotunes, or replays under the harness), checks the result
  against torch, then times it with ``triton.testing.do_bench`` (median of 200 ms after 25 ms of
  warm-up) and again captured in a CUDA graph (the kernel's own time), and records both. A warmup
  child (``FLAGGEMS_PERF_WARMUP_WORKER=1``) skips the timing: its timings are discarded, and it
  would disturb a sibling's sweep on a shared GPU.
* ``$GPU_BENCH_RESULT``: where the session writes its latencies as JSON (not in warmup children).
* Every session says on stderr which device it saw (a warmup child's log so names its GPU).
* A warmup child holds the harness's device timing lock around its own GPU work (inputs, the
  reference), so that a sibling sharing the GPU never times a config meanwhile.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parent
DEFAULT_SHAPES = HERE / "shapes.yaml"


def pytest_addoption(parser):
    try:
        parser.addoption("--shape_file", action="store", default=str(DEFAULT_SHAPES),
                         help="YAML file with the op's shapes under the op's key")
    except ValueError:  # another plugin registered it already
        pass


def is_warmup_child() -> bool:
    return os.environ.get("FLAGGEMS_PERF_WARMUP_WORKER", "").strip() == "1"


def current_op(module) -> str:
    return os.environ.get("FLAGGEMS_PERF_CURRENT_OP", "").strip() or module.OP


def shape_id(shape) -> str:
    kind, dtype, *dims = shape
    return f"{kind}-{dtype}-{'x'.join(str(d) for d in dims)}"


def load_shapes(path: str, op: str, kinds) -> list:
    try:
        with open(path) as f:
            doc = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise pytest.UsageError(f"gpu bench: cannot read --shape_file {path}: {exc}") from exc
    entry = doc.get(op) if isinstance(doc, dict) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("shapes"), list):
        raise pytest.UsageError(f"gpu bench: {path} has no '{op}: {{shapes: [...]}}' entry; add one or set "
                                "FLAGGEMS_PERF_CURRENT_OP to an op the file has")
    shapes = []
    for i, shape in enumerate(entry["shapes"]):
        if not (isinstance(shape, list) and len(shape) >= 3 and all(isinstance(d, int) for d in shape[2:])):
            raise pytest.UsageError(f"gpu bench: {path}: {op}.shapes[{i}] = {shape!r}; expected [kind, dtype, dims...]")
        if shape[0] in kinds:
            shapes.append(shape)
    return shapes


def pytest_generate_tests(metafunc):
    if "shape" not in metafunc.fixturenames:
        return
    module = metafunc.module
    shapes = load_shapes(metafunc.config.getoption("--shape_file"), current_op(module), module.KINDS)
    metafunc.parametrize("shape", shapes, ids=[shape_id(s) for s in shapes])


# --- the session's record ----------------------------------------------------------------------


class Results:
    def __init__(self):
        self.started_at = time.time()
        self.shapes: dict[str, dict] = {}
        self.device: dict = {}

    def add(self, shape, **fields):
        self.shapes[shape_id(shape)] = {"kind": shape[0], "shape": shape, **fields}

    def write(self, path: str, op: str | None):
        mode = ("replay" if os.environ.get("FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR", "").strip()
                else "record" if os.environ.get("FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR", "").strip() else "tune")
        versions = {}
        for name in ("torch", "triton", "flag_gems"):
            mod = sys.modules.get(name)
            if mod is not None:
                versions[name] = getattr(mod, "__version__", "?")
        doc = {
            "version": 1,
            "op": op,
            "mode": mode,
            "started_at": self.started_at,
            "finished_at": time.time(),
            "device": self.device,
            "versions": versions,
            "geomean_ms": geomean([s["ms"] for s in self.shapes.values() if s.get("ms")]),
            "timing_s": sum(s.get("timing_s", 0.0) for s in self.shapes.values()),
            "shapes": self.shapes,
        }
        tmp = f"{path}.tmp.{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=2)
        os.replace(tmp, path)


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


RESULTS = Results()


def pytest_configure(config):
    RESULTS.started_at = time.time()


def describe_device() -> dict:
    import torch

    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    return {
        "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "index": index,
        "name": props.name,
        "uuid": str(getattr(props, "uuid", "")),
    }


def pytest_sessionstart(session):
    try:
        RESULTS.device = describe_device()
    except Exception as exc:  # no GPU: the tests say so themselves
        RESULTS.device = {"visible": os.environ.get("CUDA_VISIBLE_DEVICES"), "error": f"{type(exc).__name__}: {exc}"}
    role = "warmup child" if is_warmup_child() else "session"
    print(f"gpu-bench: {role} pid {os.getpid()} sees CUDA_VISIBLE_DEVICES={RESULTS.device.get('visible')} -> "
          f"cuda:{RESULTS.device.get('index')} {RESULTS.device.get('name')} {RESULTS.device.get('uuid')}"
          f"{' ' + RESULTS.device['error'] if 'error' in RESULTS.device else ''}", file=sys.stderr, flush=True)


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("GPU_BENCH_RESULT", "").strip()
    if path and not is_warmup_child():
        RESULTS.write(path, os.environ.get("FLAGGEMS_PERF_CURRENT_OP", "").strip() or None)


class Bench:
    """What a test uses: check a result, time the op, record the shape's figures."""

    def __init__(self, config):
        self.config = config  # pytest's: the harness's session is a plugin registered with it

    def gpu_lock(self):
        """The harness's device timing lock (a no-op outside a harness session)."""
        from warmup_harness.plugin import device_timing_lock

        return device_timing_lock(self.config)

    # A shape's input tensors by its kind: [kind, dtype, dims...].
    OPERANDS = {
        "mm": lambda m, n, k: [(m, k), (k, n)],
        "bmm": lambda b, m, n, k: [(b, m, k), (b, k, n)],
        "softmax": lambda m, n: [(m, n)],
    }

    def inputs(self, shape) -> tuple:
        """The shape's operands, random with a seed of the shape's dims (the same in every process
        and run), made on the GPU holding the device's timing lock: a sibling sharing the GPU is
        never timing a config meanwhile."""
        import torch

        kind, dtype, *dims = shape
        with self.gpu_lock():
            gen = torch.Generator(device="cuda").manual_seed(hash(tuple(dims)) % (2**31))
            return tuple(torch.randn(*size, device="cuda", dtype=getattr(torch, dtype), generator=gen)
                         for size in self.OPERANDS[kind](*dims))

    def check(self, out, ref, tol: float) -> float:
        """Relative error ||out - ref|| / ||ref|| (ref in float32 or wider); fails above tol."""
        import torch

        err = (torch.linalg.vector_norm((out.float() - ref).flatten())
               / torch.linalg.vector_norm(ref.flatten())).item()
        assert math.isfinite(err) and err <= tol, f"relative error {err:.3g} above {tol:g}"
        return err

    warmed = False

    def warm_up_the_gpu(self, seconds: float = 2.0) -> None:
        """Keeps the GPU busy for a few seconds before a session's first timing: a measurement
        session's first shapes otherwise ran at idle clocks (calls 1-2 on 2026-11-30: the same
        picks replayed twice differed by up to 4x on the first shapes, and by <1% after)."""
        if Bench.warmed:
            return
        import torch

        a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            for _ in range(20):
                a @ a
            torch.cuda.synchronize()
        Bench.warmed = True

    def time(self, fn) -> dict:
        """Median and 20th/80th percentiles of ``fn`` in ms as the benchmark times it (launches
        included), the kernel's own median (``gpu_ms``, see gpu_time), and the seconds all this
        took (a serial sweep's wall time is told without them); nothing in a warmup child."""
        if is_warmup_child():
            return {}
        import triton

        start = time.perf_counter()  # the warm-up counts as timing: a sweep's wall time excludes it
        self.warm_up_the_gpu()
        median, p20, p80 = triton.testing.do_bench(fn, warmup=25, rep=200, quantiles=[0.5, 0.2, 0.8])
        return {"ms": median, "p20": p20, "p80": p80, **self.gpu_time(fn), "timing_s": time.perf_counter() - start}

    @staticmethod
    def gpu_time(fn) -> dict:
        """The median of ``fn`` captured in a CUDA graph and replayed: the GPU's time alone, without
        the host's launch cost. What a config pick changes, and so what picks are compared by:
        FlagGems' TMA kernels rebuild their descriptors on the host at every launch, which makes
        their small shapes host-bound, and one process then measures about 0.04 ms where another
        measures 0.11 ms for the same config (2026-11-30, calls 2-4)."""
        import triton

        try:
            return {"gpu_ms": triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median")}
        except Exception as exc:  # not capturable: the launch-inclusive time stands alone
            return {"gpu_ms_error": f"{type(exc).__name__}: {exc}"}

    def record(self, shape, **fields):
        RESULTS.add(shape, **fields)


@pytest.fixture
def bench(request):
    return Bench(request.config)
