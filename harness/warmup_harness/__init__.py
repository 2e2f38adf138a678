"""warmup_harness: the record/replay side of parallel-warmup, as a pytest plugin.

Installing the package is enough (a `pytest11` entry point loads it); `pytest -p warmup_harness`
loads it by hand. With neither FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR nor
FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR set it does nothing at all. With one of them set:

* record: every autotuner decision goes to `<dir>/<op>.json` (`{kernel: {key: config}}`), the
  file rewritten atomically after each new key, with `<dir>/<op>.meta.json` beside it (versions,
  device, seconds each key took to tune);
* replay: the recorded configs are pinned and nothing is swept; a key the record lacks is swept
  live and reported at the end (or fails the test with `--warmup-replay-miss=fail`);
* in both, a key that is swept has its configs compiled ahead, in parallel and once across the
  processes sharing a Triton cache, and each config is timed holding its device's lock
  (precompile.py).

docs/CONTRACT.md ("The record/replay harness") is the surface; README.md shows how to run a
benchmark under `scripts/warmup`. Loading imports only the standard library: Triton is imported
when a protocol variable is set, FlagGems never (compile workers, processes of their own, import
what the kernels they compile need: precompile.py).
"""

from __future__ import annotations

import os
import sys

from . import env, records

__version__ = "0.1.0"

TAG = "[warmup-harness]"

# FlagGems reads its store's location when it is imported, which a benchmark's conftest does before
# pytest_configure runs; pytest imports plugins before conftests, so this is the moment to set it.
_STORE_NOTE = env.isolate_stores(os.environ) if env.protocol_requested(os.environ) else None


def pytest_addoption(parser):
    group = parser.getgroup("warmup-harness", "autotune record/replay (parallel-warmup)")
    group.addoption(
        "--warmup-replay-miss",
        choices=env.MISS_POLICIES,
        default=None,
        help="in replay mode, what a key missing from the record does: 'sweep' it live and report "
        "it at the end (default), or 'fail' the test; default from $" + env.REPLAY_MISS,
    )


def pytest_configure(config):
    gate = os.environ.get(env.GATE, "").strip()
    if gate:  # started alongside the sweep: the session starts when the gate opens (gate.py)
        from .gate import Gate

        config.pluginmanager.register(Gate(gate, lambda: _start(config), lambda line: _say(config, [line])))
        return
    _start(config)


def _start(config):
    if _STORE_NOTE is None:  # neither protocol variable was set when pytest loaded the plugin
        return
    import pytest

    from .session import Session

    try:
        mode = env.mode_from_env(os.environ)
        policy = env.miss_policy(os.environ, config.getoption("warmup_replay_miss"))
        session = Session.start(mode, policy, lambda line: _say(config, [line])) if mode else None
    except (env.ProtocolError, records.RecordError) as exc:  # refuse to measure anything
        raise pytest.UsageError(f"warmup-harness: {exc}") from None
    if session is None:
        return
    config._warmup_harness = session
    _say(config, [*session.opening_lines(), _STORE_NOTE, env.late_store(sys.modules, os.environ)])


def pytest_terminal_summary(config):
    _close(config)


def pytest_unconfigure(config):
    # Without the terminal reporter (-p no:terminal) the summary is said here.
    _close(config)
    harness = getattr(config, "_warmup_harness", None)
    if harness is not None:
        harness.stop()
        del config._warmup_harness


def _close(config):
    harness = getattr(config, "_warmup_harness", None)
    if harness is not None and not harness.closed:
        harness.closed = True
        _say(config, harness.closing_lines())


def _say(config, lines):
    """Writes lines to stderr, past pytest's output capture, so that a child's log shows them."""
    capman = config.pluginmanager.getplugin("capturemanager")
    text = "".join(f"{TAG} {line}\n" for line in lines if line)
    if capman is None:
        sys.stderr.write(text)
        sys.stderr.flush()
        return
    with capman.global_and_fixture_disabled():
        sys.stderr.write(text)
        sys.stderr.flush()
