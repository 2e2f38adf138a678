"""Where compile jobs run, and only where that pays: worker processes (forked from the session,
else spawned), threads, or the caller; a round of jobs waits a bounded time; the pool's processes
end with it. How its worker processes start and end is worker_processes.py.

Why processes: much of Triton's front end holds the GIL. On 2 H200s with 32 CPUs (2026-11-30), 64
configs of a matmul compiled in 19.5 s through Triton's own path, 2.7 s in 16 threads, 1.24 s in
16 started processes (0.86 s in 32, about 2 s for a pool that starts cold). Why forked: a spawned
worker imports torch and the kernels' library again (16 workers on a GPU host with FlagGems: 10.6
s), where 16 forked ones were running in 0.12 s, the session's modules in them already. A forked
worker never touches the device (worker.start_forked). Why not always: a pool costs its
start-up, which a key with little new work never earns back (FORK_POOL_START_S, POOL_START_S).

Standard library only when imported; Triton is imported where a job runs.
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from typing import Any

from . import worker, worker_processes
from .cache_entries import Outcome, compile_job, is_cached
from .capture import CompileJob
from .settings import DEFAULT_TIMEOUT_S, TIMEOUT
from .worker_processes import fork_unsafe

# A pool not running yet is started for a key whose compile work in this process (its first new
# config's seconds times their number) would reach its start-up; less is compiled here, one by one.
#
# Spawned: measured here (2 CPUs, tests/compile_fixture/measure_threshold.py, 2026-12-01, Triton
# 3.6, 0.05 to 0.1 s a config): n configs in this process 0.08 s (1), 0.20 (2), 0.38 (4), 0.53 (8),
# 0.95 (16), 1.58 (32), against 1.42 to 2.50 s for a pool of 2 started cold for the key (1.53 s for
# 32): the pool pays from about 1.5 s of work, its start-up (spawn, import triton) when it imports
# no torch.
POOL_START_S = 1.5
# Forked: measured on the GPU host (one H200, 16 CPUs, 2026-12-02, Triton 3.6, torch 2.11 and
# FlagGems 5.0.2 imported and CUDA started first, as in a benchmark session; BENCHMARKS.md, "A pool
# that starts at once"): 16 workers forked in 0.09 s, and a pool forked for the key paid from 0.40 s
# of work in the session's process (n=8: 0.40 s against 0.26 s; not at n=4: 0.22 s against 0.24 s).
# On the 2-CPU development machine it paid only from about 1 s: there its 2 busy CPUs limit it.
FORK_POOL_START_S = 0.4
# A forked pool not running yet is started at once, with no config compiled here first to learn a
# compile's seconds, for a key of at least this many new configs. That first compile held the rest
# back by a whole compile: FlagGems' addmm's first key (8 configs, one H200) spent 1.18 s here
# (one config compiled, then the pool forked) before its other seven compiled in the pool. At the
# cheapest compile measured on the GPU host (0.05 s a config, above), a pool forked for 4 configs
# costs 0.24 s against 0.22 s here, and for 8, 0.26 s against 0.40 s: from 4 on, starting at once
# loses at most 0.02 s.
FORK_AT_ONCE = 4
CLOSE_GRACE_S = 2.0  # at the end, how long a worker process may finish what it does before it is killed


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
    """Where compile jobs run: processes (forked from this one, else spawned), threads, or, with one
    worker, the caller.

    A round of jobs waits for its results at most `timeout_s` with none coming (a worker stuck in
    its imports or in a compile): the pool is then `stuck`, its worker processes are killed (a
    thread cannot be), and the jobs not done are left to Triton. A worker that dies leaves the
    key's jobs it had not done to Triton, and the next key starts new workers."""

    def __init__(self, mode: str, workers: int, preload: tuple[str, ...] = (), timeout_s: float = DEFAULT_TIMEOUT_S,
                 start_method: str = "fork"):
        self.mode = mode if workers > 1 else "inline"  # as the reports name it
        self.workers = workers
        self.preload = preload
        self.timeout_s = timeout_s
        # Why workers are spawned though forking was asked for (said in the opening line), or None.
        self.fork_unsafe = fork_unsafe() if self.mode == "processes" and start_method == "fork" else None
        self.start_method = "fork" if start_method == "fork" and self.fork_unsafe is None else "spawn"
        self.stuck = False
        self.waited_s = 0.0  # in the last run: seconds the caller waited for the pool's results
        self._starting: list[cf.Future] = []
        self._processes: list[Any] = []  # the running pool's worker processes
        self._death = ""  # how the last pool's worker died, for the lines
        self._executor: cf.Executor | None = None

    @property
    def forked(self) -> bool:
        return self.mode == "processes" and self.start_method == "fork"

    def starts_at_once(self, new: int) -> bool:
        """Whether a key of `new` configs to compile starts this pool, not running yet, without
        compiling one here first to learn whether the pool pays."""
        return self.forked and new >= FORK_AT_ONCE

    @property
    def start_s(self) -> float:
        """The work in this process from which starting the pool for a key pays."""
        return FORK_POOL_START_S if self.forked else POOL_START_S

    def describe(self) -> str:
        """The pool as the opening line names it: `processes (fork) x16`, `threads x8`."""
        if self.mode != "processes":
            return f"{self.mode} x{self.workers}"
        how = self.start_method + (f": {self.fork_unsafe}" if self.fork_unsafe else "")
        preload = (f" (each worker imports {', '.join(self.preload)} first)"
                   if self.start_method == "spawn" and self.preload else "")
        return f"processes ({how}) x{self.workers}{preload}"

    def _get(self) -> cf.Executor:
        """The running pool, started now if it is not (every worker process at once: forked ones
        are running as this returns; spawned ones import while the caller goes on)."""
        if self._executor is None:
            if self.workers == 1:
                self._executor = _Inline()
            elif self.mode == "processes":
                self._executor, self._starting, self._processes = worker_processes.start(
                    self.workers, self.forked, self.preload)
            else:
                self._executor = cf.ThreadPoolExecutor(self.workers, thread_name_prefix="warmup-compile")
        return self._executor

    def start(self) -> None:
        """Starts every worker process now, without waiting for a spawned one: its imports then
        overlap whatever the caller does next."""
        self._get()

    def run(self, jobs: list[tuple[Any, CompileJob]]) -> tuple[list[Outcome | str], int]:
        """Each job's outcome (an Outcome, or why it failed), and how many waited for a sibling.

        Processes only where they pay: jobs found in the kernel cache are settled here first; the rest
        are compiled here one by one unless the pool is running, or is forked and they are
        FORK_AT_ONCE or more, or their work (the first one's seconds times their number) reaches
        the pool's start-up (`start_s`); with the pool the caller compiles from the end of the list
        while the workers still start up, so that it never waits for a worker's start-up to do
        what it could do itself."""
        self.waited_s = 0.0
        outcomes = [Outcome.FOUND if self._cached(fn, job) else Outcome.BUSY for fn, job in jobs]
        todo = [i for i, outcome in enumerate(outcomes) if outcome == Outcome.BUSY]
        for i, outcome in zip(todo, self._first_round([jobs[i] for i in todo])):
            outcomes[i] = outcome
        busy = [i for i, outcome in enumerate(outcomes) if outcome == Outcome.BUSY]
        for i, outcome in zip(busy, self._busy_round([jobs[i] for i in busy])):
            outcomes[i] = outcome
        return outcomes, len(busy)

    def _cached(self, fn: Any, job: CompileJob) -> bool:
        try:
            return is_cached(fn, job)
        except Exception:  # the compile meets it again, and says it
            return False

    def _first_round(self, jobs: list[tuple[Any, CompileJob]]) -> list[Outcome | str]:
        if self.mode != "processes" or self.stuck or not jobs:
            return self._round(jobs, wait=False)
        # Running (a record session starts it early), or worth starting now (_shared starts it).
        if self._executor is not None or self.starts_at_once(len(jobs)):
            return self._shared(jobs)
        start = time.perf_counter()
        first = self._here(jobs[0])
        if (len(jobs) - 1) * (time.perf_counter() - start) < self.start_s:
            return [first, *(self._here(job) for job in jobs[1:])]
        self.start()
        return [first, *self._shared(jobs[1:])]

    def _here(self, job: tuple[Any, CompileJob]) -> Outcome | str:
        """One job compiled in the caller, never waiting for a sibling."""
        fn, what = job
        try:
            return compile_job(fn, what, wait=False)
        except Exception as exc:
            return f"{what.label}: {type(exc).__name__}: {exc}"

    def _shared(self, jobs: list[tuple[Any, CompileJob]]) -> list[Outcome | str]:
        """The jobs in the workers from the start of the list and, while the workers still start up,
        in the caller from its end (once they run, one more compile here would only share their
        CPUs); a job the caller finds another process compiling is left to it (a worker of its own,
        or a sibling)."""
        executor = self._get()
        futures = [executor.submit(worker.compile_in_worker, job, False) for _, job in jobs]
        mine: dict[int, Outcome | str] = {}
        for i in reversed(range(len(jobs))):
            if self._started():
                break
            if futures[i].done():
                continue
            futures[i].cancel()  # a job no worker took yet; one taken finds the caller's compile
            outcome = self._here(jobs[i])
            if outcome != Outcome.BUSY:
                mine[i] = outcome
        theirs = [i for i in range(len(jobs)) if i not in mine and not futures[i].cancelled()]
        outcomes = dict(mine)
        outcomes.update(zip(theirs, self._collect(executor, [futures[i] for i in theirs],
                                                  [jobs[i][1] for i in theirs])))
        return [outcomes.get(i, Outcome.BUSY) for i in range(len(jobs))]

    def _busy_round(self, jobs: list[tuple[Any, CompileJob]]) -> list[Outcome | str]:
        """Jobs another process was compiling, waited for: in the pool when it runs, else here,
        asking again until `timeout_s` passed."""
        if self._executor is not None or self.mode != "processes":
            return self._round(jobs, wait=True)
        outcomes = []
        for job in jobs:
            deadline = time.monotonic() + self.timeout_s
            outcome = self._here(job)
            while outcome == Outcome.BUSY and time.monotonic() < deadline:
                time.sleep(0.05)
                outcome = self._here(job)
            outcomes.append(self._silent(job[1]) if outcome == Outcome.BUSY else outcome)
        return outcomes

    def _round(self, jobs: list[tuple[Any, CompileJob]], wait: bool) -> list[Outcome | str]:
        if not jobs:
            return []
        if self.stuck:
            return [self._silent(job) for _, job in jobs]
        executor = self._get()
        if isinstance(executor, cf.ProcessPoolExecutor):
            futures = [executor.submit(worker.compile_in_worker, job, wait) for _, job in jobs]
        else:
            futures = [executor.submit(compile_job, fn, job, wait) for fn, job in jobs]
        return self._collect(executor, futures, [job for _, job in jobs])

    def _collect(self, executor: cf.Executor, futures: list[cf.Future], jobs: list[CompileJob]) -> list[Outcome | str]:
        """The futures' outcomes, waiting at most `timeout_s` with none coming (then stopping the pool)."""
        if not futures:
            return []
        start = time.perf_counter()
        pending, silent = set(futures), set()
        while pending:
            done, pending = cf.wait(pending, timeout=self.timeout_s, return_when=cf.FIRST_COMPLETED)
            if not done:
                silent = pending
                self._stop(executor)
                break
        self.waited_s += time.perf_counter() - start
        return [self._silent(job) if future in silent else self._outcome(future, job)
                for future, job in zip(futures, jobs)]

    def _stop(self, executor: cf.Executor) -> None:
        """Gives up on workers that made no progress in `timeout_s`: kills the processes, leaves a
        thread to finish on its own."""
        self.stuck = True
        self._executor = None
        worker_processes.end(executor, grace_s=0.0)

    def _silent(self, job: CompileJob) -> Outcome | str:
        return f"{job.label}: no compile worker answered in {self.timeout_s:g}s ({TIMEOUT})"

    def _outcome(self, future: cf.Future, job: CompileJob) -> Outcome | str:
        try:
            return future.result()
        except cf.process.BrokenProcessPool:
            if self._executor is not None:  # the first job to meet it: a worker died (killed, out of memory)
                self._death = worker_processes.how_ended(self._processes)
                self.close()  # the next key starts a new pool
            return f"{job.label}: a compile worker died ({self._death}); the next key starts new workers"
        except Exception as exc:
            return f"{job.label}: {type(exc).__name__}: {exc}"

    def _started(self) -> bool:
        """Whether every worker process finished its start-up (a pool not started by `start` counts
        as started: nothing tells)."""
        return all(future.done() for future in self._starting)

    def wait_started(self, timeout_s: float) -> bool:
        """Whether every worker process finished its start-up (its imports) within `timeout_s`."""
        return not cf.wait(self._starting, timeout=timeout_s).not_done

    def close(self) -> None:
        """Cancels what no worker took; a worker process still busy after CLOSE_GRACE_S (a job the
        caller did itself, or one stuck) is killed: nothing it could still do is waited for."""
        executor, self._executor = self._executor, None
        if executor is not None:
            worker_processes.end(executor, grace_s=CLOSE_GRACE_S)
