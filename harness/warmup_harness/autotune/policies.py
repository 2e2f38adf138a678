"""Record and replay as policies of the store view (tuner_cache.py): where a decision is recorded, and
where a recorded one is pinned."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from . import records
from .records import UNKNOWN, Made, Provenance, describe, replays_here
from .configs import config_record, config_text, key_text
from .tuner_cache import Policy, TunerState, pruned_away, remember


class Recorder(Policy):
    """Record mode: every decision goes to the writer, with the seconds its sweep took and the
    kernel's fingerprint."""

    def __init__(self, add: Callable[[str, str, dict, float | None, str | None], None]):
        super().__init__()
        self._add = add
        self._recorded: dict[tuple[str, str], str] = {}
        self.swept: set[tuple[str, str]] = set()  # keys the tuner timed and decided in this process
        self.stored: set[tuple[str, str]] = set()  # keys the tuner's own store answered
        self.progress: Any = None  # the session's progress.ProgressFile, if warmup-spawn asked for one

    def resumes(self) -> tuple[Path, int, int] | None:
        """The earlier record this session resumes from, how many of its keys may answer here, and
        how many did (resume: once_recorder.py); None where it resumes from none."""
        return None

    def _has(self, tuner: Any, state: TunerState, text: str) -> str | None:
        """The config text the record holds for this key already (resume: once_recorder.py), or None."""
        return None

    def _record(self, tuner: Any, state: TunerState, text: str, config: Any, seconds: float | None,
                store: bool = False) -> None:
        record = config_record(config)
        canon = config_text(record)
        pair = (state.kernel, text)
        if self._recorded.get(pair) == canon:
            return
        if pair not in self._recorded and self._has(tuner, state, text) == canon:
            self._recorded[pair] = canon  # the record has it: nothing to write
            return
        if store:  # not made here: the writer names it so (writer.RecordWriter.add)
            self._add(state.kernel, text, record, seconds, state.fingerprint(tuner), store=True)
        else:
            self._add(state.kernel, text, record, seconds, state.fingerprint(tuner))
        self._recorded[pair] = canon

    def setitem(self, tuner, state, key, config, raw):
        raw[key] = config
        text = key_text(key)
        started = state.miss_started.pop(text, None)
        self.swept.add((state.kernel, text))
        self._record(tuner, state, text, config, time.perf_counter() - started if started is not None else None)
        remember(state.recorded, key)
        if started is not None and self.progress is not None:
            self.progress.tuned()

    def _answered_by_store(self, tuner: Any, state: TunerState, text: str, config: Any) -> None:
        """Counts a key the tuner's store answered as the store's."""
        self.stored.add((state.kernel, text))

    def getitem(self, tuner, state, key, raw):
        # A decision the tuner found in its store (FlagGems' own, or one the user chose with
        # FLAGGEMS_DB_URL) is recorded too, so that the record holds every config the run used,
        # as made on an unknown device: a store may hold another device's answers (FlagGems 5.3
        # names no GPU model in its file), so no record vouches for it.
        config = raw[key]
        try:
            if key in state.recorded:
                return config
        except TypeError:
            pass
        text = key_text(key)
        self._answered_by_store(tuner, state, text, config)
        if (state.kernel, text) not in self._recorded:
            self._record(tuner, state, text, config, None, store=True)
        remember(state.recorded, key)
        return config


class ReplayMiss(RuntimeError):
    """A key the replay cannot pin, under `--warmup-replay-miss=fail`."""


class Replayer(Policy):
    """Replay mode: a recorded key is answered with the tuner's own matching config; any other key
    goes to the tuner's sweep, counted."""

    def __init__(self, records: dict[str, dict[str, dict]], source: str, fail: bool,
                 first_lookup: Callable[[], None], kernels: dict[str, str | None] | None = None,
                 provenance: Provenance | None = None, here: Callable[[], Made] | None = None):
        super().__init__()
        self._records = records
        self._source = source
        # Where each key was made (None: the record has no sidecar, nothing to check), and where
        # this process runs, asked at the first lookup: a key made elsewhere is swept live.
        self._provenance = provenance
        self._here_of = here
        self._here: Made = UNKNOWN
        self.elsewhere: dict[Made, int] = {}  # keys met that were made elsewhere, by where
        self._kernels = kernels or {}  # the sidecar's fingerprints (records.fingerprints)
        self._changed: dict[str, bool] = {}  # kernel -> whether its fingerprint differs from the record's
        self.fail = fail  # a key the record cannot answer raises instead of being swept
        self._first_lookup: Callable[[], None] | None = first_lookup
        self.replayed: set[tuple[str, str]] = set()
        self.missed: dict[tuple[str, str], str] = {}
        self.notes: list[str] = []  # one line per kernel that changed since the record was made

    def _kernel_changed(self, tuner: Any, state: TunerState) -> bool:
        changed = self._changed.get(state.kernel)
        if changed is None:
            line = None
            if state.kernel in self._kernels:
                line = records.changed(self._kernels, state.kernel, state.fingerprint(tuner), Path(self._source),
                                       len(self._records.get(state.kernel, {})), "swept live")
            changed = self._changed[state.kernel] = line is not None
            if line is not None:
                self.notes.append(line)
        return changed

    def closing(self) -> list[str]:
        lines = [f"{count} key(s) of {self._source} were made on {describe(made)}, this process runs on "
                 f"{describe(self._here)}: they are swept live, not replayed"
                 for made, count in self.elsewhere.items()]
        return lines + self.notes

    def _pin(self, tuner: Any, state: TunerState, key: Any) -> Any:
        try:
            if key in state.unpinned and not self.fail:
                return None
        except TypeError:
            pass
        if self._first_lookup is not None:
            check, self._first_lookup = self._first_lookup, None
            check()
            if self._here_of is not None:
                self._here = self._here_of()
        text = key_text(key)
        if self._kernel_changed(tuner, state):
            return self._miss(state, key, text, "its kernel changed since it was recorded")
        recorded = self._records.get(state.kernel, {}).get(text)
        if recorded is None:
            return self._miss(state, key, text, "not in the record")
        if self._provenance is not None:
            made = self._provenance.made(state.kernel, text)
            if not replays_here(made, self._here):
                if (state.kernel, text) not in self.missed:
                    self.elsewhere[made] = self.elsewhere.get(made, 0) + 1
                return self._miss(state, key, text, f"made on {describe(made)}")
        config = state.config_index(tuner.configs).get(config_text(recorded))
        if config is None:
            return self._miss(state, key, text, "its recorded config is not among the kernel's configs")
        if pruned_away(tuner, state, config):
            return self._miss(state, key, text, "the kernel's pruning leaves its recorded config out")
        self.replayed.add((state.kernel, text))
        remember(state.pinned, key, config)
        return config

    def _miss(self, state: TunerState, key: Any, text: str, why: str) -> None:
        self.missed.setdefault((state.kernel, text), why)
        remember(state.unpinned, key)
        if self.fail:
            raise ReplayMiss(
                f"warmup-harness: replay miss: kernel {state.kernel} key {text} {why} "
                f"({self._source}); --warmup-replay-miss=fail forbids sweeping it live"
            )
        return None

    def contains(self, tuner, state, key, raw):
        return self._pin(tuner, state, key) is not None or key in raw

    def getitem(self, tuner, state, key, raw):
        config = self._pin(tuner, state, key)
        return config if config is not None else raw[key]
