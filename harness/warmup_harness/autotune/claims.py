"""By-key mode: children that each run the whole benchmark share its sweep key by key, through
claim files in one folder (`WARMUP_HARNESS_CLAIM_DIR`, `SCRATCH/claims` under warmup-spawn
`--by-key`; docs/CONTRACT.md, "By-key mode").

Why claims and not a split: a shape file splits only what it lists, and a benchmark that adds
shapes of its own (FlagGems' `--level comprehensive`), runs several ops, or has no shape file at
all cannot be split ahead. Every child runs everything instead, and the first child to meet a new
autotune key tunes it:

* `<hash>.claim`, created with `O_CREAT|O_EXCL` and held with `flock` while the key is tuned
  (hash: of the kernel and the key; both are written inside, with the holder's pid and host);
* `<hash>.winner.json`, the config it picked, its seconds and the record folder it went to,
  written atomically (atomic.py) before the claim's lock is let go, so that whoever can take the
  lock sees the winner if there is one.

A child meeting a key another child holds launches without timing: the winner once it is
published (pinned from then on), else the tuner's first config, not recorded, and it looks again
at most every second (once_recorder.py). A claim whose lock can be taken and that has no winner was left by
a child that died: it is taken over and tuned. Creating and taking over a claim hold
`<folder>/.lock` for a few system calls, so a claim just created is never mistaken for a dead one
in the instant before its creator locks it.

A full disk (ENOSPC, EDQUOT) never fails a test: the folder is checked up front by writing a block
into it (a full one is a usage error, exit 4, as a read-only one is), and a disk that fills later
makes a key tuned and recorded here without a claim, the half-made claim file removed, and one
warning through `publish` (the caller's note) that keys go unclaimed from then on. Standard library
only.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import socket
import tempfile
from pathlib import Path
from typing import Any, Callable

from . import atomic, safe_read
from ..env import CLAIM_DIR, ProtocolError

# A disk or quota with no room left: a claim cannot be written, and nothing is wrong but the space.
FULL = (errno.ENOSPC, errno.EDQUOT)
# What the up-front check writes: one block, more than a claim or a winner file holds.
PROBE_BYTES = 4096

class ClaimError(ProtocolError):
    """The claim folder cannot be used (a usage error); the message names it and what to do."""


def claim_name(kernel: str, key: str) -> str:
    """The claim's file stem: a hash of kernel and key, so any key makes a short, safe name."""
    return hashlib.sha256(f"{kernel}\n{key}".encode("utf-8", "backslashreplace")).hexdigest()[:40]


class Held:
    """A claim this process holds: its open, locked file, let go once the winner is published."""

    def __init__(self, fd: int | None, taken_from: Any):
        self.fd = fd  # None: no claim could be written (a full disk); the key is tuned here anyway
        self.taken_from = taken_from  # the dead holder's pid when taken over, else None


class Claims:
    """The claim folder of one by-key run."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._full_said = False
        try:
            folder.mkdir(parents=True, exist_ok=True)
            atomic.probe(folder)
            _probe_space(folder)
        except OSError as exc:
            raise ClaimError(f"{CLAIM_DIR}={folder}: cannot make claim files there "
                             f"({exc.strerror or exc}): give a folder every child can write") from None
        try:
            safe_read.refuse_link(folder / ".lock")
        except OSError as exc:
            raise ClaimError(f"{CLAIM_DIR}={folder}: {exc.filename} {exc.strerror}: remove it") from None

    def _claim(self, stem: str) -> Path:
        return self.folder / f"{stem}.claim"

    def _winner(self, stem: str) -> Path:
        return self.folder / f"{stem}.winner.json"

    @contextlib.contextmanager
    def _folder_lock(self):
        lock = safe_read.open_own(self.folder / ".lock", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
        finally:
            os.close(lock)

    def winner(self, kernel: str, key: str) -> dict | None:
        """The published winner `{"kernel", "key", "config", "seconds", "record_dir"}` of this key,
        or None."""
        try:
            doc = json.loads(safe_read.read_bytes(self._winner(claim_name(kernel, key))).decode("utf-8"))
        except (OSError, ValueError):
            return None
        ok = isinstance(doc, dict) and doc.get("kernel") == kernel and doc.get("key") == key \
            and isinstance(doc.get("config"), dict)
        return doc if ok else None

    def take(self, kernel: str, key: str) -> Held | None:
        """The claim on this key, created or taken over from a dead holder; None when a live
        process holds it or a winner is already published (then `winner` answers). A claim there is
        no room for is a Held without a file: the key is tuned and recorded here all the same."""
        path = self._claim(claim_name(kernel, key))
        try:
            with self._folder_lock():
                return self._take(kernel, key, path)
        except OSError as exc:
            if exc.errno not in FULL:
                raise
            return Held(None, None)

    def _take(self, kernel: str, key: str, path: Path) -> Held | None:
        try:
            fd = safe_read.open_own(path, os.O_RDWR | os.O_CREAT | os.O_EXCL)
            created, taken_from = True, None
        except FileExistsError:
            fd = safe_read.open_own(path, os.O_RDWR)  # written to: never through a link
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    return None  # its holder is alive and tuning it
                raise
            if self.winner(kernel, key) is not None:
                os.close(fd)
                return None
            created, taken_from = False, _holder(fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            text = json.dumps({"kernel": kernel, "key": key, "pid": os.getpid(), "host": socket.gethostname(),
                               "taken_over_from": taken_from})
            data = (text + "\n").encode("utf-8", "backslashreplace")
            written = 0
            while written < len(data):  # a full disk may take part of it before it refuses
                written += os.pwrite(fd, data[written:], written)
            os.ftruncate(fd, len(data))
        except OSError:
            os.close(fd)
            if created:  # no empty or cut claim of ours is left behind
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise
        return Held(fd, taken_from)

    def publish(self, held: Held, kernel: str, key: str, config: dict, seconds: float | None,
                record_dir: str) -> None:
        """Writes the winner beside the claim, naming the record folder that holds it, then lets the
        claim go. Raises OSError once when the disk is full (a claim or a winner with no room), so
        that the caller warns once; silent after that, as every key is still recorded."""
        if held.fd is None:
            self._full(OSError(errno.ENOSPC, f"no room for a claim ({os.strerror(errno.ENOSPC)})"))
            return
        try:
            text = json.dumps({"kernel": kernel, "key": key, "config": config, "seconds": seconds,
                               "record_dir": record_dir})
            atomic.write_bytes(self._winner(claim_name(kernel, key)), (text + "\n").encode("utf-8"))
        except OSError as exc:
            if exc.errno not in FULL:
                raise
            self._full(exc)
        finally:
            os.close(held.fd)

    def _full(self, exc: OSError) -> None:
        """Raises the first full-disk error, worded for the caller's warning; later ones are silent."""
        if self._full_said:
            return
        self._full_said = True
        raise OSError(exc.errno, f"{exc.strerror}: from here on keys are tuned and recorded here without "
                                 f"claims, and other children may tune them too")


def _probe_space(folder: Path) -> None:
    """Writes a block into an unnamed file in `folder`, or raises OSError: a full disk is found up
    front, where it is a usage error, rather than at the first key."""
    try:
        fd = os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o600)
        name = None
    except (AttributeError, OSError):  # no O_TMPFILE here, or the file system lacks it
        fd, name = tempfile.mkstemp(dir=folder, prefix=".warmup-harness-space.")
    try:
        if name is not None:
            os.unlink(name)
        view = memoryview(bytes(PROBE_BYTES))
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def _holder(fd: int) -> Any:
    """The pid a claim file names (its dead holder), or "unknown"."""
    try:
        data = os.pread(fd, 4096, 0)
        return json.loads(data).get("pid", "unknown")
    except (OSError, ValueError, AttributeError):
        return "unknown"


def from_env(setting: Callable[[str], str | None]) -> Claims | None:
    """The claim folder the setting names, or None outside by-key mode; raises ClaimError."""
    raw = setting(CLAIM_DIR)
    if raw is None:
        return None
    return Claims(Path(os.path.abspath(raw.strip())))

