"""Racing's settings (docs/CONTRACT.md, "Racing" and the settings' table): whether a record session
races a swept key's configs (race.py), the raced keys after which configs near the best on none
are held back (race_history.py: None, unset, history orders the race and holds nothing back; 0,
no history), how near the best short timing a config counts as near (None: the record's), and
the audit file. Read through a getter of raw values, as precompile/settings.py's are (the
session's is env.raw_setting: the variable, else the ini option); a value that cannot be used
raises ProtocolError naming it. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .. import env

# The settings an ini file may hold too (the option is the name in lowercase; the variable wins).
INI_SETTINGS = {
    env.RACE: "record mode: race a swept key's configs, timing in full only those a short timing cannot rule out "
              "(1/yes, default, or 0/no: every config timed in full)",
    env.RACE_HISTORY: "racing: raced keys of a kernel on this device after which a config near the best on none "
                      "is held back (unset: history only orders the race; 0: no history)",
    env.RACE_NEAR: "racing: the percent from the best short timing within which a config counts as near (unset: the "
                   "record's, else 20)",
    env.RACE_AUDIT: "racing: a file to which each raced key adds one JSON line with every config's short and full "
                    "timing (the dropped are timed in full too, which costs what racing saves; for measuring racing)",
}


@dataclass(frozen=True)
class RaceSettings:
    on: bool  # record mode: race a swept key's configs (race.py)
    history: int | None  # raced keys of history before configs are held back (None: only ordering; 0: off)
    near: float | None  # a config within this fraction of the best short timing is near (None: the record's)
    audit: str | None  # the audit file, absolute (race.py, Race.audit)


def race_settings(get: Callable[[str], str | None]) -> RaceSettings:
    """Reads racing's settings through `get(name)`, the raw value of the setting `name` or None;
    raises ProtocolError naming a setting whose value is unusable."""
    near = env.percent(env.RACE_NEAR, get(env.RACE_NEAR))
    return RaceSettings(env.truth(env.RACE, get(env.RACE), default=True),
                        env.count(env.RACE_HISTORY, get(env.RACE_HISTORY), least=0),
                        None if near is None else near / 100, env.path(get(env.RACE_AUDIT)))
