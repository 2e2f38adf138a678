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
  `Config`: its attributes (`vars(config)`: `kwargs`, `num_warps`, ..., `pre_hook`:
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
lock that has children sharing a cache compile each kernel once. `rebuild` is its reconstruction
of the compile's source without either.

This module imports Triton; the harness imports it when it compiles, and for a kernel's
fingerprint (autotune/fingerprints.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import inspect
import json
import os
from collections.abc import Iterator
from typing import Any, Callable

import triton
import triton.language as tl
from triton.compiler import ASTSource, make_backend
from triton.runtime.driver import driver
from triton.runtime.jit import DependenciesFinder, JITFunction

from . import early_key

try:
    from triton import knobs
except ImportError:  # before 3.4: nothing is compiled ahead here (cannot_compile says why)
    knobs = None


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
    ..., `pre_hook`)."""
    return dict(vars(config))


def run_jit(tuner: Any, *args: Any, **kwargs: Any) -> Any:
    """Runs the JIT function under a tuner (`tuner.fn.run`): with `warmup=True` it compiles, or
    loads, and launches nothing."""
    return tuner.fn.run(*args, **kwargs)


def current_target() -> Any:
    """The target of this process's device, from Triton's active driver (which asking creates)."""
    return driver.active.get_current_target()


# --- a kernel's fingerprint --------------------------------------------------------------------

try:
    from triton.runtime.jit import JITCallable  # 3.5 and later: what a jit function calls
except ImportError:  # 3.4
    JITCallable = JITFunction


class _LineFree(DependenciesFinder):
    """Triton's dependency walk, hashing each callee by its own source_hash (no line number)."""

    active: set[int]
    own_text: Callable[[Any], str]

    def _update_hash(self, func):
        if isinstance(func, JITCallable) and hasattr(func, "parse") and hasattr(func, "src"):
            text = source_hash(func, self.own_text, self.active) + str(getattr(func, "noinline", False))
            self.hasher.update(text.encode("utf-8"))


def source_hash(fn: Any, own_text: Callable[[Any], str], _active: set[int] | None = None) -> str:
    """sha256 of `own_text(fn)` for a jit function (what stands for its source: fingerprints.py's
    takes `fn.src`, from its `def`, and `fn.fn`, the Python function) and, transitively, of the jit
    functions it calls as Triton's own walk finds them: its `cache_key` without the starting line,
    so that moving a kernel in its file changes nothing, and editing it changes it and its callers
    alone."""
    active = set() if _active is None else _active
    if id(fn) in active:  # a function that calls itself, as cache_key's placeholder says it
        return f"recursion:{fn._fn_name}"
    active.add(id(fn))
    try:
        nonlocals = inspect.getclosurevars(fn.fn).nonlocals
        finder = _LineFree(name=fn._fn_name, globals=fn.__globals__, nonlocals=nonlocals, src=own_text(fn))
        finder.active, finder.own_text = active, own_text
        finder.visit(fn.parse())
        return finder.ret
    finally:
        active.discard(id(fn))


def heuristics_values(tuner: Any) -> list[dict]:
    """The `values` ({name: function}) of each `triton.heuristics` layer between the tuner and its
    jit function, outermost first."""
    from triton.runtime.autotuner import Heuristics

    found, fn = [], getattr(tuner, "fn", None)
    for _ in range(16):
        if fn is None or isinstance(fn, JITFunction):
            break
        if isinstance(fn, Heuristics):
            found.append(dict(fn.values))
        fn = getattr(fn, "fn", None)
    return found


def tuner_settings(tuner: Any) -> dict:
    """What besides its configs decides a tuner's pick: its key's argument names, its pruning
    (`prune_configs_by`: early_config_prune, perf_model, top_k) and the arguments it zeroes or
    restores around each timing."""
    return {"key": getattr(tuner, "keys", None), "early_config_prune": getattr(tuner, "early_config_prune", None),
            "perf_model": getattr(tuner, "perf_model", None), "top_k": getattr(tuner, "configs_top_k", None),
            "reset_to_zero": getattr(tuner, "reset_to_zero", None),
            "restore_value": getattr(tuner, "restore_value", None)}


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


# --- compiling ahead ---------------------------------------------------------------------------


def jit_function(kernel: Any) -> JITFunction:
    """The JITFunction under a tuner, a heuristics layer or a library's wrapper (`.fn` chain)."""
    fn = kernel
    for _ in range(16):
        if isinstance(fn, JITFunction):
            return fn
        fn = getattr(fn, "fn", None)
    raise TypeError(f"no triton.jit function under {kernel!r}")


def identity(fn: JITFunction) -> dict:
    """What a worker needs to find the same function: module, qualified name, file, cache key."""
    return dict(module=fn.module, qualname=fn.fn.__qualname__,
                source_file=getattr(fn.fn.__code__, "co_filename", None), fn_cache_key=fn.cache_key)


def compile_context() -> dict:
    """What this process's launches are compiled for: target, cache-invalidating environment and
    cache folder."""
    from triton._C.libtriton import get_cache_invalidating_env_vars

    return dict(target=driver.active.get_current_target(), env_vars=get_cache_invalidating_env_vars(),
                cache_dir=str(knobs.cache.dir))


@contextlib.contextmanager
def specializations_taken(take: Callable[[JITFunction, str], None]) -> Iterator[None]:
    """While inside, every compile the JIT would do hands `take` its function and specialization
    (JSON) instead, and compiles nothing."""

    def hook(*, fn, compile, **_):  # noqa: A002
        take(fn.jit_function, compile["specialization_data"])
        return True

    previous, knobs.runtime.jit_cache_hook = knobs.runtime.jit_cache_hook, hook
    try:
        yield
    finally:
        knobs.runtime.jit_cache_hook = previous


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def rebuild(fn: JITFunction, specialization: str, target: Any) -> tuple[Any, Any, Any]:
    """`JITFunction.preload`'s reconstruction of the compile's source, without asking a driver:
    (source, backend, options)."""
    data = json.loads(specialization)
    constexprs = {
        tuple(k): tl.dtype(v) if isinstance(v, str) and tl.dtype.is_dtype(v)
        else tl.constexpr(v["constexpr"]) if isinstance(v, dict) and "constexpr" in v else v
        for k, v in zip(data["constant_keys"], data["constant_vals"])
    }
    attrs = dict(zip(map(tuple, data["attrs_keys"]), data["attrs_vals"]))
    signature = {k: _tuples(v) for k, v in data["signature"].items()}
    backend = make_backend(target)
    options = backend.parse_options({k: _tuples(v) for k, v in data["options"].items()})
    return ASTSource(fn, signature, constexprs, attrs), backend, options


def key_home() -> tuple[Any, str]:
    """Where Triton's compile finds its key of itself: the module and the name it reads at each
    call (`triton.runtime.cache.triton_key`, which get_cache_key calls, on 3.5 and later;
    `triton.compiler.compiler.triton_key`, which `compile` calls, on 3.4)."""
    for name in ("triton.runtime.cache", "triton.compiler.compiler"):  # 3.5 and later; 3.4
        module = importlib.import_module(name)
        if hasattr(module, "triton_key"):
            return module, "triton_key"
    raise ImportError("Triton has no triton_key where 3.4 to 3.9 keep it")


def own_key() -> Callable[[], str]:
    """Triton's key of itself, `triton_key` (memoized): where every cache key of a compile starts;
    Triton's own function, also while early_key's thread computes it."""
    key = getattr(*key_home())
    return getattr(key, early_key.WAITS_FOR, key)


def _cache_key(src: Any, backend: Any, options: Any, env_vars: dict) -> str:
    early_key.wait()  # computing it already
    try:
        from triton.runtime.cache import get_cache_key  # 3.5 and later
    except ImportError:  # 3.4: `compile` builds the same key itself
        return f"{own_key()()}-{src.hash()}-{backend.hash()}-{options.hash()}-{str(sorted(env_vars.items()))}"
    return get_cache_key(src, backend, options, env_vars)


def cache_entry(src: Any, backend: Any, options: Any, env_vars: dict, cache_dir: str) -> tuple[Any, str]:
    """The source's entry in Triton's cache (its manager) and the folder whose flock guards it."""
    from triton.runtime.cache import get_cache_manager

    digest = hashlib.sha256(_cache_key(src, backend, options, env_vars).encode("utf-8")).hexdigest()
    entry = get_cache_manager(digest)
    # Another cache manager than Triton's files (TRITON_CACHE_MANAGER) gets a folder of locks.
    return entry, getattr(entry, "cache_dir", None) or os.path.join(cache_dir, ".warmup-locks", digest)


def in_cache(entry: Any, src: Any) -> bool:
    """Whether the entry holds the compiled kernel (its metadata file, as `compile` names it)."""
    metadata = f"{src.name[:150]}.json"
    group = entry.get_group(metadata)
    return bool(group and metadata in group)


def compile_into_cache(src: Any, target: Any, options: Any, env_vars: dict) -> None:
    """`triton.compile` keyed with the caller's environment (3.5 and later take it; 3.4 reads this
    process's, which a worker inherited from the caller)."""
    if "_env_vars" in inspect.signature(triton.compile).parameters:
        triton.compile(src, target=target, options=options.__dict__, _env_vars=env_vars)
    else:
        triton.compile(src, target=target, options=options.__dict__)


class NoDevice:
    """A compile worker's Triton driver: any question raises, naming it. A worker compiles for the
    target its session resolved before the fork and passed in each job (`triton.compile(...,
    target=)` asks no driver); one that asked would start CUDA in a process forked from one that
    runs it, which CUDA does not support."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"compile worker {os.getpid()} asked Triton's driver for {name!r}: a compile worker "
                           f"never touches the device (its session resolved the target)")


def forbid_driver() -> None:
    """In a compile worker: Triton's driver refuses every question from now on."""
    driver.set_active(NoDevice())


def use_cache_dir(folder: str) -> None:
    """In a compile worker: the job's Triton cache folder, whatever the session's knob held."""
    knobs.cache.dir = folder


def cannot_compile() -> str | None:
    """Why Triton cannot compile ahead here (too old, or no backend for this process's device),
    or None."""
    if knobs is None or not hasattr(knobs.runtime, "jit_cache_hook"):
        return "this Triton has no knobs.runtime.jit_cache_hook (3.4 and later have)"
    try:
        make_backend(driver.active.get_current_target())
    except Exception as exc:
        return f"Triton cannot compile for this process's device ({type(exc).__name__}: {exc})"
    return None


def stub_device_set() -> bool:
    """Whether the benchmark set Triton's driver itself (`driver.set_active`, as a CPU stand-in
    does) to one whose device Triton cannot compile for. The default driver is not created to ask:
    that would start the device before the benchmark does."""
    return driver_exists() and cannot_compile() is not None


def driver_exists(config: Any = None) -> bool:
    """Whether Triton's driver (`config`, by default `triton.runtime.driver.driver`) was set
    (`driver.set_active`) or created already; asking creates none."""
    state = vars(driver if config is None else config)
    if "_active" in state:  # 3.5 and later: None until set or first used
        return state["_active"] is not None
    active = state.get("active")  # 3.4: the default is a LazyProxy, empty until first used
    return active is not None and (active is not state.get("default") or vars(active).get("_obj") is not None)


# --- racing (autotune/race.py) ------------------------------------------------------------------
# `Autotuner.do_bench`, a cached_property (3.4 to 3.9): the tuner's `do_bench=` argument (kept as
# `_do_bench`), a lambda over testing.do_bench with its deprecated `warmup`/`rep` or over
# do_bench_cudagraph with `use_cuda_graph=True`, else the driver's benchmarker
# (`driver.active.get_benchmarker()`, testing.do_bench on CUDA and HIP), which `_bench` calls as
# `self.do_bench(kernel_call, quantiles=...)`. Being a non-data descriptor, an instance's own
# `do_bench` shadows it for one timing.


def tuner_do_bench(tuner: Any) -> Any:
    """The tuner's own do_bench, or None where asking fails."""
    try:
        return tuner.do_bench
    except Exception:
        return None


def device_benchmarker() -> Any:
    """The active driver's benchmarker, or None where it has none."""
    try:
        return driver.active.get_benchmarker()
    except Exception:
        return None


def bench_kind(tuner: Any) -> str | None:
    """How a tuner times by Triton's own means, read off its `_do_bench`: "driver" where it times as
    Triton's driver does (None: the driver's benchmarker; or the deprecated `warmup`/`rep`:
    Autotuner's own lambda over `triton.testing.do_bench`), "graph" where it replays a CUDA graph
    (the deprecated `use_cuda_graph=True`: the lambda over `triton.testing.do_bench_cudagraph`),
    None for a do_bench of the user's."""
    own = tuner.__dict__.get("_do_bench", _NOTHING)
    if own is None:
        return "driver"
    code = getattr(own, "__code__", None)
    if getattr(own, "__module__", None) != "triton.runtime.autotuner" or code is None:
        return None
    if "do_bench_cudagraph" in code.co_names + code.co_freevars:  # 3.4 to 3.9: a closure's free name
        return "graph"
    return "driver" if "do_bench" in code.co_names else None


class BenchDevice:
    """What `triton.testing.do_bench` times with (3.4 to 3.9): the driver's device interface (its
    `Event(enable_timing=True)`, `.record()`, `.elapsed_time()`, `synchronize()`), the buffer
    `get_empty_cache_for_benchmark()` and `clear_cache(buffer)`, which empties the L2 before each
    timed launch. Its events are made once, and reused."""

    def __init__(self) -> None:
        self._driver = driver.active
        self._device = self._driver.get_device_interface()
        self._buffer = self._driver.get_empty_cache_for_benchmark()
        self._pairs: list[tuple[Any, Any]] = []

    def time(self, fn: Callable[[], Any], count: int) -> list[float]:
        """`count` launches of `fn`, each timed alone between two events after the L2 is emptied,
        as do_bench times them; one synchronization at the end. Milliseconds."""
        while len(self._pairs) < count:
            self._pairs.append((self._device.Event(enable_timing=True), self._device.Event(enable_timing=True)))
        pairs = self._pairs[:count]
        for start, end in pairs:
            self._driver.clear_cache(self._buffer)
            start.record()
            fn()
            end.record()
        self._device.synchronize()
        return [start.elapsed_time(end) for start, end in pairs]


def bench_device() -> BenchDevice | None:
    """The driver's timing primitives, or None where this Triton or device has none."""
    try:
        return BenchDevice()
    except Exception:
        return None


@contextlib.contextmanager
def do_bench_as(tuner: Any, bench: Callable[..., Any]) -> Iterator[None]:
    """`tuner.do_bench` is `bench` for the duration (an instance attribute shadowing the class's)."""
    saved = tuner.__dict__.get("do_bench", _NOTHING)
    tuner.__dict__["do_bench"] = bench
    try:
        yield
    finally:
        if saved is _NOTHING:
            tuner.__dict__.pop("do_bench", None)
        else:
            tuner.__dict__["do_bench"] = saved


_NOTHING = object()
