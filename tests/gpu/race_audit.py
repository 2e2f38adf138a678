"""What racing's audit says (WARMUP_HARNESS_RACE_AUDIT; bench_e2e.sh's `audit` variant): per raced
key, how many configs lose by a margin a short timing shows, what the race kept, and what its pick
costs against the fastest full timing of all the configs.

usage: python race_audit.py AUDIT.jsonl... > audit.md

Columns, per key: configs raced; of them re-timed in full; the share whose full timing is at least
1.1x, 1.5x and 2x the fastest full timing (losers a few launches can show); the race's pick's full
timing over the fastest (1.000: the race kept the winner); how far the full winner's short timing
stood from the best short timing, in units of the key's measured noise (the margin a race needs to
keep it); and the seconds of short timing, of full timing of the kept, and of the audit's timing
of the dropped.
"""

from __future__ import annotations

import json
import math
import sys


def rows(paths: list[str]) -> list[dict]:
    out = []
    for path in paths:
        case = path.rsplit("/", 1)[-1].removeprefix("audit_").removesuffix(".jsonl")
        with open(path, encoding="utf-8") as f:
            out += [dict(json.loads(line), case=case) for line in f if line.strip()]
    return out


def judge(entry: dict) -> dict | None:
    configs = [c for c in entry["configs"] if c["full_ms"] is not None and c["short_ms"] is not None]
    if not configs:
        return None
    best_full = min(c["full_ms"] for c in configs)
    best_short = min(c["short_ms"] for c in configs)
    kept = [c for c in configs if c["retimed"]]
    pick = min(kept, key=lambda c: c["full_ms"]) if kept else None
    winner = min(configs, key=lambda c: c["full_ms"])
    spread = entry.get("spread") or 0.0
    away = winner["short_ms"] / best_short - 1
    return {
        "case": entry["case"], "kernel": entry["kernel"].rsplit(":", 1)[-1], "key": entry["key"],
        "raced": len(configs), "kept": len(kept),
        "lose": [sum(c["full_ms"] >= best_full * x for c in configs) / len(configs) for x in (1.1, 1.5, 2.0)],
        "pick": pick["full_ms"] / best_full if pick else math.inf,
        "away": away, "away_noise": away / spread if spread > 0 else math.inf, "spread": spread,
        "best_ms": best_full,
        "seconds": (entry["short_s"], entry["full_s"], entry["audit_s"]),
    }


def main(paths: list[str]) -> None:
    judged = [j for j in (judge(e) for e in rows(paths)) if j is not None]
    print("| case | kernel | key | best ms | raced | kept | >=1.1x | >=1.5x | >=2x | pick/best | winner's short "
          "from best (noise units) | noise | short s | full s | audit s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for j in judged:
        lose = " | ".join(f"{share:.0%}" for share in j["lose"])
        print(f"| {j['case']} | {j['kernel']} | {j['key'][:40]} | {j['best_ms']:.4f} | {j['raced']} | {j['kept']} | "
              f"{lose} | {j['pick']:.3f} | {j['away']:+.1%} ({j['away_noise']:.1f}) | {j['spread']:.1%} | "
              + " | ".join(f"{s:.2f}" for s in j["seconds"]) + " |")
    if not judged:
        return
    configs = sum(j["raced"] for j in judged)
    print()
    for i, x in enumerate((1.1, 1.5, 2.0)):
        share = sum(j["lose"][i] * j["raced"] for j in judged) / configs
        print(f"configs whose full timing is at least {x}x the key's fastest: {share:.1%} of {configs}")
    missed = [j for j in judged if j["pick"] > 1.001]
    print(f"keys whose race pick is slower than the fastest full timing: {len(missed)} of {len(judged)}"
          + (f" (worst {max(j['pick'] for j in missed):.3f})" if missed else ""))
    short, full, audit = (sum(j["seconds"][i] for j in judged) for i in range(3))
    print(f"seconds: short {short:.1f}, full of the kept {full:.1f}, full of the dropped (audit only) {audit:.1f}")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    main(sys.argv[1:])
