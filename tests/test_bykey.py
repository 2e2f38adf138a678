"""By-key mode and resume, end to end (docs/CONTRACT.md, "By-key mode", "Resume").

Real pytest children of the Triton fixture benchmark (tests/triton_fixture: real autotuners, a
stubbed device) under the real tools: `warmup-shard --by-key` plans children without shape files,
`warmup-spawn` runs the whole benchmark in each and hands them the scratch's claim folder, the
harness claims each key. A tuning is counted from the children's logs (the harness's `claimed`
and `taken over` lines, one per key tuned) and from the fixture's trace (configs timed per
kernel), never from timings.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

from support import BIN_DIR, HANG, run_tool, tool
from test_harness import (ADD, BENCH, PLAIN_MM, SCRIPT, SHAPES, STORE_MM, Run, bench, bench_command, bench_env,
                          shape_file)

F16 = ["float16"] * 3
TUNED = re.compile(r"\[warmup-harness\] by-key: (\S+) (\[.*\]): (claimed|claim taken over)")
# FIXTURE_HANG_TIMING=256x512x128 hangs the first timing of that shape: of the plain kernel's key or
# the store one's, whichever a child times first as the claims interleave.
HUNG_KEYS = {(kernel, json.dumps([256, 512, 128, *F16])) for kernel in (PLAIN_MM, STORE_MM)}


def all_keys(shapes) -> set[tuple[str, str]]:
    """The (kernel, key) pairs a sweep of these shapes meets (the store tuner rounds M, N, K up to
    powers of two)."""
    def up(n):
        return 1 << (n - 1).bit_length()
    keys = set()
    for m, n, k in shapes:
        keys |= {(PLAIN_MM, json.dumps([m, n, k, *F16])), (STORE_MM, json.dumps([up(m), up(n), up(k), *F16])),
                 (ADD, json.dumps([m * n, *F16]))}
    return keys


def tunings(*logs: str) -> Counter:
    """How many times each (kernel, key) was tuned, from the harness's lines in these logs."""
    return Counter((kernel, key) for log in logs for kernel, key, _ in TUNED.findall(log))


def plan_by_key(scratch: Path, shards: int = 2) -> None:
    shard = run_tool("shard", "--op", "mm", "--by-key", "--shards", shards, "--out", scratch)
    assert shard.returncode == 0, shard.stderr
    assert shard.stdout.split() == [str(scratch / f"w{i}") for i in range(shards)]


def child_env(work: Path, **extra: str) -> dict[str, str]:
    # Device locks of this test's own: the pretend devices 0 and 1 are every test's.
    return bench_env(work, WARMUP_HARNESS_DEVICE_LOCK_DIR=str(work / "locks"), **extra)


def spawn(work: Path, scratch: Path, shapes: Path, *opts: str, **env: str) -> subprocess.CompletedProcess:
    argv = [tool("spawn"), "--backend", "cuda", "--plan", str(scratch), "--devices", "0,1", "--summary", "-", *opts,
            "--", *bench_command(shapes)]
    proc = subprocess.Popen(argv, env=child_env(work, **env), cwd=work, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        out, err = ended(proc, scratch)
    finally:
        proc.kill()
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def hung_pid(hung: Path, proc: subprocess.Popen, deadline: float) -> int:
    """The pid of the child whose timing FIXTURE_HANG_TIMING holds, once it writes it in `hung`."""
    while not (hung.exists() and hung.read_text()) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert hung.exists(), proc.communicate()
    return int(hung.read_text())


def ended(proc: subprocess.Popen, scratch: Path) -> tuple[str, str]:
    """warmup-spawn's output once it ends; a hang fails with the processes left and the logs."""
    try:
        return proc.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"warmup-spawn did not end\n{processes()}\n" + "\n".join(logs(scratch))) from None


def processes() -> str:
    return subprocess.run(["ps", "-eo", "pid,ppid,stat,wchan:24,args"], capture_output=True, text=True).stdout


def logs(scratch: Path, shards: int = 2) -> list[str]:
    return [(scratch / f"w{i}" / "worker.log").read_text() for i in range(shards)]


def records(scratch: Path, shard: int) -> dict:
    path = scratch / f"w{shard}" / "rec" / "mm.json"
    return json.loads(path.read_text()) if path.exists() else {}


def pairs(record: dict) -> set[tuple[str, str]]:
    return {(kernel, key) for kernel, keys in record.items() for key in keys}


def merge_and_publish(scratch: Path, to: Path) -> None:
    merge = run_tool("merge", "--op", "mm", "--in-scratch", scratch)
    assert merge.returncode == 0, merge.stderr
    assert json.loads((scratch / "conflicts.json").read_text()) == []
    publish = run_tool("publish", "--op", "mm", "--record-dir", to, scratch)
    assert publish.returncode == 0, publish.stderr


def measure(work: Path, shapes: Path, replay: Path):
    run = bench(work, shapes, FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(replay))
    assert run.returncode == 0, run.output
    return run


def test_each_key_is_tuned_once_across_children_and_the_measurement_sweeps_nothing(tmp_path):
    shapes, scratch = shape_file(tmp_path, SHAPES), tmp_path / "s"
    # Race history off: with it, a key's timings depend on the keys its process raced before it;
    # compile overlap off: with it, a key's race order (and so what is timed again) is the order
    # its compiles end in, which a busy machine changes.
    order = {"WARMUP_HARNESS_RACE_HISTORY": "0", "WARMUP_HARNESS_COMPILE_OVERLAP": "0"}
    serial = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "serial"), **order)
    assert serial.returncode == 0, serial.output
    plan_by_key(scratch)
    run = spawn(tmp_path, scratch, shapes, FIXTURE_TRACE=str(tmp_path / "children.jsonl"), **order)
    assert run.returncode == 0, run.stderr
    children = [json.loads(ln) for ln in (tmp_path / "children.jsonl").read_text().splitlines()]
    assert len(children) == 2
    # Each child ran the whole benchmark: every shape, the shape file not rewritten.
    for child in children:
        assert {tuple(ln["args"]) for ln in child["launches"] if ln["kernel"] == PLAIN_MM} == {tuple(s) for s in SHAPES}
        assert child["env"]["WARMUP_HARNESS_CLAIM_DIR"] == str(scratch / "claims")
    assert not list(scratch.glob("w*/shapes.yaml"))
    # Each key tuned once: one claim per key across the logs, and the children together timed as
    # many configs per kernel as one serial sweep does.
    tuned = tunings(*logs(scratch))
    assert set(tuned) == all_keys(SHAPES) and set(tuned.values()) == {1}, tuned
    timed = Counter()
    for child in children:
        timed.update(child["timed"])
    # Each process warms its device once before its first race (autotune/brief.py): each child
    # that raced (on a busy machine one may find every key claimed) times one launch more than the
    # serial sweep's own warm-up, and nothing else.
    serially = Counter(serial.session["timed"])
    raced = sum(1 for child in children if child["timed"])
    assert not serially - timed and sum((timed - serially).values()) == raced - 1, (timed, serially, raced)
    # Each key is in the record of the child that tuned it, and in no other.
    mine = [pairs(records(scratch, i)) for i in range(2)]
    assert not mine[0] & mine[1] and mine[0] | mine[1] == all_keys(SHAPES)
    for i, log in enumerate(logs(scratch)):
        assert set(tunings(log)) == mine[i]
    # The measurement replays every kernel any child recorded, and sweeps nothing.
    merge_and_publish(scratch, tmp_path / "published")
    replay = measure(tmp_path, shapes, tmp_path / "published")
    assert "op mm: replayed 12, swept 0 live" in replay.stderr and replay.session["timed"] == {}


def test_a_claim_left_by_a_child_killed_mid_tune_is_taken_over_by_the_re_run_of_its_shard(tmp_path):
    shapes, scratch = shape_file(tmp_path, SHAPES), tmp_path / "s"
    plan_by_key(scratch)
    hung = tmp_path / "hung-timing"
    env = child_env(tmp_path, FIXTURE_HANG_TIMING="256x512x128")
    args = ["--backend", "cuda", "--plan", scratch, "--devices", "0,1", "--summary", "-", "--",
            *bench_command(shapes)]
    proc = subprocess.Popen([tool("spawn"), *map(str, args)], env=env, cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + HANG
        victim = hung_pid(hung, proc, deadline)
        # The other child meets the key while its holder is tuning it, and goes on untimed; wait
        # for its end, then kill the holder mid-tune.
        while "passed" not in "".join(logs(scratch)) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(victim, signal.SIGKILL)
        out, err = ended(proc, scratch)
    finally:
        proc.kill()
    assert proc.returncode == 1, err
    failed = [int(ln.split()[1]) for ln in out.splitlines() if ln.startswith("shard ") and " failed " in ln]
    assert len(failed) == 1, out
    killed, survivor = failed[0], 1 - failed[0]
    first = logs(scratch)
    held = [(kernel, key) for kernel, key, _ in TUNED.findall(first[killed]) if (kernel, key) in HUNG_KEYS]
    assert len(held) == 1, first[killed]
    key = held[0]
    assert tunings(first[survivor])[key] == 0
    assert key not in pairs(records(scratch, survivor)), "launched untimed: not recorded"
    untimed = re.search(r"(\d+) launched untimed on the first config", first[survivor])
    assert untimed and int(untimed.group(1)) >= 1, first[survivor]
    # The killed shard alone, again: its dead claim is taken over, the rest comes from the winners.
    rerun = spawn(tmp_path, scratch, shapes, "--only", str(killed))
    assert rerun.returncode == 0, rerun.stderr
    again = logs(scratch)[killed]
    assert f"{key[0]} {key[1]}: claim taken over from pid {victim}" in again, again
    assert tunings(again) == Counter({key: 1}), "only the dead claim is tuned again"
    tuned = tunings(first[killed], first[survivor], again)
    assert set(tuned) == all_keys(SHAPES)
    assert [k for k, n in tuned.items() if n > 1] == [key], "tuned twice: only the key its holder died in"
    # Its first run's record was cleared for the re-run: the keys it had published are recorded again.
    assert pairs(records(scratch, killed)) | pairs(records(scratch, survivor)) == all_keys(SHAPES)
    merge_and_publish(scratch, tmp_path / "published")
    replay = measure(tmp_path, shapes, tmp_path / "published")
    assert "op mm: replayed 12, swept 0 live" in replay.stderr



def test_a_winner_that_cannot_be_published_is_a_warning_and_the_key_still_recorded(tmp_path):
    claims = tmp_path / "claims"
    claims.mkdir()
    kernel, key = PLAIN_MM, json.dumps([*SHAPES[0], *F16])
    stem = hashlib.sha256(f"{kernel}\n{key}".encode()).hexdigest()[:40]  # the contract's claim name
    (claims / f"{stem}.winner.json").mkdir()  # where the winner goes: it cannot be renamed there
    run = bench(tmp_path, shape_file(tmp_path, SHAPES[:1]), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"),
                WARMUP_HARNESS_CLAIM_DIR=str(claims))
    assert run.returncode == 0, run.output
    assert f"WARNING by-key: cannot publish the winner of {kernel} {key}" in run.stderr
    assert pairs(json.loads((tmp_path / "rec" / "mm.json").read_text())) == all_keys(SHAPES[:1])
    assert len(list(claims.glob("*.winner.json"))) == 3, "the other keys' winners are published"

def test_a_re_run_in_the_same_scratch_starts_from_empty_claims(tmp_path):
    shapes, scratch = shape_file(tmp_path, SHAPES[:1]), tmp_path / "s"
    plan_by_key(scratch)
    for _ in range(2):
        run = spawn(tmp_path, scratch, shapes)
        assert run.returncode == 0, run.stderr
        tuned = tunings(*logs(scratch))
        assert set(tuned) == all_keys(SHAPES[:1]) and set(tuned.values()) == {1}


# Resume from another folder is a sweep child's (its record is published over the earlier one):
# such a session tunes in a private FlagGems store, so the fixture's warm store answers nothing.
CHILD = {"FLAGGEMS_PERF_WARMUP_WORKER": "1"}


def resume_setup(tmp_path: Path) -> tuple[Path, Path]:
    """A published record of the first two shapes' keys, and a shape file of all four."""
    part, folder = shape_file(tmp_path, SHAPES[:2], "part.yaml"), tmp_path / "published"
    first = bench(tmp_path, part, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(folder))
    assert first.returncode == 0, first.output
    return folder, shape_file(tmp_path, SHAPES)


def test_resume_in_by_key_mode_tunes_only_the_keys_the_earlier_record_lacks(tmp_path):
    folder, shapes = resume_setup(tmp_path)
    scratch = tmp_path / "s"
    plan_by_key(scratch)
    run = spawn(tmp_path, scratch, shapes, WARMUP_HARNESS_RESUME_DIR=str(folder))
    assert run.returncode == 0, run.stderr
    tuned = tunings(*logs(scratch))
    assert set(tuned) == all_keys(SHAPES) - all_keys(SHAPES[:2]) and set(tuned.values()) == {1}
    assert all("key(s) of" in log and "are not tuned again" in log for log in logs(scratch))
    merge_and_publish(scratch, folder)  # the new record replaces the earlier one: it must hold both
    replay = measure(tmp_path, shapes, folder)
    assert "op mm: replayed 12, swept 0 live" in replay.stderr
    meta = json.loads((folder / "mm.meta.json").read_text())["tune_seconds"]
    assert all(isinstance(meta[k][key], float) for k, key in all_keys(SHAPES)), "earlier seconds carried over"


def test_resume_in_shape_mode_sweeps_only_the_missing_keys_and_fresh_sweeps_all(tmp_path):
    folder, shapes = resume_setup(tmp_path)
    full = bench(tmp_path, shapes, **CHILD, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "full"))
    missing = bench(tmp_path, shape_file(tmp_path, SHAPES[2:], "rest.yaml"),
                    **CHILD, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rest"))
    resumed = bench(tmp_path, shapes, **CHILD, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"),
                    WARMUP_HARNESS_RESUME_DIR=str(folder))
    assert resumed.returncode == 0, resumed.output
    assert resumed.session["timed"] == missing.session["timed"] != full.session["timed"]
    assert "resume: 6 key(s) taken from" in resumed.stderr
    assert pairs(json.loads((tmp_path / "rec" / "mm.json").read_text())) == all_keys(SHAPES)
    # A run that meets none of the earlier keys still carries them all into its record.
    rest = bench(tmp_path, shape_file(tmp_path, SHAPES[2:], "rest.yaml"),
                 **CHILD, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rest-resumed"),
                 WARMUP_HARNESS_RESUME_DIR=str(folder))
    assert rest.session["timed"] == missing.session["timed"]
    assert pairs(json.loads((tmp_path / "rest-resumed" / "mm.json").read_text())) == all_keys(SHAPES)
    assert "resume: 0 key(s) taken from" in rest.stderr and "6 carried into this record" in rest.stderr
    fresh = bench(tmp_path, shapes, **CHILD, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "fresh"),
                  WARMUP_HARNESS_RESUME_DIR=str(folder), WARMUP_HARNESS_FRESH="1")
    assert fresh.session["timed"] == full.session["timed"]
    assert "WARMUP_HARNESS_FRESH is set: every key is tuned" in fresh.stderr


def test_an_earlier_record_of_another_triton_or_device_is_not_resumed(tmp_path):
    folder, shapes = resume_setup(tmp_path)
    full = bench(tmp_path, shapes, **CHILD, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "full"))
    meta_path = folder / "mm.meta.json"
    meta = json.loads(meta_path.read_text())
    for field, value, said in [("triton", "3.2.0", "was recorded with Triton 3.2.0"),
                               ("device", "NVIDIA H200", "was recorded on NVIDIA H200, this process runs on fake 0")]:
        meta_path.write_text(json.dumps({**meta, field: value}))
        run = bench(tmp_path, shapes, **CHILD, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / f"rec-{field}"),
                    WARMUP_HARNESS_RESUME_DIR=str(folder))
        assert run.returncode == 0, run.output
        assert run.session["timed"] == full.session["timed"], field
        assert said in run.stderr and "tuned again" in run.stderr or "every key is tuned" in run.stderr
    meta_path.unlink()
    run = bench(tmp_path, shapes, **CHILD, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec-none"),
                WARMUP_HARNESS_RESUME_DIR=str(folder))
    assert run.session["timed"] == full.session["timed"] and "are unknown, every key is tuned" in run.stderr


def test_a_fresh_value_that_is_neither_yes_nor_no_is_a_usage_error(tmp_path):
    run = bench(tmp_path, shape_file(tmp_path, SHAPES[:1]), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "r"),
                WARMUP_HARNESS_FRESH="maybe")
    assert run.returncode == 4 and "WARMUP_HARNESS_FRESH='maybe'" in run.stderr, run.output


def test_by_key_runs_one_child_per_device(tmp_path):
    scratch = tmp_path / "s"
    plan_by_key(scratch, shards=2)
    shapes = shape_file(tmp_path, SHAPES[:1])
    for devices, said in [("0,0", "device 0 is listed twice"), ("0", "a by-key plan of 2 shards needs as many")]:
        run = run_tool("spawn", "--backend", "cuda", "--plan", scratch, "--devices", devices, "--dry-run", "--",
                       *bench_command(shapes), cwd=tmp_path)
        assert run.returncode == 2 and said in run.stderr, run.stderr
    dry = run_tool("spawn", "--backend", "cuda", "--plan", scratch, "--devices", "0,1", "--dry-run", "--",
                   *bench_command(shapes), cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.count(f"WARMUP_HARNESS_CLAIM_DIR={scratch / 'claims'}") == 2
    assert dry.stdout.count(f"--shape_file {shapes}") == 2, "COMMAND as given"


def test_a_by_key_plan_takes_no_shape_file(tmp_path):
    run = run_tool("shard", "--by-key", "--shards", "2", "--out", tmp_path / "s", tmp_path / "x.yaml")
    assert run.returncode == 2 and "cannot be used with" in run.stderr
    # No shapes: nothing to balance by a strategy or a history, nothing to list in a dry run.
    for opts in (["--history", tmp_path], ["--strategy", "lpt"], ["--dry-run"]):
        split = run_tool("shard", "--by-key", "--shards", "2", "--out", tmp_path / "s", *opts)
        assert split.returncode == 2 and "cannot be used with" in split.stderr, (opts, split.stderr)
    assert not (tmp_path / "s").exists()
    one = run_tool("shard", "--by-key", "--shards", "1", "--out", tmp_path / "s")
    assert one.returncode == 3 and not (tmp_path / "s" / "plan.json").exists()
    # One child per device: a count no machine has is refused before a plan that size is built.
    huge = run_tool("shard", "--by-key", "--shards", "18446744073709551615", "--out", tmp_path / "s")
    assert huge.returncode == 2 and "one child per device, at most 4096" in huge.stderr, huge.stderr
    assert not (tmp_path / "s").exists()
    plan_by_key(tmp_path / "s")
    plan = json.loads((tmp_path / "s" / "plan.json").read_text())
    assert plan["mode"] == "by-key" and plan["op"] == "mm"
    assert plan["shards"] == [{"index": 0, "shapes": []}, {"index": 1, "shapes": []}]


def warmup(work: Path, command: list[str], *opts: str, **env: str) -> subprocess.Popen:
    """scripts/warmup on pretend devices 0 and 1, its scratch kept in work/scratch."""
    env = child_env(work, WARMUP_BIN_DIR=str(BIN_DIR), FLAGGEMS_VENDOR="nvidia", TMPDIR=str(work),
                    FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(work / "records"), **env)
    return subprocess.Popen([str(SCRIPT), "--gpus", "2", "--devices", "0,1", "--scratch", str(work / "scratch"),
                             "--keep", *opts, "--", *command], env=env, cwd=work, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finished(proc: subprocess.Popen, work: Path) -> Run:
    out, err = proc.communicate(timeout=HANG)
    return Run(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), work / "trace.jsonl")


def test_warmup_by_key_warms_up_a_run_without_a_shape_file(tmp_path):
    command = bench_command(tmp_path / "unused.yaml")[:-2]  # the benchmark without --shape_file
    assert "--shape_file" not in command and command[-1] == str(BENCH)
    run = finished(warmup(tmp_path, command, "--by-key", FIXTURE_SHAPES=json.dumps(SHAPES)), tmp_path)
    assert run.returncode == 0, run.output
    scratch = tmp_path / "scratch"
    tuned = tunings(*logs(scratch))
    assert set(tuned) == all_keys(SHAPES) and set(tuned.values()) == {1}, tuned
    children = [s for s in run.sessions if s["worker"] == "1"]
    measurement = [s for s in run.sessions if s["worker"] is None]
    assert len(children) == 2 and len(measurement) == 1, run.output
    assert measurement[0]["timed"] == {} and "op mm: replayed 12, swept 0 live" in run.stderr
    # The sweep ended with every shard ok, so its record is whole for this command: a second run
    # replays it in one process, starting no child and tuning nothing.
    again = finished(warmup(tmp_path, command, "--by-key", FIXTURE_SHAPES=json.dumps(SHAPES)), tmp_path)
    assert again.returncode == 0, again.output
    assert again.session["worker"] is None and again.session["timed"] == {}, again.output
    assert "reusing it" in again.stderr and "resume: 12 key(s) taken from" in again.stderr, again.output
    fresh = finished(warmup(tmp_path, command, "--by-key", "--fresh", FIXTURE_SHAPES=json.dumps(SHAPES)), tmp_path)
    assert fresh.returncode == 0, fresh.output
    assert set(tunings(*logs(scratch))) == all_keys(SHAPES)


def test_no_shape_file_on_two_devices_claims_keys_without_by_key_and_the_op_is_the_marker(tmp_path):
    """Nothing to name (issue 30): no --gpus, --devices, --by-key or op variable, the two stand-in
    devices visible; the benchmark marks its test with its op (`-m mm`), as FlagGems' does, and
    has shapes of its own (no --shape_file)."""
    command = [*bench_command(tmp_path / "unused.yaml")[:-2], "-m", "mm"]
    env = child_env(tmp_path, WARMUP_BIN_DIR=str(BIN_DIR), FLAGGEMS_VENDOR="nvidia", TMPDIR=str(tmp_path),
                    CUDA_VISIBLE_DEVICES="0,1", FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "records"),
                    FIXTURE_SHAPES=json.dumps(SHAPES))
    del env["FLAGGEMS_PERF_CURRENT_OP"]
    proc = subprocess.Popen([str(SCRIPT), "--scratch", str(tmp_path / "scratch"), "--keep", "--", *command],
                            env=env, cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    run = finished(proc, tmp_path)
    assert run.returncode == 0, run.output
    opening = next(ln for ln in run.stderr.splitlines() if ln.startswith("[parallel-warmup]"))
    assert "op mm (from -m mm)" in opening and "by-key" in opening and "sweeping on 0,1" in opening, opening
    tuned = tunings(*logs(tmp_path / "scratch"))
    assert set(tuned) == all_keys(SHAPES) and set(tuned.values()) == {1}, tuned
    # Each child's harness kept its progress where warmup-spawn reads it (WARMUP_HARNESS_PROGRESS).
    # A child that tuned no key (the other one claimed them all, as a loaded machine may have it)
    # has timed nothing, and the harness writes the file when a key's configs are timed.
    for i, log in enumerate(logs(tmp_path / "scratch")):
        here, path = sum(tunings(log).values()), tmp_path / "scratch" / f"w{i}" / "progress.json"
        if here == 0 and not path.exists():
            continue
        progress = json.loads(path.read_text())
        assert progress["keys"] == here and progress["configs"] >= progress["keys"], progress
    children = [s for s in run.sessions if s["worker"] == "1"]
    assert len(children) == 2 and all(c["env"]["FLAGGEMS_PERF_CURRENT_OP"] == "mm" for c in children), run.output
    assert "op mm: replayed 12, swept 0 live" in run.stderr, run.stderr
    assert pairs(json.loads((tmp_path / "records" / "mm.json").read_text())) == all_keys(SHAPES)


def test_the_same_line_on_one_device_is_one_process_recording_under_the_markers_op(tmp_path):
    command = [*bench_command(tmp_path / "unused.yaml")[:-2], "-m", "mm"]
    env = child_env(tmp_path, WARMUP_BIN_DIR=str(BIN_DIR), FLAGGEMS_VENDOR="nvidia", TMPDIR=str(tmp_path),
                    CUDA_VISIBLE_DEVICES="0", FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "records"),
                    FIXTURE_SHAPES=json.dumps(SHAPES))
    del env["FLAGGEMS_PERF_CURRENT_OP"]
    proc = subprocess.Popen([str(SCRIPT), "--", *command], env=env, cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    run = finished(proc, tmp_path)
    assert run.returncode == 0, run.output
    [line] = [ln for ln in run.stderr.splitlines() if ln.startswith("[parallel-warmup]")]
    assert line.startswith("[parallel-warmup] op mm (from -m mm): one visible GPU (0): one device, one process"), line
    [session] = run.sessions
    assert session["worker"] is None and session["env"]["FLAGGEMS_PERF_CURRENT_OP"] == "mm"
    assert pairs(json.loads((tmp_path / "records" / "mm.json").read_text())) == all_keys(SHAPES)


def test_warmup_by_key_refuses_the_options_of_a_split(tmp_path):
    # warmup-plan's parser refuses the combination (clap's words), before anything runs.
    proc = subprocess.run([str(SCRIPT), "--by-key", "--strategy", "lpt", "--", "true"], capture_output=True,
                          text=True, timeout=HANG, env=child_env(tmp_path, WARMUP_BIN_DIR=str(BIN_DIR)))
    assert proc.returncode == 2 and "'--by-key' cannot be used with '--strategy" in proc.stderr, proc.stderr


def test_a_stopped_sweep_is_published_and_the_next_run_tunes_only_what_it_missed(tmp_path):
    shapes = shape_file(tmp_path, SHAPES)
    hung = tmp_path / "hung-timing"
    proc = warmup(tmp_path, bench_command(shapes), "--by-key", FIXTURE_HANG_TIMING="256x512x128")
    scratch = tmp_path / "scratch"
    try:
        deadline = time.monotonic() + HANG
        hung_pid(hung, proc, deadline)  # the holder is tuning its key
        while "passed" not in "".join(p.read_text() for p in scratch.glob("w*/worker.log")) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)  # the sweep is stopped with one key still being tuned
        stopped = finished(proc, tmp_path)
    finally:
        proc.kill()
    assert stopped.returncode == 143, stopped.output
    assert "the sweep was stopped: what its children recorded is published in" in stopped.stderr
    # It ended at its closed gate (a session with no test, exit 2), or was killed before.
    measured = [s for s in stopped.sessions if s["worker"] is None]
    assert all(s["exitstatus"] == 2 and not s["launches"] for s in measured), "the measurement ran a test"
    published = pairs(json.loads((tmp_path / "records" / "mm.json").read_text()))
    missing = all_keys(SHAPES) - published
    assert published <= all_keys(SHAPES) and len(missing) == 1 and missing <= HUNG_KEYS, missing
    key = missing.pop()
    hung.unlink()
    run = finished(warmup(tmp_path, bench_command(shapes), "--by-key"), tmp_path)
    assert run.returncode == 0, run.output
    assert tunings(*logs(scratch)) == Counter({key: 1}), "only the key the stop cut short is tuned"
    assert "op mm: replayed 12, swept 0 live" in run.stderr
    # The stopped sweep's record named no complete run: this one swept, resuming, on both devices.
    decided = next(ln for ln in run.stderr.splitlines() if ln.startswith("[parallel-warmup]"))
    assert "sweeping on 0,1" in decided and "is not reused" in decided and "no complete_for" in decided, decided
    # It ended with every shard ok: the next run of the same command reuses the record, in one process.
    replayed = finished(warmup(tmp_path, bench_command(shapes), "--by-key"), tmp_path)
    assert replayed.returncode == 0, replayed.output
    decided = next(ln for ln in replayed.stderr.splitlines() if ln.startswith("[parallel-warmup]"))
    assert "answers op mm for" in decided and "reusing it" in decided, decided
    assert replayed.session["worker"] is None and replayed.session["timed"] == {}, replayed.output


def test_warmup_costs_says_a_by_key_run_has_no_shapes_to_learn_costs_of(tmp_path):
    scratch, rec = tmp_path / "s", tmp_path / "records"
    plan_by_key(scratch)
    run = run_tool("costs", "--op", "mm", "--record-dir", rec, "--costs", tmp_path / "c.json", scratch)
    assert run.returncode == 3, run.stderr
    assert "a by-key run (warmup-shard --by-key) has no shapes to learn costs of" in run.stderr, run.stderr
    assert "older warmup-shard" not in run.stderr
    assert not (tmp_path / "c.json").exists() and not rec.exists()


def test_warmup_by_key_starts_the_measurement_with_the_sweep_and_uses_no_history(tmp_path):
    """By-key keeps scripts/warmup's overlap: the measurement collects while the children sweep
    (FIXTURE_CHILD_HOLD makes them wait for it) and runs its first test only once the by-key
    record is published. With a record folder, by-key asks no history (no --predict, no
    --history split) and keeps no costs: it has no shapes."""
    events = tmp_path / "events"
    command = bench_command(tmp_path / "unused.yaml")[:-2]  # no --shape_file
    run = finished(warmup(tmp_path, command, "--by-key", FIXTURE_SHAPES=json.dumps(SHAPES),
                          FIXTURE_EVENTS=str(events), FIXTURE_CHILD_HOLD="1"), tmp_path)
    assert run.returncode == 0, run.output
    assert "starts alongside the sweep" in run.stderr, run.stderr
    lines = [tuple(ln.split()) for ln in events.read_text().splitlines()]
    at = {kind_who: [i for i, e in enumerate(lines) if e[:2] == kind_who]
          for kind_who in [("collected", "measure"), ("finished", "child"), ("test", "measure")]}
    [collected], finished_children, [first_test] = at.values()
    assert len(finished_children) == 2 and collected < min(finished_children) < max(finished_children) < first_test
    assert lines[first_test][3] == "published", lines
    [measured] = [s for s in run.sessions if s["worker"] is None]
    assert measured["timed"] == {} and "op mm: replayed 12, swept 0 live" in run.stderr
    assert not any(measured["env"].get(name) for name in ("WARMUP_HARNESS_RESUME_DIR", "WARMUP_HARNESS_CLAIM_DIR")), \
        measured["env"]
    assert "history" not in run.stderr and "predict" not in run.stderr, run.stderr
    assert "WARNING" not in run.stderr and "no shapes to learn costs of" not in run.stderr, run.stderr
    assert not (tmp_path / "records" / "mm.costs.json").exists()


def test_a_stopped_fresh_sweep_over_a_3000_key_record_keeps_every_key_of_it(tmp_path):
    """`--fresh` re-tunes every key it meets and carries nothing of the earlier record; the sweep
    is then stopped. What its children recorded is published over the record folder, and the
    3000 keys of the earlier record that the sweep never met stay (docs/CONTRACT.md,
    warmup-publish: a record is never shortened by a run)."""
    shapes = shape_file(tmp_path, SHAPES)
    records_dir = tmp_path / "records"
    records_dir.mkdir()
    earlier = {"earlier:kernel": {json.dumps([i, *F16]): {"kwargs": {"BLOCK": 16}, "num_warps": 4,
                                                           "num_stages": 2} for i in range(3000)}}
    (records_dir / "mm.json").write_text(json.dumps(earlier))
    hung = tmp_path / "hung-timing"
    proc = warmup(tmp_path, bench_command(shapes), "--by-key", "--fresh", FIXTURE_HANG_TIMING="256x512x128")
    scratch = tmp_path / "scratch"
    try:
        deadline = time.monotonic() + HANG
        hung_pid(hung, proc, deadline)
        while "passed" not in "".join(p.read_text() for p in scratch.glob("w*/worker.log")) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        stopped = finished(proc, tmp_path)
    finally:
        proc.kill()
    assert stopped.returncode == 143, stopped.output
    assert "what its children recorded is published in" in stopped.stderr
    published = json.loads((records_dir / "mm.json").read_text())
    assert published["earlier:kernel"] == earlier["earlier:kernel"], "the earlier record's keys are lost"
    missing = (pairs(earlier) | all_keys(SHAPES)) - pairs(published)
    assert pairs(published) <= pairs(earlier) | all_keys(SHAPES), pairs(published) - pairs(earlier)
    assert len(missing) == 1 and missing <= HUNG_KEYS, missing
    assert "3000 key(s) kept from the record there" in stopped.stderr, stopped.stderr
