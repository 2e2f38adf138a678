"""A kernel's fingerprint (harness/warmup_harness/autotune/fingerprints.py) on the real Triton
autotuner, in this process, without a GPU (a fingerprint compiles and launches nothing): each edit
that may change the winner changes it, each one that cannot does not.

Each variant is the module BASE with one edit, in a file and module of its own, whose kernel is a
`triton.autotune` over a `triton.heuristics` over a `triton.jit` function, pruned by a function.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys

import pytest

from support import ROOT

sys.path.insert(0, str(ROOT / "harness"))
from warmup_harness.autotune import fingerprints  # noqa: E402

BASE = '''\
import triton
import triton.language as tl

SCALE = tl.constexpr(2)
LIMIT = 128
UNREAD = 1
CONFIGS = [triton.Config({"BLOCK": 64}, num_warps=4), triton.Config({"BLOCK": 128}, num_warps=8)]


def prune(configs, nargs, **kw):
    return [c for c in configs if c.kwargs["BLOCK"] <= LIMIT]


@triton.jit
def helper(x):
    return x * SCALE


@triton.autotune(configs=CONFIGS, key=["n"], prune_configs_by={"early_config_prune": prune})
@triton.heuristics({"EVEN": lambda args: args["n"] % 2 == 0})
@triton.jit
def kernel(x, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(x + pid, helper(pid))
'''

# What may change the winner: each must change the fingerprint.
CHANGES = {
    "a global constexpr a callee reads": ("SCALE = tl.constexpr(2)", "SCALE = tl.constexpr(3)"),
    "the kernel's code": ("tl.store(x + pid, helper(pid))", "tl.store(x + pid, helper(pid + 1))"),
    "a heuristics function": ('args["n"] % 2 == 0', 'args["n"] % 4 == 0'),
    "the pruner's code": ('c.kwargs["BLOCK"] <= LIMIT', 'c.kwargs["BLOCK"] < LIMIT'),
    "a global the pruner reads": ("LIMIT = 128", "LIMIT = 256"),
    "a config": ('"BLOCK": 128}, num_warps=8', '"BLOCK": 128}, num_warps=4'),
    "a config added": ("num_warps=8)]", "num_warps=8), triton.Config({\"BLOCK\": 256}, num_warps=8)]"),
    "the key": ('key=["n"]', 'key=["n", "x"]'),
}

# What cannot: none may change it.
SAME = {
    "a comment in the kernel": ("    pid = tl.program_id(0)\n",
                                "    # the program's id\n    pid = tl.program_id(0)  # why\n"),
    "a blank line in the kernel": ("    pid = tl.program_id(0)\n", "    pid = tl.program_id(0)\n\n"),
    "a comment in the pruner": ("    return [c for", "    # keep the small ones\n    return [c for"),
    "a comment in a callee": ("    return x * SCALE\n", "    # scaled\n    return x * SCALE\n"),
    "the configs re-ordered": (
        'CONFIGS = [triton.Config({"BLOCK": 64}, num_warps=4), triton.Config({"BLOCK": 128}, num_warps=8)]',
        'CONFIGS = [triton.Config({"BLOCK": 128}, num_warps=8), triton.Config({"BLOCK": 64}, num_warps=4)]'),
    "a global nothing reads": ("UNREAD = 1", "UNREAD = 2"),
    "lines added above every kernel": ("import triton\n", "import triton\n\n# moved down\n\n"),
}

_serial = itertools.count()


def fingerprint_of(folder, source: str) -> str:
    """The fingerprint of `kernel` in a module of `source`, imported from a file of its own."""
    name = f"fp_variant_{next(_serial)}"
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    found = fingerprints.fingerprint(module.kernel)
    assert isinstance(found, str) and len(found) == 32, f"no fingerprint taken of {path}"
    return found


def edited(old: str, new: str) -> str:
    assert BASE.count(old) == 1, old
    return BASE.replace(old, new)


@pytest.mark.parametrize("what", sorted(CHANGES))
def test_an_edit_that_may_change_the_winner_changes_the_fingerprint(tmp_path, what):
    base = fingerprint_of(tmp_path, BASE)
    assert fingerprint_of(tmp_path, BASE) == base, "the same source in another module"
    assert fingerprint_of(tmp_path, edited(*CHANGES[what])) != base, what


@pytest.mark.parametrize("what", sorted(SAME))
def test_an_edit_that_cannot_change_the_winner_keeps_the_fingerprint(tmp_path, what):
    assert fingerprint_of(tmp_path, edited(*SAME[what])) == fingerprint_of(tmp_path, BASE), what


def test_a_pruners_widened_global_in_a_closure_or_a_lambda_changes_the_fingerprint(tmp_path):
    """The values a pruner reads count wherever it reads them: in a lambda inside it, and in a
    closure (a pruner made by a function)."""
    lam = edited("    return [c for c in configs if c.kwargs[\"BLOCK\"] <= LIMIT]",
                 "    return sorted(configs, key=lambda c: abs(c.kwargs[\"BLOCK\"] - LIMIT))")
    assert fingerprint_of(tmp_path, lam) != fingerprint_of(tmp_path, lam.replace("LIMIT = 128", "LIMIT = 64"))
    made = edited("def prune(configs, nargs, **kw):\n    return [c for c in configs if c.kwargs[\"BLOCK\"] <= LIMIT]",
                  "def make(limit):\n    def prune(configs, nargs, **kw):\n"
                  "        return [c for c in configs if c.kwargs[\"BLOCK\"] <= limit]\n    return prune\n\n\n"
                  "prune = make(128)")
    assert fingerprint_of(tmp_path, made) != fingerprint_of(tmp_path, made.replace("make(128)", "make(64)"))


def test_the_order_of_configs_gives_each_config_one_index_whatever_the_order():
    """Racing's history names configs by index (the sidecar's `near`): re-ordered configs keep the
    fingerprint, so they must keep their indexes too."""
    import triton

    blocks = (16, 128, 64, 256)
    configs = [triton.Config({"BLOCK": b}, num_warps=4) for b in blocks]
    order = fingerprints.config_order(configs)
    assert [order[id(c)] for c in configs] == [0, 2, 1, 3], "numbers are ordered as numbers"
    flipped = list(reversed(configs))
    again = fingerprints.config_order(flipped)
    assert {c.kwargs["BLOCK"]: again[id(c)] for c in flipped} == {c.kwargs["BLOCK"]: order[id(c)] for c in configs}


def test_code_text_drops_comments_and_blank_lines_and_keeps_a_cut_snippet():
    text = fingerprints.code_text
    assert text("def f(x):\n    # c\n\n    return x  # t\n") == text("def f(x):\n    return x\n")
    assert text("def f(x):\n    return x\n") != text("def f(x):\n    return -x\n")
    cut = '    "A": lambda args: args["n"] * 2,  # a comment\n'  # a lambda's line cut from a call
    assert text(cut) == text('    "A": lambda args: args["n"] * 2,\n') != text('    "A": lambda args: args["n"] * 4,\n')


def test_a_tuner_without_a_jit_function_under_it_has_no_fingerprint():
    from test_harness_hooks import make_tuner

    assert fingerprints.fingerprint(make_tuner()) is None, "nothing to compare: such a kernel is trusted"
