"""make install: the tools, the script, man pages and completions land under PREFIX and work."""

from __future__ import annotations

import subprocess
import sys

from support import BIN_DIR, HANG, ROOT, clean_env

TOOLS = ["warmup-shard", "warmup-spawn", "warmup-merge", "warmup-publish", "warmup-costs"]


def test_install_puts_tools_script_man_pages_and_completions_under_prefix(tmp_path):
    prefix = tmp_path / "pre fix"
    # HARNESS_PYTHON= : the harness's pip install is test_harness.py's to cover, not this Python's.
    subprocess.run(["make", "-s", "install", f"PREFIX={prefix}", f"RELEASE={BIN_DIR}", "HARNESS_PYTHON="],
                   cwd=ROOT, env=clean_env(), check=True, capture_output=True, text=True)
    for tool in TOOLS:
        assert (prefix / "bin" / tool).stat().st_mode & 0o111
        man = (prefix / "share/man/man1" / f"{tool}.1").read_text()
        assert man.startswith(".ie") or ".TH" in man, man[:200]
        assert f"{tool}" in man and "EXIT STATUS" in man
        assert (prefix / "share/zsh/site-functions" / f"_{tool}").read_text().startswith("#compdef")
        assert f"complete -c {tool}" in (
            prefix / "share/fish/vendor_completions.d" / f"{tool}.fish").read_text()
        bash = prefix / "share/bash-completion/completions" / tool
        probe = subprocess.run(["bash", "-c", f'source "{bash}" && complete -p {tool}'],
                               capture_output=True, text=True)
        assert probe.returncode == 0 and tool in probe.stdout, probe.stderr

    # The installed script finds the installed tools beside it, with nothing else on hand.
    trace = tmp_path / "trace.jsonl"
    env = clean_env(WARMUP_FIXTURE_TRACE=str(trace), FLAGGEMS_PERF_CURRENT_OP="mm", FLAGGEMS_VENDOR="nvidia",
                    WARMUP_FIXTURE_SWEEP_SECONDS="0", TMPDIR=str(tmp_path),
                    FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=str(tmp_path / "rec"))
    env.pop("WARMUP_BIN_DIR", None)
    run = subprocess.run(
        [str(prefix / "bin" / "warmup"), "--gpus", "2", "--devices", "0,1", "--",
         sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         str(ROOT / "tests/harness/test_bench.py"), "--shape_file", str(ROOT / "examples/shapes.yaml")],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=HANG)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "rec" / "mm.json").is_file()
    assert "sweep done" in run.stderr
