"""Reading a file the harness is given (a record, a sidecar, a journal, a by-key winner) by the rule
the Rust tools follow (toolkit/src/file.rs; docs/CONTRACT.md, "File formats"): a regular file only
(a symlink to one is followed), of at most MAX_BYTES. A FIFO put where a JSON file was expected
would block the session until someone wrote to it, and `/dev/zero` would be read until memory ran
out; both are refused at once. A file the harness creates or writes in a folder others may write
in (a record folder, the claims folder, the device locks' folder) is opened by `open_own`: never
through a symbolic link planted at its name. Standard library only.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

# The most the harness reads of one file: the tools' cap (toolkit::file::MAX_BYTES, 1 GiB).
MAX_BYTES = 1 << 30


class Refused(OSError):
    """Something that is not a regular file, or one over the cap; `strerror` says which and what
    to do, as the tools' message does."""


def _kind(mode: int) -> str:
    for test, what in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return what
    return "not a file"


def check_regular(fd: int, limit: int = MAX_BYTES) -> os.stat_result:
    """fstat of `fd`, refused (Refused) unless it is a regular file of at most `limit` bytes."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise Refused(errno.EINVAL, f"is {_kind(st.st_mode)}, not a regular file; give a regular file there")
    if st.st_size > limit:
        raise _too_large(st.st_size, limit)
    return st


def check_file(path: Path, limit: int = MAX_BYTES) -> None:
    """That `path` is a regular file of at most `limit` bytes, without reading it; raises OSError
    as read_bytes does."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        check_regular(fd, limit)
    finally:
        os.close(fd)


def read_bytes(path: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file at `path`; raises OSError (FileNotFoundError where there is
    none, Refused for anything but a regular file of at most `limit` bytes)."""
    # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer before fstat could
    # tell what it is. It changes nothing for a regular file.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        check_regular(fd, limit)
        chunks, total = [], 0
        while total <= limit:  # a file that grows while it is read stops at the cap too
            chunk = os.read(fd, min(1 << 24, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise _too_large(total, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


# What a symbolic link where the harness writes a file of its own is called (the tools' words).
LINKED = "is a symbolic link, which the harness never writes through"


def open_own(path: Path, flags: int, mode: int = 0o666) -> int:
    """os.open of a file the harness creates, writes or locks in a folder another user may write
    in: never through a symbolic link at `path` itself (O_NOFOLLOW), which would have it create,
    truncate or append to whatever file the link's planter chose, and never waiting on a FIFO
    there (O_NONBLOCK, which changes nothing for a regular file or a lock). A link there raises
    Refused (LINKED); links in the folders above are followed. toolkit::file::open_own's rule."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            raise Refused(errno.ELOOP, LINKED, str(path)) from None
        raise


def refuse_link(path: Path) -> None:
    """Raises Refused (LINKED) where `path` is a symbolic link: a file open_own would refuse."""
    if os.path.islink(path):
        raise Refused(errno.ELOOP, LINKED, str(path))


def _too_large(size: int, limit: int) -> Refused:
    return Refused(errno.EFBIG, f"holds {size} bytes or more, over the {limit} this harness reads of one "
                                f"file; is it the right file?")
