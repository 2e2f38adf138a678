"""The measurement started with the sweep: the harness's gate, and scripts/warmup driving it.

The benchmark is tests/triton_fixture under the real harness (as in test_harness.py); its
FIXTURE_EVENTS file says, in the order it happened, when each process had collected, ran its
first test (and whether the configs were published then) and finished. Every claim about what
ran while what is read from that order, never from timings: FIXTURE_CHILD_HOLD makes the sweep
children wait for the measurement's collection, so that an overlap, where there is one, is there
by construction.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from test_harness import SHAPES, Run, bench_command, bench_env, copy_records, recorded, shape_file
from test_warmup import wait_for

__all__ = ["recorded"]  # the module-scoped record the gate tests replay


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
    """A FIFO held open for reading and writing, as scripts/warmup holds it; the benchmark does
    not inherit the descriptor (os.open's are not inheritable)."""

    def __init__(self, path: Path):
        self.path = path
        os.mkfifo(path)
        self.fd: int | None = os.open(path, os.O_RDWR)

    def say(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\n")

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


@pytest.fixture
def gate(tmp_path):
    g = Gate(tmp_path / "gate")
    yield g
    g.close()


def gated(work: Path, gate: Gate, **env: str) -> subprocess.Popen:
    """The benchmark over SHAPES, started as scripts/warmup starts the measurement: the replay
    variable names a folder with no record in it yet."""
    env.setdefault("FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR", str(work / "rec"))
    full = bench_env(work, WARMUP_HARNESS_GATE=str(gate.path), FIXTURE_EVENTS=str(work / "events"), **env)
    return subprocess.Popen(bench_command(shape_file(work, SHAPES)), env=full, cwd=work,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def ended(proc: subprocess.Popen, work: Path) -> Run:
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:  # a hang: leave nothing behind
            proc.kill()
            proc.communicate()
    return Run(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), work / "trace.jsonl")


# --- the gate, driven by hand ---------------------------------------------------------------------

def test_the_gate_holds_the_first_test_until_replay_then_checks_and_replays_the_record(recorded, tmp_path, gate):
    folder, _ = recorded
    events = Events(tmp_path / "events")
    # Both variables are set, as the script leaves them: the gate picks the replay's.
    proc = gated(tmp_path, gate, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "live-rec"))
    wait_for(lambda: events.of("collected", "measure") or proc.poll() is not None, "the collection")
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
    full = bench_env(tmp_path, WARMUP_HARNESS_GATE=str(gate.path), FIXTURE_EVENTS=str(events.path),
                     FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(tmp_path / "rec"), PYTHONUNBUFFERED="1")
    with open(out, "w") as stdout:  # -v against the command's -q: the header is written
        proc = subprocess.Popen([*bench_command(shape_file(tmp_path, SHAPES)), "-v"], env=full,
                                cwd=tmp_path, stdout=stdout, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: events.of("collected", "measure") or proc.poll() is not None, "the collection")
            held = out.read_text()
            copy_records(folder, tmp_path / "rec")
            gate.say("replay")
            _, err = proc.communicate(timeout=120)
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
    gate.close()  # the script is gone, most likely before the harness opened the FIFO
    run = ended(proc, tmp_path)
    assert run.returncode == 2, run.output
    assert "scripts/warmup was stopped or killed); no test runs" in run.output
    assert events.of("collected", "measure") and not events.of("test", "measure"), events.all()


def test_a_measurement_behind_an_open_gate_stops_when_the_script_is_killed(recorded, tmp_path, gate):
    """The script holds the FIFO until the measurement ends; end of file then is its death."""
    folder, _ = recorded
    events = Events(tmp_path / "events")
    proc = gated(tmp_path, gate, FIXTURE_MEASURE_HANG="1")
    copy_records(folder, tmp_path / "rec")
    gate.say("replay")
    wait_for(lambda: events.of("test", "measure") or proc.poll() is not None, "the first test")
    assert proc.poll() is None, ended(proc, tmp_path).output
    gate.close()
    run = ended(proc, tmp_path)
    assert run.returncode == -signal.SIGTERM, run.output
    assert "scripts/warmup is gone (killed): this measurement stops with it" in run.stderr, run.stderr


def test_a_gate_that_is_not_a_fifo_is_a_usage_error_before_any_test(tmp_path):
    events = Events(tmp_path / "events")
    not_fifo = tmp_path / "gate"
    not_fifo.write_text("replay\n")
    full = bench_env(tmp_path, WARMUP_HARNESS_GATE=str(not_fifo), FIXTURE_EVENTS=str(events.path),
                     FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(tmp_path / "rec"))
    run = ended(subprocess.Popen(bench_command(shape_file(tmp_path, SHAPES)), env=full, cwd=tmp_path,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), tmp_path)
    assert run.returncode == 4, run.output
    assert f"WARMUP_HARNESS_GATE={not_fifo} is not a FIFO" in run.stderr, run.stderr
    assert not events.of("test", "measure")


def test_a_pytest_xdist_worker_behind_the_gate_is_refused_before_any_test(tmp_path, gate):
    """Each worker would wait at the gate, and only one would read its line."""
    events = Events(tmp_path / "events")
    run = ended(gated(tmp_path, gate, PYTEST_XDIST_WORKER="gw0"), tmp_path)
    assert run.returncode == 4, run.output
    assert "WARMUP_HARNESS_GATE is set in a pytest-xdist worker" in run.stderr, run.stderr
    assert not events.of("test", "measure")


def test_a_bad_record_behind_the_gate_is_the_usage_error_a_replay_gives_at_start(tmp_path, gate):
    events = Events(tmp_path / "events")
    proc = gated(tmp_path, gate)
    wait_for(lambda: events.of("collected", "measure") or proc.poll() is not None, "the collection")
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "mm.json").write_text("{not json")  # "published" after collection
    gate.say("replay")
    run = ended(proc, tmp_path)
    assert run.returncode == 4, run.output
    assert f"{tmp_path / 'rec' / 'mm.json'}:1:2: the record is not valid JSON" in run.stderr, run.stderr
    assert not events.of("test", "measure")
