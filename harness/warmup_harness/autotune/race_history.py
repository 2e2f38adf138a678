"""A race's history (race.py): what a kernel's earlier raced keys say of its configs, from the record
folder's sidecar and from the keys this session raced, and the plan it makes for a new key.

Each raced key keeps the indexes of the tuner's configs whose short timing came `near` its best
(fastest first, the key's winner always among them) and its winner. For a new key of a kernel:

* order: the winner of the nearest earlier key first (keys compared number by number, on a log
  scale), then the configs by how many earlier keys they came near on (more first), then by their
  mean place there, then the rest in the tuner's order: the cut-off is tight from the first config;
* held (opt-in: WARMUP_HARNESS_RACE_HISTORY=N, HOLD_BY_DEFAULT): once the kernel has N raced keys
  on this device model, the configs near on none of its earlier keys are held back: raced only
  where the others leave doubt (race_plan.doubt), else neither compiled nor timed;
* other devices: a key the sidecar says was made on another device model (its `device`, or its
  `foreign` group's) orders the race and adds to the near set, but never counts towards N: a
  foreign record alone holds nothing back;
* audit: a key that history would prune races every config instead where the kernel has raced no
  key in full in this session yet, or AUDIT_EVERY - 1 keys were pruned since it last did
  (race_plan.py says what an audit finds).

N and NEAR per kernel: the variables (`WARMUP_HARNESS_RACE_HISTORY`, 0 turns history off, and
`WARMUP_HARNESS_RACE_NEAR`) where set, else the sidecar's `race_settings`, else DEFAULT_KEYS and
DEFAULT_NEAR (issue 31's measurement: a history of 3 keys, near at 20%, lost no pick). N is read
only where holding back is on (the variable set, or HOLD_BY_DEFAULT); the sidecar keeps it either
way. Only keys recorded for the kernel as it is now (its fingerprint) count. Standard library only.
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable

from .race_plan import AUDIT_EVERY, Plan
from .records import Provenance

DEFAULT_KEYS = 3  # raced keys on this device model before history holds configs back
# Holding configs back is opt-in (WARMUP_HARNESS_RACE_HISTORY=N) until a device has measured it on
# by default: the session that built it got no device (issue 43). Ordering by history is always on.
HOLD_BY_DEFAULT = False
DEFAULT_NEAR = 0.20  # a config within this of the best short timing is near


class History:
    """The record's raced keys as the session found them, and the session's own, per kernel."""

    def __init__(self, meta: dict | None, device: Callable[[], str | None], keys: int | None = None,
                 near: float | None = None, say: Callable[[str], None] = lambda line: None,
                 where: str = "the sidecar"):
        meta = meta if isinstance(meta, dict) else {}
        race, kernels, settings = (meta.get(f) for f in ("race", "kernels", "race_settings"))
        self._race = race if isinstance(race, dict) else {}
        self._kernels = kernels if isinstance(kernels, dict) else {}
        self.settings = settings if isinstance(settings, dict) else {}  # as the record holds them
        self._made = Provenance(meta)
        self._here: Any = device
        self._keys, self._near = keys, near  # the variables' overrides, None where unset
        self._say = say
        self._session: dict[str, dict[str, tuple[str | None, dict]]] = {}  # kernel -> key -> (fingerprint, entry)
        self._since_full: dict[str, int] = {}  # kernel -> keys pruned since it last raced every config here
        self._said: set[tuple[str, str]] = set()
        self._where = where  # the sidecar's path, for a line on a setting it holds that cannot be used

    def near(self, kernel: str) -> float:
        return self._near if self._near is not None else self._setting(kernel, "near", DEFAULT_NEAR)

    def min_keys(self, kernel: str) -> int:
        return self._keys if self._keys is not None else int(self._setting(kernel, "history", DEFAULT_KEYS))

    def _setting(self, kernel: str, name: str, default: float) -> float:
        chosen = self.settings.get(kernel)
        value = chosen.get(name, default) if isinstance(chosen, dict) else default
        whole = name == "history"
        if isinstance(value, bool) or not (isinstance(value, int) and value >= 1 if whole
                                           else isinstance(value, (int, float)) and 0 < value <= 10):
            if (kernel, name) not in self._said:
                self._said.add((kernel, name))
                self._say(f"race: {self._where}: race_settings give {kernel} {name} {json.dumps(value)}, not "
                          f"{'a whole number >= 1' if whole else 'a fraction above 0, at most 10'}: {default} is "
                          f"used; fix or remove it")
            return default
        return value

    def recorded_settings(self, kernel: str) -> dict:
        """The kernel's `race_settings` for the sidecar: the record's, else the defaults (a
        variable's override is a run's setting, not a measurement)."""
        return {"history": int(self._setting(kernel, "history", DEFAULT_KEYS)),
                "near": self._setting(kernel, "near", DEFAULT_NEAR)}

    def plan(self, kernel: str, key: str, fingerprint: Callable[[], str | None], count: int) -> Plan:
        """The plan for `kernel`'s new `key` among its `count` configs."""
        if self._keys == 0:
            return Plan(list(range(count)), near=self.near(kernel))
        here = fingerprint()
        local, foreign = self._earlier(kernel, here)
        entries = local + foreign
        order, predicted = rank(count, key, entries)
        near = self.near(kernel)
        if self._keys is None and not HOLD_BY_DEFAULT:
            return Plan(order, predicted=predicted, why="order", near=near, fingerprint=here)
        if here is None or len(local) < self.min_keys(kernel):
            return Plan(order, predicted=predicted, why="short", near=near, fingerprint=here)
        seen = {i for _, entry in entries for i in _near_of(entry)}
        cold = set(range(count)) - seen
        if not cold:
            return Plan(order, predicted=predicted, why="all near", near=near, fingerprint=here)
        since = self._since_full.get(kernel)
        if since is None or since >= AUDIT_EVERY - 1:
            return Plan(order, predicted=predicted, why="audit", cold=cold, near=near, fingerprint=here)
        return Plan(order, held=cold, predicted=predicted, why="pruned", cold=cold, near=near, fingerprint=here)

    def add(self, kernel: str, key: str, fingerprint: str | None, entry: dict) -> None:
        """A key this session raced: it counts from the next key on, as made on this device."""
        self._session.setdefault(kernel, {})[key] = (fingerprint, entry)
        if entry.get("history") == "pruned":
            self._since_full[kernel] = self._since_full.get(kernel, 0) + 1
        elif entry.get("skipped") == 0 and entry.get("history") is not None:
            self._since_full[kernel] = 0

    def _earlier(self, kernel: str, here: str | None) -> tuple[list, list]:
        """The kernel's earlier raced keys (key, entry) for its fingerprint `here`: made on this device
        model, and made on another."""
        if not isinstance(self._here, str):
            self._here = self._here() or ""  # asked once, at the first race: the device is in use then
        device = self._here
        local, foreign = [], []
        recorded = self._race.get(kernel)
        if isinstance(recorded, dict) and here is not None and self._kernels.get(kernel) == here:
            for key, entry in recorded.items():
                if isinstance(entry, dict) and key not in self._session.get(kernel, {}):
                    made = self._made.made(kernel, key)[0]
                    (local if device and made == device else foreign).append((key, entry))
        local += [(key, entry) for key, (fp, entry) in self._session.get(kernel, {}).items()
                  if fp is not None and fp == here]
        return local, foreign


def _near_of(entry: dict) -> list[int]:
    near = entry.get("near")
    return [i for i in near if isinstance(i, int) and not isinstance(i, bool)] if isinstance(near, list) else []


def rank(count: int, key: str, entries: list[tuple[str, dict]]) -> tuple[list[int], int | None]:
    """The `count` configs' indexes, best first by `entries`' word, and the nearest key's winner."""
    predicted = None
    by_distance = sorted(((distance(key, k), n) for n, (k, e) in enumerate(entries)
                          if _index(e.get("winner"), count) is not None), key=lambda d: (d[0], -d[1]))
    if by_distance and math.isfinite(by_distance[0][0]):
        predicted = entries[by_distance[0][1]][1]["winner"]
    places: dict[int, list[float]] = {}
    for _, entry in entries:
        near = [i for i in _near_of(entry) if 0 <= i < count]
        for place, i in enumerate(near):
            places.setdefault(i, []).append(place / len(near))
    order = sorted(range(count), key=lambda i: (i != predicted, -len(places.get(i, ())),
                                                sum(places.get(i, (0,))) / max(1, len(places.get(i, ()))), i))
    return order, predicted


def _index(value: Any, count: int) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < count else None


def distance(a: str, b: str) -> float:
    """How far two keys (JSON texts of the tuner's key) lie apart: the sum over their numbers of
    |log2(a / b)|, anything else equal or not (1000); inf where their shapes differ."""
    try:
        x, y = json.loads(a), json.loads(b)
    except ValueError:
        return 0.0 if a == b else math.inf
    x, y = (v if isinstance(v, list) else [v] for v in (x, y))
    if len(x) != len(y):
        return math.inf
    total = 0.0
    for u, v in zip(x, y):
        numbers = all(isinstance(w, (int, float)) and not isinstance(w, bool) for w in (u, v))
        if numbers and u > 0 and v > 0:
            total += abs(math.log2(u / v))
        elif u != v:
            total += 1000.0
    return total
