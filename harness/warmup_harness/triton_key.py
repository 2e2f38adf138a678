"""Where Triton keeps its key of itself, and Triton's own function behind early_key.py's stand-in:
a leaf that both early_key.py (which computes the key early) and triton_compile.py (whose cache
keys start from it) import, so that neither imports the other back. Triton's private names, as
triton_private.py lists them; importing this module imports nothing of Triton's.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

# On early_key's waiting stand-in: Triton's own function it stands in for (own_key reads it).
WAITS_FOR = "_warmup_harness_waits_for"


def key_home() -> tuple[Any, str]:
    """Where Triton's compile finds its key of itself: the module and the name it reads at each
    call (`triton.runtime.cache.triton_key`, which get_cache_key calls, on 3.5 and later;
    `triton.compiler.compiler.triton_key`, which `compile` calls, on 3.4)."""
    for name in ("triton.runtime.cache", "triton.compiler.compiler"):  # 3.5 and later; 3.4
        module = importlib.import_module(name)
        if hasattr(module, "triton_key"):
            return module, "triton_key"
    raise ImportError("Triton has no triton_key where 3.4 to 3.9 keep it")


def own_key() -> Callable[[], str]:
    """Triton's key of itself, `triton_key` (memoized): where every cache key of a compile starts;
    Triton's own function, also while early_key's thread computes it."""
    key = getattr(*key_home())
    return getattr(key, WAITS_FOR, key)
