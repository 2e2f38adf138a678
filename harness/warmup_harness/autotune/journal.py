"""The journal beside a record (`<dir>/.<op>.journal`: a line per key a record session decided,
folded into the record by writer.py), the lock and session files beside it, and reading the
journal: for resume (resume.py), for a replay of what a killed session left (`unfolded`), and for
the fold itself. Reads only. Standard library only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from . import safe_read
from .records import Made, Provenance, RecordError


def journal_path(directory: Path, op: str) -> Path:
    return directory / f".{op}.journal"


def lock_path(directory: Path, op: str) -> Path:
    """Every append and fold holds `flock(LOCK_EX)` on it, as warmup-publish does."""
    return directory / f".{op}.lock"


def sessions_path(directory: Path, op: str) -> Path:
    """A record session holds `flock(LOCK_SH)` on it for its whole life (docs/CONTRACT.md)."""
    return directory / f".{op}.sessions"


# kernel, key, config, seconds, kernel fingerprint, and where it was made (None: by the folding
# process, for a journal line written before lines named it)
Entry = tuple[str, str, dict, Any, "str | None", "Made | None"]


def journal_entries(data: bytes) -> list[Entry]:
    """The journal's (kernel, key, config, seconds, fingerprint, made), in order; a line that is
    not one is skipped (a line cut short by a writer killed mid-append: the next append starts on
    a line of its own), and the last piece, without its newline, was cut short (or is empty)."""
    entries = []
    for line in data.split(b"\n")[:-1]:
        try:
            entry = json.loads(line)
            kernel, key, config = entry["kernel"], entry["key"], entry["config"]
        except (ValueError, RecursionError, KeyError, TypeError):
            continue
        if isinstance(kernel, str) and isinstance(key, str) and isinstance(config, dict) \
                and isinstance(config.get("kwargs"), dict):
            fingerprint = entry.get("fingerprint")
            made = None
            if "device" in entry or "triton" in entry:
                made = tuple(v if isinstance(v, str) else None for v in (entry.get("device"), entry.get("triton")))
            entries.append((kernel, key, config, entry.get("seconds"),
                            fingerprint if isinstance(fingerprint, str) else None, made))
    return entries


def journaled(directory: Path, op: str, then: str) -> list[Entry]:
    """The entries of the journal there, none where there is none; raises RecordError where it
    cannot be read (a FIFO or a device there included): its keys, if any, are not `then`. Reads only."""
    path = journal_path(directory, op)
    try:
        return journal_entries(safe_read.read_bytes(path))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise RecordError(f"{path}: cannot read the journal ({exc.strerror or exc}); its keys, if any, "
                          f"are not {then}") from None


def apply(entries: list[Entry], records: dict, made: dict, default: Made, kernels: dict, seconds: dict,
          changed: Callable[[str, int], None] = lambda kernel, dropped: None) -> None:
    """Puts journal entries into a record as a fold does (writer.py), the one rule of the fold,
    resume and replay: in order, a key decided again replacing its config; `seconds` and `made`
    (where each was made: its line's, else `default`) beside it. A line for another fingerprint of
    its kernel than `kernels` names (the sidecar's, updated here) first drops the kernel's earlier
    keys, which were tuned for the kernel as it was: `changed(kernel, how many)` then."""
    for kernel, key, config, tuned, fingerprint, where in entries:
        if fingerprint is not None:
            if kernels.get(kernel, fingerprint) != fingerprint:
                gone = records.pop(kernel, {})
                for stale in gone:
                    made.pop((kernel, stale), None)
                seconds.pop(kernel, None)
                changed(kernel, len(gone))
            kernels[kernel] = fingerprint
        records.setdefault(kernel, {})[key] = config
        seconds.setdefault(kernel, {})[key] = tuned
        made[kernel, key] = where if where is not None else default


def unfolded(directory: Path, op: str, records: dict, provenance: Provenance | None = None,
             kernels: dict | None = None) -> int:
    """Replay: adds to `records` the keys a record session journaled but did not fold (it was
    killed), as the next record session would fold them (`apply`, `kernels` the sidecar's
    fingerprints, updated), and to `provenance` where each was made (a line that says nothing:
    where the sidecar's own keys were); returns how many. Reads only."""
    entries = journaled(directory, op, "replayed")
    kernels = {} if kernels is None else kernels
    if provenance is None:  # no sidecar: nothing says where any key was made
        apply(entries, records, {}, (None, None), kernels, {})
    else:
        apply(entries, records, provenance.foreign, provenance.own, kernels, {})
    return len(entries)
