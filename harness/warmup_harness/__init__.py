"""warmup_harness: the record/replay side of parallel-warmup, as a pytest plugin.

Installing the package is enough (a `pytest11` entry point loads it); `pytest -p warmup_harness`
loads it by hand. With neither FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR nor
FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR set it does nothing at all. With one of them set:

* record: every autotuner decision goes to `<dir>/<op>.json` (`{kernel: {key: config}}`) through a
  journal beside it, folded in at the session's start and end (writer.py), with
  `<dir>/<op>.meta.json` beside it (versions, device, seconds each key took to tune);
* replay: the recorded configs are pinned and nothing is swept; a key the record lacks is swept
  live and reported at the end (or fails the test with `--warmup-replay-miss=fail`);
* in both, a key that is swept has its configs compiled ahead, in parallel and once across the
  processes sharing a Triton cache, and each config is timed holding its device's lock
  (precompile.py).

docs/CONTRACT.md ("The record/replay harness") is the surface; README.md shows how to run a
benchmark under `scripts/warmup`. This module holds the hooks that start a session; the session
(session.py) is then a plugin object of its own, whose hooks end it. Importing the package changes
nothing and imports only pytest and the standard library: FlagGems' store is isolated in a hook,
Triton is imported when a protocol variable is set, FlagGems never (compile workers, processes of
their own, import what the kernels they compile need: precompile.py). `setting(config, NAME)` reads
a harness setting (the environment variable, else the ini option `name`) for every module.
"""

from __future__ import annotations

import os

import pytest

from . import compile_settings, env, records
from .env import setting  # noqa: F401  (the settings' getter, for the harness's other modules)

__version__ = "0.1.0"

# What was done about FlagGems' store when pytest loaded the plugin (None: no protocol variable set).
STORE_NOTE = pytest.StashKey["str | None"]()


def pytest_addoption(parser):
    group = parser.getgroup("warmup-harness", "autotune record/replay (parallel-warmup)")
    group.addoption(
        "--warmup-replay-miss",
        choices=[p.value for p in env.MissPolicy],
        default=None,
        help="in replay mode, what a key missing from the record does: 'sweep' it live and report "
        f"it at the end (default), or 'fail' the test; default from ${env.REPLAY_MISS}, else the "
        f"{env.REPLAY_MISS.lower()} ini option",
    )
    for name, text in {**env.INI_SETTINGS, **compile_settings.INI_SETTINGS}.items():
        parser.addini(name.lower(), f"{text} (${name} wins over it)", default="")


def pytest_load_initial_conftests(early_config):
    # FlagGems reads its store's location when it is imported, which a benchmark's conftest does
    # before pytest_configure runs: this hook runs before the first conftest is imported.
    _isolate_stores(early_config)


def _isolate_stores(config) -> str | None:
    if STORE_NOTE not in config.stash:
        requested = env.protocol_requested(os.environ)
        config.stash[STORE_NOTE] = env.isolate_stores(os.environ) if requested else None
    return config.stash[STORE_NOTE]


def pytest_configure(config):
    # A plugin named in a conftest's pytest_plugins is loaded after the initial conftests: then
    # this is the first hook it sees, and late_store says whether FlagGems came in first.
    store_note = _isolate_stores(config)
    gate = os.environ.get(env.GATE, "").strip()
    if gate:  # started alongside the sweep: the session starts when the gate opens (gate.py)
        from .gate import Gate

        config.pluginmanager.register(
            Gate(config, gate, lambda: _start(config, store_note), lambda line: _say(config, line)))
        return
    _start(config, store_note)


def _say(config, line: str) -> None:
    from .session import say

    say(config, [line])


def _start(config, store_note: str | None) -> None:
    if store_note is None:  # neither protocol variable is set
        return
    from .session import Session

    try:
        mode = env.mode_from_env(os.environ)
        policy = env.miss_policy(config.getoption("warmup_replay_miss"), setting(config, env.REPLAY_MISS))
        session = Session.start(config, mode, policy) if mode else None
    except (env.ProtocolError, records.RecordError) as exc:  # refuse to measure anything
        raise pytest.UsageError(f"warmup-harness: {exc}") from None
    if session is not None:
        session.register(store_note)
