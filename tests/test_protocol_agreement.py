"""The rules the tools (Rust: protocol/ and the tools over it) and the harness (Python:
warmup_harness) both apply, each driven on both sides over one table of inputs (issue 44: "each rule
has one owner, with a test where two languages must agree"). The tools run as real processes
(WARMUP_BIN_DIR), the harness's real modules are imported; each test says which rule and who owns it.

Pinned elsewhere, end to end, and not repeated here: the device model (tests/test_history.py, "the
plan and the harness name a device alike"), an op's file-name rule as warmup-publish and warmup-cache
take `--op` (tests/test_harness_files.py), the signature a record vouches for and warmup-plan replays
by (tests/test_cache.py, tests/test_warmup.py), the gate's words (tests/test_spawn.py's measurements
over the real harness), the record and sidecar formats (tests/test_merge.py, tests/test_publish.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support import HANG, ROOT, clean_env, run_tool, tool

sys.path.insert(0, str(ROOT / "harness"))
from warmup_harness import env as harness_env  # noqa: E402
from warmup_harness.autotune import journal, once_recorder, records, resume  # noqa: E402
from warmup_harness.autotune.race_settings import race_settings  # noqa: E402
from warmup_harness.autotune.writer import RecordWriter  # noqa: E402

MERGED = {"m:k": {"[1]": {"kwargs": {"B": 1}}}}


def merged(work: Path) -> Path:
    path = work / "merged.json"
    path.write_text(json.dumps(MERGED) + "\n")
    return path


def harness_mode(environ: dict[str, str]) -> tuple[str, str] | str | None:
    """What the harness makes of the protocol variables: (folder, op), a refusal, or None (off)."""
    try:
        mode = harness_env.mode_from_env(environ)
    except harness_env.ProtocolError:
        return "refused"
    return None if mode is None else (str(mode.directory), mode.op)


def published(work: Path, *args, **env: str) -> tuple[str, str] | str | None:
    """Where warmup-publish puts a record given only the harness's variables: (folder, op), a
    refusal, or None (no folder named: its --fallback-dir)."""
    fallback = work / "fallback"
    run = run_tool("publish", "--fallback-dir", fallback, *args, merged(work), env=env, cwd=work,
                   errors="surrogateescape")
    if run.returncode == 2 and "cannot be a file name" in run.stderr:
        return "refused"
    assert run.returncode == 0, run.stderr
    written = [p for p in work.rglob("*.json") if p.name != "merged.json" and not p.name.endswith(".meta.json")]
    assert len(written) == 1, (written, run.stderr)
    folder, op = written[0].parent, written[0].name[:-len(".json")]
    written[0].unlink()
    return None if folder == fallback else (str(folder), op)


# --- the op of FLAGGEMS_PERF_CURRENT_OP: trimmed, blank is "default", one that cannot name its files
# refused (owner: protocol::op::OpArg and op::file_name_problem; the harness: env.op_name, trim,
# op_file_problem). U+001C..U+001F are space to Python's str.strip() but not to Rust's str::trim.

OP_VALUES = ["mm", " mm ", "\tmm\n", "", "  ", "mm\x1c", "\x1fmm", "\x85mm\xa0", "\u3000mm\u2028", "\u200bmm",
             ".mm", "a..b", "mm.json", "mm.meta", " mm.costs ", ".", "..", "a/b"]


@pytest.mark.parametrize("value", OP_VALUES, ids=ascii)
def test_the_op_a_variable_names_is_the_same_op_to_the_tools_and_the_harness(tmp_path, value):
    folder = tmp_path / "rec"
    tools = published(tmp_path, "--record-dir", folder, FLAGGEMS_PERF_CURRENT_OP=value)
    harness = harness_mode({harness_env.RECORD_DIR: str(folder), harness_env.CURRENT_OP: value})
    assert tools == harness


# --- the record folder FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR names: trimmed, blank is none, a value that
# is not UTF-8 kept whole, relative to the working folder (owner: protocol::env::record_dir_of; the
# harness: env.mode_from_env).

FOLDER_VALUES = ["{base}/r", " {base}/r ", "\t{base}/r\n", "{base}/r\x1c", "\xa0{base}/r\u3000", "r", " r ",
                 "  ", "", "{base}/r\udcff", " {base}/r\udcff "]


@pytest.mark.parametrize("value", FOLDER_VALUES, ids=ascii)
def test_the_record_folder_a_variable_names_is_the_same_folder_to_the_tools_and_the_harness(
        tmp_path, monkeypatch, value):
    value = value.format(base=tmp_path)
    tools = published(tmp_path, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=value, FLAGGEMS_PERF_CURRENT_OP="mm")
    monkeypatch.chdir(tmp_path)  # a relative folder is the working folder's, on both sides
    harness = harness_mode({harness_env.RECORD_DIR: value, harness_env.CURRENT_OP: "mm"})
    assert tools == harness


# --- the ops a record folder holds: `<op>.json` where op can name its files (owner:
# protocol::op::of_record_file, which warmup-cache lists by; the harness: env.op_of_record_file, which
# names them when a replay finds no record for its op).

FILE_NAMES = ["mm.json", ".mm.json", ".json", "..json", "...json", "mm.meta.json", "mm.costs.json",
              "x.meta.costs.json", "x.metadata.json", "a..b.json", "mm.json.json", "mm.jsonx", ".mm.journal",
              "json", "sp ace.json"]


def test_the_ops_a_record_folder_holds_are_the_same_to_warmup_cache_and_the_harness(tmp_path):
    folder = tmp_path / "cache" / "parallel-warmup" / "records" / "3.6.0_dev_0"
    folder.mkdir(parents=True)
    for name in FILE_NAMES:
        (folder / name).write_text('{"k": {"[1]": {}}}\n')
    listed = run_tool("cache", "list", "--json", env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert listed.returncode == 0, listed.stderr
    tools = sorted(entry["op"] for entry in json.loads(listed.stdout))
    harness = sorted(op for name in os.listdir(folder) if (op := harness_env.op_of_record_file(name)) is not None)
    assert tools == harness == sorted([".mm", "a..b", "mm", "mm.json", "sp ace", "x.metadata"])


# --- an op's files in a record folder (`<op>.json`, `<op>.meta.json`, `.<op>.journal`, `.<op>.lock`,
# `.<op>.sessions`) and whether a record session is live there (`.<op>.sessions` held shared): owner
# protocol::history and layout::record_file; the harness: records.record_path, meta_path,
# journal.journal_path, lock_path, sessions_path, and the record writer's hold.

JOURNALED = json.dumps({"kernel": "m:k", "key": "[2]", "config": {"kwargs": {"B": 2}}, "seconds": 0.1,
                        "device": "NVIDIA H200", "triton": "3.6.0"}) + "\n"


def record_session(folder: Path, op: str) -> tuple[RecordWriter, dict[str, Path]]:
    """A live record session of `op` in `folder` (it has written a key, so it holds the sessions
    file) with a journal line left for the next fold; and its files, as the harness names them."""
    writer = RecordWriter(folder, op, lambda: "NVIDIA H200")
    writer.open()
    writer.add("m:k", "[1]", {"kwargs": {"B": 1}}, 0.5)
    names = {"record": records.record_path(folder, op), "sidecar": records.meta_path(folder, op),
             "journal": journal.journal_path(folder, op), "lock": journal.lock_path(folder, op),
             "sessions": journal.sessions_path(folder, op)}
    names["journal"].write_text(JOURNALED)
    assert {k for k, path in names.items() if not path.exists()} == set()
    return writer, names


@pytest.mark.parametrize("op", ["mm", ".mm", "a..b", "mm.json", "sp ace"])
def test_an_ops_files_and_a_live_session_are_the_same_to_the_tools_and_the_harness(tmp_path, op):
    cache = tmp_path / "cache"
    folder = cache / "parallel-warmup" / "records" / "3.6.0_dev_0"
    folder.mkdir(parents=True)
    cache_env = {"XDG_CACHE_HOME": str(cache)}
    writer, names = record_session(folder, op)
    try:  # live: warmup-cache keeps its files, warmup-publish leaves its journal to it
        kept = run_tool("cache", "remove", "--op", op, env=cache_env)
        assert kept.returncode == 1 and "in use by a running record session" in kept.stderr, kept.stderr
        assert {k for k, path in names.items() if not path.exists()} == set(), kept.stderr
        publish = run_tool("publish", "--op", op, "--record-dir", folder, merged(tmp_path))
        assert publish.returncode == 0, publish.stderr
        assert f"left {names['journal']}: a record session is live in {folder}" in publish.stderr, publish.stderr
        assert names["journal"].exists()
    finally:
        writer.release()
    # Over: the journal is the publish's to fold, by its name.
    publish = run_tool("publish", "--op", op, "--record-dir", folder, merged(tmp_path))
    assert publish.returncode == 0 and not names["journal"].exists(), publish.stderr
    assert "[2]" in json.loads(names["record"].read_text())["m:k"], "the journal was not folded"
    # And the op's files are warmup-cache's to remove, but the lock files (another process may
    # hold one open).
    writer, names = record_session(folder, op)
    writer.release()
    removed = run_tool("cache", "remove", "--op", op, env=cache_env)
    assert removed.returncode == 0, removed.stderr
    assert {k for k, path in names.items() if path.exists()} == {"lock", "sessions"}


# --- the values the tools write for the harness to read: yes/no settings (protocol::env::resume_env
# and warmup-plan write `1`/`0`; the harness reads them by env.truth), the sweep child's mark, the
# count of children, the progress file and the folders warmup-spawn gives a child.

PLAN_OPTIONS = {"--fresh": (True, None), "--race": (False, True), "--no-race": (False, False), "": (False, None)}


@pytest.mark.parametrize("option", list(PLAN_OPTIONS), ids=lambda o: o or "none")
def test_what_warmup_plan_exports_for_a_record_run_the_harness_reads_as_the_option_meant(tmp_path, option):
    stub = tmp_path / "harness_path" / "warmup_harness"  # COMMAND's Python has the harness: a record run
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("")
    folder = tmp_path / "rec"
    bench = ROOT / "tests" / "harness" / "test_bench.py"
    command = [sys.executable, "-m", "pytest", "-p", "warmup_harness", str(bench),
               "--shape_file", str(ROOT / "examples" / "shapes.yaml")]
    planned = run_tool("plan", "--format", "json", *([option] if option else []), "--gpus", "1", "--", *command,
                       env={"PYTHONPATH": str(stub.parent), "FLAGGEMS_PERF_CURRENT_OP": "mm",
                            "FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(folder),
                            "WARMUP_PROBE_ROOT": str(tmp_path / "no-driver")}, cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    answer = json.loads(planned.stdout)
    assert answer["decision"] == "record", answer
    exported = answer["env"]
    fresh, race = PLAN_OPTIONS[option]
    assert harness_mode(exported) == (str(folder), "mm")
    assert harness_env.truth(harness_env.FRESH, exported.get(harness_env.FRESH)) is fresh
    assert ("as WARMUP_HARNESS_FRESH is set" in harness_env.isolate_stores(dict(exported))) is fresh
    assert race_settings(exported.get).on is (True if race is None else race)
    lines: list[str] = []
    earlier = resume.load(exported.get, "mm", "3.6.0", lines)
    assert earlier is None  # nothing recorded there yet, or fresh
    said = " ".join(lines)
    if fresh:
        assert harness_env.RESUME_DIR not in exported and said == "", said
    else:  # resuming in place: it resumes from the folder it records in
        assert f"{records.record_path(folder, 'mm')} does not exist yet" in said, said
        assert once_recorder.same_folder(Path(exported[harness_env.RESUME_DIR]), Path(exported[harness_env.RECORD_DIR]))


CHILD = """
import json, os, sys, time
sys.path.insert(0, {harness!r})
from warmup_harness import env
from warmup_harness.autotune import progress, resume
from warmup_harness.precompile.settings import compile_settings
mode = env.mode_from_env(os.environ)
lines = []
resume.load(os.environ.get, mode.op, "3.6.0", lines)
out = {{"mode": [mode.kind.value, str(mode.directory), mode.op], "store": env.isolate_stores(dict(os.environ)),
       "fresh": env.truth(env.FRESH, os.environ.get(env.FRESH)), "resume": lines,
       "children": env.count(env.SPAWN_CHILDREN, os.environ.get(env.SPAWN_CHILDREN)),
       "workers": compile_settings(os.environ.get).workers}}
with open(f"{{mode.directory}}.reads.json", "w") as f:
    json.dump(out, f)
bar = progress.from_env(os.environ)
bar.timing(7)
for _ in range(3):
    bar.tuned()
time.sleep(5)  # past many of warmup-spawn's 0.2 s progress intervals, on a busy machine too
"""


@pytest.mark.parametrize("fresh", [True, False], ids=["fresh", "resume"])
def test_what_warmup_spawn_gives_a_sweep_child_the_harness_reads_as_meant(tmp_path, fresh):
    scratch = tmp_path / "scratch"
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("mm:\n  shapes:\n    - [1, 2]\n    - [3, 4]\n")
    assert run_tool("shard", "--op", "mm", "--shards", "2", "--out", scratch, shapes).returncode == 0
    resume_dir = tmp_path / "earlier"
    child = CHILD.format(harness=str(ROOT / "harness"))
    run = subprocess.run([tool("spawn"), "--plan", scratch, "--backend", "cuda", "--devices", "0,1",
                          "--fresh" if fresh else "--resume-dir", *([] if fresh else [resume_dir]),
                          "--", sys.executable, "-c", child],
                         env=clean_env(WARMUP_SPAWN_PROGRESS_SECONDS="0.2"), cwd=tmp_path, capture_output=True,
                         text=True, timeout=HANG)
    assert run.returncode == 0, run.stderr
    for shard in (0, 1):
        record_dir = scratch / f"w{shard}" / "rec"
        reads = json.loads(Path(f"{record_dir}.reads.json").read_text())
        assert reads["mode"] == ["record", str(record_dir), "mm"], reads
        assert "as a sweep child (FLAGGEMS_PERF_WARMUP_WORKER=1)" in reads["store"], reads
        assert reads["fresh"] is fresh and reads["children"] == 2, reads
        said = " ".join(reads["resume"])
        if fresh:  # --fresh gives no resume folder: nothing is read
            assert said == "", said
        else:
            assert f"{resume_dir / 'mm.json'} does not exist yet" in said, said
        shown = re.findall(rf"shard {shard} on device \S+: (\d+) key\(s\) tuned, (\d+) config\(s\) timed", run.stderr)
        assert ("3", "7") in shown, run.stderr

