"""scripts/warmup and scripts/warmup-slurm against warmup-plan: for every decision (and every
warmup-slurm mode), `warmup-plan --format sh` evaluated in bash assigns every name the script
reads on that path, and every name a script declares is assigned by some decision. A name renamed
on one side alone would otherwise be read as '' (each script declares its names before the eval)."""

from __future__ import annotations

import json
import keyword
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support import HANG, ROOT, clean_env, run_tool, tool, with_stand_in_sbatch
from test_history import H200, driver_probe, sidecar

EXAMPLE = ROOT / "examples" / "shapes.yaml"
HARNESS = ROOT / "tests" / "harness" / "test_bench.py"


def declared(script: str) -> set[str]:
    """The names a script sets before it evals warmup-plan's answer: those it reads of it."""
    text = (ROOT / "scripts" / script).read_text()
    block = text[text.index("# What it assigns"):text.index('eval "$plan_text"')]
    return set(re.findall(r"(?:^|\s)([a-z_]+)=", block))


def assigned(for_: str, args: list[str], names: set[str], env: dict[str, str], cwd: Path) -> set[str]:
    """The names of `names` that `warmup-plan --format sh --for FOR ARGS`, evaluated, assigns."""
    check = ('set -u; __plan=$("$PLAN" --format sh --for "$FOR" "$@") || exit 9; eval "$__plan"; '
             'for n in ' + " ".join(sorted(names)) + '; do ! declare -p "$n" >/dev/null 2>&1 || echo "$n"; done')
    done = subprocess.run(["bash", "-c", check, "check", *args], capture_output=True, text=True, cwd=cwd,
                          env={**env, "PLAN": tool("plan"), "FOR": for_}, timeout=HANG)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def decision_of(for_: str, args: list[str], env: dict[str, str], cwd: Path) -> str:
    text = subprocess.run([tool("plan"), "--format", "sh", "--for", for_, *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=HANG, check=True).stdout
    found = re.search(r"^(?:decision|mode)=(\S*)$", text, re.M)
    return found.group(1) if found else ""


def harness_path(work: Path) -> str:
    folder = work / "harness_path"
    (folder / "warmup_harness").mkdir(parents=True)
    (folder / "warmup_harness" / "__init__.py").write_text("")
    return str(folder)


def bench(*opts: str) -> list[str]:
    return ["--", sys.executable, "-m", "pytest", *opts, str(HARNESS), "--shape_file", str(EXAMPLE)]


def test_warmup_reads_only_names_warmup_plan_assigns_for_each_decision(tmp_path):
    triton = subprocess.run([sys.executable, "-c", "import triton; print(triton.__version__)"],
                            capture_output=True, text=True, check=True, timeout=HANG).stdout.strip()
    records = tmp_path / "records"
    records.mkdir()
    (records / "mm.json").write_text('{"mm_main": {}}')
    sidecar(records, triton=triton, device=H200)
    with_harness = {"PYTHONPATH": harness_path(tmp_path), "FLAGGEMS_PERF_CURRENT_OP": "mm"}
    cases = {
        "help": ([], ["--help"]),
        "plain": (["decision", "reason", "command"], bench()),
        "record": (["decision", "reason", "command"], ["--gpus", "1", *bench("-p", "warmup_harness")]),
        "reuse": (["decision", "reason", "command"],
                   ["--gpus", "2", "--devices", "0,1", *bench("-p", "warmup_harness")]),
        "sweep": (None, ["--gpus", "2", "--devices", "0,1", *bench()]),
    }
    names = declared("warmup")
    every = set()
    for decision, (needs, args) in cases.items():
        env = clean_env(**with_harness, FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(records),
                        WARMUP_PROBE_ROOT=str(driver_probe(tmp_path / decision)))
        if decision == "record":
            env["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"] = str(tmp_path / "new")
        if decision == "reuse":  # the sidecar names this run complete (its complete_for)
            planned = subprocess.run([tool("plan"), "--format", "json", "--for", "warmup", *args], cwd=tmp_path,
                                     env=env, capture_output=True, text=True, timeout=HANG, check=True)
            sidecar(records, triton=triton, device=H200, complete_for=json.loads(planned.stdout)["signature"])
        assert decision_of("warmup", args, env, tmp_path) == decision, args
        got = assigned("warmup", args, names, env, tmp_path)
        if decision == "help":
            needs = {"decision", "text"}
        elif needs is None:
            needs = names - {"text"}
        else:
            needs = set(needs)
        assert needs <= got, f"{decision}: the script reads {sorted(needs - got)}, which warmup-plan leaves unset"
        every |= got
    assert names <= every, f"scripts/warmup declares {sorted(names - every)}, which no decision assigns"


def test_warmup_slurm_reads_only_names_warmup_plan_assigns_for_each_mode(tmp_path):
    scratch = tmp_path / "s"
    made = run_tool("shard", "--out", scratch, "--shards", "2", "--op", "mm", "--", EXAMPLE)
    assert made.returncode == 0, made.stderr
    (scratch / "slurm").mkdir()
    (scratch / "slurm" / "shard.sbatch").write_text("#!/bin/bash\n")  # as a submission leaves it
    names = declared("warmup-slurm")
    cases = {
        "help": ({"text"}, ["--help"]),  # no mode: the script reads '' as help
        "submit": (names - {"text", "rerun"}, ["--scratch", str(tmp_path / "new"), "--shards", "2", *bench()]),
        "rerun": ({"mode", "scratch", "op", "record_dir", "wait_for_it", "rerun", "slurm_dir", "shard_script",
                   "finish_script", "jobs_file"}, ["--scratch", str(scratch), "--rerun", "0"]),
        "finish": ({"mode", "scratch", "op", "record_dir"}, ["--scratch", str(scratch), "--finish"]),
    }
    every = set()
    env = with_stand_in_sbatch(tmp_path, clean_env(FLAGGEMS_PERF_CURRENT_OP="mm"))
    for mode, (needs, args) in cases.items():
        assert decision_of("warmup-slurm", args, env, tmp_path) == mode, args
        got = assigned("warmup-slurm", args, names, env, tmp_path)
        assert needs <= got, f"{mode}: the script reads {sorted(needs - got)}, which warmup-plan leaves unset"
        every |= got
    assert names <= every, f"scripts/warmup-slurm declares {sorted(names - every)}, which no mode assigns"


@pytest.mark.parametrize("given", ["option", "variable"])
def test_warmup_slurm_refuses_a_record_folder_that_is_a_file_naming_what_gave_it(tmp_path, given):
    """--record-dir over the variable, as warmup-spawn takes them (protocol::env::record_folder),
    and the refusal names the one that gave it."""
    (tmp_path / "afile").write_text("")
    env = with_stand_in_sbatch(tmp_path, clean_env())
    option = ["--record-dir", "afile"] if given == "option" else []
    if given == "variable":
        env["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"] = "afile"
    else:
        env["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"] = str(tmp_path)  # read only where no option is given
    done = subprocess.run([tool("plan"), "--for", "warmup-slurm", "--scratch", str(tmp_path / "s"), *option, "--",
                           *bench()], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG)
    source = "--record-dir" if given == "option" else "FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"
    assert done.returncode == 2, done.stderr
    assert f"warmup-slurm: {source}={tmp_path / 'afile'}: {tmp_path / 'afile'} is not a folder but a file: " \
           "point it at the folder the op's record is published into" in done.stderr, done.stderr


@pytest.mark.parametrize("script", ["warmup", "warmup-slurm"])
def test_the_declared_names_are_found(script):
    assert {"shard_argv", "scratch"} <= declared(script)


# `-m NAME` names the op when NAME, trimmed, could name a marker (`@pytest.mark.NAME`): Python's
# own rule, against warmup-plan's (protocol/src/command.rs, `marker_name`).
MARKS = ["mm", "_x", "x1", "é", "Ωmega", "名前", "ａb", "match", "mm ", "\tmm", "1x", "a-b", "a.b", "·x",
         "x·", "True", "False", "None", "import", "and", "not", "yield", "mm or bmm", " "]


def test_a_marker_names_the_op_exactly_when_python_takes_it_for_an_identifier_and_no_keyword(tmp_path):
    shapes = tmp_path / "s.yaml"
    shapes.write_text("mm:\n  shapes:\n    - [1, 2]\n")
    for mark in MARKS:
        name = mark.strip()
        expected = name if name.isidentifier() and not keyword.iskeyword(name) else "default"
        text = subprocess.run(
            [tool("plan"), "--format", "sh", "--for", "warmup", "--gpus", "2", "--", sys.executable, "-m", "pytest",
             "bench.py", "-m", mark, "--shape_file", str(shapes)],  # a shape file: no test file stem
            capture_output=True, text=True, cwd=tmp_path, env=clean_env(), timeout=HANG, check=True).stdout
        op = subprocess.run(["bash", "-c", 'eval "$1"; printf %s "$op"', "op", text], capture_output=True,
                            text=True, check=True).stdout
        assert op == expected, (mark, text)


def test_warmup_and_warmup_slurm_name_the_same_op_for_the_same_command(tmp_path):
    """One rule (protocol::op::derive) for both drivers: the same COMMAND gets one record."""
    shapes = tmp_path / "s.yaml"
    shapes.write_text("mm:\n  shapes:\n    - [1, 2]\n    - [3, 4]\n")
    drivers = {"warmup": ["--gpus", "2"],
               "warmup-slurm": ["--scratch", str(tmp_path / "scratch"), "--shards", "2"]}
    for given, marker, expected in [({}, ["-m", "mm"], "mm"), ({}, ["-m", "mm or bmm"], "default"),
                                    ({"FLAGGEMS_PERF_CURRENT_OP": "addmm"}, ["-m", "mm"], "addmm")]:
        env = with_stand_in_sbatch(tmp_path, clean_env(**given))
        command = [sys.executable, "-m", "pytest", "bench.py", *marker, "--shape_file", str(shapes)]
        ops = {}
        for driver, args in drivers.items():
            text = subprocess.run([tool("plan"), "--format", "sh", "--for", driver, *args, "--", *command],
                                  capture_output=True, text=True, cwd=tmp_path, env=env, timeout=HANG)
            assert text.returncode == 0, (driver, text.stderr)
            ops[driver] = subprocess.run(["bash", "-c", 'eval "$1"; printf %s "$op"', "op", text.stdout],
                                         capture_output=True, text=True, check=True).stdout
        assert ops == {"warmup": expected, "warmup-slurm": expected}, (marker, given)
