"""tests/gpu/proof.py, issue 10's benchmark script for the GPU machine, where there is no GPU: how
it compares picks and draws its tables, and a whole dry run (its `dry` bench: real Triton compiling
for a faked H200, tests/gpu/test_dry_bench.py) through scripts/warmup, the tools and the harness."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from support import BIN_DIR, HANG, ROOT, clean_env

sys.path.insert(0, str(ROOT / "harness"))  # proof.py reads the harness's report lines
_spec = importlib.util.spec_from_file_location("gpu_proof", ROOT / "tests" / "gpu" / "proof.py")
proof = sys.modules["gpu_proof"] = importlib.util.module_from_spec(_spec)  # its dataclasses look it up
_spec.loader.exec_module(proof)

SERIAL = {"shapes": {"a": {"ms": 0.10, "gpu_ms": 0.020}, "b": {"ms": 0.20, "gpu_ms": 0.100}, "c": {"ms": 1.0}}}
WARMUP = {"shapes": {"a": {"ms": 0.04, "gpu_ms": 0.022}, "b": {"ms": 0.20, "gpu_ms": 0.100}, "c": {"ms": 1.0}}}


def test_picks_are_compared_by_the_gpus_time_and_with_launches_included():
    launches = proof.compare(WARMUP, SERIAL)
    gpu = proof.compare(WARMUP, SERIAL, "gpu_ms")
    assert launches["per_shape"]["a"]["ratio"] == pytest.approx(0.4)
    assert set(gpu["per_shape"]) == {"a", "b"}, "a shape without a GPU time counts for nothing, not as 1"
    assert gpu["geomean_ratio"] == pytest.approx(1.1 ** 0.5)
    assert proof.compare(None, SERIAL) == {"per_shape": {}, "geomean_ratio": None}


def test_the_per_shape_table_lists_the_variants_that_measured():
    doc = {"variants": {"ours2": {"gpu_latency_vs_serial_picks": proof.compare(WARMUP, SERIAL, "gpu_ms")},
                        "plugin2": {"skipped": "needs 2 GPUs"}}}
    lines = proof.per_shape_table(doc, "gpu_latency_vs_serial_picks", "the GPU's time")
    assert lines[1] == "### replayed latency per shape, the GPU's time (ms; ratio to the serial picks)"
    assert lines[3] == "| shape | serial picks | ours2 |"
    assert lines[5:] == ["| a | 0.0200 | 0.0220 (1.100) |", "| b | 0.1000 | 0.1000 (1.000) |"]
    assert proof.per_shape_table(doc, "latency_vs_serial_picks", "launches included") == []


@pytest.fixture(scope="module")
def dry(tmp_path_factory):
    """The proof's dry bench, serial and two children on one device: its JSON document."""
    tmp = tmp_path_factory.mktemp("proof")
    env = clean_env(WARMUP_BIN_DIR=str(BIN_DIR), PYTHONPATH=str(ROOT / "harness"),
                    PYTEST_ADDOPTS="-p warmup_harness", CUDA_VISIBLE_DEVICES="0")
    command = [sys.executable, str(ROOT / "tests" / "gpu" / "proof.py"), "--bench", "dry", "--gpus", "1",
               "--backend", "cuda", "--variants", "serial,ours1x2", "--budget", "400",
               "--work", str(tmp / "work"), "--out", str(tmp / "out")]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((tmp / "out" / "proof_dry.json").read_text()), done.stdout


def test_a_dry_proof_sweeps_warms_up_and_replays_the_same_picks(dry):
    doc, stdout = dry
    serial, ours = doc["variants"]["serial"], doc["variants"]["ours1x2"]
    assert serial["exit_code"] == ours["exit_code"] == 0, stdout
    assert sum(serial["keys"].values()) == sum(ours["keys"].values()) == 8
    assert ours["conflicts"] == 0 and ours["harness"] == {"replayed": 8, "swept_live": 0}
    assert [c["device"] for c in ours["children_info"]] == ["0", "0"]
    # The dry timer is a pure function of config and shape: both designs pick the same configs,
    # and replaying them measures the same; a pick lost or changed on the way would show here.
    assert ours["picks_differing"] == 0 and ours["latency_vs_serial_picks"]["geomean_ratio"] == 1.0
    assert ours["gpu_latency_vs_serial_picks"]["per_shape"] == {}  # no CUDA graphs without a GPU
    assert ours["speedup"] and "| ours1x2 | 0,0 | 2 | 0 |" in stdout


def test_the_phase_clock_says_where_a_real_pytest_run_spent_its_time(tmp_path):
    """bench_e2e.sh --phases: tests/gpu/phase_clock.py loaded into a real pytest, then e2e_report.py's
    run line and its last table, read from the clock's file and the log's tuner lines."""
    (tmp_path / "test_sleep.py").write_text("import time\n\n\ndef test_sleep():\n    time.sleep(0.3)\n")
    clock, log = tmp_path / "phases.json", tmp_path / "run.log"
    env = clean_env(PYTHONPATH=str(ROOT / "tests" / "gpu"), PHASE_CLOCK_FILE=str(clock))
    t0 = subprocess.run([sys.executable, "-c", "import time; print(time.time())"], capture_output=True,
                        text=True, check=True).stdout.strip()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "phase_clock",
                           "test_sleep.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG)
    t1 = subprocess.run([sys.executable, "-c", "import time; print(time.time())"], capture_output=True,
                        text=True, check=True).stdout.strip()
    assert done.returncode == 0, done.stdout + done.stderr
    log.write_text(done.stdout + "Triton autotuning for function k finished after 1.25s\n"
                   "Triton autotuning for function k finished after 0.50s\n")
    report = [sys.executable, str(ROOT / "tests" / "gpu" / "e2e_report.py")]
    line = subprocess.run([*report, "--run", "plain_x_cold_r1", "x", "plain", "cold", "1", "0", t0, t1, str(log),
                           "", str(clock)], capture_output=True, text=True, check=True).stdout
    phases = json.loads(line)["phases"]
    assert 0.3 <= phases["tests"] < float(t1) - float(t0), phases
    assert phases["tuners' own"] == "1.75 (2)", "the tuners' own seconds are summed from the log"
    assert all(phases[name] >= 0 for name in ("start, imports", "collection", "finish", "exit")), phases
    assert phases["before Python"] > -0.05, "the process's start is read in clock ticks (10 ms)"
    runs = tmp_path / "runs.jsonl"
    runs.write_text(line)
    table = subprocess.run([*report, "--table", str(runs)], capture_output=True, text=True, check=True).stdout
    assert "| run | wall s | before Python |" in table and "| plain_x_cold_r1 |" in table, table


E2E_REPORT = [sys.executable, str(ROOT / "tests" / "gpu" / "e2e_report.py")]


def e2e_triton_runs(tmp_path, variants: dict) -> list[str]:
    """bench_e2e.sh's run lines for a triton cold run of each variant, from its tests/gpu result."""
    (tmp_path / "run.log").write_text("")
    lines = []
    for variant, result in variants.items():
        path = tmp_path / f"{variant}.json"
        path.write_text(json.dumps(result))
        lines.append(subprocess.run([*E2E_REPORT, "--run", f"{variant}_triton_cold_r1", "triton", variant, "cold",
                                     "1", "0", "0", "10", str(tmp_path / "run.log"), str(path)],
                                    capture_output=True, text=True, check=True).stdout)
    return lines


def e2e_table(tmp_path, lines: list[str]) -> str:
    (tmp_path / "runs.jsonl").write_text("".join(lines))
    return subprocess.run([*E2E_REPORT, "--table", str(tmp_path / "runs.jsonl")], capture_output=True, text=True,
                          check=True).stdout


def test_the_e2e_report_compares_the_triton_cases_picks_by_the_gpus_time_alone_on_every_shape(tmp_path):
    """bench_e2e.sh's triton case: its shapes are all below 0.25 ms, where a launch's host time blurs
    the launch-inclusive latency, so its picks are also compared by tests/gpu's CUDA-graph timing."""
    lines = e2e_triton_runs(tmp_path, {"plain": SERIAL, "ours": WARMUP})
    assert json.loads(lines[1])["gpu_ms"] == {"a": 0.022, "b": 0.100}
    table = e2e_table(tmp_path, lines)
    assert f"- the GPU's time alone, every shape: geomean {1.1 ** 0.5:.3f}, worst 1.100 (a)" in table, table
    assert "| triton | cold | 1 | ours | 10.0 | 10.0 | 1.00x | 1.000 (1 shapes) | 1.000 |" in table, table


def test_the_e2e_report_compares_racings_picks_with_every_config_timed_in_full(tmp_path):
    """Variant full (`--no-race`) beside ours (racing, the default): ours' picks against full's."""
    table = e2e_table(tmp_path, e2e_triton_runs(tmp_path, {"plain": SERIAL, "full": SERIAL, "ours": WARMUP}))
    section = table.split("\ntriton cold (repetition 1), ours against full:\n", 1)
    assert len(section) == 2, table
    assert section[1].split("\n\n", 1)[0].rstrip("\n").endswith(
        f"- the GPU's time alone, every shape: geomean {1.1 ** 0.5:.3f}, worst 1.100 (a)"), table
    assert "triton cold (repetition 1), full against plain:" in table, table


def flaggems_log(path, latencies: dict[str, float]) -> str:
    """A log as FlagGems' benchmark prints its table: the gems latency is a SUCCESS row's third word."""
    rows = "".join(f"SUCCESS  0.1000  {ms:.4f}  1.0  1.0  [{shape}]\n" for shape, ms in latencies.items())
    path.write_text(f"Operator: mm  Performance Test (dtype=torch.float16, mode=kernel, level=core)\n{rows}")
    return str(path)


def test_the_e2e_report_sets_small_shapes_latency_beside_plains_own_spread_over_the_re_runs(tmp_path):
    """Issue 42: under 0.25 ms a launch's host time is in the latency, so each variant's median over
    the re-runs (rerun1, rerun2, ... pooled) is judged against plain's own min-max over them."""
    plain = [{"1, 2": 0.040, "3, 4": 0.110, "big": 0.500}, {"1, 2": 0.044, "3, 4": 0.112, "big": 0.510},
             {"1, 2": 0.041, "3, 4": 0.111, "big": 0.505}]
    ours = [{"1, 2": 0.042, "3, 4": 0.130, "big": 0.500}] * 3
    lines = []
    for i, (mine, base) in enumerate(zip(ours, plain), 1):
        for variant, latencies in (("plain", base), ("ours", mine)):
            log = flaggems_log(tmp_path / f"{variant}{i}.log", latencies)
            lines.append(subprocess.run([*E2E_REPORT, "--run", f"{variant}_mm_rerun{i}_r1", "mm", variant, f"rerun{i}",
                                         "1", "0", "0", "10", log], capture_output=True, text=True, check=True).stdout)
    table = e2e_table(tmp_path, lines)
    assert "| mm | rerun | ours | torch.float16 [1, 2] | 0.0410 (0.0400-0.0440), 3 | 0.0420, 3 | yes |" in table, table
    assert "| mm | rerun | ours | torch.float16 [3, 4] | 0.1110 (0.1100-0.1120), 3 | 0.1300, 3 | no |" in table, table
    assert "[big]" not in table.split("shape under 0.25 ms", 1)[1].split("\n\n", 1)[0], "a shape over 0.25 ms"
    assert "mm rerun, ours: 1 of 2 shapes under 0.25 ms within plain's spread" in table, table


@pytest.mark.parametrize(("modes", "said"), [
    ("cold,rerun,rerun", "--modes names 'rerun' twice, and each run is named by its mode: number the re-runs"),
    ("cold,again", "unknown mode 'again' (cold, rerun, rerun1, rerun2, ..., mem)"),
])
def test_bench_e2e_refuses_modes_whose_runs_would_share_a_name(tmp_path, modes, said):
    """Two re-runs of one name once left one row in e2e.md for four pairs of runs: each run is
    named by its mode, so a repeated or unknown mode is refused before any run."""
    (tmp_path / "benchmark").mkdir()
    (tmp_path / "benchmark" / "test_blas_perf.py").write_text("")
    done = subprocess.run(["bash", str(ROOT / "tests" / "gpu" / "bench_e2e.sh"), "--flaggems", str(tmp_path),
                           "--modes", modes], env=clean_env(), capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr


@pytest.mark.parametrize(("files", "argv"), [
    (["test_mm.py", "test_blas_perf.py"], ["benchmark/test_mm.py::test_mm", "-m", "mm"]),
    (["test_blas_perf.py"], ["benchmark/test_blas_perf.py", "-m", "mm", "-k", "test_blas_benchmark"]),
])
def test_the_device_scripts_run_the_benchmark_of_the_flaggems_generation_the_checkout_holds(tmp_path, files, argv):
    """FlagGems 5.3 keeps one benchmark file per op, 5.0 one for every BLAS op: the device scripts
    run whichever the checkout has."""
    (tmp_path / "benchmark").mkdir()
    for name in files:
        (tmp_path / "benchmark" / name).write_text("")
    done = subprocess.run(["bash", "-c", '. tests/gpu/lib.sh && flaggems_test "$0" mm', str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == argv


def test_the_device_scripts_refuse_a_folder_that_is_no_flaggems_checkout(tmp_path):
    done = subprocess.run(["bash", str(ROOT / "tests" / "gpu" / "bench_e2e.sh"), "--flaggems", str(tmp_path)],
                          env=clean_env(), capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 2
    assert "holds neither benchmark/test_mm.py (FlagGems 5.3 and later) nor benchmark/test_blas_perf.py" in done.stderr


def test_bench_e2e_refuses_a_case_whose_test_file_the_checkout_lacks_before_any_run(tmp_path):
    """A 5.3-shaped checkout with test_mm.py but no test_addmm.py: the addmm case is refused up
    front, not run as a pytest of no test file (every benchmark FlagGems has)."""
    (tmp_path / "benchmark").mkdir()
    (tmp_path / "benchmark" / "test_mm.py").write_text("")
    done = subprocess.run(["bash", str(ROOT / "tests" / "gpu" / "bench_e2e.sh"), "--flaggems", str(tmp_path),
                           "--cases", "mm,addmm"], env=clean_env(OUT=str(tmp_path / "out")),
                          capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 2, done.stderr
    assert "holds neither benchmark/test_addmm.py" in done.stderr
    assert not (tmp_path / "out").exists(), "nothing ran"


def audit_line(key: str, **cost) -> str:
    """A WARMUP_HARNESS_RACE_AUDIT line (docs/CONTRACT.md, "Racing") of two configs."""
    configs = [{"index": 0, "short_ms": 0.5, "full_ms": 0.5, "retimed": True},
               {"index": 1, "short_ms": 2.0, "full_ms": 1.9, "retimed": False}]
    return json.dumps({"kernel": "m:mm_kernel", "key": key, "spread": 0.02, "limit_ms": 0.52, "short_s": 0.2,
                       "full_s": 0.1, "audit_s": 0.1, **cost, "configs": configs}) + "\n"


def test_race_audit_says_where_each_keys_short_pass_went_and_leaves_out_audits_without_a_breakdown(tmp_path):
    """tests/gpu/race_audit.py, the device-side table: per key, the seconds waiting for compiles, on the
    device and on the host, the launches and short timings, the cost a config and a short timing; then
    the totals. An audit from before the breakdown is read all the same, its keys left out of it."""
    audit = tmp_path / "audit_mm_ours_r1.jsonl"
    audit.write_text(audit_line("[1]", wait_s=0.05, timing_s=0.14, device_s=0.1, host_s=0.05, launches=40,
                                timings=10) + audit_line("[2]"))
    table = subprocess.run([sys.executable, str(ROOT / "tests" / "gpu" / "race_audit.py"), str(audit)],
                           capture_output=True, text=True, check=True).stdout
    row = "| mm_ours_r1 | mm_kernel | [1] | 2 | 0.200 | 100.0 | 0.050 | 0.100 | 0.050 | 0.040 | 40 | 10 | 15.0 |"
    assert row in table, table
    assert "1 key(s) without a breakdown (an audit from before it): left out" in table, table
    assert ("short pass: 0.2s over 2 configs (100.0 ms a config): 0.1s waiting for compiles, 0.1s on the device, "
            "0.1s host; 40 launches in 10 short timings (15.0 ms a short timing besides waiting)") in table, table
    assert "keys whose race pick is slower than the fastest full timing: 0 of 2" in table, table
