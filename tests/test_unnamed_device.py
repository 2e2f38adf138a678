"""A device nothing names (docs/CONTRACT.md, "Device names"): no driver file, no sysfs GPU (an
empty WARMUP_PROBE_ROOT), and, with FIXTURE_NO_TARGET=1, no Triton target either. A sweep's
measurement replays what its children made, an explicit replay folder is the user's word, and the
record cache gives each such machine a folder of its own. Real scripts, tools and pytest children
of the Triton fixture benchmark under the real harness.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_cache import cache_folders, finished, keys, nothing_set, warmup
from test_harness import SHAPES, TRITON, bench, shape_file


def machine(work: Path, name: str) -> Path:
    """A probe root naming no device, whose machine id is `name`."""
    root = work / f"machine-{name}"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "machine-id").write_text(f"{name}\n")
    return root


def on_machine(work: Path, name: str, **extra: str) -> dict[str, str]:
    """A user's environment that names nothing, on the machine `name` (`machine`)."""
    return {**nothing_set(work, **extra), "WARMUP_PROBE_ROOT": str(machine(work, name))}


def decision_line(stderr: str) -> str:
    return next(ln for ln in stderr.splitlines() if ln.startswith("[parallel-warmup]"))


def test_a_sweep_on_devices_nothing_names_is_replayed_by_its_own_measurement(tmp_path):
    shapes = shape_file(tmp_path, SHAPES)
    env = on_machine(tmp_path, "a", FIXTURE_NO_TARGET="1")
    run = finished(warmup(tmp_path, env, shapes, "--gpus", "2", "--devices", "0,1", "--backend", "cuda"), tmp_path)
    assert run.returncode == 0, run.output
    children = [s for s in run.sessions if s["worker"] == "1"]
    [measurement] = [s for s in run.sessions if s["worker"] is None]
    assert len(children) == 2 and all(sum(c["timed"].values()) > 0 for c in children), run.output
    assert "op mm: replayed 12, swept 0 live" in run.stderr, run.stderr
    assert measurement["timed"] == {}, "the measurement timed the children's keys again"
    # The record cache's folder is this machine's, and the line says so.
    [folder] = cache_folders(tmp_path)
    assert folder.name.startswith(f"{TRITON}_unknown-"), folder
    assert f"the record cache's folder {folder.name} is this machine's own" in decision_line(run.stderr)
    assert json.loads((folder / "mm.meta.json").read_text())["device"] is None


def test_an_explicit_replay_folder_replays_keys_made_on_an_unnamed_device_but_not_a_named_other_one(tmp_path):
    shapes = shape_file(tmp_path, SHAPES)
    empty = tmp_path / "nothing"
    empty.mkdir()
    folder = tmp_path / "rec"
    made = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(folder), WARMUP_PROBE_ROOT=str(empty),
                 FIXTURE_NO_TARGET="1")
    assert made.returncode == 0, made.output
    meta = json.loads((folder / "mm.meta.json").read_text())
    assert meta["device"] is None and meta["triton"] == TRITON, meta
    for fixture_target in ("1", "0"):  # replayed where nothing names this device, and on "fake 0"
        run = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder), WARMUP_PROBE_ROOT=str(empty),
                    FIXTURE_NO_TARGET=fixture_target)
        assert run.returncode == 0 and "replayed 12, swept 0 live" in run.stderr, run.output
        assert run.session["timed"] == {}
    # A named device is another one unless this process's has that name; another Triton never replays.
    for device, triton, target in [("NVIDIA H100", TRITON, "0"), ("NVIDIA H100", TRITON, "1"), (None, "3.1.0", "0")]:
        (folder / "mm.meta.json").write_text(json.dumps({**meta, "device": device, "triton": triton}))
        run = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=str(folder), WARMUP_PROBE_ROOT=str(empty),
                    FIXTURE_NO_TARGET=target)
        assert run.returncode == 0 and "replayed 0, swept 12 live" in run.stderr, (device, triton, run.output)


def test_two_machines_whose_devices_nothing_names_keep_their_own_cache_folders(tmp_path):
    """One HOME (shared, as on a cluster), two machines the files name nothing on, whose devices the
    harness names apart (Triton's targets `fake 0` and `fake 1`): each records into a folder of its
    own, and each re-run replays its own, no key replaced by the other's."""
    shapes = shape_file(tmp_path, SHAPES)
    on = {name: on_machine(tmp_path, name, FIXTURE_ARCH=arch) for name, arch in (("a", "0"), ("b", "1"))}
    for name in ("a", "b"):
        first = finished(warmup(tmp_path, on[name], shapes, "--gpus", "1"), tmp_path)
        assert first.returncode == 0 and "one device, one process" in first.stderr, first.output
        assert "is this machine's own" in decision_line(first.stderr), first.stderr
    folders = cache_folders(tmp_path)
    assert len(folders) == 2, folders
    made = {json.loads((f / "mm.meta.json").read_text())["device"]: keys(f / "mm.json") for f in folders}
    assert set(made) == {"fake 0", "fake 1"}, made
    for name in ("a", "b"):
        again = finished(warmup(tmp_path, on[name], shapes, "--gpus", "1"), tmp_path)
        assert again.returncode == 0 and "answers op mm for" in again.stderr, again.output
        assert sum(again.session["timed"].values()) == 0, (name, again.session["timed"])
