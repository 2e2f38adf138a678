"""Record mode's policy when keys are shared: by-key claims (claims.py) and resume (resume.py).

A `Recorder` (policies.py) records every decision the tuner makes. `OnceRecorder` first asks, at
each new key, whether this process should tune it at all:

1. a key the earlier record answers (resume) is pinned to that config, unless its kernel changed
   since (the sidecar's fingerprint differs); the earlier record's keys are all carried into this
   record at the first key, in one write, unless the earlier record is this one;
2. by-key: a key another child published a winner for is pinned to it, not recorded (that child's
   record holds it; a winner an earlier run of this same shard published is recorded again, as
   that run's record was cleared); a key a live child holds is launched on the tuner's first config, untimed and
   not recorded, and looked at again at most every RECHECK_SECONDS (for its winner, or for its
   holder's death, when it is taken over); any other key is claimed here, tuned, recorded, and its
   winner published.

So a key is tuned once across the children and once across runs. The session (session.py) builds
it through `start` and says its lines.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

from . import claims as claims_mod
from . import records, resume
from .configs import config_record, config_text, key_text
from .fingerprints import running_fingerprint
from .policies import Recorder
from .tuner_cache import TunerState, pruned_away, remember

RECHECK_SECONDS = 1.0


class Untimed:
    """A key launched without timing while another child tunes it: the tuner's first config, and
    when to look for its winner again."""

    __slots__ = ("config", "recheck_at")

    def __init__(self, config: Any, recheck_at: float):
        self.config = config
        self.recheck_at = recheck_at


class OnceRecorder(Recorder):
    def __init__(self, writer: Any, claims: claims_mod.Claims | None, earlier: resume.Earlier | None,
                 device_name: Callable[[], str | None], say: Callable[[str], None], same_folder: bool = False):
        super().__init__(writer.add)
        self._writer = writer  # writer.RecordWriter
        self._record_dir = str(writer.directory)  # this process's record folder, named in the winners it publishes
        self.claims = claims
        self.earlier = earlier
        self.same_folder = same_folder  # the earlier record is the one this session writes
        self._changed: dict[str, bool] = {}  # kernel -> its fingerprint differs from the earlier record's
        self.carried_keys = 0
        self._device_name = device_name
        self._say = say
        self._opening: list[str] = []  # start()'s lines: by-key mode, why nothing is resumed
        self.notes: list[str] = []
        self._held: dict[tuple[str, str], claims_mod.Held] = {}
        self._untimed: dict[tuple[str, str], Untimed] = {}
        self.tuned: set[tuple[str, str]] = set()
        self.taken_over: set[tuple[str, str]] = set()
        self.from_winner: set[tuple[str, str]] = set()
        self.untimed: set[tuple[str, str]] = set()
        self.resumed: set[tuple[str, str]] = set()
        self.carried = False  # the earlier record's keys are in this record
        self._pruned: set[tuple[str, str]] = set()  # keys whose earlier config the pruning leaves out

    # The store view's policy (store.Policy).
    def contains(self, tuner, state, key, raw):
        self._begin_resume()  # the earlier keys are carried before a store answers any key
        if key in raw:
            return True
        text = key_text(key)
        pair = (state.kernel, text)
        if pair in self._held:  # claimed here: this is the tuner's own miss
            return False
        waiting = self._untimed.get(pair)
        if waiting is not None and time.monotonic() < waiting.recheck_at:
            return True
        if self._resume(tuner, state, key, text):
            return True
        if self.claims is None:
            return False
        return self._share(tuner, state, key, text)

    def getitem(self, tuner, state, key, raw):
        if key not in raw:
            waiting = self._untimed.get((state.kernel, key_text(key)))
            if waiting is not None:
                return waiting.config
        return super().getitem(tuner, state, key, raw)

    def setitem(self, tuner, state, key, config, raw):
        text = key_text(key)
        started = state.miss_started.get(text)
        seconds = time.perf_counter() - started if started is not None else None
        super().setitem(tuner, state, key, config, raw)
        held = self._held.pop((state.kernel, text), None)
        if held is not None:
            try:
                self.claims.publish(held, state.kernel, text, config_record(config), seconds, self._record_dir)
            except OSError as exc:  # the key is recorded; another child will only tune it again
                self.notes.append(f"WARNING by-key: cannot publish the winner of {state.kernel} {text} in "
                                  f"{self.claims.folder} ({exc.strerror or exc}): another child may tune it again")

    # What decides.
    def _pin(self, tuner: Any, state: TunerState, key: Any, recorded: dict) -> Any:
        config = state.config_index(tuner.configs).get(config_text(recorded))
        if config is not None and pruned_away(tuner, state, config):
            self._pruned.add((state.kernel, key_text(key)))
            return None  # the tuner's pruning leaves it out now: tune the key
        if config is not None:
            remember(state.pinned, key, config)
        return config

    def _carry(self, tuner: Any, state: TunerState, text: str, config: dict, seconds: Any) -> None:
        """Records a key not tuned here; its seconds are not counted as this run's."""
        self._writer.add(state.kernel, text, config, seconds, state.fingerprint(tuner))
        self._writer.seconds -= seconds or 0.0

    def _begin_resume(self) -> bool:
        """Whether the earlier record answers keys here (its device is this one, asked at the first
        key); the first time it does, its keys go into this record, whole and in one write, so that
        publishing this record (even after a stop) loses none of them. Nothing to carry when it is
        this record."""
        if self.earlier is None or not self.earlier.usable(self._device_name, self.notes):
            return False
        if not self.carried:
            self.carried = True
            if not self.same_folder:
                entries, unchecked = self._current(self.earlier.entries())
                self.carried_keys = self._writer.carry(entries, unchecked)
        return True

    def _current(self, entries: list) -> tuple[list, set[str]]:
        """The earlier record's entries but those of a kernel whose fingerprint there differs from
        the one this process runs (found by its name, met or not): keys tuned for the kernel as it
        was are never carried, so no shard carries a stale key beside another's fresh one. A kernel
        whose running fingerprint cannot be found is carried as it was, and returned among the
        kernels no running one confirmed."""
        running: dict[str, str | None] = {}
        kept, dropped = [], {}
        for entry in entries:
            kernel, fingerprint = entry[0], entry[4]
            if fingerprint is not None and kernel not in running:
                running[kernel] = running_fingerprint(kernel)
            now = running.get(kernel)
            if fingerprint is not None and now is not None and now != fingerprint:
                dropped[kernel] = dropped.get(kernel, 0) + 1
                continue
            kept.append(entry)
        for kernel, count in dropped.items():
            self._changed[kernel] = True
            self._writer.explained.add(kernel)
            self.notes.append(f"kernel {kernel} changed since {self.earlier.path} was recorded (source or "
                              f"configs differ): its {count} key(s) are not carried, and are tuned again where met")
        return kept, {kernel for kernel, now in running.items() if now is None}

    def _kernel_changed(self, tuner: Any, state: TunerState) -> bool:
        """Whether the earlier record's keys of this kernel were tuned for another version of it
        (its fingerprint differs); said once per kernel."""
        changed = self._changed.get(state.kernel)
        if changed is None:
            line = None
            if state.kernel in self.earlier.kernels:
                line = records.changed(self.earlier.kernels, state.kernel, state.fingerprint(tuner), self.earlier.path,
                                       len(self.earlier.records.get(state.kernel, {})), "tuned again")
            changed = self._changed[state.kernel] = line is not None
            if line is not None:
                self.notes.append(line)
                self._writer.explained.add(state.kernel)  # the writer's drop of them needs no line more
        return changed

    def _has(self, tuner: Any, state: TunerState, text: str) -> str | None:
        # A config a store answered that the earlier record holds already is not written again.
        if not self._begin_resume() or self._kernel_changed(tuner, state):
            return None
        found = self.earlier.lookup(state.kernel, text)
        return config_text(found[0]) if found is not None else None

    def _answered_by_store(self, tuner: Any, state: TunerState, text: str, config: Any) -> None:
        # A store holding what the earlier record holds for the key (a replay or a resume wrote it
        # there, as the tuner writes a decision: tuner_cache._Stored) answers a resumed key.
        if self._has(tuner, state, text) == config_text(config_record(config)):
            self.resumed.add((state.kernel, text))
        else:
            super()._answered_by_store(tuner, state, text, config)

    def _resume(self, tuner: Any, state: TunerState, key: Any, text: str) -> bool:
        if not self._begin_resume() or self._kernel_changed(tuner, state):
            return False
        found = self.earlier.lookup(state.kernel, text)
        if found is None:
            return False
        recorded, _ = found
        config = self._pin(tuner, state, key, recorded)
        if config is None:  # the kernel no longer has that config: tune the key
            return False
        remember(state.recorded, key)
        self.resumed.add((state.kernel, text))
        return True

    def _share(self, tuner: Any, state: TunerState, key: Any, text: str) -> bool:
        pair = (state.kernel, text)
        if self._take_winner(tuner, state, key, text):
            return True
        held = self.claims.take(state.kernel, text)
        if held is None:
            if self._take_winner(tuner, state, key, text):  # published in between
                return True
            self._untimed[pair] = Untimed(tuner.configs[0], time.monotonic() + RECHECK_SECONDS)
            self.untimed.add(pair)
            return True
        self._untimed.pop(pair, None)
        self._held[pair] = held
        self.tuned.add(pair)
        if held.taken_from is None:
            self._say(f"by-key: {state.kernel} {text}: claimed, tuning it here")
        else:
            self.taken_over.add(pair)
            self._say(f"by-key: {state.kernel} {text}: claim taken over from pid {held.taken_from}, which "
                      f"ended before publishing a winner; tuning it here")
        return False

    def _take_winner(self, tuner: Any, state: TunerState, key: Any, text: str) -> bool:
        winner = self.claims.winner(state.kernel, text)
        if winner is None or self._pin(tuner, state, key, winner["config"]) is None:
            return False
        self._untimed.pop((state.kernel, text), None)
        self.from_winner.add((state.kernel, text))
        if winner.get("record_dir") == self._record_dir:
            # Published by an earlier run of this shard (warmup-spawn --only), whose record was
            # cleared when this one started: recorded again, or no record would hold it.
            seconds = winner.get("seconds")
            self._carry(tuner, state, text, winner["config"], seconds if isinstance(seconds, (int, float)) else None)
            self._recorded[state.kernel, text] = config_text(winner["config"])
            remember(state.recorded, key)
        return True

    def opening(self) -> list[str]:
        return list(self._opening)

    def resumes(self) -> tuple[Path, int, int] | None:
        if self.earlier is None:
            return None
        return self.earlier.path, self.earlier.resumable(), len(self.resumed)

    def closing(self) -> list[str]:
        lines = []
        if self.claims is not None:
            waited = self.untimed - self.from_winner - self.tuned
            lines.append(
                f"by-key: tuned {len(self.tuned)} key(s) here ({len(self.taken_over)} taken over from a "
                f"child that ended first), {len(self.from_winner)} launched with another child's winner, "
                f"{len(waited)} launched untimed on the first config while another child tuned them "
                f"(not recorded here); claims in {self.claims.folder}")
        if self.earlier is not None:
            held = ("it is this session's record: nothing carried" if self.same_folder
                    else f"{self.carried_keys} carried into this record")
            lines.append(f"resume: {len(self.resumed)} key(s) taken from {self.earlier.path}, not tuned again; {held}")
        if self._pruned:
            lines.append(f"resume: {len(self._pruned)} key(s) of {self.earlier.path if self.earlier else 'the record'} "
                         f"tuned again: the kernel's pruning leaves their recorded config out")
        return lines + self.notes


def start(setting: Callable[[str], str | None], op: str, writer: Any, device_name: Callable[[], str | None],
          say: Callable[[str], None]) -> OnceRecorder | None:
    """The policy for a record session, or None when neither claims nor resume apply (the plain
    Recorder then records); raises env.ProtocolError subclasses on a bad setting."""
    import triton

    opening: list[str] = []
    earlier = resume.load(setting, op, triton.__version__, opening)
    claims = claims_mod.from_env(setting)
    if claims is not None:
        opening.append(f"by-key mode: each new autotune key is claimed in {claims.folder}; a key another "
                       f"child claimed is not tuned here")
    if earlier is None and claims is None:
        for line in opening:  # why nothing is resumed
            say(line)
        return None

    same = earlier is not None and same_folder(earlier.path.parent, writer.directory)
    policy = OnceRecorder(writer, claims, earlier, device_name, say, same_folder=same)
    policy._opening = opening
    return policy


def same_folder(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()
