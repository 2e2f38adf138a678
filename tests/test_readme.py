"""What README.md tells a new user holds: its figures have a source in the repository, the line it
says `make demo` prints is the line the flow prints, the commands it gives for examples/bench.mk
put the tools on PATH and name targets that file has (issue 29: the figures had no source here,
the demo's sentence promised a serial estimate it does not print, and no command for bench.mk was
given), and its step-by-step recipe runs as written."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

from support import BIN_DIR, HANG, ROOT, clean_env

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


def test_the_bench_mk_commands_put_the_tools_on_path_and_name_its_targets():
    block = README.split("### A Makefile", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    lines = block.splitlines()
    assert lines[0] == "export PATH=$PWD/target/release:$PWD/scripts:$PATH", lines  # make demo builds there
    targets = [re.search(r"make -f examples/bench\.mk (\S+)", ln).group(1) for ln in lines[1:]]
    assert targets == ["bench", "bench", "measure"], lines
    # Running them is test_warmup.py's
    # test_the_readme_cpu_example_sweeps_without_an_error_and_its_rerun_reuses_the_record.
    makefile = (ROOT / "examples" / "bench.mk").read_text()
    for target in targets:
        assert re.search(rf"^{target}:", makefile, re.MULTILINE), target


def test_the_step_by_step_recipe_runs_as_written_and_its_measurement_replays_the_op_published(tmp_path):
    """"Debugging, one step at a time" in bash, the fixture benchmark as bench.py and
    examples/shapes.yaml as core_shapes.yaml: the measurement names no op, and replays
    records/mm.json all the same, the op coming from warmup-publish's replay environment."""
    from test_warmup import EXAMPLE, HARNESS, Run

    block = README.split("### Debugging, one step at a time\n", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    assert "FLAGGEMS_PERF_CURRENT_OP" not in block, block
    shutil.copy(HARNESS.parent / "conftest.py", tmp_path / "conftest.py")
    shutil.copy(HARNESS, tmp_path / "bench.py")
    shutil.copy(EXAMPLE, tmp_path / "core_shapes.yaml")
    scratch, trace = tmp_path / "s", tmp_path / "trace.jsonl"
    script = block.replace("/tmp/s", str(scratch)).replace("less ", "cat ")  # no pager in a test
    env = clean_env(PATH=f"{BIN_DIR}:{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
                    WARMUP_FIXTURE_TRACE=str(trace), WARMUP_FIXTURE_SWEEP_SECONDS="0",
                    FLAGGEMS_VENDOR="nvidia", CUDA_VISIBLE_DEVICES="0,1,2,3",  # no GPU here to probe
                    TMPDIR=str(tmp_path))
    proc = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=HANG)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = Run(proc, trace)
    assert len(run.children) == 4, run.sessions
    measured = run.measurement
    assert (measured["op"], measured["mode"], measured["swept"]) == ("mm", "replay", 0), measured
    assert measured["replayed"] > 0 and measured["env"]["FLAGGEMS_PERF_CURRENT_OP"] == "mm", measured
    assert measured["env"]["FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR"] == str(tmp_path / "records"), measured
