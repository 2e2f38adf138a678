"""The measurement started with the sweep: the harness's gate, and warmup-spawn --measure (through
scripts/warmup) driving it.

The benchmark is tests/triton_fixture under the real harness (as in test_harness.py); its
FIXTURE_EVENTS file says, in the order it happened, when each process had collected, ran its
first test (and whether the configs were published then) and finished. Every claim about what
ran while what is read from that order, never from timings: FIXTURE_CHILD_HOLD makes the sweep
children wait for the measurement's collection, so that an overlap, where there is one, is there
by construction.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from support import BIN_DIR, HANG, clean_env, run_tool
from test_harness import (SCRIPT, SHAPES, Run, bench_command, bench_env, copy_records, key_probe, recorded,
                          shape_file)
from test_warmup import EXAMPLE, finish, wait_for
from test_warmup import Run as FixtureRun
from test_warmup import bench_command as fixture_command

__all__ = ["recorded"]  # the module-scoped record the gate tests replay

GUARD = 180  # seconds: against a hang only (pytest and Triton start slowly on a busy machine)


class Events:
    """FIXTURE_EVENTS read back: `(kind, who, pid, words...)` tuples in the order they happened."""

    def __init__(self, path: Path):
        self.path = path

    def all(self) -> list[tuple[str, ...]]:
        try:
            return [tuple(ln.split()) for ln in self.path.read_text().splitlines()]
        except FileNotFoundError:
            return []

    def index(self, kind: str, who: str) -> list[int]:
        return [i for i, e in enumerate(self.all()) if e[:2] == (kind, who)]

    def of(self, kind: str, who: str) -> list[tuple[str, ...]]:
        return [e for e in self.all() if e[:2] == (kind, who)]

    def pids(self) -> list[int]:
        return sorted({int(e[2]) for e in self.all()})


class Gate:
    """A pipe, as warmup-spawn --measure makes it: the benchmark inherits the read end, which
    WARMUP_HARNESS_GATE names as fd:N; only this test holds the write end."""

    def __init__(self):
        self.read, fd = os.pipe()
        self.fd: int | None = fd

    @property
    def value(self) -> str:
        return f"fd:{self.read}"

    def say(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\n")

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


@pytest.fixture
def gate():
    g = Gate()
    yield g
    g.close()
    os.close(g.read)


def gated(work: Path, gate: Gate, *extra: str, **env: str) -> subprocess.Popen:
    """The benchmark over SHAPES, started as warmup-spawn --measure starts the measurement: the
    replay variable names a folder with no record in it yet."""
    env.setdefault("FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR", str(work / "rec"))
    full = bench_env(work, WARMUP_HARNESS_GATE=gate.value, FIXTURE_EVENTS=str(work / "events"), **env)
    return subprocess.Popen([*bench_command(shape_file(work, SHAPES)), *extra], env=full, cwd=work,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            pass_fds=(gate.read,))


def ended(proc: subprocess.Popen, work: Path) -> Run:
    try:
        out, err = proc.communicate(timeout=HANG)
    finally:
        if proc.poll() is None:  # a hang: leave nothing behind
            proc.kill()
            proc.communicate()
    return Run(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), work / "trace.jsonl")


def with_path(work: Path) -> str:
    """The benchmark's PYTHONPATH with `work` first, for a plugin a test writes there."""
    return f"{work}{os.pathsep}{bench_env(work)['PYTHONPATH']}"


# --- the gate, driven by hand ---------------------------------------------------------------------

def test_the_gate_holds_the_first_test_until_replay_then_checks_and_replays_the_record(recorded, tmp_path, gate):
    folder, _ = recorded
    events = Events(tmp_path / "events")
    # Both variables are set, as the script leaves them: the gate picks the replay's.
    proc = gated(tmp_path, gate, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "live-rec"))
    wait_for(lambda: events.of("collected", "measure") or proc.poll() is not None, "the collection", GUARD)
    assert proc.poll() is None, ended(proc, tmp_path).output
    copy_records(folder, tmp_path / "rec")  # published only now, after collection
    gate.say("replay")
    run = ended(proc, tmp_path)
    assert run.returncode == 0, run.output
    [first] = events.of("test", "measure")
    assert first[3] == "published", events.all()
    assert run.session["timed"] == {}, "the measurement swept"
    assert "FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR" not in run.session["env"]
    assert "WARMUP_HARNESS_GATE" not in run.session["env"]
    assert "op mm: replayed 12, swept 0 live" in run.stderr
    assert any("the sweep is done: replaying its configs" in ln for ln in run.harness_lines()), run.stderr
    assert not (tmp_path / "live-rec").exists()


def test_pytests_terminal_output_is_held_until_the_gate_opens(recorded, tmp_path, gate):
    """On a terminal it would land in warmup-spawn's live view; it comes when the session
    would have started without the overlap."""
    folder, _ = recorded
    events = Events(tmp_path / "events")
    out = tmp_path / "stdout"
    full = bench_env(tmp_path, WARMUP_HARNESS_GATE=gate.value, FIXTURE_EVENTS=str(events.path),
                     FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(tmp_path / "rec"), PYTHONUNBUFFERED="1")
    with open(out, "w") as stdout:  # -v against the command's -q: the header is written
        proc = subprocess.Popen([*bench_command(shape_file(tmp_path, SHAPES)), "-v"], env=full,
                                cwd=tmp_path, stdout=stdout, stderr=subprocess.PIPE, text=True,
                                pass_fds=(gate.read,))
        try:
            wait_for(lambda: events.of("collected", "measure") or proc.poll() is not None, "the collection", GUARD)
            held = out.read_text()
            copy_records(folder, tmp_path / "rec")
            gate.say("replay")
            _, err = proc.communicate(timeout=HANG)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 0, err
    assert held == "", held
    text = out.read_text()
    assert "test session starts" in text and "collected 4 items" in text and "4 passed" in text, text


def test_live_at_the_gate_tunes_live_and_records_where_the_record_variable_says(tmp_path, gate):
    proc = gated(tmp_path, gate, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "live-rec"))
    gate.say("live")
    run = ended(proc, tmp_path)
    assert run.returncode == 0, run.output
    assert sum(run.session["timed"].values()) > 0, "nothing was tuned"
    assert "FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR" not in run.session["env"]
    assert (tmp_path / "live-rec" / "mm.json").is_file()
    assert any("recovered no configs: tuning live" in ln for ln in run.harness_lines()), run.stderr


def test_a_gate_closed_without_a_word_ends_the_session_before_any_test(tmp_path, gate):
    events = Events(tmp_path / "events")
    proc = gated(tmp_path, gate)
    gate.close()  # warmup-spawn is gone, most likely before the harness reached its gate
    run = ended(proc, tmp_path)
    assert run.returncode == 2, run.output
    assert "warmup-spawn stopped the run, or was killed); no test runs" in run.output
    assert events.of("collected", "measure") and not events.of("test", "measure"), events.all()


def test_a_measurement_at_its_gate_has_started_nothing(tmp_path, gate):
    """Not even Triton's own key (early_key.py), which a session hashes from pytest's start: the
    sweep beside it has the CPUs until the gate opens."""
    said = tmp_path / "key"
    proc = gated(tmp_path, gate, "-p", "key_probe", PYTHONPATH=key_probe(tmp_path, said))
    gate.say("live")
    run = ended(proc, tmp_path)
    assert run.returncode == 0, run.output
    assert said.read_text() == "False"


def test_a_measurement_behind_an_open_gate_stops_when_the_script_is_killed(recorded, tmp_path, gate):
    """warmup-spawn holds the pipe until the measurement ends; end of file then is its death."""
    folder, _ = recorded
    events = Events(tmp_path / "events")
    proc = gated(tmp_path, gate, FIXTURE_MEASURE_HANG="1")
    copy_records(folder, tmp_path / "rec")
    gate.say("replay")
    wait_for(lambda: events.of("test", "measure") or proc.poll() is not None, "the first test", GUARD)
    assert proc.poll() is None, ended(proc, tmp_path).output
    gate.close()
    run = ended(proc, tmp_path)
    assert run.returncode == -signal.SIGTERM, run.output
    assert "warmup-spawn is gone (killed): this measurement stops with it" in run.stderr, run.stderr


@pytest.mark.parametrize("what", ["a path", "a regular file's descriptor", "a closed descriptor",
                                  "a number no descriptor has", "a digit that is not ASCII"])
def test_a_gate_that_is_not_an_inherited_pipe_is_a_usage_error_before_any_test(tmp_path, what):
    """Only a pipe warmup-spawn made and the measurement inherited is a gate: a path (the FIFO
    an earlier run left in a scratch) is no longer one."""
    events = Events(tmp_path / "events")
    regular = tmp_path / "gate"
    regular.write_text("replay\n")
    with open(regular) as f:
        value, fds, said = {
            "a path": (str(regular), (), "not fd:N"),
            "a regular file's descriptor": (f"fd:{f.fileno()}", (f.fileno(),), "is not a pipe"),
            "a closed descriptor": ("fd:987", (), "descriptor 987 is not open"),
            "a number no descriptor has": ("fd:99999999999999999999", (), "no descriptor has that number"),
            "a digit that is not ASCII": ("fd:\u0661", (), "not fd:N"),  # int() reads it as 1: stdout
        }[what]
        full = bench_env(tmp_path, WARMUP_HARNESS_GATE=value, FIXTURE_EVENTS=str(events.path),
                         FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(tmp_path / "rec"))
        proc = subprocess.Popen(bench_command(shape_file(tmp_path, SHAPES)), env=full, cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, pass_fds=fds)
    run = ended(proc, tmp_path)
    assert run.returncode == 4, run.output
    assert f"WARMUP_HARNESS_GATE={value}: " in run.stderr and said in run.stderr, run.stderr
    assert not events.of("collected", "measure"), "refused at configure, before collecting"


def test_the_gate_is_not_inherited_by_what_the_measurement_starts(recorded, tmp_path, gate):
    """The harness marks it close-on-exec at configure: a process the session starts cannot hold
    warmup-spawn's gate, nor read a line meant for the measurement."""
    folder, _ = recorded
    events = Events(tmp_path / "events")
    probe = tmp_path / "probe.py"
    probe.write_text("import os, subprocess, sys, pytest\n"
                     "@pytest.hookimpl(trylast=True)\n"
                     "def pytest_configure(config):\n"
                     "    fd = os.environ['WARMUP_HARNESS_GATE'][3:]\n"
                     "    code = 'import os, sys; os.fstat(int(sys.argv[1]))'\n"
                     "    r = subprocess.run([sys.executable, '-c', code, fd], close_fds=False)\n"
                     "    open(os.environ['PROBE_OUT'], 'w').write(str(r.returncode))\n")
    proc = gated(tmp_path, gate, "-p", "probe", PYTHONPATH=with_path(tmp_path),
                 PROBE_OUT=str(tmp_path / "probe.out"))
    wait_for(lambda: events.of("collected", "measure") or proc.poll() is not None, "the collection", GUARD)
    copy_records(folder, tmp_path / "rec")
    gate.say("replay")
    run = ended(proc, tmp_path)
    assert run.returncode == 0, run.output
    assert (tmp_path / "probe.out").read_text() == "1", "a process the session started held the gate"


def test_a_pytest_xdist_worker_behind_the_gate_is_refused_before_any_test(tmp_path, gate):
    """Each worker would wait at the gate, and only one would read its line. A worker is known by
    `config.workerinput`, which pytest-xdist sets before configure (as this plugin does)."""
    events = Events(tmp_path / "events")
    (tmp_path / "as_worker.py").write_text("import pytest\n"
                                           "@pytest.hookimpl(tryfirst=True)\n"
                                           "def pytest_configure(config):\n"
                                           "    config.workerinput = {'workerid': 'gw0'}\n")
    run = ended(gated(tmp_path, gate, "-p", "as_worker",
                      PYTHONPATH=with_path(tmp_path)), tmp_path)
    assert run.returncode == 4, run.output
    assert "WARMUP_HARNESS_GATE is set in a pytest-xdist worker" in run.stderr, run.stderr
    assert not events.of("test", "measure")


def test_a_bad_record_behind_the_gate_is_the_usage_error_a_replay_gives_at_start(tmp_path, gate):
    events = Events(tmp_path / "events")
    proc = gated(tmp_path, gate)
    wait_for(lambda: events.of("collected", "measure") or proc.poll() is not None, "the collection", GUARD)
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "mm.json").write_text("{not json")  # "published" after collection
    gate.say("replay")
    run = ended(proc, tmp_path)
    assert run.returncode == 4, run.output
    assert f"{tmp_path / 'rec' / 'mm.json'}:1:2: the record is not valid JSON" in run.stderr, run.stderr
    assert not events.of("test", "measure")


# --- scripts/warmup starting the measurement with the sweep ---------------------------------------

def script_env(work: Path, **extra: str) -> dict[str, str]:
    extra.setdefault("FIXTURE_EVENTS", str(work / "events"))
    return bench_env(work, WARMUP_BIN_DIR=str(BIN_DIR), FLAGGEMS_VENDOR="nvidia", TMPDIR=str(work), **extra)


def script_argv(command: list[str], *opts: str) -> list[str]:
    return [str(SCRIPT), "--gpus", "2", "--devices", "0,1", *opts, "--", *command]


def sweep(work: Path, command: list[str] | None = None, stdin=subprocess.DEVNULL, **env: str) -> Run:
    command = command if command is not None else bench_command(shape_file(work, SHAPES))
    proc = subprocess.run(script_argv(command), env=script_env(work, **env), cwd=work, stdin=stdin,
                          capture_output=True, text=True, timeout=HANG)
    return Run(proc, work / "trace.jsonl")


def measurements(run: Run) -> list[dict]:
    return [s for s in run.sessions if s["worker"] is None]


def test_the_measurement_collects_during_the_sweep_and_tests_only_once_the_configs_are_published(tmp_path):
    events = Events(tmp_path / "events")
    (tmp_path / "stdin").write_text("")
    command = bench_command(shape_file(tmp_path, SHAPES), "-s")  # -s: pytest leaves stdin alone
    with open(tmp_path / "stdin") as stdin:  # the measurement's, as the exec'd COMMAND had it
        run = sweep(tmp_path, command, stdin=stdin, FIXTURE_CHILD_HOLD="1",
                    FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "records"))
    assert run.returncode == 0, run.output
    [collected] = events.index("collected", "measure")
    finished = events.index("finished", "child")
    [first_test] = events.index("test", "measure")
    assert len(finished) == 2 and collected < min(finished), events.all()
    assert max(finished) < first_test, events.all()
    assert events.all()[first_test][3:] == ("published", str(tmp_path / "stdin")), events.all()
    [measured] = measurements(run)
    assert measured["timed"] == {}, "the measurement swept"
    assert measured["env"]["FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR"] == str(tmp_path / "records")
    assert "op mm: replayed 12, swept 0 live" in run.stderr
    assert "starts alongside the sweep" in run.stderr, run.stderr
    assert not list(tmp_path.glob("warmup_*")), "the scratch is removed after a clean run"


def test_a_relative_record_folder_with_blanks_is_where_the_measurement_looks_for_the_configs(tmp_path):
    """The measurement is told where warmup-publish will publish before it does: the folder as the
    tool reads the record variable (trimmed, absolute), or the configs would land elsewhere and the
    measurement would be stopped and COMMAND run a second time."""
    run = sweep(tmp_path, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=" records ")
    assert run.returncode == 0, run.output
    [measured] = measurements(run)
    assert measured["env"]["FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR"] == str(tmp_path / "records")
    assert "op mm: replayed 12, swept 0 live" in run.stderr
    assert "where the measurement looks for them" not in run.stderr, run.stderr
    assert "running COMMAND again" not in run.stderr, run.stderr


def test_a_sweep_that_recovers_nothing_releases_the_waiting_measurement_to_tune_live(tmp_path):
    events = Events(tmp_path / "events")
    records = tmp_path / "records"
    run = sweep(tmp_path, FIXTURE_CHILD_HOLD="crash", FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(records))
    assert run.returncode == 0, run.output
    assert "no configs recovered" in run.stderr, run.stderr
    [collected] = events.index("collected", "measure")  # one measurement: no second run
    assert collected < min(events.index("test", "child")), events.all()
    [measured] = measurements(run)
    assert sum(measured["timed"].values()) > 0, "the measurement did not tune"
    assert measured["env"]["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"] == str(records)
    assert "FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR" not in measured["env"]
    assert (records / "mm.json").is_file(), "the live run records where the caller asked"
    assert "running COMMAND again" not in run.stderr


def start_held_sweep(work: Path) -> subprocess.Popen:
    """scripts/warmup with children that hang once the measurement has collected, in a session of
    its own as a terminal's foreground job is; returns once the measurement waits at its gate."""
    events = Events(work / "events")
    proc = subprocess.Popen(script_argv(bench_command(shape_file(work, SHAPES)), "--grace", "5"),
                            env=script_env(work, FIXTURE_CHILD_HOLD="hang"), cwd=work,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    wait_for(lambda: (events.of("collected", "measure") and len(events.of("test", "child")) == 2)
             or proc.poll() is not None, "the children's first tests and the measurement's collection", GUARD)
    assert proc.poll() is None, proc.communicate()
    return proc


@pytest.mark.parametrize("sig, group, code", [(signal.SIGINT, True, 130), (signal.SIGTERM, False, 143),
                                              (signal.SIGHUP, False, 129)])
def test_a_stop_mid_sweep_stops_the_waiting_measurement_too_and_no_test_runs(tmp_path, sig, group, code):
    """Ctrl-C is a SIGINT to the terminal's foreground group: the script and the measurement get
    it; SIGTERM and SIGHUP go to the script alone."""
    events = Events(tmp_path / "events")
    proc = start_held_sweep(tmp_path)
    if group:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    err, left = finish(proc, events.pids())
    assert not left, f"processes left behind: {left}\n{err}"
    assert proc.returncode == code, err
    assert not events.of("test", "measure"), events.all()
    assert "measurement does not run" in err, err


def test_a_sigkilled_script_leaves_no_process_and_the_measurement_runs_no_test(tmp_path):
    events = Events(tmp_path / "events")
    proc = start_held_sweep(tmp_path)
    proc.kill()
    err, left = finish(proc, events.pids())
    assert not left, f"processes left behind: {left}\n{err}"
    assert not events.of("test", "measure"), events.all()
    [(_, _, pid)] = events.of("finished", "measure")  # it ended as the gate said, not by a kill
    assert int(pid) in events.pids()


def test_a_script_killed_while_the_measurement_runs_takes_the_measurement_with_it(tmp_path):
    """As when the script ended by exec'ing COMMAND: the measurement was the script's process."""
    events = Events(tmp_path / "events")
    proc = subprocess.Popen(script_argv(bench_command(shape_file(tmp_path, SHAPES))),
                            env=script_env(tmp_path, FIXTURE_MEASURE_HANG="1"), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    wait_for(lambda: events.of("test", "measure") or proc.poll() is not None, "the measurement's first test", GUARD)
    assert proc.poll() is None, proc.communicate()
    proc.kill()
    err, left = finish(proc, events.pids())
    assert not left, f"processes left behind: {left}\n{err}"
    assert "warmup-spawn is gone (killed): this measurement stops with it" in err, err


def test_sigint_to_the_script_alone_once_the_measurement_runs_stops_it_with_status_130(tmp_path):
    """Issue 26, item 11: a SIGINT to the script's process alone (not its group), after "sweep
    done", while the measurement runs its tests. The script is warmup-spawn --measure by then, and
    one stop signal is one stop for the measurement too: SIGTERM, and the run's status is 130."""
    events = Events(tmp_path / "events")
    proc = subprocess.Popen(script_argv(bench_command(shape_file(tmp_path, SHAPES)), "--grace", "5"),
                            env=script_env(tmp_path, FIXTURE_MEASURE_HANG="1"), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    wait_for(lambda: events.of("test", "measure") or proc.poll() is not None, "the measurement's first test", GUARD)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    err, left = finish(proc, events.pids(), timeout=GUARD)
    assert not left, f"processes left behind: {left}\n{err}"
    assert "sweep done in" in err, err
    assert proc.returncode == 130, err
    assert "stopped by a signal: the measurement was stopped" in err, err


def test_a_killed_runs_orphaned_measurement_cannot_take_the_next_runs_gate(tmp_path):
    """Issue 26, item 1: run A's script is SIGKILLed while its measurement is
    still importing; run B, on the same scratch, starts at once. A's measurement, orphaned, only
    ever holds A's own gate, whose writer is dead: it ends at its gate without a test, and B's
    measurement gets B's configs and finishes."""
    scratch = tmp_path / "scratch"
    a_events, b_events = Events(tmp_path / "a-events"), Events(tmp_path / "b-events")
    a_err = tmp_path / "a-stderr"
    command = bench_command(shape_file(tmp_path, SHAPES))
    with open(a_err, "w") as err_file:  # a file: the orphan keeps A's stderr open after A is gone
        a = subprocess.Popen(script_argv(command, "--scratch", str(scratch)),
                             env=script_env(tmp_path, FIXTURE_EVENTS=str(a_events.path), FIXTURE_IMPORT_SECONDS="8"),
                             cwd=tmp_path, stdout=err_file, stderr=err_file, start_new_session=True)
    wait_for(lambda: "starts alongside the sweep" in a_err.read_text() or a.poll() is not None,
             "run A's measurement", GUARD)
    assert a.poll() is None, a_err.read_text()
    [orphan] = [int(w) for w in re.findall(r"the measurement \(pid (\d+)\)", a_err.read_text())]
    os.kill(a.pid, signal.SIGKILL)  # the script alone, as in the issue (warmup-spawn by then)
    a.wait(timeout=HANG)
    b = subprocess.run(script_argv(command, "--scratch", str(scratch)),
                       env=script_env(tmp_path, FIXTURE_EVENTS=str(b_events.path)), cwd=tmp_path,
                       capture_output=True, text=True, timeout=GUARD)

    def story() -> str:  # all a failure here needs (it failed under load once A's watchdog held the lock)
        return (f"\n--- run A's stderr, its orphan's included:\n{a_err.read_text()}\n--- run B's stderr:\n"
                f"{b.stderr}\n--- A's events: {a_events.all()}\n--- B's events: {b_events.all()}")

    assert b.returncode == 0, story()
    assert "op mm: replayed 12, swept 0 live" in b.stderr, story()
    wait_for(lambda: not os.path.exists(f"/proc/{orphan}") or
             Path(f"/proc/{orphan}/stat").read_text().split(")")[-1].split()[0] == "Z",
             "run A's orphaned measurement", GUARD)
    assert a_events.of("collected", "measure") and not a_events.of("test", "measure"), story()
    assert a_events.of("finished", "measure"), "it ended at its gate, not by a kill" + story()
    assert "warmup-spawn stopped the run, or was killed); no test runs" in a_err.read_text(), story()


@pytest.mark.parametrize("how", ["blocks the plugin", "runs through a wrapper"])
def test_a_command_that_would_not_load_the_harness_is_measured_after_the_sweep(tmp_path, how):
    events = Events(tmp_path / "events")
    shapes = shape_file(tmp_path, SHAPES)
    if how == "blocks the plugin":
        command = [*bench_command(shapes, plugin=False), "-p", "no:warmup_harness"]
    else:
        command = ["env", *bench_command(shapes)]
    run = sweep(tmp_path, command, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "records"))
    assert run.returncode == 0, run.output
    # warmup-plan sees it and passes --measure-after: no `-p warmup_harness` added, no early start.
    said = "the measurement starts after the sweep (--measure-after): COMMAND runs as given, no -p warmup_harness added"
    assert said in run.stderr, run.stderr
    [collected] = events.index("collected", "measure")
    assert collected > max(events.index("finished", "child")), events.all()


def test_a_measurement_whose_pytest_cannot_load_the_harness_runs_again_after_the_sweep(tmp_path):
    """The fixture harness of tests/harness records and replays by itself; the harness package is
    not on its path, so the early measurement's `-p warmup_harness` fails before collecting.
    warmup-plan would see that and pass --measure-after: warmup-spawn is run here without it."""
    scratch, records = tmp_path / "s", tmp_path / "records"
    run_tool("shard", "--op", "mm", "--shards", "2", "--out", scratch, EXAMPLE, check=True)
    trace = tmp_path / "trace.jsonl"
    env = clean_env(WARMUP_BIN_DIR=str(BIN_DIR), WARMUP_FIXTURE_TRACE=str(trace), WARMUP_FIXTURE_SWEEP_SECONDS="0.01",
                    FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(records), FLAGGEMS_PERF_CURRENT_OP="mm", TMPDIR=str(tmp_path))
    proc = subprocess.run([str(BIN_DIR / "warmup-spawn"), "--plan", str(scratch), "--measure", "--devices", "0,1",
                           "--backend", "cuda", "--", *fixture_command(EXAMPLE)],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=HANG)
    run = FixtureRun(proc, trace)
    assert run.returncode == 0, run.stderr
    assert 'Error importing plugin "warmup_harness"' in run.stderr, run.stderr
    [again] = [ln for ln in run.lines() if "running COMMAND again" in ln]
    assert "before its gate opened" in again and "(exit 4)" in again, again
    assert len(run.children) == 2
    measured = run.measurement  # the second run: the first wrote no trace
    assert measured["mode"] == "replay" and measured["swept"] == 0
    assert "warmup_harness" not in measured["argv"], "the second run is COMMAND as given"
