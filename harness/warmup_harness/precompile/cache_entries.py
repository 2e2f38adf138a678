"""One compile job against Triton's kernel cache: found there, or compiled into it holding
`flock` on the entry's folder, so that processes sharing a kernel cache compile each entry once.

Standard library only when imported; Triton is imported when a job is checked or compiled.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .capture import CompileJob


class Outcome(enum.Enum):
    """What a compile job came to; a job that failed comes to the text of why instead."""

    COMPILED = "compiled"  # compiled here
    FOUND = "found"  # found compiled
    BUSY = "busy"  # another process holds its entry: it is compiling it now


def _prepared(fn: Any, job: CompileJob) -> tuple[Any, Any, Any, Any, str]:
    from .. import triton_private as tp

    src, backend, options = tp.rebuild(fn, job.specialization, job.target)
    entry, folder = tp.cache_entry(src, backend, options, job.env_vars, job.cache_dir)
    return src, options, entry, folder, tp


def is_cached(fn: Any, job: CompileJob) -> bool:
    """Whether the job's kernel is in Triton's kernel cache already: read only, no lock, in this process
    (a few milliseconds: a key found compiled never waits for a pool)."""
    src, _, entry, _, tp = _prepared(fn, job)
    return tp.in_cache(entry, src)


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


def compile_job(fn: Any, job: CompileJob, wait: bool) -> Outcome:
    """Compiles one job into the kernel cache unless it is there: COMPILED, FOUND, or BUSY (another
    process compiles it now, and `wait` is off)."""
    src, options, entry, folder, tp = _prepared(fn, job)
    with _entry_lock(Path(folder), wait) as held:
        if not held:
            return Outcome.BUSY
        if tp.in_cache(entry, src):
            return Outcome.FOUND
        tp.compile_into_cache(src, job.target, options, job.env_vars)
        return Outcome.COMPILED
