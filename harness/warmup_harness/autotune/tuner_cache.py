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


class _Miss:
    """What a view's lookup finds for a key neither settled nor answered by the policy: false, so
    that `key in view` is False. (`view[key]` of such a key, which no tuner reads before deciding
    it, finds this too, not a KeyError: the lookup cannot tell which of the two asked.)"""

    __slots__ = ()

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "<warmup-harness: a key the tuner's store does not hold>"


MISS = _Miss()
_IN_STORE = object()  # a key _Stored settled whose store holds its config: read there at each lookup


class TunerCache(dict):
    """A tuner's store as the tuner sees it while the hooks are in: lookups and decisions go
    through the policy, everything else straight to the store.

    A launch of a decided key costs what it costs without the hooks. The view is itself a dict of
    the keys settled (pinned by a replay or a resumed record, decided here, or answered by the
    store and recorded). Over a store that is a dict (Triton's), which the tuner reads in C, the
    view's class is `_Settled` once a key is, whose `key in view` and `view[key]` are both dict's
    own lookup, in C: no Python call of the harness on that launch, and the store is not read
    again for a settled key. Until then it is `_Unsettled`, whose lookups are Python and take a key
    no dict can hold (the policy alone answers it); a tuner whose keys cannot be hashed stays so.
    Over any other store (FlagGems' SQL tables, which the tuner reads at every launch) the view is
    `_Stored`, which reads a settled key from the store as the tuner does without the hooks.
    tests/test_harness_hot_path.py counts the calls; BENCHMARKS.md, "The hot path", times them. A
    lookup that misses calls `__missing__`, which asks the policy. Constructed as
    `TunerCache(...)`, a view is one of those three classes."""

    __slots__ = ("raw", "_tuner", "_state", "_policy")

    def __init__(self, tuner: Any, raw: Any, state: TunerState, policy: Policy):
        super().__init__()
        self.raw = raw
        self._tuner = tuner
        self._state = state
        self._policy = policy
        self.__class__ = _Unsettled if isinstance(raw, dict) else _Stored
        for key, config in state.pinned.items():  # pins are the tuner's, whichever store it holds
            self._settle(key, config)

    def _ask(self, key: Any) -> Any:
        """The policy's answer for a key not settled: the config, or MISS (the tuner's sweep starts)."""
        state = self._state
        if not self._policy.contains(self._tuner, state, key, self.raw):
            text = key_text(key)
            state.miss_started[text] = time.perf_counter()
            state.pending = text
            return MISS
        try:
            config = state.pinned.get(key, MISS)
        except TypeError:
            config = MISS
        return config if config is not MISS else self._policy.getitem(self._tuner, state, key, self.raw)

    def __missing__(self, key: Any) -> Any:
        # dict's lookup missed (a hashable key): the policy answers, and a key it settled is kept.
        config = self._ask(key)
        if config is not MISS and (key in self._state.pinned or key in self._state.recorded):
            self._settle(key, config)
        return config

    def _settle(self, key: Any, config: Any) -> None:
        if config:  # a false config would read as a miss: such a key is asked of the policy each time
            dict.__setitem__(self, key, config)
            self.__class__ = _Settled

    def __setitem__(self, key: Any, config: Any) -> None:
        self._policy.setitem(self._tuner, self._state, key, config, self.raw)
        try:
            self._settle(key, config)
        except TypeError:
            pass

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    # Everything else is the store's: what it holds, and changes to it (which unsettle the key).
    def __delitem__(self, key: Any) -> None:
        self._unsettle(key)
        del self.raw[key]

    def pop(self, key: Any, *default: Any) -> Any:
        self._unsettle(key)
        return self.raw.pop(key, *default)

    def clear(self) -> None:
        dict.clear(self)
        self.raw.clear()

    def _unsettle(self, key: Any) -> None:
        try:
            dict.pop(self, key, None)
        except TypeError:
            pass

    def __len__(self) -> int:
        return len(self.raw)

    def __iter__(self):
        return iter(self.raw)

    def __eq__(self, other: Any) -> bool:
        return self.raw == other

    def __repr__(self) -> str:
        return repr(self.raw)

    # dict's own methods would read the keys settled: each is the store's.
    def keys(self):
        return self.raw.keys()

    def values(self):
        return self.raw.values()

    def items(self):
        return self.raw.items()

    def copy(self):
        return self.raw.copy()

    def update(self, *args: Any, **kwargs: Any) -> None:
        given = dict(*args, **kwargs)
        self.raw.update(given)
        for key in given:
            self._unsettle(key)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        return self.raw.setdefault(key, default)

    def popitem(self) -> tuple:
        key, config = self.raw.popitem()
        self._unsettle(key)
        return key, config

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def _item(view: TunerCache, key: Any) -> Any:
    """`view[key]` where it is Python (_Unsettled, _Stored): a settled key's config, or the store's
    where it holds it (_Stored); else the policy's answer, a KeyError where it has none."""
    try:
        config = dict.__getitem__(view, key)  # __missing__ asks the policy
    except TypeError:  # no dict can hold it: the policy alone, every time
        config = view._ask(key)
    if config is _IN_STORE:
        return view.raw[key]
    if config is MISS:
        raise KeyError(key)
    return config


class _Unsettled(TunerCache):
    """A view before any key settled: Python lookups that take a key no dict can hold."""

    __slots__ = ()

    def __contains__(self, key: Any) -> bool:
        try:
            return bool(dict.__getitem__(self, key))  # __missing__ asks the policy
        except TypeError:  # no dict can hold it: the policy alone, every time
            return self._ask(key) is not MISS

    __getitem__ = _item


class _Settled(TunerCache):
    """A view with a key settled: `key in view` is dict's own `view[key]` (a method of C, no Python
    frame), a settled key's config, true; a miss calls `__missing__`, whose MISS is false. A key no
    dict can hold raises TypeError here, as it does in Triton's own store (a dict)."""

    __slots__ = ()

    __contains__ = dict.__getitem__


class _Stored(TunerCache):
    """A view over a store that is not a dict (FlagGems' `ConfigCache`, SQL tables). Without the
    hooks the tuner reads its store at each launch of a decided key, and a benchmark's latency
    holds that read where the launch is host-bound; the harness keeps it so: a settled key whose
    store holds its config (decided here and written by the tuner, or answered by the store) is
    read from the store at each lookup, and a key settled by a replay or a resumed record that the
    store lacks is written there first, its config only, as the tuner writes a key it decides.
    What the harness adds is the view's two lookups. A key the store holds with another config
    (a pin overriding it), or a store that cannot be read or written, is answered from the view."""

    __slots__ = ()

    def _settle(self, key: Any, config: Any) -> None:
        if config:
            dict.__setitem__(self, key, _IN_STORE if self._stored(key, config) else config)

    def _stored(self, key: Any, config: Any) -> bool:
        """Whether the store holds `config` for `key`, writing it there if it holds none."""
        want = config_text(config_record(config))
        try:
            if key not in self.raw:
                self.raw[key] = config
            return config_text(config_record(self.raw[key])) == want
        except Exception:  # a store read-only or gone: the view answers, as for Triton's dict
            return False

    def __contains__(self, key: Any) -> bool:
        try:
            config = dict.__getitem__(self, key)  # __missing__ asks the policy
        except TypeError:  # no dict can hold it: the policy alone, every time
            return self._ask(key) is not MISS
        return key in self.raw if config is _IN_STORE else bool(config)

    __getitem__ = _item
