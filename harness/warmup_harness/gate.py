"""The gate: a measurement that scripts/warmup starts alongside the sweep starts up and collects
while the sweep runs, then waits here, before its first test, for the sweep's outcome.

`WARMUP_HARNESS_GATE` names a FIFO that the script made and holds open for writing. After
collection, before the first test (the outermost `pytest_runtestloop` wrapper), the harness reads
one line from it (docs/CONTRACT.md, "The gate"):

* `replay`: the merged configs are published where `FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR` says; the
  record variable is dropped and the session starts in replay mode, checking the record as a
  replay does at start (a bad one is the same usage error, exit 4);
* `live`: the sweep recovered nothing; the replay variable is dropped, and the session tunes live,
  in record mode where `FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR` is set, as the plain run would.

End of file before a line means that the script is gone (stopped, or killed: the kernel closes its
end), so no test runs: the session ends with pytest's "interrupted" status (2) and a line saying
why. End of file after it means the script was killed while the measurement ran (it holds the FIFO
until the measurement ends): the measurement is stopped with SIGTERM, as a kill of the script
stopped an exec'd measurement. The FIFO is opened without blocking, so a script that died before
the gate was reached ends the session at once instead of leaving it waiting for a writer that
will never come.

Until the gate opens nothing of the harness runs: no hook, no compile worker, no file read; so the
measurement does no GPU work, whatever its conftests import, before the configs are published.
pytest's terminal output (the header, "collecting ...", "collected N items") is held until then
too, and written when the gate opens, as if the session had started then: on a terminal it would
otherwise land in the middle of warmup-spawn's live view, which redraws its last lines. This
touches one private name of pytest's, `TerminalWriter._file` (checked with pytest 8 and 9); where
it is missing the output is not held.
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

OUTCOMES = ("replay", "live")


def wait(path: str) -> tuple[str | None, int | None]:
    """Blocks until the script writes its line; returns it (`replay` or `live`) with the FIFO's
    descriptor, still open for `watch`, or (None, None) when the script is gone. Raises
    ProtocolError for a FIFO that cannot be read or a line it cannot be."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, None  # its folder went with a run that is over
    except OSError as exc:
        raise env.ProtocolError(f"{env.GATE}={path}: cannot open it ({exc.strerror or exc})") from None
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            raise env.ProtocolError(f"{env.GATE}={path} is not a FIFO; only scripts/warmup sets it, to one it made")
        os.set_blocking(fd, True)
        line = b""
        while not line.endswith(b"\n"):
            byte = os.read(fd, 1)  # a byte at a time: nothing past the line is taken
            if not byte:
                break
            line += byte
        outcome = line.decode("utf-8", "replace").strip()
        if not line:
            os.close(fd)
            return None, None
        if outcome not in OUTCOMES:
            raise env.ProtocolError(
                f"{env.GATE}={path}: the gate said {outcome!r}, not one of {', '.join(OUTCOMES)}; "
                f"a FIFO scripts/warmup made is the only writer it expects"
            )
    except BaseException:
        os.close(fd)
        raise
    return outcome, fd


def watch(fd: int, say: Callable[[str], None]) -> None:
    """Once the gate is open the script waits for this process and holds the FIFO until it ends;
    end of file on it means that the script was killed. The measurement stood where the exec'd
    COMMAND stood, so it goes too, as a kill of the script killed the measurement before: SIGTERM
    to this process (a thread of its own waits for it)."""

    def run() -> None:
        while os.read(fd, 64):
            pass
        try:  # from this thread, while a test runs: the stop must not depend on the line
            say("scripts/warmup is gone (killed): this measurement stops with it")
        finally:
            os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=run, name="warmup-harness-gate", daemon=True).start()


def apply(outcome: str, environ: MutableMapping[str, str]) -> None:
    """Leaves the one protocol variable the outcome's mode reads, as the plain run would have it;
    and drops the gate, so that a process this one starts does not wait at it."""
    environ.pop(env.RECORD_DIR if outcome == "replay" else env.REPLAY_DIR, None)
    environ.pop(env.GATE, None)


class _Held:
    """Stands for the terminal writer's file while the gate is shut: keeps what is written, and
    answers everything else (isatty, encoding, fileno) as the file does."""

    def __init__(self, file):
        self.file = file
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def __getattr__(self, name):
        return getattr(self.file, name)


class Gate:
    """Registered at configure in place of the session, which it starts when the gate opens."""

    def __init__(self, path: str, start: Callable[[], None], say: Callable[[str], None]):
        if os.environ.get("PYTEST_XDIST_WORKER"):  # its controller waits at the gate, not it
            raise pytest.UsageError(
                f"warmup-harness: {env.GATE} is set in a pytest-xdist worker: a measurement "
                f"started with the sweep runs its tests in one process; drop -n (an ini file's "
                f"addopts included), or run it after the sweep"
            )
        self.path = path
        self.start = start  # starts the session from the environment, as configure does
        self.say = say
        self.writer = None  # pytest's terminal writer while its output is held

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session):
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        writer = getattr(reporter, "_tw", None)
        if writer is not None and hasattr(writer, "_file"):
            writer._file = _Held(writer._file)
            self.writer = writer

    def release(self) -> None:
        """Writes the held terminal output and gives the writer its file back."""
        writer, self.writer = self.writer, None
        if writer is None:
            return
        held = writer._file
        writer._file = held.file
        held.file.write("".join(held.parts))
        held.file.flush()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        self.release()  # a session that never reached its gate (interrupted while collecting)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session):
        try:
            outcome, fd = wait(self.path)
        except env.ProtocolError as exc:
            raise pytest.UsageError(f"warmup-harness: {exc}") from None
        finally:
            self.release()
        if outcome is None or fd is None:
            pytest.exit(f"warmup-harness: the sweep ended without a word ({env.GATE}={self.path} "
                        f"closed: scripts/warmup was stopped or killed); no test runs",
                        returncode=pytest.ExitCode.INTERRUPTED)
        watch(fd, self.say)
        apply(outcome, os.environ)
        self.say("the sweep is done: replaying its configs" if outcome == "replay" else
                 "the sweep recovered no configs: tuning live")
        self.start()
        return (yield)
