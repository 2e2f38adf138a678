"""What racing's audit says (WARMUP_HARNESS_RACE_AUDIT; bench_e2e.sh's `audit` variant): per raced
key, how many configs lose by a margin a short timing shows, what the race kept, and what its pick
costs against the fastest full timing of all the configs.

usage: python race_audit.py AUDIT.jsonl... > audit.md

Columns, per key: configs raced; of them re-timed in full; the share whose full timing is at least
1.1x, 1.5x and 2x the fastest full timing (losers a few launches can show); the race's pick's full
timing over the fastest (1.000: the race kept the winner); how far the full winner's short timing
stood from the best short timing, in units of the key's measured noise (the margin a race needs to
keep it); and the seconds of short timing, of full timing of the kept, and of the audit's timing
of the dropped. Then where each key's short pass went (`costs`): waiting for compiles, measured on
the device, the rest on the host and of that the part inside the short timings (launching,
synchronizing, L2 flushes; outside them: loading kernels, the device lock, `_bench`'s own Python),
its launches and short timings, and the milliseconds a config and a short timing cost. Then
racing's history (`history`), measured on the same keys.
"""

from __future__ import annotations

import itertools
import json
import math
import sys

HISTORY_KEYS = (1, 2, 3, 4, 5)  # N: keys of history a kernel needs (WARMUP_HARNESS_RACE_HISTORY)
HISTORY_NEAR = (0.10, 0.20, 0.30)  # X: within this of a key's best short timing is near (..._RACE_NEAR)


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


COST_FIELDS = ("wait_s", "timing_s", "device_s", "host_s", "launches", "timings")  # the audit's breakdown (race.py)


def costs(entries: list[dict]) -> None:
    """Per key, where the short pass's seconds went; then the totals. An audit written before the
    breakdown existed has none: its keys are left out, said once."""
    known = [e for e in entries if all(e.get(f) is not None for f in COST_FIELDS)]
    print("\n| case | kernel | key | raced | short s | ms a config | waiting for compiles s | device s | host s "
          "| of it inside the timings s | launches | short timings | ms a short timing |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for e in known:
        raced = len(e["configs"])  # the configs timed briefly
        print(f"| {e['case']} | {e['kernel'].rsplit(':', 1)[-1]} | {e['key'][:40]} | {raced} | {e['short_s']:.3f} | "
              f"{1000 * e['short_s'] / max(raced, 1):.1f} | {e['wait_s']:.3f} | {e['device_s']:.3f} | "
              f"{e['host_s']:.3f} | {e['timing_s'] - e['device_s']:.3f} | {e['launches']} | {e['timings']} | "
              f"{1000 * (e['short_s'] - e['wait_s']) / max(e['timings'], 1):.1f} |")
    if len(known) < len(entries):
        print(f"\n{len(entries) - len(known)} key(s) without a breakdown (an audit from before it): left out")
    if not known:
        return
    total = {f: sum(e[f] for e in known) for f in ("short_s", *COST_FIELDS)}
    configs = sum(len(e["configs"]) for e in known)
    print(f"\nshort pass: {total['short_s']:.1f}s over {configs} configs ({1000 * total['short_s'] / configs:.1f} ms a "
          f"config): {total['wait_s']:.1f}s waiting for compiles, {total['device_s']:.1f}s on the device, "
          f"{total['host_s']:.1f}s host; {total['launches']} launches in {total['timings']} short timings "
          f"({1000 * (total['short_s'] - total['wait_s']) / max(total['timings'], 1):.1f} ms a short timing "
          f"besides waiting)")


def history(entries: list[dict]) -> None:
    """What racing's history would have cost on these keys, left out one at a time: for each key, a
    history of N other keys of its kernel (every choice of N), a config near (within X of the best
    short timing) on none of them skipped; the share skipped and the picks the skipping lost (the
    fastest full timing left over the fastest of all)."""
    kernels: dict[str, list[dict]] = {}
    for entry in entries:
        kernels.setdefault(f"{entry['case']} {entry['kernel'].rsplit(':', 1)[-1]}", []).append(entry)
    print("\n| kernel | keys | X | N | configs skipped | worst pick | picks > 1% slower |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, keys in kernels.items():
        for near, count in itertools.product(HISTORY_NEAR, HISTORY_KEYS):
            if count >= len(keys):
                continue
            nears = [_near(key, near) for key in keys]
            picks, skipped = [], []
            for i, key in enumerate(keys):
                timed = [c for c in key["configs"] if c["full_ms"] is not None]
                fastest = min(c["full_ms"] for c in timed)
                for others in itertools.combinations([j for j in range(len(keys)) if j != i], count):
                    seen = set().union(*(nears[j] for j in others))
                    left = [c["full_ms"] for c in timed if c["index"] in seen]
                    picks.append(min(left) / fastest if left else math.inf)
                    skipped.append(1 - len(left) / len(timed))
            slower = sum(p > 1.01 for p in picks)
            print(f"| {name} | {len(keys)} | {near:.0%} | {count} | {sum(skipped) / len(skipped):.0%} | "
                  f"{max(picks):.3f} | {slower} of {len(picks)} |")


def _near(entry: dict, near: float) -> set[int]:
    shorts = [c["short_ms"] for c in entry["configs"] if c["short_ms"] is not None]
    best = min(shorts) if shorts else math.inf
    return {c["index"] for c in entry["configs"] if c["short_ms"] is not None and c["short_ms"] <= best * (1 + near)}


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    main(sys.argv[1:])
    costs(rows(sys.argv[1:]))
    history(rows(sys.argv[1:]))
