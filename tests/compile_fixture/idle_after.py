"""What the harness leaves running once the last key is decided, and whether it uses a CPU then.
Driven by tests/test_harness_hot_path.py, not by pytest's own run.

One test: the autotuned kernel (bench_scale.py's) is launched on one size, which sweeps its
configs on a new key (compiled ahead in the session's pool: the record session's compile workers,
forked for it); that key is the last. Then it is launched for `IDLE_SECONDS` (default 1) and the
CPU time (user and system clock ticks, /proc) of each thread of this process other than this one,
and of each child process, is read before and after. One JSON object to `IDLE_OUT`: `threads` and
`children` (name or pid -> ticks used while the decided key was launched, null for one that
ended meanwhile), and `launches`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from bench_scale import scale_kernel

import cpu_fakes


def _ticks(stat: Path) -> int:
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of proc(5)


def _others() -> dict[str, Path]:
    """Each thread of this process but this one (by name), and each child process (by pid): its stat file."""
    me = threading.get_native_id()
    names = {thread.native_id: thread.name for thread in threading.enumerate()}
    found = {}
    for task in Path("/proc/self/task").iterdir():
        tid = int(task.name)
        if tid != me:
            found[f"thread {names.get(tid, tid)}"] = task / "stat"
        try:
            found.update({f"child {pid}": Path(f"/proc/{pid}/stat") for pid in (task / "children").read_text().split()})
        except OSError:
            continue
    return found


def _used(stats: dict[str, Path]) -> dict[str, int | None]:
    used: dict[str, int | None] = {}
    for who, stat in stats.items():
        try:
            used[who] = _ticks(stat)
        except OSError:  # ended meanwhile: its clock is gone, and it uses nothing now
            used[who] = None
    return used


def test_idle_after_the_last_key():
    x, y = cpu_fakes.Tensor(), cpu_fakes.Tensor()
    scale_kernel[(1,)](x, y, 1024)  # the last key: swept, its configs compiled ahead
    stats = _others()
    before = _used(stats)
    launches = 0
    end = time.monotonic() + float(os.environ.get("IDLE_SECONDS", "1"))
    while not launches or time.monotonic() < end:  # once at least, however late this process runs
        scale_kernel[(1,)](x, y, 1024)
        launches += 1
    after = _used(stats)
    # One that ended during the launches is null: what it used before it ended cannot be read.
    used = {who: None if None in (before[who], after[who]) else after[who] - before[who] for who in stats}
    out = {"threads": {who: n for who, n in used.items() if who.startswith("thread ")},
           "children": {who: n for who, n in used.items() if who.startswith("child ")}, "launches": launches}
    Path(os.environ["IDLE_OUT"]).write_text(json.dumps(out))
