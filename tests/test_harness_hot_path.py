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
# What a LibTuner-like launch does in plain and not through the harness, for a settled key: reads
# its store (the fixture's SQLite tables: the row's JSON, a Config rebuilt from it) and maps the
# rebuilt config, which has no pre-hook, back to its own (all_kwargs of each). The harness answers
# a settled key with the tuner's own config, from the view.
STORE_READ = {"kernels_store.py:ConfigStore.__contains__", "kernels_store.py:ConfigStore.__getitem__",
              "kernels_store.py:ConfigStore.get", "kernels_store53.py:Decisions.__contains__",
              "kernels_store53.py:Decisions.__getitem__", "__init__.py:loads", "decoder.py:JSONDecoder.decode",
              "decoder.py:JSONDecoder.raw_decode", "autotuner.py:Config.__init__", "autotuner.py:Config.all_kwargs",
              "autotuner.py:Config.all_kwargs.<locals>.<dictcomp>",
              "kernels_store53.py:LibTuner53.run.<locals>.<genexpr>"}


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
def test_a_decided_keys_launch_makes_no_python_call_of_the_harness_and_none_plain_does_not(sessions, variant,
                                                                                          tuner):
    run, plain = sessions[variant][tuner], sessions["plain"][tuner]
    assert run["config"] == plain["config"]  # the same decision, so the same launch
    assert run["harness_calls"] == 0, run["calls"]
    more = {f: n - plain["calls"].get(f, 0) for f, n in run["calls"].items() if n > plain["calls"].get(f, 0)}
    assert more == {}, "calls a launch makes through the harness and not in plain"
    fewer = {f for f, n in plain["calls"].items() if run["calls"].get(f, 0) != n}
    # Triton's own store is a dict, which plain reads in C too: the very same calls.
    assert fewer <= (STORE_READ if tuner != "triton" else set()), fewer


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
