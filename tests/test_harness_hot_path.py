"""A decided key's launch through the harness: the Python calls it adds over plain, counted, not
timed, and what the harness leaves running once the last key is decided.

Real pytest sessions of the Triton fixture (tests/triton_fixture/hot_path.py: Triton's own
Autotuner, a LibTuner-like subclass, one shaped as FlagGems 5.3's), one per variant: plain,
replay, resumed (the record as a cache) and a key tuned earlier in the record session. The timing
of the same sessions is tests/bench/bench_hot_path.py's (BENCHMARKS.md, "The hot path").
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import HANG, ROOT, clean_env

SCRIPT = ROOT / "tests" / "triton_fixture" / "hot_path.py"
LAUNCHES = 300
HARNESS_CALLS_A_LAUNCH = 1  # the view's __contains__; the getter and dict's lookup are C


def session(work: Path, launches: int, plugin: bool = True, **extra: str) -> dict[str, dict]:
    out = work / "out.jsonl"
    out.unlink(missing_ok=True)
    env = {k: v for k, v in clean_env().items() if not k.startswith("WARMUP_HARNESS_")}
    env.update(PYTHONPATH=str(ROOT / "harness"), HOME=str(work / "home"), FLAGGEMS_PERF_CURRENT_OP="mm",
               FLAGGEMS_DB_URL="sqlite:///:memory:", HOT_PATH_OUT=str(out), HOT_PATH_LAUNCHES=str(launches),
               HOT_PATH_COUNT="1", **extra)
    load = ["-p", "warmup_harness"] if plugin else ["-p", "no:warmup_harness"]
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *load, str(SCRIPT)],
                          env=env, cwd=work, capture_output=True, text=True, timeout=HANG)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {line["tuner"]: line for line in map(json.loads, out.read_text().splitlines())}


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """Each variant's session: the record (its keys tuned at their first launch), its replay, its
    re-run as a cache, and plain."""
    work = tmp_path_factory.mktemp("hot")
    record = work / "record"
    runs = {"tuned earlier": session(work, LAUNCHES, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(record))}
    cache = work / "cache"
    shutil.copytree(record, cache)
    runs["replay"] = session(work, LAUNCHES, FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(record))
    runs["resumed"] = session(work, LAUNCHES, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(cache),
                              WARMUP_HARNESS_RESUME_DIR=str(cache))
    runs["plain"] = session(work, LAUNCHES, plugin=False)
    return runs


VARIANTS = ("replay", "resumed", "tuned earlier")
TUNERS = ("triton", "libtuner", "libtuner53")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("tuner", TUNERS)
def test_a_decided_keys_launch_makes_one_harness_call_and_no_more_python_calls_than_plain_plus_that(
        sessions, variant, tuner):
    run, plain = sessions[variant][tuner], sessions["plain"][tuner]
    assert run["config"] == plain["config"]  # the same decision, so the same launch
    assert run["harness_calls"] == HARNESS_CALLS_A_LAUNCH * LAUNCHES
    # A store the tuner reads at each launch in plain (LibTuner's) is not read for a settled key.
    assert run["calls"] <= plain["calls"] + HARNESS_CALLS_A_LAUNCH * LAUNCHES


@pytest.mark.parametrize("variant", VARIANTS)
def test_nothing_of_the_harness_runs_once_the_last_key_is_decided(sessions, variant):
    for tuner in TUNERS:
        run = sessions[variant][tuner]
        assert (run["threads"], run["children"]) == ([], []), (tuner, run)
