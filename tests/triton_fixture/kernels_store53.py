"""A tuner shaped as FlagGems 5.3's LibTuner (flag_gems/utils/libentry.py, 5.3.4), and a kernel it tunes.

kernels_store.py is the 5.0 shape. What 5.3 adds, and the harness meets, is here in a few lines each:

* the benchmark protocol, resolved when the module is imported, from Triton's active driver (which
  asking creates, as FlagGems does at import): graph replay with a warm L2 where the driver replays
  (NVIDIA, AMD; here the stubbed device, unless FIXTURE_BENCHMARK_MODE=event), else event timing.
  The tuner's `do_bench` is the protocol's two-argument `(kernel_call, quantiles)` callable; on
  the stubbed device both time as the driver's benchmarker does (conftest.py);
* one SQLite store, two tables: decisions by the strategy's key, in a table named for the kernel
  and, unless the protocol is plain event timing, namespaced by the protocol; timings by the exact
  key plus the protocol and the config. A timing already there is not asked of `_bench` again;
* run modes (`use_run_mode`: normal, force_policy, exhaustive_collection): the last two time and
  pick without the decision table, and launch their pick;
* `benchmark_config(config, warmup=, rep=)`: one config timed through `_bench`, no table at all;
* FlagTune's mode (`_flagtune_mode`, "default"; FIXTURE_FLAGTUNE=cost_model): the policy times and
  picks among configs it makes, fresh objects (here: copies of every other config).
"""

import hashlib
import json
import math
import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path

import triton
import triton.language as tl
from conftest import set_block_hook
from triton.runtime.autotuner import Autotuner
from triton.runtime.driver import driver

DB_URL = os.getenv("FLAGGEMS_DB_URL") or f"sqlite:///{Path.home() / '.fixture_gems' / 'tuned53.db'}"
RUN_MODES = ("normal", "force_policy", "exhaustive_collection")


def config_text(config) -> str:
    return json.dumps(config.all_kwargs(), sort_keys=True)


class Store:
    """Both tables in one SQLite file, opened at import (FlagGems' LibCache is made then)."""

    def __init__(self, url: str):
        path = url.removeprefix("sqlite:///")
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)

    def table(self, name: str) -> "Decisions":
        self.db.execute(f'CREATE TABLE IF NOT EXISTS "{name}" (key TEXT PRIMARY KEY, config TEXT)')
        return Decisions(self.db, name)

    def timing(self, table: str, key, config):
        self.db.execute(f'CREATE TABLE IF NOT EXISTS "{table}" '
                        f'(key TEXT, config TEXT, ms TEXT, PRIMARY KEY (key, config))')
        row = self.db.execute(f'SELECT ms FROM "{table}" WHERE key = ? AND config = ?',
                              (repr(key), config_text(config))).fetchone()
        return tuple(json.loads(row[0])) if row else None

    def put_timing(self, table: str, key, config, ms) -> None:
        self.db.execute(f'INSERT OR REPLACE INTO "{table}" VALUES (?, ?, ?)',
                        (repr(key), config_text(config), json.dumps(list(ms))))
        self.db.commit()


class Decisions:
    """Key -> best config; configs come back rebuilt, without their pre-hooks."""

    def __init__(self, db, name: str):
        self.db, self.name = db, name

    def __contains__(self, key):
        return self.db.execute(f'SELECT 1 FROM "{self.name}" WHERE key = ?', (repr(key),)).fetchone() is not None

    def __getitem__(self, key):
        row = self.db.execute(f'SELECT config FROM "{self.name}" WHERE key = ?', (repr(key),)).fetchone()
        if row is None:
            raise KeyError(key)
        c = json.loads(row[0])
        return triton.Config(c["kwargs"], num_warps=c["num_warps"], num_stages=c["num_stages"])

    def __setitem__(self, key, config):
        value = {"kwargs": config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}
        self.db.execute(f'INSERT OR REPLACE INTO "{self.name}" VALUES (?, ?)', (repr(key), json.dumps(value)))
        self.db.commit()


STORE = Store(DB_URL)


def resolve_protocol(mode: str, warmup: int, rep: int, retries: int = 10):
    """(the protocol's cache key, its two-argument do_bench), from the active driver."""
    timer = driver.active.get_benchmarker()
    if mode == "replay":  # the stubbed device "replays": its timings are a pure function anyway
        per_replay = rep / retries
        return ("fixture_graph_replay_v1", warmup, rep, retries, per_replay), \
            lambda kernel_call, quantiles: timer(kernel_call, rep=per_replay, quantiles=quantiles)
    return ("triton_do_bench", warmup, rep), \
        lambda kernel_call, quantiles: timer(kernel_call, warmup=warmup, rep=rep, quantiles=quantiles)


def default_policy(tuner, bench, configs):
    timings = {config: bench(config) for config in configs}
    return min(timings, key=timings.get), timings


def cost_model_policy(tuner, bench, configs):
    """FlagTune's shape: configs of its own making (fresh objects), timed and the fastest kept."""
    proposed = [triton.Config(dict(c.kwargs), num_warps=c.num_warps, num_stages=c.num_stages, pre_hook=c.pre_hook)
                for c in list(configs)[::2]]
    return default_policy(tuner, bench, proposed)


def pow2(value):
    return 2 ** math.ceil(math.log2(value))


class LibTuner53(Autotuner):
    def __init__(self, fn, configs, key, strategy, warmup=25, rep=100):
        mode = os.environ.get("FIXTURE_BENCHMARK_MODE") or "replay"
        self._benchmark_protocol, do_bench = resolve_protocol(mode, warmup, rep)
        super().__init__(fn, fn.arg_names, configs, key, None, None, do_bench=do_bench)
        self.strategy = strategy
        self._run_mode = "normal"
        self._flagtune_mode = os.environ.get("FIXTURE_FLAGTUNE") or "default"
        self.policy = cost_model_policy if self._flagtune_mode == "cost_model" else default_policy
        self.cache = STORE.table(self._table_name())
        self.timing_table = f"{fn.__name__}_benchmark_v2"

    def _table_name(self) -> str:
        digest = hashlib.md5(",".join(map(config_text, self.configs)).encode()).hexdigest()[:8]
        name = f"{self.base_fn.__name__}_{digest}"
        if self._flagtune_mode != "default":
            name += f"_flagtune_{self._flagtune_mode}"
        if self._benchmark_protocol[0] == "triton_do_bench":
            return name
        return f"{name}_benchmark_{hashlib.sha256(repr(self._benchmark_protocol).encode()).hexdigest()[:12]}"

    def dtypes(self, named):
        return tuple(str(a.dtype) for a in named.values() if hasattr(a, "dtype"))

    def get_key(self, named):
        return tuple(s(named[k]) for s, k in zip(self.strategy, self.keys)) + self.dtypes(named)

    def timing_key(self, named):
        return tuple(named[k] for k in self.keys) + self.dtypes(named) + tuple(self._benchmark_protocol)

    @contextmanager
    def use_run_mode(self, mode: str):
        if mode not in RUN_MODES:
            raise ValueError(f"no run mode {mode!r}")
        previous, self._run_mode = self._run_mode, mode
        try:
            yield
        finally:
            self._run_mode = previous

    def benchmark_config(self, config, *, warmup: int, rep: int, quantiles=(0.5, 0.2, 0.8)):
        """One config timed afresh with the protocol's mode and this budget; no table is read or
        written. The decision table is swapped for the budget's and back, as 5.3 does."""
        previous_cache, previous_bench = self.cache, self.do_bench
        protocol, bench = resolve_protocol(os.environ.get("FIXTURE_BENCHMARK_MODE") or "replay", warmup, rep)
        self.cache = STORE.table(f"{self.base_fn.__name__}_{hashlib.sha256(repr(protocol).encode()).hexdigest()[:12]}")
        self.do_bench = lambda kernel_call, quantiles=None, wanted=tuple(quantiles): bench(kernel_call, wanted)
        self.nargs = dict(zip(self.arg_names, self._last_args))
        try:
            return list(self._bench(*self._last_args, config=config, **self._last_meta))
        finally:
            self.cache, self.do_bench, self.nargs = previous_cache, previous_bench, None

    def run(self, *args, **kwargs):
        skip_table = self._run_mode != "normal"
        self._last_args, self._last_meta = args, dict(kwargs)
        self.nargs = dict(zip(self.arg_names, args))
        config = self.configs[0]
        if len(self.configs) > 1 or skip_table:
            named = {k: v for k, v in {**self.nargs, **kwargs}.items() if k in self.arg_names}
            key = self.get_key(named)
            if skip_table or key not in self.cache:
                timing_key = self.timing_key(named)

                def bench(config):
                    ms = STORE.timing(self.timing_table, timing_key, config)
                    if ms is None:  # the pre-check: a timing in the store is not asked again
                        ms = tuple(self._bench(*args, config=config, **kwargs))
                        STORE.put_timing(self.timing_table, timing_key, config, ms)
                    return list(ms)

                policy = default_policy if self._run_mode == "exhaustive_collection" else self.policy
                best, self.configs_timings = policy(self, bench, self.prune_configs(kwargs))
                if skip_table:
                    config = best
                else:
                    self.cache[key] = best
                    config = self.cache[key]
            else:
                config = self.cache[key]
            if config.pre_hook is None:
                config = next((c for c in self.configs if c.all_kwargs() == config.all_kwargs()), config)
        self.best_config = config
        if config.pre_hook is not None:
            config.pre_hook({**self.nargs, **kwargs, **config.all_kwargs()})
        ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
        self.nargs = None
        return ret


def libtuner(configs, key, strategy):
    return lambda fn: LibTuner53(fn, configs, key, strategy)


@libtuner(
    configs=[triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=3, pre_hook=set_block_hook)
             for m in (64, 128) for n in (64, 128, 256) for w in (4, 8)],
    key=["M", "N", "K"],
    strategy=[pow2, pow2, pow2],
)
@triton.jit
def mm_kernel_general(a, b, c, desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(c + pid, tl.load(a + pid) * tl.load(b + pid))
