"""Compiles a new key's configs before the tuner times them, in parallel over the machine's cores
and once across the children that share a Triton cache; and times one config at a time per device.

Why. In a compile-heavy sweep compiling is most of the time, and a tuner compiles its configs one
after another on one core, inside its timing loop: FlagGems' Hopper mm (about 160 configs) spends
28-31 s compiling the first key of each specialization and 2-4 s timing each key. Children that
shard such a sweep each compile every specialization they meet. Here a new key's pruned configs
are compiled first, all at once, into Triton's on-disk cache; the tuner then times them as usual
and each of its launches is a cache hit. Processes beat threads (much of Triton's front end holds
the GIL): on 2 H200s with 32 CPUs (2026-11-30), 64 configs of a matmul compiled in 19.5 s through
Triton's own path, 2.7 s in 16 threads, 1.24 s in 16 started processes (0.86 s in 32, about 2 s
for a pool that starts cold). So a record session starts its pool when the plugin loads: the
workers import Triton (and torch) while pytest collects.

How (Triton 3.4 and later, checked against 3.6):

* capture: each config goes through the JIT's warm-up path (`run(warmup=True)`) with
  `knobs.runtime.jit_cache_hook` answering True: the JIT hands the hook the specialization it would
  compile (what `JITFunction.preload` takes) and compiles nothing. A config's pre-hook runs first
  (FlagGems' TMA hook sets the descriptors' block shapes, which the specialization holds);
* compile: a worker rebuilds the specialization into an `ASTSource` as `preload` does (a process
  imports the kernel's module by name, else by its file's place under sys.path) and compiles it
  with `triton.compile` into the cache;
* once: the worker holds `flock` on the cache entry's folder while it checks and compiles. A
  sibling child sharing the cache that holds it is compiling that very kernel: the job goes last
  and then waits, to find the entry compiled;
* timing: a config's kernel is loaded (a cache hit) before it is timed, and timed holding `flock`
  on `<lock folder>/<device>.lock`, so that children sharing a GPU time one config at a time while
  their compiling overlaps.

Nothing here fails a sweep: a config that could not be compiled ahead is compiled by Triton as it
always is, and said. The settings are docs/CONTRACT.md's ("The record/replay harness").
Importing this module imports only the standard library.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import fcntl
import hashlib
import importlib
import importlib.util
import json
import multiprocessing
import os
import re
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from collections.abc import Iterator, Mapping

from . import versions
from .env import ProtocolError

MODE = "WARMUP_HARNESS_PRECOMPILE"
WORKERS = "WARMUP_HARNESS_COMPILE_WORKERS"
PRELOAD = "WARMUP_HARNESS_COMPILE_PRELOAD"
LOCK_DIR = "WARMUP_HARNESS_DEVICE_LOCK_DIR"
CHILDREN = "WARMUP_SPAWN_CHILDREN"  # set by warmup-spawn: children running at once on this machine
MODES = ("processes", "threads", "off")
MAX_WORKERS = 32  # the default's cap: past it a pool costs more memory than it saves time
LOCK_FOLDER = "warmup-harness-device-locks"

# What a compile job came to: compiled here, found compiled, or held by another process.
COMPILED, FOUND, BUSY = "compiled", "found", "busy"


# --- settings ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    mode: str  # processes, threads or off
    workers: int
    preload: tuple[str, ...]  # modules a worker process imports when it starts
    lock_dir: Path
    shared_lock_dir: bool  # the default folder, which every user's runs share

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Reads the settings; raises ProtocolError naming a variable whose value is unusable."""
        mode = environ.get(MODE, "").strip().lower() or "processes"
        if mode not in MODES:
            raise ProtocolError(f"{MODE}={mode!r} is not one of {', '.join(MODES)}")
        chosen_dir = environ.get(LOCK_DIR, "").strip()
        lock_dir = Path(os.path.abspath(chosen_dir)) if chosen_dir else Path(tempfile.gettempdir()) / LOCK_FOLDER
        return cls(mode, _workers(environ), _preload(environ), lock_dir, not chosen_dir)


def _whole(environ: Mapping[str, str], name: str) -> int | None:
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ProtocolError(f"{name}={raw!r} is not a whole number of at least 1")
    return int(raw)


def _workers(environ: Mapping[str, str]) -> int:
    """WARMUP_HARNESS_COMPILE_WORKERS, else this process's CPUs shared among the children that run
    at once (WARMUP_SPAWN_CHILDREN), at most MAX_WORKERS."""
    chosen = _whole(environ, WORKERS)
    if chosen:
        return chosen
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cpus // (_whole(environ, CHILDREN) or 1)))


def _preload(environ: Mapping[str, str]) -> tuple[str, ...]:
    """WARMUP_HARNESS_COMPILE_PRELOAD (comma-separated; empty: nothing), else torch when it is
    installed: a kernel's module almost always imports it, and a worker pays that import once,
    while the benchmark starts, instead of on the first key."""
    raw = environ.get(PRELOAD)
    if raw is None:
        return ("torch",) if importlib.util.find_spec("torch") else ()
    return tuple(name.strip() for name in raw.split(",") if name.strip())


# --- capture: what the JIT would compile -------------------------------------------------------


@dataclass(frozen=True)
class CompileJob:
    """One (kernel, specialization, config) to compile; picklable, for a worker process."""

    module: str
    qualname: str
    source_file: str | None
    fn_cache_key: str
    specialization: str  # JSON, as the JIT serializes it for preload()
    target: Any  # triton.backends.compiler.GPUTarget
    env_vars: dict  # the cache-invalidating environment the caller's launches are keyed with
    cache_dir: str
    sys_path: tuple[str, ...]
    label: str  # the config, for messages


@dataclass
class Capture:
    jobs: list[tuple[Any, CompileJob]] = field(default_factory=list)  # (JITFunction, job)
    errors: list[str] = field(default_factory=list)
    loaded: int = 0  # configs whose kernel this process holds already


def jit_function(kernel: Any) -> Any:
    """The JITFunction under a tuner, a heuristics layer or a library's wrapper (`.fn` chain)."""
    from triton.runtime.jit import JITFunction

    fn = kernel
    for _ in range(16):
        if isinstance(fn, JITFunction):
            return fn
        fn = getattr(fn, "fn", None)
    raise TypeError(f"no triton.jit function under {kernel!r}")


def config_label(config: Any) -> str:
    return re.sub(r",?\s*pre_hook: [^,]*", "", str(config))


def _launch_kwargs(config: Any, launch: dict) -> dict:
    """A config's launch as the tuner's timing makes it, but warm-up only: compile, never run."""
    current = {**launch, **config.all_kwargs(), "warmup": True}
    current.setdefault("grid", None)
    return current


def capture(tuner: Any, configs: list, launch: dict) -> Capture:
    """Runs each config through the JIT's warm-up path with a cache hook that takes the
    specialization and skips the compile. `launch` holds every argument by name."""
    from triton import knobs
    from triton._C.libtriton import get_cache_invalidating_env_vars
    from triton.runtime.driver import driver

    common = dict(target=driver.active.get_current_target(), env_vars=get_cache_invalidating_env_vars(),
                  cache_dir=str(knobs.cache.dir), sys_path=tuple(sys.path))
    out = Capture()
    taken: list[tuple[Any, str]] = []

    def hook(*, fn, compile, **_):  # noqa: A002
        taken.append((fn.jit_function, compile["specialization_data"]))
        return True

    previous, knobs.runtime.jit_cache_hook = knobs.runtime.jit_cache_hook, hook
    try:
        for config in configs:
            taken.clear()
            current = _launch_kwargs(config, launch)
            try:
                if config.pre_hook is not None:
                    config.pre_hook(current)
                tuner.fn.run(**current)
            except Exception as exc:  # the tuner's sweep meets it again, and handles it its way
                out.errors.append(f"{config_label(config)}: {type(exc).__name__}: {exc}")
                continue
            if not taken:
                out.loaded += 1
            out.jobs.extend((fn, _job(fn, spec, config_label(config), common)) for fn, spec in taken)
    finally:
        knobs.runtime.jit_cache_hook = previous
    return out


def _job(fn: Any, specialization: str, label: str, common: dict) -> CompileJob:
    return CompileJob(module=fn.module, qualname=fn.fn.__qualname__,
                      source_file=getattr(fn.fn.__code__, "co_filename", None), fn_cache_key=fn.cache_key,
                      specialization=specialization, label=label, **common)


# --- compile: one job, here or in a worker -----------------------------------------------------


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _rebuild(fn: Any, job: CompileJob) -> tuple[Any, Any, Any]:
    """`JITFunction.preload`'s reconstruction of the compile's source, without asking a driver."""
    import triton.language as tl
    from triton.compiler import ASTSource, make_backend

    data = json.loads(job.specialization)
    constexprs = {
        tuple(k): tl.dtype(v) if isinstance(v, str) and tl.dtype.is_dtype(v)
        else tl.constexpr(v["constexpr"]) if isinstance(v, dict) and "constexpr" in v else v
        for k, v in zip(data["constant_keys"], data["constant_vals"])
    }
    attrs = dict(zip(map(tuple, data["attrs_keys"]), data["attrs_vals"]))
    signature = {k: _tuples(v) for k, v in data["signature"].items()}
    backend = make_backend(job.target)
    options = backend.parse_options({k: _tuples(v) for k, v in data["options"].items()})
    return ASTSource(fn, signature, constexprs, attrs), backend, options


@contextlib.contextmanager
def _entry_lock(folder: Path, wait: bool) -> Iterator[bool]:
    """`flock` on a cache entry's folder (Triton's FileCacheManager keeps each entry in a folder of
    its own, so no lock file is left behind): True when held, False when another holds it and
    `wait` is off."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing drops the lock


def compile_job(fn: Any, job: CompileJob, wait: bool) -> str:
    """Compiles one job into the Triton cache unless it is there: COMPILED, FOUND, or BUSY (another
    process compiles it now, and `wait` is off)."""
    from triton.runtime.cache import get_cache_manager

    src, backend, options = _rebuild(fn, job)
    digest = hashlib.sha256(versions.cache_key(src, backend, options, job.env_vars).encode("utf-8")).hexdigest()
    entry = get_cache_manager(digest)
    # Another cache manager than Triton's files (TRITON_CACHE_MANAGER) gets a folder of locks.
    folder = getattr(entry, "cache_dir", None) or os.path.join(job.cache_dir, ".warmup-locks", digest)
    with _entry_lock(Path(folder), wait) as held:
        if not held:
            return BUSY
        metadata = f"{src.name[:150]}.json"
        group = entry.get_group(metadata)
        if group and metadata in group:
            return FOUND
        versions.compile_source(src, job.target, options.__dict__, job.env_vars)
        return COMPILED


def _resolve(job: CompileJob) -> Any:
    """In a worker: the job's JITFunction, from its module imported by name, else by the dotted
    name its file has under an entry of sys.path (FlagGems imports its Hopper ops as `hopper.ops.mm`
    through a sys.path entry it removes again; the same file is
    `flag_gems.runtime.backend._nvidia.hopper.ops.mm`). Triton's cache key does not depend on the
    module's name but on the source and what it uses, and that is checked."""
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
        raise RuntimeError(
            f"{job.module}.{job.qualname} imported in a worker is not the caller's (its cache key differs)"
        )
    return fn


def _import_by_path(job: CompileJob) -> Any:
    path = Path(job.source_file or "").resolve()
    names = set()
    for entry in sys.path:
        with contextlib.suppress(ValueError, OSError):
            names.add(".".join(path.relative_to(Path(entry or ".").resolve()).with_suffix("").parts))
    for name in sorted(names, key=lambda n: -n.count(".")):
        with contextlib.suppress(ImportError):
            return importlib.import_module(name)
    raise ImportError(f"cannot import {job.module} (from {job.source_file}) in a compile worker")


def _compile_in_worker(job: CompileJob, wait: bool) -> str:
    os.environ["TRITON_CACHE_DIR"] = job.cache_dir
    missing = [entry for entry in job.sys_path if entry not in sys.path]
    sys.path[:0] = missing  # the caller's folders that pytest added after this worker started
    return compile_job(_resolve(job), job, wait)


def _start_worker(preload: tuple[str, ...]) -> None:
    """A worker's first act: the imports every job needs. One that fails is said and skipped: the
    job that needs the module meets the error itself and is left to Triton."""
    for name in ("triton", "triton.compiler", *preload):
        try:
            importlib.import_module(name)
        except Exception as exc:
            print(f"[warmup-harness] compile worker {os.getpid()}: cannot import {name}: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)


def _ready() -> int:
    return os.getpid()


# --- pools -------------------------------------------------------------------------------------


class _Inline(cf.Executor):
    """Runs each job as it is submitted, in the caller's thread: a pool of one worker."""

    def submit(self, fn, /, *args, **kwargs):
        future: cf.Future = cf.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future


class CompilePool:
    """Where compile jobs run: spawned processes, threads, or, with one worker, the caller."""

    def __init__(self, mode: str, workers: int, preload: tuple[str, ...] = ()):
        self.mode = mode if workers > 1 else "inline"  # as the reports name it
        self.workers = workers
        self.preload = preload
        self._executor: cf.Executor | None = None

    def _get(self) -> cf.Executor:
        if self._executor is None:
            if self.workers == 1:
                self._executor = _Inline()
            elif self.mode == "processes":
                self._executor = cf.ProcessPoolExecutor(
                    self.workers, mp_context=multiprocessing.get_context("spawn"),
                    initializer=_start_worker, initargs=(self.preload,))
            else:
                self._executor = cf.ThreadPoolExecutor(self.workers, thread_name_prefix="warmup-compile")
        return self._executor

    def start(self) -> None:
        """Starts every worker process now, without waiting for it (a pool starts its processes as
        jobs come): their imports then overlap whatever the caller does next."""
        executor = self._get()
        if isinstance(executor, cf.ProcessPoolExecutor):
            for _ in range(self.workers):
                executor.submit(_ready)

    def run(self, jobs: list[tuple[Any, CompileJob]]) -> tuple[list[str], int]:
        """Each job's outcome (COMPILED, FOUND or why it failed), and how many waited for a sibling."""
        outcomes = self._round(jobs, wait=False)
        busy = [i for i, outcome in enumerate(outcomes) if outcome == BUSY]
        for i, outcome in zip(busy, self._round([jobs[i] for i in busy], wait=True)):
            outcomes[i] = outcome
        return outcomes, len(busy)

    def _round(self, jobs: list[tuple[Any, CompileJob]], wait: bool) -> list[str]:
        executor = self._get()
        if isinstance(executor, cf.ProcessPoolExecutor):
            futures = [executor.submit(_compile_in_worker, job, wait) for _, job in jobs]
        else:
            futures = [executor.submit(compile_job, fn, job, wait) for fn, job in jobs]
        return [self._outcome(future, job) for future, (_, job) in zip(futures, jobs)]

    def _outcome(self, future: cf.Future, job: CompileJob) -> str:
        try:
            return future.result()
        except cf.process.BrokenProcessPool:
            self.close()  # a worker died (killed, out of memory): the next key starts a new pool
            return f"{job.label}: a compile worker died"
        except Exception as exc:
            return f"{job.label}: {type(exc).__name__}: {exc}"

    def close(self) -> None:
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)


# --- one key -----------------------------------------------------------------------------------


@dataclass
class Report:
    kernel: str
    configs: int
    mode: str
    workers: int
    compiled: int = 0
    found: int = 0  # in the cache already, or compiled by a sibling meanwhile
    waited: int = 0  # of those found, the ones a sibling was compiling when asked
    loaded: int = 0  # in this process's memory already
    left: int = 0  # not compiled ahead: Triton compiles them in the sweep
    capture_s: float = 0.0
    compile_s: float = 0.0
    errors: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (f"precompile {self.kernel}: {self.configs} configs, {self.compiled} compiled, {self.found} found "
                f"compiled ({self.waited} after waiting for a sibling), {self.loaded} already loaded, {self.left} "
                f"left to Triton; {self.mode} x{self.workers}, capture {self.capture_s:.2f}s, "
                f"compile {self.compile_s:.2f}s")


REPORT_LINE = re.compile(
    r"precompile (?P<kernel>\S+): (?P<configs>\d+) configs, (?P<compiled>\d+) compiled, (?P<found>\d+) found "
    r"compiled \((?P<waited>\d+) after waiting for a sibling\), (?P<loaded>\d+) already loaded, (?P<left>\d+) left "
    r"to Triton; (?P<mode>\w+) x(?P<workers>\d+), capture (?P<capture_s>[\d.]+)s, compile (?P<compile_s>[\d.]+)s")


def parse_reports(text: str) -> list[dict]:
    """The report lines in a log, as dicts of Report's fields (for the benchmark scripts)."""
    return [{k: v if k in ("kernel", "mode") else float(v) if k.endswith("_s") else int(v)
             for k, v in m.groupdict().items()} for m in REPORT_LINE.finditer(text)]


def precompile(tuner: Any, configs: list, launch: dict, pool: CompilePool, kernel: str = "") -> Report:
    """Compiles `configs` of `tuner` for one launch (`launch`: every argument by name, as the tuner's
    `nargs` and its run's keyword arguments hold them) into the Triton cache, in `pool`."""
    report = Report(kernel or _name(tuner), len(configs), pool.mode, pool.workers)
    start = time.perf_counter()
    taken = capture(tuner, configs, launch)
    report.capture_s = time.perf_counter() - start
    outcomes, report.waited = pool.run(taken.jobs)
    report.compile_s = time.perf_counter() - start - report.capture_s
    report.loaded = taken.loaded
    report.compiled = outcomes.count(COMPILED)
    report.found = outcomes.count(FOUND)
    report.errors = taken.errors + [o for o in outcomes if o not in (COMPILED, FOUND)]
    report.left = len(report.errors)
    return report


def _name(tuner: Any) -> str:
    fn = jit_function(tuner)
    return f"{fn.module}:{fn.fn.__qualname__}"


def load(tuner: Any, args: tuple, config: Any, meta: dict) -> None:
    """Compiles, or loads from the cache, a config's kernel without launching it, so that the
    timing lock is held for timing only. An error is left for the timed launch to meet."""
    current = _launch_kwargs(config, meta)
    with contextlib.suppress(Exception):
        if config.pre_hook is not None:
            config.pre_hook({**(tuner.nargs or {}), **current})
        tuner.fn.run(*args, **current)


def cannot_compile() -> str | None:
    """Why Triton cannot compile ahead here (too old, or no backend for this process's device),
    or None."""
    try:
        from triton import knobs
        from triton.compiler import make_backend
        from triton.runtime.driver import driver
    except ImportError as exc:
        return f"this Triton has no knobs.runtime.jit_cache_hook (3.4 and later have): {exc}"
    if not hasattr(knobs.runtime, "jit_cache_hook"):
        return "this Triton has no knobs.runtime.jit_cache_hook (3.4 and later have)"
    try:
        make_backend(driver.active.get_current_target())
    except Exception as exc:
        return f"Triton cannot compile for this process's device ({type(exc).__name__}: {exc})"
    return None


def stub_device_set() -> bool:
    """Whether the benchmark set Triton's driver itself (`driver.set_active`, as a CPU stand-in
    does) to one whose device Triton cannot compile for. The default driver is not created to ask:
    that would start the device before the benchmark does."""
    from triton.runtime.driver import driver

    return versions.driver_set_by_benchmark(driver) and cannot_compile() is not None


# --- timing: one config at a time per device ---------------------------------------------------


def device_token() -> str:
    """The device this process times on, named alike in every process that sees it: its UUID when
    torch is loaded, else its token in CUDA_VISIBLE_DEVICES, else its index."""
    torch = sys.modules.get("torch")
    index = 0
    if torch is not None:
        with contextlib.suppress(Exception):
            index = torch.cuda.current_device()
            uuid = str(getattr(torch.cuda.get_device_properties(index), "uuid", "") or "")
            if uuid:
                return f"gpu-{uuid}"
    tokens = [t.strip() for t in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if t.strip()]
    return f"gpu-{tokens[index] if index < len(tokens) else index}"


class DeviceTimingLock:
    """Exclusive `flock` on `<folder>/<device>.lock` while a config is timed. Re-entrant; the
    threads of one process take turns too. A lock file needs only a read descriptor, so one made by
    one user serves every user's runs in the shared default folder (sticky, as /tmp is)."""

    def __init__(self, folder: Path, shared: bool = False):
        self.folder = folder
        self.shared = shared
        self.waited_s = 0.0
        self._files: dict[str, int] = {}
        self._held: int | None = None
        self._depth = 0
        self._mutex = threading.RLock()

    def __enter__(self) -> DeviceTimingLock:
        self._mutex.acquire()
        try:
            if self._depth == 0:
                fd = self._file(device_token())
                start = time.perf_counter()
                fcntl.flock(fd, fcntl.LOCK_EX)
                self.waited_s += time.perf_counter() - start
                self._held = fd
        except BaseException:
            self._mutex.release()
            raise
        self._depth += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        self._depth -= 1
        if self._depth == 0 and self._held is not None:
            fcntl.flock(self._held, fcntl.LOCK_UN)
            self._held = None
        self._mutex.release()

    def path(self, token: str) -> Path:
        return self.folder / f"{re.sub(r'[^A-Za-z0-9._-]', '_', token)}.lock"

    def _file(self, token: str) -> int:
        fd = self._files.get(token)
        if fd is None:
            path = self.path(token)
            try:
                if not self.folder.is_dir():
                    self.folder.mkdir(parents=True, exist_ok=True)
                    if self.shared:
                        with contextlib.suppress(OSError):
                            os.chmod(self.folder, 0o1777)
                fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise RuntimeError(f"warmup-harness: cannot open the device timing lock {path} "
                                   f"({exc.strerror or exc}); set {LOCK_DIR} to a folder you can write") from None
            self._files[token] = fd
        return fd

    def close(self) -> None:
        for fd in self._files.values():
            os.close(fd)
        self._files.clear()


# --- the session's side ------------------------------------------------------------------------

_active: Precompiler | None = None


def device_timing_lock() -> contextlib.AbstractContextManager:
    """The session's device timing lock, for a benchmark's own GPU work in a warmup child (so that a
    sibling sharing the GPU never times a config meanwhile); a no-op outside a session."""
    return _active.timing_lock if _active is not None else contextlib.nullcontext()


class Precompiler:
    """What the autotuner hooks call: `before_timing` on a new key, `bench` around each timing."""

    def __init__(self, settings: Settings, say: Callable[[str], None]):
        global _active
        self.settings = settings
        self._say = say
        self.pool = CompilePool(settings.mode, settings.workers, settings.preload) if settings.mode != "off" else None
        self.timing_lock = DeviceTimingLock(settings.lock_dir, settings.shared_lock_dir)
        self.reports: list[Report] = []
        self._compiles: bool | None = None  # decided at the first key
        _active = self

    def describe(self) -> str:
        pool = self.pool
        compiling = ("precompile off" if pool is None else
                     f"precompile: a new key's configs are compiled ahead, {pool.mode} x{pool.workers}"
                     + (f" (each worker imports {', '.join(pool.preload)} first)"
                        if pool.mode == "processes" and pool.preload else ""))
        return f"{compiling}; configs are timed one at a time per device (locks in {self.settings.lock_dir})"

    def start_early(self) -> None:
        """Starts the pool's workers now (record mode: a sweep is coming), unless the benchmark put
        in a device Triton cannot compile for."""
        if self.pool is not None and not stub_device_set():
            self.pool.start()

    def _usable(self) -> bool:
        if self._compiles is None:
            why = cannot_compile()
            self._compiles = why is None
            if why:
                self._say(f"precompile off: {why}; each config is compiled as it is timed")
        return self._compiles

    def before_timing(self, kernel: str, tuner: Any, configs: list, launch_kwargs: dict) -> None:
        if self.pool is None or len(configs) < 2 or not self._usable():
            return
        try:
            report = precompile(tuner, configs, {**(tuner.nargs or {}), **launch_kwargs}, self.pool, kernel)
        except Exception as exc:
            self._say(f"precompile {kernel}: failed ({type(exc).__name__}: {exc}); the sweep compiles its "
                      f"configs itself")
            return
        self.reports.append(report)
        self._say(report.line())
        if report.errors:
            self._say(f"precompile {kernel}: {report.left} config(s) left to Triton's own compile, the first "
                      f"because {report.errors[0]}")

    def bench(self, tuner: Any, args: tuple, config: Any, meta: dict, time_it: Callable[[], Any]) -> Any:
        if self._compiles:
            load(tuner, args, config, meta)
        with self.timing_lock:
            return time_it()

    def summary(self) -> str | None:
        if not self.reports:
            return None
        total = lambda name: sum(getattr(r, name) for r in self.reports)  # noqa: E731
        return (f"precompile ({self.pool.mode} x{self.pool.workers}): {len(self.reports)} key(s), "
                f"{total('compiled')} configs compiled, {total('found')} found compiled, {total('left')} left to "
                f"Triton, {total('capture_s') + total('compile_s'):.1f}s; {self.timing_lock.waited_s:.1f}s waiting "
                f"for the device's timing lock")

    def close(self) -> None:
        global _active
        if self.pool is not None:
            self.pool.close()
        self.timing_lock.close()
        if _active is self:
            _active = None
