"""Benchmark (not a test): what a launch of a decided key costs with the harness, against plain.

The Triton fixture (tests/triton_fixture, stubbed device) launches one decided key of each tuner
(Triton's own Autotuner; a LibTuner-like subclass, 5.0's shape; one shaped as FlagGems 5.3's) 20,000
times in one pytest session per variant (tests/triton_fixture/hot_path.py):

* plain: no harness;
* replay: FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR names a record that holds the keys (pinned);
* resumed: resuming in place: RECORD_DIR and WARMUP_HARNESS_RESUME_DIR one folder that holds them;
* tuned earlier: a record session that tunes the key at its first launch.

The variants alternate within each round; a table of the best of --rounds microseconds a launch
(each session's fastest chunk of 1000 launches: a shared machine preempts some), and each
variant's difference from plain. Every variant's store is SQLite in memory
(FLAGGEMS_DB_URL), so plain's decided key is answered by its store, as the harness makes it in
record mode.

`--baseline DIR` (another checkout's `harness` folder, e.g. `git archive main harness | tar -x -C
/tmp/main`): its harness variants run too, in the same rounds, alternating with this one's, and
come first as "before" (plain is one for both: it loads no harness).

Run:  .venv/bin/python tests/bench/bench_hot_path.py [--rounds 3] [--launches 20000] [--harness harness]
      [--baseline DIR]
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


def session(work: Path, harness: Path, launches: int, env_extra: dict[str, str], plugin: bool,
            base: dict[str, str] | None = None, timeout: float | None = None) -> dict[str, dict]:
    """One pytest session of tests/triton_fixture/hot_path.py in `work`: its JSON line per tuner.
    `base`: the environment to start from (default: this process's, less the protocol's and the
    fixture's variables). Raises RuntimeError, with its output, where it fails."""
    out = work / "out.jsonl"
    out.unlink(missing_ok=True)
    if base is None:
        scrub = ("FLAGGEMS_", "WARMUP_", "TRITON_", "FIXTURE_")
        base = {k: v for k, v in os.environ.items() if not k.startswith(scrub)}
    env = {**base, "PYTHONPATH": str(harness), "HOME": str(work / "home"), "FLAGGEMS_PERF_CURRENT_OP": "mm",
           "FLAGGEMS_DB_URL": "sqlite:///:memory:", "HOT_PATH_OUT": str(out), "HOT_PATH_LAUNCHES": str(launches),
           **env_extra}
    load = ["-p", "warmup_harness"] if plugin else ["-p", "no:warmup_harness"]
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *load, str(SCRIPT)]
    proc = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"the session failed:\n{proc.stdout}{proc.stderr}")
    return {line["tuner"]: line for line in map(json.loads, out.read_text().splitlines())}


def harness_env(work: Path, variant: str, record: Path) -> dict[str, str]:
    """The protocol variables of a harness variant (`record`: the record it replays or resumes)."""
    if variant == "replay":
        return {"FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR": str(record)}
    if variant == "resumed":
        cache = work / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        shutil.copytree(record, cache)
        return {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(cache), "WARMUP_HARNESS_RESUME_DIR": str(cache)}
    fresh = work / "fresh"
    shutil.rmtree(fresh, ignore_errors=True)
    return {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(fresh)}


def table(title: str, best: dict[tuple, float], side: str) -> None:
    print(f"| {title} | " + " | ".join(VARIANTS) + " |")
    print("| --- |" + " --- |" * len(VARIANTS))
    for tuner, name in TUNERS.items():
        plain = best[tuner, "plain"]
        cells = [f"{plain:.2f}"] + [f"{best[tuner, side, v]:.2f} ({best[tuner, side, v] - plain:+.2f})"
                                    for v in VARIANTS[1:]]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--launches", type=int, default=20000)
    parser.add_argument("--harness", type=Path, default=ROOT / "harness")
    parser.add_argument("--baseline", type=Path, help="another harness folder, measured alongside as 'before'")
    args = parser.parse_args()
    sides = {"after": args.harness.resolve()}
    if args.baseline is not None:
        sides = {"before": args.baseline.resolve(), **sides}
    best: dict[tuple, float] = {}

    def keep(key: tuple, us: float) -> None:
        best[key] = min(best.get(key, float("inf")), us)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        records = {}
        for side, harness in sides.items():  # the record each side's replay and resumed sessions answer from
            records[side] = work / f"record-{side}"
            session(work, harness, 1, {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": str(records[side])}, True)
        for _ in range(args.rounds):
            for tuner, line in session(work, sides["after"], args.launches, {}, False).items():
                keep((tuner, "plain"), line["us"])
            for variant in VARIANTS[1:]:
                for side, harness in sides.items():
                    extra = harness_env(work, variant, records[side])
                    for tuner, line in session(work, harness, args.launches, extra, True).items():
                        keep((tuner, side, variant), line["us"])
    print(f"µs a launch of a decided key, best of {args.rounds} x {args.launches} launches (fastest 1000), "
          f"variants alternating")
    print()
    for side in sides:
        table(side if len(sides) > 1 else "tuner", best, side)


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        sys.exit(str(e))
