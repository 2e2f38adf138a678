"""Compiling ahead into Triton's kernel cache, and the driver's state, as Triton's own names allow
(triton_private.py lists what is used and the versions it was checked against; precompile/ uses it).
Imports Triton.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
from collections.abc import Iterator
from typing import Any, Callable

import triton
import triton.language as tl
from triton.compiler import ASTSource, make_backend
from triton.runtime.driver import driver
from triton.runtime.jit import JITFunction

from . import early_key
from .triton_key import own_key

try:
    from triton import knobs
except ImportError:  # before 3.4: nothing is compiled ahead here (cannot_compile says why)
    knobs = None


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


def _cache_key(src: Any, backend: Any, options: Any, env_vars: dict) -> str:
    early_key.wait()  # computing it already
    try:
        from triton.runtime.cache import get_cache_key  # 3.5 and later
    except ImportError:  # 3.4: `compile` builds the same key itself
        return f"{own_key()()}-{src.hash()}-{backend.hash()}-{options.hash()}-{str(sorted(env_vars.items()))}"
    return get_cache_key(src, backend, options, env_vars)


def cache_entry(src: Any, backend: Any, options: Any, env_vars: dict, cache_dir: str) -> tuple[Any, str]:
    """The source's entry in Triton's kernel cache (its manager) and the folder whose flock guards it."""
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
    """In a compile worker: the job's kernel cache folder, whatever the session's knob held."""
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
