"""Benchmark (not a test): what resuming from a 3000-key record costs a record session.

One pytest session of the Triton fixture benchmark (tests/triton_fixture, 1 shape) in record mode,
with the harness from harness/: no resume; `WARMUP_HARNESS_RESUME_DIR` naming another folder that
holds a 3000-key record (a sweep child: the keys are carried into its record); and resuming in
place (RECORD_DIR and RESUME_DIR one folder that holds the 3000 keys). Wall seconds of the whole
session, best and median of --rounds.

Run:  .venv/bin/python tests/bench/bench_resume.py [--rounds 3] [--harness harness]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import triton
import yaml

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "triton_fixture" / "bench_ops.py"
KEYS = 3000


def earlier(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    config = {"kwargs": {"BLOCK": 64}, "num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": None}
    record = {"bench:earlier_kernel": {f"[{i}, 64, 64]": config for i in range(KEYS)}}
    (folder / "mm.json").write_text(json.dumps(record))
    meta = {"format": "warmup-harness-meta", "version": 1, "op": "mm", "triton": triton.__version__,
            "device": "fake 0", "tune_seconds": {k: {key: 0.5 for key in v} for k, v in record.items()}}
    (folder / "mm.meta.json").write_text(json.dumps(meta))


def session(work: Path, harness: Path, record: Path, resume: Path | None) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLAGGEMS_", "WARMUP_", "TRITON_"))}
    env.update(PYTHONPATH=str(harness), HOME=str(work / "home"), FLAGGEMS_PERF_CURRENT_OP="mm",
               FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(record))
    if resume is not None:
        env["WARMUP_HARNESS_RESUME_DIR"] = str(resume)
    shapes = work / "shapes.yaml"
    shapes.write_text(yaml.safe_dump({"mm": {"shapes": [[64, 64, 64]]}}))
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "warmup_harness", str(BENCH),
            "--shape_file", str(shapes)]
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"the session failed:\n{proc.stdout}{proc.stderr}")
    held = sum(map(len, json.loads((record / "mm.json").read_text()).values()))
    want = 12 // 4 + (KEYS if resume is not None else 0)  # 3 kernels' keys of one shape, and the earlier ones
    if held != want:
        sys.exit(f"{record / 'mm.json'} holds {held} keys, expected {want}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--harness", type=Path, default=ROOT / "harness")
    args = parser.parse_args()
    rows = {"no resume": [], f"resume from another folder ({KEYS} keys carried)": [],
            f"resuming in place ({KEYS} keys held, RESUME_DIR = RECORD_DIR)": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for n in range(args.rounds):
            for name, times in rows.items():
                run = work / f"{n}-{len(times)}-{name.split()[0]}"
                run.mkdir()
                if name.startswith("no"):
                    times.append(session(run, args.harness, run / "rec", None))
                elif name.startswith("resume"):
                    earlier(run / "earlier")
                    times.append(session(run, args.harness, run / "rec", run / "earlier"))
                else:
                    earlier(run / "rec")
                    times.append(session(run, args.harness, run / "rec", run / "rec"))
    print("| session | best | median |\n| --- | --- | --- |")
    for name, times in rows.items():
        print(f"| {name} | {min(times):.2f} s | {statistics.median(times):.2f} s |")


if __name__ == "__main__":
    main()
