"""Benchmark (not a test): warmup-merge (release) against Python's merge of the same records.

64 record files x 10,000 keys each, overlapping so that conflicts occur. Python's side is the
plugin's merge rule plus json.dumps(indent=2, ensure_ascii=False), as the plugin ran it.

Run:  .venv/bin/python tests/bench/bench_merge.py [--bin target/release]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from test_merge import plugin_buckets  # noqa: E402  (the plugin's reading rule, one copy)


def python_merge(paths):
    merged, conflicts = {}, 0
    for _, kernel, bucket in plugin_buckets(paths):
        tgt = merged.setdefault(kernel, {})
        for key, cfg in bucket.items():
            if key in tgt:
                conflicts += tgt[key] != cfg
                continue
            tgt[key] = cfg
    return json.dumps(merged, indent=2, ensure_ascii=False) + "\n"


def make_records(folder: Path, files: int, keys: int) -> list[Path]:
    rng = random.Random(1)
    paths = []
    for i in range(files):
        record = {}
        for k in range(keys):
            kernel = f"kernel_{k % 8}"
            key = f"({rng.randrange(keys * files // 2)}, 4096, 'torch.float16')"
            record.setdefault(kernel, {})[key] = {
                "BLOCK_M": rng.choice([32, 64, 128]), "BLOCK_N": rng.choice([64, 128, 256]),
                "num_warps": rng.choice([4, 8]), "num_stages": rng.randint(1, 5),
                "ms": rng.uniform(1e-3, 10.0),
            }
        paths.append(folder / f"w{i}.json")
        paths[-1].write_text(json.dumps(record))
    return paths


def best_of(n, fn):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=str(ROOT / "target" / "release"))
    ap.add_argument("--files", type=int, default=64)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tool = str(Path(args.bin) / "warmup-merge")
    with tempfile.TemporaryDirectory() as tmp:
        paths = make_records(Path(tmp), args.files, args.keys)
        size = sum(p.stat().st_size for p in paths) / 1e6
        expected = python_merge(paths)
        got = subprocess.run([tool, *map(str, paths)], capture_output=True, text=True, check=True)
        assert got.stdout == expected, "warmup-merge output differs from Python's"
        rust = best_of(args.repeat, lambda: subprocess.run(
            [tool, "-o", f"{tmp}/out.json", *map(str, paths)], check=True,
            stderr=subprocess.DEVNULL))
        python = best_of(args.repeat, lambda: python_merge(paths))
    print(f"{args.files} files x {args.keys} keys ({size:.1f} MB), best of {args.repeat}:")
    print(f"  warmup-merge (release): {rust * 1000:8.1f} ms")
    print(f"  python _merge + dumps : {python * 1000:8.1f} ms   ({python / rust:.1f}x)")
    print("  outputs identical: yes")


if __name__ == "__main__":
    main()
