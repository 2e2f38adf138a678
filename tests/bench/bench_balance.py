"""Benchmark (not a test): how evenly each way of sharding loads the devices, measured end to end.

53 shapes of an mm-like op, swept by the fixture harness (tests/harness/conftest.py) with a cost
profile (seconds per shape, simulated by sleeping), on 4 and 8 listed pretend devices
(`warmup-spawn --backend cuda --devices 0,1,...`). For each profile and device count, in one run:

  round-robin       warmup-shard's default, the plugin's split (k = devices)
  LPT model         --strategy lpt --cost-model product: LPT by the product model (k = devices)
  robust            --strategy lpt: the robust model, the default without measured costs
                    (k = devices)
  pool 3x           --strategy lpt --shards 3*devices: the device pool with 3 shards per
                    device (robust split), largest expected first
  pool              --strategy lpt --shards 53: one shape per shard, largest product first,
                    on the device pool (every shape pays a child start-up)
  LPT measured      --strategy lpt --costs FILE, FILE written by warmup-costs from the pool run
                    above (one shape per shard: each shape's time measured alone)
  LPT attributed    the same from the round-robin run's costs (several shapes per shard: times
                    split in proportion to the model)

Each is warmup-spawn's wall time, and its efficiency = ideal / wall, where
ideal = max(total / devices, largest shape) + one child start-up (measured: warmup-spawn running
`devices` children of zero cost at once, best of 3).

Profiles (costs scaled so that the 53 shapes sum to --total seconds):
  uniform     every shape the same
  ascending   cost grows linearly along the file, 1 to 10
  heavy       heavy-tailed and larger for larger shapes: log-normal (sigma 1) quantiles handed out
              by the shape's element count (largest to largest), each times a seeded log-normal
              jitter (sigma 0.35), so size predicts cost only roughly; the largest shape is 15%
              of the total, more than an eighth
  shuffled    the heavy costs handed out at random (seeded): size predicts nothing (not in the
              default run; --profiles heavy,shuffled shows where the model and the pool stop helping)

The children run the fixture harness's own code (configure, one case per shape, session finish)
through a small runner in this file (`--child`) rather than through pytest: pytest's own start-up
costs 0.3 to 0.5 CPU-seconds, and 53 of them on this 2-core machine would measure pytest on two
cores, not the balance. A child's start-up is WARMUP_FIXTURE_STARTUP_SECONDS (--startup) plus the
runner's own, about 0.1 s here: a ninth of a mean shape (0.75 s), as 10 s of imports are to a 90 s
sweep. `--child-pytest` runs real pytest children instead.

`--startups 0,0.25,0.5` adds a section: heavy profile, each device count, the strategies that need
no history at each simulated start-up, pool 3x (3 shards per device) among them, to show when
the pool's extra start-ups stop paying.

Run:  .venv/bin/python tests/bench/bench_balance.py [--bin target/release] [--total 40]
      (about 4 minutes; --startups adds about 1 minute per device count and start-up)
"""

from __future__ import annotations

import os
import sys
import types

# Only what the child needs is imported at the top: the child's start-up is part of what is measured.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARNESS = os.path.join(ROOT, "tests", "harness")
OP = "mm"


# --- the child: the fixture harness without pytest ----------------------------------------------

def child_main(argv: list[str]) -> int:
    shape_file = argv[argv.index("--shape_file") + 1]  # the shard's: warmup-spawn leaves one

    class Failed(Exception):
        pass

    def fail(msg, pytrace=True):
        raise Failed(msg)

    stub = types.ModuleType("pytest")
    stub.fixture = lambda f: f
    stub.fail = fail
    stub.skip = fail
    stub.UsageError = Failed
    sys.modules["pytest"] = stub
    sys.path.insert(0, HARNESS)
    import conftest as harness  # the fixture harness, run as pytest would run it

    config = types.SimpleNamespace(getoption=lambda name: shape_file)
    harness.pytest_configure(config)
    state = config._fixture_session
    failed = 0
    for shape in state.shapes():
        try:
            state.run(shape)
        except Failed as exc:
            print(f"FAILED {harness.shape_key(shape)}: {exc}", flush=True)
            failed += 1
    harness.pytest_sessionfinish(types.SimpleNamespace(config=config))
    return 1 if failed else 0


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    sys.exit(child_main(sys.argv[2:]))


# --- the bench ----------------------------------------------------------------------------------

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

# --- shapes and cost profiles -------------------------------------------------------------------

def shapes() -> list[list[int]]:
    """53 [M, N, K] shapes, grouped by (N, K) as shape files are, M ascending in each group."""
    nk = [(4096, 4096), (3584, 18944), (18944, 3584), (3584, 3584), (1024, 1024),
          (8192, 8192), (2048, 512), (5120, 13824)]
    ms = [1, 16, 128, 1024, 4096, 8192, 16384]
    return [[m, n, k] for n, k in nk for m in ms][:53]


def text(shape) -> str:
    return json.dumps(shape, separators=(",", ":"))


def profile(name: str, shape_list: list, total: float) -> list[float]:
    n = len(shape_list)
    if name == "uniform":
        raw = [1.0] * n
    elif name == "ascending":
        raw = [1 + 9 * j / (n - 1) for j in range(n)]
    elif name in ("heavy", "shuffled"):
        rng = random.Random(11)
        normal = statistics.NormalDist()
        tail = [math.exp(normal.inv_cdf((r + 0.5) / n)) for r in range(n)]
        by_size = sorted(range(n), key=lambda j: (math.prod(shape_list[j]), j))
        raw = [0.0] * n
        for rank, j in enumerate(by_size):
            raw[j] = tail[rank] * math.exp(rng.gauss(0, 0.35))
        if name == "shuffled":
            random.Random(5).shuffle(raw)
    else:
        raise SystemExit(f"unknown profile {name!r}: uniform, ascending, heavy, shuffled")
    scale = total / sum(raw)
    return [c * scale for c in raw]


# --- one run ------------------------------------------------------------------------------------

class Bench:
    def __init__(self, bin_dir: Path, work: Path, child_pytest: bool):
        self.bin = bin_dir
        self.work = work
        self.runs = 0
        self.startups: dict[tuple[int, str], float] = {}
        if child_pytest:
            self.command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            os.path.join(HARNESS, "test_bench.py"), "--shape_file", "-"]
        else:
            self.command = [sys.executable, str(Path(__file__).resolve()), "--child",
                            "--shape_file", "-"]

    def tool(self, name: str, *args, env=None) -> subprocess.CompletedProcess:
        r = subprocess.run([str(self.bin / f"warmup-{name}"), *map(str, args)],
                           capture_output=True, text=True, env=env or self.env)
        if r.returncode != 0:
            raise SystemExit(f"warmup-{name} {' '.join(map(str, args))}: exit {r.returncode}\n{r.stderr}")
        return r

    def setup(self, shape_file: Path, costs: dict, startup: float):
        self.shape_file = shape_file
        prof = self.work / "profile.json"
        prof.write_text(json.dumps(costs))
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("FLAGGEMS_", "WARMUP_FIXTURE_", "TRITON_", "PARALLEL_WARMUP_"))
                    and not k.endswith("_VISIBLE_DEVICES")}
        self.env.update({
            "FLAGGEMS_PERF_CURRENT_OP": OP,
            "WARMUP_FIXTURE_COST_PROFILE": str(prof),
            "WARMUP_FIXTURE_SWEEP_SECONDS": "0",
            "WARMUP_FIXTURE_STARTUP_SECONDS": str(startup),
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        })

    def sweep(self, devices: int, *shard_args, shape_file: Path | None = None) -> tuple[float, Path]:
        """Shards the shape file, runs the shards on `devices` devices; the wall time of spawn."""
        self.runs += 1
        scratch = self.work / f"run{self.runs}"
        self.tool("shard", "--op", OP, *shard_args, "--out", scratch, shape_file or self.shape_file)
        listed = ",".join(str(d) for d in range(devices))
        t0 = time.monotonic()
        self.tool("spawn", "--plan", scratch / "plan.json", "--backend", "cuda",
                  "--devices", listed, "--", *self.command)
        return time.monotonic() - t0, scratch

    def startup(self, devices: int) -> float:
        """Wall time of `devices` zero-cost children started at once, best of 3: one child
        start-up here (1 device: one child alone, as the pool's children mostly start)."""
        key = (devices, self.env["WARMUP_FIXTURE_STARTUP_SECONDS"])
        if key in self.startups:
            return self.startups[key]
        idle = self.work / "idle.yaml"
        idle.write_text(f"{OP}:\n  shapes:\n" + "".join(f"    - [idle, {i}]\n" for i in range(max(devices, 2))))
        shards = max(devices, 2)  # warmup-shard makes 2 shards at least
        best = min(self.sweep(devices, "--shards", shards, shape_file=idle)[0] for _ in range(3))
        self.startups[key] = best / (shards // devices)
        return self.startups[key]

    def learn(self, scratch: Path, costs_file: Path, startup: float) -> dict:
        costs_file.unlink(missing_ok=True)
        self.tool("costs", "--costs", costs_file, "--startup", f"{startup:.3f}", scratch)
        return json.loads(costs_file.read_text())[OP]


def error(learned: dict, truth: dict) -> float:
    """Mean absolute error of learned costs, relative to the mean true cost."""
    mean = statistics.mean(truth.values())
    return statistics.mean(abs(learned.get(t, 0.0) - c) for t, c in truth.items()) / mean


COLUMNS = ["round-robin", "LPT model", "robust", "pool 3x", "pool", "LPT measured", "LPT attributed"]


def cell(wall: float, ideal: float) -> str:
    return f"{wall:.2f} s ({ideal / wall:.2f})"


def prepare(bench: Bench, name: str, total: float, startup: float) -> dict[str, float]:
    """Writes the shape file and the profile; returns each shape's cost by its text."""
    shape_list = shapes()
    truth = {text(s): c for s, c in zip(shape_list, profile(name, shape_list, total))}
    shape_file = bench.work / f"{name}.yaml"
    shape_file.write_text(f"{OP}:\n  shapes:\n" + "".join(f"    - {t}\n" for t in truth))
    bench.setup(shape_file, truth, startup)
    return truth


def block(bench: Bench, name: str, devices: int, total: float, startup: float) -> dict:
    truth = prepare(bench, name, total, startup)
    one_start, alone = bench.startup(devices), bench.startup(1)
    ideal = max(total / devices, max(truth.values())) + one_start
    row = {"profile": name, "devices": devices, "ideal": ideal, "startup": one_start}
    n = len(truth)
    rr_costs, pool_costs = bench.work / "rr.json", bench.work / "pool.json"
    print(f"  {name}, {devices} devices: start-up {one_start:.2f} s, ideal {ideal:.2f} s", file=sys.stderr)
    row["round-robin"], rr = bench.sweep(devices, "--shards", devices)
    row["rr_error"] = error(bench.learn(rr, rr_costs, one_start), truth)
    row["LPT model"], _ = bench.sweep(devices, "--shards", devices, "--strategy", "lpt",
                                      "--cost-model", "product")
    row["robust"], _ = bench.sweep(devices, "--shards", devices, "--strategy", "lpt")
    row["pool 3x"], _ = bench.sweep(devices, "--shards", 3 * devices, "--strategy", "lpt")
    row["pool"], pool = bench.sweep(devices, "--shards", n, "--strategy", "lpt")
    row["pool_error"] = error(bench.learn(pool, pool_costs, alone), truth)
    row["LPT measured"], _ = bench.sweep(devices, "--shards", devices, "--strategy", "lpt",
                                         "--costs", pool_costs)
    row["LPT attributed"], _ = bench.sweep(devices, "--shards", devices, "--strategy", "lpt",
                                           "--costs", rr_costs)
    for k in COLUMNS:
        print(f"    {k}: {cell(row[k], ideal)}", file=sys.stderr)
    return row


def startup_block(bench: Bench, devices: int, total: float, startup: float) -> dict:
    truth = prepare(bench, "heavy", total, startup)
    one_start = bench.startup(devices)
    ideal = max(total / devices, max(truth.values())) + one_start
    row = {"devices": devices, "startup_cfg": startup, "startup": one_start, "ideal": ideal}
    row["round-robin"], _ = bench.sweep(devices, "--shards", devices)
    row["LPT model"], _ = bench.sweep(devices, "--shards", devices, "--strategy", "lpt",
                                      "--cost-model", "product")
    row["robust"], _ = bench.sweep(devices, "--shards", devices, "--strategy", "lpt")
    row["pool 3x"], _ = bench.sweep(devices, "--shards", 3 * devices, "--strategy", "lpt")
    row["pool"], _ = bench.sweep(devices, "--shards", len(truth), "--strategy", "lpt")
    print(f"  {devices} devices, start-up {startup} s: " + ", ".join(
        f"{k} {cell(row[k], ideal)}" for k in ("round-robin", "LPT model", "robust", "pool 3x", "pool")),
        file=sys.stderr)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", type=Path, default=Path(ROOT) / "target" / "release")
    ap.add_argument("--total", type=float, default=40.0, help="the 53 shapes' summed cost, seconds")
    ap.add_argument("--startup", type=float, default=0.0,
                    help="WARMUP_FIXTURE_STARTUP_SECONDS: each child's simulated start-up")
    ap.add_argument("--devices", default="4,8")
    ap.add_argument("--profiles", default="uniform,ascending,heavy")
    ap.add_argument("--startups", default="", help="simulated start-ups to sweep (heavy profile)")
    ap.add_argument("--child-pytest", action="store_true", help="real pytest children")
    ap.add_argument("--json", type=Path, help="write the raw results here too")
    ap.add_argument("--keep", type=Path, help="run in this folder and keep it (scratches, cost files)")
    args = ap.parse_args()
    if not (args.bin / "warmup-costs").exists():
        subprocess.run(["cargo", "build", "--release", "--workspace", "--quiet"], cwd=ROOT, check=True)

    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        bench = Bench(args.bin, work, args.child_pytest)
        rows = [block(bench, p, int(d), args.total, args.startup)
                for p in args.profiles.split(",") if p for d in args.devices.split(",")]
        sweeps = [startup_block(bench, int(d), args.total, float(s))
                  for d in args.devices.split(",") for s in args.startups.split(",") if s]

    print(f"53 shapes, {args.total:g} s of sweeping in all, child start-up "
          f"{args.startup:g} s simulated; wall time (efficiency = ideal / wall)")
    if rows:
        main_tables(rows)
    if sweeps:
        sweep_table(sweeps)
    print(f"\nbench wall time {time.monotonic() - t0:.0f} s", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "startups": sweeps}, indent=2))


def main_tables(rows: list[dict]) -> None:
    cols = COLUMNS
    print()
    print("| profile | devices | ideal | " + " | ".join(cols) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in cols) + " |")
    for r in rows:
        print(f"| {r['profile']} | {r['devices']} | {r['ideal']:.2f} s | "
              + " | ".join(cell(r[c], r["ideal"]) for c in cols) + " |")
    print("\nlearned costs, mean absolute error relative to the mean shape cost "
          "(pool run: each shape measured alone; round-robin run: each shard's time split equally "
          "over its shapes, the plan having no expectations):\n")
    print("| profile | devices | from the pool run | from the round-robin run |")
    print("| --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['profile']} | {r['devices']} | {r['pool_error']:.1%} | {r['rr_error']:.1%} |")


def sweep_table(sweeps: list[dict]) -> None:
    scols = ["round-robin", "LPT model", "robust", "pool 3x", "pool"]
    print("\nheavy profile, by child start-up (pool 3x: 3 shards per device):\n")
    print("| devices | start-up (simulated) | measured | ideal | " + " | ".join(scols) + " |")
    print("| --- | --- | --- | --- | " + " | ".join("---" for _ in scols) + " |")
    for r in sweeps:
        print(f"| {r['devices']} | {r['startup_cfg']:g} s | {r['startup']:.2f} s | {r['ideal']:.2f} s | "
              + " | ".join(cell(r[c], r["ideal"]) for c in scols) + " |")


if __name__ == "__main__":
    main()
