"""A Triton benchmark without a GPU: real `@triton.autotune` kernels, stubbed device.

The harness under test (warmup_harness) hooks Triton's autotuners; this benchmark gives it real
ones to hook: Triton's own `Autotuner` (kernels_plain.py) and a subclass that replaces `run` the way
FlagGems' LibTuner does (kernels_store.py, 5.0's shape; kernels_store53.py, 5.3's, with
FIXTURE_LIBTUNER=5.3), plus a heuristics-only kernel. One test per shape of
the op's entry in `--shape_file` (op from FLAGGEMS_PERF_CURRENT_OP, default "default"), or without
one, of `FIXTURE_SHAPES` (a JSON list), as a benchmark with shapes of its own.

Why a stubbed device, and only that: Triton from PyPI installs in seconds and its autotuners run
as they do on a GPU, but without one there is no driver, so the calls that reach the device
fail: the kernel launch (`JITFunction.run`, compiling and launching) and the timer (the active
driver's benchmarker, which Autotuner._bench calls). Triton's interpreter (TRITON_INTERPRET=1)
could run the kernels on the CPU, but it wants torch tensors, and torch from PyPI is gigabytes of
CUDA libraries for CI to fetch. So this conftest replaces exactly those calls:

* launch: records the kernel, its integer arguments and its config, and checks that a config's
  pre-hook ran before a launch (as FlagGems' TMA descriptors need), instead of compiling;
* timer: runs the autotuner's kernel_call (hooks and all) and returns a time that is a pure
  function of kernel, config, integer arguments and FLAGGEMS_PERF_WARMUP_WORKER, so sweeps of one
  key agree across processes, while a measurement run that swept instead of replaying would pick
  other winners than the warmup children did;
* target: the device's name as Triton knows it, "fake 0", which the harness's sidecar records;
  `fake N` with `FIXTURE_ARCH=N` (another device), none with `FIXTURE_NO_TARGET=1` (a device
  nothing names).

Everything else (keys, pruning, the autotuner's cache, `self._bench`, picking the minimum) is
Triton's. `FIXTURE_HANG_TIMING=MxNxK` hangs in the first timing of a kernel launched with those
integer arguments (an mm kernel of that shape), after writing its pid to `hung-timing` in its
folder (only the first process to get there: that file is made once), so that a test can kill a
process mid-tune. `FIXTURE_TRACE=FILE` appends one JSON line per
session: the launches, how many configs each kernel timed, the protocol's environment.

For tests of what runs while what (scripts/warmup starting the measurement with the sweep),
`FIXTURE_EVENTS=FILE` appends a line per event, in the order they happen, WHO being `child` in a
warmup child, else `measure`: `collected WHO PID` when collection is done, `test WHO PID
published|unpublished STDIN` at the first test (whether the replay variable's `<op>.json` exists
then, and what its descriptor 0 is),
`finished WHO PID` at the session's end. `FIXTURE_CHILD_HOLD` makes a warmup child's first test
wait until a measurement has collected (so that collection overlaps the sweep by construction,
not by timing; 120 s at most; its `test` event comes after the wait), then: `1` go on, `hang`
wait until killed, `crash` die (exit 3) before any kernel runs, so that it records nothing.
`FIXTURE_MEASURE_HANG=1` makes the measurement's first test wait until it is killed.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from types import SimpleNamespace

import yaml
from triton.runtime.autotuner import Autotuner
from triton.runtime.driver import driver
from triton.runtime.jit import JITFunction

LAUNCHES: list[dict] = []  # the benchmark's launches, in order
TIMED: Counter = Counter()  # kernel -> configs timed


def kernel_name(jit_fn) -> str:
    return f"{jit_fn.fn.__module__}:{jit_fn.fn.__qualname__}"


class FakeDevice:
    """The active driver, as far as the autotuner asks anything of it (its benchmarker), and the
    launch: a launch inside a timing is one config being timed, any other one the benchmark's."""

    def __init__(self):
        self.timed_launch: tuple | None = None
        self.timing = False

    def get_benchmarker(self):
        return self.do_bench

    def get_current_target(self):
        if os.environ.get("FIXTURE_NO_TARGET") == "1":
            raise RuntimeError("no target: FIXTURE_NO_TARGET=1")
        return SimpleNamespace(backend="fake", arch=int(os.environ.get("FIXTURE_ARCH") or 0), warp_size=32)

    def launch(self, jit_fn, args, kwargs):
        bound = dict(zip(jit_fn.arg_names, args))
        ints = [v for v in args if isinstance(v, int)]
        config = {k: v for k, v in kwargs.items() if v is not None}
        desc = bound.get("desc")
        if desc is not None and desc.block != (kwargs.get("BLOCK_M"), kwargs.get("BLOCK_N")):
            raise RuntimeError(f"{kernel_name(jit_fn)}: launched with {config} but the config's pre-hook "
                               f"did not set the descriptor (it holds {desc.block})")
        if self.timing:
            TIMED[kernel_name(jit_fn)] += 1
            self.timed_launch = (kernel_name(jit_fn), ints, config)
        else:
            LAUNCHES.append({"kernel": kernel_name(jit_fn), "args": ints, "config": config})

    def do_bench(self, kernel_call, quantiles=None, **_):
        self.timing = True
        try:
            kernel_call()
        finally:
            self.timing = False
        salt = os.environ.get("FLAGGEMS_PERF_WARMUP_WORKER", "")
        name, ints, config = self.timed_launch
        if os.environ.get("FIXTURE_HANG_TIMING") == "x".join(map(str, ints[:3])):
            # Dies mid-tune (by the caller's kill): the first process to get here says so in
            # `hung-timing` (its pid), then waits; any other goes on.
            try:
                fd = os.open("hung-timing", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                fd = None
            if fd is not None:
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                time.sleep(600)
        text = json.dumps([name, ints, sorted(config.items()), salt])
        ms = 1 + int.from_bytes(hashlib.sha256(text.encode()).digest()[:6], "big") / 2**48
        return [ms] * len(quantiles) if quantiles else ms


DEVICE = FakeDevice()
driver.set_active(DEVICE)
JITFunction.run = lambda self, *args, grid, warmup, **kwargs: DEVICE.launch(self, args, kwargs)


class FakeTensor:
    def __init__(self, *shape, dtype="float16"):
        self.shape = shape
        self.dtype = dtype


class FakeDescriptor:
    """Stands in for a TMA descriptor: a config's pre-hook sets its block shape before a launch."""

    def __init__(self):
        self.block = None


def set_block_hook(nargs):
    nargs["desc"].block = (nargs["BLOCK_M"], nargs["BLOCK_N"])


def op_name() -> str:
    return os.environ.get("FLAGGEMS_PERF_CURRENT_OP", "").strip() or "default"


def pytest_addoption(parser):
    parser.addoption("--shape_file", default="", help="YAML shape file (FlagGems format)")


def pytest_configure(config):
    config.addinivalue_line("markers", "mm: the op's benchmark (FlagGems names its tests' markers by op)")


def pytest_generate_tests(metafunc):
    # FIXTURE_IMPORT_SECONDS=S: collecting costs S seconds more, as a benchmark's imports do.
    time.sleep(float(os.environ.get("FIXTURE_IMPORT_SECONDS") or 0))
    if "shape" in metafunc.fixturenames:
        path = metafunc.config.getoption("shape_file")
        if path:
            with open(path) as f:
                shapes = (yaml.safe_load(f) or {}).get(op_name(), {}).get("shapes", [])
        else:  # no --shape_file: FIXTURE_SHAPES (JSON), as a benchmark's built-in shapes
            shapes = json.loads(os.environ.get("FIXTURE_SHAPES") or "[]")
        metafunc.parametrize("shape", shapes, ids=["x".join(map(str, s)) for s in shapes])


def pytest_sessionfinish(session):
    _event("finished")
    trace = os.environ.get("FIXTURE_TRACE")
    if not trace:
        return
    line = {
        "worker": os.environ.get("FLAGGEMS_PERF_WARMUP_WORKER"),
        "env": {k: v for k, v in os.environ.items()
                if k.startswith(("FLAGGEMS_", "TRITON_", "WARMUP_HARNESS_"))},
        "launches": LAUNCHES,
        "timed": dict(TIMED),
        "hooked": isinstance(Autotuner.__dict__.get("cache"), property),
        "exitstatus": int(session.exitstatus),
    }
    with open(trace, "a") as f:
        f.write(json.dumps(line) + "\n")



def _who() -> str:
    return "child" if os.environ.get("FLAGGEMS_PERF_WARMUP_WORKER") == "1" else "measure"


def _event(kind: str, *words: str) -> None:
    events = os.environ.get("FIXTURE_EVENTS")
    if events:
        with open(events, "a") as f:
            f.write(" ".join([kind, _who(), str(os.getpid()), *words]) + "\n")


def _measurement_collected(events: str) -> bool:
    with open(events) as f:
        return any(ln.split()[:2] == ["collected", "measure"] for ln in f)


def pytest_collection_finish(session):
    _event("collected")


_TESTED: list[bool] = []


def pytest_runtest_setup(item):
    if _TESTED:
        return
    _TESTED.append(True)
    hold = os.environ.get("FIXTURE_CHILD_HOLD", "") if _who() == "child" else ""
    if hold:  # before its event: a child's test comes after the measurement's collection
        deadline = time.monotonic() + 120
        while not _measurement_collected(os.environ["FIXTURE_EVENTS"]) and time.monotonic() < deadline:
            time.sleep(0.05)
    replay = os.environ.get("FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR", "").strip()
    published = bool(replay) and os.path.exists(os.path.join(replay, f"{op_name()}.json"))
    _event("test", "published" if published else "unpublished", os.readlink("/proc/self/fd/0"))
    while os.environ.get("FIXTURE_MEASURE_HANG") == "1" and _who() == "measure":
        time.sleep(0.1)
    if hold:
        while hold == "hang":
            time.sleep(0.1)
        if hold == "crash":
            os._exit(3)
