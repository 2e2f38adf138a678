"""The harness's per-key precompile line (docs/CONTRACT.md, "Compiling ahead and timing") read
back, for the tests and the GPU proof's scripts: the line is the contract, this is its reader."""

from __future__ import annotations

import re

REPORT_LINE = re.compile(
    r"precompile (?P<kernel>\S+): (?P<configs>\d+) configs, (?P<compiled>\d+) compiled, (?P<found>\d+) found "
    r"compiled \((?P<waited>\d+) after waiting for a sibling\), (?P<loaded>\d+) already loaded, (?P<left>\d+) left "
    r"to Triton; (?P<mode>\w+) x(?P<workers>\d+), capture (?P<capture_s>[\d.]+)s, compile (?P<compile_s>[\d.]+)s")


def parse_reports(text: str) -> list[dict]:
    """The report lines in a log, as dicts of Report's fields."""
    return [{k: v if k in ("kernel", "mode") else float(v) if k.endswith("_s") else int(v)
             for k, v in m.groupdict().items()} for m in REPORT_LINE.finditer(text)]
