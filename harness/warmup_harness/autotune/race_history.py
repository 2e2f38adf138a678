"""A race's history (`WARMUP_HARNESS_RACE_HISTORY` N): the configs an earlier record on this device
says a kernel's keys never came near (race.py). Standard library only."""

from __future__ import annotations

from typing import Callable


class History:
    """What an earlier record on this device says of a kernel's configs (`WARMUP_HARNESS_RACE_HISTORY`
    N): with at least N raced keys in the sidecar's `race`, recorded for the kernel as it is now (its
    fingerprint) on this device model, a config that was `near` the best on none of them is cold.
    N and NEAR are to be set from measurement; a kernel short of N keys has no cold config."""

    def __init__(self, meta: dict | None, min_keys: int, device: Callable[[], str | None]):
        meta = meta if isinstance(meta, dict) else {}
        race = meta.get("race")
        kernels = meta.get("kernels")
        self._race = race if isinstance(race, dict) else {}
        self._kernels = kernels if isinstance(kernels, dict) else {}
        self._device = meta.get("device")
        self._here = device
        self.min_keys = min_keys
        self._cold: dict[str, set[int]] = {}

    def cold(self, kernel: str, fingerprint: Callable[[], str | None], count: int) -> set[int]:
        """Indexes among the kernel's `count` configs that its history rules out."""
        if kernel not in self._cold:
            self._cold[kernel] = self._rule_out(kernel, fingerprint, count)
        return self._cold[kernel]

    def _rule_out(self, kernel: str, fingerprint: Callable[[], str | None], count: int) -> set[int]:
        keys = self._race.get(kernel)
        if not isinstance(keys, dict) or len(keys) < self.min_keys:
            return set()
        here = fingerprint()
        if here is None or self._kernels.get(kernel) != here or not self._device or self._device != self._here():
            return set()
        nears = [v["near"] for v in keys.values() if isinstance(v, dict) and isinstance(v.get("near"), list)]
        if len(nears) < self.min_keys:
            return set()
        seen = {i for near in nears for i in near if isinstance(i, int)}
        return set(range(count)) - seen
