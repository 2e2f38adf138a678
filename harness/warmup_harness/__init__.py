"""warmup_harness: the record/replay side of parallel-warmup, as a pytest plugin.

Installing the package is enough (its `pytest11` entry point loads `warmup_harness.plugin`, as
pytest-xdist's loads `xdist.plugin`); `pytest -p warmup_harness` loads it by hand: this module
names the plugin in `pytest_plugins`, which pytest imports and registers right after it. With
neither FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR nor FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR set it does
nothing at all. With one of them set:

* record: every autotuner decision goes to `<dir>/<op>.json` (`{kernel: {key: config}}`) through a
  journal beside it, folded in at the session's start and end (autotune/writer.py), with
  `<dir>/<op>.meta.json` beside it (versions, device, seconds each key took to tune);
* replay: the recorded configs are pinned and nothing is swept; a key the record lacks is swept
  live and reported at the end (or fails the test with `--warmup-replay-miss=fail`);
* in both, a key that is swept has its configs compiled ahead, in parallel and once across the
  processes sharing a kernel cache, and each config is timed holding its device's lock
  (precompile/).

The package has three walls:

* the plugin's entry (`plugin`, `session`, `gate`): pytest's hooks, the session as a plugin object
  registered for the run, and the gate a measurement started with the sweep waits at; only these
  import pytest;
* `autotune/`: the hooks on Triton's autotuners and what a decision becomes: the record files,
  the writer, the record and replay policies, by-key claims and resume;
* `precompile/`: compiling a new key's configs ahead, in worker processes that import neither
  pytest nor the plugin, and the device's timing lock;

and, shared by them, `env` (the protocol's environment), `versions`, and the private names of
Triton's and pytest's that the harness touches (`triton_private`, `pytest_private`).

docs/CONTRACT.md ("The record/replay harness") is the surface; README.md shows how to run a
benchmark under `scripts/warmup`. Importing the package changes nothing and imports only the
standard library.
"""

from __future__ import annotations

__version__ = "0.1.0"

# `-p warmup_harness` and `pytest_plugins = ["warmup_harness"]` import this package: pytest then
# loads the plugin it names here (the entry point loads `warmup_harness.plugin` itself).
pytest_plugins = ["warmup_harness.plugin"]
