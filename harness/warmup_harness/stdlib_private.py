"""Every name of the standard library's that is not its documented API and that the harness
relies on, in one place (triton_private's twin): a new Python version is checked here.

Checked with CPython 3.9 to 3.14. What is used:

* `concurrent.futures.ProcessPoolExecutor._processes`, `{pid: multiprocessing.Process}` of the
  pool's running workers (3.2 and later; `shutdown` drops it): the compile pool (precompile/pool.py)
  reads it to say how a worker died and to kill one that outlives its grace.
"""

from __future__ import annotations

from typing import Any


def pool_processes(executor: Any) -> list[Any]:
    """The worker processes a `ProcessPoolExecutor` runs now; none where it has no such attribute."""
    return list((getattr(executor, "_processes", None) or {}).values())
