"""The Makefile's own behaviour, read from `make -n` with CARGO=true (the `+` lines, which make
runs even under -n, then do nothing): nothing of the suite runs."""

from __future__ import annotations

import re
import subprocess

from support import HANG, ROOT, clean_env


def dry_run(*args: str) -> str:
    env = clean_env()
    for name in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):  # a make this suite may run under
        env.pop(name, None)
    done = subprocess.run(["make", "-n", *args, "CARGO=true"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_make_test_runs_its_steps_in_parallel_without_the_forced_jobs_warning():
    """Issue 29: make test printed "-j6 forced in submake" (the Triton venvs' make under the
    first step's jobserver)."""
    out = dry_run("test", "TEST_JOBS=2")
    assert "forced in submake" not in out, out
    # The parallelism kept: the first step and the tests 2 at a time, the six venvs at once.
    assert re.search(r"make --no-print-directory -j2 venv triton-venvs test-build\n", out), out
    assert re.search(r"make --no-print-directory -j6 triton-venv-3\.4\.0 .*triton-venv-3\.9\.0\n", out), out
    assert re.search(r"-k -j2 --output-sync=target \\\n\ttest-python-rest ", out), out
    # A caller's own -j is no warning either.
    assert "forced in submake" not in dry_run("-j3", "triton-venvs")
    assert "forced in submake" not in dry_run("-j3", "test-triton")


def test_make_test_says_why_a_test_was_skipped():
    """Issue 29: tests/test_slurm.py skipped without a word where no Slurm could be started."""
    out = dry_run("test")
    [line] = [ln for ln in out.splitlines() if "--ignore=tests/test_harness.py" in ln]
    assert " -m pytest -q -rs " in line, line
