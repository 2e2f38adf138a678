"""One config timed at a time per device: an exclusive `flock` on `<lock folder>/<device>.lock`
while a config is timed, so that children sharing a GPU take turns at timing while their
compiling overlaps. The default folder serves every user (sticky, as /tmp is), so a lock file is
made readable by all whatever the umask. Standard library only.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .settings import LOCK_DIR
from ..autotune import atomic, safe_read
from ..env import ProtocolError


def device_token() -> str:
    """The device this process times on, named alike in every process that sees it: its UUID when
    torch is loaded, else its token in CUDA_VISIBLE_DEVICES, else its index."""
    torch = sys.modules.get("torch")
    index = 0
    if torch is not None:
        with contextlib.suppress(Exception):
            index = torch.cuda.current_device()
            uuid = str(getattr(torch.cuda.get_device_properties(index), "uuid", "") or "")
            if uuid:
                return f"gpu-{uuid}"
    tokens = [t.strip() for t in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if t.strip()]
    return f"gpu-{tokens[index] if index < len(tokens) else index}"


class DeviceTimingLock:
    """Exclusive `flock` on `<folder>/<device>.lock` while a config is timed. Re-entrant; the
    threads of one process take turns too. A lock file needs only a read descriptor, so one made by
    one user serves every user's runs in the shared default folder (sticky, as /tmp is)."""

    def __init__(self, folder: Path, shared: bool = False):
        self.folder = folder
        self.shared = shared
        self.waited_s = 0.0
        self._files: dict[str, int] = {}
        self._held: int | None = None
        self._depth = 0
        self._mutex = threading.RLock()

    def __enter__(self) -> DeviceTimingLock:
        self._mutex.acquire()
        try:
            if self._depth == 0:
                fd = self._file(device_token())
                start = time.perf_counter()
                fcntl.flock(fd, fcntl.LOCK_EX)
                self.waited_s += time.perf_counter() - start
                self._held = fd
        except BaseException:
            self._mutex.release()
            raise
        self._depth += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        self._depth -= 1
        if self._depth == 0 and self._held is not None:
            fcntl.flock(self._held, fcntl.LOCK_UN)
            self._held = None
        self._mutex.release()

    def path(self, token: str) -> Path:
        return self.folder / f"{re.sub(r'[^A-Za-z0-9._-]', '_', token)}.lock"

    def prepare(self) -> None:
        """Makes the folder, before any test: raises ProtocolError naming LOCK_DIR when it cannot be
        made or written (every timing would fail after its sweep)."""
        try:
            self._make_folder()
        except OSError as exc:
            raise ProtocolError(f"{LOCK_DIR}={self.folder}: cannot make the device timing locks' folder "
                                f"({exc.strerror or exc}); set {LOCK_DIR} to a folder you can write") from None
        try:  # by making a file there, as the first lock will: access() would pass root through /proc
            atomic.probe(self.folder)
        except OSError as exc:
            raise ProtocolError(f"{LOCK_DIR}={self.folder}: the device timing locks' folder cannot be written "
                                f"({exc.strerror or exc}); set {LOCK_DIR} to a folder you can write") from None

    def _make_folder(self) -> None:
        if not self.folder.is_dir():
            self.folder.mkdir(parents=True, exist_ok=True)
            if self.shared:
                with contextlib.suppress(OSError):
                    os.chmod(self.folder, 0o1777)

    def _file(self, token: str) -> int:
        fd = self._files.get(token)
        if fd is None:
            path = self.path(token)
            try:
                self._make_folder()
                # A FIFO in its place is opened at once, not waited on for a writer; a link is refused
                # (in a shared folder, whoever planted it would have this process create the file it
                # names, or make a file of this user's readable by all, _readable_by_all).
                fd = safe_read.open_own(path, os.O_RDONLY | os.O_CREAT, 0o644)
            except OSError as exc:
                raise RuntimeError(f"warmup-harness: {_lock_failure(path, exc)}") from None
            _readable_by_all(fd)
            self._files[token] = fd
        return fd

    def close(self) -> None:
        for fd in self._files.values():
            os.close(fd)
        self._files.clear()


def _readable_by_all(fd: int) -> None:
    """Makes a lock file this process owns readable by every user whatever the umask it was made
    under (0600 under `umask 077` would lock every other user's timing out of the device)."""
    with contextlib.suppress(OSError):
        st = os.fstat(fd)
        if st.st_uid == os.geteuid() and st.st_mode & 0o444 != 0o444:
            os.fchmod(fd, (st.st_mode & 0o7777) | 0o444)


def _lock_failure(path: Path, exc: OSError) -> str:
    """What stops a device timing lock from being opened: the file itself, or its folder."""
    why = exc.strerror or str(exc)
    if os.path.islink(path):
        return (f"the device timing lock {path} {safe_read.LINKED}: remove it, or set {LOCK_DIR} to a folder "
                f"of your own")
    try:
        st = path.stat()
    except OSError:
        return (f"cannot create the device timing lock {path} ({why}): its folder {path.parent} cannot be "
                f"written; set {LOCK_DIR} to a folder you can write")
    return (f"cannot open the device timing lock {path} ({why}): the file is mode {st.st_mode & 0o777:04o}, "
            f"owned by uid {st.st_uid}, and every user timing on this device needs to read it; its owner can "
            f"`chmod a+r` it, or set {LOCK_DIR} to a folder of your own")
