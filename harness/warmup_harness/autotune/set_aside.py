"""Resuming in place (docs/CONTRACT.md): a record session that resumes from its own folder
finds there an `<op>.json` it cannot read (another tool's, a damaged one). That file answers no
key, so instead of refusing the run, a regular file is set aside beside itself, renamed, never deleted, and
the session records the op anew. Anywhere else (a replay, a record folder nothing resumes from)
such a file still refuses the run: the user named it."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

from . import records
from .once_recorder import same_folder

SUFFIX = ".unreadable-"  # <op>.json.unreadable-<UTC time>-<pid>


def unreadable_record(directory: Path, op: str, resume_dir: str | None, say: Callable[[str], None]) -> None:
    """Renames `directory/<op>.json` to `<op>.json.unreadable-<UTC time>-<pid>` when this session
    resumes from `directory` itself and the file is no record it can read, with one line; raises
    RecordError where it cannot be renamed."""
    if resume_dir is None or not resume_dir.strip() or not same_folder(Path(resume_dir.strip()), directory):
        return
    path = records.record_path(directory, op)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return  # a link, a FIFO, a device: the writer refuses it, naming it
        records.load_records(path)
        return
    except FileNotFoundError:
        return
    except records.RecordError as exc:
        why = str(exc)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = path.with_name(f"{path.name}{SUFFIX}{stamp}-{os.getpid()}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return  # another run set it aside first
    except OSError as exc:
        raise records.RecordError(f"{why}; it cannot be set aside ({exc.strerror or exc}): move it away") from None
    say(f"WARNING {why}; this session resumes in place: set aside as {aside.name} beside it, "
        f"and op {op} is recorded anew")
