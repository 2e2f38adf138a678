"""A kernel's fingerprint as Triton's own names give it (triton_private.py lists what is used and
the versions it was checked against; autotune/fingerprints.py builds the fingerprint). Imports Triton.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from triton.runtime.jit import DependenciesFinder, JITFunction

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
