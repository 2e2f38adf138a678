"""The plugin's entry: pytest's hooks that start a session (the package's `pytest11` entry point,
and what `-p warmup_harness` loads through the package's `pytest_plugins`).

At configure the session (session.py) starts, or, for a measurement started with the sweep, the
gate (gate.py) is registered to start it when the sweep's outcome comes; either is then a plugin
object registered with `config.pluginmanager`, whose own hooks end it, and holds the run's state.
Nothing happens at import: FlagGems' store is isolated in a hook, Triton is imported when a
protocol variable is set (before the conftests, for early_key.py's thread), FlagGems never
(compile workers, processes of their own, import neither pytest nor this module:
precompile/worker.py).
"""

from __future__ import annotations

import contextlib
import os
import sys

import pytest

from . import env
from .autotune import records
from .env import setting
from .autotune import race_settings
from .precompile import settings as compile_settings

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
    for name, text in {**env.INI_SETTINGS, **compile_settings.INI_SETTINGS, **race_settings.INI_SETTINGS}.items():
        parser.addini(name.lower(), f"{text} (${name} wins over it)", default="")


def pytest_load_initial_conftests(early_config):
    # FlagGems reads its store's location when it is imported, which a benchmark's conftest does
    # before pytest_configure runs: this hook runs before the first conftest is imported.
    if _isolate_stores(early_config) is not None and not _gate():
        # Triton's own key is hashed while the conftests import (early_key.py); a gated session
        # starts nothing before its gate opens.
        from . import early_key

        early_key.start()


def _isolate_stores(config) -> str | None:
    if STORE_NOTE not in config.stash:
        requested = env.protocol_requested(os.environ)
        try:
            config.stash[STORE_NOTE] = env.isolate_stores(os.environ) if requested else None
        except env.ProtocolError as exc:  # before any conftest: a usage error, as at configure
            raise pytest.UsageError(f"warmup-harness: {exc}") from None
    return config.stash[STORE_NOTE]


def pytest_configure(config):
    # A plugin named in a conftest's pytest_plugins is loaded after the initial conftests: then
    # this is the first hook it sees, and late_store says whether FlagGems came in first.
    store_note = _isolate_stores(config)
    gate = _gate()
    if gate:  # started alongside the sweep: the session starts when the gate opens (gate.py)
        from .gate import Gate

        config.pluginmanager.register(
            Gate(config, gate, lambda: _start(config, store_note), lambda line: _say(config, line)))
        return
    _start(config, store_note)


def _gate() -> str:
    """WARMUP_HARNESS_GATE's value: set only on a measurement started with the sweep (gate.py)."""
    return os.environ.get(env.GATE, "").strip()


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
        if mode:
            _check_triton(mode)
        session = Session.start(config, mode, policy) if mode else None
    except (env.ProtocolError, records.RecordError) as exc:  # refuse to measure anything
        raise pytest.UsageError(f"warmup-harness: {exc}") from None
    if session is not None:
        session.register(store_note)


def _check_triton(mode: env.Mode) -> None:
    """Refuses, in one line, a session that has no Triton to hook (not installed, or broken)."""
    try:
        import triton.runtime.autotuner  # noqa: F401  (what the hooks need)
    except ImportError as exc:
        variable = env.RECORD_DIR if mode.kind is env.Kind.RECORD else env.REPLAY_DIR
        raise env.ProtocolError(
            f"{variable} is set ({mode.kind.value} mode), but Triton cannot be imported in this Python "
            f"({exc}): install Triton where {sys.executable} finds it, or unset {variable}") from None


def device_timing_lock(config) -> contextlib.AbstractContextManager:
    """The session's device timing lock, for a benchmark's own GPU work in a warmup child (so that a
    sibling sharing the GPU never times a config meanwhile); a no-op outside a session. `config` is
    pytest's Config (`request.config`): the lock is the registered session's, not a global."""
    from .session import PLUGIN_NAME

    session = config.pluginmanager.get_plugin(PLUGIN_NAME)
    if session is None or session.stopped:
        return contextlib.nullcontext()
    return session.compiler.timing_lock
