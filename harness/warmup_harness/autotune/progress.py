"""How far a sweep child is, for the person watching warmup-spawn: `WARMUP_HARNESS_PROGRESS=FILE`
(warmup-spawn sets `SCRATCH/w<i>/progress.json` in each child; docs/CONTRACT.md, "Scratch
layout") names a small JSON object this record session rewrites as it sweeps:
`{"keys": K, "configs": C}`, the keys it tuned and the configs it timed for them (the key being
swept included). warmup-spawn reads it for its progress lines; nothing else does.

Cheap by design: one write of a few bytes and a rename, at each new key's start and end, into a
temporary named for this process (`.progress.json.tmp<pid>`) beside it, so a reader never sees
half a file. It is for people, not a record: a write that fails is dropped, never an error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import safe_read
from ..env import PROGRESS


class ProgressFile:
    def __init__(self, path: Path):
        self.path = path
        self.keys = 0
        self.configs = 0
        self._temporary = path.with_name(f".{path.name}.tmp{os.getpid()}")

    def timing(self, configs: int) -> None:
        """A new key's `configs` are about to be timed."""
        self.configs += configs
        self._write()

    def tuned(self) -> None:
        """A key was tuned and decided here."""
        self.keys += 1
        self._write()

    def _write(self) -> None:
        try:
            fd = safe_read.open_own(self._temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            with os.fdopen(fd, "w") as out:
                out.write(json.dumps({"keys": self.keys, "configs": self.configs}))
            os.replace(self._temporary, self.path)
        except OSError:
            pass  # progress is for a person watching: a full disk must not fail a test


def from_env(environ) -> ProgressFile | None:
    """The session's progress file, when warmup-spawn asked for one."""
    raw = environ.get(PROGRESS, "").strip()
    return ProgressFile(Path(raw)) if raw else None
