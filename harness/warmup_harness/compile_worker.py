"""What runs in a compile worker process: its start-up imports, and a job's function found again
by importing its module, by name or by its file's place under sys.path.

Standard library only when imported (a worker imports Triton as it starts).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from pathlib import Path
from typing import Any

from .cache_entries import Outcome, compile_job
from .capture import CompileJob


def start(preload: tuple[str, ...]) -> None:
    """A worker's first act: the imports every job needs. One that fails is said and skipped: the
    job that needs the module meets the error itself and is left to Triton."""
    for name in ("triton", "triton.compiler", *preload):
        try:
            importlib.import_module(name)
        except Exception as exc:
            print(f"[warmup-harness] compile worker {os.getpid()}: cannot import {name}: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)


def ready() -> int:
    return os.getpid()


def compile_in_worker(job: CompileJob, wait: bool) -> Outcome:
    os.environ["TRITON_CACHE_DIR"] = job.cache_dir
    missing = [entry for entry in job.sys_path if entry not in sys.path]
    sys.path[:0] = missing  # the caller's folders that pytest added after this worker started
    return compile_job(_resolve(job), job, wait)


def _resolve(job: CompileJob) -> Any:
    """The job's JITFunction, from its module imported by name, else by the dotted name its file
    has under an entry of sys.path (FlagGems imports its Hopper ops as `hopper.ops.mm` through a
    sys.path entry it removes again; the same file is
    `flag_gems.runtime.backend._nvidia.hopper.ops.mm`). Triton's cache key does not depend on the
    module's name but on the source and what it uses, and that is checked."""
    from .triton_private import jit_function

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
