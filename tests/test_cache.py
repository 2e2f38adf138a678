"""The record cache, end to end (docs/CONTRACT.md, "The record cache"): with no record folder
named, scripts/warmup records into the user's cache folder for this Triton and device model, and
every later run reads it. Real scripts, real tools, real pytest children of the Triton fixture
benchmark under the real harness; HOME, XDG_CACHE_HOME and TMPDIR point into the test's folder.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from support import BIN_DIR, HANG, run_tool
from test_harness import BENCH, SCRIPT, SHAPES, Run, bench_command, bench_env, shape_file

DEVICE = "fake 0"  # the fixture's device, as the harness names it in the sidecar


def probe(work: Path) -> Path:
    """A WARMUP_PROBE_ROOT whose NVIDIA driver names two GPUs as the fixture's device, so that
    warmup-plan's device model is the one the harness records."""
    root = work / "probe"
    for bus in ("0000:00:06.0", "0000:00:07.0"):
        info = root / "proc/driver/nvidia/gpus" / bus / "information"
        info.parent.mkdir(parents=True, exist_ok=True)
        info.write_text(f"Model: \t\t {DEVICE}\nGPU UUID: \t GPU-{bus}\n")
    return root


def nothing_set(work: Path, **extra: str) -> dict[str, str]:
    """The environment of a user who named nothing: no record folder, no op but the test's."""
    (work / "tmp").mkdir(exist_ok=True)
    env = bench_env(work, WARMUP_BIN_DIR=str(BIN_DIR), FLAGGEMS_VENDOR="nvidia", TMPDIR=str(work / "tmp"),
                    HOME=str(work / "home"), WARMUP_PROBE_ROOT=str(probe(work)),
                    WARMUP_HARNESS_DEVICE_LOCK_DIR=str(work / "locks"), **extra)
    env.pop("XDG_CACHE_HOME", None)
    return env


def warmup(work: Path, env: dict[str, str], shapes: Path, *opts: str) -> subprocess.Popen:
    return subprocess.Popen([str(SCRIPT), *opts, "--", *bench_command(shapes)], env=env, cwd=work,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finished(proc: subprocess.Popen, work: Path) -> Run:
    out, err = proc.communicate(timeout=HANG)
    return Run(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), work / "trace.jsonl")


def cache_folders(work: Path) -> list[Path]:
    return sorted((work / "home" / ".cache" / "parallel-warmup" / "records").iterdir())


def keys(record: Path) -> set[tuple[str, str]]:
    return {(kernel, key) for kernel, bucket in json.loads(record.read_text()).items() for key in bucket}


def test_a_second_run_with_nothing_set_replays_from_the_cache_with_no_child_and_no_key_tuned(tmp_path):
    shapes = shape_file(tmp_path, SHAPES)
    env = nothing_set(tmp_path)
    first = finished(warmup(tmp_path, env, shapes, "--gpus", "2", "--devices", "0,1"), tmp_path)
    assert first.returncode == 0, first.output
    assert len([s for s in first.sessions if s["worker"] == "1"]) == 2, first.output
    [folder] = cache_folders(tmp_path)
    assert folder.name.startswith("3.") and "_fake-0_" in folder.name, folder
    recorded = keys(folder / "mm.json")
    assert recorded and (folder / "mm.meta.json").is_file()

    again = finished(warmup(tmp_path, env, shapes, "--gpus", "2", "--devices", "0,1"), tmp_path)
    assert again.returncode == 0, again.output
    assert f"the record in {folder} answers" in again.stderr, again.stderr
    [session] = again.sessions
    assert session["worker"] is None, "no child ran"
    assert sum(session["timed"].values()) == 0, f"a key was tuned: {session['timed']}"
    assert keys(folder / "mm.json") == recorded
    # No run left a folder of its own behind: the scratch went, and no record folder was made there.
    assert sorted(p.name for p in (tmp_path / "tmp").iterdir()) == [], list((tmp_path / "tmp").iterdir())

    # warmup-cache sees the record the runs made, and removing it makes the next run tune again.
    listed = subprocess.run([str(BIN_DIR / "warmup-cache"), "list", "--json"], env=env, capture_output=True,
                            text=True, timeout=HANG)
    assert listed.returncode == 0, listed.stderr
    [entry] = json.loads(listed.stdout)
    assert (entry["op"], entry["keys"], entry["device"]) == ("mm", len(recorded), DEVICE), entry
    assert entry["folder"] == str(folder) and entry["last_use"] > 0
    removed = subprocess.run([str(BIN_DIR / "warmup-cache"), "remove", "--op", "mm"], env=env,
                             capture_output=True, text=True, timeout=HANG)
    assert removed.returncode == 0 and removed.stdout == f"removed mm {folder}\n", removed
    third = finished(warmup(tmp_path, env, shapes, "--gpus", "2", "--devices", "0,1"), tmp_path)
    assert third.returncode == 0 and f"the record in {folder} answers" not in third.stderr, third.output
    assert len([s for s in third.sessions if s["worker"] == "1"]) == 2, third.output
    assert keys(folder / "mm.json") == recorded


def test_one_device_records_into_the_cache_and_leaves_no_temporary_record_folder(tmp_path):
    shapes = shape_file(tmp_path, SHAPES)
    env = nothing_set(tmp_path)
    run = finished(warmup(tmp_path, env, shapes, "--gpus", "1"), tmp_path)
    assert run.returncode == 0, run.output
    [folder] = cache_folders(tmp_path)
    assert "one device, one process" in run.stderr and f"into {folder}, for the next run" in run.stderr
    assert run.session["env"]["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"] == str(folder)
    assert keys(folder / "mm.json")
    assert list((tmp_path / "tmp").glob("parallel-warmup-record*")) == []
    again = finished(warmup(tmp_path, env, shapes, "--gpus", "1"), tmp_path)
    assert again.returncode == 0 and f"the record in {folder} answers" in again.stderr, again.output
    assert sum(again.session["timed"].values()) == 0, again.session["timed"]


def test_a_link_planted_as_the_used_stamp_is_left_alone_with_one_line_and_the_run_replays(tmp_path):
    shapes = shape_file(tmp_path, SHAPES)
    env = nothing_set(tmp_path)
    first = finished(warmup(tmp_path, env, shapes, "--gpus", "1"), tmp_path)
    assert first.returncode == 0, first.output
    [folder] = cache_folders(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (folder / ".mm.used").unlink()
    (folder / ".mm.used").symlink_to(victim)  # planted by anyone who can write in a shared folder
    run = finished(warmup(tmp_path, env, shapes, "--gpus", "1"), tmp_path)
    assert run.returncode == 0 and f"the record in {folder} answers" in run.stderr, run.output
    assert victim.read_text() == "precious"
    assert (f"[warmup] warning: {folder / '.mm.used'} is a symbolic link, which the tools never write through: "
            f"remove it; this use of op mm is not marked there\n") in run.stderr
    assert sum(run.session["timed"].values()) == 0, run.session["timed"]


def test_two_runs_at_once_into_the_cache_keep_every_key_of_both(tmp_path):
    """One process each (--gpus 1: the harness folds into the cache under the op's lock), then two
    sweeps at once (each publishes its union under that lock): both key sets are there after."""
    halves = [shape_file(tmp_path, SHAPES[:2], "a.yaml"), shape_file(tmp_path, SHAPES[2:], "b.yaml")]
    # Each run alone, into a cache of its own: the keys each set of shapes makes.
    alone = []
    for i, shapes in enumerate(halves):
        work = tmp_path / f"alone{i}"
        work.mkdir()
        single = finished(warmup(work, nothing_set(work), shapes, "--gpus", "1"), work)
        assert single.returncode == 0, single.output
        [own] = cache_folders(work)
        alone.append(keys(own / "mm.json"))
    assert alone[0] - alone[1] and alone[1] - alone[0], "the two runs' key sets are not disjoint"
    for name, opts in [("one", ["--gpus", "1"]), ("sweeps", ["--gpus", "2", "--devices", "0,1"])]:
        work = tmp_path / name
        work.mkdir()
        env = nothing_set(work)
        procs = [warmup(work, env, shapes, *opts) for shapes in halves]
        runs = [finished(p, work) for p in procs]
        assert all(r.returncode == 0 for r in runs), [r.output for r in runs]
        [folder] = cache_folders(work)
        assert keys(folder / "mm.json") == alone[0] | alone[1], name


def test_a_cache_that_cannot_be_made_runs_the_command_with_one_line(tmp_path):
    shapes = shape_file(tmp_path, SHAPES)
    (tmp_path / "file").write_text("")
    for name, value in [("XDG_CACHE_HOME", str(tmp_path / "file")), ("HOME", "")]:
        env = nothing_set(tmp_path)
        env[name] = value
        run = finished(warmup(tmp_path, env, shapes, "--gpus", "1"), tmp_path)
        assert run.returncode == 0, run.output
        lines = [ln for ln in run.stderr.splitlines() if ln.startswith("[parallel-warmup]")]
        assert len(lines) == 1 and "the record cache cannot be used" in lines[0], run.stderr
        assert "recording nothing" in lines[0]
        assert run.session["env"].get("FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR") is None
        assert "4 passed" in run.stdout, run.stdout


def test_a_plain_pytest_with_the_harness_records_nothing_in_the_cache(tmp_path):
    """The cache is the scripts': the harness stays off without a record or replay folder."""
    shapes = shape_file(tmp_path, SHAPES)
    run = subprocess.run(bench_command(shapes), env=nothing_set(tmp_path), cwd=tmp_path, capture_output=True,
                         text=True, timeout=HANG)
    assert run.returncode == 0, run.stderr
    assert "[warmup-harness]" not in run.stderr
    assert not (tmp_path / "home" / ".cache" / "parallel-warmup").exists()


def test_a_named_record_folder_wins_over_the_cache(tmp_path):
    shapes = shape_file(tmp_path, SHAPES)
    env = nothing_set(tmp_path, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "named"))
    run = finished(warmup(tmp_path, env, shapes, "--gpus", "1"), tmp_path)
    assert run.returncode == 0, run.output
    assert (tmp_path / "named" / "mm.json").is_file()
    assert not (tmp_path / "home" / ".cache" / "parallel-warmup").exists()


def test_the_step_by_step_recipe_records_the_plans_op_with_no_op_variable(tmp_path):
    """README's "one step at a time", FLAGGEMS_PERF_CURRENT_OP unset: the plan's op reaches the
    children (warmup-spawn sets it), so they record under it and warmup-merge finds configs."""
    shapes = shape_file(tmp_path, SHAPES)
    scratch = tmp_path / "S"
    shard = run_tool("shard", "--op", "mm", "--shards", "2", "--out", scratch, shapes)
    assert shard.returncode == 0, shard.stderr
    env = nothing_set(tmp_path)
    env.pop("FLAGGEMS_PERF_CURRENT_OP")
    spawn = subprocess.run([str(BIN_DIR / "warmup-spawn"), "--plan", str(scratch), "--devices", "0,1",
                            "--backend", "cuda", "--", *bench_command(shapes)],
                           env=env, cwd=tmp_path, capture_output=True, text=True, timeout=HANG)
    assert spawn.returncode == 0, spawn.stderr
    merge = run_tool("merge", "--op", "mm", "--in-scratch", scratch)
    assert merge.returncode == 0, merge.stderr
    assert keys(scratch / "merged.json")
    # A caller's op that contradicts the plan's is refused before anything runs.
    env["FLAGGEMS_PERF_CURRENT_OP"] = "addmm"
    refused = subprocess.run([str(BIN_DIR / "warmup-spawn"), "--plan", str(scratch), "--devices", "0,1",
                              "--backend", "cuda", "--", *bench_command(shapes)],
                             env=env, cwd=tmp_path, capture_output=True, text=True, timeout=HANG)
    assert refused.returncode == 2 and "addmm" in refused.stderr, refused.stderr
    assert "mm" in refused.stderr


assert BENCH.is_file()


def test_a_device_the_plan_cannot_name_replays_in_one_process_and_a_key_made_elsewhere_is_tuned(tmp_path):
    """Issue 30: where warmup-plan can name no device (no driver files, no sysfs GPU: an empty
    probe root), a whole record still decides replay, and the harness checks each key against the
    device it runs on: keys the sidecar says were made on an A100 are tuned live, with one line."""
    shapes = shape_file(tmp_path, SHAPES)
    record_dir = tmp_path / "records"
    (tmp_path / "nothing").mkdir()
    env = {**nothing_set(tmp_path, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(record_dir)),
           "WARMUP_PROBE_ROOT": str(tmp_path / "nothing")}
    first = finished(warmup(tmp_path, env, shapes, "--gpus", "1"), tmp_path)
    assert first.returncode == 0, first.output
    meta = json.loads((record_dir / "mm.meta.json").read_text())
    assert meta["device"] == DEVICE and meta.get("complete_for"), meta
    (record_dir / "mm.meta.json").write_text(json.dumps({**meta, "device": "NVIDIA A100"}))

    again = finished(warmup(tmp_path, env, shapes, "--gpus", "2", "--devices", "0,1"), tmp_path)
    assert again.returncode == 0, again.output
    decision = next(ln for ln in again.stderr.splitlines() if ln.startswith("[parallel-warmup]"))
    assert "answers" in decision, decision
    [session] = again.sessions
    assert session["worker"] is None, "no child ran: the replay is one process"
    assert sum(session["timed"].values()) > 0, "the keys made on the A100 were not tuned again"
    assert f"was recorded on NVIDIA A100, this process runs on {DEVICE}: its keys are tuned again" \
        in again.stderr, again.stderr


def test_two_devices_where_a_sweep_would_not_pay_resume_a_record_that_does_not_answer_in_one_process(tmp_path):
    """Issue 41: two devices, COMMAND changed (-v added, so its record no longer answers) and a
    history predicting under 10% saved: one process records, resuming from the folder, and tunes
    no key the record holds (it ran plain and tuned every key); its re-run replays."""
    shapes = shape_file(tmp_path, SHAPES)
    record_dir = tmp_path / "records"
    env = nothing_set(tmp_path, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(record_dir))
    first = finished(warmup(tmp_path, env, shapes, "--gpus", "2", "--devices", "0,1"), tmp_path)
    assert first.returncode == 0 and (record_dir / "mm.costs.json").is_file(), first.output
    recorded = keys(record_dir / "mm.json")
    # A start-up that dwarfs the tuning: the history predicts no saving on two devices.
    meta = json.loads((record_dir / "mm.meta.json").read_text())
    (record_dir / "mm.meta.json").write_text(json.dumps({**meta, "startup_seconds": 1000.0}))

    def verbose() -> Run:
        proc = subprocess.Popen([str(SCRIPT), "--gpus", "2", "--devices", "0,1", "--",
                                 *bench_command(shapes, "-v")], env=env, cwd=tmp_path, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        return finished(proc, tmp_path)

    again = verbose()
    assert again.returncode == 0, again.output
    assert sum(again.session["timed"].values()) == 0, f"a key the record holds was tuned: {again.session['timed']}"
    [line] = [ln for ln in again.stderr.splitlines() if ln.startswith("[parallel-warmup]")]
    assert "less than 10% saved" in line and "one process instead" in line, line
    assert "no complete run" in line and "its keys are resumed from" in line, line
    assert again.session["worker"] is None, "no child ran"
    assert again.session["env"]["WARMUP_HARNESS_RESUME_DIR"] == str(record_dir), again.session["env"]
    assert keys(record_dir / "mm.json") == recorded
    third = verbose()
    assert third.returncode == 0 and f"the record in {record_dir} answers" in third.stderr, third.output
