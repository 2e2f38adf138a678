"""Record mode's policy when keys are shared: by-key claims (claims.py) and resume (resume.py).

A `Recorder` (policies.py) records every decision the tuner makes. `KeyedRecorder` first asks, at
each new key, whether this process should tune it at all:

1. a key the earlier record answers (resume) is pinned to that config; the earlier record's keys
   are all carried into this record at the first such key;
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

import time
from typing import Any, Callable

from . import claims as claims_mod
from . import resume
from .configs import config_record, config_text, key_text
from .policies import Recorder
from .store import TunerState, remember

RECHECK_SECONDS = 1.0


class Untimed:
    """A key launched without timing while another child tunes it: the tuner's first config, and
    when to look for its winner again."""

    __slots__ = ("config", "recheck_at")

    def __init__(self, config: Any, recheck_at: float):
        self.config = config
        self.recheck_at = recheck_at


class KeyedRecorder(Recorder):
    def __init__(self, add: Callable[[str, str, dict, float | None], None],
                 carry: Callable[[str, str, dict, float | None], None],
                 claims: claims_mod.Claims | None, earlier: resume.Earlier | None,
                 device_name: Callable[[], str | None], say: Callable[[str], None], record_dir: str):
        super().__init__(add)
        self._record_dir = record_dir  # this process's record folder, named in the winners it publishes
        self._carry = carry  # records a key not tuned here, its seconds not counted as this run's
        self.claims = claims
        self.earlier = earlier
        self._device_name = device_name
        self._say = say
        self.opening: list[str] = []
        self.notes: list[str] = []
        self._held: dict[tuple[str, str], claims_mod.Held] = {}
        self._untimed: dict[tuple[str, str], Untimed] = {}
        self.tuned: set[tuple[str, str]] = set()
        self.taken_over: set[tuple[str, str]] = set()
        self.from_winner: set[tuple[str, str]] = set()
        self.untimed: set[tuple[str, str]] = set()
        self.resumed: set[tuple[str, str]] = set()
        self.carried = False  # the earlier record's keys are in this record

    # The store view's policy (store.Policy).
    def contains(self, tuner, state, key, raw):
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
        if config is not None:
            remember(state.pinned, key, config)
        return config

    def _resume(self, tuner: Any, state: TunerState, key: Any, text: str) -> bool:
        if self.earlier is None or not self.earlier.usable(self._device_name, self.notes):
            return False
        if not self.carried:
            # The earlier record's keys go into this record whole, so that publishing it (even
            # after a stop) loses none of them; met or not, each is the earlier run's.
            self.carried = True
            for kernel, text_, config, seconds in self.earlier.pairs():
                self._carry(kernel, text_, config, seconds)
                self._recorded[kernel, text_] = config_text(config)
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
            self._carry(state.kernel, text, winner["config"], seconds if isinstance(seconds, (int, float)) else None)
            self._recorded[state.kernel, text] = config_text(winner["config"])
            remember(state.recorded, key)
        return True

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
            carried = sum(len(v) for v in self.earlier.records.values()) if self.carried else 0
            lines.append(f"resume: {len(self.resumed)} key(s) taken from {self.earlier.path}, not tuned again; "
                         f"{carried} carried into this record")
        return lines + self.notes


def start(setting: Callable[[str], str | None], op: str, writer: Any, device_name: Callable[[], str | None],
          say: Callable[[str], None]) -> KeyedRecorder | None:
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

    def carry(kernel: str, key: str, config: dict, seconds: float | None) -> None:
        writer.add(kernel, key, config, seconds)
        writer.seconds -= seconds or 0.0  # tuned by an earlier run, not this one

    policy = KeyedRecorder(writer.add, carry, claims, earlier, device_name, say, str(writer.directory))
    policy.opening = opening
    return policy
