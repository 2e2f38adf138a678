"""precompile_draft on a CPU: real Triton (its JIT, its passes, LLVM, the bundled ptxas) compiling
for an H200's target, with only the device queries and the tensors faked (cpu_fakes.py).

Run: ``python -m pytest -q tests/gpu/test_precompile_draft.py`` with Triton installed (no GPU and
no torch needed). Not collected by the project's own suite (``norecursedirs`` holds ``gpu``).
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")

from triton import knobs  # noqa: E402
from triton.runtime.driver import driver  # noqa: E402

import precompile_draft as pc  # noqa: E402
from cpu_fakes import (  # noqa: E402
    SCALE_CONFIGS, TMA_CONFIGS, CpuDriver, Tensor, scale_even_kernel, scale_kernel, tma_args, tma_copy_kernel,
)

HERE = Path(__file__).resolve().parent


@pytest.fixture
def cpu(tmp_path, monkeypatch):
    """A fake device and a fresh, empty Triton cache for one test."""
    saved = driver._active
    driver.set_active(CpuDriver())
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    for name in (pc.ENV_MODE, pc.ENV_WORKERS, pc.ENV_LOCK_DIR, pc.ENV_SHARED_CACHE, "WARMUP_SHARDS"):
        monkeypatch.delenv(name, raising=False)
    yield tmp_path
    pc.uninstall()
    pc.shutdown_pools()
    driver._active = saved


class CacheHits:
    """Counts Triton compiles by outcome, through its compilation listener."""

    def __init__(self):
        self.hits = 0
        self.misses = 0

    def __call__(self, *, src, metadata, metadata_group, times, cache_hit):
        if cache_hit:
            self.hits += 1
        else:
            self.misses += 1


@pytest.fixture
def listener():
    counts = CacheHits()
    saved = knobs.compilation.listener
    knobs.compilation.listener = counts
    yield counts
    knobs.compilation.listener = saved


def forget_compiled(kernel):
    """Drops the JIT's in-memory kernels, as a new process would start."""
    pc.jit_function(kernel).device_caches.clear()


def load_each(kernel, args, configs, **kwargs):
    """The path the tuner's launch takes for each config, without launching."""
    for config in configs:
        kernel.fn.run(*args, grid=(1,), warmup=True, **kwargs, **config.all_kwargs())


def scale_args(n=1000):
    return (Tensor(), Tensor(), n)


@pytest.mark.parametrize("mode", ["serial", "threads", "processes"])
def test_precompile_fills_the_cache_so_the_tuners_launch_path_compiles_nothing(cpu, listener, mode):
    forget_compiled(scale_kernel)
    report = pc.precompile(scale_kernel, SCALE_CONFIGS, scale_args(), {"grid": (1,)}, mode=mode, workers=2)
    assert report.errors == []
    assert (report.compiled, report.hits, report.failed, report.fallback) == (len(SCALE_CONFIGS), 0, 0, 0)
    compiled_here = listener.misses
    load_each(scale_kernel, scale_args(), SCALE_CONFIGS)
    assert listener.misses == compiled_here, "the launch path compiled a config again"
    assert listener.hits == len(SCALE_CONFIGS)


def test_configs_already_loaded_in_the_process_are_not_compiled_again(cpu, listener):
    forget_compiled(scale_kernel)
    load_each(scale_kernel, scale_args(), SCALE_CONFIGS[:2])
    report = pc.precompile(scale_kernel, SCALE_CONFIGS, scale_args(), {"grid": (1,)}, mode="threads", workers=2)
    assert (report.in_memory, report.compiled) == (2, 2)


def test_a_new_specialization_is_compiled_even_when_the_configs_are_known(cpu):
    forget_compiled(scale_kernel)
    first = pc.precompile(scale_kernel, SCALE_CONFIGS, scale_args(1024), {"grid": (1,)}, mode="threads", workers=2)
    # 1000 is not a multiple of 16, 1024 is: Triton compiles them apart.
    second = pc.precompile(scale_kernel, SCALE_CONFIGS, scale_args(1000), {"grid": (1,)}, mode="threads", workers=2)
    again = pc.precompile(scale_kernel, SCALE_CONFIGS, scale_args(2048), {"grid": (1,)}, mode="threads", workers=2)
    assert first.compiled == second.compiled == len(SCALE_CONFIGS)
    assert again.compiled == 0 and again.hits == len(SCALE_CONFIGS)


def test_heuristics_under_the_tuner_are_applied_per_config(cpu, listener):
    forget_compiled(scale_even_kernel)
    args = (Tensor(), Tensor(), 1024)
    report = pc.precompile(scale_even_kernel, SCALE_CONFIGS, args, {"grid": (1,)}, mode="threads", workers=2)
    assert (report.compiled, report.failed) == (len(SCALE_CONFIGS), 0)
    before = listener.misses
    for config in SCALE_CONFIGS:
        scale_even_kernel.fn.run(*args, grid=(1,), warmup=True, **config.all_kwargs())
    assert listener.misses == before


def test_a_tma_pre_hook_sets_each_configs_block_shape_before_its_specialization_is_taken(cpu, listener):
    forget_compiled(tma_copy_kernel)
    args = tma_args()
    report = pc.precompile(tma_copy_kernel, TMA_CONFIGS, args, {"grid": (1,)}, mode="threads", workers=2)
    assert (report.compiled, report.failed) == (len(TMA_CONFIGS), 0), report.errors
    before = listener.misses
    for config in TMA_CONFIGS:  # as the tuner times a config: its pre-hook, then the launch
        config.pre_hook({"x_desc": args[0], "y_desc": args[1], **config.all_kwargs()})
        tma_copy_kernel.fn.run(*args, grid=(1,), warmup=True, **config.all_kwargs())
    assert listener.misses == before, "a descriptor's block shape was not part of what was precompiled"


def test_a_config_that_cannot_be_prepared_is_reported_and_the_rest_compile(cpu):
    forget_compiled(scale_kernel)
    bad = triton.Config({"BLOCK": 64, "NOT_A_PARAMETER": 1}, num_warps=1)
    report = pc.precompile(scale_kernel, [bad, *SCALE_CONFIGS[:1]], scale_args(), {"grid": (1,)}, mode="serial")
    assert report.compiled == 1 and report.failed == 1
    assert "NOT_A_PARAMETER" in report.errors[0]


def test_a_kernel_whose_lock_another_process_holds_is_deferred_then_found_in_the_cache(cpu):
    forget_compiled(scale_kernel)
    jobs, errors, _ = pc.capture_jobs(scale_kernel, SCALE_CONFIGS[:1], scale_args(), {"grid": (1,)})
    assert errors == [] and len(jobs) == 1
    fn, job = jobs[0]
    locks = Path(job.cache_dir) / ".warmup-locks"
    # Compile it once to learn its lock's name, then clear the cache but keep the lock file.
    assert pc.compile_job(fn, job, wait=True) == "compiled"
    (lock_path,) = locks.iterdir()
    for entry in Path(job.cache_dir).iterdir():
        if entry.name != ".warmup-locks":
            subprocess.run(["rm", "-rf", str(entry)], check=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import fcntl, sys, time
            f = open({str(lock_path)!r}, "a"); fcntl.flock(f, fcntl.LOCK_EX)
            print("held", flush=True); sys.stdin.readline()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        assert pc.compile_job(fn, job, wait=False) == "deferred"
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert pc.compile_job(fn, job, wait=True) == "compiled"
    assert pc.compile_job(fn, job, wait=True) == "hit"


def test_a_worker_finds_a_kernel_whose_module_was_imported_through_a_path_since_removed(cpu, monkeypatch):
    """FlagGems' case: its Hopper mm is imported as ``hopper.ops.mm`` through a sys.path entry it
    removes again; a worker process finds the same file as a package module instead."""
    root = cpu / "site"
    pkg = root / "vendorpkg" / "arch"
    pkg.mkdir(parents=True)
    (root / "vendorpkg" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "kern.py").write_text((HERE / "cpu_fakes.py").read_text())
    monkeypatch.syspath_prepend(str(root))
    sys.path.insert(0, str(root / "vendorpkg"))
    try:
        import importlib

        module = importlib.import_module("arch.kern")
    finally:
        sys.path.remove(str(root / "vendorpkg"))
    pc.shutdown_pools()  # the pool's workers start with today's sys.path
    report = pc.precompile(module.scale_kernel, module.SCALE_CONFIGS, scale_args(), {"grid": (1,)},
                           mode="processes", workers=2)
    assert (report.compiled, report.fallback, report.failed) == (len(SCALE_CONFIGS), 0, 0), report.errors
    sys.modules.pop("arch.kern", None)
    sys.modules.pop("arch", None)


SIBLING = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {here!r})
    from triton.runtime.driver import driver
    import cpu_fakes, precompile_draft as pc
    driver.set_active(cpu_fakes.CpuDriver())
    args = (cpu_fakes.Tensor(), cpu_fakes.Tensor(), 1000)
    r = pc.precompile(cpu_fakes.scale_kernel, cpu_fakes.SCALE_CONFIGS, args, {{"grid": (1,)}}, mode="threads", workers=2)
    print(json.dumps({{"compiled": r.compiled, "hits": r.hits, "deferred": r.deferred, "failed": r.failed}}))
""")


def test_two_children_sharing_a_cache_compile_each_kernel_once(cpu):
    env = dict(os.environ, TRITON_CACHE_DIR=str(cpu / "shared"))
    children = [
        subprocess.Popen([sys.executable, "-c", SIBLING.format(here=str(HERE))], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    reports = [json.loads(c.communicate(timeout=600)[0].strip().splitlines()[-1]) for c in children]
    assert all(c.returncode == 0 for c in children)
    assert sum(r["compiled"] for r in reports) == len(SCALE_CONFIGS)
    assert all(r["compiled"] + r["hits"] == len(SCALE_CONFIGS) and r["failed"] == 0 for r in reports)


HOLDER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {here!r})
    import precompile_draft as pc
    spans = []
    for _ in range(5):
        with pc.device_timing_lock():
            start = time.time(); time.sleep(0.05); spans.append((start, time.time()))
        time.sleep(0.01)
    print(spans)
""")


def test_children_on_one_device_never_time_at_the_same_moment(cpu):
    env = dict(os.environ, WARMUP_DEVICE_LOCK_DIR=str(cpu / "locks"), CUDA_VISIBLE_DEVICES="0")
    children = [
        subprocess.Popen([sys.executable, "-c", HOLDER.format(here=str(HERE))], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    spans = sorted(s for c in children for s in eval(c.communicate(timeout=120)[0]))
    assert len(spans) == 15
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert start >= end, "two timing spans overlapped on one device"


def test_the_timing_lock_is_named_for_the_device_each_child_sees(cpu, monkeypatch):
    lock = pc.DeviceTimingLock(str(cpu / "locks"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-8f2a/1")
    assert lock.path().name == "gpu-GPU-8f2a_1.lock"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert lock.path().name == "gpu-3.lock"
    assert isinstance(pc.device_timing_lock(), type(pc.contextlib.nullcontext()))


def test_installed_hooks_precompile_a_new_key_and_time_each_config_under_the_lock(cpu, monkeypatch, listener):
    monkeypatch.setenv(pc.ENV_MODE, "threads")
    monkeypatch.setenv(pc.ENV_WORKERS, "2")
    monkeypatch.setenv(pc.ENV_LOCK_DIR, str(cpu / "locks"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    (cpu / "locks").mkdir()
    lines = []
    assert pc.install(log=lines.append)
    assert not pc.install(log=lines.append), "a second install must not wrap twice"
    held = []

    def bench(kernel_call, quantiles):
        with open(cpu / "locks" / "gpu-0.lock", "a") as probe:
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held.append(False)
                fcntl.flock(probe, fcntl.LOCK_UN)
            except BlockingIOError:
                held.append(True)
        return [1.0, 1.0, 1.0]

    tuner = triton.autotune(configs=SCALE_CONFIGS, key=["n"], do_bench=bench)(pc.jit_function(scale_kernel))
    forget_compiled(tuner)
    # The sweep runs; the winner's real launch then needs a driver this machine does not have.
    with pytest.raises(AttributeError):
        tuner.run(*scale_args(), grid=(1,), warmup=False)
    assert held == [True] * len(SCALE_CONFIGS)
    reports = list(pc.iter_reports("\n".join(lines)))
    assert len(reports) == 1 and reports[0]["compiled"] == len(SCALE_CONFIGS), lines
    assert listener.misses == len(SCALE_CONFIGS), "the sweep compiled configs the precompile had compiled"


def test_the_report_line_parses_back(cpu):
    report = pc.Report(kernel="m.k", mode="processes", workers=15, configs=144, compiled=140, hits=4, deferred=3,
                       capture_s=0.5, compile_s=4.25)
    (parsed,) = pc.iter_reports("noise\n" + report.line() + "\n")
    assert parsed["compiled"] == 140 and parsed["deferred"] == 3 and parsed["workers"] == 15
    assert parsed["compile_s"] == 4.25


def test_bad_settings_are_named(cpu, monkeypatch):
    monkeypatch.setenv(pc.ENV_MODE, "fast")
    with pytest.raises(ValueError, match="WARMUP_PRECOMPILE='fast'"):
        pc.mode_from_env()
    monkeypatch.setenv(pc.ENV_WORKERS, "0")
    with pytest.raises(ValueError, match="WARMUP_PRECOMPILE_WORKERS"):
        pc.workers_from_env()
    monkeypatch.setenv(pc.ENV_WORKERS, "")
    monkeypatch.setenv("WARMUP_SHARDS", "1000000")
    assert pc.workers_from_env() == 1


def test_the_benchmarks_matmul_compiles_for_hopper_in_two_specializations(cpu, monkeypatch):
    """The GPU proof's own kernels compile for sm_90, and shapes with M a multiple of 16 and not
    give two specializations (the compile work the proof is about)."""
    import gpu_bench_kernels as kernels

    one = kernels.matmul_configs()[:1]
    specs = []
    for m in (1024, 1000):
        a, b, c = Tensor(), Tensor(), Tensor()
        args = (a, b, c, m, 512, 256, 256, 1, 512, 1, 512, 1)
        jobs, errors, _ = pc.capture_jobs(kernels.matmul_kernel, one, args, {"grid": (1,)})
        assert errors == [] and len(jobs) == 1
        specs.append(json.loads(jobs[0][1].specialization)["attrs_vals"])
        assert pc.compile_job(*jobs[0], wait=True) == "compiled"
    assert specs[0] != specs[1]
    softmax = kernels.softmax_configs()[:1]
    report = pc.precompile(kernels.softmax_kernel, softmax, (Tensor(), Tensor(), 64, 1000, 1000, 1000),
                           {"grid": (64,)}, mode="serial")
    assert report.compiled == 1, report.errors


def test_use_shared_cache_points_triton_at_the_shared_folder(cpu, monkeypatch):
    monkeypatch.setenv(pc.ENV_SHARED_CACHE, str(cpu / "user-cache"))
    assert pc.use_shared_cache() == str(cpu / "user-cache")
    assert knobs.cache.dir == str(cpu / "user-cache")
