"""The harness's house rules, read off its source: no circle of imports, modules of one concern (at
most 350 lines), and every variable name of the protocol in env.py. Standard library only: it
imports none of the harness."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "harness" / "warmup_harness"
MAX_LINES = 350
VARIABLE = re.compile(r"(WARMUP|FLAGGEMS)_[A-Z0-9_]+")


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, for its __init__)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ["warmup_harness", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules `name` imports, at its top or inside a function (a lazy import closes a
    circle all the same)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:
                target = f"{origin}.{alias.name}"
                out.add(target if target in known else origin)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return {m for m in out if m in known and m != name}


def test_no_module_of_the_harness_imports_one_that_imports_it_back():
    found = modules()
    graph = {name: imports(name, path, set(found)) for name, path in found.items()}
    circles = []
    for start in graph:  # a path back to `start` through what it imports
        stack, seen = [(start, (start,))], set()
        while stack:
            node, trail = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    circles.append(" -> ".join((*trail, start)))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, (*trail, nxt)))
    assert circles == [], circles


def test_each_module_of_the_harness_is_at_most_350_lines():
    long = {str(path.relative_to(PACKAGE)): n for path in modules().values()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}, f"split these by concern: {long}"


def test_every_variable_name_of_the_protocol_is_written_in_env_py_alone():
    """Other modules take the names from env.py; a name in text (a docstring, a message) is no
    constant and is not counted."""
    elsewhere = {}
    for name, path in modules().items():
        if name == "warmup_harness.env":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and VARIABLE.fullmatch(node.value):
                elsewhere.setdefault(str(path.relative_to(PACKAGE)), []).append(node.value)
    assert elsewhere == {}, f"name these in env.py and import them: {elsewhere}"
