"""warmup_harness.precompile on a machine without a GPU: real Triton (its JIT, its passes, LLVM, the
bundled ptxas) compiling for an H200's target, only the device queries and tensors faked
(tests/compile_fixture/cpu_fakes.py). In this process: what a key's precompile compiles, finds
and leaves to Triton. Across processes (tests/compile_fixture driven by real pytest under the
plugin): one cache shared by two children compiles each config once, a second run compiles
nothing, and children on one device never time two configs at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import gc
import importlib
import importlib.util
import json
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import warnings
from pathlib import Path
from typing import Callable

import pytest
import triton
from triton import knobs
from triton.runtime.driver import driver

from support import HANG, ROOT, clean_env

FIXTURE = ROOT / "tests" / "compile_fixture"
sys.path.insert(0, str(ROOT / "harness"))
sys.path.insert(0, str(FIXTURE))
import cpu_fakes  # noqa: E402
from cpu_fakes import SCALE_CONFIGS, TMA_CONFIGS, Tensor, scale_even_kernel, scale_kernel, tma_args  # noqa: E402
from report_lines import parse_reports  # noqa: E402
from warmup_harness import early_key  # noqa: E402
from warmup_harness import triton_private as tp  # noqa: E402
from warmup_harness.precompile import cache_entries  # noqa: E402
from warmup_harness.precompile import capture  # noqa: E402
from warmup_harness.precompile import pool as compile_pool  # noqa: E402
from warmup_harness.precompile import worker as compile_worker  # noqa: E402
from warmup_harness.precompile import device_lock  # noqa: E402
from warmup_harness.precompile import settings as cs  # noqa: E402
from warmup_harness.precompile import precompiler as pc  # noqa: E402
from warmup_harness.precompile.cache_entries import Outcome  # noqa: E402
from warmup_harness.autotune import tuners  # noqa: E402
from warmup_harness import env as harness_env  # noqa: E402
from warmup_harness.autotune.race_settings import race_settings  # noqa: E402
from warmup_harness.env import ProtocolError  # noqa: E402


@pytest.fixture
def cpu(tmp_path, monkeypatch):
    """A fake H200 and a fresh, empty Triton cache for one test."""
    saved = dict(vars(driver))  # whichever driver was set or made, in any Triton's fields
    driver.set_active(cpu_fakes.CpuDriver())
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    yield tmp_path
    tuners.uninstall()
    vars(driver).clear()
    vars(driver).update(saved)


@pytest.fixture(scope="module")
def processes():
    """One pool of two worker processes for the tests here that need one (each start costs their
    imports)."""
    pool = pc.CompilePool("processes", 2)
    yield pool
    pool.close()


class Compiles:
    """Triton's compiles in this process, through its compilation listener: (cache misses, hits)."""

    def __init__(self):
        self.misses = 0
        self.hits = 0

    def __call__(self, *, src, metadata, metadata_group, times, cache_hit):
        if cache_hit:
            self.hits += 1
        else:
            self.misses += 1


@pytest.fixture
def compiles():
    counts = Compiles()
    saved, knobs.compilation.listener = knobs.compilation.listener, counts
    yield counts
    knobs.compilation.listener = saved


def forget_compiled(kernel):
    """Drops the JIT's kernels in memory, as a new process starts."""
    pc.jit_function(kernel).device_caches.clear()


def launch_each(kernel, args, configs):
    """The path each config's timed launch takes, without launching."""
    for config in configs:
        kernel.fn.run(*args, grid=(1,), warmup=True, **config.all_kwargs())


def scale_launch(n=1000) -> tuple[tuple, dict]:
    args = (Tensor(), Tensor(), n)
    return args, {"x_ptr": args[0], "y_ptr": args[1], "n": n, "grid": (1,)}


def settings(mode: str, workers: int, lock_dir: Path, start: str = "fork", overlap: bool = False) -> cs.CompileSettings:
    """A session's settings; a key's compiles are waited for whole before its timings unless `overlap`
    (the default of a session, tested on its own: most tests here look at one key's compiles)."""
    return cs.CompileSettings(mode, workers, (), lock_dir, False, start=start, overlap=overlap)


def pool_pays_from(monkeypatch, seconds: float) -> None:
    """Both pools' thresholds (forked and spawned) at `seconds` of work in this process."""
    monkeypatch.setattr(compile_pool, "POOL_START_S", seconds)
    monkeypatch.setattr(compile_pool, "FORK_POOL_START_S", seconds)


def tune_scale_once(tuner, compiler, racer=None) -> None:
    """`tuner` tunes scale_launch()'s key under `compiler` (and `racer`); the winner's real launch
    then needs a GPU driver and raises AttributeError; the compiler is closed after."""
    try:
        tuners.install(tuners.Recorder(lambda *a: None), compiler, racer=racer)
        with pytest.raises(AttributeError):
            tuner.run(*scale_launch()[0], grid=(1,), warmup=False)
    finally:
        compiler.close()


def hold_compile(monkeypatch, config, until: Path, then: Callable[[bool], object] | None = None) -> None:
    """The compile of `config` (in a forked worker, which has this stub) waits until `until` exists,
    at most 60 s; `then` is told whether it came."""
    label, compile_here = capture.config_label(config), compile_worker.compile_job

    def compile_held(fn, job, wait):
        if job.label == label:
            deadline = time.monotonic() + 60
            while not until.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            if then is not None:
                then(until.exists())
        return compile_here(fn, job, wait)

    monkeypatch.setattr(compile_worker, "compile_job", compile_held)


# --- one key, in this process ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_precompiled_configs_are_cache_hits_on_the_tuners_launch_path(cpu, compiles, processes, mode):
    forget_compiled(scale_kernel)
    pool = processes if mode == "processes" else pc.CompilePool("threads", 2)
    args, launch = scale_launch()
    report = pc.precompile(scale_kernel, SCALE_CONFIGS, launch, pool)
    assert report.errors == []
    assert (report.compiled, report.found, report.left) == (len(SCALE_CONFIGS), 0, 0)
    compiled_here = compiles.misses
    launch_each(scale_kernel, args, SCALE_CONFIGS)
    assert compiles.misses == compiled_here, "the launch path compiled a config again"
    assert compiles.hits == len(SCALE_CONFIGS)


def test_configs_this_process_holds_already_are_not_compiled_again(cpu):
    forget_compiled(scale_kernel)
    args, launch = scale_launch()
    launch_each(scale_kernel, args, SCALE_CONFIGS[:2])
    report = pc.precompile(scale_kernel, SCALE_CONFIGS, launch, pc.CompilePool("threads", 2))
    assert (report.loaded, report.compiled) == (2, len(SCALE_CONFIGS) - 2)


def test_a_new_specialization_is_compiled_even_when_its_configs_were(cpu):
    forget_compiled(scale_kernel)
    pool = pc.CompilePool("threads", 2)
    # 1024 and 2048 are multiples of 16, 1000 is not: Triton compiles those apart.
    first, second, third = (pc.precompile(scale_kernel, SCALE_CONFIGS, scale_launch(n)[1], pool)
                            for n in (1024, 1000, 2048))
    assert first.compiled == second.compiled == len(SCALE_CONFIGS)
    assert third.compiled == 0 and third.found == len(SCALE_CONFIGS)


def test_heuristics_under_the_tuner_are_applied_per_config(cpu, compiles):
    forget_compiled(scale_even_kernel)
    args, launch = scale_launch(1024)
    report = pc.precompile(scale_even_kernel, SCALE_CONFIGS, launch, pc.CompilePool("threads", 2))
    assert (report.compiled, report.left) == (len(SCALE_CONFIGS), 0)
    before = compiles.misses
    launch_each(scale_even_kernel, args, SCALE_CONFIGS)
    assert compiles.misses == before


def test_a_tma_pre_hook_sets_each_configs_block_shape_before_its_specialization_is_taken(cpu, compiles):
    forget_compiled(cpu_fakes.tma_copy_kernel)
    args = tma_args()
    launch = {"x_desc": args[0], "y_desc": args[1], "n": args[2], "grid": (1,)}
    report = pc.precompile(cpu_fakes.tma_copy_kernel, TMA_CONFIGS, launch, pc.CompilePool("threads", 2))
    assert (report.compiled, report.left) == (len(TMA_CONFIGS), 0), report.errors
    before = compiles.misses
    for config in TMA_CONFIGS:  # as the tuner times a config: its pre-hook, then the launch
        config.pre_hook({**launch, **config.all_kwargs()})
        cpu_fakes.tma_copy_kernel.fn.run(*args, grid=(1,), warmup=True, **config.all_kwargs())
    assert compiles.misses == before, "a descriptor's block shape was not part of what was precompiled"


def test_a_config_that_cannot_be_prepared_is_left_to_triton_and_the_rest_compile(cpu):
    forget_compiled(scale_kernel)
    bad = triton.Config({"BLOCK": 64, "NOT_A_PARAMETER": 1}, num_warps=1)
    report = pc.precompile(scale_kernel, [bad, SCALE_CONFIGS[0]], scale_launch()[1], pc.CompilePool("threads", 1))
    assert (report.compiled, report.left) == (1, 1)
    assert "NOT_A_PARAMETER" in report.errors[0]


@contextlib.contextmanager
def held_elsewhere(folder: Path):
    """`flock` on a cache entry's folder, held by another process (a sibling compiling it)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import fcntl, os, sys
            fd = os.open({str(folder)!r}, os.O_RDONLY); fcntl.flock(fd, fcntl.LOCK_EX)
            print("held", flush=True); sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.stdin.close()
        holder.wait(timeout=HANG)
        holder.stdout.close()


def emptied_entry(job) -> Path:
    """Compiles the job to learn its cache entry's folder, then empties it: the job is new again."""
    (fn, job), = [job]
    assert cache_entries.compile_job(fn, job, wait=True) == Outcome.COMPILED
    (entry,) = [p.parent for p in Path(job.cache_dir).glob("*/scale_kernel.json")]
    for file in entry.iterdir():
        file.unlink()
    return entry


def test_a_kernel_another_process_is_compiling_is_waited_for_then_found_compiled(cpu):
    forget_compiled(scale_kernel)
    taken = capture.capture(scale_kernel, SCALE_CONFIGS[:1], scale_launch()[1])
    (fn, job), = taken.jobs
    with held_elsewhere(emptied_entry((fn, job))):
        assert cache_entries.compile_job(fn, job, wait=False) == Outcome.BUSY
    assert cache_entries.compile_job(fn, job, wait=True) == Outcome.COMPILED
    assert cache_entries.compile_job(fn, job, wait=True) == Outcome.FOUND


def all_ended(workers: list) -> bool:
    """Whether every worker process ended (its sentinel is ready: the pool's own threads may have
    reaped it, which leaves its exitcode unknown here)."""
    deadline = time.monotonic() + HANG
    pending = [w.sentinel for w in workers]
    while pending and time.monotonic() < deadline:
        ready = multiprocessing.connection.wait(pending, timeout=deadline - time.monotonic())
        pending = [p for p in pending if p not in ready]
    return not pending


def new_children(before: set[int]) -> list:
    return [child for child in multiprocessing.active_children() if child.pid not in before]


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_workers_that_give_no_result_in_the_bound_are_stopped_and_the_key_left_to_triton(cpu, start_method):
    """Workers waiting for an entry a sibling never releases: after the bound they are killed."""
    forget_compiled(scale_kernel)
    entry = emptied_entry(capture.capture(scale_kernel, SCALE_CONFIGS[:1], scale_launch()[1]).jobs[0])
    others = {child.pid for child in multiprocessing.active_children()}  # another pool's workers
    pool = pc.CompilePool("processes", 2, timeout_s=1.5, start_method=start_method)
    assert pool.start_method == start_method
    pool.start()
    workers = new_children(others)
    try:
        with held_elsewhere(entry):
            report = pc.precompile(scale_kernel, SCALE_CONFIGS[:2], scale_launch()[1], pool)
    finally:
        pool.close()
    assert pool.stuck and (report.compiled, report.left) == (1, 1), report.errors
    assert report.errors[0].endswith(f"no compile worker answered in 1.5s ({cs.TIMEOUT})"), report.errors
    assert len(workers) == 2 and all_ended(workers), "a stuck worker lives on"


def test_without_a_pool_an_entry_a_sibling_holds_is_waited_for_within_the_bound(cpu):
    forget_compiled(scale_kernel)
    entry = emptied_entry(capture.capture(scale_kernel, SCALE_CONFIGS[:1], scale_launch()[1]).jobs[0])
    pool = pc.CompilePool("processes", 2, timeout_s=1.5)
    with held_elsewhere(entry):
        report = pc.precompile(scale_kernel, SCALE_CONFIGS[:1], scale_launch()[1], pool)
    assert report.errors == [f"{capture.config_label(SCALE_CONFIGS[0])}: no compile worker answered in 1.5s "
                             f"({cs.TIMEOUT})"]
    assert pool._executor is None, "a pool was started for one config"


SLEEPY = "import time\ntime.sleep(3600)\n"  # a preload module whose import never ends


# --- the pool only where it pays (issue 16) -----------------------------------------------------


def test_a_key_found_compiled_never_starts_or_waits_for_the_pool(cpu):
    forget_compiled(scale_kernel)
    args, launch = scale_launch()
    pc.precompile(scale_kernel, SCALE_CONFIGS, launch, pc.CompilePool("threads", 2))  # a run before this one
    forget_compiled(scale_kernel)
    before = {child.pid for child in multiprocessing.active_children()}
    pool = pc.CompilePool("processes", 2)
    report = pc.precompile(scale_kernel, SCALE_CONFIGS, launch, pool)
    assert (report.found, report.compiled, report.pool_wait_s) == (len(SCALE_CONFIGS), 0, 0.0)
    assert pool._executor is None and new_children(before) == [], "a worker process was started"


FEW = SCALE_CONFIGS[:compile_pool.FORK_AT_ONCE - 1]  # too few new configs to start a forked pool at once


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_a_key_with_less_new_work_than_a_pools_start_compiles_in_this_process(cpu, compiles, monkeypatch,
                                                                              start_method):
    pool_pays_from(monkeypatch, 1e9)  # this machine's speed decides nothing here
    configs = FEW if start_method == "fork" else SCALE_CONFIGS
    forget_compiled(scale_kernel)
    before = {child.pid for child in multiprocessing.active_children()}
    pool = pc.CompilePool("processes", 2, start_method=start_method)
    report = pc.precompile(scale_kernel, configs, scale_launch()[1], pool)
    assert (report.compiled, report.left) == (len(configs), 0), report.errors
    assert pool._executor is None and new_children(before) == [], "a worker process was started"
    assert compiles.misses == len(configs), "not compiled in this process"


@pytest.mark.parametrize("overlap", [False, True])
def test_a_forked_pool_starts_at_once_for_a_key_of_enough_new_configs(cpu, compiles, monkeypatch, overlap):
    """No config is compiled here first to learn whether the pool pays (that compile would hold the
    others back by a whole compile): the pool takes the key from its first config, whatever one
    compile here would have taken."""
    pool_pays_from(monkeypatch, 1e9)  # the probe would keep every config here
    monkeypatch.setattr(pc.CompilePool, "_started", lambda self: True)  # nor does the caller help them start
    configs = SCALE_CONFIGS[:compile_pool.FORK_AT_ONCE]
    forget_compiled(scale_kernel)
    pool = pc.CompilePool("processes", 2)
    try:
        result = pc.precompile(scale_kernel, configs, scale_launch()[1], pool, overlap=overlap)
        report = result.finish() if overlap else result
        assert pool._executor is not None, "the pool was not started"
    finally:
        pool.close()
    assert (report.compiled, report.left) == (len(configs), 0), report.errors
    assert compiles.misses == 0, "a config was compiled here first"


def test_a_key_with_more_new_work_than_a_pools_start_starts_the_pool(cpu, monkeypatch):
    pool_pays_from(monkeypatch, 0.0)
    forget_compiled(scale_kernel)
    pool = pc.CompilePool("processes", 2)
    try:
        report = pc.precompile(scale_kernel, SCALE_CONFIGS, scale_launch()[1], pool)
        assert pool._executor is not None, "the pool was not started"
    finally:
        pool.close()
    assert (report.compiled, report.left) == (len(SCALE_CONFIGS), 0), report.errors


def test_a_pool_still_starting_is_not_waited_for_the_caller_compiles_the_key(cpu, monkeypatch):
    """Record mode starts a spawned pool early; workers still importing (here: forever) cost the
    key nothing, and the session's end does not wait for them."""
    (cpu / "sleepy.py").write_text(SLEEPY)
    monkeypatch.syspath_prepend(str(cpu))
    forget_compiled(scale_kernel)
    before = {child.pid for child in multiprocessing.active_children()}
    pool = pc.CompilePool("processes", 2, ("sleepy",), start_method="spawn")
    pool.start()
    workers = new_children(before)
    try:
        report = pc.precompile(scale_kernel, SCALE_CONFIGS, scale_launch()[1], pool)
    finally:
        pool.close()
    assert (report.compiled, report.left, report.pool_wait_s) == (len(SCALE_CONFIGS), 0, 0.0), report.errors
    assert not pool.stuck
    assert len(workers) == 2 and all_ended(workers), "a worker outlived the pool"


def test_a_pool_that_has_started_takes_the_keys_work(cpu, compiles):
    forget_compiled(scale_kernel)
    pool = pc.CompilePool("processes", 2)
    pool.start()
    try:
        assert pool.wait_started(120)
        report = pc.precompile(scale_kernel, SCALE_CONFIGS, scale_launch()[1], pool)
    finally:
        pool.close()
    assert (report.compiled, report.found, report.left) == (len(SCALE_CONFIGS), 0, 0), report.errors
    assert compiles.misses == 0, "the caller compiled beside workers that run"


# --- a pool that starts at once: forked workers (issue 24) -------------------------------------


def counted_package(root: Path, log: Path) -> None:
    """`heavylib` (a stand-in for torch and FlagGems) and `heavykern` (cpu_fakes' kernels over
    it): each notes `NAME PID` in `log` when it is imported."""
    note = f"import os\nwith open({str(log)!r}, 'a') as _log:\n    _log.write(f'{{__name__}} {{os.getpid()}}\\n')\n"
    (root / "heavylib").mkdir(parents=True)
    (root / "heavylib" / "__init__.py").write_text(note)
    (root / "heavykern.py").write_text((FIXTURE / "cpu_fakes.py").read_text() + "\n" + note + "import heavylib\n")


def test_a_forked_pool_imports_neither_torch_nor_the_kernels_library_again_in_its_workers(cpu, compiles,
                                                                                         monkeypatch):
    log = cpu / "imports.log"
    counted_package(cpu / "site", log)
    monkeypatch.syspath_prepend(str(cpu / "site"))
    try:
        heavykern = importlib.import_module("heavykern")
        pool = pc.CompilePool("processes", 2)
        assert pool.describe() == "processes (fork) x2"
        pool.start()
        try:
            assert pool.wait_started(HANG)
            report = pc.precompile(heavykern.scale_kernel, heavykern.SCALE_CONFIGS, scale_launch()[1], pool)
        finally:
            pool.close()
    finally:
        for name in ("heavykern", "heavylib"):
            sys.modules.pop(name, None)
    assert (report.compiled, report.left) == (len(heavykern.SCALE_CONFIGS), 0), report.errors
    assert compiles.misses == 0, "the workers did not compile the key"
    assert log.read_text().split("\n") == [f"heavykern {os.getpid()}", f"heavylib {os.getpid()}", ""], \
        "a worker imported the kernel's library again"


class ProbeDriver(cpu_fakes.CpuDriver):
    """cpu_fakes' driver, noting in a file the pid of every process that asks it anything."""

    def __init__(self, log: Path):
        self.log = log

    def _asked(self) -> None:
        with open(self.log, "a") as log:
            log.write(f"{os.getpid()}\n")

    def get_current_device(self):
        self._asked()
        return super().get_current_device()

    def get_current_stream(self, device=None):
        self._asked()
        return super().get_current_stream(device)

    def get_current_target(self):
        self._asked()
        return super().get_current_target()


def ask_the_device() -> tuple[int, str, str | None]:
    """Run in a worker: its pid, what Triton's driver answered, and the devices CUDA would see."""
    try:
        answer = f"device {driver.active.get_current_device()}"
    except RuntimeError as exc:
        answer = str(exc)
    return os.getpid(), answer, os.environ.get("CUDA_VISIBLE_DEVICES")


def test_forked_workers_compile_for_the_sessions_target_and_never_touch_the_driver(cpu, compiles, monkeypatch):
    log = cpu / "asked.log"
    driver.set_active(ProbeDriver(log))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    forget_compiled(scale_kernel)
    pool = pc.CompilePool("processes", 2)
    pool.start()
    try:
        assert pool.wait_started(HANG)
        report = pc.precompile(scale_kernel, SCALE_CONFIGS, scale_launch()[1], pool)
        pid, answer, visible = pool._get().submit(ask_the_device).result(timeout=HANG)
    finally:
        pool.close()
    assert (report.compiled, report.left, compiles.misses) == (len(SCALE_CONFIGS), 0, 0), report.errors
    assert set(log.read_text().split()) == {str(os.getpid())}, "a worker asked the driver"
    assert pid != os.getpid()
    assert answer == (f"compile worker {pid} asked Triton's driver for 'get_current_device': a compile worker "
                      f"never touches the device (its session resolved the target)"), answer
    assert visible == "", "a CUDA started in a worker would find the session's devices"


def test_a_worker_that_dies_leaves_its_configs_to_triton_with_a_line_and_the_next_key_gets_new_workers(
        cpu, monkeypatch):
    dying = cpu / "dying"
    dying.touch()
    compile_here = compile_worker.compile_job

    def compile_or_die(fn, job, wait):  # a forked worker has it; the session's own compiles do not
        if dying.exists():
            os.kill(os.getpid(), signal.SIGKILL)
        return compile_here(fn, job, wait)

    monkeypatch.setattr(compile_worker, "compile_job", compile_or_die)
    monkeypatch.setattr(pc.CompilePool, "_started", lambda self: True)  # the caller leaves every job to them
    monkeypatch.setattr(scale_kernel, "nargs", None, raising=False)  # as the tuner's run sets it
    pool_pays_from(monkeypatch, 0.0)
    forget_compiled(scale_kernel)
    lines: list[str] = []
    compiler = pc.Precompiler(settings("processes", 2, cpu / "locks"), lines.append)
    try:
        compiler.before_timing("k", scale_kernel, SCALE_CONFIGS, scale_launch(1000)[1])
        first = compiler.pool._processes
        dying.unlink()
        compiler.before_timing("k", scale_kernel, SCALE_CONFIGS, scale_launch(1024)[1])
        second = compiler.pool._processes
    finally:
        compiler.close()
    reports = parse_reports("\n".join(lines))
    configs = len(SCALE_CONFIGS)
    # The pool starts at once for the key (FORK_AT_ONCE): every config of the first key was the workers'.
    assert [(r["compiled"], r["left"]) for r in reports] == [(0, configs), (configs, 0)], lines
    assert any(line.startswith(f"precompile k: {configs} config(s) left to Triton's own compile, "
                               f"the first because ") and line.endswith(
                                   ": a compile worker died (killed by SIGKILL); the next key starts new workers")
               for line in lines), lines
    assert {p.pid for p in first}.isdisjoint(p.pid for p in second), "the second key reused a dead pool"


def test_a_forked_worker_keeps_no_lock_the_session_lets_go_of(cpu):
    """A by-key claim is held while its key is tuned, and let go by closing it: a worker forked
    meanwhile must not keep it held."""
    claim = cpu / "claim"
    fd = os.open(claim, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    pool = pc.CompilePool("processes", 2)
    pool.start()
    try:
        assert pool.wait_started(HANG)
        os.close(fd)
        assert not lock_held(claim), "a compile worker holds the lock the session let go of"
    finally:
        pool.close()


def test_a_forked_worker_ends_on_sigterm_without_running_the_sessions_handler(cpu):
    """The record writer folds the journal on SIGTERM (warmup-spawn's stop, sent to the group): a
    worker must not run that, only end."""
    ran = cpu / "ran"
    previous = signal.signal(signal.SIGTERM, lambda *_: ran.write_text(str(os.getpid())))
    pool = pc.CompilePool("processes", 2)
    try:
        pool.start()
        assert pool.wait_started(HANG)
        worker = pool._processes[0]
        os.kill(worker.pid, signal.SIGTERM)
        deadline = time.monotonic() + HANG
        while not ran.exists() and worker.exitcode is None and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        signal.signal(signal.SIGTERM, previous)
        pool.close()
    assert not ran.exists(), "a worker ran the session's SIGTERM handler"
    assert worker.exitcode == -signal.SIGTERM


def test_pythons_warning_about_forking_beside_threads_does_not_fail_a_run_under_w_error(cpu, monkeypatch):
    real_fork = os.fork

    def fork_as_python_3_12_does():  # it warns in the parent of a process that runs threads
        pid = real_fork()
        if pid:
            warnings.warn(f"This process (pid={os.getpid()}) is multi-threaded, use of fork() may lead to "
                          f"deadlocks in the child.", DeprecationWarning, stacklevel=2)
        return pid

    monkeypatch.setattr(os, "fork", fork_as_python_3_12_does)
    pool = pc.CompilePool("processes", 2)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            pool.start()
        assert pool.wait_started(HANG)
    finally:
        pool.close()


def test_a_forked_workers_garbage_collector_leaves_the_sessions_objects_alone(cpu):
    """The session's objects are frozen for the fork, so that a worker's collector does not copy
    the pages they are on; the session takes them back at once."""
    pool = pc.CompilePool("processes", 2)
    try:
        pool.start()
        frozen_there = pool._get().submit(gc.get_freeze_count).result(timeout=HANG)
    finally:
        pool.close()
    assert frozen_there > 1000, frozen_there
    assert gc.get_freeze_count() == 0


def test_where_forking_is_unsafe_workers_are_spawned_and_the_opening_line_says_why(cpu, compiles, monkeypatch):
    monkeypatch.setattr(compile_pool, "fork_unsafe", lambda: "forking is unsafe on testos")
    forget_compiled(scale_kernel)
    compiler = pc.Precompiler(settings("processes", 2, cpu / "locks"), lambda line: None)
    pool = compiler.pool
    try:
        assert compiler.describe().startswith("precompile: processes (spawn: forking is unsafe on testos) x2: ")
        assert pool.start_method == "spawn" and pool.start_s == compile_pool.POOL_START_S
        compiler.start_early()  # spawned workers import while pytest collects
        assert pool.wait_started(HANG)
        report = pc.precompile(scale_kernel, SCALE_CONFIGS, scale_launch()[1], pool)
    finally:
        compiler.close()
    assert (report.compiled, report.left, compiles.misses) == (len(SCALE_CONFIGS), 0, 0), report.errors


def test_a_record_session_forks_its_workers_at_the_first_key_not_before_collection(cpu):
    compiler = pc.Precompiler(settings("processes", 2, cpu / "locks"), lambda line: None)
    try:
        assert compiler.describe().startswith("precompile: processes (fork) x2: a new key's configs are compiled ")
        compiler.start_early()
        assert compiler.pool._executor is None, "workers forked before the benchmark's modules were imported"
        assert compiler.pool.start_s == compile_pool.FORK_POOL_START_S
    finally:
        compiler.close()


def make_package(root: Path) -> Path:
    """vendorpkg/arch/kern.py holding cpu_fakes' kernels; returns the package's folder."""
    pkg = root / "vendorpkg" / "arch"
    pkg.mkdir(parents=True)
    for init in (root / "vendorpkg" / "__init__.py", pkg / "__init__.py"):
        init.write_text("")
    (pkg / "kern.py").write_text((FIXTURE / "cpu_fakes.py").read_text())
    return root / "vendorpkg"


def test_a_worker_finds_a_kernel_whose_module_was_imported_through_a_path_since_removed(cpu, processes,
                                                                                        monkeypatch):
    """FlagGems' case: its Hopper mm is imported as `hopper.ops.mm` through a sys.path entry it
    removes again; a worker finds the same file as a module of the package instead."""
    vendor = make_package(cpu / "site")
    monkeypatch.syspath_prepend(str(cpu / "site"))
    sys.path.insert(0, str(vendor))
    try:
        module = importlib.import_module("arch.kern")
    finally:
        sys.path.remove(str(vendor))
        sys.modules.pop("arch.kern", None)
        sys.modules.pop("arch", None)
    report = pc.precompile(module.scale_kernel, module.SCALE_CONFIGS, scale_launch()[1], processes)
    assert (report.compiled, report.left) == (len(SCALE_CONFIGS), 0), report.errors


def test_a_key_the_workers_cannot_compile_is_compiled_by_triton_and_said(cpu, compiles, monkeypatch):
    """A kernel from a file no worker can import (loaded by path, outside sys.path): its configs
    go to Triton's own compile in the sweep, and a line says why. (The caller compiles none of
    them itself here, as when the workers are faster.)"""
    pool_pays_from(monkeypatch, 0.0)
    monkeypatch.setattr(pc.CompilePool, "_here", lambda self, job: Outcome.BUSY)
    loose = cpu / "loose" / "loose_kernels.py"  # in no folder on sys.path
    loose.parent.mkdir()
    loose.write_text((FIXTURE / "cpu_fakes.py").read_text())
    spec = importlib.util.spec_from_file_location("loose_kernels", loose)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines: list[str] = []
    compiler = pc.Precompiler(settings("processes", 2, cpu / "locks"), lines.append)
    tuner = triton.autotune(configs=SCALE_CONFIGS, key=["n"], do_bench=cpu_fakes.fake_bench)(
        pc.jit_function(module.scale_kernel))
    tune_scale_once(tuner, compiler)
    (report,) = parse_reports("\n".join(lines))
    assert (report["compiled"], report["left"]) == (0, len(SCALE_CONFIGS)), lines
    assert any("left to Triton's own compile, the first because" in ln and "loose_kernels" in ln
               for ln in lines), lines
    assert compiles.misses == len(SCALE_CONFIGS), "the sweep did not compile the configs itself"


def test_a_device_triton_cannot_compile_for_turns_precompile_off_with_one_line(cpu):
    from triton.backends.compiler import GPUTarget

    class Other(cpu_fakes.CpuDriver):
        def get_current_target(self):
            return GPUTarget("other", 0, 32)

    driver.set_active(Other())
    lines: list[str] = []
    compiler = pc.Precompiler(settings("threads", 2, cpu / "locks"), lines.append)
    assert pc.stub_device_set()
    for n in (1, 2):
        compiler.before_timing("k", scale_kernel, SCALE_CONFIGS, scale_launch(n)[1])
    compiler.close()
    assert len(lines) == 1 and lines[0].startswith("precompile off: Triton cannot compile"), lines


# --- Triton's own key, computed early ----------------------------------------------------------


@pytest.fixture
def no_early_key(monkeypatch):
    """This process as if no session had started the early key's thread yet."""
    monkeypatch.setattr(early_key, "_thread", None)


def test_tritons_own_key_is_computed_once_in_a_thread_of_its_own(no_early_key):
    calls: list[str] = []
    early_key.start(lambda: calls.append(threading.current_thread().name))
    early_key.start(lambda: calls.append("again"))
    early_key.wait()
    assert calls == ["warmup-harness-triton-key"]


def test_the_key_the_thread_computes_is_the_one_tritons_compile_uses(no_early_key):
    """Triton's memoized triton_key, which `triton.compile` calls (3.4) or calls through
    get_cache_key (3.5 and later): once the thread has run, a compile finds it computed."""
    key = tp.own_key()
    used = triton.compiler.compiler.compile.__globals__
    assert (used.get("triton_key") or used["get_cache_key"].__globals__["triton_key"]) is key
    key.cache_clear()
    early_key.start()
    early_key.wait()
    assert key.cache_info().currsize == 1


def test_a_compile_while_the_thread_runs_waits_for_its_key_instead_of_hashing_again(no_early_key, monkeypatch):
    """Triton's memo lets a second caller compute the key again beside the first: while the thread
    runs, the name Triton's compile calls waits for it, and Triton's own function is back after."""
    module, name = tp.key_home()
    hashed: list[str] = []
    release = threading.Event()

    @functools.lru_cache
    def slow_key():
        hashed.append(threading.current_thread().name)
        release.wait(HANG)
        return "the key"

    monkeypatch.setattr(module, name, slow_key)
    early_key.start()
    assert tp.own_key() is slow_key  # the harness's own questions get Triton's function
    threading.Timer(0.2, release.set).start()
    assert getattr(module, name)() == "the key"  # as get_cache_key (3.5+) or compile (3.4) calls it
    early_key.wait()
    assert hashed == ["warmup-harness-triton-key"]
    assert getattr(module, name) is slow_key


def test_a_key_that_fails_in_the_thread_is_left_to_tritons_own_compile(no_early_key, monkeypatch):
    unhandled: list[object] = []
    monkeypatch.setattr(threading, "excepthook", unhandled.append)

    def fails():
        raise OSError("libtriton.so: cannot read")

    early_key.start(fails)
    early_key.wait()
    assert unhandled == []


def test_a_forked_pool_waits_for_the_thread_before_it_forks(cpu, no_early_key):
    released = threading.Event()
    early_key.start(lambda: released.wait(HANG))
    threading.Timer(0.3, released.set).start()
    pool = pc.CompilePool("processes", 2)
    try:
        pool.start()
        assert released.is_set(), "the workers were forked while the thread still ran"
    finally:
        released.set()
        pool.close()


# --- timing ------------------------------------------------------------------------------------


def lock_held(path: Path) -> bool:
    """Whether another open file description holds `path`'s flock (the device timing lock)."""
    with open(path) as probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
    return False


def test_each_config_is_timed_holding_the_device_lock_after_its_kernel_was_loaded(cpu, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    compiler = pc.Precompiler(settings("threads", 2, cpu / "locks"), lambda line: None)
    held, loaded = [], []

    def timer(kernel_call, quantiles):  # a launch needs a GPU driver: kernel_call is not called
        held.append(lock_held(cpu / "locks" / "gpu-0.lock"))
        loaded.append(len(kernels_loaded))
        return [1.0, 1.0, 1.0]

    tuner = triton.autotune(configs=SCALE_CONFIGS, key=["n"], do_bench=timer)(pc.jit_function(scale_kernel))
    forget_compiled(tuner)
    kernels_loaded = pc.jit_function(scale_kernel).device_caches[0][0]
    tune_scale_once(tuner, compiler)
    assert held == [True] * len(SCALE_CONFIGS)
    assert loaded == list(range(1, len(SCALE_CONFIGS) + 1)), "a config was timed before its kernel was loaded"


def test_a_benchmark_reaches_the_timing_lock_through_the_session_registered_with_its_config(cpu):
    from types import SimpleNamespace

    from warmup_harness import plugin
    from warmup_harness.session import PLUGIN_NAME

    compiler = pc.Precompiler(settings("off", 2, cpu / "locks"), lambda line: None)
    session = SimpleNamespace(compiler=compiler, stopped=False)
    registered = {PLUGIN_NAME: session}
    config = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugin=registered.get))
    try:
        assert plugin.device_timing_lock(config) is compiler.timing_lock
        session.stopped = True
        assert isinstance(plugin.device_timing_lock(config), contextlib.nullcontext), "the lock outlived the session"
        registered.clear()
        assert isinstance(plugin.device_timing_lock(config), contextlib.nullcontext), "a lock without a session"
    finally:
        compiler.close()


def test_the_timing_lock_is_named_for_the_device_each_child_sees(tmp_path, monkeypatch):
    lock = device_lock.DeviceTimingLock(tmp_path)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-8f2a/1")
    assert lock.path(device_lock.device_token()).name == "gpu-GPU-8f2a_1.lock"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert lock.path(device_lock.device_token()).name == "gpu-3.lock"


NOBODY = 65534


def as_another_user(action) -> str:
    """Runs `action()` in a forked child that switched to uid/gid 65534 (so root's override of file
    modes is gone): "ok", or the text of what it raised."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(read)
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            action()
            os.write(write, b"ok")
        except BaseException as exc:  # noqa: B036 (reported to the parent)
            os.write(write, f"{type(exc).__name__}: {exc}".encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode()
    os.waitpid(pid, 0)
    return said


@pytest.fixture
def open_folder():
    """A folder every user may enter and write, as the shared default is (sticky, like /tmp)."""
    folder = Path(tempfile.mkdtemp(prefix="warmup-locks-", dir="/tmp"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder)


@contextlib.contextmanager
def umask(mask: int):
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


def test_a_lock_file_made_under_a_strict_umask_is_readable_by_every_user(open_folder, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    lock = device_lock.DeviceTimingLock(open_folder, shared=True)
    with umask(0o077), lock:
        pass
    lock.close()
    path = open_folder / "gpu-0.lock"
    assert path.stat().st_mode & 0o444 == 0o444, oct(path.stat().st_mode)
    if os.geteuid() != 0:
        return

    def time_as_nobody():
        other = device_lock.DeviceTimingLock(open_folder, shared=True)
        with other:
            pass
        other.close()

    assert as_another_user(time_as_nobody) == "ok"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_a_lock_file_another_user_cannot_read_is_named_with_its_mode(open_folder, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    path = open_folder / "gpu-0.lock"
    path.touch()
    path.chmod(0o600)  # as an older harness left it under umask 077

    def time_as_nobody():
        with device_lock.DeviceTimingLock(open_folder, shared=True):
            pass

    said = as_another_user(time_as_nobody)
    assert f"cannot open the device timing lock {path} (Permission denied): the file is mode 0600" in said, said
    assert "folder" not in said.split(cs.LOCK_DIR)[0], said


def test_a_link_planted_as_a_device_lock_is_refused_and_never_followed(open_folder, tmp_path, monkeypatch):
    # In the shared folder anyone can plant a link: followed, it would have this user make the file
    # it names, or make one of this user's files readable by all.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    secret = tmp_path / "secret"
    secret.write_text("key")
    secret.chmod(0o600)
    for target in (secret, tmp_path / "made"):
        path = open_folder / "gpu-0.lock"
        path.unlink(missing_ok=True)
        path.symlink_to(target)
        lock = device_lock.DeviceTimingLock(open_folder, shared=True)
        with pytest.raises(RuntimeError) as raised, lock:
            pass
        assert str(raised.value) == (f"warmup-harness: the device timing lock {path} is a symbolic link, which the "
                                     f"harness never writes through: remove it, or set {cs.LOCK_DIR} to a folder of "
                                     f"your own")
    assert secret.stat().st_mode & 0o777 == 0o600 and not (tmp_path / "made").exists()


@pytest.mark.parametrize("where", ["/dev/null/locks", "a-file/locks"])
def test_a_lock_folder_that_cannot_be_made_is_refused_naming_the_variable(tmp_path, where):
    (tmp_path / "a-file").touch()
    with pytest.raises(ProtocolError, match=f"{cs.LOCK_DIR}=.*cannot make the device timing locks' folder"):
        device_lock.DeviceTimingLock(tmp_path / where).prepare()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_a_lock_folder_that_cannot_be_written_is_refused_naming_the_variable(open_folder):
    shut = open_folder / "shut"
    shut.mkdir(mode=0o555)
    said = as_another_user(device_lock.DeviceTimingLock(shut).prepare)
    assert said == f"ProtocolError: {cs.LOCK_DIR}={shut}: the device timing locks' folder cannot be written " \
                   f"(Permission denied); set {cs.LOCK_DIR} to a folder you can write", said


@pytest.mark.parametrize("where", ["/proc", "/sys/kernel"])
def test_a_lock_folder_no_file_can_be_made_in_is_refused_for_root_too(where):
    # A folder whose mode lets root through (access(2) says writable), where no file can be made.
    with pytest.raises(ProtocolError, match=f"{cs.LOCK_DIR}={where}: the device timing locks' folder cannot be "
                                            f"written \\(.+\\); set {cs.LOCK_DIR} to a folder you can write"):
        device_lock.DeviceTimingLock(Path(where)).prepare()


# --- settings and reports ----------------------------------------------------------------------


def test_settings_default_to_processes_sharing_the_cpus_among_the_children(monkeypatch):
    cpus = len(os.sched_getaffinity(0))
    s = cs.CompileSettings.from_env({})
    assert (s.mode, s.workers, s.shared_lock_dir) == ("processes", max(1, min(cs.MAX_WORKERS, cpus)), True)
    assert cs.CompileSettings.from_env({cs.CHILDREN: str(cpus * 2)}).workers == 1
    chosen = cs.CompileSettings.from_env({cs.MODE: "Threads", cs.WORKERS: str(cpus), cs.PRELOAD: " a, ,b ",
                                   cs.LOCK_DIR: "locks"})
    assert (chosen.mode, chosen.workers, chosen.preload, chosen.notes) == ("threads", cpus, ("a", "b"), ())
    assert chosen.lock_dir == Path.cwd() / "locks" and not chosen.shared_lock_dir
    assert cs.CompileSettings.from_env({cs.PRELOAD: ""}).preload == ()
    assert (s.start, cs.CompileSettings.from_env({cs.START: " Spawn "}).start) == ("fork", "spawn")
    racing = race_settings({}.get)
    assert (racing.on, s.overlap) == (True, True), "racing and timing as compiled are both on by default"
    assert cs.CompileSettings.from_env({cs.OVERLAP: "0"}).overlap is False
    off = race_settings({harness_env.RACE: " No", harness_env.RACE_HISTORY: "20", harness_env.RACE_NEAR: "2.5"}.get)
    assert (off.on, off.history, off.near) == (False, 20, 0.025)
    assert race_settings({harness_env.RACE: "1"}.get).on
    assert (racing.history, racing.near) == (None, None), "history's N and near: the record's, else the defaults"
    assert race_settings({harness_env.RACE_HISTORY: "00"}.get).history == 0, "0: no history"


@pytest.mark.parametrize("name, value", [(cs.MODE, "fast"), (cs.WORKERS, "0"), (cs.WORKERS, "x"),
                                         (cs.WORKERS, "\u00b2"), (cs.WORKERS, "\u0663"), (cs.WORKERS, "000"),
                                         (cs.CHILDREN, "-2"), (cs.CHILDREN, "\u00b2"), (cs.START, "forkserver"),
                                         (harness_env.RACE, "on"), (cs.OVERLAP, "2"), (harness_env.RACE_HISTORY, "-1"),
                                         (harness_env.RACE_NEAR, "0"), (harness_env.RACE_NEAR, "5%")])
def test_unusable_settings_are_named(name, value):
    with pytest.raises(ProtocolError, match=f"{name}={value!r}"):
        cs.CompileSettings.from_env({name: value})
        race_settings({name: value}.get)


@pytest.mark.parametrize("value", ["40", "9" * 5000])
def test_a_worker_count_past_the_cpus_is_capped_to_them_and_said(tmp_path, value):
    cpus = len(os.sched_getaffinity(0))
    chosen = cs.compile_settings({cs.WORKERS: value, cs.LOCK_DIR: str(tmp_path)}.get)
    assert chosen.workers == cpus
    shown = value if len(value) <= 20 else value[:20] + "..."
    note = f"{cs.WORKERS}={shown} is more than the {cpus} CPU(s) this process may use: {cpus} worker(s)"
    assert chosen.notes == (note,)
    compiler = pc.Precompiler(chosen, lambda line: None)
    assert f"({note})" in compiler.describe()
    compiler.close()


def test_the_compile_timeout_is_a_number_of_seconds_above_0():
    assert cs.compile_settings({}.get).timeout_s == cs.DEFAULT_TIMEOUT_S == 300
    assert cs.compile_settings({cs.TIMEOUT: " 2.5 "}.get).timeout_s == 2.5
    assert cs.compile_settings({cs.TIMEOUT: "9" * 400}.get).timeout_s == threading.TIMEOUT_MAX
    for bad in ("0", "0.0", "-1", "abc", "\u00b2", "inf", "nan", "1e3"):
        with pytest.raises(ProtocolError, match=f"{cs.TIMEOUT}={bad!r} is not a number of seconds above 0"):
            cs.compile_settings({cs.TIMEOUT: bad}.get)


def test_a_huge_count_of_children_leaves_one_worker():
    assert cs.compile_settings({cs.CHILDREN: "9" * 5000}.get).workers == 1


def test_report_lines_parse_back():
    report = pc.Report("m:k", 144, "processes", 15, compiled=140, found=4, waited=3, left=0, compile_s=4.25)
    (parsed,) = parse_reports("noise\n[warmup-harness] " + report.line() + "\n")
    assert parsed["kernel"] == "m:k" and parsed["compiled"] == 140 and parsed["waited"] == 3
    assert parsed["workers"] == 15 and parsed["compile_s"] == 4.25


def test_a_spawned_compile_worker_imports_neither_pytest_nor_the_plugin(tmp_path):
    """A spawned worker imports the compile side only (precompile/worker.py and what it needs):
    pytest and the plugin stay out of it, however the session that starts it was loaded."""
    probe = textwrap.dedent("""
        import json
        from warmup_harness.precompile.pool import CompilePool
        pool = CompilePool("processes", 2, (), start_method="spawn")
        try:
            names = pool._get().submit(eval, "sorted(__import__('sys').modules)").result(timeout=%r)
        finally:
            pool.close()
        print(json.dumps(names))
    """) % HANG
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG,
                         env={**clean_env(), "PYTHONPATH": str(ROOT / "harness"), "TRITON_CACHE_DIR": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    names = set(json.loads(run.stdout))
    assert "warmup_harness.precompile.worker" in names and "triton" in names, sorted(names)
    assert not {"pytest", "_pytest", "warmup_harness.plugin", "warmup_harness.session"} & names, \
        sorted(n for n in names if "pytest" in n or n.startswith("warmup_harness"))


# --- across processes, through the plugin ------------------------------------------------------


def fixture_env(tmp: Path, name: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in clean_env().items() if not k.startswith("WARMUP_HARNESS_")}
    env.update(PYTHONPATH=str(ROOT / "harness"), HOME=str(tmp / "home"), TRITON_CACHE_DIR=str(tmp / "cache"),
               FLAGGEMS_PERF_CURRENT_OP="scale", FIXTURE_TRACE=str(tmp / f"{name}.json"), FIXTURE_SHAPES="1024,1000",
               CUDA_VISIBLE_DEVICES="0", WARMUP_HARNESS_DEVICE_LOCK_DIR=str(tmp / "locks"))
    env.update(extra)
    return env


def start(tmp: Path, name: str, *opts: str, **extra: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "warmup_harness", *opts,
               str(FIXTURE / "bench_scale.py")]
    return subprocess.Popen(command, env=fixture_env(tmp, name, **extra), cwd=tmp, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(tmp: Path, name: str, proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 0, out + err
    trace = json.loads((tmp / f"{name}.json").read_text())
    return {**trace, "stderr": err, "reports": parse_reports(err)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two children recording at once on device 0 with one cache (each compiles in 2 threads), then
    a third run with that cache: each child's trace, stderr and precompile reports."""
    tmp = tmp_path_factory.mktemp("shared")
    (tmp / "barrier").mkdir()
    both = {"FIXTURE_BARRIER": f"{tmp / 'barrier'}:2", "WARMUP_HARNESS_PRECOMPILE": "threads",
            "WARMUP_HARNESS_COMPILE_WORKERS": "2"}
    children = {name: start(tmp, name, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp / name), **both)
                for name in ("a", "b")}
    done = {name: finish(tmp, name, proc) for name, proc in children.items()}
    done["again"] = finish(tmp, "again", start(tmp, "again", FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp / "c"),
                                               WARMUP_HARNESS_PRECOMPILE="threads"))
    return done


# Two sizes, two specializations (1024 is a multiple of 16, 1000 is not): 6 configs each.
CONFIGS_COMPILED = 12


def test_two_children_sharing_a_cache_compile_each_config_once(runs):
    a, b = runs["a"], runs["b"]
    assert sum(r["compiled"] for r in a["reports"] + b["reports"]) == CONFIGS_COMPILED, a["stderr"] + b["stderr"]
    assert all(r["compiled"] + r["found"] == 6 and r["left"] == 0 for r in a["reports"] + b["reports"])
    assert a["compiled"]["sweep"] == b["compiled"]["sweep"] == 0, "a sweep compiled a config itself"
    assert a["compiled"]["other_threads"] + b["compiled"]["other_threads"] == CONFIGS_COMPILED


def test_a_second_run_with_the_cache_compiles_nothing(runs):
    again = runs["again"]
    assert [(r["compiled"], r["found"]) for r in again["reports"]] == [(0, 6), (0, 6)], again["stderr"]
    assert again["compiled"] == {"sweep": 0, "other_threads": 0}


def test_children_on_one_device_never_time_two_configs_at_once(runs):
    spans = sorted(tuple(span) for name in ("a", "b") for span in runs[name]["intervals"])
    assert len(spans) == 2 * CONFIGS_COMPILED
    for (_, end), (begin, _) in zip(spans, spans[1:]):
        assert begin >= end, "two configs were timed on one device at the same time"


def test_without_protocol_variables_nothing_is_precompiled(tmp_path):
    plain = finish(tmp_path, "plain", start(tmp_path, "plain", WARMUP_HARNESS_PRECOMPILE="processes"))
    assert "[warmup-harness]" not in plain["stderr"]
    assert plain["compiled"] == {"sweep": CONFIGS_COMPILED, "other_threads": 0}
    assert not (tmp_path / "locks").exists()


@pytest.mark.parametrize("name, value", [("WARMUP_HARNESS_COMPILE_WORKERS", "many"),
                                         ("WARMUP_HARNESS_COMPILE_WORKERS", "\u00b2"),
                                         ("WARMUP_SPAWN_CHILDREN", "\u00b2")])
def test_an_unusable_setting_stops_the_session_before_any_test(tmp_path, name, value):
    proc = start(tmp_path, "bad", FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"), **{name: value})
    out, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 4, out + err
    assert f"{name}={value!r} is not a whole number of at least 1" in err
    assert not (tmp_path / "bad.json").exists(), "a test ran"


def test_compile_settings_are_read_from_ini_options_and_the_variable_wins(tmp_path):
    ini = ("-o", "warmup_harness_compile_workers=many")
    proc = start(tmp_path, "bad", *ini, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"))
    out, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 4, out + err
    assert "WARMUP_HARNESS_COMPILE_WORKERS='many' is not a whole number of at least 1" in err
    assert not (tmp_path / "bad.json").exists(), "a test ran"
    proc = start(tmp_path, "good", *ini, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"),
                 WARMUP_HARNESS_COMPILE_WORKERS="1", WARMUP_HARNESS_PRECOMPILE="threads")
    assert finish(tmp_path, "good", proc)["reports"], "the variable's setting compiled ahead"


@pytest.mark.parametrize("where, said", [("/dev/null/locks", "cannot make the device timing locks' folder"),
                                         ("/proc", "the device timing locks' folder cannot be written")])
def test_a_lock_folder_that_cannot_be_made_stops_the_session_before_any_test(tmp_path, where, said):
    proc = start(tmp_path, "bad", FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"),
                 WARMUP_HARNESS_DEVICE_LOCK_DIR=where)
    out, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 4, out + err
    errors = [ln for ln in (out + err).splitlines() if ln.startswith("ERROR")]
    assert len(errors) == 1 and f"WARMUP_HARNESS_DEVICE_LOCK_DIR={where}: {said}" in errors[0], out + err
    assert not (tmp_path / "bad.json").exists(), "a test ran"


def test_a_session_whose_compile_workers_hang_in_their_imports_sweeps_on_and_ends(tmp_path):
    (tmp_path / "sleepy.py").write_text(SLEEPY)
    env = {"PYTHONPATH": f"{ROOT / 'harness'}{os.pathsep}{tmp_path}"}
    proc = start(tmp_path, "hung", FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"),
                 WARMUP_HARNESS_PRECOMPILE="processes", WARMUP_HARNESS_COMPILE_WORKERS="2",
                 WARMUP_HARNESS_COMPILE_PRELOAD="sleepy", WARMUP_HARNESS_COMPILE_TIMEOUT="2",
                 WARMUP_HARNESS_COMPILE_START="spawn", **env)
    hung = finish(tmp_path, "hung", proc)
    assert [(r["compiled"], r["left"]) for r in hung["reports"]] == [(6, 0), (6, 0)], hung["stderr"]


def test_a_record_sessions_opening_line_says_its_compile_workers_are_forked(tmp_path):
    # Triton 3.9 warns (UserWarning) whenever TRITON_DEFAULT_FP_FUSION is unset; set to its default,
    # so that -W error fails on what the harness does, not on Triton's notice.
    proc = start(tmp_path, "forked", "-W", "error", FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"),
                 WARMUP_HARNESS_PRECOMPILE="processes", WARMUP_HARNESS_COMPILE_WORKERS="2",
                 TRITON_DEFAULT_FP_FUSION="1")
    forked = finish(tmp_path, "forked", proc)
    assert "[warmup-harness] precompile: processes (fork) x2: a new key's configs are compiled ahead" \
        in forked["stderr"], forked["stderr"]
    assert [r["left"] for r in forked["reports"]] == [0, 0], forked["stderr"]


def test_a_tuner_with_its_own_bench_is_timed_holding_the_device_lock_too(cpu, monkeypatch):
    from triton.runtime.autotuner import Autotuner

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    held = []

    class OwnBench(Autotuner):
        def _bench(self, *args, config, **meta):  # times without calling Autotuner's
            held.append(lock_held(cpu / "locks" / "gpu-0.lock"))
            return [1.0, 1.0, 1.0]

    class Launcher:  # what Autotuner calls `fn`, over a plain function: nothing compiles
        arg_names = ["n"]
        fn = staticmethod(lambda n: None)

        def run(self, *args, **kwargs):
            pass

    compiler = pc.Precompiler(settings("off", 2, cpu / "locks"), lambda line: None)
    tuner = OwnBench(Launcher(), ["n"], SCALE_CONFIGS, ["n"], None, None, do_bench=cpu_fakes.fake_bench)
    try:
        tuners.install(tuners.Recorder(lambda *a: None), compiler)
        tuner.run(7, grid=(1,), warmup=False)
    finally:
        tuners.uninstall()
        compiler.close()
    assert held == [True] * len(SCALE_CONFIGS)
    assert OwnBench.__dict__["_bench"].__qualname__.endswith("OwnBench._bench"), "not taken off"


def test_a_config_is_timed_while_the_last_one_still_compiles(cpu, monkeypatch):
    """The last config's compile, in a worker, waits until a config was timed (at most 60 s): a
    session that waited for the whole key before timing would meet that bound first."""
    timed, seen = cpu / "timed", cpu / "seen"

    def timer(kernel_call, quantiles):  # a launch needs a GPU driver: kernel_call is not called
        timed.touch()
        return [1.0, 1.0, 1.0]

    hold_compile(monkeypatch, SCALE_CONFIGS[-1], timed,
                 then=lambda released: seen.write_text("timed first" if released else "compiled first"))
    monkeypatch.setattr(pc.CompilePool, "_started", lambda self: True)  # the caller leaves every job to them
    pool_pays_from(monkeypatch, 0.0)
    lines: list[str] = []
    compiler = pc.Precompiler(settings("processes", 2, cpu / "locks", overlap=True), lines.append)
    tuner = triton.autotune(configs=SCALE_CONFIGS, key=["n"], do_bench=timer)(pc.jit_function(scale_kernel))
    forget_compiled(tuner)
    tune_scale_once(tuner, compiler)
    assert seen.read_text() == "timed first"
    reports = parse_reports("\n".join(lines))
    assert [(r["compiled"], r["left"]) for r in reports] == [(len(SCALE_CONFIGS), 0)], lines
    assert lines[-1].endswith("; each config timed as its compile finished"), lines


def test_a_race_times_its_configs_in_the_order_their_compiles_finish(cpu, monkeypatch):
    """The second config's compile, in a worker, waits until every other config was timed (at most
    60 s): a race that took the configs in their own order would wait out that bound first."""
    from warmup_harness.autotune import race

    released = cpu / "released"
    order: list[int] = []
    original = pc.Precompiler.bench

    def bench(self, tuner, args, config, meta, time_it):
        order.append(SCALE_CONFIGS.index(config))
        if set(order) == {0, 2, 3}:
            released.touch()
        return original(self, tuner, args, config, meta, time_it)

    def timer(kernel_call, quantiles=None, warmup=None, rep=None):  # no GPU: kernel_call is not called
        return [1.0, 1.0, 1.0]

    hold_compile(monkeypatch, SCALE_CONFIGS[1], released)
    monkeypatch.setattr(pc.Precompiler, "bench", bench)
    pool_pays_from(monkeypatch, 0.0)
    compiler = pc.Precompiler(settings("processes", 2, cpu / "locks", overlap=True), lambda line: None)
    tuner = triton.autotune(configs=SCALE_CONFIGS, key=["n"], do_bench=timer)(pc.jit_function(scale_kernel))
    forget_compiled(tuner)
    racer = race.Racer(lambda line: None, compiler.as_compiled)
    tune_scale_once(tuner, compiler, racer=racer)
    assert order[:5] == [0, 0, 2, 3, 1], f"the device warmed on the first config compiled, then the race: {order}"
    assert [v["raced"] for v in racer.keys[next(iter(racer.keys))].values()] == [len(SCALE_CONFIGS)]
