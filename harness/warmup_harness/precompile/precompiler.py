"""Compiles a new key's configs before the tuner times them, in parallel over the machine's cores
and once across the children that share a kernel cache; and times one config at a time per device.

Why. In a compile-heavy sweep compiling is most of the time, and a tuner compiles its configs one
after another on one core, inside its timing loop: FlagGems' Hopper mm (about 160 configs) spends
28-31 s compiling the first key of each specialization and 2-4 s timing each key. Children that
shard such a sweep each compile every specialization they meet. Here a new key's pruned configs
are compiled first, all at once, into Triton's kernel cache; the tuner then times them as usual
and each of its launches is a kernel cache hit. Worker processes are forked from the session at the first key
that pays for them, with every module it imported; where forking is unsafe they are spawned, and a
record session starts them when the plugin loads, so that their imports overlap collection.

How (Triton 3.4 and later, checked against 3.4 to 3.9: triton_private.py), one module each:

* settings: the settings, read through a getter of raw values;
* capture: each config through the JIT's warm-up path, `knobs.runtime.jit_cache_hook` taking the
  specialization it would compile (its pre-hook runs first: FlagGems' TMA hook sets the
  descriptors' block shapes, which the specialization holds); workers compile with
  `triton.compile` for the target (backend, architecture, warp size) Triton's driver gave the
  session, asked once there and passed in each job;
* cache_entries: one job found in Triton's kernel cache, or compiled into it holding `flock` on the
  entry's folder, so that a sibling child sharing the kernel cache never compiles it twice;
* worker: a worker process's start-up (forked: nothing of the session's device or locks
  kept; spawned: its imports), and the kernel's module found, or imported by name or by path;
* pool: processes (forked, else spawned), threads or the caller, only where a pool pays,
  with a bounded wait;
* worker_processes: the pool's worker processes started (forked where that is safe, else
  spawned) and ended, and how one that died ended;
* ahead: a key's configs timed as their compiles finish, while the pool's workers compile the rest
  (WARMUP_HARNESS_COMPILE_OVERLAP), and in that order for a race (autotune/race.py);
* device_lock: a config timed holding `flock` on `<lock folder>/<device>.lock`, after its kernel
  was loaded (a cache hit), so that children sharing a GPU time one config at a time;
* ..triton_private and ..stdlib_private: every name of Triton's, and of the standard library's,
  that is not its documented API.

When it pays: a config whose kernel is in Triton's kernel cache already is found by the session's own
process, and a key with nothing left to compile never starts or waits for the pool. Otherwise a
key's new configs are compiled in the session's process one by one unless the pool is running or
their work (the first config's seconds times the number of the others) reaches the start-up cost
(pool.FORK_POOL_START_S forked, pool.POOL_START_S spawned; where they were measured:
BENCHMARKS.md, "Figures the contract used to carry"). While the pool's workers still start up,
the session's process compiles from the end of the list as they take from its start, so a worker
still starting up costs the key nothing.

Forked workers start at the first key that pays, after collection, so that they hold every module
the session imported; a kernel's module imported later is imported by the worker. The session's
objects are frozen for the fork (`gc.freeze`, then taken back) so that a worker's collector leaves
their pages shared. Python 3.12+ warns at a fork of a process running threads (a GPU session
always does); the warning is ignored around the fork only. Forking is unsafe, and workers are
spawned instead, on any platform but Linux (macOS's system libraries are not fork-safe) and before
Python 3.11 (its ProcessPoolExecutor forks workers one by one beside its own thread,
cpython#90622). A forked worker lets go of every file lock the session held at the fork (a by-key
claim's descriptor copy would keep the claim held) and of the session's signal handlers (SIGTERM
ends a worker; it does not fold the record), and gets PR_SET_PDEATHSIG, which follows the thread
that forked it (the one that compiled the key).

Nothing here fails a sweep: a config that could not be compiled ahead is compiled by Triton as it
always is, and said. The settings are docs/CONTRACT.md's ("The record/replay harness").
Importing this module imports only the standard library.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .ahead import Ahead
from .cache_entries import Outcome
from .pool import CompilePool
from .settings import (CHILDREN, LOCK_DIR, MODE, PRELOAD, START, TIMEOUT, WORKERS,  # noqa: F401
                               CompileSettings, compile_settings)
from .device_lock import DeviceTimingLock, device_token  # noqa: F401

Settings = CompileSettings  # the name tests/gpu's scripts use


def jit_function(kernel: Any) -> Any:
    """The JITFunction under a tuner, a heuristics layer or a library's wrapper."""
    from ..triton_private import jit_function as under

    return under(kernel)


def cannot_compile() -> str | None:
    """Why Triton cannot compile ahead here (too old, or no backend for this process's device),
    or None."""
    from .. import triton_private

    return triton_private.cannot_compile()


def stub_device_set() -> bool:
    """Whether the benchmark put in a device Triton cannot compile for (triton_private's)."""
    from .. import triton_private

    return triton_private.stub_device_set()


# --- one key -----------------------------------------------------------------------------------


@dataclass
class Report:
    kernel: str
    configs: int
    mode: str
    workers: int
    compiled: int = 0
    found: int = 0  # in the kernel cache already, or compiled by a sibling meanwhile
    waited: int = 0  # of those found, the ones a sibling was compiling when asked
    loaded: int = 0  # in this process's memory already
    left: int = 0  # not compiled ahead: Triton compiles them in the sweep
    pool_wait_s: float = 0.0  # of compile_s, waiting for the pool's workers (not said in the line)
    capture_s: float = 0.0
    compile_s: float = 0.0  # overlapped (ahead.py): the caller's, outside its timings; the rest is timing
    errors: list[str] = field(default_factory=list)
    overlapped: bool = False  # configs were timed as their compiles finished (ahead.py)

    def line(self) -> str:
        return (f"precompile {self.kernel}: {self.configs} configs, {self.compiled} compiled, {self.found} found "
                f"compiled ({self.waited} after waiting for a sibling), {self.loaded} already loaded, {self.left} "
                f"left to Triton; {self.mode} x{self.workers}, capture {self.capture_s:.2f}s, "
                f"compile {self.compile_s:.2f}s" + ("; each config timed as its compile finished"
                                                     if self.overlapped else ""))


def precompile(tuner: Any, configs: list, launch: dict, pool: CompilePool, kernel: str = "",
               overlap: bool = False) -> Report | Ahead:
    """Compiles `configs` of `tuner` for one launch (`launch`: every argument by name, as the tuner's
    `nargs` and its run's keyword arguments hold them) into the kernel cache, in `pool`. With
    `overlap`, where the pool's workers can take the key (ahead.py), returns its compiles under way
    instead, whose `finish()` is the report."""
    from .capture import capture

    report = Report(kernel or _name(tuner), len(configs), pool.mode, pool.workers)
    start = time.perf_counter()
    taken = capture(tuner, configs, launch)
    report.capture_s = time.perf_counter() - start
    report.loaded = taken.loaded
    ahead = Ahead.start(pool, tuner, configs, taken, report) if overlap else None
    if ahead is not None:
        report.errors = list(taken.errors)
        report.overlapped = not ahead.settled
        report.compile_s = time.perf_counter() - start - report.capture_s
        return ahead
    outcomes, report.waited = pool.run(taken.jobs)
    report.pool_wait_s = pool.waited_s
    report.compile_s = time.perf_counter() - start - report.capture_s
    report.loaded = taken.loaded
    report.compiled = outcomes.count(Outcome.COMPILED)
    report.found = outcomes.count(Outcome.FOUND)
    report.errors = taken.errors + [o.value if isinstance(o, Outcome) else o for o in outcomes
                                    if o not in (Outcome.COMPILED, Outcome.FOUND)]
    report.left = len(report.errors)
    return report


def _name(tuner: Any) -> str:
    fn = jit_function(tuner)
    return f"{fn.module}:{fn.fn.__qualname__}"


# --- the session's side ------------------------------------------------------------------------

class Precompiler:
    """What the autotuner hooks call: `before_timing` on a new key, `bench` around each timing."""

    def __init__(self, settings: CompileSettings, say: Callable[[str], None]):
        self.settings = settings
        self._say = say
        self.pool = (CompilePool(settings.mode, settings.workers, settings.preload, settings.timeout_s, settings.start)
                     if settings.mode != "off" else None)
        self.timing_lock = DeviceTimingLock(settings.lock_dir, settings.shared_lock_dir)
        self.timing_lock.prepare()
        self.reports: list[Report] = []
        self._compiles: bool | None = None  # decided at the first key
        self._ahead: Ahead | None = None  # the key whose configs compile while they are timed

    def describe(self) -> str:
        pool = self.pool
        compiling = ("precompile off" if pool is None else
                     f"precompile: {pool.describe()}: a new key's configs are compiled ahead")
        notes = "".join(f" ({note})" for note in self.settings.notes)
        return (f"{compiling}{notes}; configs are timed one at a time per device (locks in "
                f"{self.settings.lock_dir})")

    def start_early(self) -> None:
        """Starts spawned workers now (record mode: a sweep is coming), so that their imports
        overlap pytest's collection, unless the benchmark put in a device Triton cannot compile
        for. Forked workers are not: forked now, before collection, they would lack the modules the
        benchmark is about to import; they are forked at the first key that pays for them."""
        if self.pool is not None and not self.pool.forked and not stub_device_set():
            self.pool.start()

    def _usable(self) -> bool:
        if self._compiles is None:
            why = cannot_compile()
            self._compiles = why is None
            if why:
                self._say(f"precompile off: {why}; each config is compiled as it is timed")
        return self._compiles

    def before_timing(self, kernel: str, tuner: Any, configs: list, launch_kwargs: dict) -> None:
        self._finish_ahead()  # the key before, should a config of it never have been timed
        if self.pool is None or self.pool.stuck or len(configs) < 2 or not self._usable():
            return
        try:
            report = precompile(tuner, configs, {**(tuner.nargs or {}), **launch_kwargs}, self.pool, kernel,
                                self.settings.overlap)
        except Exception as exc:
            self._say(f"precompile {kernel}: failed ({type(exc).__name__}: {exc}); the sweep compiles its "
                      f"configs itself")
            return
        if isinstance(report, Ahead):
            self._ahead = report
            if report.settled:
                self._finish_ahead()
            return
        self._said(report)

    def _finish_ahead(self) -> None:
        """The key compiled while it was timed: its report, once every compile is settled."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            self._said(ahead.finish())

    def as_compiled(self, tuner: Any, configs: list) -> Any:
        """`configs` in the order their compiles finish (their own order where none is under way)."""
        ahead = self._ahead
        return ahead.as_compiled(configs) if ahead is not None and ahead.tuner is tuner else configs

    def _said(self, report: Report) -> None:
        self.reports.append(report)
        self._say(report.line())
        if report.errors:
            self._say(f"precompile {report.kernel}: {report.left} config(s) left to Triton's own compile, the first "
                      f"because {report.errors[0]}")
        if self.pool.stuck:
            self._say(f"precompile off for the rest of the session: the compile workers gave no result in "
                      f"{self.pool.timeout_s:g}s ({TIMEOUT}) and were stopped; each config is compiled as it is timed")

    def bench(self, tuner: Any, args: tuple, config: Any, meta: dict, time_it: Callable[[], Any]) -> Any:
        ahead = self._ahead
        if ahead is not None and ahead.tuner is tuner:
            ahead.wait_for(config)  # its own compile only: the others go on while it is timed
        if self._compiles:
            from .capture import load

            load(tuner, args, config, meta)
        with self.timing_lock:
            answer = time_it()
        if ahead is not None and ahead is self._ahead and ahead.settled:
            self._finish_ahead()
        return answer

    def summary(self) -> str | None:
        self._finish_ahead()
        if not self.reports:
            return None
        total = lambda name: sum(getattr(r, name) for r in self.reports)  # noqa: E731
        return (f"precompile ({self.pool.mode} x{self.pool.workers}): {len(self.reports)} key(s), "
                f"{total('compiled')} configs compiled, {total('found')} found compiled, {total('left')} left to "
                f"Triton, {total('capture_s') + total('compile_s'):.1f}s; {self.timing_lock.waited_s:.1f}s waiting "
                f"for the device's timing lock")

    def close(self) -> None:
        self._ahead = None  # what still compiles is not waited for: the pool's close ends it
        if self.pool is not None:
            self.pool.close()
        self.timing_lock.close()
