"""warmup-publish's replay environment used by real consumers: sh evaluates it, make includes
it, JSON parses; the record file is replaced whole, never seen half-written."""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import subprocess
import threading
import time

import pytest

from support import clean_env, run_tool, tool

MERGED = json.dumps({"k": {"(1, 2)": {"BLOCK": 64, "w": 1e-05}}}, indent=2) + "\n"
RECORD = "FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"
REPLAY = "FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR"

SH_NAMES = ["plain", "with space", "it's", 'dq"x', "dollar $HOME $(id) `id`", "new\nline", "ünï 😀",
            "back\\slash", "semi;colon&amp", "-dash", "hash #x"]
MAKE_NAMES = ["with space", "it's", 'dq"x', "dollar $HOME $(id) $$", "ünï 😀", "hash #x",
              "back\\#slash", "semi;colon", "percent%", "trailing space "]


@pytest.fixture
def merged(tmp_path):
    path = tmp_path / "merged.json"
    path.write_text(MERGED)
    return path


def merged_files(folder, sizes):
    """One merged record file per size (keys of 40-byte configs): their texts and paths."""
    bodies = [json.dumps({"k": {str(i): "x" * 40 for i in range(n)}}, indent=2) + "\n"
              for n in sizes]
    paths = [folder / f"m{i}.json" for i in range(len(sizes))]
    for path, body in zip(paths, bodies):
        path.write_text(body)
    return bodies, paths


@pytest.mark.parametrize("name", SH_NAMES)
def test_sh_output_evaluated_by_sh_sets_the_exact_folder(tmp_path, merged, name):
    target = tmp_path / name
    res = run_tool("publish", "--op", "mm", "--record-dir", target, merged)
    assert res.returncode == 0, res.stderr
    assert (target / "mm.json").read_text() == MERGED
    script = 'eval "$1"; printf "%s|%s" "$FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR" ' \
             '"${FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR-unset}"'
    env = clean_env(**{RECORD: "/elsewhere"})
    out = subprocess.run(["sh", "-c", script, "sh", res.stdout], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out == f"{target}|unset"
    assert "mm.json" in res.stderr and "1 kernel(s), 1 config(s)" in res.stderr


@pytest.mark.parametrize("how", ["include", "eval"])
@pytest.mark.parametrize("name", MAKE_NAMES)
def test_make_fragment_used_by_make_sets_the_exact_folder(tmp_path, merged, name, how):
    target = tmp_path / name
    res = run_tool("publish", "--format", "make", "--record-dir", target, merged)
    assert res.returncode == 0, res.stderr
    (tmp_path / "replay.mk").write_text(res.stdout)
    load = "include replay.mk" if how == "include" else "$(eval $(file <replay.mk))"
    (tmp_path / "Makefile").write_text(
        f"{load}\nall:\n\t@printf '%s|%s' \"$${REPLAY}\" \"$${{{RECORD}-unset}}\"\n")
    env = clean_env(**{RECORD: "/elsewhere"})
    out = subprocess.run(["make", "-s", "-C", str(tmp_path)], env=env, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"{target}|unset"


def test_make_refuses_a_newline_and_publishes_nothing(tmp_path, merged):
    res = run_tool("publish", "--format", "make", "--record-dir", tmp_path / "a\nb", merged)
    assert res.returncode == 2 and "newline" in res.stderr
    assert not (tmp_path / "a\nb").exists()


def test_json_output_parses(tmp_path, merged):
    res = run_tool("publish", "--format", "json", "--op", "bmm", merged,
                   env={RECORD: str(tmp_path / "rec")}, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc == {"unset": [RECORD], "set": {REPLAY: str(tmp_path / "rec")},
                   "file": str(tmp_path / "rec" / "bmm.json")}


def test_a_relative_folder_is_printed_absolute_without_resolving_links(tmp_path, merged):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    res = run_tool("publish", "--format", "json", "--record-dir", "link/rec", merged,
                   cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["set"][REPLAY] == str(tmp_path / "link" / "rec")


def limit_file_size(limit: int):
    """For preexec_fn: files this process writes may not grow past `limit` bytes; a write past
    it fails with EFBIG (SIGXFSZ ignored), which no privilege overrides, root's included."""
    def apply():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    return apply


@pytest.mark.parametrize("how", ["write fails part-way", "target is a folder"])
def test_a_failure_leaves_the_old_file_and_no_temporaries(tmp_path, how):
    rec = tmp_path / "rec"
    rec.mkdir()
    _, (merged,) = merged_files(tmp_path, (2000,))
    if how == "target is a folder":
        (rec / "default.json").mkdir()
        (rec / "default.json" / "inside").write_text("old\n")
        res = run_tool("publish", "--record-dir", rec, merged)
        assert (rec / "default.json" / "inside").read_text() == "old\n"
    else:
        (rec / "default.json").write_text("old\n")
        # MERGED is read whole before the write starts; the new file fails at 64 KiB of 100.
        res = run_tool("publish", "--record-dir", rec, merged,
                       preexec_fn=limit_file_size(64 * 1024))
        assert (rec / "default.json").read_text() == "old\n"
    assert res.returncode == 2 and res.stdout == "", res.stderr
    assert "default.json" in res.stderr, res.stderr
    assert os.listdir(rec) == ["default.json"]


def test_kill_9_while_publishing_leaves_no_temporaries(tmp_path):
    rec = tmp_path / "rec"
    bodies, sources = merged_files(tmp_path, (60000, 45000))
    started = time.monotonic()
    assert run_tool("publish", "--record-dir", rec, sources[0]).returncode == 0
    took = time.monotonic() - started
    rng = random.Random(9)
    deadline = time.monotonic() + 30
    kills = 0
    while kills < 20 and time.monotonic() < deadline:
        proc = subprocess.Popen([tool("publish"), "--record-dir", str(rec), str(sources[kills % 2])],
                                env=clean_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        # SIGKILL the moment a temporary shows in the folder (a writer whose temporary has a
        # name would leave it behind); every other run, also at a random moment of the run.
        late = 2 * took if kills % 2 else rng.uniform(0.2, 1.1) * took
        kill_at = time.monotonic() + late
        while time.monotonic() < kill_at and proc.poll() is None:
            if set(os.listdir(rec)) - {"default.json"}:
                break
        proc.kill()
        proc.wait(timeout=60)
        kills += 1
        # A kill in the instant between naming the temporary and the rename can leave it; at
        # most that one, and the next write removes it (its writer's lock is gone).
        assert len(set(os.listdir(rec)) - {"default.json"}) <= 1, (kills, os.listdir(rec))
        assert (rec / "default.json").read_text() in bodies
        assert run_tool("publish", "--record-dir", rec, sources[kills % 2]).returncode == 0
        assert os.listdir(rec) == ["default.json"], (kills, os.listdir(rec))
    assert kills >= 10


def test_a_reader_never_sees_a_half_written_record(tmp_path):
    rec = tmp_path / "rec"
    bodies, sources = merged_files(tmp_path, (30000, 20000))
    assert run_tool("publish", "--record-dir", rec, sources[0]).returncode == 0
    seen, stop = [], threading.Event()

    def reader():
        while not stop.is_set():
            seen.append((rec / "default.json").read_text())

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for i in range(12):
            assert run_tool("publish", "--record-dir", rec, sources[i % 2]).returncode == 0
    finally:
        stop.set()
        thread.join()
    assert seen and all(text in bodies for text in seen)
    assert os.listdir(rec) == ["default.json"]
