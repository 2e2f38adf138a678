"""The device this process runs on, as the sidecar names it and a replay compares it."""

from __future__ import annotations

import sys


def device_name() -> str | None:
    """The device this process runs on, from modules the benchmark already imported."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            return str(torch.cuda.get_device_name(torch.cuda.current_device()))
    except Exception:
        pass
    try:
        from ..triton_private import current_target

        target = current_target()
        return f"{target.backend} {target.arch}"
    except Exception:
        return None
