"""Compile an autotuner's configs in parallel before they are timed, and time one config at a time
per device. Draft of the harness side of issue 10; the lead moves it into ``warmup_harness``.

Why: a sweep of a compile-heavy kernel (FlagGems' Hopper mm, about 160 configs) spends most of its
time compiling the configs one after another on one core; the GPU timing is a few seconds per key.
Here the configs of a new key are compiled first, in parallel, into Triton's on-disk cache; the
tuner then times them as usual and each launch finds its kernel compiled.

How (Triton 3.x, checked against 3.6):

* Capture. Each config is "launched" through the JIT with ``warmup=True`` and a
  ``knobs.runtime.jit_cache_hook`` that records the JIT's serialized specialization (the data
  ``JITFunction.preload`` takes) and returns True, so nothing is compiled or launched. The
  config's ``pre_hook`` runs first: FlagGems' TMA hook sets the descriptors' block shapes, which are
  part of the specialization. Configs already compiled in this process are skipped.
* Compile. Every captured specialization is rebuilt into an ``ASTSource`` and compiled with
  ``triton.compile`` for the current target, exactly as ``preload`` does, in a pool of threads or of
  spawned processes (a process imports the kernel's module by name, else from its file). The result
  lands in the Triton cache (``TRITON_CACHE_DIR``); the tuner's own launch is then a cache hit.
* Once across processes. Before compiling, a worker takes ``flock`` on
  ``<cache>/.warmup-locks/<cache key>.lock``. When another process holds it (a sibling child
  sharing the cache compiles that very kernel) the job is deferred and retried, blocking, after the
  rest: by then it is a cache hit. Children that share one cache so divide the compile work of
  the specializations they have in common instead of each doing all of it.
* Clean timing. ``device_timing_lock()`` holds ``flock`` on
  ``$WARMUP_DEVICE_LOCK_DIR/<device uuid>.lock`` while one config is timed, so children that share
  a GPU (``--devices 0,0``) time one config at a time on it; compiling (outside the lock) overlaps.

Environment (read when used):

``WARMUP_PRECOMPILE``          ``off`` (default), ``serial``, ``threads`` or ``processes``
``WARMUP_PRECOMPILE_WORKERS``  pool size (default: usable CPUs divided by ``WARMUP_SHARDS`` if set)
``WARMUP_DEVICE_LOCK_DIR``     where the per-device timing locks live; unset: no timing lock
``WARMUP_TRITON_CACHE_DIR``    ``use_shared_cache()`` points ``TRITON_CACHE_DIR`` here

Imports only Triton and the standard library; torch only when it is loaded already.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import fcntl
import hashlib
import importlib
import json
import multiprocessing
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Optional

MODES = ("off", "serial", "threads", "processes")
ENV_MODE = "WARMUP_PRECOMPILE"
ENV_WORKERS = "WARMUP_PRECOMPILE_WORKERS"
ENV_LOCK_DIR = "WARMUP_DEVICE_LOCK_DIR"
ENV_SHARED_CACHE = "WARMUP_TRITON_CACHE_DIR"
TAG = "[warmup-precompile]"


# --- settings ----------------------------------------------------------------------------------


def mode_from_env() -> str:
    raw = os.environ.get(ENV_MODE, "").strip().lower() or "off"
    if raw not in MODES:
        raise ValueError(f"{ENV_MODE}={raw!r}: expected one of {', '.join(MODES)}")
    return raw


def workers_from_env() -> int:
    raw = os.environ.get(ENV_WORKERS, "").strip()
    if raw:
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"{ENV_WORKERS}={raw!r}: expected a whole number of at least 1")
        return value
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        shards = max(1, int(os.environ.get("WARMUP_SHARDS", "1")))
    except ValueError:
        shards = 1
    return max(1, cpus // shards)


def use_shared_cache() -> Optional[str]:
    """Points Triton's cache at ``$WARMUP_TRITON_CACHE_DIR`` (the user's cache, shared by every
    child) instead of a per-child folder. Triton reads ``TRITON_CACHE_DIR`` at each use, so this
    works after Triton is imported, as long as it runs before the first compile."""
    shared = os.environ.get(ENV_SHARED_CACHE, "").strip()
    if not shared:
        return None
    os.makedirs(shared, exist_ok=True)
    os.environ["TRITON_CACHE_DIR"] = shared
    return shared


# --- capture: what would be compiled -----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CompileJob:
    """One (kernel, specialization, config) to compile; picklable, for a worker process."""

    module: str
    qualname: str
    source_file: Optional[str]
    fn_cache_key: str
    specialization: str  # JSON, as the JIT serializes it for preload()
    target: Any  # triton.backends.compiler.GPUTarget
    cache_dir: str
    label: str


def jit_function(kernel):
    """The JITFunction under a tuner, heuristics layer or library wrapper (``.fn`` chain)."""
    from triton.runtime.jit import JITFunction

    fn, seen = kernel, 0
    while not isinstance(fn, JITFunction):
        fn = getattr(fn, "fn", None)
        seen += 1
        if fn is None or seen > 16:
            raise TypeError(f"no triton.jit function under {kernel!r}")
    return fn


def _config_label(config) -> str:
    text = str(config)
    return re.sub(r",?\s*pre_hook: [^,]*", "", text)


def capture_jobs(autotuner, configs, args, kwargs) -> tuple[list, list, int]:
    """Runs each config through the JIT's warmup path with a cache hook that records the
    specialization and skips the compile. Returns (jobs, errors, already compiled)."""
    from triton import knobs
    from triton.runtime.driver import driver

    target = driver.active.get_current_target()
    cache_dir = _cache_dir()
    nargs = dict(zip(autotuner.arg_names, args))
    jobs: list[tuple[Any, CompileJob]] = []
    errors: list[str] = []
    in_memory = 0
    captured: list = []

    def hook(*, key, repr, fn, compile, is_manual_warmup, already_compiled):  # noqa: A002
        captured.append((fn.jit_function, compile["specialization_data"]))
        return True

    previous = knobs.runtime.jit_cache_hook
    knobs.runtime.jit_cache_hook = hook
    try:
        for config in configs:
            current = {**kwargs, **config.all_kwargs()}
            current["warmup"] = True
            current.setdefault("grid", None)
            captured.clear()
            try:
                if config.pre_hook is not None:
                    config.pre_hook({**nargs, **current})
                autotuner.fn.run(*args, **current)
            except Exception as exc:  # the tuner's own sweep reports it again, per config
                errors.append(f"{_config_label(config)}: {type(exc).__name__}: {exc}")
                continue
            if not captured:
                in_memory += 1
                continue
            for jit_fn, spec in captured:
                jobs.append(
                    (
                        jit_fn,
                        CompileJob(
                            module=jit_fn.module,
                            qualname=jit_fn.fn.__qualname__,
                            source_file=getattr(jit_fn.fn.__code__, "co_filename", None),
                            fn_cache_key=jit_fn.cache_key,
                            specialization=spec,
                            target=target,
                            cache_dir=cache_dir,
                            label=_config_label(config),
                        ),
                    )
                )
    finally:
        knobs.runtime.jit_cache_hook = previous
    return jobs, errors, in_memory


def _cache_dir() -> str:
    from triton import knobs

    return str(knobs.cache.dir)


# --- compile: one job, in this process or a worker ---------------------------------------------


def _rebuild(jit_fn, job: CompileJob):
    """``JITFunction.preload``'s reconstruction, without asking a driver for the device."""
    import triton.language as tl
    from triton.compiler import ASTSource, make_backend

    data = json.loads(job.specialization)
    constexprs = {
        tuple(k): tl.dtype(v)
        if isinstance(v, str) and tl.dtype.is_dtype(v)
        else tl.constexpr(v["constexpr"])
        if isinstance(v, dict) and "constexpr" in v
        else v
        for k, v in zip(data["constant_keys"], data["constant_vals"])
    }
    attrs = dict(zip(map(tuple, data["attrs_keys"]), data["attrs_vals"]))
    signature = {k: _tuples(v) for k, v in data["signature"].items()}
    options = {k: tuple(v) if isinstance(v, list) else v for k, v in data["options"].items()}
    backend = make_backend(job.target)
    options = backend.parse_options(options)
    return ASTSource(jit_fn, signature, constexprs, attrs), backend, options


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def compile_job(jit_fn, job: CompileJob, wait: bool) -> str:
    """Compiles one job into the Triton cache, once across processes. Returns ``compiled``,
    ``hit`` (the cache had it), or ``deferred`` (another process holds its lock; ``wait=False``)."""
    import triton
    from triton._C.libtriton import get_cache_invalidating_env_vars
    from triton.runtime.cache import get_cache_key, get_cache_manager

    src, backend, options = _rebuild(jit_fn, job)
    env_vars = get_cache_invalidating_env_vars()
    digest = hashlib.sha256(get_cache_key(src, backend, options, env_vars).encode("utf-8")).hexdigest()
    lock_dir = Path(job.cache_dir) / ".warmup-locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / f"{digest}.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return "deferred"
        try:
            metadata = f"{src.name[:150]}.json"
            group = get_cache_manager(digest).get_group(metadata)
            if group and metadata in group:
                return "hit"
            triton.compile(src, target=job.target, options=options.__dict__, _env_vars=env_vars)
            return "compiled"
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _resolve(job: CompileJob):
    """In a worker: the job's JITFunction, from its module imported by name, else by the dotted
    name its file has under an entry of sys.path (FlagGems imports its Hopper ops as
    ``hopper.ops.mm`` through a sys.path entry it removes again; the file is also
    ``flag_gems.runtime.backend._nvidia.hopper.ops.mm``). Triton's cache key does not depend on the
    module's name: source, line and dependencies make it, and it is checked below."""
    module = sys.modules.get(job.module)
    if module is None:
        try:
            module = importlib.import_module(job.module)
        except ImportError:
            module = _import_by_path(job)
    obj: Any = module
    for part in job.qualname.split("."):
        obj = getattr(obj, part)
    fn = jit_function(obj)
    if fn.cache_key != job.fn_cache_key:
        raise RuntimeError(f"{job.module}.{job.qualname} in the worker differs from the caller's (cache key)")
    return fn


def _import_by_path(job: CompileJob):
    path = Path(job.source_file or "").resolve()
    names = []
    for entry in sys.path:
        try:
            relative = path.relative_to(Path(entry or ".").resolve())
        except ValueError:
            continue
        names.append(".".join(relative.with_suffix("").parts))
    for name in sorted(set(names), key=lambda n: -n.count(".")):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError(f"cannot import {job.module} (from {job.source_file}) in a precompile worker")


def _worker_compile(job: CompileJob, wait: bool) -> str:
    os.environ["TRITON_CACHE_DIR"] = job.cache_dir
    return compile_job(_resolve(job), job, wait)


# --- pools -------------------------------------------------------------------------------------

_pools: dict[tuple[str, int], cf.Executor] = {}
_pools_lock = threading.Lock()


class _Inline(cf.Executor):
    """Runs each job when it is submitted, in the caller's thread (serial mode, one worker)."""

    def submit(self, fn, /, *args, **kwargs):
        future: cf.Future = cf.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future


def _pool(mode: str, workers: int) -> cf.Executor:
    if mode == "serial" or (mode == "threads" and workers == 1):
        return _Inline()
    with _pools_lock:
        pool = _pools.get((mode, workers))
        if pool is None:
            if mode == "processes":
                pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
            else:
                pool = cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="warmup-precompile")
            _pools[(mode, workers)] = pool
        return pool


def warm_pool(mode: Optional[str] = None, workers: Optional[int] = None) -> None:
    """Starts the process pool's workers now (each pays Python's and Triton's import once), so that
    the first new key does not wait for them."""
    mode = mode or mode_from_env()
    if mode != "processes":
        return
    workers = workers or workers_from_env()
    pool = _pool(mode, workers)
    for future in [pool.submit(_import_triton) for _ in range(workers)]:
        future.result()


def _import_triton() -> int:
    import triton  # noqa: F401

    return os.getpid()


def shutdown_pools() -> None:
    with _pools_lock:
        for pool in _pools.values():
            pool.shutdown(wait=True, cancel_futures=True)
        _pools.clear()


# --- the entry point ---------------------------------------------------------------------------


@dataclasses.dataclass
class Report:
    kernel: str
    mode: str
    workers: int
    configs: int
    in_memory: int = 0
    compiled: int = 0
    hits: int = 0
    deferred: int = 0
    failed: int = 0
    fallback: int = 0
    capture_s: float = 0.0
    compile_s: float = 0.0
    errors: list = dataclasses.field(default_factory=list)

    def line(self) -> str:
        return (
            f"{TAG} {self.kernel}: {self.configs} configs, {self.compiled} compiled, {self.hits} cache hits "
            f"({self.deferred} after waiting for a sibling), {self.in_memory} already loaded, {self.failed} failed; "
            f"{self.mode} x{self.workers}, capture {self.capture_s:.2f}s, compile {self.compile_s:.2f}s"
        )


def precompile(autotuner, configs, args=(), kwargs=None, *, mode=None, workers=None) -> Report:
    """Compiles ``configs`` of ``autotuner`` for the launch ``args``/``kwargs`` (as the tuner's
    ``run`` got them) into the Triton cache, in parallel. Never raises for a config that does not
    compile: the tuner's sweep meets the same error and handles it as it always does."""
    kwargs = dict(kwargs or {})
    mode = mode or mode_from_env()
    workers = workers or workers_from_env()
    report = Report(kernel=_kernel_name(autotuner), mode=mode, workers=workers, configs=len(configs))
    if mode == "off" or not configs:
        return report
    start = time.perf_counter()
    jobs, report.errors, report.in_memory = capture_jobs(autotuner, configs, args, kwargs)
    report.failed = len(report.errors)
    report.capture_s = time.perf_counter() - start
    start = time.perf_counter()
    outcomes = _run_jobs(jobs, mode, workers, report)
    for outcome in outcomes:
        if outcome == "compiled":
            report.compiled += 1
        elif outcome == "hit":
            report.hits += 1
        else:
            report.failed += 1
            report.errors.append(outcome)
    report.compile_s = time.perf_counter() - start
    return report


def _kernel_name(autotuner) -> str:
    try:
        fn = jit_function(autotuner)
        return f"{fn.module}.{fn.fn.__qualname__}"
    except TypeError:
        return repr(autotuner)


def _run_jobs(jobs, mode: str, workers: int, report: Report) -> list[str]:
    if not jobs:
        return []
    pool = _pool(mode, workers)
    if mode == "processes":
        submit = lambda fn, job, wait: pool.submit(_worker_compile, job, wait)  # noqa: E731
    else:
        submit = lambda fn, job, wait: pool.submit(compile_job, fn, job, wait)  # noqa: E731
    outcomes: list[str] = [""] * len(jobs)
    waiting = {submit(fn, job, False): i for i, (fn, job) in enumerate(jobs)}
    retry: list[int] = []
    for future in cf.as_completed(waiting):
        i = waiting[future]
        try:
            outcomes[i] = future.result()
        except Exception as exc:
            if mode == "processes":
                # The worker could not import or compile it; compile here instead.
                report.fallback += 1
                outcomes[i] = _safe(compile_job, jobs[i][0], jobs[i][1], True)
            else:
                outcomes[i] = f"{jobs[i][1].label}: {type(exc).__name__}: {exc}"
        if outcomes[i] == "deferred":
            retry.append(i)
    report.deferred = len(retry)
    if retry:
        again = {submit(jobs[i][0], jobs[i][1], True): i for i in retry}
        for future in cf.as_completed(again):
            i = again[future]
            try:
                outcomes[i] = future.result()
            except Exception as exc:
                outcomes[i] = _safe(compile_job, jobs[i][0], jobs[i][1], True) if mode == "processes" else (
                    f"{jobs[i][1].label}: {type(exc).__name__}: {exc}"
                )
    return outcomes


def _safe(func, fn, job: CompileJob, wait: bool) -> str:
    try:
        return func(fn, job, wait)
    except Exception as exc:
        return f"{job.label}: {type(exc).__name__}: {exc}"


# --- timing: one config at a time per device ---------------------------------------------------


def device_name() -> str:
    """A name for the GPU this process times on that is the same in every process that sees it:
    its UUID when torch is loaded, else the visible-devices token of the current device."""
    torch = sys.modules.get("torch")
    index = 0
    if torch is not None:
        try:
            index = torch.cuda.current_device()
            uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
            if uuid:
                return f"gpu-{uuid}"
        except Exception:
            pass
    tokens = [t.strip() for t in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if t.strip()]
    token = tokens[index] if index < len(tokens) else str(index)
    return f"gpu-{token}"


class DeviceTimingLock:
    """Exclusive ``flock`` on ``<dir>/<device name>.lock`` for the time a config is timed.
    Re-entrant within a process; threads of one process take turns."""

    def __init__(self, lock_dir: str):
        self.lock_dir = Path(lock_dir)
        self._file = None
        self._depth = 0
        self._thread_lock = threading.RLock()
        self.waited_s = 0.0

    def path(self) -> Path:
        name = re.sub(r"[^A-Za-z0-9._-]", "_", device_name())
        return self.lock_dir / f"{name}.lock"

    def __enter__(self):
        self._thread_lock.acquire()
        if self._depth == 0:
            if self._file is None:
                self.lock_dir.mkdir(parents=True, exist_ok=True)
                self._file = open(self.path(), "a")
            start = time.perf_counter()
            fcntl.flock(self._file, fcntl.LOCK_EX)
            self.waited_s += time.perf_counter() - start
        self._depth += 1
        return self

    def __exit__(self, *exc):
        self._depth -= 1
        if self._depth == 0:
            fcntl.flock(self._file, fcntl.LOCK_UN)
        self._thread_lock.release()
        return False


_timing_lock: Optional[DeviceTimingLock] = None


def device_timing_lock():
    """The process's device timing lock when ``WARMUP_DEVICE_LOCK_DIR`` is set, else a no-op."""
    global _timing_lock
    lock_dir = os.environ.get(ENV_LOCK_DIR, "").strip()
    if not lock_dir:
        return contextlib.nullcontext()
    if _timing_lock is None or str(_timing_lock.lock_dir) != lock_dir:
        _timing_lock = DeviceTimingLock(lock_dir)
    return _timing_lock


# --- wiring into Triton's Autotuner (what the harness does on load) ----------------------------


def install(log=None) -> bool:
    """Hooks ``Autotuner.prune_configs`` (called on a new key, right before the sweep, by
    Triton's tuner and by subclasses such as FlagGems' LibTuner) to precompile the pruned configs,
    and ``Autotuner._bench`` to load a config's kernel outside the timing lock, then time it
    inside. Returns False when already installed or when there is nothing to do."""
    from triton.runtime.autotuner import Autotuner

    mode = mode_from_env()
    locking = bool(os.environ.get(ENV_LOCK_DIR, "").strip())
    if getattr(Autotuner, "_warmup_precompile", None) or (mode == "off" and not locking):
        return False
    log = log or _stderr_logger()
    original_prune = Autotuner.prune_configs
    original_bench = Autotuner._bench

    def prune_configs(self, kwargs, *rest, **more):
        configs = original_prune(self, kwargs, *rest, **more)
        if mode != "off" and len(configs) > 1:
            try:
                report = precompile(self, configs, (), {**(self.nargs or {}), **kwargs}, mode=mode)
                log(report.line())
                for error in report.errors[:3]:
                    log(f"{TAG}   {error}")
            except Exception as exc:  # precompiling is an optimization; the sweep still runs
                log(f"{TAG} precompile failed, the sweep compiles as usual: {type(exc).__name__}: {exc}")
        return configs

    def _bench(self, *args, config, **meta):
        _load(self, args, config, meta)
        with device_timing_lock():
            return original_bench(self, *args, config=config, **meta)

    Autotuner.prune_configs = prune_configs
    Autotuner._bench = _bench
    Autotuner._warmup_precompile = (original_prune, original_bench)
    return True


def _stderr_logger():
    """Writes to the stderr this process has now. Under pytest that is the real one when install()
    runs from a configure hook, while a test's own output is captured: the report lines then reach
    the log even of a test that passes."""
    fd = os.dup(2)

    def log(line: str) -> None:
        os.write(fd, (line + "\n").encode("utf-8", "replace"))

    return log


def uninstall() -> None:
    from triton.runtime.autotuner import Autotuner

    saved = getattr(Autotuner, "_warmup_precompile", None)
    if saved:
        Autotuner.prune_configs, Autotuner._bench = saved
        del Autotuner._warmup_precompile


def _load(autotuner, args, config, meta) -> None:
    """Compiles (or loads from the cache) a config's kernel without launching it, so that the
    timing lock is held for timing only. Errors are left for the timed launch to meet."""
    current = dict(meta, **config.all_kwargs())
    current["warmup"] = True
    current.setdefault("grid", None)
    try:
        if config.pre_hook is not None:
            config.pre_hook({**(autotuner.nargs or {}), **current})
        autotuner.fn.run(*args, **current)
    except Exception:
        pass


def iter_reports(text: str) -> Iterator[dict]:
    """Parses the report lines out of a log, for the benchmark scripts."""
    pattern = re.compile(
        re.escape(TAG) + r" (\S+): (\d+) configs, (\d+) compiled, (\d+) cache hits \((\d+) after waiting"
        r" for a sibling\), (\d+) already loaded, (\d+) failed; (\w+) x(\d+), capture ([\d.]+)s, compile ([\d.]+)s"
    )
    for m in pattern.finditer(text):
        yield {
            "kernel": m.group(1),
            "configs": int(m.group(2)),
            "compiled": int(m.group(3)),
            "hits": int(m.group(4)),
            "deferred": int(m.group(5)),
            "in_memory": int(m.group(6)),
            "failed": int(m.group(7)),
            "mode": m.group(8),
            "workers": int(m.group(9)),
            "capture_s": float(m.group(10)),
            "compile_s": float(m.group(11)),
        }
