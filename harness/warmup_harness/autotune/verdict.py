"""Which of a key's configs a race re-times in full, from their short timings (race.py).

The best short timing is taken NOISE_SAMPLES times: its spread (range over median) is the key's
noise on this device, and its median times (1 + NOISE_MARGIN x spread) the limit. A config is
dropped only on its own timings, never on one sample that may be a slow one (a cold clock, slow
first launches, a kernel that alternates fast and slow): a config past the limit but within
OUTRUN of the best's median is timed a second time, and its own spread widens the margin it gets.
A timing that is not a finite number is unknown: its config is re-timed in full, never dropped.
Pure functions of timings in ms.
"""

from __future__ import annotations

import math
import statistics

from .brief import OUTRUN

NOISE_SAMPLES = 5  # short timings of the best config, whose spread is the key's noise
NOISE_MARGIN = 2.0  # a config is dropped past median * (1 + NOISE_MARGIN * spread)


def spread(samples: list[float]) -> float:
    """The range of `samples` over their median (finite and positive samples only)."""
    middle = statistics.median(samples)
    return (max(samples) - min(samples)) / middle if middle > 0 else math.inf


def noise(samples: list[float]) -> tuple[float, float] | None:
    """(median, spread) of the best config's short timings; None where fewer than two are finite and
    positive, or one is not: a noise that cannot be measured drops nothing."""
    if len(samples) < 2 or not all(math.isfinite(s) and s > 0 for s in samples):
        return None
    return statistics.median(samples), spread(samples)


def limit(middle: float, key_spread: float) -> float:
    """The short timing past which a config with one consistent sample is dropped."""
    return middle * (1 + NOISE_MARGIN * key_spread)


def second_look(first: float, middle: float, key_spread: float) -> bool:
    """Whether a config's first short timing is past the limit but not out-run: it is timed again."""
    return math.isfinite(first) and limit(middle, key_spread) < first <= OUTRUN * middle


def kept(samples: list[float], middle: float, key_spread: float) -> bool:
    """Whether a config is re-timed in full: a timing of it is unknown, or its best is within the
    limit, widened by its own spread where it has one larger than the key's."""
    if not all(math.isfinite(s) and s > 0 for s in samples):
        return True
    own = spread(samples) if len(samples) > 1 else 0.0
    return min(samples) <= limit(middle, max(key_spread, own))


def best(short: dict[int, float]) -> int | None:
    """The id with the fastest finite short timing; None where no timing is finite."""
    finite = {i: s for i, s in short.items() if math.isfinite(s)}
    return min(finite, key=finite.get) if finite else None
