"""scripts/warmup-slurm on a real one-node Slurm cluster (tests/slurm/cluster.py): the sweep as a
job array over the fixture harness, one shard per task on its own (fake) GPU, merged by a
dependent job into exactly what one machine's warmup-spawn run merges; a failed shard re-run
alone replaces only its own outputs. Skipped, saying why, only where Slurm is not installed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from slurm.cluster import Cluster, unavailable
from support import BIN_DIR, HANG, ROOT, clean_env, run_tool

SCRIPT = ROOT / "scripts" / "warmup-slurm"
HARNESS = ROOT / "tests" / "harness" / "test_bench.py"
EXAMPLE = ROOT / "examples" / "shapes.yaml"
# examples/shapes.yaml's third shape of op mm: round-robin over 4 shards puts it in shard 2 (the
# default split is lpt, as scripts/warmup's: the test asks for round-robin to know the shard).
FAILING_SHAPE, FAILING_SHARD = "256x256x256", 2
OUTPUTS = ("rec/mm.json", "worker.log", "status.json")


def bench_command() -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HARNESS),
            "--shape_file", str(EXAMPLE)]


@pytest.fixture(scope="module")
def cluster():
    why = unavailable()
    if why:
        pytest.skip(why)
    c = Cluster(gpus=4)
    c.start()
    try:
        yield c
    finally:
        left = c.stop()
    assert not left, f"processes of the cluster outlived every job and daemon: {left}"


def slurm_env(cluster: Cluster, work: Path, **extra: str) -> dict[str, str]:
    return clean_env(**cluster.env, WARMUP_BIN_DIR=str(BIN_DIR), TMPDIR=str(work),
                     WARMUP_FIXTURE_TRACE=str(work / "trace.jsonl"),
                     WARMUP_FIXTURE_SWEEP_SECONDS="0.01", **extra)


def warmup_slurm(cluster: Cluster, work: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    done = subprocess.run([str(SCRIPT), *args], env=slurm_env(cluster, work, **extra), cwd=work,
                          capture_output=True, text=True, timeout=HANG)
    if done.returncode not in (0, 1, 2, 3):
        pytest.fail(f"warmup-slurm exit {done.returncode}\n{done.stderr}\n{cluster.logs()}")
    return done


def single_machine_merge(work: Path) -> bytes:
    """What warmup-spawn on one machine with 4 devices, then warmup-merge, make of the example."""
    scratch = work / "one-machine"
    env = {"FLAGGEMS_PERF_CURRENT_OP": "mm", "WARMUP_FIXTURE_SWEEP_SECONDS": "0.01"}
    for args in (["shard", "--op", "mm", "--shards", "4", "--out", scratch, EXAMPLE],
                 ["spawn", "--plan", scratch / "plan.json", "--devices", "0,1,2,3", "--backend",
                  "cuda", "--", *bench_command()],
                 ["merge", "--op", "mm", "-o", scratch / "merged.json", scratch]):
        done = run_tool(*args, env=env, cwd=work)
        assert done.returncode == 0, f"{args[0]}: {done.stderr}"
    return (scratch / "merged.json").read_bytes()


def snapshot(scratch: Path, shard: int) -> dict[str, tuple[bytes, int, int]]:
    """Each output of a shard: its bytes, mtime and inode (a rewrite changes one of them)."""
    out = {}
    for name in OUTPUTS:
        path = scratch / f"w{shard}" / name
        st = path.stat()
        out[name] = (path.read_bytes(), st.st_mtime_ns, st.st_ino)
    return out


def job_ids(stdout: str) -> dict[str, str]:
    return dict(line.split() for line in stdout.splitlines())


def test_a_job_array_merges_what_one_machine_merges_and_a_failed_shard_reruns_alone(cluster, tmp_path):
    expected = single_machine_merge(tmp_path)
    scratch, records = tmp_path / "shared", tmp_path / "records"

    first = warmup_slurm(cluster, tmp_path, "--scratch", str(scratch), "--shards", "4", "--op", "mm",
                         "--strategy", "round-robin",
                         "--record-dir", str(records), "--wait", "--", *bench_command(),
                         WARMUP_FIXTURE_FAIL_SHAPES=FAILING_SHAPE)
    assert first.returncode == 1, first.stderr
    assert set(job_ids(first.stdout)) == {"array", "finish"}, first.stdout
    assert f"shard {FAILING_SHARD} failed; log: {scratch}/w{FAILING_SHARD}/worker.log" in first.stderr
    assert f"--rerun {FAILING_SHARD} --scratch {scratch}" in first.stderr, first.stderr
    # The failed shard's record holds its other shapes' configs: merged too.
    assert "merged 2 kernels" in first.stderr, first.stderr
    assert "from the records of 4 of 4 shards (3 finished)" in first.stderr, first.stderr
    assert (scratch / "merged.json").read_bytes() != expected, "shard 2's shape is missing"
    assert (records / "mm.json").read_bytes() == (scratch / "merged.json").read_bytes()

    # Each task's child kept the GPU Slurm gave its task: warmup-spawn did not re-pin it.
    children = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    assert len(children) == 4
    for i in range(4):
        status = json.loads((scratch / f"w{i}" / "status.json").read_text())
        assert "CUDA_VISIBLE_DEVICES" not in status["env"]["set"], status
        [child] = [c for c in children if c["shape_file"] == str(scratch / f"w{i}" / "shapes.yaml")]
        assert child["env"]["CUDA_VISIBLE_DEVICES"] == status["device"] in {"0", "1", "2", "3"}
        assert child["env"]["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"] == str(scratch / f"w{i}" / "rec")

    others = [i for i in range(4) if i != FAILING_SHARD]
    before = {i: snapshot(scratch, i) for i in others}
    failed_log = (scratch / f"w{FAILING_SHARD}" / "worker.log").read_text()
    assert "injected failure" in failed_log

    again = warmup_slurm(cluster, tmp_path, "--rerun", str(FAILING_SHARD), "--scratch", str(scratch),
                         "--wait")
    assert again.returncode == 0, again.stderr
    assert "from the records of 4 of 4 shards (4 finished)" in again.stderr, again.stderr
    for i in others:
        assert snapshot(scratch, i) == before[i], f"shard {i}'s outputs were rewritten"
    status = json.loads((scratch / f"w{FAILING_SHARD}" / "status.json").read_text())
    assert status["exit_code"] == 0 and status["shard"] == FAILING_SHARD
    assert "injected failure" not in (scratch / f"w{FAILING_SHARD}" / "worker.log").read_text()
    assert (scratch / "merged.json").read_bytes() == expected
    assert (records / "mm.json").read_bytes() == expected


# What sbatch would read otherwise: '#' starts a comment in a directive, %j and %a are file-name
# patterns, quotes and backslashes are a directive's quoting.
ODD = "#5 %j %a 'q' \"d\""


def test_odd_characters_in_paths_and_options_reach_slurm_exactly(cluster, tmp_path):
    work = tmp_path / "cwd #1 %a"
    work.mkdir()
    scratch = tmp_path / f"shared {ODD}"
    comment = f"run#5 {ODD} back\\slash"
    swept = warmup_slurm(cluster, work, "--scratch", str(scratch), "--shards", "2", "--op", "mm",
                         f"--sbatch-arg=--comment={comment}", "--wait", "--", *bench_command())
    assert swept.returncode == 0, swept.stderr
    ids = job_ids(swept.stdout)
    outs = sorted(p.name for p in (scratch / "slurm").glob("*.out"))
    assert outs == sorted([f"shard-{ids['array']}_0.out", f"shard-{ids['array']}_1.out",
                           f"finish-{ids['finish']}.out"]), outs
    for name in outs:
        assert "chdir" not in (scratch / "slurm" / name).read_text(), name
    assert "from the records of 2 of 2 shards (2 finished)" in swept.stderr, swept.stderr

    held = warmup_slurm(cluster, work, "--scratch", str(scratch), "--shards", "2", "--op", "mm",
                        f"--sbatch-arg=--comment={comment}", "--sbatch-arg=--hold", "--",
                        *bench_command())
    assert held.returncode == 0, held.stderr
    ids = job_ids(held.stdout)
    try:
        for job in ids.values():
            shown = cluster.client("squeue", "-h", "-j", job, "-o", "%k|%Z").stdout.splitlines()
            assert shown == [f"{comment}|{work}"], shown
    finally:
        cluster.client("scancel", ids["array"], ids["finish"])


def test_a_scratch_slurm_cannot_name_output_files_in_is_refused_exit_2(tmp_path):
    scratch = tmp_path / "back\\slash"
    done = subprocess.run([str(SCRIPT), "--scratch", str(scratch), "--shards", "2", "--", "pytest",
                           "--shape_file", str(EXAMPLE)],
                          env=clean_env(WARMUP_BIN_DIR=str(BIN_DIR)), cwd=tmp_path,
                          capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 2, done.stderr
    assert "holds a backslash, which Slurm drops from output file names" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_array_has_one_task_per_shard_that_exists_not_per_shard_asked_for(cluster, tmp_path):
    """--shards 2000 on the example's 12 shapes makes 12 shards: the array (and Slurm's
    --test-only check of it, which refuses an array over MaxArraySize) has 12 tasks."""
    scratch = tmp_path / "shared"
    held = warmup_slurm(cluster, tmp_path, "--scratch", str(scratch), "--shards", "2000", "--op", "mm",
                        "--max-parallel", "3", "--cache-per-child", "--sbatch-arg=--hold", "--",
                        *bench_command())
    assert held.returncode == 0, held.stderr
    ids = job_ids(held.stdout)
    try:
        assert len(json.loads((scratch / "plan.json").read_text())["shards"]) == 12
        # The options passed on reach each task's warmup-spawn (the scripts' one table of them).
        assert " --cache-per-child --summary " in (scratch / "slurm" / "shard.sbatch").read_text()
        shown = cluster.client("squeue", "-h", "-j", ids["array"], "-o", "%i").stdout.split()
        assert shown == [f"{ids['array']}_[0-11%3]"], shown
    finally:
        cluster.client("scancel", ids["array"], ids["finish"])


def test_options_slurm_refuses_exit_2_submitting_and_writing_nothing(cluster, tmp_path):
    scratch = tmp_path / "shared"
    # --op mm: the shards there will be are counted (warmup-shard --dry-run) before Slurm judges
    # an array of that many tasks, so the op must be one the shape file has.
    bad = warmup_slurm(cluster, tmp_path, "--scratch", str(scratch), "--shards", "4", "--op", "mm",
                       "--partition", "nosuch", "--", *bench_command())
    assert bad.returncode == 2, bad.stderr
    assert "invalid partition" in bad.stderr.lower(), bad.stderr
    assert "nothing was submitted or written" in bad.stderr
    assert not scratch.exists()
    assert job_ids(bad.stdout) == {}


def test_a_scratch_with_jobs_still_queued_is_refused_to_a_second_sweep_rerun_or_finish(cluster, tmp_path):
    scratch = tmp_path / "shared"
    held = warmup_slurm(cluster, tmp_path, "--scratch", str(scratch), "--shards", "4", "--op", "mm",
                        "--sbatch-arg=--hold", "--", *bench_command())
    assert held.returncode == 0, held.stderr
    ids = job_ids(held.stdout)
    plan = (scratch / "plan.json").stat()
    try:
        for args in (["--shards", "2", "--op", "mm", "--", *bench_command()], ["--rerun", "1"],
                     ["--finish"]):
            again = warmup_slurm(cluster, tmp_path, "--scratch", str(scratch), *args)
            assert again.returncode == 2, (args, again.stderr)
            assert f"{scratch} is in use by array job {ids['array']}, still queued" in again.stderr
            assert job_ids(again.stdout) == {}
        assert (scratch / "plan.json").stat().st_mtime_ns == plan.st_mtime_ns
        assert not (scratch / "merged.json").exists()
    finally:
        cluster.client("scancel", ids["array"], ids["finish"])


def test_rerunning_an_index_the_plan_lacks_exits_2_submitting_nothing(tmp_path):
    scratch = tmp_path / "shared"
    done = run_tool("shard", "--op", "mm", "--shards", "4", "--out", scratch, EXAMPLE)
    assert done.returncode == 0, done.stderr
    (scratch / "slurm").mkdir()
    (scratch / "slurm" / "shard.sbatch").write_text("#!/bin/bash\nexit 99\n")
    rerun = subprocess.run([str(SCRIPT), "--rerun", "3,9", "--scratch", str(scratch)],
                           env=clean_env(WARMUP_BIN_DIR=str(BIN_DIR)), cwd=tmp_path,
                           capture_output=True, text=True, timeout=HANG)
    assert rerun.returncode == 2, rerun.stderr
    assert "shard 9 is not in the plan, which has 4 shards (indices 0-3)" in rerun.stderr, rerun.stderr
    assert rerun.stdout == ""
    assert not (scratch / "slurm" / "jobs").exists()


def test_finish_names_each_shard_from_warmup_merges_summary(tmp_path):
    """--finish without a cluster: shards 0-2 ran as their array tasks run them (shard 2
    failing), with no task summary of their own; shard 3's task never started. The outcomes are
    warmup-merge's, judged from each shard's status.json."""
    scratch, records = tmp_path / "shared", tmp_path / "records"
    done = run_tool("shard", "--op", "mm", "--shards", "4", "--out", scratch, EXAMPLE)
    assert done.returncode == 0, done.stderr
    (scratch / "slurm").mkdir()
    env = {"FLAGGEMS_PERF_CURRENT_OP": "mm", "WARMUP_FIXTURE_SWEEP_SECONDS": "0.01",
           "WARMUP_FIXTURE_FAIL_SHAPES": FAILING_SHAPE}
    for i in range(3):
        ran = run_tool("spawn", "--plan", scratch, "--only", i, "--devices", "0", "--backend",
                       "cuda", "--", *bench_command(), env=env, cwd=tmp_path)
        assert ran.returncode == (1 if i == FAILING_SHARD else 0), ran.stderr
    finish = subprocess.run([str(SCRIPT), "--finish", "--scratch", str(scratch), "--op", "mm",
                             "--record-dir", str(records)],
                            env=clean_env(WARMUP_BIN_DIR=str(BIN_DIR)), cwd=tmp_path,
                            capture_output=True, text=True, timeout=HANG)
    assert finish.returncode == 1, finish.stderr
    assert f"shard 2 failed; log: {scratch}/w2/worker.log" in finish.stderr, finish.stderr
    assert f"shard 3 did not start or was refused (no status; see {scratch}/slurm/" in finish.stderr
    assert "shard 0 " not in finish.stderr and "shard 1 " not in finish.stderr, finish.stderr
    assert f"--rerun 2,3 --scratch {scratch}" in finish.stderr, finish.stderr
    assert "from the records of 3 of 4 shards (2 finished)" in finish.stderr, finish.stderr
    assert "FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=" in finish.stdout, finish.stdout
    assert "export FLAGGEMS_PERF_CURRENT_OP=mm\n" in finish.stdout, finish.stdout
    assert (records / "mm.json").read_bytes() == (scratch / "merged.json").read_bytes()


SLURM_COMMANDS = {"sbatch", "squeue", "scancel", "scontrol", "sinfo", "srun", "salloc", "sacct"}


@pytest.fixture(scope="module")
def no_slurm_path(tmp_path_factory) -> str:
    """PATH as it is, but each folder's Slurm commands hidden: its other programs linked into
    one folder of their own."""
    farm = tmp_path_factory.mktemp("no-slurm-bin")
    for folder in clean_env()["PATH"].split(":"):
        if not Path(folder).is_dir():
            continue
        for program in Path(folder).iterdir():
            link = farm / program.name
            if program.name not in SLURM_COMMANDS and not link.exists():
                link.symlink_to(program)
    return str(farm)


@pytest.mark.parametrize(("args", "needle"), [
    ([], "--scratch DIR is required"),
    (["--scratch", "s"], "no COMMAND"),
    (["--scratch", "s", "--", "pytest"], "--shards N is required"),
    (["--scratch", "s", "--shards", "x", "--", "pytest"], "--shards 'x' is not a whole number"),
    (["--scratch", "s", "--shards", "1", "--", "pytest"], "--shards 1: give at least 2"),
    # A negative number is a bad value, not an unknown option (issue 29).
    (["--scratch", "s", "--shards", "-1", "--", "pytest"], "--shards '-1' is not a whole number"),
    (["--scratch", "s", "--shards", "4", "--gpus-per-task", "-1", "--", "pytest"],
     "'--gpus-per-task <N>': \"-1\": give a whole number, 0 or more"),
    (["--scratch", "s", "--shards", "4", "--max-parallel", "-1", "--", "pytest"],
     "'--max-parallel <N>': \"-1\": give a whole number, at least 1"),
    (["--scratch", "s", "--shards", "4", "--", "pytest"], "COMMAND has no --shape_file"),
    (["--scratch", "s", "--shards", "4", "--max-parallel", "0", "--", "pytest"], "give at least 1"),
    (["--scratch", "s", "--shards", "4", "--strategy", "bogus", "--", "pytest", "--shape_file",
      str(EXAMPLE)], "warmup-slurm: error: invalid value 'bogus' for '--strategy"),
    (["--scratch", "s", "--shards", "4", "--timeout", "abc", "--", "pytest", "--shape_file",
      str(EXAMPLE)], "warmup-slurm: error: invalid value 'abc' for '--timeout"),
    (["--scratch", "s", "--shards", "4", "--sbatch-arg", "a\nb", "--", "pytest", "--shape_file",
      str(EXAMPLE)], "holds a newline; it cannot go into a batch script"),
    (["--scratch", "s", "--rerun", "1"], "s/slurm/shard.sbatch is missing"),
    (["--scratch", "s", "--finish", "--", "pytest"], "--finish takes no COMMAND"),
])
@pytest.mark.parametrize("slurm", ["slurm on PATH", "no slurm on PATH"])
def test_usage_errors_exit_2_and_write_nothing(tmp_path, no_slurm_path, args, needle, slurm):
    """A usage error is the user's to fix first: it is found before Slurm is looked for."""
    env = clean_env(WARMUP_BIN_DIR=str(BIN_DIR))
    if slurm == "no slurm on PATH":
        env["PATH"] = no_slurm_path
    done = subprocess.run([str(SCRIPT), *args], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 2, done.stderr
    assert needle in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("scratch", ["f", "f/sub"])
def test_a_scratch_that_is_a_file_exits_2_naming_it(tmp_path, scratch):
    """scripts/warmup's rule for --scratch and the record folder (issue 29)."""
    (tmp_path / "f").write_text("")
    done = subprocess.run([str(SCRIPT), "--scratch", scratch, "--shards", "2", "--", "pytest",
                           "--shape_file", str(EXAMPLE)], env=clean_env(WARMUP_BIN_DIR=str(BIN_DIR)),
                          cwd=tmp_path, capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 2, done.stderr
    assert f"invalid value '{scratch}' for '--scratch <DIR>': f is not a folder but a file" in done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


def test_an_lpt_sweep_runs_the_shards_warmup_shard_balances_by_a_cost_file(cluster, tmp_path):
    direct = tmp_path / "direct"
    done = run_tool("shard", "--op", "mm", "--shards", "2", "--out", direct, EXAMPLE)
    assert done.returncode == 0, done.stderr
    texts = [t for s in json.loads((direct / "plan.json").read_text())["shards"] for t in s["shape_texts"]]
    # One shape as long as the 11 others together: LPT gives it a task of its own.
    long_one = texts[0]
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"mm": {t: (11.0 if t == long_one else 1.0) for t in texts}}))
    scratch = tmp_path / "shared"

    swept = warmup_slurm(cluster, tmp_path, "--scratch", str(scratch), "--shards", "2", "--op", "mm",
                         "--strategy", "lpt", "--costs", str(costs), "--wait", "--", *bench_command())
    assert swept.returncode == 0, swept.stderr
    plan = json.loads((scratch / "plan.json").read_text())
    assert (plan["strategy"], plan["cost_source"]) == ("lpt", "file")
    assert sorted(sorted(s["shape_texts"]) for s in plan["shards"]) == sorted([[long_one], sorted(texts[1:])])
    assert "from the records of 2 of 2 shards (2 finished)" in swept.stderr, swept.stderr
    # The same configs as a round-robin run's on one machine (in another order: the shards' own).
    assert json.loads((scratch / "merged.json").read_text()) == json.loads(single_machine_merge(tmp_path))


def test_a_cost_file_warmup_shard_refuses_exits_2_submitting_nothing(cluster, tmp_path):
    scratch = tmp_path / "shared"
    bad = warmup_slurm(cluster, tmp_path, "--scratch", str(scratch), "--shards", "2", "--op", "mm",
                       "--strategy", "lpt", "--costs", str(tmp_path / "missing.json"), "--", *bench_command())
    assert bad.returncode == 2, bad.stderr
    assert "missing.json" in bad.stderr and "nothing was submitted" in bad.stderr, bad.stderr
    assert job_ids(bad.stdout) == {}
    assert not (scratch / "plan.json").exists() and not (scratch / "slurm").exists()
