"""The compile pool's worker processes, from the session's side: whether they can be forked here,
starting every one at once (forked, else spawned), how one that died ended, and ending them.
What runs inside a worker is worker.py; what the pool sends them and when is pool.py.

Standard library only when imported.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import gc
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import time
import warnings
from typing import Any

from .. import early_key
from ..stdlib_private import pool_processes
from . import worker

# How long a broken pool's workers are waited for to learn how the first one ended: generous, for a
# loaded machine (1 s was too short there), and spent only when a worker died.
REAP_S = 10.0
FORK_WARNING = r".*use of fork\(\) may lead to deadlocks"  # Python 3.12's DeprecationWarning


def fork_unsafe() -> str | None:
    """Why compile workers cannot be forked here (they are spawned instead), or None."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return "this platform cannot fork"
    if not sys.platform.startswith("linux"):
        return f"forking is unsafe on {sys.platform} (its system libraries are not fork-safe)"
    if sys.version_info < (3, 11):
        return ("Python before 3.11 forks a pool's workers one by one beside the pool's own thread "
                "(cpython#90622)")
    return None


@contextlib.contextmanager
def forking():
    """Python 3.12 and later warn (DeprecationWarning) at every fork of a process that runs
    threads, because a lock another thread holds at that moment stays held in the child. A GPU
    session always runs threads (CUDA's, torch's). A forked compile worker runs only Python, the
    standard library and Triton's compiler, takes no lock of torch's or the driver's, and one that
    hangs anyway is bounded (WARMUP_HARNESS_COMPILE_TIMEOUT). So the warning is ignored around the
    fork, and only there: otherwise pytest lists it under whichever test started the pool, and
    under `-W error` it becomes an exception raised inside os.fork in the session, after the fork
    (CPython 3.12.1 and 3.13.0 drop that exception; checked), which a Python that reported it would
    turn into that test's failure."""
    # The session's objects are frozen for the fork (Python's advice for a fork without exec): a
    # worker's garbage collector then never writes to them, so the pages they are on stay shared
    # instead of being copied into each worker. The session's own collector takes them back at
    # once. A session that froze objects itself keeps its own freezing.
    freezing = gc.get_freeze_count() == 0
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=FORK_WARNING, category=DeprecationWarning)
        if freezing:
            gc.freeze()
        try:
            yield
        finally:
            if freezing:
                gc.unfreeze()


def start(workers: int, forked: bool,
          preload: tuple[str, ...]) -> tuple[cf.ProcessPoolExecutor, list[cf.Future], list[Any]]:
    """A process pool of `workers` with every worker started now (forked ones are running as this
    returns; spawned ones import while the caller goes on), each worker's start-up as a future
    (done once it finished), and its processes (to say how one died)."""
    if forked:
        early_key.wait()  # no thread of the session's runs at the fork, and the workers get the key
        # Every worker lets go of the session's locks before any answers `ready`: each waits at
        # this barrier once it has, so the pool's wait_started cannot return while a worker that
        # has taken no job yet still holds a copy of a claim's descriptor. (A fork pool starts all
        # its workers at the first submit.)
        context = multiprocessing.get_context("fork")
        started = context.Barrier(workers)
        executor = cf.ProcessPoolExecutor(workers, mp_context=context, initializer=worker.start_forked,
                                          initargs=(os.getpid(), started))
        with forking():  # the first submit forks every worker (Python 3.11 and later)
            starting = [executor.submit(worker.ready) for _ in range(workers)]
    else:
        executor = cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                          initializer=worker.start, initargs=(preload, os.getpid()))
        starting = [executor.submit(worker.ready) for _ in range(workers)]
    return executor, starting, pool_processes(executor)


def _ended(process: Any) -> bool:
    """Whether the worker has ended, by its sentinel (is_alive() asks waitpid, which says nothing
    to this thread once another reaped it)."""
    with contextlib.suppress(ValueError, OSError):
        return bool(multiprocessing.connection.wait([process.sentinel], 0))
    return False


def _exit_code(process: Any) -> int | None:
    with contextlib.suppress(ValueError, OSError):
        return process.exitcode
    return None


def how_ended(processes: list[Any]) -> str:
    """How a broken pool's worker ended: `killed by SIGKILL`, `exit status 1`, or `unknown`. The
    pool's thread terminates the others (SIGTERM) once one died, so another ending is said first."""
    codes: list[int] = []
    deadline = time.monotonic() + REAP_S
    for process in processes:
        with contextlib.suppress(ValueError, OSError):
            process.join(max(0.0, deadline - time.monotonic()))  # the pool's thread is ending them
        # The pool's own thread may have reaped this worker first: this thread's wait then got
        # ECHILD and the exit code appears only once that thread has stored it.
        while _exit_code(process) is None and time.monotonic() < deadline and _ended(process):
            time.sleep(0.01)
        code = _exit_code(process)
        if code:
            codes.append(code)
    codes.sort(key=lambda code: code == -signal.SIGTERM)
    if not codes:
        return "unknown"
    if codes[0] > 0:
        return f"exit status {codes[0]}"
    with contextlib.suppress(ValueError):
        return f"killed by {signal.Signals(-codes[0]).name}"
    return f"killed by signal {-codes[0]}"


def end(executor: cf.Executor, grace_s: float) -> None:
    """Ends a pool: cancels what no worker took; a worker process still busy after `grace_s` is
    killed (a thread is left to finish on its own)."""
    if not isinstance(executor, cf.ProcessPoolExecutor):
        executor.shutdown(wait=grace_s > 0, cancel_futures=True)
        return
    processes = pool_processes(executor)  # before shutdown, which drops them
    executor.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + grace_s
    for process in processes:
        # Ended is read from the sentinel, not the pid: the pool's own thread may have reaped the
        # process already, and a pid reaped can be another process's by now.
        with contextlib.suppress(ValueError, OSError):  # a sentinel closed: the process was joined
            if not multiprocessing.connection.wait([process.sentinel], max(0.0, deadline - time.monotonic())):
                process.kill()
                process.join(5)
