"""Record mode's writer: each decision goes to a journal beside the record, and the journal is folded
into `<dir>/<op>.json` and its sidecar (docs/CONTRACT.md, "The record/replay harness").

Why a journal: rewriting the record for every key costs the whole file each time (52 keys on a
17 MB record took 50 s). A key costs one line appended to `<dir>/.<op>.journal` instead, and the
record is rewritten by a fold: after a key while the record is small (under FOLD_EVERY_KEY_BELOW
bytes: rewriting it costs about what the line does, and warmup-merge then finds every key of a
child that crashed), or once the journal has grown as large as the record (so a key's share of the
folds stays a few times its own line, whatever the record's size); and at the session's first write
(a journal left by a process that died is folded in with it), when it ends, and on SIGTERM (how
warmup-spawn stops a child). A session that writes nothing takes no lock and folds nothing. Every
append and every fold holds `flock` on `<dir>/.<op>.lock`, so processes recording one op
(pytest-xdist workers, sessions side by side) add up; a fold replaces the record atomically
(atomic.py) before it removes the journal, so `<op>.json` is a valid record at every instant and a
key decided before a crash is in one or the other. A key decided again replaces its earlier config:
the journal is applied in order. An earlier record's keys (resume into another folder) come in by
one fold, `carry`, not one line each. From its first write to its end a session holds
`flock(LOCK_SH)` on `<dir>/.<op>.sessions`, so that warmup-publish knows a journal there belongs to
a live session and leaves it alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import Any, Callable
from collections.abc import Iterator

from . import atomic, safe_read
from .fold import add_process_seconds, add_races, harness_version, merge, sidecar_to_merge_into
from .journal import Entry, journal_entries, journal_path, lock_path, sessions_path
from .sigterm import OnSigterm
from .records import (COMPLETE_FOR, META_VERSION, UNKNOWN, Made, Provenance, RecordError, describe,
                      foreign_groups, load_meta, load_records, meta_path, record_path,
                      versions)

_UNASKED = object()

# Below this size the record is rewritten after every key (milliseconds), above it only once the
# journal has grown to the record's size.
FOLD_EVERY_KEY_BELOW = 1 << 20


class RecordWriter:
    """Adds decisions, one key at a time, to the journal, and folds it into the record."""

    def __init__(self, directory: Path, op: str, device_name: Callable[[], str | None]):
        self.directory = directory
        self.op = op
        self.path = record_path(directory, op)
        self.meta = meta_path(directory, op)
        self.journal = journal_path(directory, op)
        self.decided: set[tuple[str, str]] = set()
        self._dropped = False  # a fold dropped a changed kernel's keys
        self.seconds = 0.0
        self.notes: list[str] = []  # said at the end: a damaged sidecar replaced, a fold that failed
        self.explained: set[str] = set()  # kernels whose change a line said already (once_recorder.py)
        self.foreign: dict[Made, int] = {}  # keys of the record made elsewhere, by where, at the last fold
        self._foreign_here: Made = UNKNOWN
        self.folds = 0  # record rewrites by this writer (each one the whole record)
        self.from_store = 0  # keys journaled as a tuner's store answered them
        self.unwritten: list[tuple[str, str]] = []  # keys whose journal line could not be written
        self._write_failure: str | None = None  # why the first of them could not
        self._sessions: int | None = None  # the descriptor holding LOCK_SH on `.<op>.sessions`
        self.extra_meta: Callable[[], dict] = dict  # the session's own sidecar fields, at each fold
        self._device_name = device_name
        self._device: Any = _UNASKED  # asked at the first decision, when the device is in use
        self._compile_added = 0.0  # of this process's compile seconds, those in the sidecar already
        self._sigterm = OnSigterm(self.close)  # inside an append or a fold, a SIGTERM waits for it

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self._sigterm.busy = True
        try:
            # A FIFO in its place is refused (ENXIO), not waited on for a reader; a link, refused.
            lock = safe_read.open_own(lock_path(self.directory, self.op), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                fcntl.flock(lock, fcntl.LOCK_EX)
                yield
            finally:
                os.close(lock)
        finally:
            self._sigterm.done()  # a SIGTERM that came meanwhile: fold and die of it now

    def open(self) -> None:
        """Checks the record there, which this run may add to; raises RecordError. It takes no lock
        and writes nothing: a session that decides nothing leaves the folder as it found it (the
        record resumed from itself: a re-run with a full record). The first write (`_go_live`) marks the
        session live and folds first what a process that died journaled."""
        try:
            if self.path.exists():
                load_records(self.path)
        except OSError as exc:
            raise self._unwritable(exc) from None
        for path in (self.journal, lock_path(self.directory, self.op), sessions_path(self.directory, self.op)):
            try:  # opened at the first write, never through a link: a link there refuses the run now
                safe_read.refuse_link(path)
            except OSError as exc:
                raise RecordError(f"{path} {exc.strerror}: remove it, or give a record folder of your own") from None
        try:  # a journal every key would be appended to: a FIFO or a device there refuses the run
            safe_read.check_file(self.journal)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise self._unreadable_journal(exc) from None

    def _go_live(self) -> None:
        """Before this session's first write: holds `.<op>.sessions` for the rest of its life and
        removes the temporaries nobody holds. Its first append's fold (or close) folds a journal a
        dead process left."""
        if self._sessions is None:
            atomic.remove_dead_temporaries(self.path)
            atomic.remove_dead_temporaries(self.meta)
            self._hold_sessions()

    def _hold_sessions(self) -> None:
        """Holds `flock(LOCK_SH)` on `.<op>.sessions` until release(): warmup-publish, which takes
        LOCK_EX|LOCK_NB there before it removes a journal, leaves this session's journal alone."""
        if self._sessions is None:
            fd = safe_read.open_own(sessions_path(self.directory, self.op), os.O_RDONLY | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH)
            except BaseException:
                os.close(fd)
                raise
            self._sessions = fd

    def release(self) -> None:
        """This session is over: its mark on `.<op>.sessions` goes (the file stays)."""
        fd, self._sessions = self._sessions, None
        if fd is not None:
            os.close(fd)

    def add(self, kernel: str, key: str, config: dict, seconds: float | None,
            fingerprint: str | None = None, store: bool = False) -> None:
        """Journals a key; `store`: a tuner's store answered it, made where nobody knows."""
        if self._device is _UNASKED:
            self._device = self._device_name()
        entry = {"kernel": kernel, "key": key, "config": config,
                 "seconds": round(seconds, 6) if seconds is not None else None}
        if fingerprint is not None:
            entry["fingerprint"] = fingerprint
        entry["device"], entry["triton"] = UNKNOWN if store else self._here()
        if store:
            entry["source"] = "store"
            self.from_store += 1
        line = (json.dumps(entry) + "\n").encode("utf-8")
        journaled = False
        try:
            self._go_live()
            with self._locked():
                fd = safe_read.open_own(self.journal, os.O_RDWR | os.O_APPEND | os.O_CREAT)
                try:
                    safe_read.check_regular(fd)
                    size = os.fstat(fd).st_size
                    if size and os.pread(fd, 1, size - 1) != b"\n":
                        # A writer killed mid-append cut its line short: this one starts a line of
                        # its own, so that only the cut line is lost, not this one glued to it.
                        line = b"\n" + line
                    view = memoryview(line)
                    while view:
                        view = view[os.write(fd, view):]
                    journaled = True
                    size = os.fstat(fd).st_size
                finally:
                    os.close(fd)
                try:
                    recorded = self.path.stat().st_size
                except FileNotFoundError:
                    recorded = 0
                if recorded < FOLD_EVERY_KEY_BELOW or size >= recorded:
                    self._fold()
        except (OSError, RecordError) as exc:
            # A record is a by-product: a write that fails (a full disk) never fails the test, which
            # runs on with the config it tuned. A fold that fails leaves the key in the journal.
            if not journaled:
                self.unwritten.append((kernel, key))
                self._write_failure = self._write_failure or (exc.strerror if isinstance(exc, OSError) and
                                                              exc.strerror else str(exc))
                return
            self._fold_failed(exc)
        self.decided.add((kernel, key))
        self.seconds += seconds or 0.0

    def _here(self) -> Made:
        """Where this process makes its keys: its device (None until asked) and its Triton."""
        device = None if self._device is _UNASKED else self._device
        return device, versions()["triton"]

    def carry(self, entries: list[Entry], unchecked: set[str] = frozenset()) -> int:
        """Puts an earlier record's keys into this one in one fold, however many (resume into
        another folder): a key the record holds already keeps its config, and a kernel whose
        fingerprint there differs from the carried one keeps none of the carried keys; `unchecked`
        names the kernels whose carried fingerprint no running kernel confirmed (the sidecar's
        `unchecked`). Returns how many were carried; raises RecordError."""
        if self._device is _UNASKED:
            self._device = self._device_name()
        try:
            self._go_live()
            with self._locked():
                carried = self._fold(carried=entries, unchecked=unchecked)
        except (OSError, RecordError) as exc:  # the keys are pinned all the same
            self._fold_failed(exc)
            return 0
        for kernel, key, *_ in entries:
            self.decided.add((kernel, key))
        return carried

    def close(self) -> None:
        """Folds what this session (and any other) journaled; a failure is a note, the journal kept.
        A session that wrote nothing folds nothing and takes no lock."""
        unwritten = (f"WARNING {self.journal}: {len(self.unwritten)} key(s) tuned here could not be written "
                     f"({self._write_failure}): their tests ran on with the configs tuned, the record holds "
                     f"what it held, and the next record session tunes them again")
        if self.unwritten and unwritten not in self.notes:
            self.notes.append(unwritten)
        if self._sessions is None:
            return
        try:
            with self._locked():
                self._fold()
        except (OSError, RecordError) as exc:
            self._fold_failed(exc)

    def _fold_failed(self, exc: OSError | RecordError) -> None:
        why = (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)
        note = (f"WARNING {self.journal}: not folded into {self.path} ({why}); its keys are kept there "
                f"and folded by the next record session in that folder")
        if note not in self.notes:
            self.notes.append(note)

    def _unreadable_journal(self, exc: OSError) -> RecordError:
        return RecordError(f"{self.journal}: cannot read the journal ({exc.strerror or exc}): remove it, "
                           f"or give a record folder of its own")

    def vouch(self, signature: str) -> None:
        """Names `signature` in the sidecar's `complete_for`: this session, which used the record
        folder as its own resume and passed, met every key its run needs, and the record holds them all
        (docs/CONTRACT.md, "complete_for"). Written only where the record and its sidecar are there
        and the sidecar names another; a failure is a note, and the next run sweeps what it lacks."""
        try:
            with self._locked():
                if self.journal.exists() or not self.path.exists():
                    return  # not folded, or nothing recorded: nothing to vouch for
                meta, problem = load_meta(self.meta)
                if meta is None or problem is not None or meta.get(COMPLETE_FOR) == signature:
                    return
                meta[COMPLETE_FOR] = signature
                atomic.write_bytes(self.meta, (json.dumps(meta) + "\n").encode("utf-8"))
        except OSError as exc:
            self.notes.append(f"WARNING {self.meta}: cannot name this run as complete there ({exc.strerror}); "
                              f"the next run sweeps the keys it cannot tell are there")

    def _unwritable(self, exc: OSError) -> RecordError:
        return RecordError(f"{self.path}: cannot write the record ({exc.strerror or exc}): the record "
                           f"folder must be a writable folder")

    def _fold(self, carried: list[Entry] = (), unchecked: set[str] = frozenset()) -> int:
        """Under the lock: the journal's keys, then the carried ones, into the record and the
        sidecar (one rewrite of each), then no journal. Returns how many carried keys went in.

        Every key keeps where it was made: a key already in the record keeps what the sidecar
        there said of it, a journaled key what its line says (this process, for a line that names
        nothing), a carried key its earlier record's; those not made as the sidecar's own `device`
        and `triton` (this process's) are listed in its `foreign`, so that no sidecar vouches for
        a key made on another device or Triton."""
        try:
            data = safe_read.read_bytes(self.journal)
        except FileNotFoundError:
            data = None
        except OSError as exc:  # a FIFO or a device there included
            raise self._unreadable_journal(exc) from None
        entries = journal_entries(data) if data is not None else []
        added = 0
        if entries or carried:
            records = load_records(self.path) if self.path.exists() else {}
            meta, known = sidecar_to_merge_into(self.meta, self.op, self.notes)
            before = Provenance(meta if known else None)
            made = {(kernel, key): before.made(kernel, key) for kernel, keys in records.items() for key in keys}
            meta.update(versions(), harness=harness_version())
            extra = self.extra_meta()  # the session's fields, once a fold
            self._compile_added = add_process_seconds(meta, extra, self._compile_added)
            if self._device not in (None, _UNASKED) or "device" not in meta:
                meta["device"] = None if self._device is _UNASKED else self._device
            here = (meta.get("device"), meta.get("triton"))
            mine = self._here() if self._device is not _UNASKED else here
            added = merge(records, meta, made, entries, carried, unchecked, mine, self._drop_changed)
            if self._dropped:
                meta.pop(COMPLETE_FOR, None)
            foreign = foreign_groups(made, here)
            if foreign:
                meta["foreign"] = foreign
                self._say_foreign(foreign, here)
            else:
                meta.pop("foreign", None)
                self.foreign = {}
            meta["version"] = META_VERSION
            add_races(meta, extra, records)
            atomic.write_bytes(self.path, (json.dumps(records) + "\n").encode("utf-8"))
            self.folds += 1
            # The record never waits on its sidecar: one that cannot be written is a note.
            try:
                atomic.write_bytes(self.meta, (json.dumps(meta) + "\n").encode("utf-8"))
            except OSError as exc:
                self.notes.append(f"WARNING {self.meta}: cannot write the sidecar ({exc.strerror})")
        if data is not None:
            self.journal.unlink()
        return added

    def _say_foreign(self, foreign: list[dict], here: Made) -> None:
        """Keeps, for the closing lines, how many keys of the record were made elsewhere, by where."""
        self.foreign = {(g["device"], g["triton"]): sum(len(keys) for keys in g["keys"].values()) for g in foreign}
        self._foreign_here = here

    def foreign_lines(self) -> list[str]:
        """A line per place where keys this record holds beside this process's were made, after one
        for the keys a tuner's store answered in this session."""
        store = [f"{self.path}: {self.from_store} key(s) were answered by the tuner's store, not tuned here: "
                 f"recorded as made on an unknown device, they are never replayed nor resumed as tuned "
                 f"here"] if self.from_store else []
        return store + [f"{self.path}: {count} key(s) there were made on {describe(made)}, not on "
                        f"{describe(self._foreign_here)}: they stay, named so in {self.meta.name}, and are "
                        f"tuned again wherever the device or Triton differs" for made, count in self.foreign.items()]

    def _drop_changed(self, kernel: str, dropped: int) -> None:
        """A key of `kernel` decided for another fingerprint than the record's: the record's keys of
        it, tuned for the kernel as it was, answer nothing now (the fold dropped them: journal.apply)."""
        self._dropped = True  # the sidecar's complete_for vouches for keys no longer there
        if dropped and kernel not in self.explained:
            self.explained.add(kernel)
            self.notes.append(f"kernel {kernel} changed since {self.path} was recorded (source or configs "
                              f"differ): its {dropped} earlier key(s) there were dropped, the keys met "
                              f"here are tuned again")

    # SIGTERM: fold, then die of it as the process would have (sigterm.py).
    def fold_on_sigterm(self) -> None:
        """Folds before the process dies of SIGTERM, where nobody else handles it."""
        self._sigterm.install()

    def restore_sigterm(self) -> None:
        self._sigterm.restore()
