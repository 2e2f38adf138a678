"""The harness protocol's environment: which mode this process runs in, for which op, and the
process-wide settings that make each process's sweep a real sweep.

Names and meanings are docs/CONTRACT.md's ("The harness protocol", "The record/replay harness").
Standard library only: this module is imported whenever pytest loads the plugin.
"""

from __future__ import annotations

import enum
import os
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
# Tune every key (resume.py reads it too); such a session tunes in a private store.
FRESH = "WARMUP_HARNESS_FRESH"
# This run's signature (warmup-plan's): a session using its record folder as a cache that passes
# names it in the sidecar's `complete_for`, so that the next run of it replays the record.
SIGNATURE = "WARMUP_HARNESS_SIGNATURE"


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


def _value(environ: Mapping[str, str], name: str) -> str:
    return environ.get(name, "").strip()


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
    the plugin calls it from pytest_load_initial_conftests, before any conftest.
    """
    chosen = _value(environ, FLAGGEMS_DB_URL)
    if chosen:
        return (
            f"FlagGems' config store: {FLAGGEMS_DB_URL}={chosen} as you set it; configs it holds "
            f"are recorded, not swept"
        )
    if _value(environ, WARMUP_WORKER) == "1":
        why = f"a sweep child ({WARMUP_WORKER}=1): its siblings would write one SQLite file at once"
    elif _value(environ, FRESH).lower() in ("1", "true", "yes"):
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
