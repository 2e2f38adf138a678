"""A decided key's launch through the harness: the Python calls it makes against plain's, counted
(not timed), and what the harness leaves running once the last key is decided.

Real pytest sessions of the Triton fixture (tests/triton_fixture/hot_path.py: Triton's own
Autotuner, a LibTuner-like subclass, one shaped as FlagGems 5.3's), one per variant: plain,
replay, resumed (resuming in place) and a key tuned earlier in the record session. The timing
of the same sessions is tests/bench/bench_hot_path.py's (BENCHMARKS.md, "The hot path").
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.bench_hot_path import VARIANTS as ALL_VARIANTS
from bench.bench_hot_path import harness_env, session
from support import HANG, ROOT, clean_env

HARNESS = ROOT / "harness"
IDLE_SCRIPT = ROOT / "tests" / "compile_fixture" / "idle_after.py"
LAUNCHES = 300
VARIANTS = ALL_VARIANTS[1:]  # replay, resumed, tuned earlier: plain is their measure
TUNERS = ("triton", "libtuner", "libtuner53")
# What the harness adds to a launch of a settled key whose tuner keeps its decisions in a store that
# is not a dict (the LibTuner-like fixtures' SQLite tables): its view's two lookups, each of which
# reads the store as the tuner does without the harness.
STORED_VIEW = {"tuner_cache.py:_Stored.__contains__": LAUNCHES, "tuner_cache.py:_item": LAUNCHES}


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """Each variant's session, the Python calls of its launches counted: a record session makes the
    record; replay answers from it, resumed resumes in place from a copy of it, tuned earlier tunes
    in a record session of its own (tests/bench/bench_hot_path.py's variants); and plain."""
    work = tmp_path_factory.mktemp("hot")
    record = work / "record"
    base = clean_env(HOT_PATH_COUNT="1")
    session(work, HARNESS, 1, {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(record)}, True, base, HANG)
    runs = {variant: session(work, HARNESS, LAUNCHES, harness_env(work, variant, record), True, base, HANG)
            for variant in VARIANTS}
    runs["plain"] = session(work, HARNESS, LAUNCHES, {}, False, base, HANG)
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
