"""bench_e2e.sh's tables: plain against ours per case and mode, from the runs it timed.

usage: python e2e_report.py RUNS.jsonl > e2e.md

Speed is plain's wall seconds over ours (above 1: ours is faster). Pick quality compares, shape by
shape, the latency FlagGems' benchmark measured for its own kernel (ms) in ours against plain in
the same mode; the geometric mean and the worst ratio are over the shapes of at least 0.25 ms in
plain (below that a launch's host time dominates), with every shape's ratio listed too.
"""

from __future__ import annotations

import json
import math
import sys

LARGE_MS = 0.25


def load(path: str) -> dict[tuple[str, str, str], dict]:
    runs = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                run = json.loads(line)
                runs[(run["case"], run["mode"], run["variant"])] = run
    return runs


def picks(plain: dict, ours: dict) -> tuple[str, str, list[str]]:
    ratios, rows = [], []
    for shape, base in plain["latency_ms"].items():
        mine = ours["latency_ms"].get(shape)
        if not base or not mine:
            continue
        ratio = mine / base
        rows.append(f"{shape}: {base:.4f} -> {mine:.4f} ms ({ratio:.3f})")
        if base >= LARGE_MS:
            ratios.append(ratio)
    if not ratios:
        return "-", "-", rows
    geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    return f"{geomean:.3f} ({len(ratios)} shapes)", f"{max(ratios):.3f}", rows


def main(path: str) -> None:
    runs = load(path)
    print("| case | mode | plain s | ours s | speed (plain/ours) | picks: ours/plain latency, geomean | worst |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    details = []
    for (case, mode, variant), plain in runs.items():
        if variant != "plain":
            continue
        ours = runs.get((case, mode, "ours"))
        if ours is None:
            continue
        failed = [r["name"] for r in (plain, ours) if r["rc"] != 0]
        speed = plain["seconds"] / ours["seconds"] if ours["seconds"] else float("nan")
        geomean, worst, rows = picks(plain, ours)
        note = f" (exit != 0: {', '.join(failed)})" if failed else ""
        print(f"| {case} | {mode} | {plain['seconds']:.1f} | {ours['seconds']:.1f} | "
              f"{speed:.2f}x{note} | {geomean} | {worst} |")
        details.append((f"{case} {mode}", rows))
    for title, rows in details:
        print(f"\n{title}:")
        for row in rows:
            print(f"- {row}")


if __name__ == "__main__":
    main(sys.argv[1])
