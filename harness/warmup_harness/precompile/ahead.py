"""A key's configs timed as their compiles finish, while the pool's worker processes compile the
rest (`WARMUP_HARNESS_COMPILE_OVERLAP`, on by default).

Why. Compiling a key ahead in the pool and then timing its configs one by one puts the two in
series: the tuner waits for the slowest compile before its first timing. A timing needs only its
own config's kernel, and the device lock keeps timings one at a time per device either way.

How. The key's jobs are captured and looked up in the kernel cache as pool.run does, and its first
round is decided as pool.run decides it (a forked pool not running yet starts at once for
FORK_AT_ONCE new configs, else the first job is compiled here to learn whether the pool pays);
what is left goes to the worker processes without waiting for it. A timing of a config
waits for that config's jobs only (`wait_for`), and a race takes the configs in the order their
compiles finish (`as_compiled`). A job a sibling process is compiling is asked for again with
waiting, as pool.run's second round does; the pool's bound on silence applies to each wait.

Only with worker processes already running, or forked (they run as soon as they are made): a
spawned pool still importing is left to pool.run, where the caller compiles meanwhile, and
threads would hold the GIL against the timed launches. A key found compiled starts nothing and
is timed as without this module. In the key's precompile line (precompiler.py) `compile Ys` is
then the session's own wait outside its timings, not the workers' compile time.
This module is the pool's second caller of its round's parts (`_cached`, `_here`, `_get`,
`_outcome`, `_silent`, `_stop`, `_busy_round`). Standard library only when imported.
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from typing import Any
from collections.abc import Iterator

from . import worker
from .cache_entries import Outcome


class Ahead:
    """One key's compiles under way: which config each job is for, and what each came to."""

    def __init__(self, pool: Any, tuner: Any, configs: list, jobs: list, owners: list[int], report: Any):
        self.pool = pool
        self.tuner = tuner
        self.configs = configs
        self._position: dict[int, int] = {}  # id(config) -> its index (the first, for one listed twice)
        for i, config in enumerate(configs):
            self._position.setdefault(id(config), i)
        self.report = report
        self._jobs = jobs
        self._owners = owners
        self.outcomes: list[Any] = [Outcome.BUSY] * len(jobs)
        self._open: dict[int, set[int]] = {}  # config index -> its jobs not settled
        self._futures: dict[cf.Future, tuple[int, bool]] = {}  # -> (job, whether it waits for a sibling)
        self.waited = 0  # jobs a sibling was compiling when first asked
        self.wait_s = 0.0  # of that, the caller's waits outside a timing (a race's order)

    @classmethod
    def start(cls, pool: Any, tuner: Any, configs: list, taken: Any, report: Any) -> Ahead | None:
        """The key's compiles started, or None where nothing is left to compile or the pool should
        run the round itself (pool.run)."""
        if pool.mode != "processes" or pool.stuck or not (pool.forked or pool._executor is not None):
            return None
        if pool._executor is not None and not pool._started():
            return None  # spawned workers still importing: pool.run compiles here meanwhile
        ahead = cls(pool, tuner, configs, taken.jobs, taken.owners, report)
        todo = [i for i, job in enumerate(taken.jobs) if not ahead._found(i, job)]
        if not todo:
            return ahead
        if pool._executor is None and not pool.starts_at_once(len(todo)):  # whether it pays, as pool.run
            start = time.perf_counter()
            ahead._settle(todo[0], pool._here(taken.jobs[todo[0]]))
            if (len(todo) - 1) * (time.perf_counter() - start) < pool.start_s:  # all here, as pool.run
                for i in todo[1:]:
                    ahead._settle(i, pool._here(taken.jobs[i]))
                busy = [i for i, outcome in enumerate(ahead.outcomes) if outcome == Outcome.BUSY]
                ahead.waited += len(busy)
                for i, outcome in zip(busy, pool._busy_round([taken.jobs[i] for i in busy])):
                    ahead._settle(i, outcome)
                return ahead
        for i, outcome in enumerate(ahead.outcomes):
            if outcome == Outcome.BUSY:
                ahead._submit(i, wait=False)
        return ahead

    def _found(self, i: int, job: tuple) -> bool:
        self._open.setdefault(self._owners[i], set()).add(i)
        if self.pool._cached(*job):
            self._settle(i, Outcome.FOUND)
            return True
        return False

    def _settle(self, i: int, outcome: Any) -> None:
        if outcome == Outcome.BUSY:
            return
        self.outcomes[i] = outcome
        self._open.get(self._owners[i], set()).discard(i)

    def _submit(self, i: int, wait: bool) -> None:
        if wait:
            self.waited += 1
        executor = self.pool._get()
        self._futures[executor.submit(worker.compile_in_worker, self._jobs[i][1], wait)] = (i, wait)

    def _step(self) -> None:
        """Settles what finishes next (at most the pool's bound on silence, then the pool is stopped
        and the rest left to Triton)."""
        done, _ = cf.wait(list(self._futures), timeout=self.pool.timeout_s, return_when=cf.FIRST_COMPLETED)
        if not done:
            executor, pending = self.pool._executor, list(self._futures.values())
            self._futures.clear()
            if executor is not None:
                self.pool._stop(executor)
            for i, _ in pending:
                self._settle(i, self.pool._silent(self._jobs[i][1]))
            return
        for future in done:
            i, waited = self._futures.pop(future)
            outcome = self.pool._outcome(future, self._jobs[i][1])
            if outcome == Outcome.BUSY and not waited and self.pool._executor is not None:
                self._submit(i, wait=True)
            else:
                self._settle(i, outcome if outcome != Outcome.BUSY else self.pool._silent(self._jobs[i][1]))

    def _ready(self, index: int) -> bool:
        return not self._open.get(index)

    def _index(self, config: Any) -> int | None:
        return self._position.get(id(config))

    def wait_for(self, config: Any) -> None:
        """Returns once every job of `config` is settled (at once for a config of another key)."""
        index = self._index(config)
        while index is not None and not self._ready(index) and self._futures:
            self._step()

    def as_compiled(self, configs: list) -> Iterator[Any]:
        """`configs`, each as soon as its compiles are settled: the ones settled first, in order."""
        left = list(configs)
        while left:
            ready = [c for c in left if not self._futures or self._ready(self._position.get(id(c), -1))]
            if not ready:
                start = time.perf_counter()
                self._step()
                self.wait_s += time.perf_counter() - start
                continue
            for config in ready:
                left.remove(config)
                yield config

    @property
    def settled(self) -> bool:
        return not self._futures

    def finish(self) -> Any:
        """Waits for what is still compiling; the key's report, complete."""
        while self._futures:
            self._step()
        r = self.report
        r.compiled = self.outcomes.count(Outcome.COMPILED)
        r.found = self.outcomes.count(Outcome.FOUND)
        r.waited = self.waited
        r.compile_s += self.wait_s
        r.errors += [o.value if isinstance(o, Outcome) else o for o in self.outcomes
                     if o not in (Outcome.COMPILED, Outcome.FOUND)]
        r.left = len(r.errors)
        return r
