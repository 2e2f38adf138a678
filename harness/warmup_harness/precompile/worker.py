"""What runs in a compile worker process: its start-up (forked: letting go of what it must not
keep of the session's; spawned: its imports), and a job's function found in the modules it has,
else by importing its module, by name or by its file's place under sys.path.

No job touches the device: a job carries its target, resolved by the session. A forked worker
also has Triton's driver replaced by one that refuses every question (triton_private.NoDevice):
CUDA cannot be used in a process forked from one that started it. A spawned worker is a new
process, and is left as it was (a preloaded library may ask the device as it is imported).

Standard library only when imported (a spawned worker imports Triton as it starts).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from .cache_entries import Outcome, compile_job
from .capture import CompileJob


PR_SET_PDEATHSIG = 1  # prctl(2)


def start(preload: tuple[str, ...], parent: int) -> None:
    """A spawned worker's first act: the imports every job needs. One that fails is said and
    skipped: the job that needs the module meets the error itself and is left to Triton."""
    _end_with(parent)
    for name in ("triton", "triton.compiler", *preload):
        try:
            importlib.import_module(name)
        except Exception as exc:
            print(f"[warmup-harness] compile worker {os.getpid()}: cannot import {name}: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)


# How long a forked worker waits at the pool's start-up barrier for its siblings.
STARTED_WAIT_S = 60.0


def start_forked(parent: int, started: Any = None) -> None:
    """A forked worker's first act. It has every module the session imported (torch, the kernels'
    library, Triton), so it imports nothing; it lets go of what it must not keep or run of the
    session's: the session's signal handlers (SIGTERM folds the record), the file locks the
    session held at the fork (a claim, a timing lock: the copy of the descriptor would keep the lock
    after the session let it go), and the device (Triton's driver, CUDA's visible devices)."""
    _end_with(parent)
    for signum in signal.valid_signals():
        with contextlib.suppress(OSError, ValueError, TypeError):
            if callable(signal.getsignal(signum)):  # a Python handler of the session's
                signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)
    for fd in _locked_descriptors():
        with contextlib.suppress(OSError):
            os.close(fd)  # closing one descriptor of a flock leaves the session's lock as it was
    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # a CUDA started here anyway would find no device
    _forbid_device()
    if started is not None:  # the pool's barrier: every sibling has let go of the session's locks
        with contextlib.suppress(threading.BrokenBarrierError):  # one died first: it holds nothing
            started.wait(STARTED_WAIT_S)


def _end_with(parent: int) -> None:
    """Linux: the worker is killed when its session ends, however it ends (SIGKILL included),
    so that no worker outlives it holding its pipes or its memory. (PR_SET_PDEATHSIG follows the
    thread that started the worker: the pool is started in the thread that compiles a key.)"""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:  # the session ended before the call above
        os._exit(1)


def _locked_descriptors() -> list[int]:
    """This process's descriptors that hold a file lock (flock or open file description lock), as
    /proc/self/fdinfo lists them; none where there is no /proc."""
    found = []
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc/self/fdinfo"):
            with contextlib.suppress(OSError, ValueError):
                with open(f"/proc/self/fdinfo/{name}") as info:
                    if any(line.startswith("lock:") for line in info):
                        found.append(int(name))
    return found


def _forbid_device() -> None:
    if "triton" in sys.modules:
        with contextlib.suppress(ImportError):  # Triton before 3.4: precompile is off there
            from ..triton_private import forbid_driver

            forbid_driver()


def ready() -> int:
    return os.getpid()


def compile_in_worker(job: CompileJob, wait: bool) -> Outcome:
    from ..triton_private import use_cache_dir

    os.environ["TRITON_CACHE_DIR"] = job.cache_dir
    use_cache_dir(job.cache_dir)
    missing = [entry for entry in job.sys_path if entry not in sys.path]
    sys.path[:0] = missing  # the caller's folders that pytest added after this worker started
    return compile_job(_resolve(job), job, wait)


def _resolve(job: CompileJob) -> Any:
    """The job's JITFunction, from its module imported by name, else by the dotted name its file
    has under an entry of sys.path (FlagGems imports its Hopper ops as `hopper.ops.mm` through a
    sys.path entry it removes again; the same file is
    `flag_gems.runtime.backend._nvidia.hopper.ops.mm`). Triton's cache key does not depend on the
    module's name but on the source and what it uses, and that is checked."""
    from ..triton_private import jit_function

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
