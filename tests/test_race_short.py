"""A race's short pass (harness/warmup_harness/autotune/brief.py): each config timed briefly the way
its tuner times in full, and where the pass's seconds go (the race audit's breakdown).

The tuners are Triton's own Autotuner classes over a stand-in kernel; the device is a CPU stand-in
with a timing model: each config has a time with the L2 flushed before each launch (`cold`, what
Triton's do_bench measures) and one with the L2 warm (`warm`, what a graph replay measures), which
rank the configs differently, as on a GPU for kernels whose inputs fit in L2.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import warnings
from types import SimpleNamespace

import pytest
import triton
import triton.testing
from triton.runtime.autotuner import Autotuner

from support import ROOT

sys.path.insert(0, str(ROOT / "harness"))
from warmup_harness import triton_private, tuner_protocol  # noqa: E402
from warmup_harness.autotune import brief, policies, race, tuners  # noqa: E402

BLOCKS = (64, 128, 256)
COLD = {64: 1.0, 128: 3.0, 256: 1.05}  # ms a launch, the L2 flushed: 128 looks 3x slower
WARM = {64: 1.0, 128: 0.5, 256: 2.5}  # ms a launch, the L2 warm: 128 is the fastest
FLUSH_MS = 0.1  # an L2 flush (Triton's 256 MB buffer zeroed) on an H100, about


def body(x, n):
    pass


class Launcher:
    """What Autotuner calls `fn`: something with `run` and `arg_names` over a Python function."""

    def __init__(self):
        self.fn = body
        self.arg_names = ["x", "n"]
        self.launches = []

    def run(self, *args, grid=None, warmup=False, **kwargs):
        self.launches.append(kwargs)

    def block(self) -> int:
        return self.launches[-1]["BLOCK"]


class GraphDevice:
    """tuner_protocol.GraphDevice on the CPU: a launch takes `warm[block]` ms; a capture calls the
    kernel call `n` times (as a real capture does, launching nothing) and remembers n."""

    def __init__(self, launcher, warm: dict):
        self.launcher, self.warm = launcher, warm
        self.captured: list[int] = []  # n of each graph
        self.replayed: list[int] = []  # replays asked at a time
        self.measured_ms = 0.0

    def launches(self, fn, count):
        for _ in range(count):
            fn()
        ms = self.warm[self.launcher.block()] * count
        self.measured_ms += ms
        return ms

    def capture(self, fn, count):
        for _ in range(count):
            fn()
        self.captured.append(count)
        return SimpleNamespace(block=self.launcher.block(), n=count)

    def replays(self, graph, count):
        self.replayed.append(count)
        self.measured_ms += self.warm[graph.block] * graph.n * count
        return [self.warm[graph.block] * graph.n] * count


class BenchDevice:
    """triton_private.BenchDevice on the CPU: a launch takes `cold[block]` ms."""

    def __init__(self, launcher, cold: dict):
        self.launcher, self.cold = launcher, cold
        self.timed = 0

    def time(self, fn, count):
        out = []
        for _ in range(count):
            fn()
            out.append(self.cold[self.launcher.block()])
        self.timed += count
        return out


class LibTuner53(Autotuner):
    """FlagGems 5.3.4's LibTuner as racing meets it: a benchmark protocol resolved at construction
    (`benchmark_protocol.cache_policy`: graph replay with a warm L2, or event timing), a do_bench of
    two arguments with its budget bound inside, its own key and store, and every `_bench` answer
    kept as a timing row, asked only where the row is missing."""

    def __init__(self, *args, protocol_bench, cache_policy="warm_l2", **kw):
        super().__init__(*args, do_bench=protocol_bench, **kw)
        self.benchmark_protocol = SimpleNamespace(cache_policy=cache_policy)
        self.rows: dict = {}

    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        key = (self.nargs["n"],)
        if key not in self.cache:
            pruned = self.prune_configs(kwargs)
            for config in pruned:
                if config not in self.rows:
                    self.rows[config] = tuple(self._bench(*args, config=config, **kwargs))
            self.cache[key] = min(pruned, key=lambda c: self.rows[c])
        self.fn.run(*args, **kwargs, **self.cache[key].all_kwargs())


@pytest.fixture
def device(monkeypatch):
    """The stand-in device: graph replay (warm), the driver's primitives (cold), and a driver
    do_bench taking a budget (cold, as Triton's do_bench with its L2 flush): what 5.3.4's short pass
    fell back to."""
    launcher = Launcher()
    graph, bench = GraphDevice(launcher, WARM), BenchDevice(launcher, COLD)
    driver_timed = []

    def driver_do_bench(kernel_call, warmup=25, rep=100, quantiles=None, **_):
        kernel_call()
        driver_timed.append(launcher.block())
        return [COLD[launcher.block()]] * len(quantiles)

    monkeypatch.setattr(tuner_protocol, "graph_device", lambda: graph)
    monkeypatch.setattr(triton_private, "bench_device", lambda: bench)
    monkeypatch.setattr(triton_private, "device_benchmarker", lambda: driver_do_bench)
    return SimpleNamespace(launcher=launcher, graph=graph, bench=bench, driver_timed=driver_timed)


def protocol(launcher, model: dict):
    """A protocol's do_bench, two arguments, its budget bound: the full timing, `model` exact."""
    full: list[int] = []

    def protocol_bench(kernel_call, quantiles):
        kernel_call()
        full.append(launcher.block())
        return [model[launcher.block()]] * len(quantiles)

    return protocol_bench, full


def configs():
    return [triton.Config({"BLOCK": b}, num_warps=4) for b in BLOCKS]


def race_one(tuner, tmp_path, n=10):
    """Records one key of `tuner` with racing on and an audit: (the pick's BLOCK, the audit line, the
    closing line)."""
    picked, lines = [], []
    audit = tmp_path / "audit.jsonl"
    racer = race.Racer(lines.append, audit=str(audit))
    tuners.install(policies.Recorder(lambda kernel, key, config, seconds, fp: picked.append(config)), racer=racer)
    try:
        tuner.run(object(), n)
    finally:
        tuners.uninstall()
    [line] = audit.read_text().splitlines()
    return picked[0]["kwargs"]["BLOCK"], json.loads(line)


def test_a_tuner_timed_by_graph_replay_is_raced_by_a_brief_graph_replay_and_ranks_as_its_full_timings(
        device, tmp_path):
    """FlagGems 5.3 on NVIDIA: the full timing replays a graph with a warm L2; the short pass replays a
    short graph (REPLAYS replays of at most REPLAY_MAX launches), never the protocol's own do_bench nor
    the driver's cold one, and drops what the warm timings drop: the pick is the fastest full timing."""
    bench, full = protocol(device.launcher, WARM)
    tuner = LibTuner53(device.launcher, ["x", "n"], configs(), ["n"], None, None, protocol_bench=bench)
    winner, entry = race_one(tuner, tmp_path)
    assert winner == 128, "the fastest full timing (the L2 warm), which the L2 flushed shows 3x slower"
    assert device.driver_timed == [] and device.bench.timed == 0, "no cold timing in the short pass"
    assert full == [128, 64, 256], "in full: the kept, then the dropped for the audit only"
    assert [c.kwargs["BLOCK"] for c in tuner.rows] == [128], "the tuner's timing rows: the kept config's"
    assert device.graph.captured and all(1 <= n <= brief.REPLAY_MAX for n in device.graph.captured)
    assert sum(device.graph.replayed) <= brief.REPLAYS * len(device.graph.captured), device.graph.replayed
    rows = {c["index"]: c for c in entry["configs"]}
    by_short = sorted(rows, key=lambda i: rows[i]["short_ms"])
    by_full = sorted(rows, key=lambda i: rows[i]["full_ms"])
    assert by_short == by_full == [1, 0, 2], entry["configs"]
    assert [rows[i]["short_ms"] for i in (0, 1, 2)] == [WARM[b] for b in BLOCKS]


def test_a_tuner_whose_protocol_times_events_and_triton_s_own_autotuners_are_raced_by_brief(device, tmp_path):
    """FlagGems 5.3's event protocol (the L2 flushed, as the driver's do_bench), Triton's Autotuner and
    FlagGems 5.0.2's (the deprecated warmup/rep) are timed briefly by Brief; Triton's
    `use_cuda_graph=True` by Replay."""
    bench, _ = protocol(device.launcher, COLD)
    event = LibTuner53(device.launcher, ["x", "n"], configs(), ["n"], None, None, protocol_bench=bench,
                       cache_policy="cold_l2")
    plain = Autotuner(device.launcher, ["x", "n"], configs(), ["n"], None, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = Autotuner(device.launcher, ["x", "n"], configs(), ["n"], None, None, warmup=5, rep=10)
        graphed = Autotuner(device.launcher, ["x", "n"], configs(), ["n"], None, None, use_cuda_graph=True)
    custom = Autotuner(device.launcher, ["x", "n"], configs(), ["n"], None, None, do_bench=bench)
    devices: dict = {}
    assert [type(brief.short_bench(t, devices)).__name__ for t in (event, plain, old, graphed, custom)] == [
        "Brief", "Brief", "Brief", "Replay", "Budgeted"]
    assert devices == {"driver": device.bench, "graph": device.graph}, "one device of each kind a session"

    winner, entry = race_one(event, tmp_path)
    assert winner == 64 and device.bench.timed and device.graph.captured == []
    assert entry["configs"][1]["retimed"] is False, "3x slower with the L2 flushed, as its full timing"


def test_a_short_timing_of_a_kernel_under_one_ms_runs_at_most_three_ms_of_it():
    """Issue 43: a kernel under 1 ms times in a few launches: Brief (the L2 flushed before each timed
    launch, FLUSH_MS) and Replay (warm, no flush) cost at most 3 ms of device time a short timing."""
    for ms in (0.005, 0.05, 0.2, 0.5, 0.9):
        launcher = Launcher()
        graph = GraphDevice(launcher, {64: ms})
        for short in (brief.Brief(BenchDevice(launcher, {64: ms})), brief.Replay(graph)):
            before = len(launcher.launches)
            answer = short(lambda launcher=launcher: launcher.run(BLOCK=64), quantiles=(0.5, 0.2, 0.8))
            assert answer == pytest.approx([ms] * 3), (short, ms)
            called = len(launcher.launches) - before
            if isinstance(short, brief.Brief):
                assert short.launches == called and short.device_ms == pytest.approx((called - 1) * ms)
                assert called * ms + (called - 1) * FLUSH_MS <= 3.0, (ms, called)
            else:  # a capture calls the kernel call without launching; every launch is timed
                assert short.launches == called - graph.captured[-1] + graph.captured[-1] * brief.REPLAYS
                assert short.device_ms == pytest.approx(short.launches * ms) and short.device_ms <= 3.0, ms


def test_the_audit_line_and_the_race_line_say_where_the_short_pass_went(device, tmp_path, monkeypatch, capsys):
    """The audit carries, per key, the seconds the short pass waited for compiles, spent in its
    timings and measured on the device, the rest (host), its launches and timings; so does the
    TRITON_PRINT_AUTOTUNING line."""
    monkeypatch.setenv("TRITON_PRINT_AUTOTUNING", "1")
    bench, _ = protocol(device.launcher, WARM)
    tuner = LibTuner53(device.launcher, ["x", "n"], configs(), ["n"], None, None, protocol_bench=bench)

    def as_compiled(_tuner, configs):
        for config in configs:
            time.sleep(0.05)  # a compile finishing
            yield config

    audit = tmp_path / "audit.jsonl"
    racer = race.Racer(lambda line: None, order=as_compiled, audit=str(audit))
    tuners.install(policies.Recorder(lambda *a: None), racer=racer)
    try:
        tuner.run(object(), 10)
    finally:
        tuners.uninstall()
    entry = json.loads(audit.read_text())
    assert entry["wait_s"] >= 0.15, entry
    assert entry["device_s"] == pytest.approx(device.graph.measured_ms / 1000, abs=1e-4)
    rest = entry["short_s"] - entry["wait_s"] - entry["device_s"]  # the stand-in's device time is made up
    assert entry["host_s"] == pytest.approx(max(0.0, rest), abs=1e-3)
    assert entry["timing_s"] <= entry["short_s"] - entry["wait_s"] + 1e-3
    # Warm-up: 1 + 25 launches of 64 (1 ms). 64: 1 + a graph of 1 replayed twice. 128 (0.5 ms, best):
    # 1 + 2 x 2. 256 (2.5 ms, past twice the best): 1 + 1, out-run. The best's four more for the
    # noise: 4 x 5; 64's second look (past the limit, not out-run): 3.
    assert (entry["launches"], entry["timings"]) == (26 + 3 + 5 + 2 + 20 + 3, 1 + 3 + 4 + 1), entry
    out = capsys.readouterr().out
    assert "s waiting for compiles, " in out and ", 59 launches), 1 re-timed in full in " in out, out
    table = subprocess.run([sys.executable, str(ROOT / "tests" / "gpu" / "race_audit.py"), str(audit)],
                           capture_output=True, text=True, check=True).stdout
    assert "| 59 | 9 |" in table and "59 launches in 9 short timings" in table, table


def test_a_kernel_call_that_cannot_be_captured_is_timed_by_its_launches_on_the_warm_l2():
    """A graph capture that fails (a pre-hook that synchronizes, on a real device) must not fail
    the sweep the tuner's own timing would run: the short timing launches without a graph."""
    launcher = Launcher()

    class Uncapturable(GraphDevice):
        def capture(self, fn, count):
            raise RuntimeError("operation not permitted when stream is capturing")

    device = Uncapturable(launcher, {64: 0.25})
    short = brief.Replay(device)
    launcher.launches.append({"BLOCK": 64})
    sample = short(lambda: launcher.launches.append({"BLOCK": 64}), quantiles=[0.5])
    assert sample == [0.25] and short.uncapturable.startswith("RuntimeError: operation not permitted")
    assert short.launches == 1 + brief.REPLAYS * brief._count(brief.REPLAY_MS, 0.25, brief.REPLAY_MAX)
