#!/usr/bin/env python3
"""Benchmark (not a test): warmup-shard --shards 8 on a 100,000-shape file versus the plugin's
own Python path (read with safe_load, round-robin, safe_dump each shard).

Usage: .venv/bin/python tests/bench/bench_shard.py [path/to/release/warmup-shard]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SHAPES = 100_000
SHARDS = 8


def make_source(path: Path) -> None:
    lines = ["mm:", '  shape_desc: "M, N, K"', "  shapes:"]
    lines += [f"    - [{i % 4096 + 1}, {i // 7 + 1}, {(i * 31) % 8192 + 1}]" for i in range(SHAPES)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def python_path(src: Path, out: Path, op: str) -> None:
    # The plugin's _read_shape_yaml, _shard and per-shard safe_dump, written out again here.
    with open(src) as f:
        doc = yaml.safe_load(f) or {}
    entry = doc.get(op) or {}
    shapes = list(entry.get("shapes") or [])
    extra = {k: v for k, v in entry.items() if k != "shapes"}
    shards = [s for s in (shapes[i::SHARDS] for i in range(SHARDS)) if s]
    for i, shard in enumerate(shards):
        w = out / f"w{i}"
        w.mkdir(parents=True, exist_ok=True)
        body = dict(extra)
        body["shapes"] = shard
        (w / "shapes.yaml").write_text(
            yaml.safe_dump({op: body}, sort_keys=False, default_flow_style=None, allow_unicode=True))


def check(src: Path, files: list[str], op: str) -> None:
    """Every shard reads back as the source's round-robin slice (libyaml's loader, for speed: these
    are plain int lists, which both loaders read alike)."""
    load = lambda path: yaml.load(Path(path).read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)  # noqa: E731
    entry = load(src)[op]
    for i, f in enumerate(files):
        want = {op: {k: (entry["shapes"][i::len(files)] if k == "shapes" else v) for k, v in entry.items()}}
        if load(f) != want:
            raise SystemExit(f"{f}: not shard {i} of the source")


def main() -> int:
    binary = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target" / "release" / "warmup-shard"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = tmp / "big.yaml"
        make_source(src)
        t0 = time.perf_counter()
        done = subprocess.run([str(binary), "--op", "mm", "--shards", str(SHARDS), "--out", str(tmp / "rust"),
                               str(src)], check=True, stdout=subprocess.PIPE, text=True)
        rust = time.perf_counter() - t0
        check(src, done.stdout.splitlines(), "mm")
        t0 = time.perf_counter()
        python_path(src, tmp / "py", "mm")
        py = time.perf_counter() - t0
        loader = "CSafeLoader available but safe_load uses the pure-Python SafeLoader"
        print(f"{SHAPES} shapes, {SHARDS} shards ({src.stat().st_size / 1e6:.1f} MB source)")
        print(f"warmup-shard:                 {rust:.3f} s")
        print(f"plugin (safe_load+safe_dump): {py:.3f} s   ({loader})")
        print(f"speed-up: {py / rust:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
