"""warmup-publish's replay environment used by real consumers: sh evaluates it, make includes
it, JSON parses; the record file is replaced whole, never seen half-written."""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import subprocess
import sys
import threading
import time

import pytest

from support import HANG, ROOT, clean_env, run_tool, tool

sys.path.insert(0, str(ROOT / "harness"))  # the harness's own sidecar reader checks what is published

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
    assert "mm.json" in res.stderr and "1 kernel(s), 1 key(s)" in res.stderr


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
    assert doc == {"unset": [RECORD], "set": {REPLAY: str(tmp_path / "rec"), "FLAGGEMS_PERF_CURRENT_OP": "bmm"},
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
    assert sorted(os.listdir(rec)) == [".default.lock", "default.json"]


# What a publish leaves in the record folder: the record and the lock the op's record sessions share.
KEPT = {".default.lock", "default.json"}


def test_kill_9_while_publishing_leaves_no_temporaries(tmp_path):
    rec = tmp_path / "rec"
    bodies, sources = merged_files(tmp_path, (60000, 45000))
    started = time.monotonic()
    assert run_tool("publish", "--record-dir", rec, sources[0]).returncode == 0
    took = time.monotonic() - started
    rng = random.Random(9)
    deadline = time.monotonic() + HANG
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
            if set(os.listdir(rec)) - KEPT:
                break
        proc.kill()
        proc.wait(timeout=HANG)
        kills += 1
        # A kill in the instant between naming the temporary and the rename can leave it; at
        # most that one, and the next write removes it (its writer's lock is gone).
        assert len(set(os.listdir(rec)) - KEPT) <= 1, (kills, os.listdir(rec))
        assert (rec / "default.json").read_text() in bodies
        assert run_tool("publish", "--record-dir", rec, sources[kills % 2]).returncode == 0
        assert sorted(os.listdir(rec)) == [".default.lock", "default.json"], (kills, os.listdir(rec))
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
    assert sorted(os.listdir(rec)) == [".default.lock", "default.json"]


# --- the sidecar ---------------------------------------------------------------------------------

EXAMPLE = ROOT / "examples" / "shapes.yaml"


def sidecar(device: str, seconds: dict, **fields) -> str:
    return json.dumps({"format": "warmup-harness-meta", "version": 1, "op": "mm",
                       "tune_seconds": {"m:k": seconds}, "python": "3.12.3", "triton": "3.6.0",
                       "torch": "2.11.0", "flag_gems": None, "harness": "0.1.0", "device": device, **fields})


def swept_scratch(tmp_path, sidecars: dict[int, str]):
    """A scratch of 2 shards (warmup-shard's, the example's mm shapes) whose children recorded one
    key each, with the sidecars given per shard, merged by warmup-merge --in-scratch."""
    scratch = tmp_path / "scratch"
    assert run_tool("shard", "--op", "mm", "--shards", "2", "--out", scratch, EXAMPLE).returncode == 0
    for shard in (0, 1):
        rec = scratch / f"w{shard}" / "rec"
        rec.mkdir(parents=True)
        (rec / "mm.json").write_text(json.dumps({"m:k": {f"[{shard}]": {"BLOCK": 64}}}))
        if shard in sidecars:
            (rec / "mm.meta.json").write_text(sidecars[shard])
    done = run_tool("merge", "--op", "mm", "--in-scratch", scratch)
    assert done.returncode == 0, done.stderr
    return scratch


def load_meta(path):
    """The published sidecar as the replay reads it (the harness's own reader)."""
    from warmup_harness.autotune import records  # noqa: PLC0415  (after sys.path above)

    meta, problem = records.load_meta(path)
    assert problem is None, problem
    return meta


def test_publishing_a_scratch_publishes_the_shards_sidecars_as_one(tmp_path):
    raced = {"raced": 9, "retimed": 1, "skipped": 0, "near": [3], "winner": 3, "history": "short"}
    scratch = swept_scratch(tmp_path, {
        0: sidecar("NVIDIA H200", {"[0]": 2.5}, race={"m:k": {"[0]": raced}},
                   race_settings={"m:k": {"history": 3, "near": 0.2}}),
        1: sidecar("NVIDIA H200", {"[1]": 4.0}, race_settings={"m:k": {"history": 5, "near": 0.3}})})
    rec = tmp_path / "rec"
    done = run_tool("publish", "--op", "mm", "--record-dir", rec, scratch)
    assert done.returncode == 0, done.stderr
    assert f"the shards' versions and device to {rec / 'mm.meta.json'}" in done.stderr
    meta = load_meta(rec / "mm.meta.json")
    assert meta["tune_seconds"] == {"m:k": {"[0]": 2.5, "[1]": 4.0}}
    # A kernel's race history and its settings (the first shard's) go with the record.
    assert (meta["race"], meta["race_settings"]) == ({"m:k": {"[0]": raced}}, {"m:k": {"history": 3, "near": 0.2}})
    assert (meta["device"], meta["triton"], meta["flag_gems"], meta["op"]) == ("NVIDIA H200", "3.6.0", None, "mm")


def test_shards_that_disagree_on_the_device_publish_none_and_say_so(tmp_path):
    scratch = swept_scratch(tmp_path, {0: sidecar("NVIDIA H200", {"[0]": 2.5}),
                                       1: sidecar("NVIDIA A100", {"[1]": 4.0}, triton="3.5.1")})
    rec = tmp_path / "rec"
    done = run_tool("publish", "--op", "mm", "--record-dir", rec, scratch)
    assert done.returncode == 0, done.stderr
    assert ('the shards\' sidecars disagree on device ("NVIDIA H200" in shard 0; "NVIDIA A100" in shard 1)'
            in done.stderr), done.stderr
    assert "disagree on triton" in done.stderr
    meta = load_meta(rec / "mm.meta.json")
    assert meta["device"] is None and meta["triton"] is None and meta["torch"] == "2.11.0"
    # The sidecar names no device, and still says where each key was made: no key is vouched for.
    assert meta["foreign"] == [{"device": "NVIDIA H200", "triton": "3.6.0", "keys": {"m:k": ["[0]"]}},
                               {"device": "NVIDIA A100", "triton": "3.5.1", "keys": {"m:k": ["[1]"]}}]


@pytest.mark.parametrize("fields, published", [
    ([{"startup_seconds": 9.5, "compile_seconds": 3.25}, {"startup_seconds": 8.0, "compile_seconds": 4.5}],
     {"startup_seconds": 9.5, "compile_seconds": 7.75}),  # the longest start-up, the sum of compiling
    ([{"startup_seconds": 9.5, "compile_seconds": None}, {"startup_seconds": None, "compile_seconds": 4.5}],
     {"startup_seconds": 9.5, "compile_seconds": None}),  # a sum missing a shard's is no sum
    ([{}, {}], {}),  # sidecars of an earlier harness: the fields stay out
])
def test_the_shards_start_up_and_compile_seconds_are_published(tmp_path, fields, published):
    scratch = swept_scratch(tmp_path, {0: sidecar("NVIDIA H200", {"[0]": 2.5}, **fields[0]),
                                       1: sidecar("NVIDIA H200", {"[1]": 4.0}, **fields[1])})
    rec = tmp_path / "rec"
    done = run_tool("publish", "--op", "mm", "--record-dir", rec, scratch)
    assert done.returncode == 0, done.stderr
    meta = load_meta(rec / "mm.meta.json")
    assert {k: meta[k] for k in ("startup_seconds", "compile_seconds") if k in meta} == published


def test_a_shards_unreadable_sidecar_is_left_out_and_named(tmp_path):
    scratch = swept_scratch(tmp_path, {0: "{not json", 1: sidecar("NVIDIA H200", {"[1]": 4.0})})
    rec = tmp_path / "rec"
    done = run_tool("publish", "--op", "mm", "--record-dir", rec, scratch)
    assert done.returncode == 0, done.stderr
    assert f"{scratch / 'w0' / 'rec' / 'mm.meta.json'}: not JSON" in done.stderr, done.stderr
    assert load_meta(rec / "mm.meta.json")["tune_seconds"] == {"m:k": {"[1]": 4.0}}


@pytest.mark.parametrize("source", ["a merged file", "a scratch without sidecars"])
def test_a_sidecar_of_the_record_replaced_is_removed(tmp_path, merged, source):
    rec = tmp_path / "rec"
    rec.mkdir()
    (rec / "mm.json").write_text(json.dumps({"m:k": {"[9]": {"BLOCK": 16}}}))
    (rec / "mm.meta.json").write_text(sidecar("NVIDIA A100", {"[9]": 1.0}))
    given = merged if source == "a merged file" else swept_scratch(tmp_path, {})
    done = run_tool("publish", "--op", "mm", "--record-dir", rec, given)
    assert done.returncode == 0, done.stderr
    assert f"removed {rec / 'mm.meta.json'}, which described the record it replaced" in done.stderr
    assert sorted(os.listdir(rec)) == [".mm.lock", "mm.json"]  # the lock the op's record sessions share


def test_a_journal_a_killed_record_session_left_is_folded_under_the_published_record_and_removed(
        tmp_path, merged):
    """A record session killed with keys journaled but not folded leaves `.<op>.journal`, whose keys
    the replay pins over the record's: left beside a newly published record, they would replay
    another run's config for the same key. Its keys are the folder's, so they stay in the record
    published, under the new configs where both have a key."""
    from warmup_harness.autotune import journal  # noqa: PLC0415  (after sys.path above)

    rec = tmp_path / "rec"
    rec.mkdir()
    stale = {"kwargs": {"BLOCK": 16}, "num_warps": 8}
    only = {"kwargs": {"BLOCK": 32}, "num_warps": 4}
    journal.journal_path(rec, "mm").write_text(
        json.dumps({"kernel": "k", "key": "(1, 2)", "config": stale, "seconds": 1.0}) + "\n"
        + json.dumps({"kernel": "k", "key": "(3, 4)", "config": only, "seconds": 2.0}) + "\n")
    pinned: dict = {}
    assert journal.unfolded(rec, "mm", pinned) == 2  # what the replay would have pinned
    done = run_tool("publish", "--op", "mm", "--record-dir", rec, merged)
    assert done.returncode == 0, done.stderr
    assert "the unfolded keys of a killed record session (2 key(s), kept in the published record)" \
        in done.stderr, done.stderr
    # The lock the op's record sessions share, and the file a live one holds.
    assert sorted(os.listdir(rec)) == [".mm.lock", ".mm.sessions", "mm.json"]
    pinned = json.loads((rec / "mm.json").read_text())
    assert journal.unfolded(rec, "mm", pinned) == 0
    assert pinned == {"k": {**json.loads(MERGED)["k"], "(3, 4)": only}}


def test_publish_waits_for_a_record_session_holding_the_ops_lock(tmp_path, merged):
    """The record is not replaced under a record session that is folding its journal into it."""
    import fcntl  # noqa: PLC0415

    rec = tmp_path / "rec"
    rec.mkdir()
    with open(rec / ".mm.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.Popen([str(tool("publish")), "--op", "mm", "--record-dir", str(rec), str(merged)],
                                env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = proc.stderr.readline()  # said once, as it starts to wait
        assert "waiting for another process updating" in line, line
        assert not (rec / "mm.json").exists()
    out, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 0, err
    assert json.loads((rec / "mm.json").read_text()) == json.loads(MERGED)


def test_a_scratch_published_over_a_record_keeps_its_keys_and_their_tune_seconds(tmp_path):
    """The published sidecar's tune_seconds follow the record's union: the earlier keys keep their
    seconds, the keys this run decided take the shards'."""
    rec = tmp_path / "rec"
    rec.mkdir()
    (rec / "mm.json").write_text(json.dumps({"m:k": {"[0]": {"BLOCK": 16}, "[7]": {"BLOCK": 32}}}))
    (rec / "mm.meta.json").write_text(sidecar("NVIDIA H200", {"[0]": 9.0, "[7]": 7.0}))
    scratch = swept_scratch(tmp_path, {0: sidecar("NVIDIA H200", {"[0]": 2.5}),
                                       1: sidecar("NVIDIA H200", {"[1]": 4.0})})
    done = run_tool("publish", "--op", "mm", "--record-dir", rec, scratch)
    assert done.returncode == 0, done.stderr
    assert "1 key(s) kept from the record there" in done.stderr, done.stderr
    assert json.loads((rec / "mm.json").read_text()) == {
        "m:k": {"[0]": {"BLOCK": 64}, "[7]": {"BLOCK": 32}, "[1]": {"BLOCK": 64}}}
    assert load_meta(rec / "mm.meta.json")["tune_seconds"] == {"m:k": {"[0]": 2.5, "[1]": 4.0, "[7]": 7.0}}


def test_two_scratches_published_into_one_folder_at_once_keep_both_runs_keys(tmp_path):
    """Two runs publishing at once take turns under the op's record lock, each adding to what the
    other published."""
    scratches = []
    for run in (0, 1):
        work = tmp_path / f"run{run}"
        work.mkdir()
        scratch = swept_scratch(work, {0: sidecar("NVIDIA H200", {"[0]": 2.5}),
                                       1: sidecar("NVIDIA H200", {"[1]": 4.0})})
        for shard in (0, 1):  # run 1's keys are [10] and [11]
            (scratch / f"w{shard}" / "rec" / "mm.json").write_text(
                json.dumps({"m:k": {f"[{shard + 10 * run}]": {"BLOCK": 64}}}))
        assert run_tool("merge", "--op", "mm", "--in-scratch", scratch).returncode == 0
        scratches.append(scratch)
    rec = tmp_path / "rec"
    procs = [subprocess.Popen([str(tool("publish")), "--op", "mm", "--record-dir", str(rec), str(s)],
                              env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for s in scratches]
    for proc in procs:
        _, err = proc.communicate(timeout=HANG)
        assert proc.returncode == 0, err
    assert set(json.loads((rec / "mm.json").read_text())["m:k"]) == {"[0]", "[1]", "[10]", "[11]"}


def test_a_kernel_that_changed_keeps_none_of_its_old_keys_and_the_others_are_kept(tmp_path):
    """The record there holds keys of kernel m:k, recorded with another fingerprint than the
    shards' (its source or configs changed since), and of m:o, unchanged: m:k's old keys are not
    kept, since the new sidecar's fingerprint would vouch for them; m:o's are, with theirs."""
    rec = tmp_path / "rec"
    rec.mkdir()
    (rec / "mm.json").write_text(json.dumps({"m:k": {"[7]": {"BLOCK": 32}}, "m:o": {"[0]": {"BLOCK": 8}}}))
    (rec / "mm.meta.json").write_text(sidecar("NVIDIA H200", {"[7]": 7.0},
                                              kernels={"m:k": "old0", "m:o": "same"}))
    new = {"m:k": "new1"}
    scratch = swept_scratch(tmp_path, {0: sidecar("NVIDIA H200", {"[0]": 2.5}, kernels=new),
                                       1: sidecar("NVIDIA H200", {"[1]": 4.0}, kernels=new)})
    done = run_tool("publish", "--op", "mm", "--record-dir", rec, scratch)
    assert done.returncode == 0, done.stderr
    assert "kernel m:k changed since" in done.stderr and "its keys there are not kept" in done.stderr
    assert json.loads((rec / "mm.json").read_text()) == {
        "m:k": {"[0]": {"BLOCK": 64}, "[1]": {"BLOCK": 64}}, "m:o": {"[0]": {"BLOCK": 8}}}
    meta = load_meta(rec / "mm.meta.json")
    assert meta["kernels"] == {"m:k": "new1", "m:o": "same"}
    assert meta["tune_seconds"]["m:k"] == {"[0]": 2.5, "[1]": 4.0}, "[7]'s seconds went with it"


def test_a_complete_sweeps_signature_is_published_and_any_other_publish_names_no_complete_run(tmp_path):
    """`--signature SIG` (warmup-spawn passes it when every shard ended ok) is the sidecar's
    `complete_for`; a publish without it (a stopped or failed sweep) drops the one there, as the
    shards' or the earlier sidecar's would vouch for keys this record may lack."""
    scratch = swept_scratch(tmp_path, {0: sidecar("NVIDIA H200", {"[0]": 2.5}, complete_for="shard's"),
                                       1: sidecar("NVIDIA H200", {"[1]": 4.0})})
    rec = tmp_path / "rec"
    done = run_tool("publish", "--op", "mm", "--record-dir", rec, "--signature", "ab" * 16, scratch)
    assert done.returncode == 0, done.stderr
    assert load_meta(rec / "mm.meta.json")["complete_for"] == "ab" * 16
    again = run_tool("publish", "--op", "mm", "--record-dir", rec, scratch)
    assert again.returncode == 0, again.stderr
    assert "complete_for" not in load_meta(rec / "mm.meta.json")
