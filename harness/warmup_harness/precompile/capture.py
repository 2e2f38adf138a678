"""What a key's configs would compile: each config goes through the JIT's warm-up path while
Triton's cache hook takes the specialization it would compile (triton_private), and becomes a
`CompileJob` a worker process can take. Also a config's kernel loaded before it is timed.

Standard library only when imported; Triton is imported when a key is captured.
"""

from __future__ import annotations

import contextlib
import re
import sys
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CompileJob:
    """One (kernel, specialization, config) to compile; picklable, for a worker process."""

    module: str
    qualname: str
    source_file: str | None
    fn_cache_key: str
    specialization: str  # JSON, as the JIT serializes it for preload()
    target: Any  # triton.backends.compiler.GPUTarget
    env_vars: dict  # the cache-invalidating environment the caller's launches are keyed with
    cache_dir: str
    sys_path: tuple[str, ...]
    label: str  # the config, for messages


@dataclass
class Capture:
    jobs: list[tuple[Any, CompileJob]] = field(default_factory=list)  # (JITFunction, job)
    errors: list[str] = field(default_factory=list)
    loaded: int = 0  # configs whose kernel this process holds already
    owners: list[int] = field(default_factory=list)  # for each job, the index of its config


def config_label(config: Any) -> str:
    return re.sub(r",?\s*pre_hook: [^,]*", "", str(config))


def launch_kwargs(config: Any, launch: dict) -> dict:
    """A config's launch as the tuner's timing makes it, but warm-up only: compile, never run."""
    current = {**launch, **config.all_kwargs(), "warmup": True}
    current.setdefault("grid", None)
    return current


def capture(tuner: Any, configs: list, launch: dict) -> Capture:
    """Runs each config through the JIT's warm-up path with a cache hook that takes the
    specialization and skips the compile. `launch` holds every argument by name."""
    from .. import triton_private as tp

    common = dict(tp.compile_context(), sys_path=tuple(sys.path))
    out = Capture()
    taken: list[tuple[Any, str]] = []
    with tp.specializations_taken(lambda fn, spec: taken.append((fn, spec))):
        for index, config in enumerate(configs):
            taken.clear()
            current = launch_kwargs(config, launch)
            try:
                if config.pre_hook is not None:
                    config.pre_hook(current)
                tp.run_jit(tuner, **current)
            except Exception as exc:  # the tuner's sweep meets it again, and handles it its way
                out.errors.append(f"{config_label(config)}: {type(exc).__name__}: {exc}")
                continue
            if not taken:
                out.loaded += 1
            label = config_label(config)
            out.jobs.extend((fn, CompileJob(**tp.identity(fn), specialization=spec, label=label, **common))
                            for fn, spec in taken)
            out.owners.extend(index for _ in taken)
    return out


def load(tuner: Any, args: tuple, config: Any, meta: dict) -> None:
    """Compiles, or loads from the kernel cache, a config's kernel without launching it, so that the
    timing lock is held for timing only. An error is left for the timed launch to meet."""
    from ..triton_private import run_jit

    current = launch_kwargs(config, meta)
    with contextlib.suppress(Exception):
        if config.pre_hook is not None:
            config.pre_hook({**(tuner.nargs or {}), **current})
        run_jit(tuner, *args, **current)
