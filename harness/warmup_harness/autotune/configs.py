"""What the record holds for a tuner: its kernel's id, its key and its config, each as text that is
the same in every process importing the same code (docs/CONTRACT.md, "Record mode").

Standard library only when imported: a tuner's and a config's names are read through
triton_private (which imports Triton, there already when a tuner is asked about), a config's
attributes whatever Triton version made it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def kernel_id(tuner: Any) -> str:
    """`module:qualified name` of the Python function under the tuner: unique when two modules
    define kernels of one name (FlagGems has two `mm_kernel_general`), the same in every process
    that imports the same code."""
    from ..triton_private import kernel_function

    fn = kernel_function(tuner)
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', getattr(fn, '__name__', '?'))}"


def key_text(key: Any) -> str:
    """The tuner's own key as a JSON text: a tuple `(1024, 512, 'torch.float16')` becomes
    `[1024, 512, "torch.float16"]`. Values JSON cannot hold are written with `str`."""
    return json.dumps(key, default=str)


def config_record(config: Any) -> dict:
    """Everything that rebuilds a `triton.Config` of this Triton version: its kwargs and every other
    attribute it has (num_warps, num_stages, num_ctas, maxnreg, ir_override, ... as the version
    defines them), except the pre-hook, which replay takes from the tuner's own config, and other
    functions: their text would differ between processes. The pre-hook is left out even when it is
    None, as in a config FlagGems' store rebuilt: the kernel's own config has a function there."""
    from ..triton_private import config_attributes

    plain = {name: value for name, value in config_attributes(config).items()
             if name != "pre_hook" and not callable(value)}
    return json.loads(json.dumps(plain, default=repr))


def fingerprint(tuner: Any) -> str | None:
    """What decides the tuner's config, as one hash: sha256, 32 hex digits, of the source of the
    `triton.jit` function under the tuner and of the jit functions it calls (transitively, as
    Triton's dependency walk finds them, without line numbers: triton_private.source_hash), of the
    tuner's configs, in order, each as `config_text`, and of its key, pruning (each function's
    source, top_k) and reset/restore settings. None where there is none to take (no JITFunction
    under the tuner, a Triton without the names used): such a kernel is trusted."""
    try:
        from ..triton_private import jit_function, source_hash, tuner_settings

        source = source_hash(jit_function(tuner))
        texts = [config_text(config_record(config)) for config in tuner.configs]
        settings = json.dumps({name: _callable_text(value) for name, value in tuner_settings(tuner).items()},
                              sort_keys=True, default=str)
    except Exception:
        return None
    return hashlib.sha256("\n".join([source, *texts, settings]).encode("utf-8")).hexdigest()[:32]


def running_fingerprint(kernel: str) -> str | None:
    """The fingerprint of the kernel a record names (`module:qualified name`) as this process has
    it loaded, found without a launch: the module's attribute of that name, walked down `.fn` to
    its autotuner. None where it cannot be found (its module not imported, a kernel made inside a
    function) or taken."""
    import sys

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


def _callable_text(value: Any) -> Any:
    """A setting as text that is the same in every process: a function as its source (a lambda's
    lines), without where it sits; anything else as itself."""
    if not callable(value):
        return value
    import inspect
    import textwrap

    try:
        return textwrap.dedent(inspect.getsource(value))
    except (OSError, TypeError):
        return f"{getattr(value, '__module__', '?')}:{getattr(value, '__qualname__', repr(type(value)))}"


def config_text(record: dict) -> str:
    """A config's record as one text, to compare by: without `pre_hook`, which records written
    before it was left out hold as null."""
    return json.dumps({k: v for k, v in record.items() if k != "pre_hook"}, sort_keys=True)
