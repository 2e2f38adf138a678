"""Benchmark (not a test): what a launch of a decided key costs with the harness, against plain.

The Triton fixture (tests/triton_fixture, stubbed device) launches one decided key of each tuner
(Triton's own Autotuner; a LibTuner-like subclass, 5.0's shape; one shaped as FlagGems 5.3's) 20,000
times in one pytest session per variant (tests/triton_fixture/hot_path.py):

* plain: no harness;
* replay: FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR names a record that holds the keys (pinned);
* resumed: the record as a cache: RECORD_DIR and WARMUP_HARNESS_RESUME_DIR one folder that holds them;
* tuned earlier: a record session that tunes the key at its first launch.

The variants alternate within each round; a table of the best of --rounds microseconds a launch
(each session's fastest chunk of 1000 launches: a shared machine preempts some), and each
variant's difference from plain. Every variant's store is SQLite in memory
(FLAGGEMS_DB_URL), so plain's decided key is answered by its store, as the harness makes it in
record mode.

Run:  .venv/bin/python tests/bench/bench_hot_path.py [--rounds 3] [--launches 20000] [--harness harness]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "triton_fixture" / "hot_path.py"
TUNERS = {"triton": "Triton's Autotuner", "libtuner": "LibTuner-like (5.0)", "libtuner53": "LibTuner-like (5.3)"}
VARIANTS = ("plain", "replay", "resumed", "tuned earlier")


def session(work: Path, harness: Path, launches: int, env_extra: dict[str, str], plugin: bool) -> dict[str, dict]:
    out = work / "out.jsonl"
    out.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLAGGEMS_", "WARMUP_", "TRITON_", "FIXTURE_"))}
    env.update(PYTHONPATH=str(harness), HOME=str(work / "home"), FLAGGEMS_PERF_CURRENT_OP="mm",
               FLAGGEMS_DB_URL="sqlite:///:memory:", HOT_PATH_OUT=str(out), HOT_PATH_LAUNCHES=str(launches),
               **env_extra)
    load = ["-p", "warmup_harness"] if plugin else ["-p", "no:warmup_harness"]
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *load, str(SCRIPT)]
    proc = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"the session failed:\n{proc.stdout}{proc.stderr}")
    return {line["tuner"]: line for line in map(json.loads, out.read_text().splitlines())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--launches", type=int, default=20000)
    parser.add_argument("--harness", type=Path, default=ROOT / "harness")
    args = parser.parse_args()
    harness = args.harness.resolve()
    best: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # The record the replay and the resumed sessions answer from: one record session's.
        record = work / "record"
        session(work, harness, 1, {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(record)}, True)
        for _ in range(args.rounds):
            for variant in VARIANTS:
                if variant == "plain":
                    extra, plugin = {}, False
                elif variant == "replay":
                    extra, plugin = {"FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR": str(record)}, True
                elif variant == "resumed":
                    cache = work / "cache"
                    shutil.rmtree(cache, ignore_errors=True)
                    shutil.copytree(record, cache)
                    extra = {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(cache), "WARMUP_HARNESS_RESUME_DIR": str(cache)}
                    plugin = True
                else:
                    fresh = work / "fresh"
                    shutil.rmtree(fresh, ignore_errors=True)
                    extra, plugin = {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(fresh)}, True
                for tuner, line in session(work, harness, args.launches, extra, plugin).items():
                    key = (tuner, variant)
                    best[key] = min(best.get(key, float("inf")), line["us"])
    print(f"µs a launch of a decided key, best of {args.rounds} x {args.launches} launches (fastest 1000), "
          f"variants alternating")
    print()
    print("| tuner | " + " | ".join(VARIANTS) + " |")
    print("| --- |" + " --- |" * len(VARIANTS))
    for tuner, title in TUNERS.items():
        plain = best[tuner, "plain"]
        cells = [f"{plain:.2f}"] + [f"{best[tuner, v]:.2f} ({best[tuner, v] - plain:+.2f})" for v in VARIANTS[1:]]
        print(f"| {title} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
