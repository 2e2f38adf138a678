"""bench_e2e.sh's tables: each variant (ours, full, ...) against plain per case and mode, from the runs
it timed, and each variant's median and range over the repetitions.

usage: python e2e_report.py --run NAME CASE VARIANT MODE REP RC T0 T1 LOG [RESULT [PHASES]] >> RUNS.jsonl   (one run)
       python e2e_report.py --table RUNS.jsonl > e2e.md

Speed is plain's wall seconds over ours (above 1: ours is faster). Pick quality compares, shape by
shape, the latency FlagGems' benchmark measured for its own kernel (ms) in ours against plain in
the same mode; the geometric mean and the worst ratio are over the shapes of at least 0.25 ms in
plain (below that a launch's host time dominates), with every shape's ratio listed too. The triton
case adds the GPU's time alone (tests/gpu's CUDA-graph timing) over every shape, since a host-bound
launch does not blur it.

Shapes under 0.25 ms get a table of their own: each variant's median latency over its runs of a
mode (repetitions and re-runs pooled) against plain's own run-to-run spread over the same runs.

Where a run has a PHASES file (phase_clock.py's, bench_e2e.sh --phases), its seconds per phase go
into a last table: before Python starts (scripts/warmup, warmup-plan), the interpreter's start and
imports up to pytest's initial conftests, the conftests (FlagGems' import), configure (the harness's
session start), collection, the tests, session finish and unconfigure, and exit; then the seconds
the process spent in Triton's compile, in C builds (launchers) and in do_bench, and the autotuners'
own "finished after" seconds summed (TRITON_PRINT_AUTOTUNING=1).
"""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
from collections.abc import Iterable

LARGE_MS = 0.25


def parse_log(path: str) -> dict[str, float]:
    """The Gems latency (ms) per dtype and shape from the tables FlagGems' benchmark prints:
    `Operator: OP  Performance Test (dtype=torch.float16, ...)`, then `SUCCESS  torch  gems ...
    [sizes]` rows."""
    shapes: dict[str, float] = {}
    dtype = "?"
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if "Performance Test (dtype=" in line:
                dtype = line.split("dtype=", 1)[1].split(",", 1)[0]
            elif line.startswith("SUCCESS"):
                words = line.split()
                detail = line[line.index("["):].strip() if "[" in line else " ".join(words[5:])
                shapes[f"{dtype} {detail}"] = float(words[2])
    return shapes


def parse_result(path: str) -> dict[str, dict[str, float]]:
    """The latencies per shape that tests/gpu's conftest writes to GPU_BENCH_RESULT, for a case that
    is not FlagGems' benchmark: `ms` (launches included) and `gpu_ms` (the GPU's time alone, in a
    CUDA graph), each {shape: ms}; nothing where there is no file."""
    try:
        with open(path, encoding="utf-8") as f:
            shapes = json.load(f).get("shapes", {})
    except (OSError, ValueError):
        return {}
    return {field: {name: float(shape[field]) for name, shape in shapes.items() if shape.get(field)}
            for field in ("ms", "gpu_ms")}


def harness_lines(path: str) -> list[str]:
    """The harness's closing lines that say what tuning cost: `op ...: recorded ...`, `race: ...`,
    `precompile (...)`."""
    keep = ("[warmup-harness] op ", "[warmup-harness] race: ", "[warmup-harness] precompile (")
    with open(path, encoding="utf-8", errors="replace") as f:
        return [line.strip() for line in f if line.startswith(keep)]


PHASES = (("before Python", "t0", "process_start"), ("start, imports", "process_start", "conftests_start"),
          ("conftests", "conftests_start", "conftests_end"), ("configure", "configure_start", "configure_end"),
          ("collection", "collection_start", "collection_end"), ("tests", "tests_start", "tests_end"),
          ("finish", "sessionfinish_start", "unconfigure_end"), ("exit", "exit", "t1"))
SPENT = (("compile", "triton_compile"), ("C builds", "c_build"), ("do_bench", "do_bench"))


def phases(path: str, t0: float, t1: float, log: str) -> dict[str, float | str]:
    """The run's seconds per phase (PHASES) and in what it spent (SPENT), from phase_clock.py's file;
    nothing where there is none."""
    try:
        with open(path, encoding="utf-8") as f:
            clock = json.load(f)
    except (OSError, ValueError):
        return {}
    at = {**clock["at"], "t0": t0, "t1": t1}
    out: dict[str, float | str] = {name: round(at[b] - at[a], 2) for name, a, b in PHASES if a in at and b in at}
    for name, key in SPENT:
        calls, seconds = clock["spent"].get(key, (0, 0.0))
        out[name] = f"{seconds:.2f} ({calls})"
    with open(log, encoding="utf-8", errors="replace") as f:
        tuned = [float(m.group(1)) for m in re.finditer(r"finished after ([0-9.]+)s", f.read())]
    out["tuners' own"] = f"{sum(tuned):.2f} ({len(tuned)})"
    return out


def run_line(name: str, case: str, variant: str, mode: str, rep: str, rc: str, t0: str, t1: str,
             log: str, result: str = "", phase_file: str = "") -> str:
    measured = parse_result(result) if result else {}
    return json.dumps({"name": name, "case": case, "variant": variant, "mode": mode, "rep": int(rep),
                       "rc": int(rc), "seconds": round(float(t1) - float(t0), 2),
                       "latency_ms": parse_log(log) or measured.get("ms", {}), "gpu_ms": measured.get("gpu_ms", {}),
                       "harness": harness_lines(log),
                       "phases": phases(phase_file, float(t0), float(t1), log) if phase_file else {}})


def load(path: str) -> dict[tuple[str, str, int, str], dict]:
    runs = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                run = json.loads(line)
                runs[(run["case"], run["mode"], run.get("rep", 1), run["variant"])] = run
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
    mine_alone = ours.get("gpu_ms", {})
    alone = {shape: mine_alone[shape] / base for shape, base in plain.get("gpu_ms", {}).items()
             if base and mine_alone.get(shape)}
    if alone:  # what a pick changes, below 0.25 ms too: tests/gpu's CUDA-graph timing
        worst = max(alone, key=alone.get)
        rows.append(f"the GPU's time alone, every shape: geomean {_geomean(alone.values()):.3f}, "
                    f"worst {alone[worst]:.3f} ({worst})")
    if not ratios:
        return "-", "-", rows
    return f"{_geomean(ratios):.3f} ({len(ratios)} shapes)", f"{max(ratios):.3f}", rows


def _geomean(ratios: Iterable[float]) -> float:
    logs = [math.log(r) for r in ratios]
    return math.exp(sum(logs) / len(logs))


def main(path: str) -> None:
    runs = load(path)
    variants = [v for v in dict.fromkeys(key[3] for key in runs) if v != "plain"]
    print("| case | mode | rep | variant | plain s | variant s | speed (plain/variant) | picks: variant/plain "
          "latency, geomean | worst |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    details = []
    spread: dict[tuple[str, str, str], list[tuple[float, float, float | None]]] = {}
    for (case, mode, rep, variant), plain in runs.items():
        if variant != "plain":
            continue
        for name in variants:
            ours = runs.get((case, mode, rep, name))
            if ours is None:
                continue
            failed = [r["name"] for r in (plain, ours) if r["rc"] != 0]
            speed = plain["seconds"] / ours["seconds"] if ours["seconds"] else float("nan")
            geomean, worst, rows = picks(plain, ours)
            note = f" (exit != 0: {', '.join(failed)})" if failed else ""
            print(f"| {case} | {mode} | {rep} | {name} | {plain['seconds']:.1f} | {ours['seconds']:.1f} | "
                  f"{speed:.2f}x{note} | {geomean} | {worst} |")
            details.append((f"{case} {mode} (repetition {rep}), {name} against plain",
                            [*ours.get("harness", []), *rows]))
            spread.setdefault((case, mode, name), []).append(
                (ours["seconds"], speed, float(geomean.split()[0]) if geomean != "-" else None))
        ours, full = runs.get((case, mode, rep, "ours")), runs.get((case, mode, rep, "full"))
        if ours is not None and full is not None:  # racing's picks against every config timed in full
            details.append((f"{case} {mode} (repetition {rep}), ours against full", picks(full, ours)[2]))
    print("\n| case | mode | variant | reps | variant s: median (min-max) | speed: median (min-max) | "
          "picks geomean: median (min-max) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for (case, mode, name), rows in spread.items():
        print(f"| {case} | {mode} | {name} | {len(rows)} | {_spread([r[0] for r in rows], '.1f')} | "
              f"{_spread([r[1] for r in rows], '.2f')} | {_spread([r[2] for r in rows if r[2] is not None], '.3f')} |")
    for title, rows in details:
        print(f"\n{title}:")
        for row in rows:
            print(f"- {row}")
    small_shapes(runs)
    phase_table(runs)


def family(mode: str) -> str:
    """The runs a shape's latencies are pooled over: each re-run (rerun, rerun1, ...) is one more
    sample of the same thing, as each repetition of a mode is."""
    return "rerun" if mode.startswith("rerun") else mode


def small_shapes(runs: dict[tuple[str, str, int, str], dict]) -> None:
    """Shapes under 0.25 ms in plain, where a launch's host time is in the latency: each variant's
    median over its runs of a mode family (repetitions, re-runs) against plain's own run-to-run
    spread over the same runs (min to max), where plain ran at least twice. Within: the variant's
    median lies in plain's spread."""
    pooled: dict[tuple[str, str, str], dict[str, list[float]]] = {}
    for (case, mode, _, variant), run in runs.items():
        for shape, ms in run["latency_ms"].items():
            pooled.setdefault((case, family(mode), variant), {}).setdefault(shape, []).append(ms)
    rows, verdicts = [], {}
    for (case, runs_of, variant), shapes in pooled.items():
        plain = pooled.get((case, runs_of, "plain"), {})
        if variant == "plain":
            continue
        for shape, mine in shapes.items():
            base = plain.get(shape, [])
            if len(base) < 2 or statistics.median(base) >= LARGE_MS:
                continue
            median = statistics.median(mine)
            within = min(base) <= median <= max(base)
            counts = verdicts.setdefault((case, runs_of, variant), [0, 0])
            counts[0] += within
            counts[1] += 1
            rows.append(f"| {case} | {runs_of} | {variant} | {shape} | {_spread(base, '.4f')}, {len(base)} | "
                        f"{median:.4f}, {len(mine)} | {'yes' if within else 'no'} |")
    if not rows:
        return
    print("\n| case | runs | variant | shape under 0.25 ms | plain ms: median (min-max), runs | variant ms: median, "
          "runs | within plain's spread |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    for (case, runs_of, variant), (within, total) in verdicts.items():
        print(f"\n{case} {runs_of}, {variant}: {within} of {total} shapes under 0.25 ms within plain's spread")


def phase_table(runs: dict[tuple[str, str, int, str], dict]) -> None:
    """Every run's seconds per phase, where it was clocked."""
    clocked = [run for run in runs.values() if run.get("phases")]
    if not clocked:
        return
    columns = [name for name, _, _ in PHASES] + [name for name, _ in SPENT] + ["tuners' own"]
    print("\n| run | wall s | " + " | ".join(columns) + " |")
    print("| --- " * (len(columns) + 2) + "|")
    for run in clocked:
        cells = [str(run["phases"].get(name, "-")) for name in columns]
        print(f"| {run['name']} | {run['seconds']:.1f} | " + " | ".join(cells) + " |")


def _spread(values: list[float], fmt: str) -> str:
    if not values:
        return "-"
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)}-{format(max(values), fmt)})"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run"] and len(sys.argv) in (11, 12, 13):
        print(run_line(*sys.argv[2:]))
    elif sys.argv[1:2] == ["--table"] and len(sys.argv) == 3:
        main(sys.argv[2])
    else:
        sys.exit(__doc__)
