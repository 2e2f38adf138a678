"""warmup-spawn end to end: real pytest children get exactly the argv, environment and shard the
contract promises; signals, timeouts and the spawner's own death leave no process behind."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from support import HANG, ROOT, clean_env, on_a_terminal, tool

FIXTURE = Path(__file__).resolve().parent / "spawn_fixture"

SHARDS = [
    {"mm": {"dtype": ["float16", "bfloat16"], "shapes": [[1, 2, 3], [64, 1.5, "x"]]}},
    {"mm": {"dtype": ["float16", "bfloat16"], "shapes": [[7, None, True], {"m": 8, "n": [9]}]}},
    {"mm": {"dtype": ["float16", "bfloat16"], "shapes": [["0x10", 1e-3]]}},
]


def write_plan(scratch: Path, shards: list) -> Path:
    """A v1 plan with one w<i>/shapes.yaml per shard, as warmup-shard would write them."""
    entries = []
    for i, body in enumerate(shards):
        w = scratch / f"w{i}"
        w.mkdir(parents=True)
        (w / "shapes.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
        entries.append({"index": i, "shape_file": f"w{i}/shapes.yaml", "shapes": [i]})
    plan = {"version": 1, "op": "mm", "source": "/data/mm.yaml", "strategy": "round-robin",
            "shapes": len(shards), "shards": entries}
    path = scratch / "plan.json"
    path.write_text(json.dumps(plan))
    return path


def test_real_pytest_children_get_the_contract_argv_env_and_shard(tmp_path):
    plan = write_plan(tmp_path / "scratch", SHARDS)
    caller_env = clean_env(
        CUDA_VISIBLE_DEVICES="GPU-8f2a, MIG-1c3d/1/0,5",
        FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR="/replay",
        FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR="/caller/rec",
        PARALLEL_WARMUP_GPUS="3",
        FLAGGEMS_PERF_TTGIR_DUMP_DIR="/ir",
        FLAGGEMS_PERF_COLOR="always",
        FLAGGEMS_PERF_CURRENT_OP="mm",
        TRITON_CACHE_DIR="/home/u/.triton/cache",  # inherited: the children share the caller's cache
    )
    command = [sys.executable, "-m", "pytest", "-q", "--shape_file", "caller.yaml",
               str(FIXTURE / "probe_child.py"), "--shape_file=other.yaml"]
    done = subprocess.run([tool("spawn"), "--plan", str(plan), "--", *command],
                          env=caller_env, cwd=ROOT, capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 0, done.stderr
    scratch = (tmp_path / "scratch").resolve()
    devices = ["GPU-8f2a", "MIG-1c3d/1/0", "5"]
    for i, shard in enumerate(SHARDS):
        w = scratch / f"w{i}"
        got = json.loads((w / "rec" / "probe.json").read_text())
        assert got["argv"] == [sys.executable, "-m", "pytest", "-q",
                               str(FIXTURE / "probe_child.py"), "--shape_file", str(w / "shapes.yaml")]
        # pytest sets PYTEST_* in the outer run and again in the child: compare the rest.
        expected = {k: v for k, v in caller_env.items()
                    if k not in ("FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR", "PARALLEL_WARMUP_GPUS",
                                 "FLAGGEMS_PERF_TTGIR_DUMP_DIR")
                    and not k.startswith(("PYTEST_", "_PYTEST"))}
        expected.update({
            "CUDA_VISIBLE_DEVICES": devices[i],
            "FLAGGEMS_PERF_WARMUP_WORKER": "1",
            "FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(w / "rec"),
            "WARMUP_SPAWN_CHILDREN": "3",
            "FLAGGEMS_PERF_COLOR": "never",
            "PYTHONUNBUFFERED": "1",
            "WARMUP_HARNESS_PROGRESS": str(w / "progress.json"),
        })
        child_env = {k: v for k, v in got["env"].items() if not k.startswith(("PYTEST_", "_PYTEST"))}
        # The shard's marker: this run's name, then the shard.
        run, shard_index = child_env.pop("WARMUP_SPAWN_SHARD").rsplit("/", 1)
        assert run and shard_index == str(i)
        assert child_env == expected
        assert got["shard"] == shard
        assert got["cwd"] == str(ROOT)
        status = json.loads((w / "status.json").read_text())
        assert status["device"] == devices[i] and status["exit_code"] == 0
        assert "1 passed" in (w / "worker.log").read_text()


# A child that ignores SIGTERM and leaves two grandchildren: one in its process group that also
# ignores SIGTERM, one that escaped into its own session (only the subreaper sweep finds it).
STUBBORN = r"""
trap '' TERM
sleep 1000 &
echo $! >> "$0"
setsid sleep 1000 &
echo $! >> "$0"
echo $$ >> "$0"
while :; do sleep 1; done
"""


def alive(pid: int) -> bool:
    """Whether pid exists as anything but a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def start_stubborn(tmp_path: Path, *flags: str, shards: int = 2, devices: str = "0,1",
                   stale: tuple[str, ...] = ()) -> tuple[subprocess.Popen, Path]:
    """Children that ignore SIGTERM and leave grandchildren; `stale` files under the scratch
    stand for what an earlier run left there."""
    plan = write_plan(tmp_path / "scratch", SHARDS[:shards])
    for name in stale:
        path = tmp_path / "scratch" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    pids = tmp_path / "pids"
    proc = subprocess.Popen(
        [tool("spawn"), "--plan", str(plan), "--backend", "cuda", "--devices", devices, *flags,
         "--", "sh", "-c", STUBBORN, str(pids)],
        env=clean_env(), stderr=subprocess.PIPE, text=True)
    wait_for_pids(pids, 3 * min(shards, len(devices.split(","))), proc)
    return proc, pids


def wait_for_pids(path: Path, n: int, proc: subprocess.Popen) -> None:
    """Waits until `n` pids are in `path`, while `proc` runs."""
    deadline = time.monotonic() + HANG
    while len(read_pids(path)) < n:
        assert proc.poll() is None, (f"exited {proc.returncode} before {n} pids were written: "
                                     f"{proc.stderr.read() if proc.stderr else ''}")
        assert time.monotonic() < deadline, "children did not start"
        time.sleep(0.05)


def wait_until_gone(path: Path, seconds: float) -> None:
    """Waits up to `seconds` for every pid in `path` to be gone, then asserts (and kills) any left."""
    deadline = time.monotonic() + seconds
    while any(alive(p) for p in read_pids(path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert_all_gone(read_pids(path))


def read_pids(path: Path) -> list[int]:
    try:
        return [int(line) for line in path.read_text().split()]
    except FileNotFoundError:
        return []


def assert_all_gone(pids: list[int]) -> None:
    left = [p for p in pids if alive(p)]
    for p in left:  # never leave a process behind, even when the test fails
        os.kill(p, signal.SIGKILL)
    assert not left, f"processes left behind: {left}"


def test_sigint_stops_every_child_and_grandchild_after_the_grace(tmp_path):
    proc, pids = start_stubborn(tmp_path, "--grace", "1")
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=HANG)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 130, err
    # SIGKILL after the 1 s grace asked for, not the default 10 s; the bound on the wall time only
    # guards against a stop that never comes (a loaded machine is slow, not hung).
    assert "SIGKILL after 1.0s" in err, err
    assert 1 <= elapsed < 1 + 60, elapsed
    assert_all_gone(read_pids(pids))
    assert "got SIGINT" in err
    # Shards the stop cut short are "stopped", not failures of their own.
    assert "2 shards: 0 ok, 0 failed, 0 timed out, 2 stopped" in err, err
    assert "shard 0 stopped (killed by SIGKILL); log: " in err, err
    for i in range(2):
        status = json.loads((tmp_path / "scratch" / f"w{i}" / "status.json").read_text())
        assert status["interrupted"] is True and status["signal_name"] == "SIGKILL"


def test_second_sigint_skips_the_grace(tmp_path):
    grace = 3600  # beyond the hang guard: a second SIGINT that did not skip it fails the test
    proc, pids = start_stubborn(tmp_path, "--grace", str(grace))
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    # The second only once the first was read: two sent at once may arrive as one.
    first = stderr_until(proc, "got SIGINT: ")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 130, first + err
    assert time.monotonic() - t0 < grace
    assert "got SIGINT again" in first + err, first + err
    assert_all_gone(read_pids(pids))


def stderr_until(proc: subprocess.Popen, text: str) -> str:
    """What `proc` writes on its stderr pipe up to and including `text` (then stops reading)."""
    import select

    seen = b""
    deadline = time.monotonic() + HANG
    while text.encode() not in seen:
        assert time.monotonic() < deadline, f"{text!r} never came on stderr: {seen.decode()}"
        ready, _, _ = select.select([proc.stderr], [], [], 0.5)
        if ready:
            chunk = os.read(proc.stderr.fileno(), 65536)
            assert chunk, f"stderr ended before {text!r}: {seen.decode()}"
            seen += chunk
    return seen.decode(errors="replace")


def test_sigterm_and_sighup_exit_128_plus_n(tmp_path):
    for sig in (signal.SIGTERM, signal.SIGHUP):
        sub = tmp_path / sig.name
        sub.mkdir()
        proc, pids = start_stubborn(sub, "--grace", "0.5", shards=1)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=HANG)
        assert proc.returncode == 128 + sig, err
        assert_all_gone(read_pids(pids))


def test_timeout_stops_the_whole_group_and_exits_1(tmp_path):
    # Long enough for both children to start and write their pids on a loaded machine.
    proc, pids = start_stubborn(tmp_path, "--timeout", "5", "--grace", "0.5")
    _, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 1, err
    assert "2 timed out" in err
    assert_all_gone(read_pids(pids))
    for i in range(2):
        status = json.loads((tmp_path / "scratch" / f"w{i}" / "status.json").read_text())
        assert status["timed_out"] is True


def test_shards_not_started_after_a_signal_get_no_status(tmp_path):
    stale = ("w1/status.json", "w1/rec/mm.json", "w1/worker.log")
    proc, pids = start_stubborn(tmp_path, "--grace", "0.5", shards=2, devices="0", stale=stale)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=HANG)
    assert proc.returncode == 130
    assert (tmp_path / "scratch" / "w0" / "status.json").exists()
    # Shard 1 never started: nothing of the earlier run may pass for its outcome or records.
    assert not (tmp_path / "scratch" / "w1" / "status.json").exists()
    assert not (tmp_path / "scratch" / "w1" / "rec").exists()
    assert not (tmp_path / "scratch" / "w1" / "worker.log").exists()
    assert_all_gone(read_pids(pids))


def test_children_die_with_a_sigkilled_spawner(tmp_path):
    # PDEATHSIG reaches the direct child only (see spawn/src/signal.rs), so the child execs
    # into its TERM-ignoring payload instead of leaving a grandchild.
    plan = write_plan(tmp_path / "scratch", SHARDS[:2])
    pids = tmp_path / "pids"
    proc = subprocess.Popen(
        [tool("spawn"), "--plan", str(plan), "--backend", "cuda", "--devices", "0,1", "--",
         "sh", "-c", 'echo $$ >> "$0"; trap "" TERM; exec sleep 1000', str(pids)],
        env=clean_env(), stderr=subprocess.DEVNULL)
    wait_for_pids(pids, 2, proc)
    proc.kill()
    proc.wait(timeout=HANG)
    wait_until_gone(pids, HANG)


@pytest.mark.parametrize("args, needle", [
    (["--devices", "0,,1", "--", "true"], "device 2 is empty"),
    (["--devices", "0", "--timeout", "-3", "--", "true"], "give a number of seconds above 0"),
    (["--devices", "0", "--", "definitely-not-a-command"], "not found in PATH"),
])
def test_bad_input_exits_2_and_starts_nothing(tmp_path, args, needle):
    plan = write_plan(tmp_path / "scratch", SHARDS[:2])
    done = subprocess.run([tool("spawn"), "--plan", str(plan), "--backend", "cuda", *args],
                          env=clean_env(), capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 2
    assert needle in done.stderr
    assert not (tmp_path / "scratch" / "w0" / "rec").exists()


@pytest.mark.parametrize("no_color", ["", "1"])
def test_on_a_terminal_progress_is_a_live_line_per_device(tmp_path, no_color):
    """With stderr on a terminal: live per-device lines, redrawn in place, coloured unless
    NO_COLOR is set; the plain start/end lines are for logs only."""
    plan = write_plan(tmp_path / "scratch", SHARDS)
    env = clean_env(NO_COLOR=no_color) if no_color else clean_env()
    code, screen = on_a_terminal([tool("spawn"), "--plan", str(plan), "--backend", "cuda",
                                  "--devices", "0,1", "--", "sh", "-c", "sleep 0.6"], env)
    assert code == 0, screen
    assert "device 0" in screen and "device 1" in screen and "running" in screen, screen
    assert "\x1b[2F\x1b[J" in screen, "live lines are redrawn in place"
    assert "started on device" not in screen, "no plain per-event lines on a terminal"
    assert "3 shards: 3 ok" in screen
    assert ("\x1b[32mok\x1b[0m" in screen) is (no_color == ""), screen


# A child with a tree below it: five sleepers in its group and one that left it (setsid).
TREE = r"""
for i in 1 2 3 4 5; do sleep 300 & echo $! >> "$0"; done
setsid sleep 300 & echo $! >> "$0"
echo $$ >> "$0"
wait
"""


def test_a_sigkilled_spawner_leaves_no_process_of_any_child_tree(tmp_path):
    """PR_SET_PDEATHSIG reaches the children only; the watchdog takes down their trees."""
    plan = write_plan(tmp_path / "scratch", SHARDS)
    pids = tmp_path / "pids"
    proc = subprocess.Popen(
        [tool("spawn"), "--plan", str(plan), "--backend", "cuda", "--devices", "0,1,2", "--",
         "sh", "-c", TREE, str(pids)],
        env=clean_env(), stderr=subprocess.PIPE, text=True)
    wait_for_pids(pids, 3 * 7, proc)
    proc.kill()
    _, err = proc.communicate(timeout=HANG)
    wait_until_gone(pids, HANG)
    assert "watchdog: warmup-spawn died" in err, err


def test_the_callers_death_stops_the_run_with_the_grace(tmp_path):
    """kill -9 of whatever started warmup-spawn: the children get SIGTERM and their grace."""
    plan = write_plan(tmp_path / "scratch", SHARDS[:2])
    pids, terms = tmp_path / "pids", tmp_path / "terms"
    child = ('trap \'echo $$ >> "$1"; exit 0\' TERM; echo $$ >> "$0"; '
             'while :; do sleep 0.1; done')
    caller = subprocess.Popen(
        ["sh", "-c", '"$@" & wait', "caller", tool("spawn"), "--plan", str(plan), "--backend",
         "cuda", "--devices", "0,1", "--grace", "30", "--", "sh", "-c", child, str(pids),
         str(terms)],
        env=clean_env(), stderr=subprocess.DEVNULL)
    wait_for_pids(pids, 2, caller)
    caller.kill()
    caller.wait(timeout=HANG)
    wait_until_gone(pids, HANG)
    assert sorted(read_pids(terms)) == sorted(read_pids(pids)), "each child got SIGTERM"
    # warmup-spawn writes a child's status after reaping it: on a loaded machine that can come
    # after the child is gone.
    status_file = tmp_path / "scratch" / "w0" / "status.json"
    deadline = time.monotonic() + HANG
    while not status_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    status = json.loads(status_file.read_text())
    assert status["interrupted"] is True and status["exit_code"] == 0


@pytest.mark.parametrize(("only", "first", "second"), [([], 0, 1), (["--only", "1,2"], 1, 2)])
def test_a_device_is_handed_on_only_once_a_shards_escaped_processes_are_gone(
        tmp_path, only, first, second):
    """The first shard leaves a sleeper in a session of its own and exits 0 once the sleeper has
    left its process group; the second, on the same device, looks for it as it starts. With
    --only, a shard's marker is its index in the plan, not its place in the run."""
    scratch = tmp_path / "scratch"
    plan = write_plan(scratch, SHARDS[:second + 1])
    sleeper = tmp_path / "sleeper"
    child = rf"""
case "$FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR" in
  */w{first}/rec) setsid sleep 300 & echo $! > "$0"
     # Exit only once it has left this group: then only its marker finds it.
     n=0; until [ "$(cut -d' ' -f5 /proc/$!/stat)" = $! ] || [ $n -ge 3000 ]; do
       sleep 0.01; n=$((n + 1)); done ;;
  *) state=$(cut -d' ' -f3 "/proc/$(cat "$0")/stat" 2>/dev/null)
     if [ -n "$state" ] && [ "$state" != Z ]; then echo "sleeper alive"; exit 9; fi ;;
esac
"""
    done = subprocess.run(
        [tool("spawn"), "--plan", str(plan), *only, "--backend", "cuda", "--devices", "0",
         "--grace", "5", "--", "sh", "-c", child, str(sleeper)],
        env=clean_env(), capture_output=True, text=True, timeout=HANG)
    left = [p for p in read_pids(sleeper) if alive(p)]
    assert_all_gone(read_pids(sleeper))
    assert done.returncode == 0, done.stderr + (scratch / f"w{second}/worker.log").read_text()
    assert not left
    assert "exited, leaving processes behind" in done.stderr, done.stderr
    status = json.loads((scratch / f"w{first}" / "status.json").read_text())
    assert status["exit_code"] == 0 and status["interrupted"] is False


def read_only(path: Path, command: list[str]) -> list[str]:
    """`command` run with `path` read-only: by its mode for a user, by a read-only bind mount
    in a mount namespace of its own for root (whom modes do not stop)."""
    if os.geteuid() != 0:
        for p in [path, *path.rglob("*")]:
            if p.is_dir():
                p.chmod(0o555)
        return command
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("root without mount namespaces: no way to make a read-only folder")
    q = shlex.quote(str(path))
    return ["unshare", "-m", "sh", "-c",
            f'mount --bind {q} {q} && mount -o remount,ro,bind {q} {q} && exec "$@"', "ro",
            *command]


def test_a_read_only_scratch_is_refused_saying_what_to_do(tmp_path):
    scratch = tmp_path / "scratch"
    plan = write_plan(scratch, SHARDS[:2])
    command = read_only(scratch, [tool("spawn"), "--plan", str(plan), "--backend", "cuda",
                                  "--devices", "0", "--", "true"])
    try:
        done = subprocess.run(command, env=clean_env(), capture_output=True, text=True,
                              timeout=HANG)
    finally:
        for p in [scratch, *scratch.rglob("*")]:
            if p.is_dir():
                p.chmod(0o755)
    assert done.returncode == 2, done.stderr
    assert "shard 0's folder" in done.stderr and "cannot be written" in done.stderr, done.stderr
    assert "make the scratch writable" in done.stderr
    assert "removing the stale" not in done.stderr
    assert not (scratch / "w0" / "worker.log").exists()


def test_warmup_spawn_and_the_scripts_look_in_warmup_bin_dir_before_their_own_folder(tmp_path):
    """One lookup order (toolkit/src/tools.rs, scripts/lib/warmup-common.sh): WARMUP_BIN_DIR, then
    where the caller is. Real tools lie beside warmup-spawn and beside the copied script; the fake
    ones in WARMUP_BIN_DIR must be the ones that run."""
    fake = tmp_path / "fake"
    fake.mkdir()
    said = tmp_path / "said"
    for name in ("warmup-merge", "warmup-plan"):
        script = fake / name
        answer = "printf \"decision=plain\\nreason='fake plan'\\ncommand=(true)\\n\""
        answer = f"[ \"$1\" != --format ] || {{ {answer}; exit 0; }}"
        script.write_text(f"#!/bin/sh\necho {name} >> '{said}'\n{answer}\nexit 1\n")
        script.chmod(0o755)
    scratch = tmp_path / "s"
    write_plan(scratch, SHARDS[:1])
    env = clean_env(WARMUP_BIN_DIR=str(fake))
    spawned = subprocess.run([tool("spawn"), "--plan", str(scratch), "--measure", "--devices", "0",
                              "--backend", "cuda", "--", "true"],
                             env=env, capture_output=True, text=True, timeout=HANG)
    assert spawned.returncode == 0, spawned.stderr
    # The script, installed beside real tools (its own folder), still asks the fake warmup-plan.
    installed = tmp_path / "bin"
    (installed / "lib").mkdir(parents=True)
    for name in ("warmup", "lib/warmup-common.sh"):
        (installed / name).write_bytes((ROOT / "scripts" / name).read_bytes())
    (installed / "warmup").chmod(0o755)
    (installed / "warmup-plan").symlink_to(tool("plan"))
    script = subprocess.run([str(installed / "warmup"), "--", "true"], env=env,
                            capture_output=True, text=True, timeout=HANG)
    assert script.returncode == 0 and "fake plan" in script.stderr, script.stderr
    assert said.read_text().split() == ["warmup-merge", "warmup-plan"]


def test_measure_and_finish_run_their_tools_alike_into_the_record_folder_one_rule_reads(tmp_path):
    """One way to run a tool and one record-folder rule (protocol::env::record_folder): a blank
    --record-dir is none under --measure as under --finish (the variable unread), so both publish
    into SCRATCH/merged, and both give warmup-merge and warmup-publish the same arguments."""
    bin_dir, said = tmp_path / "bin", tmp_path / "said"
    bin_dir.mkdir()
    for name in ("warmup-merge", "warmup-publish"):
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\necho \"{name} $*\" >> '{said}'\nexec '{tool(name[7:])}' \"$@\"\n")
        script.chmod(0o755)
    scratch = tmp_path / "s"
    write_plan(scratch, SHARDS[:1])
    record = ('[ -z "$FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR" ] || { mkdir -p "$FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR" && '
              'echo \'{"k": {"key": {"BLOCK": 1}}}\' > "$FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR/mm.json"; }')
    env = clean_env(WARMUP_BIN_DIR=str(bin_dir), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "elsewhere"))
    measured = subprocess.run([tool("spawn"), "--plan", str(scratch), "--measure", "--record-dir", " ",
                               "--devices", "0", "--backend", "cuda", "--", "sh", "-c", record],
                              env=env, cwd=tmp_path, capture_output=True, text=True, timeout=HANG)
    assert measured.returncode == 0, measured.stderr
    by_measure = said.read_text().splitlines()
    said.unlink()
    finished = subprocess.run([tool("spawn"), "--plan", str(scratch), "--finish", "--record-dir", " "],
                              env=env, cwd=tmp_path, capture_output=True, text=True, timeout=HANG)
    assert finished.returncode == 0, finished.stderr
    assert said.read_text().splitlines() == by_measure
    merged = scratch / "merged"
    assert by_measure == [f"warmup-merge --op mm --in-scratch {scratch} --summary -",
                          f"warmup-publish --op mm --format json --record-dir {merged} -- {scratch}"]
    assert (merged / "mm.json").is_file() and not (tmp_path / "elsewhere").exists()
    assert not (tmp_path / " ").exists()
