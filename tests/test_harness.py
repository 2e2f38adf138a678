"""warmup_harness end to end: real pytest, real Triton autotuners, the project's real tools.

The benchmark is tests/triton_fixture: Triton's own Autotuner, a subclass that replaces `run` the
way FlagGems' LibTuner does (own key strategy, own SQLite store, configs with pre-hooks; 5.0's
shape, or 5.3's with FIXTURE_LIBTUNER=5.3), and a heuristics-only kernel; only the device's launch
and timer are stubbed (its conftest says why). The
harness is loaded from the source tree with `-p warmup_harness`; tests/test_harness_install.py
covers loading it from an installed package. Each pytest session appends a trace line: the
launches with their configs, how many configs each kernel timed, the protocol's environment.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
import triton
import yaml

from support import BIN_DIR, HANG, ROOT, clean_env

SCRIPT = ROOT / "scripts" / "warmup"
BENCH = ROOT / "tests" / "triton_fixture" / "bench_ops.py"
SOURCE = ROOT / "harness"

SHAPES = [[64, 64, 64], [100, 60, 64], [256, 512, 128], [1024, 1024, 256]]
PLAIN_MM = "kernels_plain:mm_kernel_general"
STORE_MM = "kernels_store:mm_kernel_general"
ADD = "kernels_plain:add_kernel"
# Racing is a record session's default; a test that counts the tuner's timings as plain makes them
# (every config once, in full) turns it off.
FULL_TIMING = {"WARMUP_HARNESS_RACE": "0"}
TRITON = triton.__version__  # the Triton these tests run on (make test-triton runs several)


class Run:
    def __init__(self, proc: subprocess.CompletedProcess, trace: Path):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.sessions = [json.loads(ln) for ln in trace.read_text().splitlines()] if trace.exists() else []
        trace.unlink(missing_ok=True)

    @property
    def session(self) -> dict:
        assert len(self.sessions) == 1, f"expected one pytest session, got {len(self.sessions)}\n{self.output}"
        return self.sessions[0]

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def harness_lines(self) -> list[str]:
        return [ln for ln in self.stderr.splitlines() if ln.startswith("[warmup-harness]")]


def shape_file(work: Path, shapes, name="shapes.yaml") -> Path:
    path = work / name
    path.write_text(yaml.safe_dump({"mm": {"shapes": shapes, "shape_desc": "M, N, K"}}))
    return path


def bench_env(work: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in clean_env().items() if not k.startswith("WARMUP_HARNESS_")}
    env.update(PYTHONPATH=str(SOURCE), HOME=str(work / "home"), FIXTURE_TRACE=str(work / "trace.jsonl"),
               FLAGGEMS_PERF_CURRENT_OP="mm")
    env.update(extra)
    return env


def bench_command(shapes: Path, *opts: str, plugin: bool = True, script: Path = BENCH) -> list[str]:
    load = ["-p", "warmup_harness"] if plugin else []
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *load, str(script),
            "--shape_file", str(shapes), *opts]


def bench(work: Path, shapes: Path, *opts: str, plugin: bool = True, script: Path = BENCH, **env: str) -> Run:
    proc = subprocess.run(bench_command(shapes, *opts, plugin=plugin, script=script), env=bench_env(work, **env),
                          cwd=work, capture_output=True, text=True, timeout=HANG)
    return Run(proc, work / "trace.jsonl")


def launched(session: dict) -> dict[tuple, dict]:
    """(kernel, integer arguments) -> the config it was launched with."""
    return {(ln["kernel"], tuple(ln["args"])): ln["config"] for ln in session["launches"]}


def config_launched_as(record: dict) -> dict:
    """What a recorded config looks like at the launch: kwargs and the attributes that are set."""
    return {**record["kwargs"], **{k: v for k, v in record.items() if k != "kwargs" and v is not None}}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """One record-mode session over SHAPES, every config timed in full as without the harness (the
    winners racing must match): its folder (copy before changing it) and its run."""
    work = tmp_path_factory.mktemp("recorded")
    run = bench(work, shape_file(work, SHAPES), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(work / "rec"), **FULL_TIMING)
    assert run.returncode == 0, run.output
    return work / "rec", run


def copy_records(recorded_dir: Path, to: Path) -> Path:
    to.mkdir()
    for name in ("mm.json", "mm.meta.json"):
        (to / name).write_bytes((recorded_dir / name).read_bytes())
    return to


def test_record_writes_each_kernels_decisions_under_its_module_and_the_tuners_own_keys(recorded):
    folder, run = recorded
    records = json.loads((folder / "mm.json").read_text())
    f16 = ["float16"] * 3
    assert set(records) == {PLAIN_MM, STORE_MM, ADD}, "the heuristics-only kernel has nothing to record"
    assert set(records[PLAIN_MM]) == {json.dumps([*s, *f16]) for s in SHAPES}
    # The LibTuner-like tuner rounds its key to powers of two: its own key, not the shape, is recorded.
    assert set(records[STORE_MM]) == {json.dumps([*s, *f16]) for s in
                                      ([64, 64, 64], [128, 64, 64], [256, 512, 128], [1024, 1024, 256])}
    assert set(records[ADD]) == {json.dumps([s[0] * s[1], *f16]) for s in SHAPES}
    for keys in records.values():
        for config in keys.values():
            assert set(config) >= {"kwargs", "num_warps", "num_stages", "num_ctas", "maxnreg"}, config
    # Each recorded config is the one the kernel was launched with for that shape.
    launches = launched(run.session)
    for m, n, k in SHAPES:
        assert launches[PLAIN_MM, (m, n, k)] == config_launched_as(records[PLAIN_MM][json.dumps([m, n, k, *f16])])
    assert "FLAGGEMS_DB_URL" not in run.session["env"], "not a sweep child: FlagGems' own store"
    assert any("record mode, op mm" in ln for ln in run.harness_lines()), run.stderr
    assert any("recorded 12 key(s) of 3 kernel(s)" in ln for ln in run.harness_lines()), run.stderr


def test_record_sidecar_holds_versions_and_each_keys_tuning_seconds(recorded):
    folder, _ = recorded
    records = json.loads((folder / "mm.json").read_text())
    meta = json.loads((folder / "mm.meta.json").read_text())
    assert isinstance(meta["startup_seconds"], float) and meta["startup_seconds"] > 0
    assert meta["compile_seconds"] is None  # the fake device: nothing is compiled ahead
    assert meta["format"] == "warmup-harness-meta" and meta["version"] == 2 and meta["op"] == "mm"
    assert meta["triton"] == TRITON and meta["torch"] is None and meta["flag_gems"] is None
    assert meta["python"] == sys.version.split()[0]
    assert meta["device"] == "fake 0"  # no torch here: Triton's target names the device
    assert {k: set(v) for k, v in meta["tune_seconds"].items()} == {k: set(v) for k, v in records.items()}
    assert all(isinstance(s, float) and s >= 0 for v in meta["tune_seconds"].values() for s in v.values())


def test_a_record_session_keeps_its_keys_tuned_and_configs_timed_in_its_progress_file(tmp_path):
    """WARMUP_HARNESS_PROGRESS (warmup-spawn's SCRATCH/w<i>/progress.json), read for its progress lines."""
    progress = tmp_path / "w0" / "progress.json"
    progress.parent.mkdir()
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"),
                WARMUP_HARNESS_PROGRESS=str(progress), **FULL_TIMING)
    assert run.returncode == 0, run.output
    timed = sum(run.session["timed"].values())
    assert timed > 12 and json.loads(progress.read_text()) == {"keys": 12, "configs": timed}
    assert [p.name for p in progress.parent.iterdir()] == ["progress.json"], "no temporary is left"


def test_record_sidecar_counts_the_start_up_from_the_interpreters_start_to_the_first_test(tmp_path):
    run = bench(tmp_path, shape_file(tmp_path, SHAPES[:1]), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"),
                FIXTURE_IMPORT_SECONDS="1.5")  # collection pays 1.5 s more
    assert run.returncode == 0, run.output
    assert json.loads((tmp_path / "rec" / "mm.meta.json").read_text())["startup_seconds"] >= 1.5


def test_the_session_is_unregistered_once_its_config_is_unconfigured(tmp_path):
    """The session is the config's plugin for that run only: a plugin unconfigured after it (trylast)
    no longer finds it."""
    said = tmp_path / "registered"
    (tmp_path / "after_session.py").write_text(
        "import pytest\n"
        "@pytest.hookimpl(trylast=True)\n"
        "def pytest_unconfigure(config):\n"
        "    from warmup_harness.session import PLUGIN_NAME\n"
        f"    open({str(said)!r}, 'w').write(str(config.pluginmanager.get_plugin(PLUGIN_NAME) is not None))\n")
    run = bench(tmp_path, shape_file(tmp_path, SHAPES[:1]), "-p", "after_session",
                FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"), PYTHONPATH=f"{SOURCE}:{tmp_path}")
    assert run.returncode == 0, run.output
    assert said.read_text() == "False"


@pytest.mark.parametrize("mode", ["record", "replay"])
def test_a_session_has_tritons_own_key_computed_before_its_first_kernel(tmp_path, recorded, mode):
    """Computed in a thread from the session's start: at pytest's session start, before any test
    ran a kernel, the memo Triton's compile reads fills without this process's main thread asking."""
    said = tmp_path / "key"
    (tmp_path / "key_probe.py").write_text(
        "import time\n"
        "from warmup_harness.triton_private import own_key\n"
        "def pytest_sessionstart(session):\n"
        f"    deadline = time.monotonic() + {HANG}\n"
        "    while own_key().cache_info().currsize == 0 and time.monotonic() < deadline:\n"
        "        time.sleep(0.01)\n"
        f"    open({str(said)!r}, 'w').write(str(own_key().cache_info().currsize))\n")
    folder = copy_records(recorded[0], tmp_path / "rec")
    variable = "FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR" if mode == "record" else "FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR"
    run = bench(tmp_path, shape_file(tmp_path, SHAPES[:1]), "-p", "key_probe", PYTHONPATH=f"{SOURCE}:{tmp_path}",
                **{variable: str(folder)})
    assert run.returncode == 0, run.output
    assert said.read_text() == "1"


def key_probe(work: Path, said: Path) -> str:
    """A plugin (`-p key_probe`) that writes, before any other plugin's pytest_configure, whether
    Triton's own key is being hashed or is hashed already; it imports nothing of the harness's."""
    (work / "key_probe.py").write_text(
        "import sys, threading, pytest\n"
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_configure(config):\n"
        "    begun = any(t.name == 'warmup-harness-triton-key' for t in threading.enumerate())\n"
        "    tp = sys.modules.get('warmup_harness.triton_key')\n"
        "    begun = begun or (tp is not None and tp.own_key().cache_info().currsize > 0)\n"
        f"    open({str(said)!r}, 'w').write(str(begun))\n")
    return f"{SOURCE}:{work}"


@pytest.mark.parametrize("mode", ["record", "replay", "plain"])
def test_tritons_own_key_is_hashed_while_the_conftests_import(tmp_path, recorded, mode):
    """Started before the first conftest (FlagGems' import, seconds, in FlagGems' benchmark) where a
    protocol variable is set; a run without one starts nothing."""
    said = tmp_path / "key"
    variables = {"record": {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(tmp_path / "rec")},
                 "replay": {"FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR": str(copy_records(recorded[0], tmp_path / "rec"))},
                 "plain": {}}[mode]
    run = bench(tmp_path, shape_file(tmp_path, SHAPES[:1]), "-p", "key_probe",
                PYTHONPATH=key_probe(tmp_path, said), **variables)
    assert run.returncode == 0, run.output
    assert said.read_text() == str(mode != "plain")


def test_record_keeps_every_key_decided_before_a_crash(tmp_path):
    shapes = shape_file(tmp_path, SHAPES)
    run = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"),
                FIXTURE_CRASH_AT="256x512x128")
    assert run.returncode == 3, run.output
    records = json.loads((tmp_path / "rec" / "mm.json").read_text())  # small: folded after each key
    assert set(records[PLAIN_MM]) == {json.dumps([*s, *["float16"] * 3]) for s in SHAPES[:2]}
    assert not list((tmp_path / "rec").glob(".*.tmp*")) and not (tmp_path / "rec" / ".mm.journal").exists()


def test_a_journal_a_dead_process_left_is_folded_into_the_record_at_the_next_start(tmp_path):
    folder = tmp_path / "rec"
    folder.mkdir()
    (folder / "mm.json").write_text(json.dumps({"m:k": {"[1]": {"kwargs": {"B": 1}}}}))
    lines = [{"kernel": "m:k", "key": "[1]", "config": {"kwargs": {"B": 2}}, "seconds": 1.5},  # decided again
             {"kernel": "m:j", "key": "[7]", "config": {"kwargs": {"B": 7}}, "seconds": None}]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (folder / ".mm.journal").write_text(text + '{"kernel": "m:k", "key": "[9]", "con')  # cut short by the kill
    run = bench(tmp_path, shape_file(tmp_path, SHAPES[:1]), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(folder))
    assert run.returncode == 0, run.output
    records = json.loads((folder / "mm.json").read_text())
    assert records["m:k"] == {"[1]": {"kwargs": {"B": 2}}} and records["m:j"] == {"[7]": {"kwargs": {"B": 7}}}
    assert len(records) == 5  # and the session's own three kernels
    assert json.loads((folder / "mm.meta.json").read_text())["tune_seconds"]["m:k"] == {"[1]": 1.5}
    assert sorted(p.name for p in folder.iterdir()) == [".mm.lock", ".mm.sessions", "mm.json", "mm.meta.json"]


def test_replay_pins_the_keys_a_killed_record_session_left_in_its_journal(recorded, tmp_path):
    folder = copy_records(recorded[0], tmp_path / "rec")
    records = json.loads((folder / "mm.json").read_text())
    key = json.dumps([*SHAPES[0], *["float16"] * 3])
    config = records[PLAIN_MM].pop(key)  # decided, journaled, never folded
    (folder / "mm.json").write_text(json.dumps(records))
    (folder / ".mm.journal").write_text(json.dumps({"kernel": PLAIN_MM, "key": key, "config": config,
                                                    "seconds": 1.0}) + "\n")
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder))
    assert run.returncode == 0, run.output
    assert "replayed 12, swept 0 live" in run.stderr and run.session["timed"] == {}
    assert f"1 key(s) replayed from {folder / '.mm.journal'}" in run.stderr
    assert (folder / ".mm.journal").exists(), "a replay writes nothing"


def test_replay_reads_a_journal_line_for_a_changed_kernel_as_the_next_fold_would(recorded, tmp_path):
    """The record's keys of a kernel were tuned for it as it was (the sidecar's fingerprint); a killed
    session journaled one key for it as it is now. The fold would drop the older keys and keep the
    journaled one (journal.apply), so the replay pins that one and sweeps the others live."""
    folder = copy_records(recorded[0], tmp_path / "rec")
    records = json.loads((folder / "mm.json").read_text())
    meta = json.loads((folder / "mm.meta.json").read_text())
    key = json.dumps([*SHAPES[0], *["float16"] * 3])
    config = records[PLAIN_MM].pop(key)
    (folder / "mm.json").write_text(json.dumps(records))
    line = {"kernel": PLAIN_MM, "key": key, "config": config, "seconds": 1.0,
            "fingerprint": meta["kernels"][PLAIN_MM], "device": meta["device"], "triton": meta["triton"]}
    (folder / ".mm.journal").write_text(json.dumps(line) + "\n")
    meta["kernels"][PLAIN_MM] = "0" * len(meta["kernels"][PLAIN_MM])  # the kernel as it was
    (folder / "mm.meta.json").write_text(json.dumps(meta))
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder))
    assert run.returncode == 0, run.output
    assert "replayed 9, swept 3 live" in run.stderr, run.stderr
    assert set(run.session["timed"]) == {PLAIN_MM}, "only the changed kernel's older keys are tuned"
    assert launched(run.session)[PLAIN_MM, tuple(SHAPES[0])] == config_launched_as(config)


def test_a_sigterm_folds_the_keys_decided_into_the_record_and_still_ends_the_process(tmp_path):
    folder = tmp_path / "rec"
    folder.mkdir()
    # A record over 1 MiB: the keys wait in the journal, and only the SIGTERM's fold puts them in it.
    big = {"m:big": {f"[{i}]": {"kwargs": {"BLOCK": i}, "num_warps": 4} for i in range(30000)}}
    (folder / "mm.json").write_text(json.dumps(big))
    assert (folder / "mm.json").stat().st_size > 1 << 20
    proc = subprocess.Popen(bench_command(shape_file(tmp_path, SHAPES)), cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=bench_env(tmp_path, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(folder),
                                          FIXTURE_HANG_AT="256x512x128"))
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "hung").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "hung").exists(), proc.communicate()[0]
        proc.terminate()
        output = proc.communicate(timeout=HANG)[0]
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGTERM, output  # as it would have without the harness
    records = json.loads((folder / "mm.json").read_text())
    assert set(records[PLAIN_MM]) == {json.dumps([*s, *["float16"] * 3]) for s in SHAPES[:2]}
    assert records["m:big"] == big["m:big"]
    assert not (folder / ".mm.journal").exists()


def test_a_record_session_removes_the_temporaries_of_dead_writers_and_keeps_live_ones(tmp_path):
    folder = tmp_path / "rec"
    folder.mkdir()
    dead = [folder / ".mm.json.tmp1234.00ff00ff", folder / ".mm.meta.json.tmpAbCdEf",
            folder / ".mm.json.999999999.0a0b0c0d.tmp"]  # the last: this harness's earlier naming
    live, other = folder / ".mm.json.tmpLIVE01", folder / ".bmm.json.tmpDEAD02"
    for path in [*dead, live, other]:
        path.write_text("{")
    with open(live) as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        run = bench(tmp_path, shape_file(tmp_path, SHAPES[:1]), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(folder))
        assert run.returncode == 0, run.output
    assert not any(path.exists() for path in dead)
    assert live.exists() and other.exists()


@pytest.mark.parametrize("damage", [{"tune_seconds": 5}, {"tune_seconds": {PLAIN_MM: None}},
                                    {"tune_seconds": {PLAIN_MM: {"[1]": "slow"}}}])
def test_a_damaged_sidecar_is_replaced_and_never_stops_the_record(tmp_path, damage):
    (tmp_path / "rec").mkdir()
    meta = tmp_path / "rec" / "mm.meta.json"
    meta.write_text(json.dumps({"format": "warmup-harness-meta", "version": 1, "op": "mm", **damage}))
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"))
    assert run.returncode == 0, run.output
    records = json.loads((tmp_path / "rec" / "mm.json").read_text())
    assert sum(map(len, records.values())) == 12
    seconds = json.loads(meta.read_text())["tune_seconds"]
    assert {k: set(v) for k, v in seconds.items()} == {k: set(v) for k, v in records.items()}
    warnings = [ln for ln in run.harness_lines() if "WARNING" in ln]
    assert len(warnings) == 1 and f"{meta}: \"tune_seconds\"" in warnings[0], run.stderr
    assert "replaced by this run's sidecar" in warnings[0]


def test_warmup_records_in_children_merges_and_the_measurement_replays_without_sweeping(tmp_path):
    shapes = shape_file(tmp_path, SHAPES)
    env = bench_env(tmp_path, WARMUP_BIN_DIR=str(BIN_DIR), FLAGGEMS_VENDOR="nvidia", TMPDIR=str(tmp_path),
                    FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "records"))
    proc = subprocess.run([str(SCRIPT), "--gpus", "2", "--devices", "0,1", "--", *bench_command(shapes)],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=HANG)
    run = Run(proc, tmp_path / "trace.jsonl")
    assert run.returncode == 0, run.output
    children = [s for s in run.sessions if s["worker"] == "1"]
    measurement = [s for s in run.sessions if s["worker"] is None]
    assert len(children) == 2 and len(measurement) == 1, run.output
    assert all(sum(c["timed"].values()) > 0 for c in children)
    assert measurement[0]["timed"] == {}, "the measurement swept"
    assert measurement[0]["env"]["FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR"] == str(tmp_path / "records")
    assert "op mm: replayed 12, swept 0 live" in run.stderr
    # The measurement launches exactly what the children picked: the merged record's configs.
    picked = {**launched(children[0]), **launched(children[1])}
    assert launched(measurement[0]) == picked
    merged = json.loads((tmp_path / "records" / "mm.json").read_text())
    assert set(merged) == {PLAIN_MM, STORE_MM, ADD} and sum(map(len, merged.values())) == 12
    # The children's sidecars published as one: every key's tuning time, and what they agree on.
    meta = json.loads((tmp_path / "records" / "mm.meta.json").read_text())
    assert {k: set(v) for k, v in meta["tune_seconds"].items()} == {k: set(v) for k, v in merged.items()}
    assert meta["triton"] == TRITON and meta["python"] == sys.version.split()[0]
    assert meta["device"] == "fake 0" and "WARNING" not in run.stderr  # the replay checked it: same
    # ... and not what a sweep in the measurement's process would pick (the fixture's timer differs
    # between warmup children and other processes), so those configs came from the record.
    serial = bench(tmp_path, shapes, plugin=False)
    assert serial.returncode == 0 and launched(serial.session) != picked


def test_replay_sweeps_a_key_missing_from_the_record_live_and_reports_it(recorded, tmp_path):
    folder = copy_records(recorded[0], tmp_path / "rec")
    run = bench(tmp_path, shape_file(tmp_path, [*SHAPES, [96, 32, 16]]),
                FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder))
    assert run.returncode == 0, run.output
    assert run.session["timed"].keys() == {PLAIN_MM, STORE_MM, ADD}
    assert run.session["timed"][PLAIN_MM] == 24  # one key's 24 configs, the recorded ones pinned
    summary = [ln for ln in run.harness_lines() if "replayed" in ln]
    assert len(summary) == 1, run.stderr
    assert "op mm: replayed 12, swept 3 live: " in summary[0]
    assert f'{PLAIN_MM} [96, 32, 16, "float16", "float16", "float16"] (not in the record)' in summary[0]


@pytest.mark.parametrize("how", ["option", "env", "ini", "env over ini"])
def test_replay_miss_fails_the_test_instead_when_asked(recorded, tmp_path, how):
    folder = copy_records(recorded[0], tmp_path / "rec")
    opts = {"option": ["--warmup-replay-miss=fail"], "ini": ["-o", "warmup_harness_replay_miss=fail"],
            "env over ini": ["-o", "warmup_harness_replay_miss=sweep"]}.get(how, [])
    env = {"WARMUP_HARNESS_REPLAY_MISS": "fail"} if how.startswith("env") else {}
    run = bench(tmp_path, shape_file(tmp_path, [SHAPES[0], [96, 32, 16]]), *opts,
                FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder), **env)
    assert run.returncode == 1, run.output
    assert "1 failed, 1 passed" in run.stdout
    assert f"replay miss: kernel {PLAIN_MM} key [96, 32, 16" in run.stdout
    assert run.session["timed"] == {}


def test_replay_sweeps_a_key_whose_recorded_config_is_no_longer_the_kernels(recorded, tmp_path):
    folder = copy_records(recorded[0], tmp_path / "rec")
    records = json.loads((folder / "mm.json").read_text())
    key = json.dumps([*SHAPES[0], *["float16"] * 3])
    records[PLAIN_MM][key]["kwargs"]["BLOCK_M"] = 48  # a config the kernel does not have
    (folder / "mm.json").write_text(json.dumps(records))
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder))
    assert run.returncode == 0, run.output
    assert run.session["timed"] == {PLAIN_MM: 24}
    assert "replayed 11, swept 1 live" in run.stderr
    assert "(its recorded config is not among the kernel's configs)" in run.stderr
    assert launched(run.session)[PLAIN_MM, tuple(SHAPES[0])]["BLOCK_M"] != 48


def test_replay_sweeps_live_the_keys_made_on_another_triton_or_device(recorded, tmp_path):
    folder = copy_records(recorded[0], tmp_path / "rec")
    meta = json.loads((folder / "mm.meta.json").read_text())
    (folder / "mm.meta.json").write_text(json.dumps({**meta, "triton": "3.1.0", "device": "NVIDIA H100"}))
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder))
    assert run.returncode == 0, run.output
    assert "replayed 0, swept 12 live" in run.stderr
    assert (f"12 key(s) of {folder / 'mm.json'} were made on NVIDIA H100 with Triton 3.1.0, this process runs "
            f"on fake 0 with Triton {TRITON}: they are swept live, not replayed") in run.stderr, run.stderr
    assert "(made on NVIDIA H100 with Triton 3.1.0)" in run.stderr
    assert set(run.session["timed"]) == {PLAIN_MM, STORE_MM, ADD}

    same = copy_records(recorded[0], tmp_path / "same")
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(same))
    assert run.returncode == 0 and "WARNING" not in run.stderr and "replayed 12, swept 0" in run.stderr, run.output


def made_elsewhere(recorded_dir: Path, to: Path) -> Path:
    """A copy of the recorded folder whose sidecar says it was made on an A100 with Triton 3.1.0."""
    folder = copy_records(recorded_dir, to)
    meta = json.loads((folder / "mm.meta.json").read_text())
    (folder / "mm.meta.json").write_text(json.dumps({**meta, "triton": "3.1.0", "device": "NVIDIA A100"}))
    return folder


def test_a_record_session_never_relabels_the_keys_made_elsewhere_as_its_own(recorded, tmp_path):
    """Resuming in place (a --gpus 1 record run) over a record made on an A100 with Triton
    3.1.0: the keys it meets are tuned, and the fold that names this device and Triton in the
    sidecar keeps the A100's keys under their own provenance, so the next replay sweeps them."""
    folder = made_elsewhere(recorded[0], tmp_path / "rec")
    shapes = shape_file(tmp_path, SHAPES[:2])
    run = in_place_session(tmp_path, shapes, folder)
    assert run.returncode == 0, run.output
    assert set(run.session["timed"]) == {PLAIN_MM, STORE_MM, ADD}, "a key was pinned from the A100's record"
    assert f"was recorded with Triton 3.1.0, this is Triton {TRITON}: every key is tuned" in run.stderr
    meta = json.loads((folder / "mm.meta.json").read_text())
    assert (meta["device"], meta["triton"], meta["version"]) == ("fake 0", TRITON, 2)
    [group] = meta["foreign"]
    assert (group["device"], group["triton"]) == ("NVIDIA A100", "3.1.0")
    assert sum(map(len, group["keys"].values())) == 6 and sum(map(len, json.loads(
        (folder / "mm.json").read_text()).values())) == 12, "the A100's keys stay, as the A100's"
    assert f"{folder / 'mm.json'}: 6 key(s) there were made on NVIDIA A100 with Triton 3.1.0" in run.stderr

    replay = bench(tmp_path, shape_file(tmp_path, SHAPES, "all.yaml"), FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder))
    assert replay.returncode == 0, replay.output
    assert "replayed 6, swept 6 live" in replay.stderr, replay.stderr
    assert "6 key(s) of" in replay.stderr and "were made on NVIDIA A100 with Triton 3.1.0" in replay.stderr

    again = in_place_session(tmp_path, shapes, folder)  # this run's own keys answer now
    assert again.returncode == 0 and again.session["timed"] == {}, again.output


def test_publish_never_relabels_the_keys_kept_from_a_record_made_elsewhere(recorded, tmp_path):
    """warmup-publish of this run's shards into a folder whose record was made on an A100 with
    Triton 3.1.0: the keys kept from it are named as the A100's in the published sidecar, and the
    replay sweeps them live."""
    folder = made_elsewhere(recorded[0], tmp_path / "rec")
    shapes = shape_file(tmp_path, SHAPES)
    scratch = tmp_path / "scratch"
    shard = subprocess.run([str(BIN_DIR / "warmup-shard"), "--op", "mm", "--shards", "2", "--out", str(scratch),
                            str(shapes)], capture_output=True, text=True, env=clean_env(), timeout=HANG)
    assert shard.returncode == 0, shard.stderr
    for i in (0, 1):  # each shard's child, on this device and Triton
        child = bench(tmp_path, scratch / f"w{i}" / "shapes.yaml",
                      FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(scratch / f"w{i}" / "rec"))
        assert child.returncode == 0, child.output
    some = json.loads((scratch / "w1" / "rec" / "mm.json").read_text())
    (scratch / "w1" / "rec" / "mm.json").unlink()  # one shard left nothing: the record keeps those keys
    (scratch / "w1" / "rec" / "mm.meta.json").unlink()
    for tool, *args in (("merge", "--in-scratch", scratch), ("publish", "--record-dir", folder, scratch)):
        done = subprocess.run([str(BIN_DIR / f"warmup-{tool}"), "--op", "mm", *map(str, args)],
                              capture_output=True, text=True, env=clean_env(), timeout=HANG)
        assert done.returncode == 0, done.stderr
    kept = sum(map(len, some.values()))
    assert (f"{kept} key(s) kept from the record there were made on NVIDIA A100 with Triton 3.1.0, not on "
            f"fake 0 with Triton {TRITON}") in done.stderr, done.stderr
    meta = json.loads((folder / "mm.meta.json").read_text())
    assert (meta["device"], meta["triton"], meta["version"]) == ("fake 0", TRITON, 2)
    assert [(g["device"], g["triton"], sum(map(len, g["keys"].values()))) for g in meta["foreign"]] == \
        [("NVIDIA A100", "3.1.0", kept)]

    replay = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder))
    assert replay.returncode == 0, replay.output
    assert f"replayed {12 - kept}, swept {kept} live" in replay.stderr, replay.stderr
    assert f"{kept} key(s) of {folder / 'mm.json'} were made on NVIDIA A100 with Triton 3.1.0" in replay.stderr


@pytest.mark.parametrize("text, says", [
    ('{"kernels_plain:mm_kernel_general": {"[64]": ', "mm.json:1:"),
    ("[]", "holds a list"),
    ('{"kernels_plain:mm_kernel_general": [64, 64]}', "maps to [64, 64]"),
    # The tests' other fixture harness writes configs without "kwargs": foreign here.
    ('{"mm_main": {"64x64": {"BLOCK_M": 64, "num_warps": 4}}}', "is not a harness config"),
])
def test_replay_of_a_corrupt_or_foreign_record_is_refused_before_any_test_runs(tmp_path, text, says):
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "mm.json").write_text(text)
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(tmp_path / "rec"))
    assert run.returncode == 4, run.output  # pytest's usage error
    assert f"warmup-harness: {tmp_path / 'rec' / 'mm.json'}" in run.stderr
    assert says in run.stderr
    assert run.sessions == [], "a test ran"


@pytest.mark.parametrize("fresh", [{}, {"WARMUP_HARNESS_FRESH": "1"}])
@pytest.mark.parametrize("text", ['{"mm_main": {"64x64": {"BLOCK_M": 64, "num_warps": 4}}}', '{"k": '])
def test_resuming_in_place_sets_aside_a_record_it_cannot_read_and_records_anew(tmp_path, text, fresh):
    """Issue 42: the fixture harness's own mm.json (or a torn one) in the folder a record session
    resumes from is set aside, renamed beside it, with one line; the run records the op anew."""
    folder = tmp_path / "rec"
    folder.mkdir()
    (folder / "mm.json").write_text(text)
    run = in_place_session(tmp_path, shape_file(tmp_path, SHAPES), folder, **fresh)
    assert run.returncode == 0, run.output
    [aside] = folder.glob("mm.json.unreadable-*")
    assert aside.read_text() == text, "set aside whole, never deleted"
    [line] = [ln for ln in run.stderr.splitlines() if "set aside" in ln]
    assert line.startswith(f"[warmup-harness] WARNING {folder / 'mm.json'}") and f"set aside as {aside.name}" in line
    assert "recorded 12 key(s)" in run.stderr and len(json.loads((folder / "mm.json").read_text())) == 3
    # A record folder this session does not resume from is the user's to mend: still refused.
    (tmp_path / "named").mkdir()
    (tmp_path / "named" / "mm.json").write_text(text)
    named = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "named"))
    assert named.returncode == 4 and list((tmp_path / "named").glob("*unreadable*")) == [], named.output


UNDECODABLE = {  # valid JSON that Python's json refuses to decode
    "a 5000-digit integer": '{"k": {"[1]": {"kwargs": {"B": ' + "7" * 5000 + "}}}}",
    "nesting 100000 deep": '{"k": {"[1]": {"kwargs": {"B": ' + "[" * 100000 + "]" * 100000 + "}}}}",
}


@pytest.mark.parametrize("mode", ["RECORD", "REPLAY"])
@pytest.mark.parametrize("what", list(UNDECODABLE))
def test_a_record_pythons_json_cannot_decode_is_a_usage_error_naming_it(tmp_path, mode, what):
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "mm.json").write_text(UNDECODABLE[what])
    run = bench(tmp_path, shape_file(tmp_path, SHAPES),
                **{f"FLAGGEMS_PERF_AUTOTUNE_{mode}_DIR": str(tmp_path / "rec")})
    assert run.returncode == 4, run.output
    assert f"warmup-harness: {tmp_path / 'rec' / 'mm.json'}: the record cannot be decoded" in run.stderr
    assert run.sessions == [] and (tmp_path / "rec" / "mm.json").read_text() == UNDECODABLE[what]


@pytest.mark.parametrize("what", list(UNDECODABLE))
def test_a_replayed_sidecar_pythons_json_cannot_decode_is_a_warning(recorded, tmp_path, what):
    folder = copy_records(recorded[0], tmp_path / "rec")
    (folder / "mm.meta.json").write_text(UNDECODABLE[what])
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder))
    assert run.returncode == 0, run.output
    assert f"WARNING {folder / 'mm.meta.json'}: the sidecar cannot be decoded" in run.stderr
    assert "replayed 12, swept 0 live" in run.stderr


def test_a_recorded_sidecar_pythons_json_cannot_decode_is_replaced_with_a_warning(tmp_path):
    (tmp_path / "rec").mkdir()
    meta = tmp_path / "rec" / "mm.meta.json"
    meta.write_text(UNDECODABLE["a 5000-digit integer"])
    run = bench(tmp_path, shape_file(tmp_path, SHAPES[:1]), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"))
    assert run.returncode == 0, run.output
    assert f"WARNING {meta}: the sidecar cannot be decoded" in run.stderr
    assert json.loads(meta.read_text())["format"] == "warmup-harness-meta"


def test_replay_without_a_record_for_the_op_names_the_ops_recorded_there(tmp_path):
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "bmm.json").write_text("{}")
    (tmp_path / "rec" / "bmm.meta.json").write_text("{}")  # a record's sidecar and its kept
    (tmp_path / "rec" / "mm.costs.json").write_text("{}")  # costs (warmup-costs --record-dir): no ops
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(tmp_path / "rec"))
    assert run.returncode == 4, run.output
    assert "no record for op 'mm'" in run.stderr and "ops recorded there: bmm)" in run.stderr


def test_record_refuses_to_add_to_a_file_that_is_not_a_record(tmp_path):
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "mm.json").write_text("not json")
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"))
    assert run.returncode == 4 and "is not valid JSON" in run.stderr, run.output
    assert (tmp_path / "rec" / "mm.json").read_text() == "not json"


def test_record_into_a_folder_that_cannot_be_made_is_refused_before_any_test(tmp_path):
    (tmp_path / "file").write_text("")
    run = bench(tmp_path, shape_file(tmp_path, SHAPES),
                FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "file" / "rec"))
    assert run.returncode == 4, run.output
    assert f"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR={tmp_path / 'file' / 'rec'}: cannot make the folder" in run.stderr
    assert run.sessions == []


def test_record_into_a_folder_that_cannot_be_written_is_refused_before_any_test(tmp_path):
    if os.geteuid() == 0:  # root writes through permissions: a file system that refuses everyone
        folder = Path("/sys/kernel")
    else:
        folder = tmp_path / "ro"
        folder.mkdir(mode=0o555)
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(folder))
    assert run.returncode == 4, run.output
    assert f"warmup-harness: FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR={folder}: cannot write files there" in run.stderr
    assert "or replay what it holds with FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR" in run.stderr, run.stderr
    assert run.sessions == []


@pytest.mark.parametrize("mode", ["RECORD", "REPLAY"])
@pytest.mark.parametrize("op", ["../mm", "a/b", "..", ".", "mm.meta"])
def test_an_op_name_that_would_reach_outside_the_record_folder_is_refused(tmp_path, mode, op):
    (tmp_path / "rec").mkdir()
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_CURRENT_OP=op,
                **{f"FLAGGEMS_PERF_AUTOTUNE_{mode}_DIR": str(tmp_path / "rec")})
    assert run.returncode == 4, run.output
    assert f"warmup-harness: FLAGGEMS_PERF_CURRENT_OP={op!r}: " in run.stderr and "plain name" in run.stderr
    assert run.sessions == [] and sorted(p.name for p in tmp_path.iterdir()) == ["rec", "shapes.yaml"]


def test_importing_the_plugin_changes_no_variable_and_the_session_is_a_registered_plugin(tmp_path):
    probe = ("import os; import warmup_harness; print(os.environ.get('FLAGGEMS_DB_URL'))")
    imported = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG,
                              env=bench_env(tmp_path, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec")))
    assert imported.stdout.strip() == "None", imported.stdout + imported.stderr
    run = bench(tmp_path, shape_file(tmp_path, SHAPES[:1]), "--trace-config",
                FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"), FLAGGEMS_PERF_WARMUP_WORKER="1")
    assert run.returncode == 0, run.output
    assert run.session["env"]["FLAGGEMS_DB_URL"] == "sqlite:///:memory:"  # a child's: set by the time conftests ran
    assert "PLUGIN registered: <warmup_harness.session.Session object" in run.output


def test_record_and_replay_together_are_refused(tmp_path):
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "a"),
                FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(tmp_path / "b"))
    assert run.returncode == 4, run.output
    assert "record and replay exclude each other" in run.stderr
    assert run.sessions == [] and not (tmp_path / "a").exists()


def test_without_protocol_variables_the_plugin_changes_nothing(tmp_path):
    shapes = shape_file(tmp_path, SHAPES)
    # Separate homes: the LibTuner-like tuner's default store under $HOME stays warm between runs.
    with_plugin = bench(tmp_path, shapes, HOME=str(tmp_path / "home1"))
    without = bench(tmp_path, shapes, plugin=False, HOME=str(tmp_path / "home2"))
    assert with_plugin.returncode == without.returncode == 0
    assert with_plugin.session["hooked"] is False
    assert "FLAGGEMS_DB_URL" not in with_plugin.session["env"]
    assert with_plugin.harness_lines() == []
    for key in ("launches", "timed", "env"):
        assert with_plugin.session[key] == without.session[key], key


def test_a_key_flaggems_own_store_holds_is_recorded_not_swept_outside_a_sweep_child(tmp_path):
    shapes = shape_file(tmp_path, SHAPES)
    warm = bench(tmp_path, shapes, plugin=False)  # fills the LibTuner-like tuner's own store under $HOME
    assert warm.session["timed"][STORE_MM] > 0
    assert list((tmp_path / "home").rglob("tuned.db"))

    # Not a sweep child, FLAGGEMS_DB_URL unset: FlagGems' own store answers, as without the harness.
    own = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "own"))
    assert own.returncode == 0, own.output
    assert STORE_MM not in own.session["timed"] and own.session["timed"][PLAIN_MM] > 0
    assert "FLAGGEMS_DB_URL" not in own.session["env"]
    assert "FlagGems' config store: its own (FLAGGEMS_DB_URL unset)" in own.stderr
    recorded = json.loads((tmp_path / "own" / "mm.json").read_text())
    assert len(recorded[STORE_MM]) == 4, "what the store answered is recorded"
    seconds = json.loads((tmp_path / "own" / "mm.meta.json").read_text())["tune_seconds"]
    assert set(seconds[STORE_MM].values()) == {None}
    assert all(isinstance(s, float) for s in seconds[PLAIN_MM].values())

    # A sweep child, and a fresh session, tune in a private store: the warm one answers nothing.
    for name, extra, why in [("child", {"FLAGGEMS_PERF_WARMUP_WORKER": "1"}, "a sweep child"),
                             ("fresh", {"WARMUP_HARNESS_FRESH": "1"}, "WARMUP_HARNESS_FRESH is set")]:
        run = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / name), **extra, **FULL_TIMING)
        assert run.returncode == 0, run.output
        assert run.session["timed"] == warm.session["timed"], f"{name}: a warm store short-cut the sweep"
        assert run.session["env"]["FLAGGEMS_DB_URL"] == "sqlite:///:memory:"
        assert f"sqlite:///:memory:, private and empty, as {why}" in run.stderr

    db = next((tmp_path / "home").rglob("tuned.db"))
    chosen = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "chosen"),
                   FLAGGEMS_DB_URL=f"sqlite:///{db}", FLAGGEMS_PERF_WARMUP_WORKER="1")
    assert STORE_MM not in chosen.session["timed"]
    assert f"FLAGGEMS_DB_URL=sqlite:///{db} as you set it" in chosen.stderr
    # What the chosen store answered is recorded all the same, as the sweep would have recorded it
    # (no "pre_hook": null from the store's rebuilt configs), so that it replays.
    records = json.loads((tmp_path / "chosen" / "mm.json").read_text())
    swept = json.loads((tmp_path / "fresh" / "mm.json").read_text())
    assert records[STORE_MM] == swept[STORE_MM] == recorded[STORE_MM] and len(records[STORE_MM]) == 4
    # Not vouched for as made here (the store may hold another device's answers): swept live, which
    # the chosen store answers again.
    replay = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(tmp_path / "chosen"),
                   FLAGGEMS_DB_URL=f"sqlite:///{db}")
    assert replay.returncode == 0 and "replayed 8, swept 4 live" in replay.stderr, replay.output
    assert STORE_MM not in replay.session["timed"]


def test_keys_a_tuners_store_answered_are_recorded_as_made_on_an_unknown_device_and_never_vouched_for(tmp_path):
    """Issue 41 item 13: FlagGems 5.3's store names no GPU model, so what it answers may be another
    device's pick. Such keys are recorded as made on an unknown device: replay sweeps them live,
    resuming in place tunes them where the store no longer answers, and the sidecar never
    names them as made here."""
    shapes = shape_file(tmp_path, SHAPES)
    warm = bench(tmp_path, shapes, plugin=False)  # fills the LibTuner-like tuner's store under $HOME
    assert warm.returncode == 0 and warm.session["timed"][STORE_MM] > 0, warm.output
    folder = tmp_path / "rec"
    first = in_place_session(tmp_path, shapes, folder)
    assert first.returncode == 0 and STORE_MM not in first.session["timed"], first.output
    meta = json.loads((folder / "mm.meta.json").read_text())
    keys = sorted(json.loads((folder / "mm.json").read_text())[STORE_MM])
    assert meta["device"] and meta["triton"], meta
    assert [{**g, "keys": {k: sorted(v) for k, v in g["keys"].items()}} for g in meta["foreign"]
            if STORE_MM in g["keys"]] == [{"device": None, "triton": None, "keys": {STORE_MM: keys}}], meta["foreign"]
    assert all(STORE_MM not in g["keys"] or (g["device"], g["triton"]) == (None, None) for g in meta["foreign"])
    assert f"{folder / 'mm.json'}: 4 key(s) were answered by the tuner's store, not tuned here" in first.stderr

    replay = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder), HOME=str(tmp_path / "cold"),
                   **FULL_TIMING)
    assert replay.returncode == 0 and "replayed 8, swept 4 live" in replay.stderr, replay.output
    assert "(made on an unknown device with Triton unknown)" in replay.stderr
    assert set(replay.session["timed"]) == {STORE_MM}

    again = in_place_session(tmp_path, shapes, folder, HOME=str(tmp_path / "cold-2"), **FULL_TIMING)
    assert again.returncode == 0, again.output
    assert set(again.session["timed"]) == {STORE_MM}, "the store's keys are tuned here, the record's resumed"
    assert "resume: 8 key(s) taken from" in again.stderr
    meta = json.loads((folder / "mm.meta.json").read_text())
    assert not any(STORE_MM in g["keys"] for g in meta.get("foreign", [])), "tuned here now"


def fixture_copy(work: Path) -> Path:
    """A copy of the fixture benchmark whose kernels a test may edit; returns its bench_ops.py."""
    to = work / "fixture"
    shutil.copytree(BENCH.parent, to, ignore=shutil.ignore_patterns("__pycache__"))
    return to / "bench_ops.py"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def in_place_session(work: Path, shapes: Path, folder: Path, *opts: str, **env: str) -> Run:
    """Resuming in place: one record session whose earlier record is its own (RECORD_DIR and
    RESUME_DIR one folder)."""
    return bench(work, shapes, *opts, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(folder),
                 WARMUP_HARNESS_RESUME_DIR=str(folder), **env)


def test_a_re_run_resuming_in_place_with_a_full_record_tunes_nothing_and_writes_nothing(tmp_path):
    shapes = shape_file(tmp_path, SHAPES)
    folder = tmp_path / "rec"
    first = in_place_session(tmp_path, shapes, folder)
    assert first.returncode == 0, first.output
    assert "does not exist yet: every key is tuned" in first.stderr and "recorded 12 key(s)" in first.stderr
    files = {name: (folder / name).stat() for name in ("mm.json", "mm.meta.json")}

    # FlagGems' store cold (another home): the record alone answers every key.
    again = in_place_session(tmp_path, shapes, folder, HOME=str(tmp_path / "cold-home"))
    assert again.returncode == 0, again.output
    assert again.session["timed"] == {}, "a key was tuned"
    assert launched(again.session) == launched(first.session)
    for name, before in files.items():
        now = (folder / name).stat()
        assert (now.st_ino, now.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), f"{name} was rewritten"
    assert not (folder / ".mm.journal").exists()
    assert "resume: 12 key(s) taken from" in again.stderr and "this session's record: nothing carried" in again.stderr
    # Said as what happened (issue 42): resumed, nothing tuned, and no tuning seconds.
    record = folder / "mm.json"
    lines = again.harness_lines()
    assert f"[warmup-harness] record mode, op mm: 12 key(s) resumed from {record} where met, any other key tuned " \
        f"and recorded in {record}" in lines, lines
    assert f"[warmup-harness] op mm: resumed 12 key(s) from {record}, tuned 0" in lines, lines
    assert "of tuning" not in again.stderr and "every autotuner decision goes to" not in again.stderr

    # FlagGems' own store warm too (its keys answered there first): they are the record's already.
    warm = in_place_session(tmp_path, shapes, folder)
    assert warm.returncode == 0 and warm.session["timed"] == {}, warm.output
    now = (folder / "mm.json").stat()
    assert (now.st_ino, now.st_mtime_ns) == (files["mm.json"].st_ino, files["mm.json"].st_mtime_ns)


def test_a_session_resuming_in_place_that_resumes_some_keys_and_tunes_the_rest_says_how_many_of_each(tmp_path):
    """Issue 42: the closing line counts what was resumed apart from what was tuned, and gives the
    tuning seconds of the keys tuned here only."""
    folder = tmp_path / "rec"
    first = in_place_session(tmp_path, shape_file(tmp_path, SHAPES[:2], "two.yaml"), folder)
    assert first.returncode == 0, first.output
    assert "op mm: recorded 6 key(s) of 3 kernel(s)" in first.stderr and "resumed" not in first.stderr
    # FlagGems' store cold (another home): the two new shapes' keys are tuned, the record's resumed.
    again = in_place_session(tmp_path, shape_file(tmp_path, SHAPES), folder, HOME=str(tmp_path / "cold-home"))
    assert again.returncode == 0, again.output
    assert set(again.session["timed"]) == {PLAIN_MM, STORE_MM, ADD}, again.session["timed"]
    record = folder / "mm.json"
    assert f"record mode, op mm: 6 key(s) resumed from {record} where met" in again.stderr, again.stderr
    closing = [ln for ln in again.harness_lines() if ln.startswith("[warmup-harness] op mm: ")]
    assert len(closing) == 1, again.stderr
    said = re.fullmatch(rf"\[warmup-harness\] op mm: resumed 6 key\(s\) from {re.escape(str(record))}, tuned 6 "
                        rf"\(([0-9.]+)s of tuning\); recorded 6 key\(s\) of 3 kernel\(s\) in {re.escape(str(record))}",
                        closing[0])
    assert said is not None, closing
    assert sum(map(len, json.loads(record.read_text()).values())) == 12


def test_a_session_resuming_in_place_that_tunes_nothing_takes_no_lock_and_starts_no_pool(tmp_path):
    shapes = shape_file(tmp_path, SHAPES)
    folder = tmp_path / "rec"
    assert in_place_session(tmp_path, shapes, folder).returncode == 0
    # Spawned compile workers import the preload module when they start: it leaves a mark.
    modules = tmp_path / "modules"
    modules.mkdir()
    mark = tmp_path / "a-pool-started"
    (modules / "pool_mark.py").write_text(f"open({str(mark)!r}, 'a').close()\n")
    held = []
    try:
        for name in (".mm.lock", ".mm.sessions"):  # a session that took either would wait here
            held.append(open(folder / name, "a"))
            fcntl.flock(held[-1], fcntl.LOCK_EX | fcntl.LOCK_NB)
        again = in_place_session(tmp_path, shapes, folder, WARMUP_HARNESS_COMPILE_START="spawn",
                              WARMUP_HARNESS_COMPILE_PRELOAD="pool_mark",
                              PYTHONPATH=f"{SOURCE}{os.pathsep}{modules}")
    finally:
        for f in held:
            f.close()
    assert again.returncode == 0 and again.session["timed"] == {}, again.output
    # FlagGems' store is warm here: it answers its kernel's 4 keys before the record is asked, with
    # the configs the record holds, so they count as resumed.
    said = f"op mm: resumed 12 key(s) from {folder / 'mm.json'}, tuned 0\n"
    assert said in again.stderr, again.stderr
    assert not (folder / ".mm.journal").exists()
    assert not mark.exists(), "a compile pool started in a session that compiled nothing"


def test_a_changed_kernel_is_tuned_again_while_the_other_kernels_of_the_op_replay(tmp_path):
    script = fixture_copy(tmp_path)
    shapes = shape_file(tmp_path, SHAPES)
    folder = tmp_path / "rec"
    first = in_place_session(tmp_path, shapes, folder, script=script)
    assert first.returncode == 0, first.output
    before = json.loads((folder / "mm.meta.json").read_text())["kernels"]
    assert set(before) == {PLAIN_MM, STORE_MM, ADD} and all(len(v) == 32 for v in before.values())
    # One config more for add_kernel, on the line that holds its list: no other kernel moves.
    edit(script.parent / "kernels_plain.py", "for b in (128, 256, 512, 1024)", "for b in (128, 256, 512, 1024, 2048)")
    record = folder / "mm.json"

    replay = bench(tmp_path, shapes, script=script, FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder))
    assert replay.returncode == 0, replay.output
    assert set(replay.session["timed"]) == {ADD}
    assert "op mm: replayed 8, swept 4 live" in replay.stderr
    line = f"kernel {ADD} changed since {record} was recorded (source or configs differ): its 4 key(s) are"
    assert replay.stderr.count(line) == 1 and f"{line} swept live" in replay.stderr, replay.stderr

    # the record alone
    again = in_place_session(tmp_path, shapes, folder, script=script, HOME=str(tmp_path / "cold-home"))
    assert again.returncode == 0, again.output
    assert set(again.session["timed"]) == {ADD}, "only the changed kernel is tuned"
    assert again.stderr.count(f"kernel {ADD} changed") == 1 and f"{line} tuned again" in again.stderr
    assert "resume: 8 key(s) taken from" in again.stderr
    after = json.loads((folder / "mm.meta.json").read_text())["kernels"]
    assert after[ADD] != before[ADD] and {k: after[k] for k in (PLAIN_MM, STORE_MM)} == \
        {k: before[k] for k in (PLAIN_MM, STORE_MM)}
    assert sum(map(len, json.loads(record.read_text()).values())) == 12

    third = in_place_session(tmp_path, shapes, folder, script=script)
    assert third.returncode == 0 and third.session["timed"] == {}, third.output
    assert "changed since" not in third.stderr


PRUNE = 'if c.kwargs["BLOCK"] <= max(128, nargs["n"])]'


def test_a_changed_pruner_re_tunes_its_kernel_alone(tmp_path):
    """The fingerprint covers `prune_configs_by`: a pruner that now keeps fewer configs re-tunes its
    kernel, not the op's others, and no pruned-away config is pinned."""
    script = fixture_copy(tmp_path)
    shapes = shape_file(tmp_path, SHAPES)
    folder = tmp_path / "rec"
    first = in_place_session(tmp_path, shapes, folder, script=script)
    assert first.returncode == 0, first.output
    edit(script.parent / "kernels_plain.py", PRUNE, PRUNE.replace("max(128, nargs[\"n\"])", "128"))
    again = in_place_session(tmp_path, shapes, folder, script=script, HOME=str(tmp_path / "cold-home"), **FULL_TIMING)
    assert again.returncode == 0, again.output
    assert set(again.session["timed"]) == {ADD} and again.session["timed"][ADD] == 4 * 2, again.output
    assert f"kernel {ADD} changed since" in again.stderr
    assert {c["BLOCK"] for (kernel, _), c in launched(again.session).items() if kernel == ADD} == {128}


def test_replay_never_pins_a_config_the_kernels_pruning_leaves_out(tmp_path):
    """With nothing to compare the pruner by (a sidecar without fingerprints), the replay still asks
    the tuner's own pruning for each key and sweeps live a key whose recorded config it prunes."""
    script = fixture_copy(tmp_path)
    shapes = shape_file(tmp_path, SHAPES)
    folder = tmp_path / "rec"
    first = bench(tmp_path, shapes, script=script, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(folder))
    assert first.returncode == 0, first.output
    meta = json.loads((folder / "mm.meta.json").read_text())
    del meta["kernels"]  # a sidecar from before fingerprints: every kernel trusted
    (folder / "mm.meta.json").write_text(json.dumps(meta))
    recorded = json.loads((folder / "mm.json").read_text())[ADD]
    pruned = sum(config["kwargs"]["BLOCK"] != 128 for config in recorded.values())
    assert pruned > 0, "the stubbed timings picked BLOCK 128 for every key: nothing to prune"
    edit(script.parent / "kernels_plain.py", PRUNE, PRUNE.replace("max(128, nargs[\"n\"])", "128"))

    replay = bench(tmp_path, shapes, script=script, FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder))
    assert replay.returncode == 0, replay.output
    assert f"replayed {12 - pruned}, swept {pruned} live" in replay.stderr, replay.stderr
    assert "(the kernel's pruning leaves its recorded config out)" in replay.stderr
    assert set(replay.session["timed"]) == {ADD}
    assert {c["BLOCK"] for (kernel, _), c in launched(replay.session).items() if kernel == ADD} == {128}


def fingerprints_after(work: Path, script: Path, folder: Path) -> dict:
    return json.loads((folder / "mm.meta.json").read_text())["kernels"]


def test_moving_a_kernel_down_re_tunes_nothing_and_editing_one_re_tunes_it_alone(tmp_path):
    """The fingerprint is of what decides a config, not of where the kernel sits: a line added above
    both mm kernels moves them and re-tunes nothing; a line added inside the plain mm kernel
    re-tunes it alone, not add_kernel below it in the same file."""
    script = fixture_copy(tmp_path)
    shapes = shape_file(tmp_path, SHAPES)
    folder = tmp_path / "rec"
    first = in_place_session(tmp_path, shapes, folder, script=script)
    assert first.returncode == 0, first.output
    before = fingerprints_after(tmp_path, script, folder)
    kernels = script.parent / "kernels_plain.py"
    edit(kernels, "MM_CONFIGS = [", "# a comment that moves every kernel below it down a line\nMM_CONFIGS = [")
    moved = in_place_session(tmp_path, shapes, folder, script=script, HOME=str(tmp_path / "cold-home"))
    assert moved.returncode == 0, moved.output
    assert moved.session["timed"] == {}, "moving a kernel re-tuned it"
    assert fingerprints_after(tmp_path, script, folder) == before and "changed since" not in moved.stderr

    edit(kernels, "    pid = tl.program_id(0)\n", "    pid = tl.program_id(0)\n    pid = pid + 0\n")
    edited = in_place_session(tmp_path, shapes, folder, script=script, HOME=str(tmp_path / "cold-home-2"))
    assert edited.returncode == 0, edited.output
    assert set(edited.session["timed"]) == {PLAIN_MM}, "only the edited kernel is tuned again"
    after = fingerprints_after(tmp_path, script, folder)
    assert after[PLAIN_MM] != before[PLAIN_MM] and after[ADD] == before[ADD] and after[STORE_MM] == before[STORE_MM]


def test_a_changed_kernel_one_shard_never_meets_is_not_carried_and_its_running_fingerprint_is_published(
        tmp_path):
    """Issue 29 item 10: two shards resume from a record whose add_kernel has changed since; shard 1
    never launches it. Neither carries its stale keys (the running kernel is found by its name),
    so the merge sees no interference and the published fingerprint is the running one."""
    script = fixture_copy(tmp_path)
    folder = tmp_path / "rec"
    first = bench(tmp_path, shape_file(tmp_path, SHAPES), script=script, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(folder))
    assert first.returncode == 0, first.output
    before = json.loads((folder / "mm.meta.json").read_text())["kernels"]
    offs = "    offs = tl.program_id(0) * BLOCK"
    edit(script.parent / "kernels_plain.py", offs, offs + " + 0")
    launch = "    kernels_plain.add_kernel[(1,)]"
    edit(script, launch, "    if not os.environ.get('SKIP_ADD'):\n    " + launch)
    scratch = tmp_path / "scratch"
    shard = subprocess.run([str(BIN_DIR / "warmup-shard"), "--op", "mm", "--shards", "2", "--out", str(scratch),
                            str(shape_file(tmp_path, SHAPES, "all.yaml"))],
                           capture_output=True, text=True, env=clean_env(), timeout=HANG)
    assert shard.returncode == 0, shard.stderr
    for i, skip in ((0, ""), (1, "1")):
        child = bench(tmp_path, scratch / f"w{i}" / "shapes.yaml", script=script, SKIP_ADD=skip,
                      FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(scratch / f"w{i}" / "rec"),
                      WARMUP_HARNESS_RESUME_DIR=str(folder))
        assert child.returncode == 0, child.output
        assert f"kernel {ADD} changed since {folder / 'mm.json'} was recorded" in child.stderr, child.stderr
        assert "its 4 key(s) are not carried" in child.stderr
        carried = json.loads((scratch / f"w{i}" / "rec" / "mm.json").read_text())
        assert len(carried.get(ADD, {})) == (2 if i == 0 else 0), "a stale key of the changed kernel was carried"
    merge = subprocess.run([str(BIN_DIR / "warmup-merge"), "--op", "mm", "--in-scratch", str(scratch)],
                           capture_output=True, text=True, env=clean_env(), timeout=HANG)
    assert merge.returncode == 0 and "no conflicting keys" in merge.stderr, merge.stderr
    publish = subprocess.run([str(BIN_DIR / "warmup-publish"), "--op", "mm", "--record-dir", str(folder),
                              str(scratch)], capture_output=True, text=True, env=clean_env(), timeout=HANG)
    assert publish.returncode == 0 and "disagree" not in publish.stderr, publish.stderr
    kernels = json.loads((folder / "mm.meta.json").read_text())["kernels"]
    running = json.loads((scratch / "w0" / "rec" / "mm.meta.json").read_text())["kernels"][ADD]
    assert kernels[ADD] == running != before[ADD], "the published fingerprint is not the running kernel's"
    assert len(json.loads((folder / "mm.json").read_text())[ADD]) == 2, "the stale keys stayed"


def test_a_carried_kernel_no_running_one_confirms_is_named_unchecked(recorded, tmp_path):
    """A kernel of the earlier record that this process cannot find loaded is carried as it was,
    and the child's sidecar says so (`unchecked`), for warmup-merge and warmup-publish to prefer a
    shard that ran it; a kernel met here is confirmed."""
    folder = copy_records(recorded[0], tmp_path / "earlier")
    records = json.loads((folder / "mm.json").read_text())
    meta = json.loads((folder / "mm.meta.json").read_text())
    records["kernels_plain:gone_kernel"] = {"[1]": {"kwargs": {"BLOCK": 1}}}
    meta["kernels"]["kernels_plain:gone_kernel"] = "0" * 32
    (folder / "mm.json").write_text(json.dumps(records))
    (folder / "mm.meta.json").write_text(json.dumps(meta))
    out = tmp_path / "child"
    run = bench(tmp_path, shape_file(tmp_path, SHAPES[:1]), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(out),
                WARMUP_HARNESS_RESUME_DIR=str(folder))
    assert run.returncode == 0, run.output
    child = json.loads((out / "mm.meta.json").read_text())
    assert child["unchecked"] == ["kernels_plain:gone_kernel"], child.get("unchecked")
    assert "kernels_plain:gone_kernel" in json.loads((out / "mm.json").read_text())


def test_installed_harness_loads_through_its_entry_point_alone(tmp_path):
    site = tmp_path / "site"
    make = subprocess.run(
        ["make", "-s", "install-harness", f"HARNESS_PYTHON={sys.executable}",
         f"HARNESS_PIP_FLAGS=--target {site} --no-deps --no-build-isolation"],
        cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=HANG)
    assert make.returncode == 0, make.stdout + make.stderr
    shapes = shape_file(tmp_path, SHAPES[:1])
    for name, opts in (("auto", []), ("both", ["-p", "warmup_harness"]), ("off", ["-p", "no:warmup_harness"])):
        run = bench(tmp_path, shapes, *opts, plugin=False, PYTHONPATH=str(site),
                    FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / name))
        assert run.returncode == 0, run.output
        assert (tmp_path / name / "mm.json").exists() == (name != "off"), name


def test_the_example_benchmark_compiles_and_its_shapes_shard(tmp_path):
    examples = SOURCE / "examples"
    for name in ("conftest.py", "test_rowsum_bench.py"):
        compile((examples / name).read_text(), name, "exec")
    run = subprocess.run([str(BIN_DIR / "warmup-shard"), "--op", "rowsum", "--shards", "2", "--out",
                          str(tmp_path / "s"), str(examples / "shapes.yaml")],
                         env=clean_env(), capture_output=True, text=True, timeout=HANG)
    assert run.returncode == 0, run.stderr
    assert len(yaml.safe_load((tmp_path / "s" / "w0" / "shapes.yaml").read_text())["rowsum"]["shapes"]) == 3


def test_a_session_resuming_in_place_that_passes_names_its_runs_signature_in_the_sidecar_and_no_other_does(tmp_path):
    """WARMUP_HARNESS_SIGNATURE (warmup-plan's, in a replay or record run) goes to the sidecar's
    `complete_for` only when the record is this session's cache and every test passed: the next
    run of the same command then knows the record holds every key it needs."""
    shapes = shape_file(tmp_path, SHAPES)
    folder = tmp_path / "rec"
    plain = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(folder), WARMUP_HARNESS_SIGNATURE="s1")
    assert plain.returncode == 0, plain.output
    assert "complete_for" not in json.loads((folder / "mm.meta.json").read_text()), "not resuming in place"
    nothing = in_place_session(tmp_path, shapes, folder, "-m", "nosuchmarker", WARMUP_HARNESS_SIGNATURE="s1")
    assert nothing.returncode == 5, nothing.output
    assert "complete_for" not in json.loads((folder / "mm.meta.json").read_text()), "no test ran"
    passed = in_place_session(tmp_path, shapes, folder, WARMUP_HARNESS_SIGNATURE="s1")
    assert passed.returncode == 0 and passed.session["timed"] == {}, passed.output
    assert json.loads((folder / "mm.meta.json").read_text())["complete_for"] == "s1"
    before = (folder / "mm.meta.json").stat()
    again = in_place_session(tmp_path, shapes, folder, WARMUP_HARNESS_SIGNATURE="s1")
    assert again.returncode == 0, again.output
    now = (folder / "mm.meta.json").stat()
    assert (now.st_ino, now.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), "a full re-run rewrote it"


def test_a_one_device_record_run_that_passes_is_replayed_by_the_next_run_on_two(tmp_path):
    """scripts/warmup on one device records in one process; that run ends with every test passed,
    so its sidecar names it complete, and the same command on two devices then replays the record
    in one process, starting no child (the device is unknown here: the plan leaves it to the
    harness)."""
    shapes = shape_file(tmp_path, SHAPES)
    env = bench_env(tmp_path, WARMUP_BIN_DIR=str(BIN_DIR), FLAGGEMS_VENDOR="nvidia", TMPDIR=str(tmp_path),
                    FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "records"),
                    WARMUP_PROBE_ROOT=str(tmp_path / "no-driver"))

    def warmup(*opts: str) -> Run:
        proc = subprocess.run([str(SCRIPT), *opts, "--", *bench_command(shapes)], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=HANG)
        return Run(proc, tmp_path / "trace.jsonl")

    recorded = warmup("--gpus", "1")
    assert recorded.returncode == 0 and "one device, one process" in recorded.stderr, recorded.output
    assert recorded.session["worker"] is None and sum(recorded.session["timed"].values()) > 0
    replayed = warmup("--gpus", "2", "--devices", "0,1")
    assert replayed.returncode == 0, replayed.output
    assert "answers op mm for" in replayed.stderr and "reusing it" in replayed.stderr, replayed.output
    assert replayed.session["worker"] is None and replayed.session["timed"] == {}, "a child ran or a key was tuned"


def test_a_record_folder_whose_record_is_no_record_file_still_runs_the_benchmark(tmp_path):
    """An empty `mm.json` beside a sidecar naming this run complete: the plan does not take it for
    an answer, so the benchmark's tests run (not the harness's refusal, exit 4): on one device
    recording into a folder of its own, on two sweeping and publishing a whole record over it."""
    shapes = shape_file(tmp_path, SHAPES)
    records = tmp_path / "records"
    env = bench_env(tmp_path, WARMUP_BIN_DIR=str(BIN_DIR), FLAGGEMS_VENDOR="nvidia", TMPDIR=str(tmp_path),
                    FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(records), WARMUP_PROBE_ROOT=str(tmp_path / "no-driver"))

    def warmup(*opts: str) -> Run:
        proc = subprocess.run([str(SCRIPT), *opts, "--", *bench_command(shapes)], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=HANG)
        return Run(proc, tmp_path / "trace.jsonl")

    assert warmup("--gpus", "1").returncode == 0  # a complete record, its sidecar naming this run
    assert "complete_for" in json.loads((records / "mm.meta.json").read_text())
    (records / "mm.json").write_bytes(b"")
    one = warmup("--gpus", "1")
    assert one.returncode == 0 and " passed" in one.stdout and "failed" not in one.stdout, one.output
    assert "empty file" in one.stderr and "a folder of its own" not in one.stderr, one.output
    # Resuming in place (issue 42): the empty file is set aside beside itself, the op recorded anew.
    [aside] = records.glob("mm.json.unreadable-*")
    assert aside.read_bytes() == b"", "set aside as it was"
    assert len(json.loads((records / "mm.json").read_text())) == 3, "recorded anew"
    (records / "mm.json").write_bytes(b"")
    two = warmup("--gpus", "2", "--devices", "0,1")
    assert two.returncode == 0 and "is not reused" in two.stderr, two.output
    assert len(json.loads((records / "mm.json").read_text())) == 3, "a whole record published over it"


def test_record_races_by_default_keeps_the_winners_times_fewer_configs_in_full_and_says_what_each_key_cost(
        recorded, tmp_path):
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), "-s",  # -s: Triton's and the race's prints uncaptured
                FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"), TRITON_PRINT_AUTOTUNING="1")
    assert run.returncode == 0, run.output
    records = json.loads((tmp_path / "rec" / "mm.json").read_text())
    assert records == json.loads((recorded[0] / "mm.json").read_text()), "the fake device's timings are exact"
    race = json.loads((tmp_path / "rec" / "mm.meta.json").read_text())["race"]
    assert race.keys() == {PLAIN_MM, STORE_MM, ADD} and race[PLAIN_MM].keys() == records[PLAIN_MM].keys()
    # No noise on the fake device: only the best config is timed in full.
    assert all(v["raced"] == 24 and v["retimed"] == 1 and v["skipped"] == 0 for v in race[PLAIN_MM].values()), race
    # Each key: 24 short timings, 4 more of the best (its noise), a second of the 23 others within 2x
    # of it (all: every timing here is between 1 and 2 ms), 1 in full; and the session's first race
    # (this kernel's) warms the device first, one launch of a do_bench given a warm-up budget.
    assert run.session["timed"][PLAIN_MM] == 4 * (24 + 4 + 23 + 1) + 1, run.session["timed"]
    printed = [ln for ln in run.stdout.splitlines() if ln.startswith(f"warmup-harness race {PLAIN_MM} key ")]
    assert len(printed) == 4 and ": 24 configs raced in " in printed[0] and "1 re-timed in full in" in printed[0]
    closing = [ln for ln in run.harness_lines() if ln.startswith("[warmup-harness] race: ")]
    assert len(closing) == 1 and closing[0].startswith("[warmup-harness] race: 12 key(s), "), run.stderr
    assert " re-timed in full in " in closing[0]
    # The LibTuner-like tuner's own store keeps each `_bench` answer it got: the race's full timings
    # only, each the one the tuner got timing every config in full; no config the race dropped.
    raced, full = (bench_rows(home / ".fixture_gems" / "tuned.db") for home in (tmp_path / "home",
                                                                                 recorded[0].parent / "home"))
    assert len(raced) == 4 and len(full) == 4 * 12, (len(raced), len(full))
    assert all(math.isfinite(v) for row in raced.values() for v in row) and raced.items() <= full.items(), raced


def bench_rows(db: Path) -> dict[tuple, tuple]:
    """The LibTuner-like tuner's stored `_bench` answers: (key, config) -> (p50, p20, p80)."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT key, config, p50, p20, p80 FROM bench_mm_kernel_general").fetchall()
    finally:
        conn.close()
    return {(key, config): tuple(timing) for key, config, *timing in rows}


def test_racing_off_times_every_config_once_in_full_and_records_the_same_winners(recorded, tmp_path):
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"),
                **FULL_TIMING)
    assert run.returncode == 0, run.output
    assert json.loads((tmp_path / "rec" / "mm.json").read_text()) == json.loads((recorded[0] / "mm.json").read_text())
    assert run.session["timed"][PLAIN_MM] == 4 * 24, "every config of each of the 4 keys, once"
    assert "race" not in json.loads((tmp_path / "rec" / "mm.meta.json").read_text()), "no race: no race field"
    assert not any("race" in ln for ln in run.harness_lines()), run.stderr


def test_replay_never_races_a_key_it_sweeps_live(recorded, tmp_path):
    folder = copy_records(recorded[0], tmp_path / "rec")
    run = bench(tmp_path, shape_file(tmp_path, [*SHAPES, [96, 32, 16]]),
                FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder), WARMUP_HARNESS_RACE="1")
    assert run.returncode == 0, run.output
    assert run.session["timed"][PLAIN_MM] == 24, "every config timed once, in full"
    assert not any(ln.startswith("[warmup-harness] race") for ln in run.harness_lines()), run.stderr
    assert "warmup-harness race" not in run.stdout


def test_racing_with_history_skips_the_configs_never_near_the_best_and_keeps_the_winners(recorded, tmp_path):
    rec = tmp_path / "rec"
    shapes = shape_file(tmp_path, SHAPES)
    first = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(rec), WARMUP_HARNESS_RACE="1",
                  WARMUP_HARNESS_RACE_HISTORY="3")
    assert first.returncode == 0, first.output
    meta = json.loads((rec / "mm.meta.json").read_text())
    near = {i for v in meta["race"][PLAIN_MM].values() for i in v["near"]}
    assert 0 < len(near) < 24, near
    # Holding back is opt-in (3 keys here, near 20% by default): the fourth key's predicted winner (the nearest key's)
    # is not near its best on this fake device, so that key races every config after all (doubt).
    assert [v["history"] for v in meta["race"][PLAIN_MM].values()] == ["short"] * 3 + ["doubt"], meta["race"]
    assert meta["race_settings"][PLAIN_MM] == {"history": 3, "near": 0.2}
    again = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(rec), WARMUP_HARNESS_RACE="1",
                  WARMUP_HARNESS_RACE_HISTORY="4", WARMUP_HARNESS_FRESH="1")
    assert again.returncode == 0, again.output
    assert json.loads((rec / "mm.json").read_text()) == json.loads((recorded[0] / "mm.json").read_text())
    race = json.loads((rec / "mm.meta.json").read_text())["race"]
    # The record's 4 keys are the history: the session's first key is its audit (every config),
    # the others skip the configs near on none of the record's keys.
    audit, *pruned = race[PLAIN_MM].values()
    assert (audit["history"], audit["raced"], audit["audit"]) == ("audit", 24, {"missed": []}), audit
    assert all(v["history"] == "pruned" and v["skipped"] == 24 - len(near) and v["raced"] == len(near)
               for v in pruned), race
    # Per key: each raced config once, the best 4 more, the others a second time (all within 2x
    # here), the best in full; one warm-up launch before the session's first race.
    assert again.session["timed"][PLAIN_MM] == (2 * 24 + 4) + 3 * (2 * len(near) + 4) + 1, \
        "a skipped config is never timed"
    closing = [ln for ln in again.harness_lines() if ln.startswith("[warmup-harness] race: ")]
    assert " skipped by history (neither compiled nor timed)" in closing[0], closing
    short = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(rec), WARMUP_HARNESS_RACE="1",
                  WARMUP_HARNESS_RACE_HISTORY="5", WARMUP_HARNESS_FRESH="1")
    assert short.returncode == 0, short.output
    assert short.session["timed"][PLAIN_MM] == 4 * (2 * 24 + 4) + 1, "4 raced keys are short of a history of 5"
    assert not any("skipped by history" in ln for ln in short.harness_lines()), short.stderr


# FlagGems 5.3's tuner shape (tests/triton_fixture/kernels_store53.py): a timing already in its
# store is not asked of `_bench` again, its do_bench is its protocol's, its tables are namespaced by
# that protocol, and run modes and `benchmark_config` pick and time without its decision table.
STORE53_MM = "kernels_store53:mm_kernel_general"
LIB53 = {"FIXTURE_LIBTUNER": "5.3"}
TIMING_ROWS = "mm_kernel_general_benchmark_v2"  # kernels_store53's timings table


def bypassing(work: Path, mode: str = "exhaustive_collection") -> dict[str, str]:
    """Each shape launched under a run mode first, and benchmark_config's answers kept in `work`."""
    return {**LIB53, "FIXTURE_RUN_MODE": mode, "FIXTURE_BENCHMARK_CONFIG": str(work / "benchmarked.jsonl")}


@pytest.fixture(scope="module")
def plain53(tmp_path_factory):
    """The 5.3-shaped tuner without the harness, its run mode and benchmark_config on: the run and
    what benchmark_config answered."""
    work = tmp_path_factory.mktemp("plain53")
    run = bench(work, shape_file(work, SHAPES), plugin=False, **bypassing(work))
    assert run.returncode == 0, run.output
    return run, (work / "benchmarked.jsonl").read_text()


@pytest.fixture(scope="module")
def recorded53(tmp_path_factory):
    """A record session of the 5.3-shaped tuner, raced (the default), claiming keys in `claims`:
    its folder and its run."""
    work = tmp_path_factory.mktemp("recorded53")
    run = bench(work, shape_file(work, SHAPES), **LIB53, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(work / "rec"),
                WARMUP_HARNESS_CLAIM_DIR=str(work / "claims"))
    assert run.returncode == 0, run.output
    return work, run


def test_a_53_shaped_tuner_is_raced_recorded_then_replayed_resumed_and_claimed_by_key_untimed(
        recorded53, plain53, tmp_path):
    """And a replay says once that a run mode's launches bypass it: they sweep live."""
    work, run = recorded53
    records = json.loads((work / "rec" / "mm.json").read_text())
    assert set(records) == {PLAIN_MM, STORE53_MM, ADD} and len(records[STORE53_MM]) == 4
    assert launched(run.session) == launched(plain53[0].session), "racing picked other winners"
    assert json.loads((work / "rec" / "mm.meta.json").read_text())["race"][STORE53_MM].keys() == \
        records[STORE53_MM].keys()
    shapes, cold = shape_file(tmp_path, SHAPES), str(tmp_path / "cold-home")
    replay = bench(tmp_path, shapes, **bypassing(tmp_path, "force_policy"), HOME=cold,
                   FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(work / "rec"))
    resumed = in_place_session(tmp_path, shapes, copy_records(work / "rec", tmp_path / "cache"), **LIB53, HOME=cold)
    claimed = bench(tmp_path, shapes, **LIB53, HOME=cold, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "b"),
                    WARMUP_HARNESS_CLAIM_DIR=str(work / "claims"))
    for name, later in (("replay", replay), ("resume", resumed), ("by-key", claimed)):
        assert later.returncode == 0, later.output
        assert launched(later.session) == launched(run.session), name
    assert resumed.session["timed"] == claimed.session["timed"] == {}, "a key was tuned"
    assert replay.session["timed"] == {STORE53_MM: 4 * 12 + 4 * 2}, "the run mode's sweeps and benchmark_config alone"
    assert "replayed 12, swept 0 live" in replay.stderr
    said = [ln for ln in replay.harness_lines() if "run mode force_policy skips the decision table" in ln]
    assert len(said) == 1 and STORE53_MM in said[0], replay.stderr


def test_53s_run_mode_and_benchmark_config_are_said_once_recorded_never_and_timed_as_plain(
        recorded53, plain53, tmp_path):
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), **bypassing(tmp_path),
                FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"))
    assert run.returncode == 0, run.output
    said = [ln for ln in run.harness_lines() if ln.startswith(f"[warmup-harness] {STORE53_MM}: ")]
    assert len(said) == 2, run.stderr
    assert "run mode exhaustive_collection skips the decision table" in said[0]
    assert "benchmark_config() times a config outside the decision table" in said[1]
    # A key whose timings the run mode stored is decided from them (the pre-check): its race is
    # never run, and never answers benchmark_config.
    assert (tmp_path / "benchmarked.jsonl").read_text() == plain53[1]
    assert launched(run.session) == launched(plain53[0].session)
    assert json.loads((tmp_path / "rec" / "mm.json").read_text()) == \
        json.loads((recorded53[0] / "rec" / "mm.json").read_text()), "a run mode's pick was recorded"


def test_flagtunes_cost_model_is_said_once_and_its_picks_recorded_as_made(tmp_path):
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), **LIB53, FIXTURE_FLAGTUNE="cost_model",
                FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"))
    assert run.returncode == 0, run.output
    said = [ln for ln in run.harness_lines() if "FlagTune's cost model picks among configs it makes" in ln]
    assert len(said) == 1 and STORE53_MM in said[0], run.stderr
    records = json.loads((tmp_path / "rec" / "mm.json").read_text())[STORE53_MM]
    picks = {json.dumps(config_launched_as(r), sort_keys=True) for r in records.values()}
    made = {json.dumps(ln["config"], sort_keys=True) for ln in run.session["launches"] if ln["kernel"] == STORE53_MM}
    assert len(records) == 4 and picks == made, (picks, made)


def decision_table(conn: sqlite3.Connection) -> str:
    """The 5.3-shaped tuner's decision table in its store (one kernel, one protocol here)."""
    tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
              if name.startswith("mm_kernel_general_") and name != TIMING_ROWS]
    assert len(tables) == 1, tables
    return tables[0]


def decision_rows(db: Path) -> dict[str, dict]:
    """The decision table: the key as the store writes it -> its config row."""
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(f'SELECT key, config FROM "{decision_table(conn)}"')
        return {key: json.loads(config) for key, config in rows}


def test_a_replay_reads_and_fills_a_53_tuners_store_as_plain_does_and_keeps_a_row_it_holds(recorded53, tmp_path):
    """A launch of a replayed key reads the tuner's store as plain's launch does (BENCHMARKS.md, "The
    hot path"), so the pin goes into the store first, its config only, as the tuner writes a key it
    decides: plain, run next from the same home, tunes none of them. A row the store holds with
    another config is the store's: kept, and the pin launched all the same."""
    work, _ = recorded53
    shapes, record = shape_file(tmp_path, SHAPES), work / "rec"
    pins = {repr(tuple(json.loads(key))): config
            for key, config in json.loads((record / "mm.json").read_text())[STORE53_MM].items()}
    replay = bench(tmp_path, shapes, **LIB53, FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(record))
    assert replay.returncode == 0 and "replayed 12, swept 0 live" in replay.stderr, replay.output
    assert STORE53_MM not in replay.session["timed"]
    db = tmp_path / "home" / ".fixture_gems" / "tuned53.db"
    rows = decision_rows(db)
    assert rows == {key: {"kwargs": pin["kwargs"], "num_warps": pin["num_warps"], "num_stages": pin["num_stages"]}
                    for key, pin in pins.items()}
    with closing(sqlite3.connect(db)) as conn:
        timings = conn.execute("SELECT name FROM sqlite_master WHERE name = ?", (TIMING_ROWS,)).fetchall()
        assert timings == [] or conn.execute(f'SELECT * FROM "{TIMING_ROWS}"').fetchall() == [], "a made-up timing"

    plain = bench(tmp_path, shapes, plugin=False, **LIB53)
    assert plain.returncode == 0 and STORE53_MM not in plain.session["timed"], plain.output
    assert launched(plain.session) == launched(replay.session)

    key, row = sorted(rows.items())[0]
    other = {**row, "kwargs": {m: 64 if v != 64 else 128 for m, v in row["kwargs"].items()}}
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(f'UPDATE "{decision_table(conn)}" SET config = ? WHERE key = ?', (json.dumps(other), key))
    again = bench(tmp_path, shapes, **LIB53, FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(record))
    assert again.returncode == 0, again.output
    assert launched(again.session) == launched(replay.session), "the store's row, not the pin, was launched"
    assert decision_rows(db)[key] == other, "a row the store held was overwritten"


def test_racing_leaves_no_made_up_timing_in_a_53_tuners_store(recorded53):
    """The race times every config briefly but hands the tuner only the configs it keeps: the
    tuner's store holds its own full timings of those, one per (key, config), and nothing else."""
    import math
    import sqlite3

    db = sqlite3.connect(recorded53[0] / "home" / ".fixture_gems" / "tuned53.db")
    rows = db.execute(f'SELECT key, config, ms FROM "{TIMING_ROWS}"').fetchall()
    assert len({row[0] for row in rows}) == 4, "every shape's key timed in full"
    assert len(rows) == len({row[:2] for row in rows}) < 4 * 12, "only the kept configs, each once"
    made_up = [row for row in rows if not all(math.isfinite(ms) for ms in json.loads(row[2]))]
    assert made_up == [], f"{len(made_up)} timing rows the tuner never measured"
