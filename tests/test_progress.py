"""What warmup-spawn shows a person while the children sweep (docs/CONTRACT.md, warmup-spawn's
progress): in a log, a line per running device at each interval with the keys its harness tuned
and the configs it timed, read from `SCRATCH/w<i>/progress.json`; on a terminal the same in the
live lines, cut to the terminal's width; `TERM=dumb` gets no redraws.

The interval is 10 s; the tests shorten it with its testing knob (WARMUP_SPAWN_PROGRESS_SECONDS)
so that a sweep of a few seconds shows several intervals. Gaps are judged only between a shard's
start line and its end line, and only against a generous bound: how late a line comes on a loaded
machine is no matter, that one comes while the sweep runs is.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import yaml
from support import HANG, ROOT, clean_env, on_a_terminal, run_tool, tool

HARNESS = ROOT / "tests" / "harness" / "test_bench.py"
EXAMPLE = ROOT / "examples" / "shapes.yaml"
INTERVAL = 0.5
# How much later than the interval a line may come on a loaded machine: a hang guard, not a timing.
SLACK = 5.0
PROGRESS = re.compile(r"warmup-spawn: shard (\d+) on device (\S+): (\d+) key\(s\) tuned, (\d+) config\(s\) timed, "
                      r"(\d+)s elapsed")


def plan(tmp_path: Path) -> Path:
    scratch = tmp_path / "scratch"
    split = run_tool("shard", "--op", "mm", "--shards", "2", "--out", scratch, EXAMPLE)
    assert split.returncode == 0, split.stderr
    return scratch


def test_a_logged_sweep_has_a_progress_line_per_device_at_each_interval_and_no_more(tmp_path):
    scratch = plan(tmp_path)
    env = clean_env(FLAGGEMS_PERF_CURRENT_OP="mm", WARMUP_FIXTURE_SWEEP_SECONDS="0.3",
                    WARMUP_SPAWN_PROGRESS_SECONDS=str(INTERVAL))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HARNESS),
               "--shape_file", str(EXAMPLE)]
    proc = subprocess.Popen([tool("spawn"), "--plan", str(scratch), "--backend", "cuda", "--devices", "0,1", "--",
                             *command], env=env, cwd=tmp_path, text=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    lines: list[tuple[float, str]] = []  # (when it came, the line)
    deadline = time.monotonic() + HANG
    try:
        for line in proc.stderr:
            lines.append((time.monotonic(), line.rstrip("\n")))
            assert time.monotonic() < deadline, "warmup-spawn did not end"
        assert proc.wait(timeout=HANG) == 0, "\n".join(text for _, text in lines)
    finally:
        proc.kill()
    said = "\n".join(text for _, text in lines)
    for shard in (0, 1):
        start = next(t for t, text in lines if f"shard {shard} started on device" in text)
        end = next(t for t, text in lines if re.search(rf"shard {shard} on device \S+ ok in", text))
        progress = [(t, PROGRESS.search(text)) for t, text in lines if PROGRESS.search(text)]
        mine = [(t, m) for t, m in progress if int(m[1]) == shard]
        assert mine, said
        times = [start, *(t for t, _ in mine), end]
        gaps = [b - a for a, b in zip(times, times[1:])]
        assert max(gaps) < INTERVAL + SLACK, (gaps, said)
        # Never more often than the interval: at most one line per interval the shard ran.
        assert len(mine) <= (end - start) / INTERVAL + 2, (len(mine), end - start, said)
        keys = [int(m[3]) for _, m in mine]
        assert keys == sorted(keys) and keys[-1] > 0, said
        assert all(int(m[4]) == 4 * int(m[3]) for _, m in mine), "the configs the harness counted"
        log = (scratch / f"w{shard}" / "worker.log").read_text()
        swept = int(re.search(r"mode record: swept (\d+)", log)[1])
        assert keys[-1] <= swept, (keys, swept)


def test_the_default_interval_is_ten_seconds():
    """Read from the tool's own help, not waited for."""
    help_text = " ".join(subprocess.run([tool("spawn"), "--help"], capture_output=True, text=True,
                                        timeout=HANG).stdout.split())
    assert "a line per running device every 10 s (WARMUP_SPAWN_PROGRESS_SECONDS" in help_text, help_text


# A stand-in child: it keeps its progress file as the harness does, then sweeps for a while.
CHILD = 'printf \'{"keys": 123456, "configs": 7890123}\' > "$WARMUP_HARNESS_PROGRESS"; sleep 1.5'


def test_on_a_terminal_the_live_lines_show_the_counts_cut_to_its_width(tmp_path):
    scratch = plan(tmp_path)
    argv = [tool("spawn"), "--plan", str(scratch), "--backend", "cuda", "--devices", "0,1", "--", "sh", "-c", CHILD]
    code, screen = on_a_terminal(argv, clean_env(TERM="xterm"), columns=200)
    assert code == 0, screen
    assert "running: 123456 keys, 7890123 configs" in screen, screen
    narrow = tmp_path / "narrow"
    code, screen = on_a_terminal([*argv[:2], str(plan(narrow)), *argv[3:]], clean_env(TERM="xterm"), columns=40)
    assert code == 0, screen
    live = [ln for ln in re.split(r"\r?\n|\x1b\[\d*F\x1b\[J", screen) if ln.startswith("  device")]
    assert live and all(len(ln) <= 40 for ln in live), live
    assert any(len(ln) == 40 for ln in live), "a line longer than the terminal is cut, not dropped"


def test_term_dumb_gets_no_redraws_and_no_colour_but_the_log_lines(tmp_path):
    scratch = plan(tmp_path)
    argv = [tool("spawn"), "--plan", str(scratch), "--backend", "cuda", "--devices", "0,1", "--", "sh", "-c", CHILD]
    code, screen = on_a_terminal(argv, clean_env(TERM="dumb", WARMUP_SPAWN_PROGRESS_SECONDS="0.2"), columns=80)
    assert code == 0, screen
    assert "\x1b" not in screen, repr(screen)
    assert "started on device" in screen and "2 shards: 2 ok" in screen, screen
    assert "123456 key(s) tuned, 7890123 config(s) timed" in screen, screen


def test_where_the_plans_costs_are_seconds_the_line_says_what_is_left_of_them(tmp_path):
    """A cost file's seconds (as the op's history gives them) make each shard's expected time:
    the ETA is what is left of it, and a shard past it says so."""
    shapes = yaml_shapes()
    costs = tmp_path / "costs.json"
    # One long shape: lpt gives it a shard of its own, and the other eleven the other shard.
    costs.write_text(json.dumps({"mm": {json.dumps(s, separators=(",", ":")): 1000.0 if i == 0 else 0.001
                                        for i, s in enumerate(shapes)}}))
    scratch = tmp_path / "scratch"
    split = run_tool("shard", "--op", "mm", "--shards", "2", "--costs", costs, "--out", scratch, EXAMPLE)
    assert split.returncode == 0, split.stderr
    done = subprocess.run([tool("spawn"), "--plan", str(scratch), "--backend", "cuda", "--devices", "0,1", "--",
                           "sh", "-c", CHILD], env=clean_env(WARMUP_SPAWN_PROGRESS_SECONDS="0.2"), cwd=tmp_path,
                          capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 0, done.stderr
    assert re.search(r"shard \d on device \d: 123456 key\(s\) tuned, .* elapsed, about 99\ds left by the history",
                     done.stderr), done.stderr
    assert re.search(r"elapsed, past the 0s the history expects", done.stderr), done.stderr


def yaml_shapes() -> list:
    return yaml.safe_load(EXAMPLE.read_text())["mm"]["shapes"]
