"""Every name of Triton's that is not its documented API and that the harness relies on, in one
place: a new Triton version is checked here. Every module of the harness reaches them through
this one (kernel_function, config_attributes, run_jit, current_target, jit_function, ...), except
the autotuner's four attributes that the hooks (autotune/tuners.py) replace on the class, which
are listed here (the first bullet) and checked with the rest.

Checked against Triton 3.4.0, 3.5.1, 3.6.0, 3.7.1, 3.8.0 and 3.9.0: `make test-triton` runs the
harness's tests (record, replay, precompile, the tuner classes) on each. Compiling ahead needs
`knobs.runtime.jit_cache_hook` (3.4 and later): on 3.2 and 3.3, which have no `knobs`, this module
imports all the same and cannot_compile says why nothing is compiled ahead. 3.8's
`knobs.autotuning.listener` is called after a key's
decision (`Autotuner.run`, with the timings), so it cannot hand over the pruned configs before they
are timed: the hook on `prune_configs` (autotune/tuners.py) stays the seam for compiling ahead.

What is used, and what Triton does with it:

* of `triton.runtime.autotuner.Autotuner` (and so of FlagGems' `LibTuner`, a subclass): the
  store `cache` and the flag `cache_results` (3.4 and later), which tuners.py replaces with
  properties on the class; `prune_configs`, which Autotuner.run and LibTuner.run call right
  before timing, and `_bench`, which times one config (tuners.py wraps both); `configs` and
  `nargs` (the launch's positional arguments by name), read where they are used, and `fn` or
  `base_fn` (the kernel under the tuner, `.fn` again under a `Heuristics` layer: kernel_function,
  jit_function), whose `run(..., warmup=True)` compiles without launching (run_jit); of a
  `Config`: its attributes (those `vars(Config({}))` names: `kwargs`, `num_warps`, ..., `pre_hook`:
  config_attributes, for configs.config_record); Triton 3.8 decides a key whose pruning leaves one config without
  `_bench` (versions.py says what else differs across the range);
* `knobs.runtime.jit_cache_hook`: `JITFunction._do_compile` calls it before compiling, with `fn`
  (its `.jit_function`) and `compile["specialization_data"]`, the JSON `JITFunction.preload`
  takes; True skips the compile;
* of a `JITFunction`: `.fn` (the Python function), `.module`, `.cache_key` (a property on 3.4 to
  3.9: sha256 of the source and what it calls, plus the starting line; a compile job names its
  function by it);
* for a kernel's fingerprint (source_hash, heuristics_values, tuner_settings; fingerprints.py):
  `triton.runtime.jit.DependenciesFinder`, Triton's own walk of a jit function's AST, built as
  `cache_key` builds it (`name=fn._fn_name, globals=fn.__globals__, nonlocals=..., src=fn.src`,
  then `visit(fn.parse())`), whose `_update_hash(func)` is handed each function it finds called
  (3.4: every name and attribute, a `JITFunction` among them; 3.5 to 3.9: each `JITCallable`) and
  whose `hasher` starts from the source (source_hash hands it the fingerprint's text of it
  instead): source_hash's subclass hashes a callee's own source_hash there instead of its
  `cache_key`, so that no line number enters; `JITFunction.src` (from its `def`) and `.fn`, whose
  `__globals__` and `__code__` the fingerprint reads. Of a `Heuristics` (the class
  `triton.heuristics` makes, in `triton.runtime.autotuner`): `values` and `fn`. Of an `Autotuner`: `keys`,
  `early_config_prune`, `perf_model`, `configs_top_k`, `reset_to_zero`, `restore_value`, set from
  `triton.autotune`'s arguments on 3.4 to 3.9; and `Autotuner.run(self, *args, **kwargs)` asks
  `key not in self.cache` with the launch's keyword arguments in its local `kwargs`
  (launch_kwargs), which `prune_configs(kwargs)` takes;
* the specialization JSON's fields (`constant_keys`, `constant_vals`, `attrs_keys`, `attrs_vals`,
  `signature`, `options`), read as `preload` reads them (`rebuild`);
* `triton._C.libtriton.get_cache_invalidating_env_vars`, `triton.runtime.cache.get_cache_key` (3.5
  and later; on 3.4 `compile` builds the same key from `triton.compiler.compiler.triton_key`), the
  memoized `triton_key` itself (`triton.runtime.cache` on 3.5 and later: key_home, own_key; the
  module attribute, which compile reads at each call, is one that waits for early_key.py's thread
  while that runs, as Triton 3.9's own compile workers put theirs there) and
  `get_cache_manager`, a manager's `get_group` and `cache_dir`, and the entry's metadata file name
  `<name[:150]>.json`, as `triton.compiler.compile` names it; `triton.compile(..., _env_vars=)`
  (3.5 and later);
* `driver.active.get_current_target()`, the device's target (current_target; the sidecar's device
  name where torch says none);
* the driver's state, to know whether one was set (`driver.set_active`, a stand-in's) or created
  without creating one: `_active` (3.5 and later), `active` and `default`, a `LazyProxy` whose
  `_obj` is empty until used (3.4); `driver.set_active`, with which a forked compile worker puts in
  a driver that refuses every question (`forbid_driver`), and `knobs.cache.dir`, which the worker
  sets to each job's cache folder (a session may have set the knob itself).

Why `JITFunction.preload` itself is not called: it asks `driver.active` for the current device (a
worker process must not start a device) and compiles through the JIT without the cache entry's
lock that has children sharing a kernel cache compile each kernel once. `rebuild` is its reconstruction
of the compile's source without either.

The functions live by concern in sibling modules, each re-exported here, where the harness
imports them from: triton_fingerprint.py (a kernel's fingerprint), triton_compile.py (compiling
ahead into Triton's kernel cache, the driver's state), triton_key.py (Triton's key of itself, a
leaf early_key.py imports too) and triton_bench.py (the timing racing shadows); the autotuner's
and a config's own names are here.

This module imports Triton; the harness imports it when it compiles, and for a kernel's
fingerprint (autotune/fingerprints.py).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from triton import Config
from triton.runtime.driver import driver

from .triton_bench import (BenchDevice, bench_device, device_benchmarker, do_bench_as,  # noqa: F401
                           bench_kind, tuner_do_bench)
from .triton_compile import (NoDevice, cache_entry, cannot_compile, compile_context,  # noqa: F401
                             compile_into_cache, driver_exists, forbid_driver, identity, in_cache, jit_function,
                             knobs, rebuild, specializations_taken, stub_device_set,
                             use_cache_dir)
from .triton_key import key_home, own_key  # noqa: F401
from .triton_fingerprint import heuristics_values, source_hash, tuner_settings  # noqa: F401


# --- the autotuner's and a config's names (record and replay) ----------------------------------


def kernel_function(tuner: Any) -> Any:
    """The Python function under a tuner: its `base_fn` (a `Heuristics` layer's), else its `fn`,
    walked down `.fn` (a JITFunction's) to a plain function; a stand-in's own object when the walk
    finds none."""
    fn = getattr(tuner, "base_fn", None) or tuner.fn
    while not inspect.isfunction(fn) and hasattr(fn, "fn"):
        fn = fn.fn
    return fn


def config_attributes(config: Any) -> dict:
    """A `triton.Config`'s attributes as this Triton version defines them (`kwargs`, `num_warps`,
    ..., `pre_hook`), read one by one: the names are those a new `Config` has. Not `vars(config)`:
    on Python 3.11 and 3.12 reading an object's `__dict__` moves its attributes out of the object
    into a dict for good, and every later read of one is slower; the tuner reads its configs'
    attributes at each launch (FlagGems' LibTuner.run matches the config its store rebuilt back to
    its own by `all_kwargs()`, config by config), so a launch through the harness would cost more
    than plain's. An object of another class (a subclass's) is read through `vars`."""
    if type(config) is not Config:
        return dict(vars(config))
    return {name: getattr(config, name) for name in _config_names() if hasattr(config, name)}


@functools.cache
def _config_names() -> tuple[str, ...]:
    return tuple(vars(Config({})))


def run_jit(tuner: Any, *args: Any, **kwargs: Any) -> Any:
    """Runs the JIT function under a tuner (`tuner.fn.run`): with `warmup=True` it compiles, or
    loads, and launches nothing."""
    return tuner.fn.run(*args, **kwargs)


def current_target() -> Any:
    """The target of this process's device, from Triton's active driver (which asking creates)."""
    return driver.active.get_current_target()


def prunes(tuner: Any) -> bool:
    """Whether the tuner prunes its configs per key (`prune_configs_by`)."""
    return bool(getattr(tuner, "early_config_prune", None) or getattr(tuner, "perf_model", None))


def launch_kwargs(tuner: Any) -> dict | None:
    """The keyword arguments of the tuner's launch under way (the local `kwargs` of the `run` that
    asks `key in self.cache`), or None where no such frame is found."""
    frame = inspect.currentframe()
    try:
        while frame is not None:
            if frame.f_code.co_name == "run" and frame.f_locals.get("self") is tuner:
                found = frame.f_locals.get("kwargs")
                return found if isinstance(found, dict) else None
            frame = frame.f_back
        return None
    finally:
        del frame
