"""What README.md tells a new user holds: its figures have a source in the repository, the line it
says `make demo` prints is the line the flow prints, and the commands it gives for
examples/bench.mk put the tools on PATH and name targets that file has (issue 29: the figures had
no source here, the demo's sentence promised a serial estimate it does not print, and no command
for bench.mk was given)."""

from __future__ import annotations

import re
from support import ROOT

README = (ROOT / "README.md").read_text()
BENCHMARKS = (ROOT / "BENCHMARKS.md").read_text()


def section(text: str, heading: str) -> str:
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_opening_figures_are_the_plugins_and_benchmarks_md_says_so():
    opening = README.split("\n## ", 1)[0]
    notes = section(BENCHMARKS, "The plugin's figures (not measured here)")
    for figure in ("3755 s", "49 ms", "196 s"):
        assert figure in opening and figure in notes, figure
    assert 'BENCHMARKS.md, "The plugin\'s figures"' in opening.replace("\n", " ")
    assert "not measured here" in opening.replace("\n", " ")


def test_the_demo_line_the_readme_quotes_is_the_one_the_sweep_prints(tmp_path):
    from test_warmup import warmup

    quoted = re.search(r"the line `(sweep done in Ws on 4 devices \(the shards' wall\s+times add up to Ss\))`",
                       README)
    assert quoted, "README quotes the demo's line"
    template = re.escape(" ".join(quoted.group(1).split())).replace("Ws", r"\d+\.\d\ds").replace(
        "Ss", r"\d+\.\d\ds")
    run = warmup(tmp_path, "--gpus", "4", "--devices", "0,1,2,3", "--backend", "cuda",
                 FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "records"))
    assert run.returncode == 0, run.stderr
    assert re.search(template, run.stderr), (template, run.stderr)
    assert "what the serial one would have taken" not in README


def test_the_bench_mk_commands_install_the_tools_on_path_and_name_its_targets():
    block = README.split("In a Makefile: `examples/bench.mk`", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    lines = block.splitlines()
    assert lines[0].startswith("make install PREFIX=$HOME/.local"), lines
    assert lines[1] == "export PATH=$HOME/.local/bin:$PATH", lines
    targets = [re.search(r"make -f examples/bench\.mk (\S+)", ln).group(1) for ln in lines[2:]]
    assert targets == ["bench", "measure"], lines
    # Running them is test_warmup.py's test_the_readme_makefile_warms_up_then_measures_replaying.
    makefile = (ROOT / "examples" / "bench.mk").read_text()
    for target in targets:
        assert re.search(rf"^{target}:", makefile, re.MULTILINE), target
