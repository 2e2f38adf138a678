"""Resume: a key an earlier record already holds is not tuned again (docs/CONTRACT.md, "Resume").

`WARMUP_HARNESS_RESUME_DIR` names the folder of an earlier record (scripts/warmup passes the
RECORD_DIR it publishes into). Its `<op>.json` answers a key only when its sidecar `<op>.meta.json`
names this process's Triton version and device model: a config tuned for another GPU or compiler
is no answer, and neither is one tuned for another version of the kernel (the sidecar's
`kernels` fingerprint differs from this one's: configs.fingerprint). `WARMUP_HARNESS_FRESH` (1,
true, yes) turns it off. Such a key is pinned to the earlier config, not tuned.

Two uses. The earlier record is the record this session writes (RESUME_DIR = RECORD_DIR, the
record as a cache): its keys are there already, and nothing is carried. It is another folder's (a
sweep child resuming from the record its run publishes into): once the device is known to match
(at the first key), every key of the earlier record is carried into this process's record in one
write (writer.RecordWriter.carry), with the seconds the earlier sidecar gave it, so that the new
record, which replaces the earlier one when published (even after a stopped sweep,
scripts/warmup), still holds them all. An interrupted sweep whose record was published thus picks
up where it stopped.

Nothing here refuses the run: an earlier record that is missing, unreadable or made elsewhere only
means every key is tuned, and a line says why. Standard library only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from .. import env
from ..env import ProtocolError
from .records import RecordError, fingerprints, load_meta, load_records, meta_path, record_path

RESUME_DIR = "WARMUP_HARNESS_RESUME_DIR"
FRESH = env.FRESH

_YES = ("1", "true", "yes")
_NO = ("0", "false", "no")


class ResumeError(ProtocolError):
    """A resume setting that cannot be read (a usage error)."""


class Earlier:
    """The keys of an earlier record, usable once its device is known to be this process's."""

    def __init__(self, path: Path, records: dict[str, dict[str, dict]], meta: dict):
        self.path = path
        self.records = records
        self.seconds: dict[str, dict[str, Any]] = meta.get("tune_seconds") or {}
        self.triton = meta.get("triton")
        self.device = meta.get("device")
        self.kernels = fingerprints(meta)  # {kernel: fingerprint}; a kernel not named is trusted
        self.checked: bool | None = None  # the device was compared (at the first key)

    def usable(self, device_name: Callable[[], str | None], notes: list[str]) -> bool:
        """Whether the earlier record was made on this device model; asked at the first key,
        once the benchmark has set its device up."""
        if self.checked is None:
            here = device_name()
            self.checked = here is not None and here == self.device
            if not self.checked:
                notes.append(f"resume: {self.path} was recorded on {self.device}, this process runs on "
                             f"{here}: its keys are tuned again")
        return self.checked

    def entries(self) -> list[tuple[str, str, dict, Any, str | None]]:
        """Every (kernel, key, config, seconds, fingerprint) of the earlier record, as the record
        writer carries them (writer.RecordWriter.carry)."""
        out = []
        for kernel, keys in self.records.items():
            fingerprint = self.kernels.get(kernel)
            for key in keys:
                config, seconds = self.lookup(kernel, key)
                out.append((kernel, key, config, seconds, fingerprint))
        return out

    def keys(self) -> int:
        return sum(len(v) for v in self.records.values())

    def lookup(self, kernel: str, key: str) -> tuple[dict, Any] | None:
        config = self.records.get(kernel, {}).get(key)
        if config is None:
            return None
        seconds = self.seconds.get(kernel, {}) if isinstance(self.seconds, dict) else {}
        value = seconds.get(key) if isinstance(seconds, dict) else None
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return config, value if ok else None


def fresh(raw: str | None) -> bool:
    if raw is None:
        return False
    value = raw.strip().lower()
    if value in _YES:
        return True
    if value in _NO:
        return False
    raise ResumeError(f"{FRESH}={raw!r} is not one of {', '.join(_YES + _NO)}")


def load(setting: Callable[[str], str | None], op: str, triton_version: str,
         lines: list[str]) -> Earlier | None:
    """The earlier record to resume from, or None (with a line in `lines` saying why, where one
    was named); raises ResumeError on a FRESH value that is neither yes nor no."""
    folder = setting(RESUME_DIR)
    if fresh(setting(FRESH)):
        if folder is not None:
            lines.append(f"resume: {FRESH} is set: every key is tuned, {folder} is not read")
        return None
    if folder is None:
        return None
    directory = Path(folder.strip())
    path = record_path(directory, op)
    try:  # read, not asked first: a folder this user cannot search is a warning too (EACCES)
        records = load_records(path)
    except FileNotFoundError:
        lines.append(f"resume: {path} does not exist yet: every key is tuned")
        return None
    except RecordError as exc:
        lines.append(f"WARNING resume: {exc}; every key is tuned")
        return None
    meta, problem = load_meta(meta_path(directory, op))
    if meta is None:
        why = problem or f"{meta_path(directory, op)} is missing"
        lines.append(f"resume: {why}: the Triton and device that made {path} are unknown, every key is tuned")
        return None
    if meta.get("triton") != triton_version:
        lines.append(f"resume: {path} was recorded with Triton {meta.get('triton')}, this is Triton "
                     f"{triton_version}: every key is tuned")
        return None
    if not meta.get("device"):
        lines.append(f"resume: {meta_path(directory, op)} names no device: every key is tuned")
        return None
    keys = sum(len(v) for v in records.values())
    lines.append(f"resume: {keys} key(s) of {path} (Triton {triton_version}, {meta['device']}) are not "
                 f"tuned again where the device is the same; {FRESH}=1 tunes every key")
    return Earlier(path, records, meta)
