"""How one key is raced, as its kernel's history plans it (race_history.py), and the two checks on
that history: doubt and the audit (race.py runs them). Standard library only.

Doubt. Where history holds configs back, the others are raced first; the held ones are raced after
all (compiled then) where the first ones leave doubt that the key is like its history: no first
config has a finite short timing, or the config history predicts to win (the nearest key's winner)
came more than NEAR behind the best of them. Simple on purpose: a held config may win only on a key
whose configs rank otherwise than on the keys before, and the predicted winner falling out of the
near band is what such a key shows first. A doubt costs time, never a pick.

Audit. An audited key races every config (AUDIT_EVERY, race_history.py says which keys); the held
ones that come near on it are the audit's `missed`, which widen the kernel's near set from the next
key on (the key's own near list is part of the history), and a held config that wins the key is
said in one line: the key keeps it, its true winner.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

AUDIT_EVERY = 8  # one key in this many of a kernel that history prunes races every config, as an audit


@dataclass
class Plan:
    """A key's plan, in indexes among the tuner's configs."""

    order: list[int]  # every config, best first
    held: set[int] = field(default_factory=set)  # raced only on doubt
    predicted: int | None = None  # the nearest earlier key's winner
    why: str | None = None  # the sidecar's `history`: short, all near, pruned, audit (doubt once raced); None: off
    cold: set[int] = field(default_factory=set)  # near on no earlier key: held, or audited
    near: float = 0.20
    fingerprint: str | None = None


def doubt(short: dict[int, float], predicted: int | None, near: float) -> bool:
    """Whether the first configs' short timings (index -> ms) leave doubt: none finite, or the
    predicted winner's more than `near` behind the best."""
    finite = [ms for ms in short.values() if math.isfinite(ms)]
    if not finite:
        return True
    if predicted is None or predicted not in short:
        return False
    return not short[predicted] <= min(finite) * (1 + near)


def missed(plan: Plan, near: list[int]) -> list[int]:
    """An audit's finding: the configs history would have held back that came near on the key."""
    return [i for i in near if i in plan.cold] if plan.why == "audit" else []
