"""A kernel's fingerprint: one hash of what decides the config its tuner picks, and of nothing else
(docs/CONTRACT.md, "The sidecar"), so that a record's keys are tuned again when, and only when,
their winner may have changed.

What decides a pick: the code of the `triton.jit` function under the tuner and of the jit
functions it calls (Triton's own dependency walk: triton_private.source_hash), with the plain
values of the globals each reads (a `tl.constexpr BLOCK = 64` at module level); the set of the
tuner's configs; each `@triton.heuristics` layer between the tuner and the jit function (its
functions); the tuner's key, pruning (`prune_configs_by`: each function, with the plain globals
it reads, and `top_k`) and reset/restore settings. Code is compared as Python's tokenizer reads
it, without comments and blank lines; configs as a set (their order decides nothing): a comment,
a blank line or configs re-ordered change no fingerprint. A global that holds anything but a plain
value (a module, a function, an object) is not taken: a function is code (a jit one is walked),
and an object's value has no text that is the same in every process.

Standard library only when imported; Triton is imported when a fingerprint is taken.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import io
import json
import re
import sys
import textwrap
import tokenize
import types
from typing import Any

from .configs import config_record, config_text, kernel_id

_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
_LAYOUT = {tokenize.NEWLINE: "<newline>", tokenize.INDENT: "<indent>", tokenize.DEDENT: "<dedent>"}


def code_text(source: str) -> str:
    """Python source as its tokens, one a line, without comments and blank lines; indentation as
    <indent>/<dedent>. Of a snippet the tokenizer stops on (a lambda's lines cut from a call) the
    tokens read so far count, then the rest's lines, stripped, but blank and comment-only ones."""
    source = textwrap.dedent(source)
    out: list[str] = []
    row = 0  # the last line tokenized
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            row = token.end[0]
            if token.type not in _SKIP:
                out.append(_LAYOUT.get(token.type, token.string))
    except (tokenize.TokenError, SyntaxError):
        rest = (line.strip() for line in source.splitlines()[row:])
        out += [line for line in rest if line and not line.startswith("#")]
    return "\n".join(out)


def plain(value: Any, depth: int = 0) -> str | None:
    """A value's text where it is plain (None, bool, int, float, str, a `tl.constexpr` or
    `tl.dtype` of one, tuples, lists, sets and dicts of them), else None."""
    import triton.language as tl

    if isinstance(value, tl.constexpr):
        return plain(value.value, depth)
    if value is None or isinstance(value, (bool, int, float, str)):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, tl.dtype):
        return f"dtype:{value}"
    if depth > 4 or not isinstance(value, (tuple, list, set, frozenset, dict)):
        return None
    items = value.items() if isinstance(value, dict) else ((v, None) for v in value)
    texts = []
    for item, other in items:
        text = plain(item, depth + 1)
        more = plain(other, depth + 1) if isinstance(value, dict) else ""
        if text is None or more is None:
            return None
        texts.append(f"{text}={more}" if isinstance(value, dict) else text)
    if isinstance(value, (set, frozenset, dict)):
        texts.sort()
    return f"{type(value).__name__}[{', '.join(texts)}]"


def _names(code: types.CodeType) -> set[str]:
    """The global and attribute names a code object and those nested in it (lambdas,
    comprehensions) read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def reads(func: Any) -> dict[str, str]:
    """The plain values (`plain`) of the globals and closure variables a Python function reads."""
    code = getattr(func, "__code__", None)
    if not isinstance(code, types.CodeType):
        return {}
    found: dict[str, str] = {}
    scope = getattr(func, "__globals__", None) or {}
    for name in sorted(_names(code)):
        text = plain(scope[name]) if name in scope else None
        if text is not None:
            found[name] = text
    for name, cell in zip(code.co_freevars, getattr(func, "__closure__", None) or ()):
        try:
            text = plain(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
        if text is not None:
            found[f"nonlocal {name}"] = text
    return found


def function_text(value: Any) -> Any:
    """A setting as text that is the same in every process: a function as its code (`code_text`)
    and the plain values it reads; a `functools.partial` as its function's and its arguments';
    anything else not callable as itself; a callable without source as its name."""
    if isinstance(value, functools.partial):
        return {"partial": function_text(value.func), "args": plain(value.args), "keywords": plain(value.keywords)}
    if not callable(value):
        return value
    try:
        code = code_text(inspect.getsource(value))
    except (OSError, TypeError):
        return f"{getattr(value, '__module__', '?')}:{getattr(value, '__qualname__', repr(type(value)))}"
    return {"code": code, "reads": reads(value)}


def _jit_text(fn: Any) -> str:
    """What stands for a jit function's own source in triton_private.source_hash."""
    return json.dumps([code_text(fn.src), reads(fn.fn)])


def config_order(configs: list) -> dict[int, int]:
    """id(config) -> its index among `configs` sorted by their record (numbers in it compared as
    numbers): the same for the same set of configs in any order. Equal configs share the first's."""
    texts = {id(c): config_text(config_record(c)) for c in configs}
    ordered = sorted(dict.fromkeys(texts.values()),
                     key=lambda t: ([int(p) if i % 2 else p for i, p in enumerate(re.split(r"(\d+)", t))], t))
    rank = {text: i for i, text in enumerate(ordered)}
    return {ident: rank[text] for ident, text in texts.items()}


def fingerprint(tuner: Any) -> str | None:
    """What decides the tuner's config (the module's docstring), as sha256, 32 hex digits. None
    where there is none to take (no JITFunction under the tuner, a Triton without the names
    used): such a kernel is trusted."""
    try:
        from ..triton_private import heuristics_values, jit_function, source_hash, tuner_settings

        parts = {
            "kernel": source_hash(jit_function(tuner), _jit_text),
            "configs": sorted({config_text(config_record(config)) for config in tuner.configs}),
            "heuristics": [{name: function_text(f) for name, f in values.items()}
                           for values in heuristics_values(tuner)],
            "settings": {name: function_text(value) for name, value in tuner_settings(tuner).items()},
        }
        text = json.dumps(parts, sort_keys=True, default=str)
    except Exception:
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def running_fingerprint(kernel: str) -> str | None:
    """The fingerprint of the kernel a record names (`module:qualified name`) as this process has
    it loaded, found without a launch: the module's attribute of that name, walked down `.fn` to
    its autotuner. None where it cannot be found (its module not imported, a kernel made inside a
    function) or taken."""
    from triton.runtime.autotuner import Autotuner

    module, _, qualname = kernel.partition(":")
    obj = sys.modules.get(module)
    for part in qualname.split(".") if obj is not None and "<" not in qualname else []:
        obj = getattr(obj, part, None)
    for _ in range(16):
        if obj is None or isinstance(obj, Autotuner):
            break
        obj = getattr(obj, "fn", None)
    if not isinstance(obj, Autotuner) or kernel_id(obj) != kernel:
        return None
    return fingerprint(obj)
