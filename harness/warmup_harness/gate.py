"""The gate: a measurement that `warmup-spawn --measure` starts alongside the sweep starts up and
collects while the sweep runs, then waits here, before its first test, for the sweep's outcome.

`WARMUP_HARNESS_GATE=fd:N` names the read end of a pipe that the measurement inherited; only the
warmup-spawn that started it holds the write end (docs/CONTRACT.md, "The gate"). At configure the
harness checks it and marks it close-on-exec, so that no process it starts holds it. After
collection, before the first test (the outermost `pytest_runtestloop` wrapper), it reads one line:

* `replay`: the merged configs are published where `FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR` says; the
  record variable is dropped and the session starts in replay mode, checking the record as a
  replay does at start (a bad one is the same usage error, exit 4);
* `live`: the sweep recovered nothing; the replay variable is dropped, and the session tunes live,
  in record mode where `FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR` is set, as the plain run would.

End of file before a line means that warmup-spawn is gone or stopped the run (the kernel closes
its end however it dies), so no test runs: the session ends with pytest's "interrupted" status (2)
and a line saying why. End of file after it means warmup-spawn was killed while the measurement
ran (it holds the pipe until the measurement ends): the measurement is stopped with SIGTERM, as
a kill of its supervisor stops it. Being a pipe the measurement inherited, not a path, the gate of
a killed run's measurement can only ever say end of file: no other run's gate is within its reach.

Until the gate opens nothing of the harness runs: no hook, no compile worker, no file read; so the
measurement does no GPU work, whatever its conftests import, before the configs are published.
pytest's terminal output (the header, "collecting ...", "collected N items") is held until then
too, and written when the gate opens, as if the session had started then: on a terminal it would
otherwise land in the middle of warmup-spawn's live view, which redraws its last lines. This
touches one private name of pytest's, behind pytest_private; where it is missing the output is not
held.
"""

from __future__ import annotations

import os
import signal
import stat
import threading
from collections.abc import MutableMapping
from typing import Callable

import pytest

from . import env
from .pytest_private import hold_output

OUTCOMES = ("replay", "live")


def descriptor(value: str) -> int:
    """The gate's descriptor, `fd:N`, checked to be an open pipe and made close-on-exec; raises
    ProtocolError for anything else."""
    number = value[3:] if value.startswith("fd:") else ""
    if not (number.isascii() and number.isdigit()):  # str.isdigit alone takes "١" (1 in Arabic-Indic)
        raise env.ProtocolError(f"{env.GATE}={value}: not fd:N; only warmup-spawn --measure sets it, "
                                f"to a pipe the measurement inherits")
    fd = int(number)
    try:
        is_pipe = stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OverflowError:  # more digits than a descriptor holds: none is open by that number
        raise env.ProtocolError(f"{env.GATE}={value}: no descriptor has that number; only the process "
                                f"warmup-spawn --measure started inherits it") from None
    except OSError as exc:
        raise env.ProtocolError(f"{env.GATE}={value}: descriptor {fd} is not open ({exc.strerror or exc}); "
                                f"only the process warmup-spawn --measure started inherits it") from None
    if not is_pipe:
        raise env.ProtocolError(f"{env.GATE}={value}: descriptor {fd} is not a pipe; only warmup-spawn "
                                f"--measure sets it, to one it made")
    os.set_inheritable(fd, False)
    return fd


def wait(fd: int) -> str | None:
    """Blocks until warmup-spawn writes its line; returns it (`replay` or `live`), the pipe still
    open for `watch`, or None (the pipe closed) when warmup-spawn is gone or stopped the run.
    Raises ProtocolError for a line it cannot be."""
    line = b""
    while not line.endswith(b"\n"):
        byte = os.read(fd, 1)  # a byte at a time: nothing past the line is taken
        if not byte:
            break
        line += byte
    if not line:
        os.close(fd)
        return None
    outcome = line.decode("utf-8", "replace").strip()
    if outcome not in OUTCOMES:
        os.close(fd)
        raise env.ProtocolError(
            f"{env.GATE}: the gate said {outcome!r}, not one of {', '.join(OUTCOMES)}; warmup-spawn "
            f"--measure is the only writer it expects"
        )
    return outcome


def watch(fd: int, say: Callable[[str], None]) -> None:
    """Once the gate is open warmup-spawn waits for this process and holds the pipe until it ends;
    end of file on it means that warmup-spawn was killed. The measurement is its job, so it goes
    too: SIGTERM to this process (a thread of its own waits for it)."""

    def run() -> None:
        while os.read(fd, 64):
            pass
        try:  # from this thread, while a test runs: the stop must not depend on the line
            say("warmup-spawn is gone (killed): this measurement stops with it")
        finally:
            os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=run, name="warmup-harness-gate", daemon=True).start()


def apply(outcome: str, environ: MutableMapping[str, str]) -> None:
    """Leaves the one protocol variable the outcome's mode reads, as the plain run would have it;
    and drops the gate, so that a process this one starts does not wait at it."""
    environ.pop(env.RECORD_DIR if outcome == "replay" else env.REPLAY_DIR, None)
    environ.pop(env.GATE, None)


class Gate:
    """Registered at configure in place of the session, which it starts when the gate opens."""

    def __init__(self, config, value: str, start: Callable[[], None], say: Callable[[str], None]):
        if hasattr(config, "workerinput"):  # a pytest-xdist worker: only one process may wait there
            raise pytest.UsageError(
                f"warmup-harness: {env.GATE} is set in a pytest-xdist worker: a measurement "
                f"started with the sweep runs its tests in one process; drop -n (an ini file's "
                f"addopts included), or run it after the sweep"
            )
        try:
            self.fd = descriptor(value)
        except env.ProtocolError as exc:
            raise pytest.UsageError(f"warmup-harness: {exc}") from None
        self.value = value
        self.start = start  # starts the session from the environment, as configure does
        self.say = say
        self.held = None  # pytest's terminal output while it is held (pytest_private.HeldOutput)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session):
        config = session.config
        if config.pluginmanager.get_plugin("terminalreporter") is not None:  # not with -p no:terminal
            self.held = hold_output(config.get_terminal_writer())

    def release(self) -> None:
        """Writes the held terminal output and gives the writer its file back."""
        held, self.held = self.held, None
        if held is not None:
            held.release()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        self.release()  # a session that never reached its gate (interrupted while collecting)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session):
        try:
            outcome = wait(self.fd)
        except env.ProtocolError as exc:
            raise pytest.UsageError(f"warmup-harness: {exc}") from None
        finally:
            self.release()
        if outcome is None:
            pytest.exit(f"warmup-harness: the sweep ended without a word ({env.GATE}={self.value} "
                        f"closed: warmup-spawn stopped the run, or was killed); no test runs",
                        returncode=pytest.ExitCode.INTERRUPTED)
        watch(self.fd, self.say)
        apply(outcome, os.environ)
        self.say("the sweep is done: replaying its configs" if outcome == "replay" else
                 "the sweep recovered no configs: tuning live")
        self.start()
        return (yield)
