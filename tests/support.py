"""Shared helpers for the end-to-end tests (imported as `support`): where the built tools are, and a

Every tool is driven as a real process. The environment is scrubbed of the harness's variables
and of device visibility lists, so a developer's shell cannot change a result.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests draw fresh examples on a developer's machine, and one fixed, repeatable set under
# CI (CI=true), so that a submission's CI runs the examples its author saw pass; a new failing
# example is found locally, where it can be fixed, not in the run that decides whether work lands.
settings.register_profile("ci", derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

# How long a test waits for a process to end, or for something to happen, before it calls it a hang.
# A guard, never a measure: a 2-core machine shared with other work runs these tests many times
# slower than an idle one, and only a hang may fail them. A wait that succeeds ends at once.
HANG = 600

# Property tests time nothing either: no deadline per example, no health check on how long
# generating examples takes (`@settings(UNTIMED, max_examples=...)`).
UNTIMED = settings(deadline=None,
                   suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

ROOT = Path(__file__).resolve().parent.parent
# Real FlagGems shape files, kept in the repository (their source and licence: its README.md).
FLAGGEMS_DATA = ROOT / "tests" / "data" / "flaggems"
BIN_DIR = Path(os.environ.get("WARMUP_BIN_DIR", ROOT / "target" / "debug"))

_SCRUB_PREFIXES = ("FLAGGEMS_", "PARALLEL_WARMUP_", "TRITON_", "WARMUP_")
_SCRUB_SUFFIXES = ("_VISIBLE_DEVICES",)


# The record cache (docs/CONTRACT.md, "The record cache") is per user: a test that runs the tools
# with no record folder named gets a cache of its own (XDG_CACHE_HOME), so that no test replays
# what another recorded, and none writes into the developer's ~/.cache. Removed when the session ends.
_CACHES = Path(tempfile.mkdtemp(prefix="warmup-test-caches."))
atexit.register(shutil.rmtree, _CACHES, True)


def cache_home_of_test() -> Path:
    """The XDG_CACHE_HOME of the running test (one per test, from PYTEST_CURRENT_TEST)."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "outside a test").rsplit(" (", 1)[0]
    return _CACHES / hashlib.sha256(test.encode()).hexdigest()[:16]


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without the harness's variables, with the running test's own
    record cache, plus `extra`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_SCRUB_PREFIXES) and not k.endswith(_SCRUB_SUFFIXES)
    }
    env.pop("NO_COLOR", None)
    env["XDG_CACHE_HOME"] = str(cache_home_of_test())
    env.update(extra)
    return env


def with_stand_in_sbatch(folder: Path, env: dict[str, str]) -> dict[str, str]:
    """`env` with an `sbatch` first on PATH that refuses to submit anything: warmup-plan only checks
    that sbatch is there before it plans a Slurm submission, so a test of the plan needs no Slurm."""
    bin_dir = folder / "stand-in-slurm"
    bin_dir.mkdir(exist_ok=True)
    sbatch = bin_dir / "sbatch"
    sbatch.write_text("#!/bin/sh\necho 'stand-in sbatch: this test submits nothing' >&2\nexit 99\n")
    sbatch.chmod(0o755)
    return {**env, "PATH": f"{bin_dir}:{env.get('PATH', os.defpath)}"}


def tool(name: str) -> str:
    """Path of a built tool, e.g. tool("shard") -> .../warmup-shard."""
    path = BIN_DIR / f"warmup-{name}"
    if not path.exists():
        pytest.fail(f"{path} is missing: run `cargo build --workspace` first (make test does)")
    return str(path)


def run_tool(name: str, *args, env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess:
    """Runs warmup-<name> with a clean environment, capturing text output."""
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", HANG)
    return subprocess.run([tool(name), *map(str, args)], env=clean_env(**(env or {})), **kw)


def on_a_terminal(argv: list[str], env: dict[str, str], timeout: float = HANG, columns: int = 0,
                  **kw) -> tuple[int, str]:
    """Runs argv with its stderr on a pseudo-terminal that this process owns (stdin is
    /dev/null, stdout is not a terminal); returns its exit status and all it wrote there.
    `columns`: the terminal's width (0: the size is left unset, as a bare pty has it).

    The terminal is made and read here, until every process holding it is gone, so what the
    program sees (isatty on stderr) and what comes back depend on no other program: script(1)
    made the terminal in a child of its own, ran the command through $SHELL, wrote an
    end-of-file into the terminal when its own stdin was empty, and copied the output.
    """
    import select

    master, slave = os.openpty()
    if columns:
        import fcntl
        import struct
        import termios

        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    try:
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=slave, **kw)
    finally:
        os.close(slave)
    chunks = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: nothing holds the terminal any more
                break
            if not data:
                break
            chunks.append(data)
        else:
            proc.kill()
            pytest.fail(f"{argv[0]} still held the terminal after {timeout}s")
        code = proc.wait(timeout=timeout)
    finally:
        os.close(master)
    return code, b"".join(chunks).decode(errors="replace")
