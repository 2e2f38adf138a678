"""A decided key's launch through the harness: the Python calls it makes against plain's, counted
(not timed), and what the harness leaves running once the last key is decided.

Real pytest sessions of the Triton fixture (tests/triton_fixture/hot_path.py: Triton's own
Autotuner, a LibTuner-like subclass, one shaped as FlagGems 5.3's), one per variant: plain,
replay, resumed (resuming in place) and a key tuned earlier in the record session. The timing
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
IDLE_SCRIPT = ROOT / "tests" / "compile_fixture" / "idle_after.py"
LAUNCHES = 300
VARIANTS = ("replay", "resumed", "tuned earlier")
TUNERS = ("triton", "libtuner", "libtuner53")
# What the harness adds to a launch of a settled key whose tuner keeps its decisions in a store that
# is not a dict (the LibTuner-like fixtures' SQLite tables): its view's two lookups, each of which
# reads the store as the tuner does without the harness.
STORED_VIEW = {"tuner_cache.py:_Stored.__contains__": LAUNCHES, "tuner_cache.py:_item": LAUNCHES}


def session(work: Path, launches: int, plugin: bool = True, **extra: str) -> dict[str, dict]:
    out = work / "out.jsonl"
    out.unlink(missing_ok=True)
    env = clean_env(PYTHONPATH=str(ROOT / "harness"), HOME=str(work / "home"), FLAGGEMS_PERF_CURRENT_OP="mm",
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
    re-run resuming in place, and plain."""
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


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("tuner", TUNERS)
def test_a_decided_keys_launch_makes_the_calls_plain_makes_and_of_the_harness_only_a_stores_lookups(
        sessions, variant, tuner):
    run, plain = sessions[variant][tuner], sessions["plain"][tuner]
    assert run["config"] == plain["config"]  # the same decision, so the same launch
    assert run["configs_in_dicts"] == plain["configs_in_dicts"], "the harness slowed every read of its configs"
    harness = {f: n for f, n in run["calls"].items() if f.startswith("tuner_cache.py:")}
    # Triton's store is a dict, which the view reads in C as the tuner does; a store that is not
    # is read by the view's two lookups, once each a launch, and by nothing else of the harness.
    assert harness == ({} if tuner == "triton" else STORED_VIEW)
    assert run["harness_calls"] == sum(harness.values()), run["calls"]
    others = {f: n for f, n in run["calls"].items() if f not in harness}
    differ = {f: (others.get(f, 0), plain["calls"].get(f, 0)) for f in {*others, *plain["calls"]}
              if others.get(f, 0) != plain["calls"].get(f, 0)}
    assert differ == {}, "calls (through the harness, plain) a launch makes a different number of times"


@pytest.mark.parametrize("variant", VARIANTS)
def test_nothing_of_the_harness_runs_in_the_triton_fixtures_sessions_once_the_last_key_is_decided(sessions, variant):
    for tuner in TUNERS:
        run = sessions[variant][tuner]
        assert (run["threads"], run["children"]) == ([], []), (tuner, run)


def test_the_compile_pool_and_the_harness_threads_use_no_cpu_once_the_last_key_is_decided(tmp_path):
    # A record session whose key is compiled ahead in forked workers (Triton's real compiler, for
    # an H200, on this machine: tests/compile_fixture). What it leaves is idle while the key is launched.
    out = tmp_path / "idle.json"
    env = clean_env(PYTHONPATH=str(ROOT / "harness"), HOME=str(tmp_path / "home"),
                    TRITON_CACHE_DIR=str(tmp_path / "cache"), FLAGGEMS_PERF_CURRENT_OP="scale",
                    CUDA_VISIBLE_DEVICES="0", IDLE_OUT=str(out), WARMUP_HARNESS_DEVICE_LOCK_DIR=str(tmp_path / "locks"),
                    WARMUP_HARNESS_PRECOMPILE="processes", WARMUP_HARNESS_COMPILE_WORKERS="2",
                    FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "record"))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "warmup_harness",
                           str(IDLE_SCRIPT)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=HANG)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "processes (fork) x2" in proc.stdout + proc.stderr  # the pool this is about
    idle = json.loads(out.read_text())
    assert idle["children"], "no compile worker was forked for the key: nothing here tests the pool"
    assert idle["launches"] > 0
    busy = {who: ticks for who, ticks in {**idle["threads"], **idle["children"]}.items() if ticks}
    assert busy == {}, f"used a CPU (clock ticks) while the decided key was launched: {busy}"
