"""A tuner's store as the tuner sees it while the hooks are in (`TunerCache`), what the hooks keep
per tuner (`TunerState`), and the policy a lookup, a miss and a decision go through (`Policy`,
which record and replay subclass in policies.py). tuners.py says why the store is the seam.
"""

from __future__ import annotations

import time
import weakref
from typing import Any

from .configs import config_record, config_text, kernel_id, key_text
from .fingerprints import fingerprint

_UNASKED = object()


class TunerState:
    """What the hooks keep per tuner: its id, keys swept but not yet decided, its config index, and
    the keys already settled, so that a launch after the first costs a dict lookup, as it does
    without the hooks (a replay's launches are what the benchmark measures)."""

    def __init__(self, tuner: Any):
        self.kernel = kernel_id(tuner)
        self.miss_started: dict[str, float] = {}
        self.pending: str | None = None  # a key whose sweep is about to prune and time
        self.pinned: dict[Any, Any] = {}  # replay: tuner key -> the tuner's config it is pinned to
        self.recorded: set[Any] = set()  # record: tuner keys whose decision is in the record
        self.unpinned: set[Any] = set()  # replay: tuner keys the record cannot answer
        self._index_of: tuple[int, int] | None = None
        self._index: dict[str, Any] = {}
        self._fingerprint: Any = _UNASKED

    def fingerprint(self, tuner: Any) -> str | None:
        """The kernel's fingerprint (fingerprints.py), taken at its first key and kept."""
        if self._fingerprint is _UNASKED:
            self._fingerprint = fingerprint(tuner)
        return self._fingerprint

    def config_index(self, configs: list) -> dict[str, Any]:
        """The tuner's configs by their record text (first of equal ones); rebuilt when the tuner
        swaps its list (FlagGems can)."""
        stamp = (id(configs), len(configs))
        if stamp != self._index_of:
            self._index = {}
            for config in configs:
                self._index.setdefault(config_text(config_record(config)), config)
            self._index_of = stamp
        return self._index


def pruned_away(tuner: Any, state: TunerState, config: Any) -> bool:
    """Whether the tuner's own pruning (`prune_configs_by`), for the launch under way, leaves out
    `config`, which a record would pin: a pin is only ever one of the configs the tuner itself
    would have timed. A tuner that does not prune, or no launch under way, leaves nothing out;
    pruning that fails leaves everything out (the tuner's own sweep then says why)."""
    from ..triton_private import launch_kwargs, prunes

    if not prunes(tuner):
        return False
    kwargs = launch_kwargs(tuner)
    if kwargs is None:
        return False
    pending, state.pending = state.pending, None  # no precompile: nothing is timed for this
    try:
        kept = tuner.prune_configs(kwargs)
    except Exception:
        return True
    finally:
        state.pending = pending
    want = config_text(config_record(config))
    return not any(c is config or config_text(config_record(c)) == want for c in kept)


class Policy:
    """What the store view does at a lookup, a miss and a decision; record and replay subclass it.

    It also notices two live tuners under one kernel id (a factory that wraps one function twice):
    their records would share one entry, so the session names them."""

    def __init__(self):
        self._tuners: dict[str, weakref.ref] = {}
        self.shared_ids: set[str] = set()

    def seen(self, kernel: str, tuner: Any) -> None:
        other = self._tuners.get(kernel)
        if other is not None and other() is not None and other() is not tuner:
            self.shared_ids.add(kernel)
        else:
            self._tuners[kernel] = weakref.ref(tuner)

    def contains(self, tuner: Any, state: TunerState, key: Any, raw: Any) -> bool:
        return key in raw

    def getitem(self, tuner: Any, state: TunerState, key: Any, raw: Any) -> Any:
        return raw[key]

    def setitem(self, tuner: Any, state: TunerState, key: Any, config: Any, raw: Any) -> None:
        raw[key] = config

    def opening(self) -> list[str]:
        """What the session says of this policy at its start (by-key mode, resume); none here."""
        return []

    def closing(self) -> list[str]:
        """What the session says of this policy at its end, after its own count; none here."""
        return []


def remember(into: dict | set, key: Any, value: Any = None) -> None:
    """Remembers a settled key; an unhashable one is never settled and takes the slow path."""
    try:
        if isinstance(into, dict):
            into[key] = value
        else:
            into.add(key)
    except TypeError:
        pass


class TunerCache:
    """A tuner's store as the tuner sees it while the hooks are in: lookups and decisions go
    through the policy, everything else straight to the store."""

    __slots__ = ("raw", "_tuner", "_state", "_policy", "_pinned")

    def __init__(self, tuner: Any, raw: Any, state: TunerState, policy: Policy):
        self.raw = raw
        self._tuner = tuner
        self._state = state
        self._policy = policy
        self._pinned = state.pinned

    # A pinned key is answered first and inline: a replay's launches are what the benchmark times.
    def __contains__(self, key: Any) -> bool:
        try:
            if key in self._pinned:
                return True
        except TypeError:
            pass
        found = self._policy.contains(self._tuner, self._state, key, self.raw)
        if not found:
            text = key_text(key)
            self._state.miss_started[text] = time.perf_counter()
            self._state.pending = text
        return found

    def __getitem__(self, key: Any) -> Any:
        try:
            return self._pinned[key]
        except (KeyError, TypeError):
            return self._policy.getitem(self._tuner, self._state, key, self.raw)

    def __setitem__(self, key: Any, config: Any) -> None:
        self._policy.setitem(self._tuner, self._state, key, config, self.raw)

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def __len__(self) -> int:
        return len(self.raw)

    def __iter__(self):
        return iter(self.raw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)
