"""Every name of pytest's that is not its documented API and that the harness relies on, in one
place (triton_private's twin): a new pytest version is checked here.

Checked with pytest 8 and 9. What is used:

* `TerminalWriter._file`, the file pytest's terminal writer (`config.get_terminal_writer()`)
  writes to: the gate (gate.py) swaps it for a `HeldOutput` while the measurement waits, so that
  pytest's header and collection lines are written when the gate opens. Where it is missing the
  output is not held.

Imports nothing of pytest's itself: it is handed pytest's objects.
"""

from __future__ import annotations

from typing import Any


class HeldOutput:
    """Stands for the terminal writer's file while the gate is shut: keeps what is written, and
    answers everything else (isatty, encoding, fileno) as the file does."""

    def __init__(self, writer: Any):
        self.writer = writer
        self.file = writer._file
        self.parts: list[str] = []
        writer._file = self

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def release(self) -> None:
        """Gives the writer its file back, and writes what was held to it."""
        self.writer._file = self.file
        self.file.write("".join(self.parts))
        self.file.flush()

    def __getattr__(self, name):
        return getattr(self.file, name)


def hold_output(writer: Any) -> HeldOutput | None:
    """Holds what pytest's terminal writer writes until `release`; None where this pytest's writer
    has no file to swap."""
    return HeldOutput(writer) if hasattr(writer, "_file") else None
