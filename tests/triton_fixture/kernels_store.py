"""A tuner that replaces Autotuner.run the way FlagGems' LibTuner does, and a kernel it tunes.

Like LibTuner (flag_gems/utils/libentry.py): its key goes through per-argument strategies (here
rounding up to a power of two, so nearby shapes share a decision), its decisions live in a SQLite
store found through FLAGGEMS_DB_URL when the module is imported (by default a file under $HOME),
the store hands back configs rebuilt without their pre-hooks, and run() maps those back to the
tuner's own configs. Beside the decisions the store keeps every `_bench` answer, per key and config,
as LibTuner's BenchmarkCache does in FlagGems 5.0 and 5.3 (`cache[config] = tuple(ret)`, inf
included), and a timing it holds is not timed again.
"""

import json
import math
import os
import sqlite3
from pathlib import Path

import triton
import triton.language as tl
from conftest import set_block_hook
from triton.runtime.autotuner import Autotuner

DB_URL = os.getenv("FLAGGEMS_DB_URL") or f"sqlite:///{Path.home() / '.fixture_gems' / 'tuned.db'}"


class ConfigStore:
    """Key -> best config, kept in SQLite."""

    def __init__(self, table: str):
        path = DB_URL.removeprefix("sqlite:///")
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)
        self.table = table
        self.db.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, config TEXT)")

    def get(self, key):
        row = self.db.execute(f"SELECT config FROM {self.table} WHERE key = ?", (repr(key),)).fetchone()
        if row is None:
            return None
        c = json.loads(row[0])
        return triton.Config(c["kwargs"], num_warps=c["num_warps"], num_stages=c["num_stages"])

    def __contains__(self, key):
        return self.get(key) is not None

    def __getitem__(self, key):
        config = self.get(key)
        if config is None:
            raise KeyError(key)
        return config

    def __setitem__(self, key, config):
        value = {"kwargs": config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}
        self.db.execute(f"INSERT OR REPLACE INTO {self.table} VALUES (?, ?)", (repr(key), json.dumps(value)))
        self.db.commit()


class BenchStore:
    """(key, config) -> the tuner's `_bench` answer, kept in SQLite beside the decisions."""

    def __init__(self, db, table: str):
        self.db, self.table = db, table
        db.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT, config TEXT, p50 DOUBLE, p20 DOUBLE, "
                   f"p80 DOUBLE, PRIMARY KEY (key, config))")

    def get(self, key, config):
        row = self.db.execute(f"SELECT p50, p20, p80 FROM {self.table} WHERE key = ? AND config = ?",
                              (repr(key), repr(sorted(config.all_kwargs().items())))).fetchone()
        return list(row) if row is not None else None

    def __setitem__(self, key_config, timing):
        key, config = key_config
        self.db.execute(f"INSERT OR REPLACE INTO {self.table} VALUES (?, ?, ?, ?, ?)",
                        (repr(key), repr(sorted(config.all_kwargs().items())), *timing))
        self.db.commit()


def pow2(value):
    return 2 ** math.ceil(math.log2(value))


class StoreTuner(Autotuner):
    def __init__(self, fn, configs, key, strategy):
        super().__init__(fn, fn.arg_names, configs, key, None, None)
        self.strategy = strategy
        self.cache = ConfigStore(fn.__name__)
        self.timings = BenchStore(self.cache.db, f"bench_{fn.__name__}")

    def get_key(self, args):
        key = tuple(s(args[k]) for s, k in zip(self.strategy, self.keys))
        return key + tuple(str(a.dtype) for a in args.values() if hasattr(a, "dtype"))

    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        if len(self.configs) > 1:
            key = self.get_key({k: v for k, v in {**self.nargs, **kwargs}.items() if k in self.arg_names})
            if key not in self.cache:
                pruned = self.prune_configs(kwargs)

                def bench(config):
                    ret = self.timings.get(key, config)
                    if ret is None:
                        ret = self._bench(*args, config=config, **kwargs)
                        self.timings[key, config] = tuple(ret)
                    return list(ret)

                timings = {config: bench(config) for config in pruned}
                self.cache[key] = min(timings, key=timings.get)
            config = self.cache[key]
            if config.pre_hook is None:
                for original in self.configs:
                    if original.all_kwargs() == config.all_kwargs():
                        config = original
                        break
        else:
            config = self.configs[0]
        self.best_config = config
        full_nargs = {**self.nargs, **kwargs, **config.all_kwargs()}
        if config.pre_hook is not None:
            config.pre_hook(full_nargs)
        ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
        self.nargs = None
        return ret


def store_tuned(configs, key, strategy):
    return lambda fn: StoreTuner(fn, configs, key, strategy)


@store_tuned(
    configs=[triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=3, pre_hook=set_block_hook)
             for m in (64, 128) for n in (64, 128, 256) for w in (4, 8)],
    key=["M", "N", "K"],
    strategy=[pow2, pow2, pow2],
)
@triton.jit
def mm_kernel_general(a, b, c, desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(c + pid, tl.load(a + pid) * tl.load(b + pid))
