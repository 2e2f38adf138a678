"""Racing a swept key's configs (a record session's default; `WARMUP_HARNESS_RACE=0`, `scripts/warmup
--no-race`, times every config in full instead): every pruned config is timed briefly first, the
ones the short timings show to lose by more than their noise are dropped, and only the rest are
handed to the tuner, timed in full its own way; the winner is the fastest full timing.

Why: once compiling is done ahead, timing every config in full is most of a compile-heavy cold
sweep, and most configs lose by a margin a few launches show (BENCHMARKS.md, "Racing, measured").

How, at the tuner's pruning (tuners.py), so that it serves Triton's `Autotuner` and the subclasses
that replace `run` (FlagGems' `LibTuner`) alike: the race runs when the tuner has pruned its
configs, each config timed through the tuner's own `_bench` (its hooks, its kernel call, the device
lock, the launch's arguments from `tuner.nargs`), and the pruning hands the tuner the configs the
race keeps, no other. A dropped config never reaches the tuner's `_bench`: no timing the race makes
up reaches a tuner's store (FlagGems' LibTuner saves every `_bench` answer in its SQLite store).

* warm-up: before a session's first race, the first config runs untimed (brief.py);
* short pass: each config through `_bench`, its `do_bench` swapped for a short one timed the way
  the tuner times in full (brief.py: Brief, launches timed as testing.do_bench times them; Replay,
  a brief graph replay as FlagGems 5.3's protocol times; or a do_bench given a short budget).
  Configs go in history's order (compiles submitted so too) as their compiles finish
  (precompile/ahead.py), so that the cut-off is tight from the first and timing never waits on the
  slowest compile; where the pass's seconds go is kept per key (brief.Cost, the audit);
* verdict (verdict.py): the best is timed NOISE_SAMPLES times, its spread the key's noise; a config
  past the noise but not out-run is timed again; one is dropped on its own timings only, and an
  unknown (NaN, inf) timing keeps it;
* full pass: the kept configs are timed by the tuner's `_bench` unchanged (its own `warmup`/`rep`
  and do_bench), and each of the tuner's own `_bench` calls for them is answered with that timing.

History (race_history.py; `WARMUP_HARNESS_RACE_HISTORY=0` turns it off): the kernel's earlier keys,
in the record and raced in this session, order a new key's race best first; with
`WARMUP_HARNESS_RACE_HISTORY=N` (opt-in until a device measures it on by default), once N were raced
on this device model, the configs near the best on none are held back, raced only where the others
leave doubt, and one key in race_plan.AUDIT_EVERY races them all as an audit (race_plan.py).

A tuner whose `_bench` never calls `do_bench` (its class times its own way), or that has no
do_bench taking a budget, or whose `run` sets no `nargs`, cannot be timed briefly: its first answer
is kept as a full timing and that class, or that tuner, is not raced again, said once. Only record
sessions race (session.py); a replay's live sweep times every config as without the harness.
Standard library only.
"""

from __future__ import annotations

import json
import math
import os
import time
from typing import Any, Callable

from . import verdict
from .brief import OUTRUN, Cost, score, short_bench
from .bypass import RACE, end_race
from .fingerprints import config_order
from .race_history import DEFAULT_NEAR as NEAR, History
from .race_plan import Plan, doubt, missed

Timer = Callable[[Any, Any], Any]  # (config, do_bench or None) -> the tuner's _bench answer


class Race:
    """One key's race: its configs, and the full timing of each it keeps, once run."""

    def __init__(self, kernel: str, key: str, configs: list, order: Callable[[list], Any],
                 index_of: dict[int, int] | None = None, plan: Plan | None = None):
        self.kernel = kernel
        self.key = key
        self.configs = list(configs)
        self._index_of = index_of or {}  # id(config) -> its index among the tuner's configs (config_order)
        self.plan = plan or Plan(sorted(set(self._index_of.values())))
        self.why = self.plan.why  # the sidecar's `history`: the plan's, or "doubt" once the held are raced
        place = {i: n for n, i in enumerate(self.plan.order)}
        ranked = sorted(self.configs, key=lambda c: place.get(self._index_of.get(id(c), -1), math.inf))
        held = [c for c in ranked if self._index_of.get(id(c), -1) in self.plan.held]
        if len(held) == len(ranked):  # the history holds back every config left: race them all
            held = []
        self.held = held  # raced only where the first leave doubt (race_plan.py), else neither compiled nor timed
        held_ids = {id(h) for h in held}
        self.first = [c for c in ranked if id(c) not in held_ids]  # raced first, best first
        self.near: list[int] = []  # indexes of the configs within `near` of the best short timing, fastest first
        self.winner: int | None = None  # the index of the fastest full timing
        self._order = order  # configs -> the same configs, as their compiles finish
        self.answers: dict[int, Any] = {}  # id(config) -> the tuner's own full answer for it
        self.raced = 0
        self.retimed = 0
        self.short_s = 0.0
        self.full_s = 0.0
        self.audit_s = 0.0
        self.cost = Cost()  # where the short pass went (brief.py)
        self.cost_fields: dict = {}
        self.spread: float | None = None
        self.limit: float | None = None  # ms: a single consistent short timing past it is dropped
        self.short: dict[int, float] = {}  # id(config) -> its first short timing, ms
        self.full: dict[int, float] = {}  # id(config) -> its full timing, ms (the dropped too, audited)
        self.kept: list = []  # the configs re-timed in full, in the tuner's order: all the tuner gets

    def run(self, timer: Timer, short: Any, warm: bool = False, audit: bool = False,
            compile_more: Callable[[list], Any] = lambda configs: None) -> bool:
        """Times the configs; False where the short timing never reached `short` (the tuner's
        `_bench` times its own way): the first answer is then a full one, kept, and the rest are
        left to the tuner. With `warm`, the first config warms the device first. With `audit`, the
        dropped configs are timed in full too, for `audit()` alone. The held configs are raced,
        compiled by `compile_more` first, only where the first ones leave doubt."""
        used = []

        @self.cost.timed
        def counted(*args, **kwargs):
            used.append(True)
            return short(*args, **kwargs)

        @self.cost.timed
        def warming(kernel_call, quantiles=None, **_):
            used.append(True)
            short.warm(kernel_call, quantiles)
            return [math.nan] * len(quantiles) if quantiles else math.nan  # thrown away

        best_so_far = math.inf

        def short_pass(configs: list) -> bool:
            nonlocal warm, best_so_far
            for config in self.cost.waited(self._order(configs)):
                if warm:
                    warm, answer = False, timer(config, warming)
                    if not used:  # not briefly timed: a full timing
                        self.answers[id(config)] = answer
                        return False
                if hasattr(short, "cutoff_ms"):
                    short.cutoff_ms = best_so_far * OUTRUN
                answer = timer(config, counted)
                if not used:
                    self.answers[id(config)] = answer
                    return False
                self.short[id(config)] = score(answer)
                if self.short[id(config)] < best_so_far:
                    best_so_far = self.short[id(config)]
            return True

        start = time.perf_counter()
        if not short_pass(self.first):
            return False
        firsts = {self._index_of[id(c)]: self.short[id(c)] for c in self.first if id(c) in self._index_of}
        if self.held and doubt(firsts, self.plan.predicted, self.plan.near):
            self.why = "doubt"
            compile_more(self.held)
            short_pass(self.held)
        if hasattr(short, "cutoff_ms"):
            short.cutoff_ms = math.inf
        raced = [c for c in self.configs if id(c) in self.short]
        contenders = self._verdict(raced, lambda config: score(timer(config, counted)))
        self.short_s = time.perf_counter() - start
        self.cost_fields = self.cost.fields(short, self.short_s)
        start = time.perf_counter()
        for config in contenders:
            self.answers[id(config)] = answer = timer(config, None)
            self.full[id(config)] = score(answer)
        self.full_s = time.perf_counter() - start
        self.raced, self.retimed, self.kept = len(raced), len(contenders), contenders
        self.winner = self._index_of.get(verdict.best({id(c): self.full[id(c)] for c in contenders}))
        if self.winner is not None and self.winner not in self.near:
            self.near.append(self.winner)
        if audit:
            start = time.perf_counter()
            for config in raced:
                if id(config) not in self.full:
                    self.full[id(config)] = score(timer(config, None))
            self.audit_s = time.perf_counter() - start
        return True

    def _verdict(self, raced: list, again: Callable[[Any], float]) -> list:
        """The configs to re-time in full, in their own order (verdict.py); `again` times one briefly."""
        best = verdict.best({id(c): self.short[id(c)] for c in raced})
        if best is None:  # no config timed at all: nothing to drop on
            return raced
        by_id = {id(c): c for c in raced}
        samples = [self.short[best]] + [again(by_id[best]) for _ in range(verdict.NOISE_SAMPLES - 1)]
        measured = verdict.noise(samples)
        if measured is None:
            return raced
        middle, self.spread = measured
        self.limit = verdict.limit(middle, self.spread)
        own = {id(c): [self.short[id(c)]] for c in raced}
        own[best] = samples
        for config in raced:
            if id(config) != best and verdict.second_look(self.short[id(config)], middle, self.spread):
                own[id(config)].append(again(config))
        close = sorted((c for c in raced if id(c) in self._index_of and
                        (id(c) == best or self.short[id(c)] <= middle * (1 + self.plan.near))),
                       key=lambda c: self.short[id(c)])
        self.near = list(dict.fromkeys(self._index_of[id(c)] for c in close))
        return [c for c in raced if id(c) == best or verdict.kept(own[id(c)], middle, self.spread)]

    def record(self) -> dict:
        """The key's entry in the sidecar's `race`."""
        entry = {"raced": self.raced, "retimed": self.retimed, "skipped": len(self.configs) - self.raced,
                 "near": self.near}
        if self.winner is not None:
            entry["winner"] = self.winner
        if self.why is not None:
            entry["history"] = self.why
        if self.why == "audit":
            entry["audit"] = {"missed": missed(self.plan, self.near)}
        return entry

    def audit(self) -> dict:
        """The key's line in the audit file (`WARMUP_HARNESS_RACE_AUDIT`): every raced config's short
        and full timing, whether the race re-timed it, and what the race and a full sweep pick."""
        kept = {id(c) for c in self.kept}
        rows = [{"index": self._index_of.get(id(c)), "short_ms": _number(self.short.get(id(c))),
                 "full_ms": _number(self.full.get(id(c))), "retimed": id(c) in kept}
                for c in self.configs if id(c) in self.short]
        return {"kernel": self.kernel, "key": self.key, "spread": self.spread, "limit_ms": self.limit,
                "short_s": round(self.short_s, 4), "full_s": round(self.full_s, 4),
                "audit_s": round(self.audit_s, 4), **self.cost_fields, "configs": rows}

    def line(self) -> str:
        spread = f"{self.spread:.1%}" if self.spread is not None else "none"
        c = self.cost_fields
        return (f"race {self.kernel} key {self.key}: {self.raced} configs raced in {self.short_s:.2f}s "
                f"(noise {spread}; {c['wait_s']:.2f}s waiting for compiles, {c['device_s']:.2f}s on the device, "
                f"{c['host_s']:.2f}s host, {c['launches']} launches), {self.retimed} re-timed in full in "
                f"{self.full_s:.2f}s")


def _number(value: float | None) -> float | None:
    """A timing as JSON takes it: `inf` (a config that failed) as None."""
    return value if value is not None and math.isfinite(value) else None


class Racer:
    """A record session's racing: runs a race per swept key (tuners.py, at pruning), hands the tuner
    the configs it keeps and answers their timings, and keeps what each key cost, for the sidecar and
    the closing line."""

    def __init__(self, say: Callable[[str], None], order: Callable[[Any, list], Any] | None = None,
                 history: History | None = None, near: float = NEAR, audit: str | None = None):
        self._say = say
        self._audit = audit  # WARMUP_HARNESS_RACE_AUDIT: a file each raced key's audit() line is added to
        self._order = order or (lambda tuner, configs: configs)  # the precompiler's as_compiled
        self._history = history
        self._near = near
        self.keys: dict[str, dict[str, dict]] = {}  # kernel -> key -> Race.record()
        self.settings: dict[str, dict] = {}  # kernel -> its history's settings, the sidecar's `race_settings`
        self.skipped = 0
        self.raced = 0
        self.retimed = 0
        self.short_s = 0.0
        self.full_s = 0.0
        self._unraceable: set[type] = set()
        self._warm = True  # the device is warmed before the session's first race
        self._devices: dict = {}  # the short timings' devices, made once (brief.short_bench)

    def start(self, tuner: Any, kernel: str, key: str | None, configs: list,
              fingerprint: Callable[[], str | None] = lambda: None) -> list:
        """A key about to be timed: its race, unless it has fewer than two configs or its tuner
        cannot be timed briefly. Returns the configs worth compiling, best first by the kernel's
        history: all but those it holds back (race_history.py), which are compiled and timed only
        where the others leave doubt."""
        end_race(tuner)
        if (key is None or len(configs) < 2 or type(tuner) in self._unraceable
                or tuner.__dict__.get("_warmup_harness_unraced")):
            return configs
        index_of = config_order(getattr(tuner, "configs", None) or [])  # the same in any order: the fingerprint's
        plan = (self._history.plan(kernel, key, fingerprint, len(index_of)) if self._history is not None
                else Plan(list(range(len(index_of))), near=self._near))
        race = Race(kernel, key, configs, lambda cs, t=tuner: self._order(t, cs), index_of, plan)
        tuner.__dict__[RACE] = race
        return race.first

    def decide(self, tuner: Any, configs: list, timer: Timer | None,
               compile_more: Callable[[list], Any] = lambda configs: None) -> list:
        """Runs the key's race, if one was started, and returns the configs the tuner is to time: the
        race's kept ones, or all of `configs` where the tuner cannot be raced (`timer` None: its run
        sets no `nargs`, so the race cannot launch). `compile_more` compiles the held configs
        where the race comes to them."""
        race = tuner.__dict__.get(RACE)
        if race is None:
            return configs
        short = short_bench(tuner, self._devices) if timer is not None else None
        warm, self._warm = self._warm, False
        if short is None or not race.run(timer, short, warm, self._audit is not None, compile_more):
            self._give_up(tuner, race.kernel, "no nargs" if timer is None else "own bench" if short else "no budget")
            if not race.answers:
                end_race(tuner)
            if race.held:  # the tuner times every config: the held ones are compiled as they are timed
                compile_more(race.held)
            return configs
        self._count(race)
        return race.kept

    def bench(self, tuner: Any, config: Any, timer: Timer) -> Any:
        """The tuner's `_bench` answer for `config`: its full timing from its key's race, else timed
        as it always is."""
        race = tuner.__dict__.get(RACE)
        answer = race.answers.pop(id(config), None) if race is not None else None
        if answer is None:
            return timer(config, None)
        if not race.answers:
            end_race(tuner)
        return answer

    def _give_up(self, tuner: Any, kernel: str, why: str) -> None:
        """No more races for this tuner's class (its `_bench` times without do_bench, its `run` sets no
        `nargs`), or for this tuner (no do_bench takes a budget), said once."""
        cls = type(tuner)
        name = f"{cls.__module__}.{cls.__qualname__}"
        if why == "no budget":
            tuner.__dict__["_warmup_harness_unraced"] = True
            self._say(f"race: {kernel} is not raced (no do_bench of its own or of the driver takes a warm-up "
                      f"and a repetition budget): its configs are each timed in full")
            return
        self._unraceable.add(cls)
        reason = ("its _bench times without do_bench" if why == "own bench"
                  else "its run sets no nargs, the launch's arguments by name")
        self._say(f"race: {name} is not raced ({reason}): its configs are each timed in full")

    def _count(self, race: Race) -> None:
        entry = self.keys.setdefault(race.kernel, {})[race.key] = race.record()
        if self._history is not None:
            self._history.add(race.kernel, race.key, race.plan.fingerprint, entry)
            self.settings[race.kernel] = self._history.recorded_settings(race.kernel)
        if race.winner is not None and race.winner in race.plan.cold and race.why == "audit":
            self._say(f"race: {race.kernel} key {race.key}: its audit's winner, config {race.winner}, came near on "
                      f"none of the kernel's earlier keys, so history would have skipped it: the key keeps it, "
                      f"and it is near from now on")
        self.skipped += len(race.configs) - race.raced
        self.raced += race.raced
        self.retimed += race.retimed
        self.short_s += race.short_s
        self.full_s += race.full_s
        if os.environ.get("TRITON_PRINT_AUTOTUNING") == "1":
            print(f"warmup-harness {race.line()}")
        if self._audit is not None:
            self._write_audit(race)

    def _write_audit(self, race: Race) -> None:
        """Adds the key's audit line; a file that cannot be written is said once, and auditing stops."""
        try:
            with open(self._audit, "a", encoding="utf-8") as out:
                out.write(json.dumps(race.audit(), separators=(",", ":")) + "\n")
        except OSError as exc:
            self._say(f"race: cannot add to the audit file {self._audit} ({exc.strerror or exc}): "
                      f"auditing stops, racing goes on")
            self._audit = None

    def summary(self) -> str | None:
        if not self.keys:
            return None
        keys = sum(len(k) for k in self.keys.values())
        skipped = f", {self.skipped} skipped by history (neither compiled nor timed)" if self.skipped else ""
        return (f"race: {keys} key(s), {self.raced} configs raced in {self.short_s:.1f}s, {self.retimed} "
                f"re-timed in full in {self.full_s:.1f}s{skipped}")
