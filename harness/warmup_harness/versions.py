"""The Triton versions the harness is tested on, and the warning a process on any other one gets.

`make test-triton` runs the harness's tests (record, replay, precompile, Triton's own and
LibTuner-like tuners) on the latest patch of each minor from TESTED[0] to TESTED[1], the Makefile's
TRITONS (README.md, "The harness"). Where those versions differ the hooks were checked:

* 3.4 added the on-disk autotune cache (`cache_results`), which the hooks turn off, and
  `knobs.runtime.jit_cache_hook`, which the ahead-of-time compile (precompile/) needs;
* 3.5 names the key of a compile in Triton's kernel cache `triton.runtime.cache.get_cache_key`; 3.4
  computes the same text inside `triton.compile`, which takes no `_env_vars` there;
* 3.5 keeps the driver a benchmark sets (`driver.set_active`, a CPU stand-in) in `driver._active`,
  3.4 in `driver.active`, beside its default;
  (triton_private.py, the one module of Triton's private names, handles each of these);
* 3.8 decides a key whose pruning leaves one config without timing it (`_bench` is not called):
  the decision still goes through `self.cache[key] = ...`, so it is recorded and replayed like any
  other; 3.8 also added `knobs.autotuning.listener`, which is told each decision of Triton's own
  `Autotuner.run` after the fact: it cannot pin a config, and a subclass that replaces `run`
  (FlagGems' LibTuner) never calls it, so the hooks do not use it;
* 3.9 refuses, when a kernel is decorated, `key` names that are not the kernel's arguments.

3.2 and 3.3 have no `knobs`, so nothing ahead-of-time can be compiled there, and they are not
tested. On a version outside the range the hooks may still work (they touch only `Autotuner`'s
`cache`, `cache_results`, `prune_configs` and `_bench`), but nothing shows that they do, so the
plugin says so when it starts. Triton is imported only by the functions that need it.
"""

from __future__ import annotations

import re
import sys

TESTED = ((3, 4), (3, 9))  # the first and last minor tested, both included


def tested_range() -> str:
    (a, b), (c, d) = TESTED
    return f"{a}.{b} to {c}.{d}"


def minor(version: str) -> tuple[int, int] | None:
    """(major, minor) of a version text such as "3.6.0", "3.7.0+git4a2b" or "3.5.1rc1"."""
    found = re.match(r"\s*(\d+)\.(\d+)", version)
    return (int(found.group(1)), int(found.group(2))) if found else None


def warning(version: str | None = None) -> str | None:
    """The line to say at start when `version` (by default the imported Triton's) is outside the
    tested range, else None."""
    if version is None:
        triton = sys.modules.get("triton")
        version = getattr(triton, "__version__", None)
        if version is None:
            return None  # Triton is not imported: no hook of this harness is in
    found = minor(version)
    if found is not None and TESTED[0] <= found <= TESTED[1]:
        return None
    return (
        f"WARNING Triton {version} is outside the versions this harness is tested on "
        f"({tested_range()}): its records and replays may be wrong; use a Triton from "
        f"{tested_range()}, or check one record and its replay by hand"
    )
