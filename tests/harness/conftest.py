"""A fixture benchmark harness that honours the FlagGems perf protocol, without a GPU.

It stands in for a real Triton operator benchmark so that the warmup tools can be driven end to
end on any machine:

* ``--shape_file FILE``: the op's entry (``FLAGGEMS_PERF_CURRENT_OP``, default ``default``) is read
  with ``yaml.safe_load``; one test runs per shape.
* Sweep: with no replay dir, each shape "autotunes": it sleeps for its sweep cost, then picks a
  winning config for each of two kernels. ``<op>_main`` is keyed by the whole shape;
  ``<op>_tail`` by the shape's last dimension only, so shapes in different shards share its keys,
  as real autotune keys do, and interference between shards shows up as conflicts.
* Record: with ``FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR``, the winners go to ``<dir>/<op>.json``,
  written with Python's ``json`` module and its defaults.
* Progress: with ``WARMUP_HARNESS_PROGRESS`` (warmup-spawn sets it in each child), the file it
  names is rewritten whole after each key swept, ``{"keys": K, "configs": C}``, four configs a key,
  as the real harness keeps it.
* Replay: with ``FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR``, configs come from ``<dir>/<op>.json`` and no
  sweep runs. A key the file lacks fails the test loudly, unless ``WARMUP_FIXTURE_REPLAY_MISS=sweep``
  (then it is swept live, as FlagGems' harness falls back). Record and replay together are refused.

Knobs, all optional (environment):

``WARMUP_FIXTURE_SWEEP_SECONDS``  sweep cost of one shape, seconds (default 0.05)
``WARMUP_FIXTURE_SWEEP_COST``     ``flat`` (default) or ``numel``: cost grows with log2 of the
                                  shape's element count, as compile-and-time sweeps do
``WARMUP_FIXTURE_COST_PROFILE``   a JSON file ``{"<shape text>": seconds}`` (shape text as in the cost
                                  file: ``json.dumps(shape, separators=(",", ":"))``): the main
                                  kernel's sweep of a shape it lists costs that much
``WARMUP_FIXTURE_STARTUP_SECONDS`` seconds every session sleeps at start, as a real child pays to
                                  import torch and Triton (default 0)
``WARMUP_FIXTURE_INTERFERENCE``   ``1``: the tail kernel's winner depends on the device the sweep
                                  ran on, as when neighbouring GPUs drag each other's timings
``WARMUP_FIXTURE_TRACE``          a file: one JSON line per session with argv, mode, shapes and
                                  the protocol's environment, for tests to read back

Faults, injected only into warmup children (``FLAGGEMS_PERF_WARMUP_WORKER=1``), so that the
measurement run after them behaves normally:

``WARMUP_FIXTURE_FAIL_SHAPES``    comma-separated shape keys (``64x64``) whose test fails
``WARMUP_FIXTURE_CRASH``          ``1``: the process dies at start-up, recording nothing
``WARMUP_FIXTURE_HANG``           ``1``: every test sleeps until it is killed; ``ignore-term``: and
                                  SIGTERM is ignored, so only SIGKILL ends it
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import signal
import sys
import time
from pathlib import Path

import pytest
import yaml

PROTOCOL_ENV = (
    "FLAGGEMS_PERF_CURRENT_OP",
    "FLAGGEMS_PERF_WARMUP_WORKER",
    "FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR",
    "FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR",
    "FLAGGEMS_PERF_TTGIR_DUMP_DIR",
    "FLAGGEMS_PERF_COLOR",
    "PARALLEL_WARMUP_GPUS",
    "TRITON_CACHE_DIR",
    "CUDA_VISIBLE_DEVICES",
    "PYTHONUNBUFFERED",
    "WARMUP_HARNESS_RACE",
    "WARMUP_HARNESS_RESUME_DIR",
    "WARMUP_HARNESS_FRESH",
    "WARMUP_HARNESS_SIGNATURE",
)


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()


def _fault(name: str) -> str:
    """A fault knob's value, in a warmup child only."""
    return _env(name) if _env("FLAGGEMS_PERF_WARMUP_WORKER") == "1" else ""


def op_name() -> str:
    return _env("FLAGGEMS_PERF_CURRENT_OP") or "default"


def shape_key(shape) -> str:
    if isinstance(shape, (list, tuple)):
        return "x".join(str(d) for d in shape)
    return str(shape)


def _digest(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("|".join(parts).encode()).digest()[:8], "big")


def winner(kernel: str, key: str, device: str) -> dict:
    """The config a sweep picks: a pure function of kernel and key, plus the device under
    interference."""
    salt = device if _env("WARMUP_FIXTURE_INTERFERENCE") == "1" and kernel.endswith("_tail") else ""
    h = _digest(kernel, key, salt)
    return {
        "BLOCK_M": 16 << (h % 4),
        "BLOCK_N": 32 << ((h >> 2) % 3),
        "num_warps": 4 << ((h >> 4) % 2),
        "num_stages": 2 + (h >> 5) % 3,
    }


@functools.cache
def _cost_profile(path: str) -> dict:
    return json.loads(Path(path).read_text()) if path else {}


def sweep_seconds(shape, kernel: str = "") -> float:
    profile = _cost_profile(_env("WARMUP_FIXTURE_COST_PROFILE"))
    if profile and kernel.endswith("_main"):
        try:
            text = json.dumps(shape, separators=(",", ":"))
        except (TypeError, ValueError):  # a value JSON cannot hold: no text, not in the profile
            text = None
        if text in profile:
            return float(profile[text])
    base = float(_env("WARMUP_FIXTURE_SWEEP_SECONDS") or 0.05)
    if _env("WARMUP_FIXTURE_SWEEP_COST") == "numel" and isinstance(shape, (list, tuple)):
        numel = math.prod(int(d) for d in shape if isinstance(d, int)) or 1
        return base * max(1.0, math.log2(numel) / 10)
    return base


class Session:
    """Record or replay state for one pytest session."""

    def __init__(self, shape_file: str):
        self.op = op_name()
        self.shape_file = shape_file
        self.record_dir = _env("FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR")
        self.replay_dir = _env("FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR")
        if self.record_dir and self.replay_dir:
            raise pytest.UsageError(
                "fixture harness: FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR and "
                "FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR are both set; record and replay exclude each other"
            )
        self.device = _env("CUDA_VISIBLE_DEVICES") or "0"
        self.records: dict[str, dict[str, object]] = {}
        self.replay: dict[str, dict[str, object]] = {}
        self.decided: dict[tuple[str, str], dict] = {}
        self.replayed = 0
        self.swept = 0
        if self.replay_dir:
            path = Path(self.replay_dir) / f"{self.op}.json"
            try:
                self.replay = json.loads(path.read_text())
            except (OSError, ValueError) as exc:
                raise pytest.UsageError(f"fixture harness: cannot replay {path}: {exc}") from exc

    def shapes(self) -> list:
        with open(self.shape_file) as f:
            doc = yaml.safe_load(f) or {}
        entry = doc.get(self.op) or {}
        return list(entry.get("shapes") or [])

    def config(self, kernel: str, key: str, shape) -> dict:
        if self.replay_dir:
            bucket = self.replay.get(kernel, {})
            if key in bucket:
                self.replayed += 1
                return bucket[key]
            if _env("WARMUP_FIXTURE_REPLAY_MISS") != "sweep":
                pytest.fail(
                    f"REPLAY MISS: {self.replay_dir}/{self.op}.json has no config for "
                    f"kernel {kernel!r} key {key!r}",
                    pytrace=False,
                )
            print(f"fixture harness: replay miss for {kernel} {key}; sweeping live", flush=True)
        if (kernel, key) in self.decided:  # an autotuner sweeps a key once per process
            return self.decided[kernel, key]
        time.sleep(sweep_seconds(shape, kernel))
        self.swept += 1
        progress = _env("WARMUP_HARNESS_PROGRESS")
        if progress:
            temporary = f"{progress}.tmp{os.getpid()}"
            Path(temporary).write_text(json.dumps({"keys": self.swept, "configs": 4 * self.swept}))
            os.replace(temporary, progress)
        cfg = self.decided[kernel, key] = winner(kernel, key, self.device)
        if self.record_dir:
            self.records.setdefault(kernel, {})[key] = cfg
        return cfg

    def run(self, shape) -> None:
        """One benchmark case: both kernels get a config, by sweep or by replay."""
        key = shape_key(shape)
        failing = {k.strip() for k in _fault("WARMUP_FIXTURE_FAIL_SHAPES").split(",")}
        if key in failing:
            pytest.fail(f"injected failure for shape {key}", pytrace=False)
        hang = _fault("WARMUP_FIXTURE_HANG")
        if hang == "ignore-term":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while hang:
            time.sleep(1)
        last = shape[-1] if isinstance(shape, (list, tuple)) and shape else shape
        main = self.config(f"{self.op}_main", key, shape)
        tail = self.config(f"{self.op}_tail", str(last), shape)
        assert main["num_warps"] in (4, 8) and tail["num_stages"] in (2, 3, 4)

    def finish(self) -> None:
        if self.record_dir and self.records:
            out = Path(self.record_dir)
            out.mkdir(parents=True, exist_ok=True)
            with open(out / f"{self.op}.json", "w") as f:
                json.dump(self.records, f)
        mode = "replay" if self.replay_dir else "record" if self.record_dir else "sweep"
        print(
            f"fixture harness: op {self.op} mode {mode}: swept {self.swept}, replayed {self.replayed}",
            flush=True,
        )
        trace = _env("WARMUP_FIXTURE_TRACE")
        if trace:
            line = {
                "pid": os.getpid(),
                "argv": sys.argv,
                "cwd": os.getcwd(),
                "mode": mode,
                "op": self.op,
                "shape_file": self.shape_file,
                "shapes": self.shapes(),
                "swept": self.swept,
                "replayed": self.replayed,
                "env": {k: os.environ.get(k) for k in PROTOCOL_ENV},
            }
            with open(trace, "a") as f:
                f.write(json.dumps(line) + "\n")


def pytest_addoption(parser):
    parser.addoption("--shape_file", default="", help="YAML shape file (FlagGems format)")


def pytest_configure(config):
    if _fault("WARMUP_FIXTURE_CRASH") == "1":
        os._exit(3)
    time.sleep(float(_env("WARMUP_FIXTURE_STARTUP_SECONDS") or 0))
    shape_file = config.getoption("shape_file")
    config._fixture_session = Session(shape_file) if shape_file else None


def pytest_generate_tests(metafunc):
    if "shape" in metafunc.fixturenames:
        session = metafunc.config._fixture_session
        shapes = session.shapes() if session else []
        metafunc.parametrize("shape", shapes, ids=[shape_key(s) for s in shapes])


def pytest_sessionfinish(session):
    state = getattr(session.config, "_fixture_session", None)
    if state is not None:
        state.finish()


@pytest.fixture
def bench(request):
    state = request.config._fixture_session
    if state is None:
        pytest.skip("no --shape_file given")
    return state
