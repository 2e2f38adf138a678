#!/usr/bin/env python3
"""Runs the GPU proof of issues 9 and 10 for one benchmark and writes its tables.

For the benchmark (``triton``: tests/gpu/test_triton_bench.py, ``flaggems`` and
``flaggems-dtypes``: tests/gpu/test_flaggems_bench.py), each variant sweeps every shape with a
cold Triton cache and records the winners; then the picks are measured, replaying, on GPU 0:

``serial``        one pytest process in record mode on the first GPU, the harness's precompile off:
                  Triton compiles each config as it times it (the baseline)
``serial-pc``     the same with the harness's precompile (compile work spread over the cores)
``pluginG[xC]``   ``scripts/warmup --gpus G*C --cache-per-child``, C children per GPU, as the plugin
                  did: a Triton cache per child, precompile off (the harness's per-device timing
                  lock stays: it serializes pluginGx2's timings)
``oursG[xC]``     ``scripts/warmup``: the children share one Triton cache; the harness precompiles
                  (``--precompile-mode``, workers: the CPUs divided among the children unless
                  ``--compile-workers``) and times one config at a time per device

G GPUs with one child each are found by the tools (no ``--devices``); otherwise ``--devices``
lists each GPU C times (``ours1x2``: ``--devices 0,0``). The serial picks are replayed right after
the serial sweep and once more at the end, which gives the run-to-run noise; a warmup variant's
own measurement (the command scripts/warmup execs) replays its merged picks. Each variant starts
with an empty Triton cache.

Per variant: wall time of the sweep and its speedup over the serial sweep, keys recorded,
conflicts, the replay's ``replayed N, swept M live`` line, each child's device and where its time
went (start-up before pytest's clock, tuning, compiling ahead, waiting for the timing lock), and
the replayed latency against the serial picks (per shape and geometric mean), both the GPU's
time (CUDA graph replays: what a pick changes) and with launches included (``do_bench``).
Written to ``OUT/proof_<bench>.md`` and ``.json`` after every step (a run cut short still leaves
its tables); everything else (logs, records, measurements) goes to ``OUT/logs_<bench>.tar.gz``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "compile_fixture"))  # report_lines
from report_lines import parse_reports  # noqa: E402  (the per-key precompile line read back)
from warmup_harness.precompile import precompiler as precompile  # noqa: E402  (the settings' names; no Triton import)

BENCHES = {
    "triton": ("tests/gpu/test_triton_bench.py", "gpu_triton"),
    "flaggems": ("tests/gpu/test_flaggems_bench.py", "gpu_flaggems"),
    "flaggems-dtypes": ("tests/gpu/test_flaggems_bench.py", "gpu_flaggems_dtypes"),
    "dry": ("tests/gpu/test_dry_bench.py", "gpu_dry"),  # CPU only: the plumbing, no GPU
}
VARIANT = re.compile(r"^(serial|serial-pc|plugin|ours)(?:(\d+)(?:x(\d+))?)?$")
HARNESS_LINE = re.compile(r"replayed (\d+), swept (\d+) live")
SWEEP_LINE = re.compile(r"\[parallel-warmup\] sweep done in (\d+)s on (\d+) devices.*")
FELL_BACK = re.compile(r"\[parallel-warmup\] .*(falling back|skipping)")
PASSED_IN = re.compile(r"\d+ passed.* in ([\d.]+)s")
TUNING = re.compile(r"\(([\d.]+)s of tuning\)")
LOCK_WAIT = re.compile(r"([\d.]+)s waiting for the device's timing lock")
CLEAN_ENV = ("FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR", "FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR", "PARALLEL_WARMUP_GPUS",
             "FLAGGEMS_PERF_WARMUP_WORKER", "TRITON_CACHE_DIR", "GPU_BENCH_RESULT", "CUDA_VISIBLE_DEVICES",
             precompile.MODE, precompile.WORKERS, precompile.PRELOAD, precompile.START, precompile.LOCK_DIR,
             precompile.CHILDREN)


@dataclass
class Variant:
    name: str
    design: str  # serial, serial-pc, plugin, ours
    gpus: int = 1
    per_gpu: int = 1

    @property
    def children(self) -> int:
        return self.gpus * self.per_gpu

    @property
    def devices(self) -> str | None:
        """--devices for scripts/warmup; None: the tools find the GPUs."""
        if self.per_gpu == 1:
            return None
        return ",".join(str(g) for g in range(self.gpus) for _ in range(self.per_gpu))

    @property
    def precompiles(self) -> bool:
        return self.design in ("serial-pc", "ours")


def parse_variant(text: str) -> Variant:
    m = VARIANT.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"variant {text!r}: expected serial, serial-pc, pluginG[xC] or oursG[xC]")
    design, gpus, per_gpu = m.group(1), m.group(2), m.group(3)
    if design.startswith("serial"):
        if gpus:
            raise argparse.ArgumentTypeError(f"variant {text!r}: a serial sweep runs on one GPU")
        return Variant(text, design)
    if not gpus:
        raise argparse.ArgumentTypeError(f"variant {text!r}: say how many GPUs ({design}2, {design}1x2)")
    v = Variant(text, design, int(gpus), int(per_gpu or 1))
    if v.children < 2:
        raise argparse.ArgumentTypeError(f"variant {text!r}: a warmup needs 2 children or more")
    return v


# --- running one command -----------------------------------------------------------------------


class Clock:
    """The call's time budget: each run gets what is left minus a reserve for the tables."""

    def __init__(self, budget_s: float, reserve_s: float = 25.0):
        self.end = time.monotonic() + budget_s
        self.reserve = reserve_s

    def left(self) -> float:
        return self.end - time.monotonic() - self.reserve


def run(cmd, env, log: Path, clock: Clock, cwd=REPO) -> dict:
    """Runs cmd in its own session with stdout+stderr to log; stops it (TERM, then KILL) when
    the budget runs out. Returns exit code, wall seconds, timed_out."""
    left = clock.left()
    if left < 20:
        log.write_text(f"not run: {left:.0f}s of the budget left\n")
        return {"exit_code": None, "wall_s": 0.0, "timed_out": True, "skipped": True}
    start, start_epoch = time.monotonic(), time.time()
    with open(log, "w") as out:
        out.write(f"$ {' '.join(map(str, cmd))}\n")
        out.flush()
        proc = subprocess.Popen([str(c) for c in cmd], env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        timed_out = False
        try:
            proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return {"exit_code": proc.returncode, "wall_s": round(time.monotonic() - start, 2), "timed_out": timed_out,
            "started_epoch": start_epoch}


# --- reading what a run left -------------------------------------------------------------------


def read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def count_keys(record: dict | None) -> dict:
    return {kernel: len(keys) for kernel, keys in (record or {}).items() if isinstance(keys, dict)}


def picks_differing(a: dict | None, b: dict | None) -> tuple[int, int]:
    """(keys both records hold, of which with a different config)."""
    both = differ = 0
    for kernel, keys in (a or {}).items():
        other = (b or {}).get(kernel, {})
        for key, config in keys.items():
            if key in other:
                both += 1
                differ += other[key] != config
    return both, differ


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def compare(measure: dict | None, baseline: dict | None, field: str = "ms") -> dict:
    """Per-shape latency ratio measure/baseline of one measurement (``ms``: launches included,
    ``gpu_ms``: the kernel's own time) and their geometric mean."""
    if not measure or not baseline:
        return {"per_shape": {}, "geomean_ratio": None}
    per_shape = {}
    for sid, base in baseline.get("shapes", {}).items():
        got = measure.get("shapes", {}).get(sid)
        if got and got.get(field) and base.get(field):
            per_shape[sid] = {"baseline_ms": base[field], "ms": got[field], "ratio": got[field] / base[field]}
    return {"per_shape": per_shape, "geomean_ratio": geomean([s["ratio"] for s in per_shape.values()])}


def harness_line(log_text: str) -> dict | None:
    found = HARNESS_LINE.findall(log_text)
    if not found:
        return None
    replayed, swept = found[-1]
    return {"replayed": int(replayed), "swept_live": int(swept)}


def last_float(pattern: re.Pattern, text: str) -> float | None:
    found = pattern.findall(text)
    return float(found[-1]) if found else None


def time_split(text: str, seconds: float | None) -> dict:
    """Where a pytest process's time went, from its log: before pytest's clock (Python, pytest,
    the plugin, torch and the device: the conftest's session start), the tests, their tuning (the
    harness's total of each key's miss to decision), compiling ahead, waiting for the timing lock."""
    pytest_s = last_float(PASSED_IN, text)
    return {"startup_s": round(seconds - pytest_s, 2) if seconds is not None and pytest_s is not None else None,
            "pytest_s": pytest_s, "tuning_s": last_float(TUNING, text),
            "precompile": summarize_reports(parse_reports(text)),
            "lock_wait_s": last_float(LOCK_WAIT, text)}


def children_of(scratch: Path) -> list:
    out = []
    for status_file in sorted(scratch.glob("w*/status.json"), key=lambda p: int(p.parent.name[1:])):
        status = read_json(status_file) or {}
        log = status_file.parent / "worker.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        saw = [line.strip() for line in text.splitlines() if line.startswith("gpu-bench: warmup child")]
        out.append({
            "shard": status.get("shard"),
            "device": status.get("device"),
            "exit_code": status.get("exit_code"),
            "seconds": status.get("seconds"),
            "saw": saw[0] if saw else None,
            **time_split(text, status.get("seconds")),
        })
    return out


def summarize_reports(reports: list) -> dict:
    if not reports:
        return {}
    total = lambda name: sum(r[name] for r in reports)  # noqa: E731
    return {"keys": len(reports), "compiled": total("compiled"), "found": total("found"),
            "waited": total("waited"), "left": total("left"),
            "compile_s": round(total("capture_s") + total("compile_s"), 2),
            "first_key_s": round(reports[0]["capture_s"] + reports[0]["compile_s"], 2),
            "mode": reports[0]["mode"], "workers": reports[0]["workers"]}


def flaggems_store(home: Path) -> dict:
    """Rows in the FlagGems config databases under FLAGGEMS_CACHE_DIR (a warm store turns
    sweeps into lookups: with the harness's private stores it stays empty)."""
    rows = {}
    for db in sorted(home.glob("**/*.db")):
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            tables = [t for (t,) in con.execute("select name from sqlite_master where type='table'")]
            rows[db.name] = sum(con.execute(f'select count(*) from "{t}"').fetchone()[0] for t in tables)
            con.close()
        except sqlite3.Error as exc:
            rows[db.name] = f"unreadable: {exc}"
    return rows


# --- the proof -------------------------------------------------------------------------------


class Proof:
    def __init__(self, args):
        self.args = args
        self.bench_file, self.op = BENCHES[args.bench]
        self.work = Path(args.work) / args.bench
        self.out = Path(args.out)
        self.clock = Clock(args.budget)
        self.cpus = len(os.sched_getaffinity(0))
        self.doc = {
            "bench": args.bench,
            "op": self.op,
            "shape_file": str(args.shape_file),
            "precompile_mode": args.precompile_mode,
            "compile_workers": args.compile_workers,
            "preload": args.preload,
            "cpus": self.cpus,
            "gpus": args.gpus,
            "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "variants": {},
            "serial_replays": [],
        }

    def env(self, name: str, **extra) -> dict:
        env = {k: v for k, v in os.environ.items() if k not in CLEAN_ENV}
        env.update(PYTHONUNBUFFERED="1", FLAGGEMS_PERF_CURRENT_OP=self.op,
                   FLAGGEMS_CACHE_DIR=str(self.work / "flaggems_home"),
                   TRITON_CACHE_DIR=str(self.work / name / "triton_cache"))
        if self.args.bench == "dry":
            env["GPU_BENCH_DRY"] = "1"
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def pytest_cmd(self) -> list:
        return [sys.executable, "-m", "pytest", "-q", self.bench_file, "--shape_file", str(self.args.shape_file)]

    def say(self, text: str):
        print(f"[proof {self.args.bench}] {text}", flush=True)

    def save(self):
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / f"proof_{self.args.bench}.json").write_text(json.dumps(self.doc, indent=2))
        (self.out / f"proof_{self.args.bench}.md").write_text(render(self.doc))

    # one variant --------------------------------------------------------------------------------

    def harness_env(self, v: Variant) -> dict:
        """The harness's compile settings for a variant; every variant's timing locks in a folder
        of its own."""
        env = {precompile.LOCK_DIR: self.work / v.name / "device_locks"}
        if not v.precompiles:
            env[precompile.MODE] = "off"
            return env
        env[precompile.MODE] = self.args.precompile_mode
        if self.args.compile_workers:
            env[precompile.WORKERS] = self.args.compile_workers
        if self.args.preload is not None:
            env[precompile.PRELOAD] = self.args.preload
        return env

    def serial(self, v: Variant) -> dict:
        d = self.work / v.name
        records = d / "records"
        extra = {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": records, "GPU_BENCH_RESULT": d / "measure.json",
                 "CUDA_VISIBLE_DEVICES": self.args.first_gpu, **self.harness_env(v)}
        r = run(self.pytest_cmd(), self.env(v.name, **extra), d / "run.log", self.clock)
        measure = read_json(d / "measure.json")
        timing = (measure or {}).get("timing_s", 0.0)
        record = read_json(records / f"{self.op}.json")
        text = (d / "run.log").read_text(errors="replace")
        return {**r, "design": v.design, "devices": self.args.first_gpu, "children": 1,
                "sweep_s": round(r["wall_s"] - timing, 2) if r["exit_code"] in (0, 1) and not r["timed_out"] else None,
                "measure_timing_s": round(timing, 2), "keys": count_keys(record),
                **time_split(text, r["wall_s"]), "record": str(records / f"{self.op}.json")}

    def warmup(self, v: Variant) -> dict:
        d = self.work / v.name
        records = d / "records"
        extra = {"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR": records, "GPU_BENCH_RESULT": d / "measure.json",
                 **self.harness_env(v)}
        cmd = [REPO / "scripts/warmup", "--gpus", v.children, "--keep", "--scratch", d / "scratch"]
        if v.design == "plugin":
            cmd.append("--cache-per-child")
        if v.devices:
            cmd += ["--devices", v.devices]
        if self.args.backend:
            cmd += ["--backend", self.args.backend]
        cmd += ["--", *self.pytest_cmd()]
        r = run(cmd, self.env(v.name, **extra), d / "run.log", self.clock)
        text = (d / "run.log").read_text(errors="replace")
        measure = read_json(d / "measure.json")
        sweep_s = None
        if measure and measure.get("started_at") and r.get("started_epoch"):
            sweep_s = round(measure["started_at"] - r["started_epoch"], 2)
        sweep_line = SWEEP_LINE.search(text)
        record = read_json(records / f"{self.op}.json")
        conflicts = read_json(d / "scratch" / "conflicts.json")
        children = children_of(d / "scratch")
        return {**r, "design": v.design, "devices": v.devices or "found by the tools", "children": v.children,
                "sweep_s": sweep_s, "sweep_line": sweep_line.group(0) if sweep_line else None,
                "fell_back": bool(FELL_BACK.search(text)),
                "measure_mode": (measure or {}).get("mode"),
                "keys": count_keys(record), "conflicts": len(conflicts) if isinstance(conflicts, list) else None,
                "harness": harness_line(text), "children_info": children,
                "record": str(records / f"{self.op}.json")}

    def replay_serial(self, index: int) -> dict | None:
        d = self.work / f"replay_serial_{index}"
        record_dir = self.work / "serial" / "records"
        if not (record_dir / f"{self.op}.json").exists():
            return None
        extra = {"FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR": record_dir, "GPU_BENCH_RESULT": d / "measure.json",
                 "TRITON_CACHE_DIR": self.work / "replay_cache"}
        d.mkdir(parents=True, exist_ok=True)
        r = run(self.pytest_cmd(), self.env(d.name, **extra), d / "run.log", self.clock)
        text = (d / "run.log").read_text(errors="replace")
        return {**r, "measure": str(d / "measure.json"), "harness": harness_line(text)}

    def go(self) -> int:
        shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir(parents=True)
        variants = [v for v in self.args.variants if v.name != "serial"]
        if self.args.serial_baseline:
            self.adopt_serial(Path(self.args.serial_baseline))
            self.replay_and_keep(1)
        else:
            variants.insert(0, parse_variant("serial"))
        for v in variants:
            if v.gpus > self.args.gpus:
                self.doc["variants"][v.name] = {"design": v.design, "skipped": f"needs {v.gpus} GPUs, "
                                                f"{self.args.gpus} here"}
                self.say(f"{v.name}: skipped, needs {v.gpus} GPUs")
                continue
            (self.work / v.name).mkdir(parents=True, exist_ok=True)
            self.say(f"{v.name}: running ({self.clock.left():.0f}s of budget left)")
            result = self.serial(v) if v.design.startswith("serial") else self.warmup(v)
            self.doc["variants"][v.name] = result
            self.say(f"{v.name}: exit {result['exit_code']}, wall {result['wall_s']}s, sweep {result['sweep_s']}s")
            if v.name == "serial":
                self.doc["serial_record"] = read_json(Path(result["record"]))
                if result["exit_code"] not in (0, 1) or not result["keys"]:
                    # Nothing recorded, or pytest itself broke (1 is "some tests failed": those
                    # show in the table). Every other variant runs the same benchmark under the
                    # same harness: stop here and leave the device time for what can still work.
                    self.doc["aborted"] = (f"the serial sweep failed (exit {result['exit_code']}, "
                                           f"{sum(result['keys'].values())} keys recorded): see {v.name}/run.log")
                    self.say(self.doc["aborted"])
                    tail = (self.work / v.name / "run.log").read_text(errors="replace").splitlines()[-40:]
                    print("\n".join(tail), flush=True)
                    break
                self.replay_and_keep(1)
            self.fill_comparisons()
            self.save()
        if not self.doc.get("aborted"):
            self.replay_and_keep(2)
        self.doc["flaggems_store_rows"] = flaggems_store(self.work / "flaggems_home")
        self.fill_comparisons()
        self.save()
        self.pack()
        print(render(self.doc), flush=True)
        return 0

    def replay_and_keep(self, index: int):
        replay = self.replay_serial(index)
        if replay:
            self.doc["serial_replays"].append(replay)
            self.say(f"serial picks replayed ({index}): exit {replay['exit_code']}, harness {replay['harness']}")

    def adopt_serial(self, path: Path):
        """Takes the serial sweep of an earlier call (its proof_<bench>.json): its wall time and its
        records; the serial picks are still replayed here, on this machine's GPU."""
        earlier = read_json(path)
        if not earlier or earlier.get("bench") != self.args.bench or not earlier.get("serial_record"):
            raise SystemExit(f"proof: {path} holds no serial sweep of bench {self.args.bench} "
                             "(a proof_<bench>.json written by an earlier run with a serial variant)")
        records = self.work / "serial" / "records"
        records.mkdir(parents=True)
        (records / f"{self.op}.json").write_text(json.dumps(earlier["serial_record"]))
        serial = dict(earlier["variants"]["serial"])
        serial.update(record=str(records / f"{self.op}.json"), adopted_from=str(path),
                      adopted_started=earlier.get("started"))
        self.doc["variants"]["serial"] = serial
        self.doc["serial_record"] = earlier["serial_record"]

    def fill_comparisons(self):
        replays = [read_json(Path(r["measure"])) for r in self.doc["serial_replays"]]
        baseline = replays[0] if replays else None
        serial = self.doc["variants"].get("serial", {})
        serial_record = read_json(Path(serial["record"])) if serial.get("record") else None
        serial_sweep = serial.get("sweep_s")
        for name, v in self.doc["variants"].items():
            if "skipped" in v:
                continue
            measure = read_json(self.work / name / "measure.json")
            v["latency_vs_serial_picks"] = compare(measure, baseline)
            v["gpu_latency_vs_serial_picks"] = compare(measure, baseline, "gpu_ms")
            v["picks_compared"], v["picks_differing"] = picks_differing(
                serial_record, read_json(Path(v["record"])) if v.get("record") else None)
            v["speedup"] = round(serial_sweep / v["sweep_s"], 2) if serial_sweep and v.get("sweep_s") else None
        if len(replays) >= 2:
            self.doc["noise"] = compare(replays[1], replays[0])
            self.doc["gpu_noise"] = compare(replays[1], replays[0], "gpu_ms")

    def pack(self):
        """Logs, records, measurements and scratch metadata (no caches) into one archive."""
        archive = self.out / f"logs_{self.args.bench}.tar.gz"

        def keep(info: tarfile.TarInfo):
            parts = Path(info.name).parts
            if any(p in ("triton_cache", "replay_cache", ".triton_cache", "flaggems_home") for p in parts):
                return None
            return info

        with tarfile.open(archive, "w:gz") as tar:
            tar.add(self.work, arcname=self.args.bench, filter=keep)


# --- tables --------------------------------------------------------------------------------------


def fmt(value, digits=2, suffix=""):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}{suffix}"
    return f"{value}{suffix}"


def render(doc: dict) -> str:
    lines = [
        f"## {doc['bench']} (op {doc['op']}): {doc['started']}, {doc['gpus']} GPU(s), {doc['cpus']} CPUs, "
        f"precompile mode {doc['precompile_mode']}, compile workers {doc.get('compile_workers') or 'default'}, "
        f"preload {doc.get('preload') if doc.get('preload') is not None else 'default'}",
        "",
        "| variant | devices | children | exit | sweep wall s | speedup vs serial | keys | conflicts | "
        "replay: replayed / swept live | latency geomean vs serial picks: GPU time / launches included | "
        "picks differing |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, v in doc["variants"].items():
        if "skipped" in v:
            lines.append(f"| {name} | - | - | skipped: {v['skipped']} | | | | | | | |")
            continue
        lat = (v.get("latency_vs_serial_picks") or {}).get("geomean_ratio")
        gpu_lat = (v.get("gpu_latency_vs_serial_picks") or {}).get("geomean_ratio")
        harness = v.get("harness")
        exit_text = f"{v['exit_code']}{' (timed out)' if v.get('timed_out') else ''}"
        if v.get("adopted_from"):
            exit_text += f" (sweep of {v.get('adopted_started')})"
        if v.get("fell_back"):
            exit_text += " FELL BACK"
        lines.append(
            f"| {name} | {v.get('devices')} | {v.get('children')} | {exit_text} | {fmt(v.get('sweep_s'), 1)} | "
            f"{fmt(v.get('speedup'), 2, 'x')} | {sum(v.get('keys', {}).values())} | {fmt(v.get('conflicts'))} | "
            f"{(str(harness['replayed']) + ' / ' + str(harness['swept_live'])) if harness else '-'} | "
            f"{fmt(gpu_lat, 4)} / {fmt(lat, 4)} | {v.get('picks_differing', '-')} of {v.get('picks_compared', '-')} |"
        )
    if doc.get("aborted"):
        lines += ["", f"ABORTED: {doc['aborted']}"]
    noise = (doc.get("noise") or {}).get("geomean_ratio")
    gpu_noise = (doc.get("gpu_noise") or {}).get("geomean_ratio")
    lines += ["", f"Serial picks replayed twice (first after the serial sweep, then at the end): geomean ratio "
              f"{fmt(gpu_noise, 4)} GPU time / {fmt(noise, 4)} launches included (run-to-run noise)."]
    if doc.get("flaggems_store_rows") is not None:
        rows = doc["flaggems_store_rows"]
        lines.append(f"FlagGems config store rows under FLAGGEMS_CACHE_DIR after all runs: {rows}")
    split_rows = []
    for name, v in doc["variants"].items():
        for c in v.get("children_info") or ([v] if "pytest_s" in v else []):
            split_rows.append(render_split(name, c))
    if split_rows:
        lines += ["", "### where each sweep process's time went (s)", "",
                  "| variant | shard | device | exit | wall | start-up | tests | tuning | precompile: keys, "
                  "compiled / found (waited) / left | compiling ahead (first key) | timing-lock wait |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |", *split_rows]
    devices = [f"{name} shard {c['shard']}: {c['saw'].replace('gpu-bench: ', '')}"
               for name, v in doc["variants"].items() for c in v.get("children_info") or [] if c.get("saw")]
    if devices:
        lines += ["", "Devices the children saw:", "", *[f"- {d}" for d in devices]]
    lines += per_shape_table(doc, "gpu_latency_vs_serial_picks", "the GPU's time, CUDA graph replays")
    lines += per_shape_table(doc, "latency_vs_serial_picks", "launches included, do_bench")
    return "\n".join(lines) + "\n"


def per_shape_table(doc: dict, key: str, what: str) -> list:
    """The replayed latency of each shape under each variant's picks, with the ratio to the serial
    picks, for one comparison (``key``) of fill_comparisons."""
    per_variant = {n: (v.get(key) or {}).get("per_shape") for n, v in doc["variants"].items()}
    per_variant = {n: shapes for n, shapes in per_variant.items() if shapes}
    shape_ids = list(dict.fromkeys(sid for shapes in per_variant.values() for sid in shapes))
    if not shape_ids:
        return []
    lines = ["", f"### replayed latency per shape, {what} (ms; ratio to the serial picks)", "",
             "| shape | serial picks | " + " | ".join(per_variant) + " |",
             "| --- | --- | " + " | ".join("---" for _ in per_variant) + " |"]
    for sid in shape_ids:
        found = [shapes.get(sid) for shapes in per_variant.values()]
        base = next((f["baseline_ms"] for f in found if f), None)
        cells = [f"{f['ms']:.4f} ({f['ratio']:.3f})" if f else "-" for f in found]
        lines.append(f"| {sid} | {fmt(base, 4)} | " + " | ".join(cells) + " |")
    return lines


def render_split(name: str, c: dict) -> str:
    pcs = c.get("precompile") or {}
    compiled = (f"{pcs['keys']}, {pcs['compiled']} / {pcs['found']} ({pcs['waited']}) / {pcs['left']} "
                f"{pcs['mode']} x{pcs['workers']}" if pcs else "-")
    ahead = f"{pcs['compile_s']} ({pcs['first_key_s']})" if pcs else "-"
    wall = c.get("seconds", c.get("wall_s"))
    return (f"| {name} | {c.get('shard', '-')} | {c.get('device', '-')} | {c.get('exit_code')} | {fmt(wall, 1)} | "
            f"{fmt(c.get('startup_s'), 1)} | {fmt(c.get('pytest_s'), 1)} | {fmt(c.get('tuning_s'), 1)} | {compiled} | "
            f"{ahead} | {fmt(c.get('lock_wait_s'), 1)} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bench", choices=sorted(BENCHES), required=True)
    p.add_argument("--variants", default="serial,plugin2,ours2",
                   help="comma-separated: serial, serial-pc, pluginG[xC], oursG[xC] (default: %(default)s)")
    p.add_argument("--shape-file", default=str(HERE / "shapes.yaml"))
    p.add_argument("--gpus", type=int, required=True, help="GPUs this machine has")
    p.add_argument("--first-gpu", default="0", help="the GPU a serial sweep runs on")
    p.add_argument("--backend", default=None, help="scripts/warmup --backend (default: its own detection)")
    p.add_argument("--serial-baseline", default=None, metavar="PROOF_JSON",
                   help="take the serial sweep from an earlier call's proof_<bench>.json instead of running it")
    p.add_argument("--precompile-mode", default="processes", choices=("processes", "threads"),
                   help="the harness's precompile in serial-pc and ours variants (default: %(default)s)")
    p.add_argument("--compile-workers", type=int, default=None,
                   help="compile workers per process (default: the harness's, the CPUs divided among the children)")
    p.add_argument("--preload", default=None, metavar="MODULES",
                   help="modules each compile worker imports when it starts, comma-separated (default: the "
                        "harness's, torch)")
    p.add_argument("--budget", type=float, default=540, help="seconds this proof may take in all")
    p.add_argument("--work", default="/tmp/gpu_proof")
    p.add_argument("--out", default=os.environ.get("OUT", "gpu_proof_out"))
    args = p.parse_args(argv)
    try:
        args.variants = [parse_variant(t.strip()) for t in args.variants.split(",") if t.strip()]
    except argparse.ArgumentTypeError as exc:
        p.error(str(exc))
    return Proof(args).go()


if __name__ == "__main__":
    sys.exit(main())
