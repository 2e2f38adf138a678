"""Triton's key of itself, computed in a thread from the session's start (`start`), so that the
session's first compile or first load of a compiled kernel finds it done.

Why. A process's first Triton compile, and its first load of a kernel from Triton's cache,
computes `triton_key()` first: a sha256 of Triton's compiler and language sources and of its
library (415 MB on Triton 3.6), memoized for the process. On the 2-CPU development machine that
took 0.32 s with the library in the page cache, and 0.44 to 0.51 s on Triton 3.4 to 3.9 with it
not. A session with the harness and one without pay it alike, at their first kernel. Reading and
hashing release the GIL, so a thread computes it beside pytest's collection and the first test's
set-up; and compile workers forked after it finished inherit the key instead of each computing
it again.

Safety. The key is Triton's own memoized function: a kernel launch that asks for it while the
thread runs computes it too, and both get the same. Computing it imports nothing (the packages it
walks are those `import triton` imported; checked on Triton 3.4 to 3.9). A failure is left
unsaid: the session's first compile meets it again and says it as Triton does. `wait` is called
before the harness forks compile workers (a child of a fork keeps whatever a running thread held)
and before the harness asks for the key itself.
"""

from __future__ import annotations

import threading
from typing import Callable

_thread: threading.Thread | None = None  # one per process: the key is the process's


def start(key: Callable[[], object] | None = None) -> None:
    """Starts computing `key` (Triton's triton_key) in a thread, once per process."""
    global _thread
    if _thread is not None:
        return
    if key is None:
        try:
            from .triton_private import own_key

            key = own_key()
        except ImportError:  # a Triton without it: its compiles compute what they need
            return
    _thread = threading.Thread(target=_compute, args=(key,), name="warmup-harness-triton-key", daemon=True)
    _thread.start()


def _compute(key: Callable[[], object]) -> None:
    try:
        key()
    except Exception:  # noqa: S110  (Triton's own first compile meets it again and says it)
        pass


def wait() -> None:
    """Returns once the thread, if one was started, has ended."""
    if _thread is not None:
        _thread.join()
