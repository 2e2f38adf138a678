"""What every tool shares, checked on all five as real processes: the scratch lock (a second run on
a scratch in use is refused and writes nothing; a caller's lock is honoured through
WARMUP_SCRATCH_LOCK_FD), usage errors named by the tool, and one `--op` argument."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
from pathlib import Path

import pytest

from support import run_tool

TOOLS = ["shard", "spawn", "merge", "publish", "costs"]
LOCK_FD = "WARMUP_SCRATCH_LOCK_FD"
SHAPES = "mm:\n  shapes:\n    - [1, 2]\n    - [3, 4]\n    - [5, 6]\n"
# A child that records one config under its shard's record folder.
RECORDER = ["sh", "-c", 'mkdir -p "$FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR" && '
            'printf \'{"k": {"%s": 1}}\' "$$" > "$FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR/mm.json"']


def tree(folder: Path) -> dict[str, str]:
    """Every path under `folder` with a digest of its content: equal trees, nothing written."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return out


def hold(scratch: Path) -> int:
    """Takes the scratch lock as another run would (flock, pid in the file); returns the fd."""
    fd = os.open(scratch / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def steps(scratch: Path) -> dict[str, list]:
    """One command line per tool that writes in (or reads) the scratch."""
    return {
        "shard": ["shard", "--op", "mm", "--shards", "3", "--out", scratch, scratch / "src.yaml"],
        "spawn": ["spawn", "--plan", scratch / "plan.json", "--backend", "cuda", "--devices",
                  "0,1", "--", *RECORDER],
        "merge": ["merge", "--in-scratch", scratch, "--summary", scratch / "summary.txt"],
        "costs": ["costs", "--costs", scratch.parent / "costs.json", scratch],
    }


@pytest.fixture
def scratch(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "src.yaml").write_text(SHAPES)
    for name, argv in steps(scratch).items():
        res = run_tool(*argv)
        assert res.returncode == 0, (name, res.stderr)
    return scratch


@pytest.mark.parametrize("step", ["shard", "spawn", "merge", "costs"])
def test_a_scratch_in_use_is_refused_naming_it_and_its_holder_and_nothing_is_written(scratch, step):
    fd = hold(scratch)
    try:
        before = tree(scratch)
        res = run_tool(*steps(scratch)[step])
        assert res.returncode == 2, res.stderr
        assert str(scratch) in res.stderr and f"pid {os.getpid()}" in res.stderr, res.stderr
        assert res.stderr.startswith(f"warmup-{step}: "), res.stderr
        assert tree(scratch) == before
    finally:
        os.close(fd)
    assert run_tool(*steps(scratch)[step]).returncode == 0


def test_merge_refuses_a_scratch_input_in_use_and_writes_no_output(scratch, tmp_path):
    fd = hold(scratch)
    try:
        res = run_tool("merge", scratch, "-o", tmp_path / "out.json")
        assert res.returncode == 2 and "in use" in res.stderr, res.stderr
        assert not (tmp_path / "out.json").exists()
    finally:
        os.close(fd)


@pytest.mark.parametrize("step", ["shard", "spawn", "merge", "costs"])
def test_a_tool_runs_under_its_callers_lock_handed_down_by_descriptor(scratch, step):
    fd = hold(scratch)
    try:
        res = run_tool(*steps(scratch)[step], env={LOCK_FD: str(fd)}, pass_fds=(fd,))
        assert res.returncode == 0, res.stderr
        # A descriptor on another file is no handshake: the tool takes its own lock, and waits
        # for no one, so the lock held here refuses it.
        other = os.open(scratch / "src.yaml", os.O_RDONLY)
        try:
            res = run_tool(*steps(scratch)[step], env={LOCK_FD: str(other)}, pass_fds=(other,))
            assert res.returncode == 2 and "in use" in res.stderr, res.stderr
        finally:
            os.close(other)
    finally:
        os.close(fd)


@pytest.mark.parametrize("name", TOOLS)
def test_usage_errors_start_with_the_tools_name_and_exit_2(name):
    res = run_tool(name, "--no-such-flag")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.startswith(f"warmup-{name}: error: "), res.stderr


def op_help(name: str) -> str:
    """The `--op` entry of a tool's --help, through its env line."""
    res = run_tool(name, "--help")
    assert res.returncode == 0, res.stderr
    found = re.search(r"^ +--op <OP>\n.*?\[env: [^]]*\]\n", res.stdout, re.M | re.S)
    assert found, res.stdout
    return found.group(0)


def test_every_tool_has_the_one_op_argument_reading_the_harness_variable():
    helps = {name: op_help(name) for name in TOOLS}
    assert "[env: FLAGGEMS_PERF_CURRENT_OP=]" in helps["merge"], helps["merge"]
    assert all(text == helps["merge"] for text in helps.values()), helps
