"""A decided key launched many times: what a launch costs once its key is decided, and what is left
running then. Driven by tests/bench/bench_hot_path.py (timing) and tests/test_harness_hot_path.py
(counting), one session per variant (plain, replay, resumed, tuned earlier), not by pytest's own run.

One test per tuner (`HOT_PATH_TUNERS`, comma-separated; default all): Triton's own Autotuner
(kernels_plain.py), a LibTuner-like subclass that replaces `run` (kernels_store.py) and one shaped
as FlagGems 5.3's (kernels_store53.py; its module is imported after the 5.0 one, as each opens its
store at import). Each launches its kernel on one shape once, which decides the key (tuned, pinned
from the record, or found in the store), a few times more, then `HOT_PATH_LAUNCHES` times (default
20000), and appends a JSON line to `HOT_PATH_OUT`:

* `us`: microseconds a launch, by perf_counter, in the fastest chunk of 1000 launches (a shared
  machine preempts some chunks; `us_loop` is the whole loop's mean); or, with `HOT_PATH_COUNT=1`,
  instead of timing, `calls`: the Python function calls made during the loop, by function
  (`file:qualified name`, sys.setprofile), and `harness_calls`: those of warmup_harness's modules;
* `configs_in_dicts`: how many of the tuner's configs have their attributes in a dict (below);
* `threads`: the names of the process's threads other than this one, and `children`: the pids of
  its child processes, once the last key is decided (after the loop). Triton's own key, which the
  harness hashes in a thread from the start (early_key.py), is waited for first: a plain run
  hashes it at its first compile, which the stubbed device never does.
"""

import gc
import json
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import kernels_plain
import kernels_store
import kernels_store53
import pytest
from conftest import LAUNCHES, FakeDescriptor, FakeTensor

TUNERS = {
    "triton": kernels_plain.mm_kernel_general,
    "libtuner": kernels_store.mm_kernel_general,
    "libtuner53": kernels_store53.mm_kernel_general,
}
SHAPE = (256, 512, 128)
WARM = 10
CHUNK = 1000  # launches timed together; the fastest chunk is the launch's cost with no other process in the way


def _chosen() -> list[str]:
    raw = os.environ.get("HOT_PATH_TUNERS", "").strip()
    return raw.split(",") if raw else list(TUNERS)


def _children() -> list[int]:
    pid = os.getpid()
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return sorted(found)


class Calls:
    """A profile function: the Python calls made, by function, and those of the harness."""

    def __init__(self):
        self.by_function: Counter = Counter()
        self.harness = 0

    def __call__(self, frame, event, arg):
        if event == "call":
            code = frame.f_code
            self.by_function[f"{Path(code.co_filename).name}:{code.co_qualname}"] += 1
            if "warmup_harness" in code.co_filename:
                self.harness += 1


def attributes_in_a_dict(config) -> bool:
    """Whether a config's attributes were moved out of the object into a dict, which reading its
    `__dict__` does for good on Python 3.11 and 3.12, making every later read of one slower (the
    tuner's map-back reads them at each launch). Seen without reading `__dict__`: the dict is then
    among the objects the config refers to."""
    return any(type(ref) is dict and "num_warps" in ref for ref in gc.get_referents(config))


@pytest.mark.parametrize("name", _chosen())
def test_launches(name):
    kernel = TUNERS[name]
    m, n, k = SHAPE
    a, b, c, desc = FakeTensor(m, k), FakeTensor(k, n), FakeTensor(m, n), FakeDescriptor()
    for _ in range(1 + WARM):
        kernel[(1,)](a, b, c, desc, m, n, k)
    launches = int(os.environ.get("HOT_PATH_LAUNCHES") or 20000)
    line = {"tuner": name, "launches": launches}
    if os.environ.get("HOT_PATH_COUNT") == "1":
        calls = Calls()
        sys.setprofile(calls)
        try:
            for _ in range(launches):
                kernel[(1,)](a, b, c, desc, m, n, k)
        finally:
            sys.setprofile(None)
        line.update(calls=dict(calls.by_function), harness_calls=calls.harness)
    else:
        chunk = min(CHUNK, launches)
        chunks = []
        for _ in range(launches // chunk):
            start = time.perf_counter()
            for _ in range(chunk):
                kernel[(1,)](a, b, c, desc, m, n, k)
            chunks.append((time.perf_counter() - start) / chunk * 1e6)
        line.update(us=min(chunks), us_loop=sum(chunks) / len(chunks))
    del LAUNCHES[:]
    line["config"] = {key: value for key, value in kernel.best_config.all_kwargs().items() if value is not None}
    line["configs_in_dicts"] = sum(map(attributes_in_a_dict, kernel.configs))
    early_key = sys.modules.get("warmup_harness.early_key")
    if early_key is not None:
        early_key.wait()
    line["threads"] = sorted(t.name for t in threading.enumerate() if t is not threading.current_thread())
    line["children"] = _children()
    with open(os.environ["HOT_PATH_OUT"], "a") as out:
        out.write(json.dumps(line) + "\n")
