"""The harness protocol's environment: which mode this process runs in, for which op, and the
process-wide settings that make each process's sweep a real sweep.

Every variable name the harness reads is here, once; the modules that read them import them from
here. Names and meanings are docs/CONTRACT.md's ("The harness protocol", "The record/replay
harness"), and so is how a setting's value reads (`truth`, `count`, `percent`, `path`): a value
these cannot take is a ProtocolError naming the setting.
Standard library only: this module is imported whenever pytest loads the plugin.
"""

from __future__ import annotations

import enum
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Mapping, MutableMapping

CURRENT_OP = "FLAGGEMS_PERF_CURRENT_OP"
RECORD_DIR = "FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"
REPLAY_DIR = "FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR"
DEFAULT_OP = "default"

# `fd:N`, the read end of a pipe that `warmup-spawn --measure` made and the measurement inherited:
# a measurement started with the sweep waits there before its first test for the sweep's outcome
# (gate.py).
GATE = "WARMUP_HARNESS_GATE"

# What a replay does with a key its record lacks: sweep it live (and report it), or fail.
REPLAY_MISS = "WARMUP_HARNESS_REPLAY_MISS"

# The harness's own settings that an ini file may hold too (the option is the name in lowercase);
# the environment variable wins, as pytest-xdist's do. The protocol's variables are not here: the
# tools set them per process.
INI_SETTINGS = {
    REPLAY_MISS: "replay: what a key the record cannot answer does, 'sweep' (default) or 'fail'",
}

# FlagGems keeps tuned configs in this database and reuses its rows instead of sweeping.
FLAGGEMS_DB_URL = "FLAGGEMS_DB_URL"
PRIVATE_DB_URL = "sqlite:///:memory:"
# `1` in every sweep child warmup-spawn starts; such a child tunes in a private store.
WARMUP_WORKER = "FLAGGEMS_PERF_WARMUP_WORKER"
# Yes: tune every key, resuming nothing (autotune/resume.py); such a session tunes in a private store.
FRESH = "WARMUP_HARNESS_FRESH"
# This run's signature (warmup-plan's): a session resuming from its own record folder that passes
# names it in the sidecar's `complete_for`, so that warmup-plan reuses the record for the next run of it.
SIGNATURE = "WARMUP_HARNESS_SIGNATURE"
# Record mode: an earlier record whose keys are not tuned again (autotune/resume.py).
RESUME_DIR = "WARMUP_HARNESS_RESUME_DIR"
# Record mode: a by-key run's claim folder (autotune/claims.py).
CLAIM_DIR = "WARMUP_HARNESS_CLAIM_DIR"
# A sweep child's progress file, which warmup-spawn reads (autotune/progress.py).
PROGRESS = "WARMUP_HARNESS_PROGRESS"
# Hidden, for tests: a folder standing in for `/` where the device is probed (autotune/device.py;
# protocol's env::PROBE_ROOT).
PROBE_ROOT = "WARMUP_PROBE_ROOT"
# Set by warmup-spawn: children running at once on this machine (precompile/settings.py).
SPAWN_CHILDREN = "WARMUP_SPAWN_CHILDREN"
# Compiling ahead and timing (precompile/settings.py).
PRECOMPILE = "WARMUP_HARNESS_PRECOMPILE"
COMPILE_TIMEOUT = "WARMUP_HARNESS_COMPILE_TIMEOUT"
COMPILE_WORKERS = "WARMUP_HARNESS_COMPILE_WORKERS"
COMPILE_PRELOAD = "WARMUP_HARNESS_COMPILE_PRELOAD"
COMPILE_START = "WARMUP_HARNESS_COMPILE_START"
COMPILE_OVERLAP = "WARMUP_HARNESS_COMPILE_OVERLAP"
DEVICE_LOCK_DIR = "WARMUP_HARNESS_DEVICE_LOCK_DIR"
# Racing (autotune/race_settings.py).
RACE = "WARMUP_HARNESS_RACE"
RACE_HISTORY = "WARMUP_HARNESS_RACE_HISTORY"
RACE_NEAR = "WARMUP_HARNESS_RACE_NEAR"
RACE_AUDIT = "WARMUP_HARNESS_RACE_AUDIT"

# A yes/no setting's words, any case (docs/CONTRACT.md).
YES, NO = ("1", "true", "yes"), ("0", "false", "no")
HUGE = 10**9  # a count past it is read as it (a longer number is no more a count of anything)


class ProtocolError(Exception):
    """The protocol's variables contradict each other or hold a value the harness cannot use."""


class Kind(enum.Enum):
    RECORD = "record"
    REPLAY = "replay"


class MissPolicy(enum.Enum):
    """What a replay does with a key its record cannot answer."""

    SWEEP = "sweep"  # sweep it live, and name it at the end
    FAIL = "fail"  # raise in the test


@dataclass(frozen=True)
class Mode:
    """Record or replay, the folder that holds `<op>.json`, and the op."""

    kind: Kind
    directory: Path
    op: str


def raw_setting(config: Any, name: str) -> str | None:
    """As `setting`, but an environment variable that is set counts even when blank (for settings
    whose empty value means something: an empty preload list is no preload)."""
    if name in os.environ:
        return os.environ[name]
    return setting(config, name)


def setting(config: Any, name: str) -> str | None:
    """The raw value of a harness setting: the environment variable `name` when it is set and not
    blank, else the ini option `name.lower()` when pytest's config has one and it is not blank, else
    None. `config` is pytest's Config (None: the environment alone)."""
    raw = os.environ.get(name)
    if raw is not None and raw.strip():
        return raw
    if config is None:
        return None
    try:
        value = config.getini(name.lower())
    except ValueError:  # no such ini option was registered
        return None
    return value if isinstance(value, str) and value.strip() else None


def truth(name: str, raw: str | None, default: bool = False) -> bool:
    """A yes/no setting: yes is 1, true or yes, no is 0, false or no, in any case and trimmed;
    unset or blank, `default`; anything else a ProtocolError naming the setting."""
    value = (raw or "").strip()
    if not value:
        return default
    if value.lower() in YES + NO:
        return value.lower() in YES
    raise ProtocolError(f"{name}={value!r} is not one of {', '.join(YES + NO)}")


def count(name: str, raw: str | None, least: int = 1) -> int | None:
    """A whole number of at least `least` (1 or 0) in ASCII digits (`isdigit` takes '²', which int()
    refuses); one past HUGE reads as HUGE, so that no count is ever too large to compare; unset or
    blank, None."""
    value = (raw or "").strip()
    if not value:
        return None
    digits = value.lstrip("0")
    if not re.fullmatch(r"[0-9]+", value) or not (digits or least == 0):
        raise ProtocolError(f"{name}={value!r} is not a whole number of at least {least}")
    if not digits:
        return 0
    return HUGE if len(digits) > len(str(HUGE)) else min(HUGE, int(digits))


def percent(name: str, raw: str | None) -> float | None:
    """A percentage above 0, at most 1000, in ASCII digits (`10`, `2.5`); unset or blank, None."""
    value = (raw or "").strip()
    if not value:
        return None
    if not re.fullmatch(r"[0-9]*\.?[0-9]+|[0-9]+\.", value) or not 0 < float(value) <= 1000:
        raise ProtocolError(f"{name}={value!r} is not a percentage above 0 (at most 1000)")
    return float(value)


def path(raw: str | None) -> str | None:
    """A file's path, made absolute (the session may change folders); unset or blank, None."""
    value = (raw or "").strip()
    return os.path.abspath(value) if value else None


# Unicode's White_Space, the space the tools trim a value of at both ends (Rust's `str::trim`);
# str.strip() alone would take U+001C to U+001F too.
WHITE_SPACE = ("\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
               + "\u2028\u2029\u202f\u205f\u3000")


def trim(value: str) -> str:
    """A protocol variable's value as the tools read it (protocol::env::record_dir_of, op::OpArg):
    trimmed of WHITE_SPACE at both ends; a value with bytes that are not UTF-8 (surrogate escapes,
    as Python decodes them) is kept whole."""
    if any("\udc80" <= c <= "\udcff" for c in value):
        return value
    return value.strip(WHITE_SPACE)


def _value(environ: Mapping[str, str], name: str) -> str:
    return trim(environ.get(name, ""))


def op_name(environ: Mapping[str, str]) -> str:
    """The op as every tool derives it: trimmed, and "default" when unset or blank."""
    return _value(environ, CURRENT_OP) or DEFAULT_OP


def protocol_requested(environ: Mapping[str, str]) -> bool:
    """Whether either protocol variable holds a folder; when not, the harness does nothing at all."""
    return bool(_value(environ, RECORD_DIR) or _value(environ, REPLAY_DIR))


def mode_from_env(environ: Mapping[str, str]) -> Mode | None:
    """The mode the variables ask for; None when neither is set."""
    record, replay = _value(environ, RECORD_DIR), _value(environ, REPLAY_DIR)
    if record and replay:
        raise ProtocolError(
            f"{RECORD_DIR} ({record}) and {REPLAY_DIR} ({replay}) are both set; record and replay "
            f"exclude each other: unset one of them"
        )
    if not (record or replay):
        return None
    kind, folder = (Kind.RECORD, record) if record else (Kind.REPLAY, replay)
    op = op_name(environ)
    problem = op_file_problem(op)
    if problem is not None:
        raise ProtocolError(
            f"{CURRENT_OP}={op!r}: the op names the file <op>.json in the record folder {folder}, and "
            f"{problem}: give the op's plain name, such as mm"
        )
    return Mode(kind, Path(os.path.abspath(folder)), op)


# The names a record folder gives an op's other files beside `<op>.json`.
SIBLING_SUFFIXES = (".meta", ".costs")


def op_file_problem(op: str) -> str | None:
    """Why `op` cannot name its files in a record folder (`<op>.json`, `<op>.meta.json`,
    `<op>.costs.json`, `.<op>.journal`), or None: the rule warmup-publish applies
    (protocol::op::file_name_problem), checked against it by tests/test_harness_files.py."""
    if "/" in op or "\0" in op:
        return "it may not hold '/' or NUL, which would name a file outside the folder"
    if op in (".", ".."):
        return "'.' and '..' name folders, not files"
    if op.endswith(SIBLING_SUFFIXES):
        return "an op ending in '.meta' or '.costs' would write over another op's sidecar or cost file"
    return None


def op_of_record_file(name: str) -> str | None:
    """The op whose record a file of a record folder is (`mm.json`: `mm`), or None for any other
    file (a sidecar, a cost file, `.json`): protocol::op::of_record_file's rule, checked against it
    by tests/test_protocol_agreement.py."""
    op = name[:-5] if name.endswith(".json") else ""
    return op if op and op_file_problem(op) is None else None


def miss_policy(option: str | None, raw: str | None) -> MissPolicy:
    """`--warmup-replay-miss`, else the setting's raw value (environment, else ini), else sweep."""
    value = (option or raw or MissPolicy.SWEEP.value).strip()
    try:
        return MissPolicy(value)
    except ValueError:
        raise ProtocolError(
            f"{REPLAY_MISS}={value!r} is not one of {', '.join(p.value for p in MissPolicy)}"
        ) from None


def isolate_stores(environ: MutableMapping[str, str]) -> str:
    """Says which FlagGems config store this session uses, giving it a private, empty one where the
    sweep needs it; returns the line that says which and why.

    FlagGems reads FLAGGEMS_DB_URL once, when it is first imported, and reuses the rows it finds.
    A store the user chose is kept. Otherwise a sweep child (FLAGGEMS_PERF_WARMUP_WORKER=1) gets
    `sqlite:///:memory:`, since its siblings would write one SQLite file at once, and so does a
    WARMUP_HARNESS_FRESH session, which must not be answered by earlier rows; every other session
    leaves the variable alone, so FlagGems uses its own store as it does without the harness, and
    a key that store answers is recorded, not swept. This must run before FlagGems is imported, so
    the plugin calls it from pytest_load_initial_conftests, before any conftest. Raises
    ProtocolError where WARMUP_HARNESS_FRESH is neither yes nor no, whatever else is set.
    """
    fresh = truth(FRESH, environ.get(FRESH))
    chosen = _value(environ, FLAGGEMS_DB_URL)
    if chosen:
        return (
            f"FlagGems' config store: {FLAGGEMS_DB_URL}={chosen} as you set it; configs it holds "
            f"are recorded, not swept"
        )
    if _value(environ, WARMUP_WORKER) == "1":
        why = f"a sweep child ({WARMUP_WORKER}=1): its siblings would write one SQLite file at once"
    elif fresh:
        why = f"{FRESH} is set: a fresh sweep is not answered by earlier rows"
    else:
        return (
            f"FlagGems' config store: its own ({FLAGGEMS_DB_URL} unset), as FlagGems uses it without "
            f"the harness: a key it holds is recorded, not swept"
        )
    environ[FLAGGEMS_DB_URL] = PRIVATE_DB_URL
    return (
        f"FlagGems' config store: {FLAGGEMS_DB_URL}={PRIVATE_DB_URL}, private and empty, as {why}"
    )


def late_store(modules: Mapping[str, object], environ: Mapping[str, str]) -> str | None:
    """A warning when FlagGems was imported before the plugin, so its store is not the one named
    in FLAGGEMS_DB_URL now (another plugin imported it first)."""
    libentry = modules.get("flag_gems.utils.libentry")
    opened = getattr(libentry, FLAGGEMS_DB_URL, None) if libentry is not None else None
    if libentry is None or opened == environ.get(FLAGGEMS_DB_URL):
        return None
    return (
        f"WARNING FlagGems was imported before this plugin, with {FLAGGEMS_DB_URL}={opened}: its "
        f"store may answer keys from earlier runs; set {FLAGGEMS_DB_URL}={PRIVATE_DB_URL} yourself"
    )
