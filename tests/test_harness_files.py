"""warmup_harness and the files it is given: what it does with a FIFO, a device, a folder it cannot
read or a disk that fills, in record, replay and resume sessions (docs/CONTRACT.md, "File formats",
"Resume", "Record mode"); and the rules it shares with the tools (an op as a file name).

Real pytest sessions over tests/triton_fixture, as in test_harness.py. A session that would hang
on a FIFO is caught by the subprocess timeout (support.HANG), a hang guard only.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from support import BIN_DIR, HANG, run_tool
from test_harness import (SCRIPT, SHAPES, SOURCE, TRITON, Run, bench, bench_command, bench_env, copy_records,
                          recorded, shape_file)

sys.path.insert(0, str(SOURCE))
from warmup_harness import env as harness_env  # noqa: E402
from warmup_harness.autotune import race_settings, resume, safe_read  # noqa: E402
from warmup_harness.precompile import settings as cs  # noqa: E402

__all__ = ["recorded"]  # the module-scoped fixture, shared with test_harness.py's tests

F16 = ["float16"] * 3


def put(path: Path, kind: str) -> str:
    """Puts a FIFO or a symlink to /dev/zero at `path`; returns what the harness must call it."""
    if kind == "fifo":
        os.mkfifo(path)
        return "is a FIFO, not a regular file; give a regular file there"
    path.symlink_to("/dev/zero")
    return "is a character device, not a regular file; give a regular file there"


KINDS = ["fifo", "dev-zero"]


def test_the_harness_reads_a_file_by_the_tools_rule_a_regular_file_of_at_most_1_gib(tmp_path):
    assert safe_read.MAX_BYTES == 1 << 30  # toolkit::file::MAX_BYTES
    (tmp_path / "a.json").write_bytes(b"{}\n")
    assert safe_read.read_bytes(tmp_path / "a.json") == b"{}\n"
    big = tmp_path / "big.json"
    with open(big, "wb") as f:  # sparse: refused by its size, before a byte is read
        f.truncate(safe_read.MAX_BYTES + 1)
    with pytest.raises(safe_read.Refused, match="over the 1073741824 this harness reads of one file"):
        safe_read.read_bytes(big)
    with pytest.raises(safe_read.Refused, match="over the 2 this harness"):
        safe_read.read_bytes(tmp_path / "a.json", limit=2)
    with pytest.raises(safe_read.Refused, match="is a folder, not a regular file"):
        safe_read.read_bytes(tmp_path)
    with pytest.raises(FileNotFoundError):
        safe_read.read_bytes(tmp_path / "none.json")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["RECORD", "REPLAY"])
def test_a_record_that_is_a_fifo_or_a_device_is_refused_at_once_in_record_and_replay(recorded, tmp_path, kind,
                                                                                   mode):
    folder = copy_records(recorded[0], tmp_path / "rec")
    (folder / "mm.json").unlink()
    what = put(folder / "mm.json", kind)
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), **{f"FLAGGEMS_PERF_AUTOTUNE_{mode}_DIR": str(folder)})
    assert run.returncode == 4, run.output  # a record that cannot be read refuses the run, as a torn one
    assert f"warmup-harness: {folder / 'mm.json'}: cannot read the record: {what}" in run.stderr
    assert run.sessions == [], "a test ran"


@pytest.mark.parametrize("kind", KINDS)
def test_a_replayed_sidecar_that_is_a_fifo_or_a_device_is_a_warning(recorded, tmp_path, kind):
    folder = copy_records(recorded[0], tmp_path / "rec")
    (folder / "mm.meta.json").unlink()
    what = put(folder / "mm.meta.json", kind)
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder))
    assert run.returncode == 0, run.output
    assert f"WARNING {folder / 'mm.meta.json'}: cannot read the sidecar: {what}" in run.stderr
    assert "replayed 12, swept 0 live" in run.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_a_recorded_sidecar_that_is_a_fifo_or_a_device_is_replaced_with_a_warning(tmp_path, kind):
    folder = tmp_path / "rec"
    folder.mkdir()
    what = put(folder / "mm.meta.json", kind)
    run = bench(tmp_path, shape_file(tmp_path, SHAPES[:1]), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(folder))
    assert run.returncode == 0, run.output
    assert f"WARNING {folder / 'mm.meta.json'}: cannot read the sidecar: {what}; it was replaced" in run.stderr
    assert json.loads((folder / "mm.meta.json").read_text())["format"] == "warmup-harness-meta"


@pytest.mark.parametrize("kind", KINDS)
def test_a_journal_that_is_a_fifo_or_a_device_refuses_a_record_session_and_warns_a_replay(recorded, tmp_path,
                                                                                        kind):
    folder = copy_records(recorded[0], tmp_path / "rec")
    what = put(folder / ".mm.journal", kind)
    shapes = shape_file(tmp_path, SHAPES)
    run = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder))
    assert run.returncode == 0, run.output
    assert f"WARNING {folder / '.mm.journal'}: cannot read the journal ({what}); its keys" in run.stderr
    assert "replayed 12, swept 0 live" in run.stderr
    run = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(folder))
    assert run.returncode == 4, run.output  # every key would be appended to it: refused before any test
    if kind == "dev-zero":  # a link to it: never written through, whatever it names
        what = "is a symbolic link, which the harness never writes through: remove it"
        assert f"warmup-harness: {folder / '.mm.journal'} {what}" in run.stderr
    else:
        assert f"warmup-harness: {folder / '.mm.journal'}: cannot read the journal ({what})" in run.stderr
    assert run.sessions == []


@pytest.mark.parametrize("name", [".mm.journal", ".mm.lock", ".mm.sessions"])
def test_a_link_planted_as_a_file_the_record_session_writes_refuses_it_and_is_never_written_through(
        recorded, tmp_path, name):
    folder = copy_records(recorded[0], tmp_path / "rec")
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (folder / name).symlink_to(victim)  # planted by anyone who can write in a shared record folder
    shapes = shape_file(tmp_path, [[96, 32, 16]])  # a key the record lacks: it would be journaled
    run = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(folder),
                WARMUP_HARNESS_RESUME_DIR=str(folder))
    assert run.returncode == 4, run.output
    assert (f"warmup-harness: {folder / name} is a symbolic link, which the harness never writes through: "
            f"remove it, or give a record folder of your own") in run.stderr
    assert run.sessions == [] and victim.read_text() == "precious"
    assert (folder / name).is_symlink() and sorted(p.name for p in folder.iterdir()) == sorted([name, "mm.json",
                                                                                                  "mm.meta.json"])


def test_a_link_planted_while_a_session_records_is_never_written_through(tmp_path):
    from warmup_harness.autotune import writer

    folder = tmp_path / "rec"
    folder.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious")
    session = writer.RecordWriter(folder, "mm", lambda: "fake 0")
    session.open()
    (folder / ".mm.journal").symlink_to(victim)  # after the check at the start
    (folder / ".mm.sessions").symlink_to(tmp_path / "made")
    session.add("m:k", "[1]", {"kwargs": {"B": 1}}, 1.0)
    session.close()
    session.release()
    assert victim.read_text() == "precious" and not (tmp_path / "made").exists()
    assert session.unwritten == [("m:k", "[1]")]
    assert any("is a symbolic link, which the harness never writes through" in note for note in session.notes)
    (folder / ".mm.sessions").unlink()
    session = writer.RecordWriter(folder, "mm", lambda: "fake 0")
    (folder / ".mm.lock").symlink_to(tmp_path / "made")
    session.add("m:k", "[1]", {"kwargs": {"B": 1}}, 1.0)
    session.release()
    assert session.unwritten == [("m:k", "[1]")] and not (tmp_path / "made").exists()


def test_an_atomic_write_replaces_a_link_at_its_target_and_skips_links_and_fifos_at_temporaries(tmp_path):
    from warmup_harness.autotune import atomic

    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "mm.json").symlink_to(victim)
    (tmp_path / ".mm.json.tmp1.dead").symlink_to(victim)
    os.mkfifo(tmp_path / ".mm.json.tmp2.fifo")  # opened to test its lock, it would wait for a writer
    atomic.write_bytes(tmp_path / "mm.json", b"{}\n")
    assert victim.read_text() == "precious"
    assert not (tmp_path / "mm.json").is_symlink() and (tmp_path / "mm.json").read_bytes() == b"{}\n"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("which", ["mm.json", "mm.meta.json"])
def test_an_earlier_record_or_sidecar_that_is_a_fifo_or_a_device_resumes_nothing_with_a_line(recorded, tmp_path,
                                                                                           which, kind):
    earlier = copy_records(recorded[0], tmp_path / "earlier")
    (earlier / which).unlink()
    what = put(earlier / which, kind)
    run = bench(tmp_path, shape_file(tmp_path, SHAPES[:1]), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"),
                WARMUP_HARNESS_RESUME_DIR=str(earlier))
    assert run.returncode == 0, run.output
    said = "cannot read the record" if which == "mm.json" else "cannot read the sidecar"
    assert f"resume: {earlier / which}: {said}: {what}" in run.stderr
    assert "every key is tuned" in run.stderr and sum(run.session["timed"].values()) > 0


def test_resuming_in_place_with_a_fifo_sidecar_tunes_every_key_and_replaces_it(recorded, tmp_path):
    # The reproduction: a good record, a FIFO sidecar, RECORD_DIR = RESUME_DIR.
    folder = copy_records(recorded[0], tmp_path / "rec")
    (folder / "mm.meta.json").unlink()
    os.mkfifo(folder / "mm.meta.json")
    run = bench(tmp_path, shape_file(tmp_path, SHAPES), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(folder),
                WARMUP_HARNESS_RESUME_DIR=str(folder))
    assert run.returncode == 0, run.output
    assert "is a FIFO, not a regular file" in run.stderr and "every key is tuned" in run.stderr
    assert json.loads((folder / "mm.meta.json").read_text())["format"] == "warmup-harness-meta"


@pytest.mark.parametrize("children", ["sweep", "crash"])
def test_warmup_with_a_fifo_sidecar_in_the_record_folder_sweeps_and_measures_to_the_end(recorded, tmp_path,
                                                                                       children):
    # End to end: the children resume from the record folder, and a measurement the gate sends
    # live (the children crash) records into it, folding at its first key; none waits on the FIFO
    # (before, the children hung to --timeout, and the live measurement at its fold for ever).
    folder = copy_records(recorded[0], tmp_path / "records")
    (folder / "mm.meta.json").unlink()
    os.mkfifo(folder / "mm.meta.json")
    env = bench_env(tmp_path, WARMUP_BIN_DIR=str(BIN_DIR), FLAGGEMS_VENDOR="nvidia", TMPDIR=str(tmp_path),
                    FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(folder))
    if children == "crash":
        env.update(FIXTURE_CHILD_HOLD="crash", FIXTURE_EVENTS=str(tmp_path / "events"))
    proc = subprocess.run([str(SCRIPT), "--gpus", "2", "--devices", "0,1", "--",
                           *bench_command(shape_file(tmp_path, SHAPES))],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=HANG)
    run = Run(proc, tmp_path / "trace.jsonl")
    assert run.returncode == 0, run.output
    measured = [s for s in run.sessions if s["worker"] is None]
    assert len(measured) == 1, f"no measurement ran\n{run.output}"
    if children == "crash":
        assert "the sweep recovered no configs: tuning live" in run.stderr, run.stderr
        assert f"WARNING {folder / 'mm.meta.json'}: cannot read the sidecar: is a FIFO" in run.stderr, run.stderr
    else:
        assert "op mm: replayed 12, swept 0 live" in run.stderr, run.stderr
    assert json.loads((folder / "mm.meta.json").read_text())["format"] == "warmup-harness-meta"


def test_a_resume_folder_whose_files_cannot_be_looked_up_is_a_warning_not_an_internal_error(recorded, tmp_path):
    # A lookup in the folder fails for root as for anyone (the tests run as root, whom EACCES never
    # stops): a name over NAME_MAX, ENAMETOOLONG, an error Path.exists() raises as it raises EACCES.
    earlier = tmp_path / ("r" * 300)
    run = bench(tmp_path, shape_file(tmp_path, SHAPES[:1]), FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"),
                WARMUP_HARNESS_RESUME_DIR=str(earlier))
    assert run.returncode == 0, run.output
    assert "INTERNALERROR" not in run.output
    assert f"WARNING resume: {earlier / 'mm.json'}: cannot read the record: File name too long" in run.stderr
    assert "every key is tuned" in run.stderr


def test_a_replay_folder_whose_files_cannot_be_looked_up_is_one_usage_error_line(tmp_path):
    folder = tmp_path / ("r" * 300)
    run = bench(tmp_path, shape_file(tmp_path, SHAPES[:1]), FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder))
    assert run.returncode == 4 and "INTERNALERROR" not in run.output, run.output
    assert f"warmup-harness: {folder / 'mm.json'}: cannot read the record: File name too long" in run.stderr


def test_a_resume_folder_this_user_cannot_search_is_a_warning(tmp_path, monkeypatch):
    # EACCES itself, which root never meets: every stat or open under the folder fails as it fails
    # for a user without search permission there (Path.exists() raised it: INTERNALERROR, exit 3).
    closed = tmp_path / "closed"
    real_stat, real_open = os.stat, os.open

    def denied(call):
        def wrapper(path, *args, **kwargs):
            if str(path).startswith(f"{closed}/"):
                raise PermissionError(13, "Permission denied", str(path))
            return call(path, *args, **kwargs)
        return wrapper

    monkeypatch.setattr(os, "stat", denied(real_stat))
    monkeypatch.setattr(os, "open", denied(real_open))
    lines: list[str] = []
    assert resume.load({"WARMUP_HARNESS_RESUME_DIR": str(closed)}.get, "mm", "3.6.0", lines) is None
    assert lines == [f"WARNING resume: {closed / 'mm.json'}: cannot read the record: Permission denied; "
                     f"every key is tuned"]


@pytest.mark.parametrize("fails", ["the journal", "the fold"])
def test_a_write_that_fails_while_recording_is_a_warning_and_the_tests_run_on(recorded, tmp_path, fails):
    # A full disk, for real and for root too: RLIMIT_FSIZE makes every write past the limit fail
    # with EFBIG (Python ignores SIGXFSZ): past 100 bytes no journal line fits; past the record's
    # size the journal takes the keys but no fold can rewrite the record with them.
    folder = copy_records(recorded[0], tmp_path / "rec")
    before = {name: (folder / name).read_bytes() for name in ("mm.json", "mm.meta.json")}
    limit = 100 if fails == "the journal" else len(before["mm.json"]) + 64
    shapes = shape_file(tmp_path, [[96, 32, 16], [80, 48, 16]])  # keys the record lacks
    # The limit holds for every file the session writes: the fixture's own store is kept in memory,
    # and its trace is not written.
    env = bench_env(tmp_path, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(folder), FLAGGEMS_DB_URL="sqlite:///:memory:")
    del env["FIXTURE_TRACE"]
    proc = subprocess.run(bench_command(shapes), env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=HANG, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
    assert proc.returncode == 0 and "2 passed" in proc.stdout, proc.stdout + proc.stderr  # no test failed
    if fails == "the journal":
        assert (f"WARNING {folder / '.mm.journal'}: 6 key(s) tuned here could not be written (File too large): "
                f"their tests ran on with the configs tuned") in proc.stderr, proc.stderr
    else:
        assert f"WARNING {folder / '.mm.journal'}: not folded into {folder / 'mm.json'} (File too large)" in proc.stderr
    # Nothing already written was lost or torn: the record and sidecar are as they were.
    assert {name: (folder / name).read_bytes() for name in before} == before
    assert not list(folder.glob(".*.tmp*"))
    # The next session, with room, adds the keys and keeps the earlier ones.
    run = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(folder))
    assert run.returncode == 0 and "WARNING" not in run.stderr, run.output
    now = json.loads((folder / "mm.json").read_text())
    earlier = json.loads(before["mm.json"])
    assert all(now[k].items() >= earlier[k].items() for k in earlier)
    assert json.dumps([96, 32, 16, *F16]) in now["kernels_plain:mm_kernel_general"]


def test_the_keys_a_fold_that_failed_left_in_the_journal_are_pinned_when_resuming_in_place(recorded, tmp_path):
    # A full disk (RLIMIT_FSIZE, as above): the keys go to the journal, no fold can put them in the
    # record. The next session resuming in place, with room, must pin them, not tune them.
    folder = copy_records(recorded[0], tmp_path / "rec")
    limit = len((folder / "mm.json").read_bytes()) + 64
    shapes = shape_file(tmp_path, [[96, 32, 16], [80, 48, 16]])  # keys the record lacks
    cache = {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(folder), "WARMUP_HARNESS_RESUME_DIR": str(folder),
             "FLAGGEMS_DB_URL": "sqlite:///:memory:"}  # FlagGems' store answers nothing
    env = bench_env(tmp_path, **cache)
    del env["FIXTURE_TRACE"]
    proc = subprocess.run(bench_command(shapes), env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=HANG, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
    assert proc.returncode == 0 and "not folded into" in proc.stderr, proc.stdout + proc.stderr
    left = (folder / ".mm.journal").read_text().splitlines()
    assert len(left) == 6, left
    run = bench(tmp_path, shapes, **cache)
    assert run.returncode == 0, run.output
    assert sum(run.session["timed"].values()) == 0, f"a key was tuned: {run.session['timed']}"
    assert f"resume: 18 key(s) of {folder / 'mm.json'} and its journal (Triton" in run.stderr, run.stderr
    assert "resume: 6 key(s) taken from" in run.stderr, run.stderr


def test_a_journal_without_a_record_resumes_its_keys_made_here_and_a_line_for_another_kernel_drops_the_old(
        tmp_path):
    from warmup_harness.autotune import writer

    folder = tmp_path / "rec"
    folder.mkdir()
    here = {"device": "fake 0", "triton": TRITON}
    lines = [{"kernel": "m:k", "key": "[1]", "config": {"kwargs": {"B": 1}}, "seconds": 1.0, **here},
             {"kernel": "m:k", "key": "[2]", "config": {"kwargs": {"B": 2}}, "seconds": 2.0, "device": "other",
              "triton": TRITON},
             {"kernel": "m:j", "key": "[1]", "config": {"kwargs": {"B": 3}}, "seconds": 3.0, "fingerprint": "a",
              **here},
             {"kernel": "m:j", "key": "[2]", "config": {"kwargs": {"B": 4}}, "seconds": 4.0, "fingerprint": "b",
              **here}]
    writer.journal_path(folder, "mm").write_text("".join(json.dumps(line) + "\n" for line in lines))
    said: list[str] = []
    earlier = resume.load({"WARMUP_HARNESS_RESUME_DIR": str(folder)}.get, "mm", TRITON, said)
    assert earlier is not None, said
    assert earlier.usable(lambda: "fake 0", said)
    assert earlier.lookup("m:k", "[1]") == ({"kwargs": {"B": 1}}, 1.0)
    assert earlier.lookup("m:k", "[2]") is None, "made on another device"
    assert earlier.lookup("m:j", "[1]") is None, "tuned for the kernel as it was"
    assert earlier.lookup("m:j", "[2]") == ({"kwargs": {"B": 4}}, 4.0) and earlier.kernels["m:j"] == "b"


NO_TRITON = """
import sys
class NoTriton:  # as where Triton is not installed: every import of it finds nothing
    def find_spec(self, name, path=None, target=None):
        if name == "triton" or name.startswith("triton."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoTriton())
sys.modules.pop("triton", None)
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("mode", ["RECORD", "REPLAY"])
def test_a_session_without_triton_is_one_usage_error_line_naming_it(tmp_path, mode):
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    pass\n")
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "mm.json").write_text("{}\n")
    variable = f"FLAGGEMS_PERF_AUTOTUNE_{mode}_DIR"
    proc = subprocess.run([sys.executable, "-c", NO_TRITON, "-q", "-p", "no:cacheprovider", "-p", "warmup_harness",
                           "test_plain.py"], env=bench_env(tmp_path, **{variable: str(tmp_path / "rec")}),
                          cwd=tmp_path, capture_output=True, text=True, timeout=HANG)
    assert proc.returncode == 4, proc.stdout + proc.stderr  # was 3, a 31-line INTERNALERROR
    assert "INTERNALERROR" not in proc.stdout + proc.stderr
    errors = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith("ERROR")]
    assert errors == [f"ERROR: warmup-harness: {variable} is set ({mode.lower()} mode), but Triton cannot be "
                      f"imported in this Python (No module named 'triton'): install Triton where "
                      f"{sys.executable} finds it, or unset {variable}"], proc.stdout + proc.stderr


# Ops both ends must judge alike: plain ones, and ones whose <op>.json would be another file of
# the folder (another op's sidecar or costs), a folder, or outside it.
OPS = ["mm", "default", "a..b", ".mm", "mm.json", "meta", "mm.metadata", "mm.costsheet", " mm.meta ", "mm.meta",
       "mm.costs", "mm.meta.costs", ".", "..", "a/b", "../mm", "/abs"]


def test_the_harness_refuses_exactly_the_ops_warmup_publish_and_warmup_cache_refuse(tmp_path):
    merged = tmp_path / "merged.json"
    merged.write_text(json.dumps({"m:k": {"[1]": {"kwargs": {"B": 1}}}}) + "\n")
    verdicts = {}
    for i, op in enumerate(OPS):
        published = run_tool("publish", "--op", op, "--record-dir", tmp_path / f"rec{i}", merged)
        refused = "cannot be a file name" in published.stderr
        assert published.returncode == (2 if refused else 0), (op, published.stderr)
        removed = run_tool("cache", "remove", "--dry-run", "--op", op, env={"XDG_CACHE_HOME": str(tmp_path)})
        assert removed.returncode == (2 if refused else 0), (op, removed.stderr)
        try:
            harness_env.mode_from_env({"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(tmp_path / f"rec{i}"),
                                       "FLAGGEMS_PERF_CURRENT_OP": op})
            harness = False
        except harness_env.ProtocolError:
            harness = True
        verdicts[op] = (refused, harness)
    assert {op: v for op, v in verdicts.items() if v[0] != v[1]} == {}, "the two rules differ (publish, harness)"
    assert {op for op, (refused, _) in verdicts.items() if refused} == \
        {" mm.meta ", "mm.meta", "mm.costs", "mm.meta.costs", ".", "..", "a/b", "../mm", "/abs"}


# --- yes/no settings: one reader (env.truth) -----------------------------------------------------

WORDS = {"1": True, "true": True, " YES ": True, "Yes": True, "0": False, "false": False, "No": False, "": False,
         "  ": False}


@pytest.mark.parametrize("raw, meaning", list(WORDS.items()))
def test_every_yes_no_setting_reads_the_contracts_words_alike(raw, meaning):
    """FRESH as FlagGems' store, resume and the record-as-its-own-resume read it; RACE and OVERLAP as
    their settings do: one reader, so one meaning each."""
    assert harness_env.truth(harness_env.FRESH, raw) is meaning
    fresh_note = harness_env.isolate_stores({harness_env.FRESH: raw})
    assert ("as WARMUP_HARNESS_FRESH is set" in fresh_note) is meaning, fresh_note
    assert cs.compile_settings({cs.OVERLAP: raw}.get).overlap is (meaning if raw.strip() else True)
    assert race_settings.race_settings({harness_env.RACE: raw}.get).on is (meaning if raw.strip() else True)


@pytest.mark.parametrize("raw", ["on", "off", "2", "y", "nope"])
def test_a_yes_no_setting_neither_yes_nor_no_is_refused_alike_everywhere_it_is_read(tmp_path, raw):
    said = f"WARMUP_HARNESS_FRESH={raw!r} is not one of 1, true, yes, 0, false, no"
    with pytest.raises(harness_env.ProtocolError, match=said):
        harness_env.isolate_stores({harness_env.FRESH: raw})  # was: `on` isolated nothing, silently
    with pytest.raises(harness_env.ProtocolError, match=said):
        resume.load({harness_env.FRESH: raw}.get, "mm", TRITON, [])
    with pytest.raises(harness_env.ProtocolError, match=f"WARMUP_HARNESS_RACE={raw!r} is not one of"):
        race_settings.race_settings({harness_env.RACE: raw}.get)


@pytest.mark.parametrize("variable", ["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR", "FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR"])
def test_a_session_given_fresh_neither_yes_nor_no_is_one_usage_error_before_any_test(tmp_path, recorded, variable):
    """Record and replay alike, FlagGems' store chosen or not: before, a replay ran on, and a record
    session's store was left shared before resume refused the word."""
    folder = copy_records(recorded[0], tmp_path / "rec")
    run = bench(tmp_path, shape_file(tmp_path, SHAPES[:1]), WARMUP_HARNESS_FRESH="on", **{variable: str(folder)})
    assert run.returncode == 4, run.output
    errors = [ln for ln in run.output.splitlines() if ln.startswith("ERROR")]
    assert errors == ["ERROR: warmup-harness: WARMUP_HARNESS_FRESH='on' is not one of 1, true, yes, 0, false, no"], \
        run.output
