"""What the record holds for a tuner: its kernel's id, its key and its config, each as text that is
the same in every process importing the same code (docs/CONTRACT.md, "Record mode").

Standard library only when imported: a tuner's and a config's names are read through
triton_private (which imports Triton, there already when a tuner is asked about), a config's
attributes whatever Triton version made it.
"""

from __future__ import annotations

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


def config_text(record: dict) -> str:
    """A config's record as one text, to compare by: without `pre_hook`, which records written
    before it was left out hold as null."""
    return json.dumps({k: v for k, v in record.items() if k != "pre_hook"}, sort_keys=True)
