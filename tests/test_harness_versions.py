"""The Triton versions the harness claims (harness/warmup_harness/versions.py), and what differs
between them, on whichever Triton these tests run on: `make test-triton` runs them on each
version of the range, the version always taken from the Triton imported here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import triton
from triton.runtime.autotuner import Autotuner

from support import HANG, ROOT
from test_harness import SHAPES, bench, bench_command, bench_env, shape_file
from test_harness_hooks import Launcher, body, make_tuner

sys.path.insert(0, str(ROOT / "harness"))
from warmup_harness.autotune import policies  # noqa: E402
from warmup_harness import triton_private  # noqa: E402
from warmup_harness.autotune import tuners  # noqa: E402
from warmup_harness import versions  # noqa: E402
from warmup_harness.autotune.configs import config_record  # noqa: E402

HERE = versions.minor(triton.__version__)
KERNEL = "test_harness_hooks:body"  # kernel_id of make_tuner's tuners


@pytest.fixture
def hooks():
    """Installs a policy for one test, and takes the hooks off after it whatever happens."""

    def install(policy):
        tuners.uninstall()
        tuners.install(policy)
        return policy

    yield install
    tuners.uninstall()


# --- the range ----------------------------------------------------------------------------------

@pytest.mark.parametrize("version", ["3.4.0", "3.5.1", "3.6.0", "3.7.0+git4a2b", "3.8.0rc1", "3.9.0"])
def test_a_tested_version_gets_no_warning(version):
    assert versions.warning(version) is None


@pytest.mark.parametrize("version", ["3.2.0", "3.3.1", "3.10.0", "4.0.0", "2.3.1", "nightly"])
def test_a_version_outside_the_range_gets_a_warning_naming_it_and_the_range(version):
    line = versions.warning(version)
    assert line is not None and line.startswith("WARNING"), line
    assert f"Triton {version} is outside" in line and "(3.4 to 3.9)" in line, line


def test_make_test_triton_runs_the_latest_patch_of_every_minor_of_the_range():
    makefile = (ROOT / "Makefile").read_text()
    tritons = re.search(r"^TRITONS\s*\?=(.*)$", makefile, re.M).group(1).split()
    (major, first), (_, last) = versions.TESTED
    assert [versions.minor(v) for v in tritons] == [(major, m) for m in range(first, last + 1)]
    assert f"tested on Triton {versions.tested_range()}" in (ROOT / "README.md").read_text()


def test_the_plugin_warns_at_start_on_a_triton_outside_the_range(tmp_path):
    shapes = shape_file(tmp_path, SHAPES[:1])
    here = bench(tmp_path, shapes, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "here"))
    assert here.returncode == 0, here.output
    assert not any("is outside the versions" in ln for ln in here.harness_lines()), here.stderr
    # The same run, as if on Triton 3.3.1: a sitecustomize sets the version before pytest starts.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import triton\ntriton.__version__ = '3.3.1'\n")
    old = bench(tmp_path, shapes, PYTHONPATH=f"{site}:{ROOT / 'harness'}",
                FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "old"))
    assert old.returncode == 0, old.output
    lines = old.harness_lines()
    warned = [i for i, ln in enumerate(lines) if "WARNING Triton 3.3.1 is outside" in ln]
    assert warned and "(3.4 to 3.9)" in lines[warned[0]], old.stderr
    closing = [i for i, ln in enumerate(lines) if "op mm: recorded" in ln]
    assert closing and warned[0] < closing[0], old.stderr


# --- where versions differ ----------------------------------------------------------------------

def counting_tuner(timed: list, **kw) -> Autotuner:
    tuner = make_tuner(**kw)
    tuner._do_bench = lambda kernel_call, quantiles: (timed.append(1), [1.0] * len(quantiles))[1]
    return tuner


def test_a_key_whose_pruning_leaves_one_config_is_recorded_and_replayed(hooks):
    # Triton 3.8 and later decide such a key without timing the one config (no `_bench`); the
    # decision still goes through the tuner's store, so it is recorded and replayed as any other.
    one = {"early_config_prune": lambda configs, nargs, **kw: configs[1:2]}
    decided, timed = [], []
    hooks(policies.Recorder(lambda kernel, key, config, seconds, fingerprint: decided.append((kernel, key, config))))
    tuner = counting_tuner(timed, prune_configs_by=one)
    tuner.run(object(), 10)
    assert decided == [(KERNEL, "[10]", config_record(tuner.configs[1]))]
    assert tuner.best_config is tuner.configs[1]
    assert len(timed) == (0 if HERE >= (3, 8) else 1), (triton.__version__, timed)

    replayer = hooks(policies.Replayer({KERNEL: {"[10]": decided[0][2]}}, "rec/mm.json", fail=True,
                                     first_lookup=lambda: None))
    timed.clear()
    fresh = counting_tuner(timed, prune_configs_by=one)
    fresh.run(object(), 10)
    assert fresh.best_config is fresh.configs[1] and fresh.fn.launches[-1]["BLOCK"] == 128
    assert timed == [] and replayer.replayed == {(KERNEL, "[10]")} and replayer.missed == {}


def test_a_key_name_that_is_not_an_argument(hooks):
    # Triton 3.9 and later refuse it when the kernel is decorated; earlier ones drop it from the
    # key, and the harness records and replays the key the tuner used.
    configs = [triton.Config({"BLOCK": b}, num_warps=4) for b in (64, 128)]
    def make():
        return Autotuner(Launcher(body), ["x", "n"], configs, ["n", "typo"], None, None,
                         do_bench=lambda kernel_call, quantiles: [1.0] * len(quantiles))
    if HERE >= (3, 9):
        with pytest.raises(ValueError, match="typo"):
            make()
        return
    decided = []
    hooks(policies.Recorder(lambda kernel, key, config, seconds, fingerprint: decided.append((kernel, key, config))))
    make().run(object(), 10)
    assert [(k, key) for k, key, _ in decided] == [(KERNEL, "[10]")]
    replayer = hooks(policies.Replayer({KERNEL: {"[10]": config_record(configs[1])}}, "rec/mm.json",
                                       fail=True, first_lookup=lambda: None))
    tuner = make()
    tuner.run(object(), 10)
    assert tuner.best_config is configs[1] and replayer.replayed == {(KERNEL, "[10]")}


def test_the_disk_cache_flag_is_off_while_the_hooks_are_in_on_every_version(hooks):
    # 3.4 added `cache_results` (Triton's on-disk autotune cache); on every version of the range a
    # tuner that asks for it sweeps for real while the hooks are in.
    hooks(tuners.Policy())
    timed = []
    tuner = counting_tuner(timed, cache_results=True)
    assert tuner.cache_results is False
    tuner.run(object(), 10)
    assert len(timed) == len(tuner.configs)


def test_a_driver_the_benchmark_set_is_seen_without_creating_the_default():
    # 3.4 keeps it in `driver.active`, 3.5 and later in `driver._active`.
    from triton.runtime.driver import DriverConfig

    config = DriverConfig()
    assert not triton_private.driver_exists(config)
    config.set_active(stub := object())
    assert triton_private.driver_exists(config) and config.active is stub
    assert vars(config).get("_default") is None  # no default driver was made: it starts the device


def test_a_benchmark_on_a_stub_device_starts_no_compile_worker(tmp_path):
    # The fixture sets a CPU stand-in driver Triton cannot compile for: the harness must see it on
    # every version and start no worker (one left by a crashed benchmark would outlive it).
    marker = f"WARMUP_TEST_MARK={tmp_path}"
    env = bench_env(tmp_path, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"),
                    FIXTURE_CRASH_AT="256x512x128", WARMUP_TEST_MARK=str(tmp_path))
    with open(tmp_path / "out.txt", "w") as out:  # a file, not a pipe a survivor would hold open
        done = subprocess.run(bench_command(shape_file(tmp_path, SHAPES)), env=env, cwd=tmp_path,
                              stdout=out, stderr=subprocess.STDOUT, timeout=HANG)
    assert done.returncode == 3, (tmp_path / "out.txt").read_text()
    left = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "environ").read_bytes().split(b"\0"):
                left.append(int(entry.name))
        except OSError:
            continue
    for pid in left:  # never leave them behind, even when the test fails
        os.kill(pid, 9)
    assert not left, f"processes outlived the crashed benchmark: {left}"
