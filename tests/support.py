"""Shared helpers for the end-to-end tests (imported as `support`): where the built tools are, and a

Every tool is driven as a real process. The environment is scrubbed of the harness's variables
and of device visibility lists, so a developer's shell cannot change a result.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw fresh examples on a developer's machine, and one fixed, repeatable set under
# CI (CI=true), so that a submission's CI runs the examples its author saw pass; a new failing
# example is found locally, where it can be fixed, not in the run that decides whether work lands.
settings.register_profile("ci", derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
FLAGGEMS_DATA = SHARED / "data" / "flaggems"
BIN_DIR = Path(os.environ.get("WARMUP_BIN_DIR", ROOT / "target" / "debug"))

_SCRUB_PREFIXES = ("FLAGGEMS_", "PARALLEL_WARMUP_", "TRITON_", "WARMUP_FIXTURE_")
_SCRUB_SUFFIXES = ("_VISIBLE_DEVICES",)


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without the harness's variables, plus `extra`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_SCRUB_PREFIXES) and not k.endswith(_SCRUB_SUFFIXES)
    }
    env.pop("NO_COLOR", None)
    env.update(extra)
    return env


def tool(name: str) -> str:
    """Path of a built tool, e.g. tool("shard") -> .../warmup-shard."""
    path = BIN_DIR / f"warmup-{name}"
    if not path.exists():
        pytest.fail(f"{path} is missing: run `cargo build --workspace` first (make test does)")
    return str(path)


def run_tool(name: str, *args, env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess:
    """Runs warmup-<name> with a clean environment, capturing text output."""
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 120)
    return subprocess.run([tool(name), *map(str, args)], env=clean_env(**(env or {})), **kw)
