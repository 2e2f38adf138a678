"""Deciding from history: a sweep's costs kept with its records (`warmup-costs --record-dir`),
the next split balanced by them (`warmup-shard --history`) when they were made on this run's Triton
and device model, and the prediction of whether a warmup pays (`warmup-costs --predict`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support import ROOT, clean_env, run_tool
from test_balance import SIX, fake_run, plan_of, shard, write

H200 = "NVIDIA H200"
HERE = ("--triton", "3.6.0", "--device-model", H200)


def sidecar(folder: Path, *, op="mm", triton="3.6.0", device=H200, tune=None, **figures) -> Path:
    """A harness sidecar `<op>.meta.json` in `folder`, as the harness and warmup-publish write it."""
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"format": "warmup-harness-meta", "version": 1, "op": op,
           "tune_seconds": tune if tune is not None else {"k": {"[1]": 1.0}},
           "python": "3.11.7", "triton": triton, "torch": "2.11.0", "flag_gems": None,
           "harness": "0.1.0", "device": device, **figures}
    path = folder / f"{op}.meta.json"
    path.write_text(json.dumps(doc))
    return path


def driver_probe(tmp_path: Path) -> Path:
    """A WARMUP_PROBE_ROOT whose NVIDIA driver lists two H200s, as /proc/driver/nvidia/gpus does."""
    root = tmp_path / "probe"
    for bus in ("0000:00:06.0", "0000:00:07.0"):
        info = root / "proc/driver/nvidia/gpus" / bus / "information"
        info.parent.mkdir(parents=True)
        info.write_text(f"Model: \t\t {H200}\nIRQ:   \t\t 41\nGPU UUID: \t GPU-{bus}\n")
    return root


def swept(tmp_path, **figures) -> tuple[Path, Path]:
    """A finished 6-shard sweep of SIX (one shape a shard, shard i took 2 + i seconds, each
    child's sidecar with a start-up of 1.5 s), merged and published into RECORDS: the scratch and
    the record folder, holding mm.json and mm.meta.json."""
    scratch = fake_run(tmp_path, {i: 2.0 + i for i in range(6)}, "--shards", "6", "--strategy", "lpt")
    for i in range(6):
        rec = scratch / f"w{i}" / "rec"
        sidecar(rec, startup_seconds=1.5, **figures)
        (rec / "mm.json").write_text(json.dumps({"k": {f"[{i}]": {"num_warps": 4}}}))
    records = tmp_path / "records"
    assert run_tool("merge", "--in-scratch", scratch).returncode == 0
    r = run_tool("publish", "--op", "mm", "--record-dir", records, scratch)
    assert r.returncode == 0, r.stderr
    return scratch, records


def test_a_sweeps_costs_are_kept_with_its_records_and_balance_the_next_split(tmp_path):
    scratch, records = swept(tmp_path)
    r = run_tool("costs", "--record-dir", records, scratch)
    assert r.returncode == 0, r.stderr
    kept = records / "mm.costs.json"
    assert r.stdout.strip() == str(kept)
    # Each child's own start-up (1.5 s, from its sidecar) is taken off its wall time.
    plan = plan_of(tmp_path)
    want = {s["shape_texts"][0]: 0.5 + s["index"] for s in plan["shards"]}
    assert json.loads(kept.read_text()) == {"mm": want}

    src = tmp_path / "s.yaml"
    r = shard(tmp_path, src, "--shards", "2", "--history", records, *HERE, out="next")
    assert r.returncode == 0, r.stderr
    assert "balancing by the costs its last sweep measured" in r.stderr, r.stderr
    plan = plan_of(tmp_path, "next")
    assert (plan["strategy"], plan["cost_source"]) == ("lpt", "file")
    # LPT of 5.5, 4.5, 3.5, 2.5, 1.5, 0.5: 5.5 + 2.5 + 0.5 and 4.5 + 3.5 + 1.5.
    assert sorted(s["expected_cost"] for s in plan["shards"]) == pytest.approx([8.5, 9.5])


def test_a_later_sweep_replaces_the_ops_kept_costs_and_keeps_other_ops(tmp_path):
    scratch, records = swept(tmp_path)
    (records / "mm.costs.json").write_text(json.dumps(
        {"bmm": {"[1]": 3.0}, "mm": {"[77,7]": 99.0}}))
    r = run_tool("costs", "--record-dir", records, "--startup", "2", scratch)
    assert r.returncode == 0, r.stderr
    kept = json.loads((records / "mm.costs.json").read_text())
    assert kept["bmm"] == {"[1]": 3.0}
    assert "[77,7]" not in kept["mm"] and len(kept["mm"]) == 6


@pytest.mark.parametrize("here, why", [
    (("--triton", "3.5.1", "--device-model", H200), 'Triton "3.6.0", this run\'s is "3.5.1"'),
    (("--triton", "3.6.0", "--device-model", "NVIDIA A100"), 'device "NVIDIA H200"'),
    (("--triton", "3.6.0"), "this run's is unknown"),  # no driver under the probe root
    ((), "Triton \"3.6.0\", this run's is unknown"),
])
def test_a_history_from_another_triton_or_device_or_an_unknown_one_is_not_used(tmp_path, here, why):
    scratch, records = swept(tmp_path)
    assert run_tool("costs", "--record-dir", records, scratch).returncode == 0
    r = shard(tmp_path, tmp_path / "s.yaml", "--shards", "2", "--history", records, *here,
              out="next", env={"WARMUP_PROBE_ROOT": str(tmp_path / "no-driver")})
    assert r.returncode == 0, r.stderr
    assert "no usable history" in r.stderr and why in r.stderr, r.stderr
    plan = plan_of(tmp_path, "next")
    assert (plan["strategy"], plan["cost_source"]) == ("lpt", "robust")


def test_the_device_model_comes_from_the_driver_and_triton_from_the_benchmarks_python(tmp_path):
    scratch, records = swept(tmp_path, triton=None)
    assert run_tool("costs", "--record-dir", records, scratch).returncode == 0
    version = subprocess.run([sys.executable, "-c", "import triton; print(triton.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    sidecar(records, triton=version)
    root = driver_probe(tmp_path)
    r = shard(tmp_path, tmp_path / "s.yaml", "--shards", "2", "--history", records,
              "--python", sys.executable, out="next", env={"WARMUP_PROBE_ROOT": str(root)})
    assert r.returncode == 0, r.stderr
    assert plan_of(tmp_path, "next")["cost_source"] == "file", r.stderr
    r = shard(tmp_path, tmp_path / "s.yaml", "--shards", "2", "--history", records,
              "--python", tmp_path / "no-python", out="again", env={"WARMUP_PROBE_ROOT": str(root)})
    assert r.returncode == 0 and plan_of(tmp_path, "again")["cost_source"] == "robust", r.stderr


def test_a_broken_kept_cost_file_is_refused_by_warmup_costs_and_passed_over_by_the_split(tmp_path):
    scratch, records = swept(tmp_path)
    kept = records / "mm.costs.json"
    kept.write_text('{"mm": {"[1,2]": -1}}')
    r = run_tool("costs", "--record-dir", records, scratch)
    assert r.returncode == 2 and str(kept) in r.stderr and "not a cost" in r.stderr, r.stderr
    assert kept.read_text() == '{"mm": {"[1,2]": -1}}'
    r = shard(tmp_path, tmp_path / "s.yaml", "--shards", "2", "--history", records, *HERE, out="next")
    assert r.returncode == 0, r.stderr
    assert "no usable history" in r.stderr and str(kept) in r.stderr, r.stderr
    assert plan_of(tmp_path, "next")["cost_source"] == "robust"
    r = predict(records, "0,1")
    assert r.returncode == 0 and "no usable history" in r.stderr, r.stderr


def test_costs_naming_the_file_record_dir_keeps_is_refused_not_left_waiting_on_its_own_lock(tmp_path):
    scratch, records = swept(tmp_path)
    kept = records / "mm.costs.json"
    kept.write_text('{"mm": {"[1]": 4}}')
    # A symlink to the kept file is the same file: one update lock, taken twice, would never come.
    (tmp_path / "link.json").symlink_to(kept)
    for costs in (kept, tmp_path / "link.json"):
        r = run_tool("costs", "--costs", costs, "--record-dir", records, scratch)
        assert r.returncode == 2, r.stderr
        assert f"--costs {costs} is the file --record-dir keeps" in r.stderr, r.stderr
        assert kept.read_text() == '{"mm": {"[1]": 4}}'
    r = run_tool("costs", "--costs", tmp_path / "costs.json", "--record-dir", records, scratch)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(tmp_path / "costs.json"), str(kept)]
    assert (records / ".mm.costs.json.lock").is_file()  # the kept file is updated under its lock


def test_no_history_at_all_splits_by_the_robust_model(tmp_path):
    r = shard(tmp_path, write(tmp_path, "s.yaml", SIX), "--shards", "2", "--history",
              tmp_path / "records", *HERE)
    assert r.returncode == 0, r.stderr
    assert "no usable history (no " in r.stderr and "mm.meta.json" in r.stderr, r.stderr
    assert plan_of(tmp_path)["cost_source"] == "robust"


# --- the decision -------------------------------------------------------------------------------

def history(records: Path, costs: list[float], tune: float, compile_s: float, startup: float,
            **meta) -> None:
    """A record folder as a sweep leaves it: the sidecar with the keys' tuning seconds (one key
    per shape here, summing to `tune`) and the start-up and compile figures, and the cost file."""
    n = len(costs)
    sidecar(records, tune={"mm_kernel": {f"[{i}]": tune / n for i in range(n)}},
            startup_seconds=startup, compile_seconds=compile_s, **meta)
    (records / "mm.costs.json").write_text(json.dumps({"mm": {f"[{i}]": c for i, c in enumerate(costs)}}))


def predict(records: Path, devices: str, *here: str):
    return run_tool("costs", "--predict", "--record-dir", records, "--op", "mm",
                    "--devices", devices, *(here or HERE))


def summary(text: str) -> dict[str, str]:
    lines = text.splitlines()
    assert lines[0] == "version 1", text
    return dict(line.split(" ", 1) for line in lines[1:])


# Issue 16's compile-heavy fp16 mm, as its cold warmup run would have left it: 8 shapes, 79.8 s
# of tuning of which 56.7 s compiling, 9 s of start-up, 7.7 s of the benchmark's own time.
HEAVY = dict(costs=[(79.8 + 7.7) / 8] * 8, tune=79.8, compile_s=56.7, startup=9.0)


def test_a_history_that_predicts_a_saving_exits_0_with_both_figures(tmp_path):
    history(tmp_path, **HEAVY)
    r = predict(tmp_path, "0,1")
    assert r.returncode == 0, r.stderr
    s = summary(r.stdout)
    assert s["decision"] == "warmup" and s["history"] == str(tmp_path / "mm.meta.json")
    plain, warm = float(s["plain_seconds"]), float(s["warmup_seconds"])
    assert plain == pytest.approx(9.0 + 23.1 + 7.7, abs=0.01)  # S + (T - C) + M
    assert float(s["saving"]) == pytest.approx(1 - warm / plain, abs=1e-3) and warm < 0.9 * plain
    assert f"{warm:.1f} s with the warmup against {plain:.1f} s plain" in r.stderr, r.stderr


def test_a_history_that_predicts_no_saving_exits_3_and_says_both_figures(tmp_path):
    history(tmp_path, **HEAVY)
    r = predict(tmp_path, "0,0")  # two children on one GPU: timing is serialized, 23.1 s of it
    assert r.returncode == 3, r.stderr
    s = summary(r.stdout)
    assert s["decision"] == "plain" and (s["children"], s["devices"]) == ("2", "1")
    assert float(s["warmup_seconds"]) >= 0.9 * float(s["plain_seconds"])
    assert "run plain" in r.stderr and s["plain_seconds"][:-1] in r.stderr, r.stderr


@pytest.mark.parametrize("meta", [{"triton": "3.5.1"}, {"device": "NVIDIA A100"}, {"device": None}])
def test_a_history_from_another_triton_or_device_is_ignored_and_the_warmup_runs(tmp_path, meta):
    history(tmp_path, **HEAVY, **meta)
    r = predict(tmp_path, "0,0")
    assert r.returncode == 0, r.stderr
    assert "no usable history" in r.stderr, r.stderr
    assert summary(r.stdout) == {"op": "mm", "decision": "warmup"}


def test_predict_without_a_history_exits_0_and_without_devices_is_a_usage_error(tmp_path):
    r = predict(tmp_path / "none", "0,1")
    assert r.returncode == 0 and "no usable history (no " in r.stderr, r.stderr
    history(tmp_path, **HEAVY)
    sidecar(tmp_path, tune={}, startup_seconds=9.0)  # a harness that timed no key
    r = predict(tmp_path, "0,0")
    assert r.returncode == 0 and "no key's tune_seconds" in r.stderr, r.stderr
    history(tmp_path, **HEAVY)
    r = run_tool("costs", "--predict", "--record-dir", tmp_path, "--op", "mm", *HERE)
    assert r.returncode == 2 and "--devices" in r.stderr, r.stderr
    r = run_tool("costs", "--predict", "--op", "mm", "--devices", "0")
    assert r.returncode == 2 and "--record-dir" in r.stderr, r.stderr
    # A record folder that is a file is a usage error naming it, as scripts/warmup has it.
    (tmp_path / "file").write_text("")
    r = predict(tmp_path / "file", "0,1")
    assert r.returncode == 2 and str(tmp_path / "file") in r.stderr, r.stderr


@pytest.mark.parametrize("tree, name", [("nvidia", H200), ("amd", "AMD Instinct MI300X"),
                                        ("pci", "PCI 1da3:1020")])
def test_the_plan_and_the_harness_name_a_device_alike_on_every_vendor(tmp_path, tree, name):
    """warmup-plan (protocol's probe, no interpreter) and the harness (in the benchmark's process)
    read one tree the same way, so a record the harness made is one the plan knows is this
    device's: the NVIDIA driver's files, an AMD host's sysfs and KFD topology, a PCI-only host."""
    root = driver_probe(tmp_path) if tree == "nvidia" else ROOT / "tests" / "data" / "sysfs" / tree
    planned = run_tool("plan", "--format", "json", "--gpus", "2", "--devices", "0,1", "--", "true",
                       env={"WARMUP_PROBE_ROOT": str(root), "FLAGGEMS_VENDOR": "nvidia"}, cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    assert json.loads(planned.stdout)["device"] == name
    code = "from warmup_harness.autotune.device import device_name; print(device_name())"
    named = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                           env=clean_env(PYTHONPATH=str(ROOT / "harness"), WARMUP_PROBE_ROOT=str(root)))
    assert named.returncode == 0, named.stderr
    assert named.stdout.strip() == name


# A benchmark process where torch (and FlagGems) are imported: vendors' device modules, each
# `name: device`; FlagGems' runtime naming the module it runs on.
RUNTIME = """
import sys, types
def module(device):
    return types.SimpleNamespace(is_available=lambda: device is not None, current_device=lambda: 0,
                                 get_device_name=lambda i: device)
sys.modules["torch"] = types.SimpleNamespace(**{{k: module(v) for k, v in {modules!r}.items()}})
if {vendor!r}:
    sys.modules["flag_gems.runtime"] = types.SimpleNamespace(device=types.SimpleNamespace(name={vendor!r}))
from warmup_harness.autotune.device import device_name
print(device_name())
"""


@pytest.mark.parametrize("tree, modules, vendor, plan, harness", [
    ("pci", {"npu": "Ascend910B"}, "", "PCI 1da3:1020", "PCI 1da3:1020"),
    ("empty", {"cuda": None, "npu": "Ascend910B"}, "", "", "Ascend910B"),
    ("empty", {"cuda": "NVIDIA H100", "mlu": "MLU370-X8"}, "mlu", "", "MLU370-X8"),
    ("empty", {"cuda": None, "musa": "MTT S4000", "xpu": "Intel Max 1550"}, "", "", "MTT S4000"),
], ids=["files-first", "npu", "flaggems-vendor", "musa"])
def test_the_harness_names_by_the_runtime_only_where_the_plans_files_name_nothing(
        tmp_path, tree, modules, vendor, plan, harness):
    """One rule: the files first, on both sides; where they name nothing the plan's device is
    unknown (its record cache folder is this machine's) and the harness asks the accelerator's
    runtime already imported: the module FlagGems runs on, else the first vendor's with a device."""
    root = ROOT / "tests" / "data" / "sysfs" / tree if tree != "empty" else tmp_path / "empty"
    root.mkdir(exist_ok=True)
    planned = run_tool("plan", "--format", "json", "--gpus", "2", "--devices", "0,1", "--", "true",
                       env={"WARMUP_PROBE_ROOT": str(root), "FLAGGEMS_VENDOR": "nvidia"}, cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    assert json.loads(planned.stdout)["device"] == plan
    code = RUNTIME.format(modules=modules, vendor=vendor)
    named = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                           env=clean_env(PYTHONPATH=str(ROOT / "harness"), WARMUP_PROBE_ROOT=str(root)))
    assert named.returncode == 0, named.stderr
    assert named.stdout.strip() == harness


@pytest.mark.parametrize("fields, tools_say", [
    ({"version": 1.0}, "sidecar version 1.0"), ({"version": True}, "sidecar version true"),
    ({"device": H200 + " "}, 'made on device "NVIDIA H200 "'),
], ids=["version-1.0", "version-true", "device-with-a-space"])
def test_a_sidecar_the_tools_refuse_the_harness_refuses_too(tmp_path, fields, tools_say):
    """One rule on both sides: the version is the integer 1, names are compared exactly."""
    history(tmp_path, **HEAVY, **fields)
    r = predict(tmp_path, "0,1")
    assert r.returncode == 0 and "no usable history" in r.stderr and tools_say in r.stderr, r.stderr
    (tmp_path / "mm.json").write_text('{"mm_kernel": {"[0]": {"kwargs": {}}}}')
    code = ("import sys; from warmup_harness.autotune import resume\n"
            "earlier = resume.load({'WARMUP_HARNESS_RESUME_DIR': sys.argv[1]}.get, 'mm', '3.6.0', [])\n"
            "print(earlier is not None and earlier.usable(lambda: 'NVIDIA H200', []))")
    harness = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                             timeout=60, env=clean_env(PYTHONPATH=str(ROOT / "harness")))
    assert harness.returncode == 0, harness.stderr
    assert harness.stdout.strip() == "False", "the harness would resume from what the tools refuse"
