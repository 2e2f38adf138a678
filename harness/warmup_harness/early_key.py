"""Triton's key of itself, computed in a thread from pytest's start (`start`), so that the
session's first compile or first load of a compiled kernel finds it done.

Why. A process's first Triton compile, and its first load of a kernel from Triton's kernel cache,
computes `triton_key()` first: a sha256 of Triton's compiler and language sources and of its
library (415 MB on Triton 3.6), memoized for the process. On the 2-CPU development machine that
took 0.32 s with the library in the page cache, and 0.44 to 0.51 s on Triton 3.4 to 3.9 with it
not. A session with the harness and one without pay it alike, at their first kernel. Reading and
hashing release the GIL, so a thread computes it beside the conftests' imports; and compile
workers forked after it finished inherit the key instead of each computing it again.

Safety. The key is Triton's own memoized function, called as Triton calls it; the thread only
calls it sooner. Computing it imports nothing (the packages it walks are those `import triton`
imported; checked on Triton 3.4 to 3.9). A failure is left unsaid: the session's first compile
meets it again and says it as Triton does. `wait` is called before the harness forks compile
workers (a child of a fork keeps whatever a running thread held) and before the harness asks for
the key itself.

When. The plugin starts it before pytest imports the first conftest, where a protocol variable
is set and no gate holds the session back (plugin.py): FlagGems' benchmark imports FlagGems in its
conftest, seconds in which the key is done beside it. A session that starts later (behind the gate,
or a plugin named in a conftest) starts it then.

Not twice. Triton's memo does not make a second caller wait for the first: a kernel launched
while the thread runs would compute the whole key again, beside it. So while the thread runs,
Triton's own name for the key (the module attribute its compile reads at each call; Triton's own
compile workers replace the same one) waits for the thread and then answers from the memo; the
thread puts Triton's function back as it ends.
"""

from __future__ import annotations

import functools
import threading
from typing import Callable

from .triton_key import WAITS_FOR, key_home

_thread: threading.Thread | None = None  # one per process: the key is the process's


def start(key: Callable[[], object] | None = None) -> None:
    """Starts computing `key` in a thread, once per process. Without `key`, Triton's own
    triton_key, which Triton's compile then waits for instead of computing it again."""
    global _thread
    if _thread is not None:
        return
    home = None
    if key is None:
        try:
            home = key_home()
        except Exception:  # noqa: BLE001  (no Triton, or a broken one: the session's start says so)
            return
        key = getattr(*home)
    _thread = threading.Thread(target=_compute, args=(key, home), name="warmup-harness-triton-key", daemon=True)
    if home is not None:
        setattr(*home, _waiting(key))
    _thread.start()


def _waiting(key: Callable[[], object]) -> Callable[[], object]:
    """Triton's key as its compile asks for it while the thread computes it."""

    @functools.wraps(key)
    def triton_key():
        wait()
        return key()

    setattr(triton_key, WAITS_FOR, key)
    return triton_key


def _compute(key: Callable[[], object], home: tuple[object, str] | None) -> None:
    try:
        key()
    except Exception:  # noqa: S110  (Triton's own first compile meets it again and says it)
        pass
    finally:
        # Triton's function back, unless someone replaced the waiting one meanwhile.
        if home is not None and getattr(getattr(*home), WAITS_FOR, None) is key:
            setattr(*home, key)


def wait() -> None:
    """Returns once the thread, if one was started, has ended."""
    if _thread is not None:
        _thread.join()
