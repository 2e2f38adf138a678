"""phase_clock: a pytest plugin for the device benchmarks (bench_e2e.sh --phases) that writes, as
the process exits, where its wall time went, to the JSON file PHASE_CLOCK_FILE names:

- `at`: wall-clock times (time.time()) of the process's start (from /proc), this plugin's import,
  and the start and end of pytest's phases: the initial conftests (FlagGems' import), configure
  (the harness's session start), collection, the test loop, session finish, unconfigure, and exit;
- `spent`: calls and seconds, in this process, of Triton's compile, of its C launcher and
  utility builds (compile_module_from_src, a C compiler run on a cold cache) and of
  triton.testing.do_bench (the autotuners' full timing). Nested calls count once.

Loaded with `-p phase_clock` and this folder on PYTHONPATH. It imports Triton at its own import, so
the interpreter's imports before pytest's phases include Triton's. A forked child (the compile
pool's workers) writes nothing.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

_PID = os.getpid()
_at: dict[str, float] = {"plugin_import": time.time()}
_spent: dict[str, list[float]] = {}


def _process_start() -> float | None:
    """The process's start, wall clock: now less its age, the age from its starttime (clock ticks
    after boot, /proc) against the boot-time clock."""
    try:
        with open(f"/proc/{_PID}/stat", encoding="ascii") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None
    age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    return time.time() - age


def _counted(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    depth = [0]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        depth[0] += 1
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                calls, seconds = _spent.setdefault(name, [0, 0.0])
                _spent[name] = [calls + 1, seconds + time.perf_counter() - t0]

    return wrapper


def _wrap(module: Any, attr: str, name: str) -> None:
    fn = getattr(module, attr, None)
    if fn is not None:
        setattr(module, attr, _counted(name, fn))


def _instrument_triton() -> None:
    try:
        import triton.compiler
        import triton.compiler.compiler
        import triton.runtime.build
        import triton.testing
    except ImportError:
        return
    _wrap(triton.compiler.compiler, "compile", "triton_compile")
    triton.compiler.compile = triton.compiler.compiler.compile
    _wrap(triton.runtime.build, "compile_module_from_src", "c_build")
    try:
        import triton.backends.nvidia.driver as nvidia
    except ImportError:
        pass
    else:
        nvidia.compile_module_from_src = triton.runtime.build.compile_module_from_src
    _wrap(triton.testing, "do_bench", "do_bench")


def _write() -> None:
    path = os.environ.get("PHASE_CLOCK_FILE")
    if not path or os.getpid() != _PID:
        return
    _at["exit"] = time.time()
    start = _process_start()
    if start is not None:
        _at["process_start"] = start
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"at": _at, "spent": _spent}, f, indent=1)


_instrument_triton()
atexit.register(_write)


def _phase(name: str) -> Iterator[None]:
    _at[f"{name}_start"] = time.time()
    yield
    _at[f"{name}_end"] = time.time()


@pytest.hookimpl(hookwrapper=True)
def pytest_load_initial_conftests() -> Iterator[None]:
    yield from _phase("conftests")


@pytest.hookimpl(tryfirst=True)
def pytest_configure() -> None:  # a historic hook: no wrapper, so first and last
    _at["configure_start"] = time.time()


@pytest.hookimpl(trylast=True)
def pytest_sessionstart() -> None:  # every plugin's configure has run
    _at["configure_end"] = time.time()


@pytest.hookimpl(hookwrapper=True)
def pytest_collection() -> Iterator[None]:
    yield from _phase("collection")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop() -> Iterator[None]:
    yield from _phase("tests")


@pytest.hookimpl(hookwrapper=True)
def pytest_sessionfinish() -> Iterator[None]:
    yield from _phase("sessionfinish")


@pytest.hookimpl(hookwrapper=True)
def pytest_unconfigure() -> Iterator[None]:
    yield from _phase("unconfigure")
