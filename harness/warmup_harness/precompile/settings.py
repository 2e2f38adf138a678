"""The settings of compiling ahead and timing (docs/CONTRACT.md, "The record/replay harness"):
read through a getter of raw values (the session's is env.raw_setting: the environment variable,
else the ini option), so that one reader serves both and tests pass a dict's `get`; a value that
cannot be used raises ProtocolError naming the setting.
Standard library only.
"""

from __future__ import annotations

import importlib.util
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from collections.abc import Mapping

from .. import env
from ..env import ProtocolError

MODE = env.PRECOMPILE
TIMEOUT = env.COMPILE_TIMEOUT
WORKERS = env.COMPILE_WORKERS
PRELOAD = env.COMPILE_PRELOAD
START = env.COMPILE_START
LOCK_DIR = env.DEVICE_LOCK_DIR
OVERLAP = env.COMPILE_OVERLAP  # configs are timed as their compiles finish (precompile/ahead.py)
CHILDREN = env.SPAWN_CHILDREN  # set by warmup-spawn: children running at once on this machine
MODES = ("processes", "threads", "off")
STARTS = ("fork", "spawn")  # how worker processes start: forked from the session (default), or spawned
MAX_WORKERS = 32  # the default's cap: past it a pool costs more memory than it saves time
DEFAULT_TIMEOUT_S = 300.0  # a compile worker's silence that counts as stuck: a real compile takes a minute at most
LOCK_FOLDER = "warmup-harness-device-locks"

# The settings an ini file may hold too (the option is the name in lowercase; the environment
# variable wins). WARMUP_SPAWN_CHILDREN is not one: warmup-spawn sets it per child. Racing's are
# autotune/race_settings.py's.
INI_SETTINGS = {
    MODE: "how a new key's configs are compiled ahead: 'processes' (default), 'threads' or 'off'",
    WORKERS: "compile workers, a whole number of at least 1 (default: this process's CPUs / children)",
    PRELOAD: "modules each spawned compile worker imports when it starts, comma-separated (default: torch)",
    START: "how compile worker processes start: 'fork' (default, where safe) or 'spawn'",
    TIMEOUT: "seconds the compile workers may go without a result before the key is left to Triton",
    LOCK_DIR: "the folder of the per-device timing locks",
    OVERLAP: "time each config as soon as its compile is done while the pool compiles the rest (1/yes, default, "
             "or 0/no)",
}


@dataclass(frozen=True)
class CompileSettings:
    mode: str  # processes, threads or off
    workers: int
    preload: tuple[str, ...]  # modules a spawned worker process imports when it starts (a forked one has them)
    lock_dir: Path
    shared_lock_dir: bool  # the default folder, which every user's runs share
    timeout_s: float = DEFAULT_TIMEOUT_S  # how long compile workers may go without a result
    notes: tuple[str, ...] = ()  # what was changed from the values given (a count capped), said at the start
    start: str = "fork"  # how worker processes start, where the platform allows it (worker_processes.fork_unsafe)
    overlap: bool = True  # time a config as soon as its compile is done (precompile/ahead.py)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> CompileSettings:
        return compile_settings(environ.get)


def compile_settings(get: Callable[[str], str | None]) -> CompileSettings:
    """Reads the settings through `get(name)`, the raw value of the setting `name` (an environment
    variable) or None; raises ProtocolError naming a setting whose value is unusable."""
    mode = (get(MODE) or "").strip().lower() or "processes"
    if mode not in MODES:
        raise ProtocolError(f"{MODE}={mode!r} is not one of {', '.join(MODES)}")
    chosen_dir = (get(LOCK_DIR) or "").strip()
    lock_dir = Path(os.path.abspath(chosen_dir)) if chosen_dir else Path(tempfile.gettempdir()) / LOCK_FOLDER
    start = (get(START) or "").strip().lower() or "fork"
    if start not in STARTS:
        raise ProtocolError(f"{START}={start!r} is not one of {', '.join(STARTS)}")
    workers, notes = _workers(get)
    return CompileSettings(mode, workers, _preload(get), lock_dir, not chosen_dir, _seconds(get, TIMEOUT), notes,
                           start, env.truth(OVERLAP, get(OVERLAP), default=True))


def _seconds(get: Callable[[str], str | None], name: str) -> float:
    """A number of seconds above 0 in ASCII digits (`300`, `2.5`), at most what a wait can take."""
    raw = (get(name) or "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    if not re.fullmatch(r"[0-9]*\.?[0-9]+|[0-9]+\.", raw) or float(raw) <= 0:
        raise ProtocolError(f"{name}={raw!r} is not a number of seconds above 0")
    return min(float(raw), threading.TIMEOUT_MAX)


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _workers(get: Callable[[str], str | None]) -> tuple[int, tuple[str, ...]]:
    """WARMUP_HARNESS_COMPILE_WORKERS, at most the CPUs this process may use (a line says so when
    that caps it), else those CPUs shared among the children that run at once
    (WARMUP_SPAWN_CHILDREN), at most MAX_WORKERS."""
    cpus = _cpus()
    chosen = env.count(WORKERS, get(WORKERS))
    children = env.count(CHILDREN, get(CHILDREN)) or 1
    if chosen is None:
        return max(1, min(MAX_WORKERS, cpus // children)), ()
    if chosen > cpus:
        raw = (get(WORKERS) or "").strip()
        shown = raw if len(raw) <= 20 else raw[:20] + "..."
        return cpus, (f"{WORKERS}={shown} is more than the {cpus} CPU(s) this process may use: {cpus} worker(s)",)
    return chosen, ()


def _preload(get: Callable[[str], str | None]) -> tuple[str, ...]:
    """WARMUP_HARNESS_COMPILE_PRELOAD (comma-separated; empty: nothing), else torch when it is
    installed: a kernel's module almost always imports it, and a spawned worker pays that import
    once, while the benchmark starts, instead of on the first key. A forked worker has every module
    the session imported, so the setting is moot for it (read, and used only where workers are
    spawned)."""
    raw = get(PRELOAD)
    if raw is None:
        return ("torch",) if importlib.util.find_spec("torch") else ()
    return tuple(name.strip() for name in raw.split(",") if name.strip())
