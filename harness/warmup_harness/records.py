"""The files the harness reads and writes: `<dir>/<op>.json`, the record every tool of the project
reads, and `<dir>/<op>.meta.json`, its sidecar (docs/CONTRACT.md, "The record/replay harness").

A record is `{kernel: {key: config}}` as Python's `json` module writes it with its defaults, a
config being `{"kwargs": {...}, "num_warps": ..., "num_stages": ..., ...}`. A file that is not
that shape is refused with a message naming the file and the place: a replay must never measure
with configs it misread. Standard library only.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any, Callable
from collections.abc import Iterator

META_FORMAT = "warmup-harness-meta"
META_VERSION = 1


class RecordError(Exception):
    """A record file that cannot be used; the message names the file, the place and what to do."""


def record_path(directory: Path, op: str) -> Path:
    return directory / f"{op}.json"


def meta_path(directory: Path, op: str) -> Path:
    return directory / f"{op}.meta.json"


def _short(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (ValueError, RecursionError):  # an integer or a nesting Python will not write back
        return f"a {type(value).__name__} too large to show"
    return text if len(text) <= 80 else text[:77] + "..."


def _parse(path: Path, what: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(f"{path}: {what} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise RecordError(f"{path}: cannot read {what}: {exc.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(
            f"{path}:{exc.lineno}:{exc.colno}: {what} is not valid JSON ({exc.msg}); "
            f"the file is damaged or was cut short: record it again"
        ) from None
    except (ValueError, RecursionError) as exc:
        # Valid JSON that Python's json will not decode: an integer over its digit limit
        # (sys.get_int_max_str_digits) or nesting deeper than its recursion limit.
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(";")[0]
        raise RecordError(
            f"{path}: {what} cannot be decoded by Python's json ({why}); no harness wrote it: "
            f"record it again"
        ) from None


def check_records(doc: Any, path: Path) -> dict[str, dict[str, dict]]:
    """`doc` when it is a harness record, else a RecordError naming the first place that is not."""
    foreign = "was it written by another tool? Record it again with this harness"
    if not isinstance(doc, dict):
        raise RecordError(
            f"{path}: a record is a JSON object {{kernel: {{key: config}}}}, this file holds a "
            f"{type(doc).__name__}; {foreign}"
        )
    for kernel, keys in doc.items():
        if not isinstance(keys, dict):
            raise RecordError(
                f"{path}: kernel {kernel!r} maps to {_short(keys)}, not to an object "
                f"{{key: config}}; {foreign}"
            )
        for key, config in keys.items():
            if not (isinstance(config, dict) and isinstance(config.get("kwargs"), dict)):
                raise RecordError(
                    f"{path}: kernel {kernel!r} key {key!r}: {_short(config)} is not a harness "
                    f'config ({{"kwargs": {{...}}, "num_warps": ..., ...}}); {foreign}'
                )
    return doc


def load_records(path: Path) -> dict[str, dict[str, dict]]:
    """The record at `path`, checked."""
    return check_records(_parse(path, "the record"), path)


def load_meta(path: Path) -> tuple[dict | None, str | None]:
    """The sidecar at `path` and None, or None and why it cannot be used (None, None if absent)."""
    if not path.exists():
        return None, None
    try:
        doc = _parse(path, "the sidecar")
    except RecordError as exc:
        return None, str(exc)
    if not (isinstance(doc, dict) and doc.get("format") == META_FORMAT):
        return None, f"{path}: not a {META_FORMAT} file; its versions and device are not checked"
    if doc.get("version") != META_VERSION:
        return None, f"{path}: sidecar version {doc.get('version')!r}, expected {META_VERSION}; ignored"
    return doc, None


def versions() -> dict[str, str | None]:
    """Python, Triton, torch and FlagGems versions, read without importing anything new.

    A module already imported answers for itself (a vendor's Triton may come in another
    distribution); otherwise the installed distribution's metadata answers, or None.
    """
    found: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name, dists in (("triton", ("triton",)), ("torch", ("torch",)), ("flag_gems", ("flag_gems", "flag-gems"))):
        module = sys.modules.get(name)
        version = getattr(module, "__version__", None)
        for dist in dists if version is None else ():
            with contextlib.suppress(metadata.PackageNotFoundError):
                version = metadata.version(dist)
                break
        found[name] = str(version) if version is not None else None
    return found


def check_writable(directory: Path, variable: str) -> None:
    """Refuses, before any test sweeps, a record folder this process cannot make files in (a
    read-only mount, another user's folder): by making one, as the first decision would."""
    try:
        fd, name = tempfile.mkstemp(dir=directory, prefix=".warmup-harness-probe.")
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        raise RecordError(
            f"{variable}={directory}: cannot write files there ({exc.strerror or exc}): give a "
            f"folder this user can write"
        ) from None


@contextlib.contextmanager
def _locked(directory: Path, op: str) -> Iterator[None]:
    """Serializes writers of one op's files: pytest-xdist workers, or sessions run side by side."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / f".{op}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write_atomically(path: Path, doc: Any) -> None:
    """Writes `doc` to a new file beside `path` (mode 0666 less the umask), then renames it over."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class RecordWriter:
    """Adds decisions to `<dir>/<op>.json` and their tuning seconds to the sidecar, one key at a time.

    Each addition reads the files again under a lock and rewrites them atomically, so a crash keeps
    every key decided before it and several processes recording one op add up instead of
    overwriting each other. A key decided again replaces its earlier config.
    """

    def __init__(self, directory: Path, op: str, device_name: Callable[[], str | None]):
        self.directory = directory
        self.op = op
        self.path = record_path(directory, op)
        self.meta = meta_path(directory, op)
        self.decided: set[tuple[str, str]] = set()
        self.seconds = 0.0
        self.notes: list[str] = []  # said at the end: a damaged sidecar replaced
        self._device_name = device_name
        self._device: Any = _UNASKED  # asked at the first decision, when the device is in use

    def add(self, kernel: str, key: str, config: dict, seconds: float | None) -> None:
        if self._device is _UNASKED:
            self._device = self._device_name()
        try:
            with _locked(self.directory, self.op):
                records = load_records(self.path) if self.path.exists() else {}
                records.setdefault(kernel, {})[key] = config
                meta = self._sidecar_to_merge_into()
                meta.update(versions(), harness=_harness_version())
                if self._device is not None or "device" not in meta:
                    meta["device"] = self._device
                seconds_of = meta.setdefault("tune_seconds", {}).setdefault(kernel, {})
                seconds_of[key] = round(seconds, 6) if seconds is not None else None
                _write_atomically(self.path, records)
                _write_atomically(self.meta, meta)
        except OSError as exc:
            raise RecordError(
                f"{self.path}: cannot write the record ({exc.strerror or exc}): the record folder must "
                f"be a writable folder"
            ) from None
        self.decided.add((kernel, key))
        self.seconds += seconds or 0.0

    def _sidecar_to_merge_into(self) -> dict:
        """The sidecar there, or a new one where there is none or it cannot be merged into: the
        record never waits on its sidecar being sound."""
        meta, problem = load_meta(self.meta)
        if meta is not None:
            problem = sidecar_damage(meta, self.meta)
        if problem is not None and not self.notes:
            self.notes.append(f"WARNING {problem}; it was replaced by this run's sidecar")
        if problem is not None or meta is None:
            return {"format": META_FORMAT, "version": META_VERSION, "op": self.op, "tune_seconds": {}}
        return meta


def sidecar_damage(meta: dict, path: Path) -> str | None:
    """What makes a version-1 sidecar unfit to add keys to (a field of the wrong type), or None."""
    seconds = meta.get("tune_seconds", {})
    if not isinstance(seconds, dict):
        return f"{path}: \"tune_seconds\" is {_short(seconds)}, not an object {{kernel: {{key: seconds}}}}"
    for kernel, keys in seconds.items():
        if not isinstance(keys, dict):
            return f"{path}: \"tune_seconds\" of kernel {kernel!r} is {_short(keys)}, not an object {{key: seconds}}"
        for key, value in keys.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                return f"{path}: \"tune_seconds\" of kernel {kernel!r} key {key!r} is {_short(value)}, not a number"
    return None


_UNASKED = object()


def _harness_version() -> str:
    from . import __version__

    return __version__
