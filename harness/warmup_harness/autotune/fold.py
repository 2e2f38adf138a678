"""What one fold of writer.py puts together: the journal's keys and an earlier record's carried
keys merged into the record and its sidecar (`merge`), the sidecar merged into (or a new one where
the one there cannot be), and the process's own fields in it (start-up and compile seconds, raced
keys, the harness's version). Pure but for reading the sidecar; writer.py holds the lock and writes.
Standard library only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from .journal import Entry, apply
from .records import META_FORMAT, META_VERSION, UNKNOWN, Made, fingerprints, load_meta, sidecar_damage


def merge(records: dict, meta: dict, made: dict, entries: list[Entry], carried: list[Entry], unchecked: set[str],
          mine: Made, dropped: Callable[[str, int], None]) -> int:
    """The journal's keys, in order (journal.apply: `dropped(kernel, how many)` where a journaled
    key's fingerprint differs from the record's), then the carried ones into `records`, the
    sidecar's `tune_seconds`, `kernels` and `unchecked`, and `made` (where each key was made: a
    journal line's own, else `mine`; a carried key its earlier record's). Returns how many carried
    keys went in."""
    added = 0
    tune = meta.setdefault("tune_seconds", {})
    kernels = fingerprints(meta)
    doubtful = {k for k in meta.get("unchecked", []) if isinstance(k, str)} | set(unchecked)
    doubtful -= {entry[0] for entry in entries if entry[4] is not None}  # taken from the kernel that ran here
    apply(entries, records, made, mine, kernels, tune, dropped)
    for kernel, key, config, seconds, fingerprint, where in carried:
        here_print = kernels.get(kernel, fingerprint)
        if fingerprint is not None and here_print != fingerprint:
            continue  # tuned here for the kernel as it is now: the earlier keys are stale
        if fingerprint is not None:
            kernels[kernel] = fingerprint
        keys = records.setdefault(kernel, {})
        if key not in keys:
            keys[key] = config
            tune.setdefault(kernel, {})[key] = seconds
            made[kernel, key] = where if where is not None else UNKNOWN
            added += 1
    if kernels or "kernels" in meta:
        meta["kernels"] = kernels
    doubtful &= {k for k, v in kernels.items() if v is not None}
    if doubtful:
        meta["unchecked"] = sorted(doubtful)
    else:
        meta.pop("unchecked", None)
    return added


def sidecar_to_merge_into(path: Path, op: str, notes: list[str]) -> tuple[dict, bool]:
    """The sidecar there and True, or a new one and False where there is none or it cannot be
    merged into (then nothing says where the record's keys were made; a note says it was replaced):
    the record never waits on its sidecar being sound."""
    meta, problem = load_meta(path)
    if meta is not None:
        problem = sidecar_damage(meta, path)
    if problem is not None and not any(problem in note for note in notes):
        notes.append(f"WARNING {problem}; it was replaced by this run's sidecar")
    if problem is not None or meta is None:
        return {"format": META_FORMAT, "version": META_VERSION, "op": op, "tune_seconds": {}}, False
    return meta, True


def add_process_seconds(meta: dict, mine: dict, compile_added: float) -> float:
    """This process's start-up and compile seconds (`mine`, the session's extra fields) into the
    sidecar, which holds them for every process that recorded there: the longest start-up, the sum
    of compiling. `compile_added`: of this process's compile seconds, those in the sidecar already;
    returns it as it is now."""
    startup, compiled = mine.get("startup_seconds"), mine.get("compile_seconds")
    old_startup, old_compiled = (_number(meta.get(k)) for k in ("startup_seconds", "compile_seconds"))
    if startup is not None:
        meta["startup_seconds"] = max(startup, old_startup) if old_startup is not None else startup
    else:
        meta["startup_seconds"] = old_startup
    if compiled is not None:
        meta["compile_seconds"] = round((old_compiled or 0.0) + compiled - compile_added, 6)
        return compiled
    meta["compile_seconds"] = old_compiled
    return compile_added


def add_races(meta: dict, extra: dict, records: dict) -> None:
    """This process's raced keys (autotune/race.py: kernel -> key -> {"raced", "retimed", ...}) into
    the sidecar's `race`, which keeps only keys the record holds, and its kernels' history settings
    into `race_settings` (a kernel named there keeps its own)."""
    settings = extra.get("race_settings")
    if settings:
        known = meta.get("race_settings")
        meta["race_settings"] = {**settings, **(known if isinstance(known, dict) else {})}
    mine = extra.get("race")
    races = meta.get("race")
    if not mine and races is None:
        return
    races = {k: dict(v) for k, v in races.items() if isinstance(v, dict)} if isinstance(races, dict) else {}
    for kernel, keys in (mine or {}).items():
        races.setdefault(kernel, {}).update(keys)
    meta["race"] = {kernel: {key: v for key, v in keys.items() if key in records.get(kernel, {})}
                    for kernel, keys in races.items() if kernel in records}


def harness_version() -> str:
    from .. import __version__

    return __version__


def _number(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
