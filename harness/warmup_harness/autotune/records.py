"""The files the harness reads and writes: `<dir>/<op>.json`, the record every tool of the project
reads, and `<dir>/<op>.meta.json`, its sidecar (docs/CONTRACT.md, "The record/replay harness").

A record is `{kernel: {key: config}}` as Python's `json` module writes it with its defaults, a
config being `{"kwargs": {...}, "num_warps": ..., "num_stages": ..., ...}`. A file that is not
that shape is refused with a message naming the file and the place: a replay must never measure
with configs it misread. Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from .. import env
from . import atomic, safe_read

META_FORMAT = "warmup-harness-meta"
META_VERSION = 2  # what this harness writes: 2 added `foreign` (where each key was made)
META_READS = (1, 2)  # what it reads: a version-1 sidecar's keys were all made where it names
# The sidecar's signature of the last run that finished with nothing missing (protocol's
# history::COMPLETE_FOR); the run's own is env.SIGNATURE, which warmup-plan sets.
COMPLETE_FOR = "complete_for"


class RecordError(Exception):
    """A record file that cannot be used; the message names the file, the place and what to do."""


def record_path(directory: Path, op: str) -> Path:
    return directory / f"{op}.json"


def meta_path(directory: Path, op: str) -> Path:
    return directory / f"{op}.meta.json"


def short(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (ValueError, RecursionError):  # an integer or a nesting Python will not write back
        return f"a {type(value).__name__} too large to show"
    return text if len(text) <= 80 else text[:77] + "..."


def _parse(path: Path, what: str) -> Any:
    """The JSON at `path`; raises FileNotFoundError where there is none, RecordError for the rest
    (a FIFO or a device there included: safe_read)."""
    try:
        text = safe_read.read_bytes(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(f"{path}: {what} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise RecordError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
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
                f"{path}: kernel {kernel!r} maps to {short(keys)}, not to an object "
                f"{{key: config}}; {foreign}"
            )
        for key, config in keys.items():
            if not (isinstance(config, dict) and isinstance(config.get("kwargs"), dict)):
                raise RecordError(
                    f"{path}: kernel {kernel!r} key {key!r}: {short(config)} is not a harness "
                    f'config ({{"kwargs": {{...}}, "num_warps": ..., ...}}); {foreign}'
                )
    return doc


def load_records(path: Path) -> dict[str, dict[str, dict]]:
    """The record at `path`, checked; raises RecordError, or FileNotFoundError where there is none."""
    return check_records(_parse(path, "the record"), path)


def load_meta(path: Path) -> tuple[dict | None, str | None]:
    """The sidecar at `path` and None, or None and why it cannot be used (None, None if absent)."""
    try:
        doc = _parse(path, "the sidecar")
    except FileNotFoundError:
        return None, None
    except RecordError as exc:
        return None, str(exc)
    if not (isinstance(doc, dict) and doc.get("format") == META_FORMAT):
        return None, f"{path}: not a {META_FORMAT} file; its versions and device are not checked"
    # As the tools read it: an integer they read, not 1.0 nor true.
    version = doc.get("version")
    if type(version) is not int or version not in META_READS:
        reads = " or ".join(map(str, META_READS))
        return None, f"{path}: sidecar version {version!r}, this harness reads {reads}; ignored"
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
        atomic.probe(directory)
    except OSError as exc:
        raise RecordError(
            f"{variable}={directory}: cannot write files there ({exc.strerror or exc}): give a "
            f"folder this user can write, or replay what it holds with {env.REPLAY_DIR} (scripts/warmup does)"
        ) from None


def fingerprints(meta: dict | None) -> dict[str, str | None]:
    """The sidecar's `kernels` map, {kernel: fingerprint or null}; empty where it has none (a
    sidecar written before fingerprints, or none at all). Entries of the wrong type are left out."""
    kernels = meta.get("kernels") if isinstance(meta, dict) else None
    if not isinstance(kernels, dict):
        return {}
    return {k: v for k, v in kernels.items() if v is None or isinstance(v, str)}


def changed(recorded: dict[str, str | None], kernel: str, fingerprint: str | None, path: Path,
            keys: int, then: str) -> str | None:
    """The line that says why `kernel`'s recorded keys no longer answer it, or None when they do:
    its fingerprint here differs from the one the sidecar names, or the sidecar names null (the
    shards that recorded it disagreed). A kernel the sidecar does not name (a sidecar from before
    fingerprints), or one whose fingerprint cannot be taken here, is trusted."""
    if kernel not in recorded or fingerprint is None or recorded[kernel] == fingerprint:
        return None
    if recorded[kernel] is None:
        return (f"kernel {kernel} has no single fingerprint in {path} (the shards that recorded it "
                f"disagreed): its {keys} key(s) are {then}")
    return f"kernel {kernel} changed since {path} was recorded (source or configs differ): its {keys} key(s) are {then}"


Made = tuple["str | None", "str | None"]  # (device, Triton version) a key was made with; None: unknown
UNKNOWN: Made = (None, None)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class Provenance:
    """Where each key of a record was made (docs/CONTRACT.md, "The record/replay harness",
    `foreign`): the sidecar's own `device` and `triton`, but for the keys its `foreign` groups
    name. With no sidecar, or one that cannot be read, every key's is unknown."""

    def __init__(self, meta: dict | None):
        self.known = isinstance(meta, dict)
        self.own: Made = (_text(meta.get("device")), _text(meta.get("triton"))) if self.known else UNKNOWN
        self.foreign: dict[tuple[str, str], Made] = {}
        for group in (meta.get("foreign") if self.known else None) or []:
            if not isinstance(group, dict) or not isinstance(group.get("keys"), dict):
                continue
            made = (_text(group.get("device")), _text(group.get("triton")))
            for kernel, keys in group["keys"].items():
                for key in keys if isinstance(keys, list) else []:
                    if isinstance(key, str):
                        self.foreign[kernel, key] = made

    def made(self, kernel: str, key: str) -> Made:
        return self.foreign.get((kernel, key), self.own)


def foreign_groups(made: dict[tuple[str, str], Made], own: Made) -> list[dict]:
    """The sidecar's `foreign`: the keys of `made` whose provenance is not `own`, grouped by
    provenance in first-seen order."""
    groups: dict[Made, dict[str, list[str]]] = {}
    for (kernel, key), where in made.items():
        if where != own:
            groups.setdefault(where, {}).setdefault(kernel, []).append(key)
    return [{"device": d, "triton": t, "keys": keys} for (d, t), keys in groups.items()]


def describe(made: Made) -> str:
    """`NVIDIA A100 with Triton 3.1.0`, unknown parts said so."""
    device, triton = made
    return f"{device or 'an unknown device'} with Triton {triton or 'unknown'}"


def made_here(made: Made, here: Made) -> bool:
    """Whether a key made with `made` answers in a process running `here`: the same device and
    the same Triton, each known."""
    return None not in made and made == here


def replays_here(made: Made, here: Made) -> bool:
    """Whether a replay (a folder the user or the sweep's measurement named: its word) pins a key
    made with `made` in a process running `here`: the same Triton, known, and a device that is
    this one or that had no name (a sweep's children on an unnamed device, seconds ago)."""
    return made[1] is not None and made[1] == here[1] and made[0] in (None, here[0])


def sidecar_damage(meta: dict, path: Path) -> str | None:
    """What makes a sidecar unfit to add keys to (a field of the wrong type), or None."""
    foreign = meta.get("foreign", [])
    if not isinstance(foreign, list) or not all(
            isinstance(g, dict) and isinstance(g.get("keys"), dict) and all(
                isinstance(v, list) and all(isinstance(k, str) for k in v) for v in g["keys"].values())
            and all(g.get(f) is None or isinstance(g.get(f), str) for f in ("device", "triton"))
            for g in foreign):
        return f"{path}: \"foreign\" is {short(foreign)}, not a list of {{device, triton, keys: {{kernel: [key]}}}}"
    kernels = meta.get("kernels", {})
    if not isinstance(kernels, dict) or not all(v is None or isinstance(v, str) for v in kernels.values()):
        return f"{path}: \"kernels\" is {short(kernels)}, not an object {{kernel: fingerprint}}"
    seconds = meta.get("tune_seconds", {})
    if not isinstance(seconds, dict):
        return f"{path}: \"tune_seconds\" is {short(seconds)}, not an object {{kernel: {{key: seconds}}}}"
    for kernel, keys in seconds.items():
        if not isinstance(keys, dict):
            return f"{path}: \"tune_seconds\" of kernel {kernel!r} is {short(keys)}, not an object {{key: seconds}}"
        for key, value in keys.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                return f"{path}: \"tune_seconds\" of kernel {kernel!r} key {key!r} is {short(value)}, not a number"
    return None
