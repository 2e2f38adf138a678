"""Racing's settings (docs/CONTRACT.md, "Racing" and the settings' table): whether a record session
races a swept key's configs (race.py), the history after which cold configs are skipped
(race_history.py), how near the best short timing a config counts as near, and the audit file. Read
through a getter of raw values, as precompile/settings.py's are (the session's is env.raw_setting:
the variable, else the ini option); a value that cannot be used raises ProtocolError naming it.
Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .. import env

NEAR = 0.20  # a config within this of the best short timing is `near` in the key's record (history)

# The settings an ini file may hold too (the option is the name in lowercase; the variable wins).
INI_SETTINGS = {
    env.RACE: "record mode: race a swept key's configs, timing in full only those a short timing cannot rule out "
              "(1/yes, default, or 0/no: every config timed in full)",
    env.RACE_HISTORY: "racing: skip (neither compile nor time) a config never near the best on this many raced keys "
                      "of the record on this device (unset: never skip; 3 lost no pick where measured)",
    env.RACE_NEAR: f"racing: the percent from the best short timing within which a config counts as near (default "
                   f"{NEAR * 100:g})",
    env.RACE_AUDIT: "racing: a file to which each raced key adds one JSON line with every config's short and full "
                    "timing (the dropped are timed in full too, which costs what racing saves; for measuring racing)",
}


@dataclass(frozen=True)
class RaceSettings:
    on: bool  # record mode: race a swept key's configs (race.py)
    history: int | None  # raced keys of history from which cold configs are skipped (None: never)
    near: float  # a config within this fraction of the best short timing is near
    audit: str | None  # the audit file, absolute (race.py, Race.audit)


def race_settings(get: Callable[[str], str | None]) -> RaceSettings:
    """Reads racing's settings through `get(name)`, the raw value of the setting `name` or None;
    raises ProtocolError naming a setting whose value is unusable."""
    near = env.percent(env.RACE_NEAR, get(env.RACE_NEAR))
    return RaceSettings(env.truth(env.RACE, get(env.RACE), default=True),
                        env.count(env.RACE_HISTORY, get(env.RACE_HISTORY)),
                        NEAR if near is None else near / 100, env.path(get(env.RACE_AUDIT)))
