"""scripts/warmup end to end: the whole flow, every skip rule, and the failure paths.

Each test drives the real script, which drives the real tools, which drive real pytest running the
fixture harness in tests/harness. The harness appends one JSON line per pytest session to a trace
file: the sweep children (mode "record") and the measurement run after them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import BIN_DIR, HANG, ROOT, clean_env, on_a_terminal, tool, with_stand_in_sbatch

SCRIPT = ROOT / "scripts" / "warmup"
HARNESS = ROOT / "tests" / "harness" / "test_bench.py"
EXAMPLE = ROOT / "examples" / "shapes.yaml"
README_TEXT = (ROOT / "README.md").read_text()

SHAPES_12 = [[64, 64, 64], [128, 256, 64], [256, 256, 256], [512, 512, 128],
             [1024, 1024, 1024], [2048, 512, 1024], [4096, 4096, 64], [4096, 4096, 4096],
             [8192, 1024, 256], [16384, 128, 128], [16384, 8192, 512], [32768, 4096, 128]]


def bench_command(shape_file) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HARNESS),
            "--shape_file", str(shape_file)]


class Run:
    def __init__(self, proc: subprocess.CompletedProcess, trace: Path):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.sessions = ([json.loads(line) for line in trace.read_text().splitlines()]
                         if trace.exists() else [])

    @property
    def children(self) -> list[dict]:
        return [s for s in self.sessions if s["env"]["FLAGGEMS_PERF_WARMUP_WORKER"] == "1"]

    @property
    def measurement(self) -> dict:
        runs = [s for s in self.sessions if s["env"]["FLAGGEMS_PERF_WARMUP_WORKER"] is None]
        assert len(runs) == 1, f"expected one measurement run, got {runs}\n{self.stderr}"
        return runs[0]

    def lines(self) -> list[str]:
        return [ln for ln in self.stderr.splitlines() if ln.startswith("[parallel-warmup]")]


@pytest.fixture
def work(tmp_path):
    return tmp_path


def warmup(work: Path, *opts: str, shape_file=EXAMPLE, command=None, timeout=HANG, within=(), **env) -> Run:
    trace = work / "trace.jsonl"
    env.setdefault("FLAGGEMS_PERF_CURRENT_OP", "mm")
    env.setdefault("FLAGGEMS_VENDOR", "nvidia")  # this machine has no GPU for auto to find
    env.setdefault("TMPDIR", str(work))
    full_env = clean_env(WARMUP_BIN_DIR=str(BIN_DIR), WARMUP_FIXTURE_TRACE=str(trace),
                         WARMUP_FIXTURE_SWEEP_SECONDS="0.01", **env)
    cmd = command if command is not None else bench_command(shape_file)
    proc = subprocess.run([*within, str(SCRIPT), *opts, "--", *cmd], env=full_env, cwd=work,
                          capture_output=True, text=True, timeout=timeout)
    return Run(proc, trace)


def scratch_folders(work: Path) -> list[Path]:
    return sorted(work.glob("warmup_*"))


def test_whole_flow_sweeps_in_parallel_then_measures_once_replaying_merged_configs(work):
    records = work / "records"
    # The plugin's split: with a record folder, lpt by its history is the default.
    run = warmup(work, "--gpus", "4", "--devices", "0,1,2,3", "--strategy", "round-robin",
                 FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(records))
    assert run.returncode == 0, run.stderr

    children = sorted(run.children, key=lambda s: s["env"]["CUDA_VISIBLE_DEVICES"])
    assert [c["env"]["CUDA_VISIBLE_DEVICES"] for c in children] == ["0", "1", "2", "3"]
    for i, child in enumerate(children):
        assert child["mode"] == "record"
        assert child["shapes"] == SHAPES_12[i::4]
        assert child["env"]["FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR"] is None
        assert child["env"]["FLAGGEMS_PERF_COLOR"] == "never"

    measured = run.measurement
    assert measured["mode"] == "replay" and measured["swept"] == 0
    assert measured["shapes"] == SHAPES_12
    assert measured["env"]["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"] is None
    assert measured["env"]["FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR"] == str(records)
    assert "--shape_file" in measured["argv"] and str(EXAMPLE) in measured["argv"]

    merged = json.loads((records / "mm.json").read_text())
    assert sorted(merged) == ["mm_main", "mm_tail"]
    assert len(merged["mm_main"]) == 12
    done = [ln for ln in run.lines() if "sweep done in" in ln]
    assert done and str(records / "mm.json") in done[0], run.stderr
    configs = sum(len(bucket) for bucket in merged.values())
    assert f"2 kernels / {configs} keys" in done[0]
    # What the children's wall times add up to, named as such: it is no serial estimate.
    assert "the shards' wall times add up to" in done[0], done[0]
    assert scratch_folders(work) == [], "the scratch is removed after a clean run"


def test_without_a_record_dir_configs_are_published_into_the_record_cache(work):
    cache = work / "cache"
    run = warmup(work, "--gpus", "2", "--devices", "a,b", XDG_CACHE_HOME=str(cache))
    assert run.returncode == 0, run.stderr
    [folder] = (cache / "parallel-warmup" / "records").iterdir()
    assert (folder / "mm.json").is_file() and (folder / "mm.costs.json").is_file()
    assert run.measurement["env"]["FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR"] == str(folder)
    assert scratch_folders(work) == [], "the scratch is removed: nothing in it is needed"
    assert all(s["env"]["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"].endswith("/rec") for s in run.children)


def test_with_no_record_cache_configs_are_published_into_the_kept_scratch(work):
    run = warmup(work, "--gpus", "2", "--devices", "a,b", XDG_CACHE_HOME="", HOME="")
    assert run.returncode == 0, run.stderr
    [scratch] = scratch_folders(work)
    published = scratch / "merged" / "mm.json"
    assert published.is_file()
    assert run.measurement["env"]["FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR"] == str(scratch / "merged")
    assert any(f"scratch kept in {scratch}" in ln for ln in run.lines())


def test_keep_leaves_the_scratch_with_plan_logs_and_statuses(work):
    run = warmup(work, "--gpus", "2", "--devices", "0,1", "--keep",
                 FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(work / "rec"))
    assert run.returncode == 0, run.stderr
    [scratch] = scratch_folders(work)
    for name in ("plan.json", "merged.json", "conflicts.json", "w0/worker.log", "w1/status.json"):
        assert (scratch / name).exists(), name


def test_children_share_the_callers_triton_cache_unless_each_gets_its_own(work):
    (work / "shared").mkdir()
    (work / "own").mkdir()
    shared = warmup(work / "shared", "--gpus", "2", "--devices", "0,1", TRITON_CACHE_DIR=str(work / "cache"))
    assert shared.returncode == 0, shared.stderr
    assert [c["env"]["TRITON_CACHE_DIR"] for c in shared.children] == [str(work / "cache")] * 2
    own = warmup(work / "own", "--gpus", "2", "--devices", "0,1", "--cache-per-child", "--scratch", str(work / "s"),
                 TRITON_CACHE_DIR=str(work / "cache"))
    assert own.returncode == 0, own.stderr
    caches = sorted(c["env"]["TRITON_CACHE_DIR"] for c in own.children)
    assert caches == [str(work / "s" / f"w{i}" / ".triton_cache") for i in (0, 1)]
    assert own.measurement["env"]["TRITON_CACHE_DIR"] == str(work / "cache")


@pytest.mark.parametrize(
    "opts, env, reason",
    [
        # It says the harness is what it lacks (issue 42).
        ((), {}, "no GPU count (--gpus or PARALLEL_WARMUP_GPUS), and every visible GPU is the count only where the "
                 "harness runs in COMMAND (warmup_harness is not installed for"),
        ((), {"PARALLEL_WARMUP_GPUS": "x2"}, "not a whole number"),
        (("--gpus", "1"), {}, "below 2"),
        ((), {"PARALLEL_WARMUP_GPUS": "0"}, "below 2"),
        (("--gpus", "4"), {"FLAGGEMS_PERF_WARMUP_WORKER": "1"}, "warmup child"),
        (("--gpus", "4", "--devices", "0,1"), {"FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR": "@replay"},
         "already pinned"),
        (("--gpus", "4", "--devices", "0"), {}, "only 1 visible GPU"),
        # CUDA's -1 hides every device: none is visible, not "only 1" (issue 29).
        (("--gpus", "4"), {"CUDA_VISIBLE_DEVICES": "-1"},
         'CUDA_VISIBLE_DEVICES="-1" hides every device: a negative index ends the list, so none is visible'),
    ],
)
def test_each_skip_rule_says_why_and_runs_the_command_unchanged(work, opts, env, reason):
    if env.get("FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR") == "@replay":
        replay = work / "replay"
        replay.mkdir()
        (replay / "mm.json").write_text("{}")
        env = {"FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR": str(replay), "WARMUP_FIXTURE_REPLAY_MISS": "sweep"}
    run = warmup(work, *opts, **env)
    lines = run.lines()
    assert len(lines) == 1 and reason in lines[0] and "skipping" in lines[0], run.stderr
    [session] = run.sessions
    assert session["env"]["FLAGGEMS_PERF_WARMUP_WORKER"] == env.get("FLAGGEMS_PERF_WARMUP_WORKER")
    assert session["argv"][-2:] == ["--shape_file", str(EXAMPLE)]
    assert scratch_folders(work) == []


# The script's own parser (warmup-plan's clap) refuses them, named as warmup's (issue 26: a bad
# option value is exit 2, an unknown option is called one).
@pytest.mark.parametrize("opts, needle", [
    (("--strategy", "bogus"), "invalid value 'bogus' for '--strategy"),
    (("--cost-model", "bogus"), "invalid value 'bogus' for '--cost-model"),
    (("--overhead", "-1"), "warmup: error: invalid value '-1' for '--overhead"),
    (("--overhead=-1",), "invalid value '-1' for '--overhead"),
    (("--timeout", "abc"), "invalid value 'abc' for '--timeout"),
    (("--grace", "-1"), "warmup: error: invalid value '-1' for '--grace"),
    (("--max-log", "1.5M"), "invalid value '1.5M' for '--max-log"),
    (("--devices", ",,"), '--devices ",,": device 1 is empty'),
    (("--backend", "bogus"), '--backend "bogus": known backends are'),
    (("--gpus", "many"), "invalid value 'many' for '--gpus"),
    # Issue 29's messages: a negative count is a bad value, not an unknown option; the range of
    # seconds, not Rust's Duration error; a device token is one word.
    (("--gpus", "-1"), "invalid value '-1' for '--gpus <N>': \"-1\": give a whole number, 0 or more"),
    (("--timeout", "-1"), "\"-1\": give a number of seconds above 0, at most 1e9"),
    (("--grace", "1e300"), "\"1e300\": give a number of seconds above 0, at most 1e9"),
    (("--devices", "a b,c"), '--devices "a b,c": device 1 ("a b") holds \' \'; a device token is one word'),
    (("--devices", "0\n1"), '--devices "0\\n1": device 1 ("0\\n1") holds \'\\n\''),
    (("--bogus",), "warmup: unknown option '--bogus'"),
    (("--by-key", "--devices", "0,0"), "device 0 is listed twice"),
])
def test_a_bad_option_passed_to_a_tool_is_a_usage_error_before_anything_runs(work, opts, needle):
    run = warmup(work, "--gpus", "2", *(("--devices", "0,1") if "--devices" not in opts else ()), *opts)
    assert run.returncode == 2, run.stderr
    assert needle in run.stderr, run.stderr
    assert "run 'warmup --help' for usage" in run.stderr, run.stderr
    assert run.stderr.count("--help") == 1, "one hint, not clap's as well"
    assert "Duration" not in run.stderr and "unknown option '-1'" not in run.stderr, run.stderr
    assert run.sessions == [] and scratch_folders(work) == [], run.stderr


def test_no_shape_file_and_a_missing_one_skip(work):
    run = warmup(work, "--gpus", "2", "--devices", "0,1", command=[sys.executable, "-c", "print('ran')"])
    assert run.returncode == 0 and run.stdout == "ran\n"
    assert "no --shape_file" in run.lines()[0]
    # A shape file that is not there is named as missing (issue 26).
    run = warmup(work, "--gpus", "2", "--devices", "0,1", shape_file=work / "missing.yaml")
    assert f"--shape_file {work / 'missing.yaml'}: no such file; skipping" in run.lines()[0], run.stderr


def test_the_equals_spelling_of_shape_file_is_honoured(work):
    cmd = bench_command(EXAMPLE)[:-2] + [f"--shape_file={EXAMPLE}"]
    run = warmup(work, "--gpus", "2", "--devices", "0,1", command=cmd,
                 FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(work / "rec"))
    assert run.returncode == 0, run.stderr
    assert len(run.children) == 2
    for child in run.children:
        assert not any(a.startswith("--shape_file=") for a in child["argv"])


def test_an_unreadable_shape_file_skips(work):
    bad = work / "bad.yaml"
    bad.write_text("mm:\n  shapes: [[1, 2]\n")
    run = warmup(work, "--gpus", "2", "--devices", "0,1", shape_file=bad)
    assert f"cannot read shapes from {bad} (see above); skipping" in run.stderr, run.stderr
    # No --costs given: the line names none (issue 29).
    assert "--costs" not in run.stderr, run.stderr
    # The plain run went ahead, and the harness itself tripped on the same file.
    assert run.returncode != 0 and "error during collection" in run.stdout


def test_a_single_shape_skips(work):
    one = work / "one.yaml"
    one.write_text("mm:\n  shapes:\n    - [8, 8]\n")
    run = warmup(work, "--gpus", "2", "--devices", "0,1", shape_file=one)
    assert any("fewer than 2 shapes" in ln for ln in run.lines()), run.stderr
    assert run.returncode == 0 and len(run.sessions) == 1


def test_shards_are_capped_by_devices_and_shapes(work):
    run = warmup(work, "--gpus", "8", "--devices", "0,1,2", FLAGGEMS_PERF_CURRENT_OP="addmm",
                 FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(work / "rec"))
    assert run.returncode == 0, run.stderr
    # addmm overrides the merged list with its own three shapes: three shards of one.
    assert sorted(len(c["shapes"]) for c in run.children) == [1, 1, 1]
    assert run.measurement["shapes"] == [[64, 64, 64], [1024, 1024, 1024], [4096, 4096, 4096]]


def test_a_failed_shard_is_named_with_its_log_and_its_keys_are_swept_live(work):
    # round-robin puts the failing shape in w1 (a record folder's history makes lpt the default)
    run = warmup(work, "--gpus", "4", "--devices", "0,1,2,3", "--strategy", "round-robin",
                 FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(work / "rec"),
                 WARMUP_FIXTURE_FAIL_SHAPES="128x256x64", WARMUP_FIXTURE_REPLAY_MISS="sweep")
    assert run.returncode == 0, run.stderr
    warning = [ln for ln in run.lines() if "WARNING shard(s)" in ln]
    assert warning and "w1" in warning[0] and "worker.log" in warning[0], run.stderr
    [scratch] = scratch_folders(work)
    assert "injected failure" in (scratch / "w1" / "worker.log").read_text(), "the named log is kept"
    measured = run.measurement
    assert measured["mode"] == "replay" and measured["swept"] >= 1


def warned(work: Path, gpus: int, words: str, **env: str) -> tuple[Run, str, Path]:
    """A run on `gpus` devices recording into work/rec, which must exit 0 and say `words` in a line:
    the run, the first such line, and the run's one scratch folder."""
    run = warmup(work, "--gpus", str(gpus), "--devices", ",".join(map(str, range(gpus))),
                 FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(work / "rec"), **env)
    assert run.returncode == 0, run.stderr
    said = [ln for ln in run.lines() if words in ln]
    assert said, run.stderr
    [scratch] = scratch_folders(work)
    return run, said[0], scratch


def test_nothing_recovered_falls_back_to_the_plain_run_and_keeps_the_logs(work):
    run, fallback, scratch = warned(work, 2, "no configs recovered", WARMUP_FIXTURE_CRASH="1")
    assert str(scratch) in fallback
    assert (scratch / "w0" / "worker.log").exists()
    measured = run.measurement
    assert measured["mode"] == "record"
    assert measured["env"]["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"] == str(work / "rec")


def test_conflicting_winners_warn_and_point_at_the_conflict_list(work):
    _, warning, scratch = warned(work, 4, "different winners", WARMUP_FIXTURE_INTERFERENCE="1")
    listed = json.loads((scratch / "conflicts.json").read_text())
    assert listed and all(c["kernel"] == "mm_tail" for c in listed)
    assert str(scratch / "conflicts.json") in warning


def test_paths_with_spaces_work_end_to_end(work):
    spaced = work / "a dir with spaces"
    spaced.mkdir()
    shapes = spaced / "my shapes.yaml"
    shapes.write_text(EXAMPLE.read_text())
    records = spaced / "rec ords"
    run = warmup(work, "--gpus", "2", "--devices", "0,1", "--scratch", str(spaced / "scr atch"),
                 shape_file=shapes, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(records))
    assert run.returncode == 0, run.stderr
    assert (records / "mm.json").is_file()
    assert run.measurement["env"]["FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR"] == str(records)


def test_the_measurement_exit_status_is_the_commands(work):
    run = warmup(work, "--gpus", "2", "--devices", "0,1", FLAGGEMS_PERF_CURRENT_OP="nosuchop",
                 command=[sys.executable, "-c", "import sys; sys.exit(7)", "--shape_file", str(EXAMPLE)])
    assert run.returncode == 7
    assert any("cannot read shapes" in ln for ln in run.lines()), run.stderr


def _processes_mentioning(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_mid_sweep_stops_everything_and_the_measurement_never_runs(work, sig, code):
    scratch = work / "scratch-signal"
    trace = work / "trace.jsonl"
    env = clean_env(WARMUP_BIN_DIR=str(BIN_DIR), WARMUP_FIXTURE_TRACE=str(trace),
                    FLAGGEMS_PERF_CURRENT_OP="mm", FLAGGEMS_VENDOR="nvidia",
                    WARMUP_FIXTURE_HANG="ignore-term")
    proc = subprocess.Popen(
        [str(SCRIPT), "--gpus", "2", "--devices", "0,1", "--grace", "1", "--scratch", str(scratch), "--",
         *bench_command(EXAMPLE)],
        env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + HANG
    while len(_processes_mentioning(str(scratch / "w"))) < 2:
        assert time.monotonic() < deadline, "the sweep children never started"
        time.sleep(0.1)
    time.sleep(1.0)  # let pytest install the SIGTERM-ignoring handler
    proc.send_signal(sig)
    try:
        _, stderr = proc.communicate(timeout=HANG)
    finally:
        proc.kill()
    assert proc.returncode == code, stderr
    assert _processes_mentioning(str(scratch / "w")) == []
    assert not trace.exists() or all(
        json.loads(ln)["env"]["FLAGGEMS_PERF_WARMUP_WORKER"] == "1" for ln in trace.read_text().splitlines())
    assert "measurement does not run" in stderr


@pytest.mark.parametrize("target", ["bench", "measure"])
def test_the_readme_makefile_warms_up_then_measures_replaying(work, target):
    trace = work / "trace.jsonl"
    env = clean_env(PATH=f"{BIN_DIR}:{ROOT / 'scripts'}:{os.environ['PATH']}",
                    WARMUP_FIXTURE_TRACE=str(trace), WARMUP_FIXTURE_SWEEP_SECONDS="0",
                    FLAGGEMS_VENDOR="nvidia", TMPDIR=str(work))
    records, scratch = work / "records", work / "scratch"
    make = subprocess.run(
        ["make", "-s", "-f", str(ROOT / "examples" / "bench.mk"), target, "GPUS=2", "DEVICES=0,1",
         f"BENCH={sys.executable} -m pytest -q -p no:cacheprovider {HARNESS}",
         f"SHAPES={EXAMPLE}", f"RECORDS={records}", f"SCRATCH={scratch}"],
        cwd=work, env=env, capture_output=True, text=True, timeout=HANG)
    assert make.returncode == 0, make.stdout + make.stderr
    # Without warmup_harness the measurement is not started with `-p warmup_harness` (issue 42).
    assert "ERROR" not in make.stdout + make.stderr and "running COMMAND again" not in make.stderr, make.stderr
    run = Run(make, trace)
    assert len(run.children) == 2
    measured = run.measurement
    assert measured["mode"] == "replay" and measured["swept"] == 0
    assert measured["env"]["FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR"] == str(records)
    assert (records / "mm.json").is_file()


def test_the_readme_cpu_example_sweeps_without_an_error_and_its_rerun_reuses_the_record(work):
    """Issue 42: the README's CPU example, bench.mk's default benchmark (real Triton autotuners on
    a stubbed device, the clone's harness), run twice as the README gives it: the first run sweeps
    and measures with no ERROR line, the second reuses the record, sweeping nothing."""
    env = clean_env(PATH=f"{BIN_DIR}:{ROOT / 'scripts'}:{os.environ['PATH']}", FLAGGEMS_VENDOR="nvidia",
                    TMPDIR=str(work), HOME=str(work / "home"), WARMUP_HARNESS_DEVICE_LOCK_DIR=str(work / "locks"))
    block = README_TEXT.split("### A Makefile", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [ln.split("#")[0].strip() for ln in block.splitlines() if "make -f examples/bench.mk bench" in ln]
    assert len(commands) == 2 and commands[0] == commands[1], block
    command = commands[0].replace("examples/bench.mk", str(ROOT / "examples" / "bench.mk"))
    runs = [subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=HANG)
            for _ in range(2)]
    for run in runs:
        assert run.returncode == 0 and "ERROR" not in run.stdout + run.stderr, run.stdout + run.stderr
    first, again = (run.stderr for run in runs)
    assert "sweep done in" in first and "op mm: replayed" in first, first
    assert "answers op mm for" in again and "reusing it" in again and "sweep done" not in again, again
    assert "warmup-spawn" not in again and "tuned 0" in again and "of tuning" not in again, again


# --- stops, locks and messages that drive the script with plain shell children ------------------

def start_sweep(work: Path, child: str, *opts: str, **env) -> subprocess.Popen:
    """scripts/warmup over two `sh -c CHILD WORK --shape_file examples/shapes.yaml` children, in
    a session of its own as a terminal's foreground job is. CHILD's $0 is WORK; the measurement
    (no FLAGGEMS_PERF_WARMUP_WORKER) runs it too."""
    full_env = clean_env(WARMUP_BIN_DIR=str(BIN_DIR), FLAGGEMS_PERF_CURRENT_OP="mm",
                         FLAGGEMS_VENDOR="nvidia", TMPDIR=str(work), **env)
    return subprocess.Popen(
        [str(SCRIPT), "--gpus", "2", "--devices", "0,1", *opts, "--",
         "sh", "-c", child, str(work), "--shape_file", str(EXAMPLE)],
        env=full_env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)


# The measurement only notes that it ran; each sweep child notes its pid, then waits.
MEASURED = '[ -n "$FLAGGEMS_PERF_WARMUP_WORKER" ] || { echo $$ >> "$0/measured"; exit 0; }\n'


def pids_in(path: Path) -> list[int]:
    try:
        return [int(x) for x in path.read_text().split()]
    except FileNotFoundError:
        return []


def wait_for(predicate, what: str, timeout: float = HANG) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def live(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def finish(proc: subprocess.Popen, pids: list[int], timeout: float = HANG) -> tuple[str, list[int]]:
    """Waits for the script; returns its stderr and the pids still alive after a settling
    time, which it then kills, so that a failing test leaves nothing behind."""
    try:
        _, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    deadline = time.monotonic() + HANG
    while any(live(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in pids if live(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    return err, left


IGNORES_TERM = MEASURED + '''trap 'echo $$ >> "$0/terms"' TERM
echo $$ >> "$0/pids"
while :; do sleep 0.1; done
'''


def test_one_ctrl_c_to_the_group_gives_the_children_their_grace(work):
    """A terminal's Ctrl-C reaches every process of the foreground group: one SIGINT to the
    script's group is one stop, SIGTERM now and SIGKILL only after the grace."""
    grace = 6
    proc = start_sweep(work, IGNORES_TERM, "--grace", str(grace))
    wait_for(lambda: len(pids_in(work / "pids")) == 2, "the sweep children")
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    err, left = finish(proc, pids_in(work / "pids"))
    elapsed = time.monotonic() - t0
    assert not left, f"processes left behind: {left}"
    assert proc.returncode == 130, err
    assert sorted(pids_in(work / "terms")) == sorted(pids_in(work / "pids")), "SIGTERM first"
    assert elapsed >= grace - 0.5, f"SIGKILL after {elapsed:.1f}s, before the {grace}s grace\n{err}"
    assert err.count("got SIGINT") == 1 and "got SIGINT again" not in err, err
    assert not (work / "measured").exists()


def test_a_second_ctrl_c_skips_the_grace(work):
    grace = 3600  # beyond the hang guard: a second Ctrl-C that did not skip it fails the test
    proc = start_sweep(work, IGNORES_TERM, "--grace", str(grace))
    wait_for(lambda: len(pids_in(work / "pids")) == 2, "the sweep children")
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    wait_for(lambda: len(set(pids_in(work / "terms"))) == 2, "SIGTERM to reach the children")
    os.killpg(proc.pid, signal.SIGINT)
    err, left = finish(proc, pids_in(work / "pids"))
    assert not left, f"processes left behind: {left}"
    assert proc.returncode == 130, err
    assert time.monotonic() - t0 < grace, err
    assert "got SIGINT again: killing every shard now" in err, err


def test_a_sigkilled_script_is_a_sigkilled_spawner_and_leaves_no_process(work):
    """After sharding the script's process is warmup-spawn --measure (it execs it), so a kill of
    the script is a kill of the spawner: no grace, but its watchdog leaves nothing behind."""
    child = MEASURED + '''trap 'echo $$ >> "$0/terms"; exit 0' TERM
echo $$ >> "$0/pids"
while :; do sleep 0.1; done
'''
    proc = start_sweep(work, child, "--grace", "30")
    wait_for(lambda: len(pids_in(work / "pids")) == 2, "the sweep children")
    spawner = parent_of(pids_in(work / "pids")[0])
    proc.kill()
    err, left = finish(proc, pids_in(work / "pids") + [spawner])
    assert spawner == proc.pid, "the script execs warmup-spawn"
    assert not left, f"processes left behind: {left}"
    assert not (work / "measured").exists()


def parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2:].split()[1])


def test_a_sigkilled_spawner_is_a_stop_and_leaves_no_process(work):
    child = MEASURED + '''for i in 1 2 3; do sleep 300 & echo $! >> "$0/pids"; done
setsid sleep 300 & echo $! >> "$0/pids"
echo $$ >> "$0/leaders"
wait
'''
    proc = start_sweep(work, child)
    wait_for(lambda: len(pids_in(work / "pids")) == 8 and len(pids_in(work / "leaders")) == 2,
             "the sweep children and theirs")
    leaders = pids_in(work / "leaders")
    spawner = parent_of(leaders[0])
    os.kill(spawner, signal.SIGKILL)
    err, left = finish(proc, pids_in(work / "pids") + leaders)
    assert not left, f"processes left behind: {left}"
    # The script ends by exec'ing warmup-spawn --measure: the spawner is the script's process.
    assert spawner == proc.pid and proc.returncode == -signal.SIGKILL, err
    assert not (work / "measured").exists()


def test_a_scratch_in_use_is_refused_before_anything_is_touched(work):
    scratch = work / "shared scratch"
    child = MEASURED + 'echo $$ >> "$0/pids"; while [ ! -e "$0/go" ]; do sleep 0.1; done\n'
    first = start_sweep(work, child, "--scratch", str(scratch))
    wait_for(lambda: len(pids_in(work / "pids")) == 2, "the first run's children")
    plan = scratch / "plan.json"
    before = {p: p.stat().st_mtime_ns for p in scratch.rglob("*") if p.is_file()}
    second = subprocess.run(
        [str(SCRIPT), "--gpus", "2", "--devices", "0,1", "--scratch", str(scratch), "--",
         "sh", "-c", child, str(work), "--shape_file", str(EXAMPLE)],
        env=clean_env(WARMUP_BIN_DIR=str(BIN_DIR), FLAGGEMS_PERF_CURRENT_OP="mm",
                      FLAGGEMS_VENDOR="nvidia"),
        cwd=work, capture_output=True, text=True, timeout=HANG)
    after = {p: p.stat().st_mtime_ns for p in scratch.rglob("*") if p.is_file()}
    (work / "go").touch()
    err, left = finish(first, pids_in(work / "pids"))
    assert not left
    assert second.returncode == 2, second.stderr
    # warmup-spawn --lock-scratch took the lock for the first run's script, and refuses the second.
    assert f"{scratch}: this scratch folder is in use by another run (pid {first.pid} holds" in second.stderr
    assert len(pids_in(work / "pids")) == 2, "the second run started no child"
    assert plan in before and after == before, "the second run touched the scratch"
    assert first.returncode == 0, err


def test_children_that_record_nothing_are_blamed_on_a_missing_harness(work):
    run = warmup(work, "--gpus", "2", "--devices", "0,1",
                 command=[sys.executable, "-c", "print('ran')", "--shape_file", str(EXAMPLE)])
    assert run.returncode == 0 and run.stdout == "ran\n", run.stderr
    [line] = [ln for ln in run.lines() if "no configs recovered" in ln]
    assert "2 shard(s) ran to the end but none wrote a record" in line, line
    assert "pip install ./harness" in line and "-p warmup_harness" in line, line


def test_entry_names_the_key_that_holds_the_shapes(work):
    helped = subprocess.run([tool("shard"), "--help"], capture_output=True, text=True).stdout
    if "--entry" not in helped:
        pytest.skip("this warmup-shard has no --entry yet")
    shapes = work / "blas.yaml"
    shapes.write_text("BlasBenchmark:\n  shapes:\n    - [1, 2]\n    - [3, 4]\n    - [5, 6]\n")
    child = MEASURED + 'echo "$2" >> "$0/shards"\n'
    run = warmup(work, "--gpus", "2", "--devices", "0,1", "--entry", "BlasBenchmark",
                 command=["sh", "-c", child, str(work), "--shape_file", str(shapes)])
    assert run.returncode == 0, run.stderr
    assert len((work / "shards").read_text().split()) == 2, run.stderr
    assert any("sweeping on 2 devices" in ln for ln in run.lines()), run.stderr


@pytest.mark.parametrize("opts, split", [((), ("lpt", "robust")),
                                          (("--strategy", "round-robin"), ("round-robin", None))])
def test_with_nothing_measured_the_split_is_lpt_by_the_robust_model_unless_a_strategy_is_chosen(
        work, opts, split):
    # No record folder: no history to balance by, so the model that keeps every cost-follows-size
    # profile within 0.85 of ideal (BENCHMARKS.md, "No history"); round-robin only when asked.
    run = warmup(work, "--gpus", "2", "--devices", "0,1", "--keep", *opts)
    assert run.returncode == 0, run.stderr
    [scratch] = scratch_folders(work)
    plan = json.loads((scratch / "plan.json").read_text())
    assert (plan["strategy"], plan.get("cost_source")) == split, plan


def test_strategy_and_costs_reach_warmup_shard_and_a_bad_cost_file_skips(work):
    costs = work / "costs.json"
    # The largest shape costs more than all the others: LPT gives it a device of its own.
    costs.write_text(json.dumps({"mm": {json.dumps(s, separators=(",", ":")): 1.0 + 20 * (i == 11)
                                        for i, s in enumerate(SHAPES_12)}}))
    run = warmup(work, "--gpus", "2", "--devices", "0,1", "--keep", "--strategy", "lpt",
                 "--costs", str(costs), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(work / "rec"))
    assert run.returncode == 0, run.stderr
    assert "(lpt)" in run.stderr and "expected cost per shard (file)" in run.stderr, run.stderr
    [scratch] = scratch_folders(work)
    plan = json.loads((scratch / "plan.json").read_text())
    assert (plan["strategy"], plan["cost_source"]) == ("lpt", "file")
    assert [s["shapes"] for s in plan["shards"]] == [[11], list(range(11))]
    assert [s["expected_cost"] for s in plan["shards"]] == [21.0, 11.0]
    assert len(run.children) == 2 and run.measurement["mode"] == "replay", run.stderr

    costs.write_text("{not json")
    again = work / "again"
    again.mkdir()
    run = warmup(again, "--gpus", "2", "--devices", "0,1", "--strategy", "lpt", "--costs",
                 str(costs))
    assert str(costs) in run.stderr, run.stderr
    assert any(f"or the --costs file {costs} (see above)" in ln for ln in run.lines()), run.stderr
    assert run.returncode == 0 and len(run.sessions) == 1 and not run.children, run.stderr


def test_on_a_terminal_the_sweep_shows_its_live_view(work):
    """warmup-spawn runs in a process group of its own under the script; on the script's
    terminal it still draws its live lines."""
    env = clean_env(WARMUP_BIN_DIR=str(BIN_DIR), FLAGGEMS_PERF_CURRENT_OP="mm",
                    FLAGGEMS_VENDOR="nvidia", TMPDIR=str(work))
    code, screen = on_a_terminal(
        [str(SCRIPT), "--gpus", "2", "--devices", "0,1", "--", "sh", "-c",
         MEASURED + "sleep 0.6", str(work), "--shape_file", str(EXAMPLE)], env, cwd=work)
    assert code == 0, screen
    assert "\x1b[2F\x1b[J" in screen and "running" in screen, screen
    assert "started on device" not in screen, screen


# --- deciding from the record folder's history (docs/CONTRACT.md, "Deciding from history") ------

def triton_version() -> str:
    """Triton's version as the benchmark's Python (this one) imports it."""
    return subprocess.run([sys.executable, "-c", "import triton; print(triton.__version__)"],
                          capture_output=True, text=True, check=True, timeout=HANG).stdout.strip()


def test_a_history_predicting_no_saving_runs_plain_with_both_figures_and_always_sweeps(work):
    from test_history import HEAVY, driver_probe, history

    records = work / "records"
    records.mkdir()
    history(records, **HEAVY, triton=triton_version())
    env = {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(records),
           "WARMUP_PROBE_ROOT": str(driver_probe(work))}
    for folder in ("plain", "always"):
        (work / folder).mkdir()
    # Two children on one GPU: the history predicts their timing serialized, no 10% saved. COMMAND
    # is the pytest script, so its Python (asked for Triton's version) is the one its shebang names.
    pytest_script = Path(sys.executable).parent / "pytest"
    command = [str(pytest_script), *bench_command(EXAMPLE)[3:]]
    run = warmup(work / "plain", "--gpus", "2", "--devices", "0,0", command=command, **env)
    assert run.returncode == 0, run.stderr
    lines = run.lines()
    assert len(lines) == 1 and "skipping" in lines[0], run.stderr
    assert re.search(rf"the history in {re.escape(str(records))} predicts [0-9.]+ s with the warmup "
                     r"against [0-9.]+ s plain", lines[0]), lines[0]
    assert "warmup-costs" not in run.stderr, "its line is the script's own"
    [session] = run.sessions
    assert session["env"]["FLAGGEMS_PERF_WARMUP_WORKER"] is None
    assert scratch_folders(work / "plain") == []

    always = warmup(work / "always", "--gpus", "2", "--devices", "0,0", "--always", **env)
    assert always.returncode == 0, always.stderr
    assert len(always.children) == 2 and always.measurement["mode"] == "replay", always.stderr
    assert not any("predicts" in ln for ln in always.lines()), always.stderr


def test_a_record_folders_history_balances_the_split_and_each_sweep_keeps_its_costs(work):
    from test_history import H200, driver_probe, sidecar

    records = work / "records"
    env = {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(records),
           "WARMUP_PROBE_ROOT": str(driver_probe(work))}
    for folder in ("first", "second", "third"):
        (work / folder).mkdir()
    first = warmup(work / "first", "--gpus", "2", "--devices", "0,1", **env)
    assert first.returncode == 0, first.stderr
    kept = json.loads((records / "mm.costs.json").read_text())
    assert len(kept["mm"]) == len(SHAPES_12), kept
    # The sidecar the real harness would have left, naming this run's Triton and GPU model.
    sidecar(records, triton=triton_version(), device=H200)
    scratch = work / "s"
    second = warmup(work / "second", "--gpus", "2", "--devices", "0,1", "--always", "--keep",
                    "--scratch", str(scratch), **env)
    assert second.returncode == 0, second.stderr
    assert json.loads((scratch / "plan.json").read_text())["cost_source"] == "file", second.stderr
    assert "balancing by the costs its last sweep measured" in second.stderr, second.stderr

    given = work / "given.json"
    given.write_text(json.dumps({"mm": kept["mm"]}))
    third = warmup(work / "third", "--gpus", "2", "--devices", "0,1", "--always", "--keep",
                   "--scratch", str(work / "s3"), "--strategy", "lpt", "--costs", str(given), **env)
    assert third.returncode == 0 and len(third.children) == 2, third.stderr
    assert "its last sweep measured" not in third.stderr and "usable history" not in third.stderr, \
        "--costs is used instead of the history"


# --- the planner's decisions end to end (docs/CONTRACT.md, "warmup-plan") -----------------------

def fake_harness(work: Path) -> Path:
    """A `warmup_harness` package folder for PYTHONPATH: with -p warmup_harness, the Python the
    benchmark runs has the harness, as warmup-plan reads it from the path (nothing is started)."""
    folder = work / "harness_path"
    (folder / "warmup_harness").mkdir(parents=True, exist_ok=True)
    (folder / "warmup_harness" / "__init__.py").write_text("")
    return folder


def harness_command(shape_file=EXAMPLE) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "warmup_harness",
            str(HARNESS), "--shape_file", str(shape_file)]


def plan(work: Path, *opts: str, command: list[str], **env: str) -> dict:
    """What warmup-plan decides for scripts/warmup OPTS -- COMMAND, as one JSON object."""
    env.setdefault("FLAGGEMS_PERF_CURRENT_OP", "mm")
    env.setdefault("FLAGGEMS_VENDOR", "nvidia")
    proc = subprocess.run([tool("plan"), "--format", "json", *opts, "--", *command], cwd=work,
                          env=clean_env(TMPDIR=str(work), **env), capture_output=True, timeout=HANG)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def complete_record(work: Path, records: Path, command: list[str], record=None, **env: str) -> None:
    """A record folder whose sidecar names this Triton, the driver probe's H200 and, as the last run
    that finished with nothing missing, this COMMAND's run (its `complete_for`)."""
    from test_history import H200, sidecar

    records.mkdir(exist_ok=True)
    (records / "mm.json").write_text(json.dumps(record if record is not None else {"mm_main": {}}))
    signature = plan(work, "--gpus", "2", command=command, **env)["signature"]
    sidecar(records, triton=triton_version(), device=H200, complete_for=signature)


def test_a_rerun_with_a_full_record_starts_no_child_and_reuses_it_once(work):
    from test_history import driver_probe

    records = work / "records"
    env = {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(records),
           "WARMUP_PROBE_ROOT": str(driver_probe(work)), "PYTHONPATH": str(fake_harness(work))}
    complete_record(work, records, harness_command(), **env)
    run = warmup(work, "--gpus", "2", "--devices", "0,1", command=harness_command(), **env)
    assert run.returncode == 0, run.stderr
    [line] = run.lines()
    assert f"the record in {records} answers" in line and "reusing it" in line, line
    [session] = run.sessions
    assert session["env"]["FLAGGEMS_PERF_WARMUP_WORKER"] is None, "no child ran"
    assert session["env"]["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"] == str(records)
    assert scratch_folders(work) == []
    # Without the harness in COMMAND's Python the record is not reused: the sweep runs, as before.
    (work / "without").mkdir()
    env.pop("PYTHONPATH")
    swept = warmup(work / "without", "--gpus", "2", "--devices", "0,1", **env)
    assert swept.returncode == 0 and len(swept.children) == 2, swept.stderr


def test_a_changed_test_file_conftest_or_default_shape_file_makes_the_record_no_longer_complete(work):
    """Issue 41: the signature covers what decides the keys, by content: the test file COMMAND
    names, the conftests above it and, with no --shape_file, the core_shapes.yaml beside it (what
    FlagGems' benchmark reads by default). A change to any is no reuse; the same bytes again are."""
    from test_history import driver_probe

    bench = work / "repo" / "benchmark"
    bench.mkdir(parents=True)
    files = {work / "repo" / "pytest.ini": "[pytest]\n", work / "repo" / "conftest.py": "# root\n",
             bench / "conftest.py": "# bench\n", bench / "test_mm_perf.py": "def test_mm(): pass\n",
             bench / "core_shapes.yaml": "mm: {shapes: [[1, 2, 3]]}\n"}
    for path, text in files.items():
        path.write_text(text)
    records = work / "records"
    env = {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(records), "WARMUP_PROBE_ROOT": str(driver_probe(work)),
           "PYTHONPATH": str(fake_harness(work))}
    command = [sys.executable, "-m", "pytest", "-p", "warmup_harness", str(bench / "test_mm_perf.py"), "-m", "mm"]
    complete_record(work, records, command, **env)
    assert plan(work, "--gpus", "2", command=command, **env)["decision"] == "reuse"
    (work / "repo" / "notes.txt").write_text("nothing pytest reads")
    for path, text in files.items():
        path.write_text(text + "# changed\n")
        decided = plan(work, "--gpus", "2", command=command, **env)
        assert decided["decision"] != "reuse" and "no complete run" in decided["reason"], (path, decided)
        path.write_text(text)  # touched back to the same bytes: complete again
        assert plan(work, "--gpus", "2", command=command, **env)["decision"] == "reuse", path


def test_flaggems_53s_test_file_of_one_op_names_the_op_and_its_default_shape_file_is_not_named(work):
    """Issue 42: FlagGems 5.3 has one test file per op and a conftest whose `--shape_file`
    defaults to core_shapes.yaml. Without -m the op is the file's stem less `test_`; the default
    shape file is not one COMMAND names, so the run is by key as with 5.0's test_blas_perf.py."""
    bench = work / "benchmark"
    bench.mkdir()
    (bench / "conftest.py").write_text(
        "def pytest_addoption(parser):\n    parser.addoption('--shape_file', default='core_shapes.yaml')\n")
    (bench / "core_shapes.yaml").write_text("mm: {shapes: [[1, 2, 3], [4, 5, 6]]}\n")
    (bench / "test_mm.py").write_text("def test_mm(): pass\n")
    env = {"FLAGGEMS_PERF_CURRENT_OP": "", "FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(work / "records"),
           "PYTHONPATH": str(fake_harness(work))}
    pytest_ = [sys.executable, "-m", "pytest", "-p", "warmup_harness"]
    for test in ["benchmark/test_mm.py", "benchmark/test_mm.py::test_mm"]:
        decided = plan(work, "--devices", "0,1", command=[*pytest_, test], **env)
        assert decided["op"] == "mm" and decided["reason"].startswith("op mm (from the test file"), decided
        assert decided["decision"] == "sweep" and decided["by_key"] == "1" and decided["shape_file"] == "", decided
    blas = plan(work, "--devices", "0,1", command=[*pytest_, "benchmark/test_blas_perf.py"], **env)
    assert blas["op"] == "blas_perf", blas
    # FlagGems' own --parallel measures concurrently: the line runs it plain, saying so.
    own = plan(work, "--devices", "0,1", command=[*pytest_, "benchmark/test_blas_perf_parallel.py", "--parallel", "2"],
               **env)
    assert own["decision"] == "plain" and "FlagGems' own --parallel 2" in own["reason"], own


def test_one_gpu_runs_one_process_that_records_where_the_harness_is(work):
    records = work / "records"
    env = {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(records), "PYTHONPATH": str(fake_harness(work))}
    run = warmup(work, "--gpus", "1", command=harness_command(), **env)
    assert run.returncode == 0, run.stderr
    [line] = run.lines()
    assert "one device, one process" in line and f"into {records}" in line, line
    [session] = run.sessions
    assert session["mode"] == "record" and session["env"]["FLAGGEMS_PERF_WARMUP_WORKER"] is None
    assert (records / "mm.json").is_file(), "the record is published for the next run"
    # The old skip rule holds where the harness is absent.
    (work / "plain").mkdir()
    env.pop("PYTHONPATH")
    plain = warmup(work / "plain", "--gpus", "1", command=harness_command(), **env)
    assert "below 2" in plain.lines()[0] and "skipping" in plain.lines()[0], plain.stderr


@pytest.mark.parametrize("shapes, says", [("mm:\n  shapes:\n    - [8, 8]\n", "fewer than 2 shapes"),
                                          ("mm:\n  shapes: [[1, 2]\n", "cannot read shapes from")])
def test_a_sweep_that_cannot_run_records_in_one_process_resuming_from_the_record_folder(work, shapes, says):
    """Issue 41: where warmup-plan decided a sweep but the script cannot run one (fewer than 2
    shapes to split, shapes it cannot read), COMMAND runs once as `record` runs it where the
    harness is: recording into the folder and resuming from it, so that no key it holds is tuned
    again; --fresh resumes nothing; without the harness COMMAND runs unchanged."""
    shape_file = work / "shapes.yaml"
    shape_file.write_text(shapes)
    records = work / "records"
    env = {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(records), "PYTHONPATH": str(fake_harness(work))}
    command = harness_command(shape_file)
    run = warmup(work, "--gpus", "2", "--devices", "0,1", command=command, **env)
    line = next(ln for ln in run.lines() if says in ln)
    assert f"one process instead, recording into {records} and resuming from it" in line, line
    if says != "fewer than 2 shapes":
        return  # the fixture harness stops at the shape file before it traces its session
    [session] = run.sessions
    assert session["env"]["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"] == str(records)
    assert session["env"]["WARMUP_HARNESS_RESUME_DIR"] == str(records)
    assert session["env"]["WARMUP_HARNESS_SIGNATURE"] == plan(work, "--gpus", "2", command=command, **env)["signature"]
    (work / "fresh").mkdir()
    fresh = warmup(work / "fresh", "--gpus", "2", "--devices", "0,1", "--fresh", command=command, **env)
    [session] = fresh.sessions
    assert session["env"]["WARMUP_HARNESS_FRESH"] == "1" and session["env"]["WARMUP_HARNESS_RESUME_DIR"] is None
    (work / "plain").mkdir()
    env.pop("PYTHONPATH")
    at = command.index("warmup_harness")
    without = command[:at - 1] + command[at + 1:]
    plain = warmup(work / "plain", "--gpus", "2", "--devices", "0,1", command=without, **env)
    line = next(ln for ln in plain.lines() if says in ln)
    assert "one process instead" not in line and line.endswith("skipping"), line
    [session] = plain.sessions
    assert session["env"]["WARMUP_HARNESS_RESUME_DIR"] is None


def test_one_device_made_visible_twice_is_one_device_by_key_too(work):
    """CUDA_VISIBLE_DEVICES=0,0 is one device: --by-key (one child per device) records in one
    process as the run without it does, never a one-child sweep (`--by-key --devices 0,0` is
    refused: test_a_bad_option_passed_to_a_tool_is_a_usage_error_before_anything_runs)."""
    env = {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(work / "records"), "PYTHONPATH": str(fake_harness(work)),
           "CUDA_VISIBLE_DEVICES": "0,0"}
    command = harness_command()[:-2]  # no shape file
    for opts in [(), ("--by-key",), ("--by-key", "--gpus", "2")]:
        decided = plan(work, *opts, command=command, **env)
        assert decided["decision"] == "record", (opts, decided)
        assert "one device (0, listed 2 times)" in decided["reason"], decided["reason"]


def test_race_and_no_race_are_in_the_environment_of_the_process_that_records_and_of_every_sweep_child(work):
    """Racing is the harness's default: scripts/warmup exports WARMUP_HARNESS_RACE only when an
    option says so, over the environment's, the last of the two options winning."""
    env = {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(work / "records"), "PYTHONPATH": str(fake_harness(work))}
    off = warmup(work, "--gpus", "1", "--no-race", command=harness_command(), **env)
    assert off.returncode == 0, off.stderr
    assert [s["env"]["WARMUP_HARNESS_RACE"] for s in off.sessions] == ["0"]
    (work / "sweep").mkdir()
    swept = warmup(work / "sweep", "--gpus", "2", "--devices", "0,1", "--no-race",
                   FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(work / "sweep" / "records"))
    assert swept.returncode == 0 and len(swept.children) == 2, swept.stderr
    assert [c["env"]["WARMUP_HARNESS_RACE"] for c in swept.children] == ["0", "0"]
    for name, opts, extra, want in [("default", (), {}, None),
                                    ("kept", (), {"WARMUP_HARNESS_RACE": "0"}, "0"),
                                    ("over", ("--race",), {"WARMUP_HARNESS_RACE": "0"}, "1"),
                                    ("last", ("--race", "--no-race"), {}, "0")]:
        (work / name).mkdir()
        run = warmup(work / name, "--gpus", "1", *opts, command=harness_command(), **env, **extra)
        assert run.returncode == 0, run.stderr
        assert [s["env"]["WARMUP_HARNESS_RACE"] for s in run.sessions] == [want], name


@pytest.mark.parametrize("command, line", [
    (["nosuchcmd", "--shape_file", str(EXAMPLE)],
     'warmup: COMMAND "nosuchcmd" not found in PATH (or not executable); give its path or fix PATH'),
    (["nosuchcmd"],
     'warmup: COMMAND "nosuchcmd" not found in PATH (or not executable); give its path or fix PATH'),
    (["--shape_file", "x"], 'warmup: COMMAND begins with the option "--shape_file": give the '
                            "benchmark's program first, e.g. -- pytest bench.py --shape_file"),
    (["./bench.py", "--shape_file", str(EXAMPLE)],
     "warmup: COMMAND ./bench.py: not an executable file; check its permissions"),
])
def test_a_command_that_cannot_run_is_one_line_and_127_before_anything_runs(work, command, line):
    """Issue 29: a missing COMMAND sharded, announced a fallback and left a scratch behind; one
    that began with an option got "no --shape_file" and bash's own exec error."""
    (work / "bench.py").write_text("")
    run = warmup(work, "--gpus", "4", "--devices", "0,1,2,3", "--backend", "cuda", command=command)
    assert run.returncode == 127, run.stderr
    assert run.stderr.splitlines() == [line], run.stderr
    assert sorted(p.name for p in work.iterdir()) == ["bench.py"], "nothing made"


def test_without_the_tools_a_command_that_cannot_run_is_one_line_and_127(work):
    scripts = work / "scripts"
    (scripts / "lib").mkdir(parents=True)
    for name in ("warmup", "lib/warmup-common.sh"):
        (scripts / name).write_bytes((ROOT / "scripts" / name).read_bytes())
    (scripts / "warmup").chmod(0o755)
    env = clean_env(WARMUP_BIN_DIR="", PATH="/usr/bin:/bin")
    run = subprocess.run([str(scripts / "warmup"), "--", "nosuchcmd"], env=env, cwd=work,
                         capture_output=True, text=True, timeout=HANG)
    assert run.returncode == 127, run.stderr
    assert run.stderr.splitlines() == [
        'warmup: COMMAND "nosuchcmd" not found in PATH (or not executable); give its path or fix PATH'
    ]
    ran = subprocess.run([str(scripts / "warmup"), "--", "echo", "ran"], env=env, cwd=work,
                         capture_output=True, text=True, timeout=HANG)
    assert (ran.returncode, ran.stdout) == (0, "ran\n"), ran.stderr
    assert "warmup-plan not found" in ran.stderr


@pytest.mark.parametrize("where", ["rec", "rec/sub"])
def test_a_record_folder_or_scratch_that_is_a_file_is_refused_before_anything_runs(work, where):
    """One rule for both (issue 29: a --scratch that was a file printed mkdir's error and ran
    plain with exit 0): exit 2, naming the path and what is there."""
    (work / "rec").write_text("")
    said = (f"{work / 'rec'} is not a folder but a file" if where == "rec"
            else f"{work / 'rec'} is not a folder but a file, so none can be made at {work / where}")
    run = warmup(work, "--gpus", "2", "--devices", "0,1",
                 FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(work / where))
    assert run.returncode == 2 and said in run.stderr, run.stderr
    assert run.sessions == [] and scratch_folders(work) == []
    run = warmup(work, "--gpus", "2", "--devices", "0,1", "--scratch", str(work / where))
    assert run.returncode == 2, run.stderr
    assert f"invalid value '{work / where}' for '--scratch <DIR>': {said}" in run.stderr, run.stderr
    assert "mkdir" not in run.stderr and run.sessions == [] and scratch_folders(work) == []


def test_a_record_folder_with_a_newline_is_carried_whole(work):
    records = work / "rec\nother"
    run = warmup(work, "--gpus", "2", "--devices", "0,1",
                 FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(records))
    assert run.returncode == 0, run.stderr
    assert (records / "mm.json").is_file() and (records / "mm.costs.json").is_file()
    assert not (work / "other").exists() and not (work / "rec").exists()
    assert len(run.children) == 2 and run.measurement["mode"] == "replay"


def test_deciding_starts_no_interpreter(work):
    """The Triton version comes from COMMAND's Python's package metadata: it is never asked."""
    from test_history import HEAVY, driver_probe, history

    records = work / "records"
    records.mkdir()
    history(records, **HEAVY, triton=triton_version())
    log = work / "python.log"
    shim = work / "bin" / "python3"
    shim.parent.mkdir()
    # A Python beside the real one's packages: a venv's pyvenv.cfg names where they are.
    venv = Path(sys.executable).parent.parent
    (work / "pyvenv.cfg").write_text((venv / "pyvenv.cfg").read_text())
    (work / "lib").symlink_to(venv / "lib")
    shim.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{sys.executable}" "$@"\n')
    shim.chmod(0o755)
    command = [str(shim), *bench_command(EXAMPLE)[1:]]
    run = warmup(work, "--gpus", "2", "--devices", "0,0", command=command,
                 FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(records),
                 WARMUP_PROBE_ROOT=str(driver_probe(work)))
    assert run.returncode == 0, run.stderr
    assert "predicts" in run.lines()[0], run.stderr  # the version matched the history's
    assert log.read_text().count("\n") == 1, log.read_text()


@pytest.mark.parametrize("bytes_, says", [
    (b"", "empty file"),
    (b'{"mm_main": {"[1]": {"num_warps"', "cut off"),
    (b"[]", "top level is an array"),
    (b'{"mm_main": {}}\x00', "mm.json:1:"),
    (b'{"mm_main": [1]}', 'kernel "mm_main" holds an array'),
], ids=["empty", "truncated", "a-list", "a-nul", "a-list-bucket"])
def test_a_record_that_is_no_record_never_decides_reuse_and_command_runs(work, bytes_, says):
    from test_history import driver_probe

    records = work / "records"
    env = {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(records),
           "WARMUP_PROBE_ROOT": str(driver_probe(work)), "PYTHONPATH": str(fake_harness(work))}
    complete_record(work, records, harness_command(), **env)
    (records / "mm.json").write_bytes(bytes_)
    decided = plan(work, "--gpus", "2", "--devices", "0,1", command=harness_command(), **env)
    assert decided["decision"] == "sweep", decided
    assert f"the record in {records} is not reused ({records / 'mm.json'}" in decided["reason"], decided
    assert says in decided["reason"], decided
    # One device: the one process records there, its harness setting the file aside (test_harness.py,
    # test_resuming_in_place_sets_aside_a_record_it_cannot_read_and_records_anew).
    one = plan(work, "--gpus", "1", command=harness_command(), **env)
    assert one["decision"] == "record" and one["record_dir"] == str(records), one
    assert "one device, one process" in one["reason"] and says in one["reason"], one
    assert "the harness sets it aside (it resumes in place)" in one["reason"], one


def test_a_record_folder_whose_name_is_not_utf8_is_reused_recorded_and_published_there(work):
    from test_history import driver_probe

    records = Path(os.fsdecode(os.fsencode(work) + b"/rec-\xff"))
    env = {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(records),
           "WARMUP_PROBE_ROOT": str(driver_probe(work)), "PYTHONPATH": str(fake_harness(work))}
    complete_record(work, records, harness_command(), **env)
    reused = warmup(work, "--gpus", "2", "--devices", "0,1", command=harness_command(), **env)
    assert reused.returncode == 0, reused.stderr
    [line] = reused.lines()
    assert "answers" in line and "reusing it" in line, line
    [session] = reused.sessions
    assert session["env"]["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"] == str(records), "no child ran; the folder kept"
    # One device: the one process records into that folder, not into a temporary one.
    fresh = Path(os.fsdecode(os.fsencode(work) + b"/new-\xfe"))
    (work / "one").mkdir()
    one = warmup(work / "one", "--gpus", "1", command=harness_command(),
                 **{**env, "FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(fresh)})
    assert one.returncode == 0, one.stderr
    [session] = one.sessions
    assert session["mode"] == "record" and session["env"]["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"] == str(fresh)
    assert (fresh / "mm.json").is_file() and not list(work.glob("one/parallel-warmup-record.*"))
    # warmup-slurm's plan publishes there too: the folder reaches its record_dir and the split, as
    # the script reads them (eval).
    show = 'eval "$("$0" --format sh --for warmup-slurm "$@")" && printf "%s\\0" "$record_dir" "${shard_argv[@]}"'
    slurm = subprocess.run(["bash", "-c", show, tool("plan"), "--scratch", str(work / "s"), "--shards", "2", "--",
                            *harness_command()], cwd=work, capture_output=True,
                           env=with_stand_in_sbatch(work, clean_env(**env)), timeout=HANG)
    assert slurm.returncode == 0, slurm.stderr
    record_dir, *shard_argv = slurm.stdout.split(b"\0")[:-1]
    assert record_dir == os.fsencode(records)
    assert shard_argv[shard_argv.index(b"--history") + 1] == os.fsencode(records), shard_argv


def test_an_unusable_tmpdir_is_a_fallback_that_runs_the_command_unchanged(work):
    """Whatever the warmup needs a temporary folder for (the sweep's scratch and its tools'
    output), a TMPDIR it cannot use says so and runs COMMAND once, recording into the record
    folder and resuming from it where the harness runs; the one process uses none."""
    run = warmup(work, "--gpus", "2", "--devices", "0,1", command=harness_command(),
                 TMPDIR=str(work / "nonexistent"), PYTHONPATH=str(fake_harness(work)))
    assert run.returncode == 0, run.stderr
    [session] = run.sessions
    assert session["env"]["FLAGGEMS_PERF_WARMUP_WORKER"] is None, "COMMAND ran once, no child"
    line = run.lines()[-1]
    assert "nonexistent" in line and "skipping; one process instead, recording into " in line, run.stderr
    assert session["env"]["WARMUP_HARNESS_RESUME_DIR"] == session["env"]["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"]
    (work / "one").mkdir()
    one = warmup(work / "one", "--gpus", "1", command=harness_command(), TMPDIR=str(work / "nonexistent"),
                 PYTHONPATH=str(fake_harness(work)))
    assert one.returncode == 0 and one.sessions[0]["mode"] == "record", one.stderr


def test_a_publish_that_fails_after_the_sweep_is_said_and_the_measurement_replays_from_the_scratch(work):
    records = work / "records"
    # A folder where the sidecar goes: the plan reads no record there, the sweep runs, and then
    # warmup-publish cannot replace it (root writes through modes; a folder stops it too).
    (records / "mm.meta.json" / "in-the-way").mkdir(parents=True)
    run = warmup(work, "--gpus", "2", "--devices", "0,1", FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(records))
    assert run.returncode == 0, run.stderr
    assert f"warmup-publish: removing {records / 'mm.meta.json'}" in run.stderr, run.stderr  # the error
    [scratch] = scratch_folders(work)
    [said] = [ln for ln in run.lines() if "publishing into the record folder" in ln]
    assert f"record folder {records} failed" in said and str(scratch / "merged") in said, said
    measured = run.measurement
    assert measured["mode"] == "replay" and measured["swept"] == 0, run.stderr
    assert measured["env"]["FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR"] == str(scratch / "merged")
    assert (scratch / "merged" / "mm.json").is_file()
    assert not any("falling back to the normal serial autotune" in ln for ln in run.lines()), run.stderr


@pytest.mark.parametrize("where", ["named", "cache"])
def test_a_complete_record_in_a_folder_this_user_cannot_write_is_replayed_and_said_once(work, where):
    from test_history import driver_probe
    from test_spawn import read_only

    env = {"WARMUP_PROBE_ROOT": str(driver_probe(work)), "PYTHONPATH": str(fake_harness(work)),
           "XDG_CACHE_HOME": str(work / "cache")}
    if where == "named":
        env["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"] = str(work / "records")
    records = Path(plan(work, "--gpus", "2", command=harness_command(), **env)["record_dir"])
    first = warmup(work, "--gpus", "2", "--devices", "0,1", command=harness_command(), **env)
    assert first.returncode == 0 and len(first.children) == 2, first.stderr
    (work / "trace.jsonl").unlink()
    # Its keys, with the sidecar of a complete run (the fixture writes none).
    complete_record(work, records, harness_command(), json.loads((records / "mm.json").read_text()), **env)
    # Another user's folder (umask 022): read-only to this one (a read-only mount, for root).
    run = warmup(work, "--gpus", "2", "--devices", "0,1", command=harness_command(),
                 within=read_only(records, []), **env)
    assert run.returncode == 0, run.stderr + run.stdout
    [line] = run.lines()
    assert f"the record in {records} answers" in line and f"cannot write in {records}" in line, run.stderr
    assert "only read" in line, line
    [session] = run.sessions
    assert session["env"]["FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR"] == str(records), session["env"]
    assert not session["env"]["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"], "nothing is recorded there"
    assert session["env"]["FLAGGEMS_PERF_WARMUP_WORKER"] is None, "no child ran"


def test_a_named_record_folder_this_user_cannot_write_is_said_before_the_sweep_which_publishes_into_the_scratch(work):
    from test_spawn import read_only

    records = work / "records"
    records.mkdir()
    run = warmup(work, "--gpus", "2", "--devices", "0,1", within=read_only(records, []),
                 FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(records))
    assert run.returncode == 0, run.stderr
    opening = run.lines()[0]
    assert "sweeping on 0,1" in opening and f"cannot write in {records}" in opening, opening
    assert "warmup-publish: " not in run.stderr.replace("warmup-publish: wrote", ""), run.stderr
    [scratch] = scratch_folders(work)
    measured = run.measurement
    assert measured["mode"] == "replay" and measured["swept"] == 0, run.stderr
    assert measured["env"]["FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR"] == str(scratch / "merged")
    assert all(c["env"]["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"].endswith("/rec") for c in run.children)
    assert list(records.iterdir()) == []


def test_a_named_record_folder_that_cannot_be_made_is_refused_before_anything_runs(work):
    from test_spawn import read_only

    (work / "ro").mkdir()
    records = work / "ro" / "records"
    run = warmup(work, "--gpus", "2", "--devices", "0,1", within=read_only(work / "ro", []),
                 FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(records))
    assert run.returncode == 2, run.stderr
    assert f"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR={records}: cannot make {records}" in run.stderr, run.stderr
    assert run.sessions == [] and not records.exists()


def test_one_device_on_an_incomplete_record_this_user_cannot_write_replays_what_it_holds_recording_nothing(work):
    from test_spawn import read_only

    records = work / "records"
    records.mkdir()
    (records / "mm.json").write_text('{"mm_main": {"64x64x64": {"BLOCK": 16}}}')
    env = {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(records), "PYTHONPATH": str(fake_harness(work)),
           "FLAGGEMS_PERF_CURRENT_OP": "mm", "FLAGGEMS_VENDOR": "nvidia"}
    show = 'eval "$("$0" --format sh --for warmup "$@")" && env | grep ^FLAGGEMS_PERF_AUTOTUNE_ | sort; echo "$reason"'
    done = subprocess.run([*read_only(records, ["bash", "-c", show, tool("plan"), "--gpus", "1", "--",
                                                *harness_command()])],
                          cwd=work, capture_output=True, text=True, env=clean_env(**env), timeout=HANG)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == ["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=",
                                            f"FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR={records}"], done.stdout
    assert f"cannot write in {records}" in done.stdout and "without being recorded" in done.stdout, done.stdout
