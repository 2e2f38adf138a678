"""Files written whole or not at all, by the rule the Rust tools' writer follows
(toolkit/src/atomic.rs; docs/CONTRACT.md, "Record files"): a reader of `<op>.json` never sees half
a file, and a writer killed by SIGKILL leaves no temporary that nothing removes.

The bytes go to a file without a name (`O_TMPFILE`), locked with `flock` from the moment it exists,
which gets a name, `.NAME.tmp<pid>.<hex>`, only for the rename over the target. Where the file
system has no `O_TMPFILE` the temporary is named from the start, and locked at once. Before each
write, the temporaries of the target that nobody holds locked are removed: their writers died
between naming and renaming. The Rust tools remove the same names by the same test. Standard
library only.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import tempfile
from pathlib import Path

from . import safe_read


def _temp_prefix(path: Path) -> str:
    return f".{path.name}.tmp"


def _is_legacy_temporary(name: str, target: str) -> bool:
    """`.NAME.<pid>.<hex>.tmp`, the name this harness gave its temporaries before they were
    locked: dead when no process of that pid runs here."""
    middle = name[len(target) + 2:-4].split(".") if name.startswith(f".{target}.") and name.endswith(".tmp") else []
    if len(middle) != 2 or not middle[0].isascii() or not middle[0].isdigit():
        return False
    try:
        os.kill(int(middle[0]), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def remove_dead_temporaries(path: Path) -> list[str]:
    """Removes the temporaries of `path` that no writer holds; returns their names. Best effort."""
    removed = []
    prefix = _temp_prefix(path)
    try:
        names = os.listdir(path.parent)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(prefix):
            if _is_legacy_temporary(name, path.name):
                with contextlib.suppress(OSError):
                    os.unlink(path.parent / name)
                    removed.append(name)
            continue
        try:
            fd = safe_read.open_own(path.parent / name, os.O_RDONLY)  # not a link's, nor a FIFO waited on
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.unlink(path.parent / name)
            removed.append(name)
        except OSError:
            pass  # held: its writer is alive
        finally:
            os.close(fd)
    return removed


def _unnamed(folder: Path) -> int | None:
    try:
        return os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o666)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None  # this file system has no O_TMPFILE
        raise


def probe(folder: Path) -> None:
    """Makes a file in `folder` and removes it, or raises OSError: whether a write there can work.
    The file has no name where the file system allows, so even a SIGKILL leaves nothing behind."""
    fd = _unnamed(folder)
    if fd is None:
        fd, name = tempfile.mkstemp(dir=folder, prefix=".warmup-harness-probe.")
        os.unlink(name)
    os.close(fd)


def write_bytes(path: Path, data: bytes) -> None:
    """Replaces `path` with `data` (mode 0666 less the umask); raises OSError."""
    remove_dead_temporaries(path)
    name = path.with_name(f"{_temp_prefix(path)}{os.getpid()}.{secrets.token_hex(4)}")
    fd = _unnamed(path.parent)
    named = fd is None
    if named:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    linked = named
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
        if not named:
            root = os.open("/", os.O_RDONLY)
            try:  # linkat(AT_SYMLINK_FOLLOW) of the /proc entry, as open(2) says for O_TMPFILE
                os.link(f"/proc/self/fd/{fd}", name, src_dir_fd=root, follow_symlinks=True)
            finally:
                os.close(root)
            linked = True
        os.replace(name, path)
        with contextlib.suppress(OSError):  # the rename is durable once the folder is synced
            folder = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
    except BaseException:
        if linked:
            with contextlib.suppress(OSError):
                os.unlink(name)
        raise
    finally:
        os.close(fd)  # the lock goes with it, after the rename
