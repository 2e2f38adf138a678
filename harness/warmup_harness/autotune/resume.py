"""Resume: a key an earlier record already holds is not tuned again (docs/CONTRACT.md, "Resume").

`WARMUP_HARNESS_RESUME_DIR` names the folder of an earlier record (warmup-plan and warmup-spawn
set it by protocol::env::resume_env: the record folder of the run). Its `<op>.json` answers a key
only where its sidecar `<op>.meta.json` says the key was made with this process's Triton version on
its device model (the sidecar's own `device` and `triton`, or its `foreign` group's:
records.Provenance): a config tuned for another GPU or compiler is no answer, and neither is one
tuned for another version of the kernel (the sidecar's `kernels` fingerprint differs from this
one's: fingerprints.py). The journal beside it (`.<op>.journal`: keys a fold that failed on a full
disk, or a kill, left unfolded) answers too, as the next fold would put it in, each key where its
line says it was made. `WARMUP_HARNESS_FRESH` yes (env.truth) turns it off; neither yes nor no
refuses the run. Such a key is pinned to the earlier config, not tuned.

Two uses. The earlier record is the record this session writes (RESUME_DIR = RECORD_DIR, the
record resumed from itself): its keys are there already, and nothing is carried. It is another folder's (a
sweep child resuming from the record folder its run publishes into): once the device is known to
match (at the first key), every key of the earlier record is carried into this process's record in
one write (writer.RecordWriter.carry), with the seconds the earlier sidecar gave it, so that the new
record, which replaces the earlier one when published (even after a stopped sweep), still holds
them all. An interrupted sweep whose record was published thus picks up where it stopped.

Nothing else here refuses the run: an earlier record that is missing, unreadable or made elsewhere
only means every key is tuned, and a line says why. Standard library only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from .. import env
from ..env import FRESH, RESUME_DIR
from .records import (Made, Provenance, RecordError, describe, fingerprints, load_meta, load_records, made_here,
                      meta_path, record_path)
from .journal import Entry, apply, journaled

class Earlier:
    """The keys of an earlier record, each usable where it was made on this process's device and
    Triton (the sidecar's `device` and `triton`, or its `foreign` group's: records.Provenance)."""

    def __init__(self, path: Path, records: dict[str, dict[str, dict]], meta: dict, triton: str | None = None,
                 journal: list[Entry] = ()):
        self.path = path
        self.records = records
        self.seconds: dict[str, dict[str, Any]] = meta.get("tune_seconds") or {}
        self.provenance = Provenance(meta)
        self.triton = triton  # this process's
        self.device = meta.get("device")
        self.kernels = fingerprints(meta)  # {kernel: fingerprint}; a kernel not named is trusted
        self.checked: bool | None = None  # the device was compared (at the first key)
        self.here: tuple[str | None, str | None] = (None, triton)
        self.elsewhere = 0  # keys made on another device or Triton, tuned again where met
        if journal:
            self._add_journal(journal)

    def _add_journal(self, journal: list[Entry]) -> None:
        """The keys journaled beside the record and never folded (a full disk, a kill), as the next
        fold puts them in (journal.apply)."""
        self.seconds = {k: dict(v) for k, v in self.seconds.items() if isinstance(v, dict)} \
            if isinstance(self.seconds, dict) else {}
        apply(journal, self.records, self.provenance.foreign, self.provenance.own, self.kernels, self.seconds)

    def usable(self, device_name: Callable[[], str | None], notes: list[str]) -> bool:
        """Whether any key of the earlier record was made on this device model and Triton; asked at
        the first key, once the benchmark has set its device up."""
        if self.checked is None:
            self.here = (device_name(), self.triton)
            made = [self.provenance.made(kernel, key) for kernel, keys in self.records.items() for key in keys]
            mine = sum(made_here(where, self.here) for where in made)
            self.elsewhere = len(made) - mine
            self.checked = mine > 0 or not made
            if not self.checked:
                notes.append(f"resume: {self.path} was recorded on {self.device}, this process runs on "
                             f"{self.here[0]}: its keys are tuned again")
            elif self.elsewhere:
                notes.append(f"resume: {self.elsewhere} key(s) of {self.path} were made on another device or "
                             f"Triton than {describe(self.here)} (its sidecar says where): they are tuned "
                             f"again where met")
        return self.checked

    def entries(self) -> list[tuple[str, str, dict, Any, str | None, Made]]:
        """Every (kernel, key, config, seconds, fingerprint, made) of the earlier record, as the
        record writer carries them (writer.RecordWriter.carry), each with where it was made."""
        out = []
        for kernel, keys in self.records.items():
            fingerprint = self.kernels.get(kernel)
            for key in keys:
                config, seconds = self._found(kernel, key)
                out.append((kernel, key, config, seconds, fingerprint, self.provenance.made(kernel, key)))
        return out

    def keys(self) -> int:
        return sum(len(v) for v in self.records.values())

    def resumable(self) -> int:
        """The keys made with this process's Triton: those that may answer here (the device is
        compared at the first key)."""
        return sum(self.provenance.made(kernel, key)[1] == self.triton
                   for kernel, keys in self.records.items() for key in keys)

    def lookup(self, kernel: str, key: str) -> tuple[dict, Any] | None:
        """The key's config and seconds where it was made on this device and Triton, else None."""
        if kernel not in self.records or key not in self.records[kernel]:
            return None
        if not made_here(self.provenance.made(kernel, key), self.here):
            return None
        return self._found(kernel, key)

    def _found(self, kernel: str, key: str) -> tuple[dict, Any]:
        config = self.records[kernel][key]
        seconds = self.seconds.get(kernel, {}) if isinstance(self.seconds, dict) else {}
        value = seconds.get(key) if isinstance(seconds, dict) else None
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return config, value if ok else None


def load(setting: Callable[[str], str | None], op: str, triton_version: str,
         lines: list[str]) -> Earlier | None:
    """The earlier record to resume from, or None (with a line in `lines` saying why, where one
    was named); raises env.ProtocolError on a FRESH value that is neither yes nor no (env.truth)."""
    folder = setting(RESUME_DIR)
    if env.truth(FRESH, setting(FRESH)):
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
        records = None
    except RecordError as exc:
        lines.append(f"WARNING resume: {exc}; every key is tuned")
        return None
    try:  # what a session that could not fold (a full disk) or was killed left: the next fold's keys
        journal = journaled(directory, op, "resumed")
    except RecordError as exc:
        journal = []
        lines.append(f"WARNING resume: {exc}")
    if records is None and not journal:
        lines.append(f"resume: {path} does not exist yet: every key is tuned")
        return None
    meta, problem = load_meta(meta_path(directory, op)) if records is not None else ({}, None)
    if meta is None and not journal:
        why = problem or f"{meta_path(directory, op)} is missing"
        lines.append(f"resume: {why}: the Triton and device that made {path} are unknown, every key is tuned")
        return None
    meta = meta or {}  # else only the journal's lines say where keys were made
    earlier = Earlier(path, records or {}, meta, triton_version, journal)
    made = [earlier.provenance.made(kernel, key) for kernel, keys in earlier.records.items() for key in keys]
    if made and not any(triton == triton_version for _, triton in made):
        lines.append(f"resume: {path} was recorded with Triton {meta.get('triton')}, this is Triton "
                     f"{triton_version}: every key is tuned")
        return None
    if made and not any(device for device, _ in made):
        lines.append(f"resume: {meta_path(directory, op)} names no device: every key is tuned")
        return None
    keys = earlier.resumable()
    where = f"{path} and its journal" if journal else str(path)
    lines.append(f"resume: {keys} key(s) of {where} (Triton {triton_version}, {meta.get('device')}) are not "
                 f"tuned again where the device is the same; {FRESH}=1 tunes every key")
    return earlier
