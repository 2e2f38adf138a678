"""A record session's SIGTERM (how warmup-spawn stops a child): the journal is folded first, then
the process dies of the signal as it would have; one that comes inside an append or a fold waits
for it to finish (writer.py). Standard library only.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable


class OnSigterm:
    """Calls `close` (the writer's fold) before the process dies of SIGTERM, where nobody else
    handles it; `busy` while an append or a fold is under way."""

    def __init__(self, close: Callable[[], None]):
        self._close = close
        self.busy = False
        self._stop_signal: int | None = None
        self._previous_handler: Any = None

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return
        self._previous_handler = signal.signal(signal.SIGTERM, self._on_signal)

    def restore(self) -> None:
        if self._previous_handler is not None and signal.getsignal(signal.SIGTERM) == self._on_signal:
            signal.signal(signal.SIGTERM, self._previous_handler)
        self._previous_handler = None

    def done(self) -> None:
        """An append or a fold ended: a SIGTERM that came meanwhile stops the process now."""
        self.busy = False
        if self._stop_signal is not None:
            self._stop_now()

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._stop_signal = signum
        if not self.busy:  # else the append or fold under way finishes, then stops
            self._stop_now()

    def _stop_now(self) -> None:
        signum, self._stop_signal = self._stop_signal, None
        self._close()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
