"""make install: the tools, the scripts, man pages and completions land under DESTDIR/PREFIX and
work."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from support import BIN_DIR, HANG, ROOT, clean_env

TOOLS = ["warmup-shard", "warmup-spawn", "warmup-merge", "warmup-publish", "warmup-costs", "warmup-plan",
         "warmup-cache"]
SCRIPTS = ["warmup", "warmup-slurm"]


def options_in_help(program: Path) -> set[str]:
    """Every long option a script's --help lists (clap's layout: `  -h, --help`, `      --NAME`)."""
    text = subprocess.run([str(program), "--help"], capture_output=True, text=True, check=True).stdout
    options = text[text.index("\nOptions:\n"):]
    return set(re.findall(r"^ {2,6}(?:-[a-zA-Z], )?(--[a-z][a-z-]*)", options, re.MULTILINE))


def test_install_puts_tools_scripts_man_pages_and_completions_under_destdir_prefix(tmp_path):
    destdir, prefix_arg = tmp_path / "dest dir", "/pre fix"
    prefix = Path(f"{destdir}{prefix_arg}")
    # HARNESS_PYTHON= : the harness's pip install is test_harness.py's to cover, not this Python's.
    subprocess.run(["make", "-s", "install", f"DESTDIR={destdir}", f"PREFIX={prefix_arg}",
                    f"RELEASE={BIN_DIR}", "HARNESS_PYTHON="],
                   cwd=ROOT, env=clean_env(), check=True, capture_output=True, text=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dest dir"], "all of it under DESTDIR"
    for script in SCRIPTS:
        assert (prefix / "bin" / script).stat().st_mode & 0o111
        options = options_in_help(ROOT / "scripts" / script)
        assert {"--scratch", "--help"} <= options, options
        page = prefix / "share/man/man1" / f"{script}.1"
        roff = page.read_text()
        # Generated from warmup-plan's clap definitions, as the tools' are (clap_mangen's preamble first).
        assert f"\n.TH {script.upper()} 1 " in roff, roff[:200]
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS"):  # clap_mangen's
            assert f"\n.SH {section}\n" in roff, (section, roff[:400])
        for section in ("EXIT STATUS", "EXAMPLES"):  # the help's, lines as written
            assert f'\n.SH "{section}"\n.nf\n' in roff, (section, roff[:400])
        # A version, and a synopsis that shows each option's value (issue 29).
        version = subprocess.run([str(prefix / "bin" / script), "--version"], env=clean_env(),
                                 capture_output=True, text=True, timeout=HANG)
        assert version.returncode == 0 and re.fullmatch(rf"{script} \d+\.\d+\.\d+\n", version.stdout)
        assert f"\n.SH VERSION\nv{version.stdout.split()[1]}\n" in roff, roff
        synopsis = roff.split("\n.SH SYNOPSIS\n", 1)[1].split("\n", 1)[0]
        assert "[\\-\\-scratch DIR]" in synopsis and "[\\-\\-timeout SECS]" in synopsis, synopsis
        # clap_mangen's option lines: `\fB\-h\fR, \fB\-\-help\fR`, `\fB\-\-gpus\fR \fI<N>\fR`.
        listed = re.findall(r"^\\fB(?:\\-[a-zA-Z]\\fR, \\fB)?\\-\\-([a-z](?:[a-z]|\\-)*)\\fR", roff,
                            re.MULTILINE)
        assert {"--" + o.replace("\\-", "-") for o in listed} == options
        if shutil.which("man"):
            man = subprocess.run(["man", "-l", str(page)], env=clean_env(MANWIDTH="200"),
                                 capture_output=True, text=True)
            assert man.returncode == 0 and "EXIT STATUS" in man.stdout, man.stderr
        zsh = (prefix / "share/zsh/site-functions" / f"_{script}").read_text()
        fish = (prefix / "share/fish/vendor_completions.d" / f"{script}.fish").read_text()
        bash = prefix / "share/bash-completion/completions" / script
        assert zsh.startswith(f"#compdef {script}\n")
        # Each completion offers every option the help lists, and nothing it does not.
        # zsh lists an option's conflicts before it: '(--entry --strategy)--by-key[...]'.
        assert set(re.findall(r"'\*?(?:\([^)]*\))?(--[a-z-]+)[=\[]", zsh)) | {"--help"} == options
        assert {f"--{o}" for o in re.findall(r" -l ([a-z-]+)", fish)} == options
        probe = subprocess.run(
            ["bash", "-c", f'source "{bash}" && complete -p {script} && COMP_WORDS=({script} --)'
                           f' COMP_CWORD=1 && _{script.replace("-", "__")} {script} -- {script}'  # as bash calls it
                           f' && printf "%s\\n" "${{COMPREPLY[@]}}"'],
            capture_output=True, text=True)
        assert probe.returncode == 0 and script in probe.stdout, probe.stderr
        assert set(probe.stdout.splitlines()[1:]) - {"--"} == options, probe.stdout
    contract = prefix / "share/doc/parallel-warmup/CONTRACT.md"
    assert contract.read_text() == (ROOT / "docs" / "CONTRACT.md").read_text()
    statuses = {}
    for tool in TOOLS:
        assert (prefix / "bin" / tool).stat().st_mode & 0o111
        man = (prefix / "share/man/man1" / f"{tool}.1").read_text()
        assert man.startswith(".ie") or ".TH" in man, man[:200]
        assert f"{tool}" in man and "EXIT STATUS" in man
        # Examples and exit statuses are sections of their own, their lines as written (no fill).
        assert ".SH EXTRA" not in man and '\n.SH "EXAMPLES"\n.nf\n' in man, man
        statuses[tool] = man.split('.SH "EXIT STATUS"\n', 1)[1].split(".fi\n", 1)[0]
        # The contract is cited where it was installed, never at its place in the repository.
        assert "docs/CONTRACT.md" not in man
        assert "scripts/warmup" not in man, "the script is named as installed: warmup"
        assert f"{prefix_arg}/share/doc/parallel\\-warmup/CONTRACT.md".replace("-", "\\-") in man \
            or f"{prefix_arg}/share/doc/parallel\\-warmup/CONTRACT.md" in man, man[-600:]
        if shutil.which("man"):
            shown = subprocess.run(["man", "-l", str(prefix / "share/man/man1" / f"{tool}.1")],
                                   env=clean_env(MANWIDTH="200"), capture_output=True, text=True).stdout
            assert f"  {tool} " in shown.split("EXAMPLES", 1)[1], "an example line kept whole"
        assert (prefix / "share/zsh/site-functions" / f"_{tool}").read_text().startswith("#compdef")
        assert f"complete -c {tool}" in (
            prefix / "share/fish/vendor_completions.d" / f"{tool}.fish").read_text()
        bash = prefix / "share/bash-completion/completions" / tool
        probe = subprocess.run(["bash", "-c", f'source "{bash}" && complete -p {tool}'],
                               capture_output=True, text=True)
        assert probe.returncode == 0 and tool in probe.stdout, probe.stderr

    # Every page a page cites is installed, and SEE ALSO reads alike on the tools' and the scripts'
    # pages, the contract where it was installed (issue 42: warmup-cache.1 cited four pages that
    # are not, and the scripts' pages gave the contract no path).
    def unroff(text: str) -> str:
        return text.replace("\\-", "-").replace("\\fB", "").replace("\\fR", "")

    pages = {p.stem: unroff(p.read_text()) for p in (prefix / "share/man/man1").glob("*.1")}
    assert set(pages) == set(TOOLS) | set(SCRIPTS), sorted(pages)
    contracts = set()
    for name, text in pages.items():
        assert set(re.findall(r"([a-z][a-z-]*)\(1\)", text)) <= set(pages), name
        names, contract = text.split('.SH "SEE ALSO"\n', 1)[1].split("\n.PP\n", 1)
        assert set(re.findall(r"([a-z][a-z-]*)\(1\)", names)) | {name} == set(pages), name
        contracts.add(contract)
    assert len(contracts) == 1 and f"{prefix_arg}/share/doc/parallel-warmup/CONTRACT.md" in contracts.pop()
    assert "warmup-cache SUBCOMMAND --help" in pages["warmup-cache"]

    # Each tool states its own statuses: warmup-costs' 3 is not warmup-merge's.
    assert "would not save 10%" in statuses["warmup-costs"] and "10%" not in statuses["warmup-merge"]
    assert "128+N" in statuses["warmup-spawn"] and "128+N" not in statuses["warmup-shard"]

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


def test_a_script_run_through_a_link_finds_its_library_beside_the_file_it_links_to(tmp_path):
    # `ln -s .../scripts/warmup ~/bin/warmup`: a link to a link, the second one relative.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for script in SCRIPTS:
        (tmp_path / f"{script}-first").symlink_to(ROOT / "scripts" / script)
        (bin_dir / script).symlink_to(Path("..") / f"{script}-first")
        run = subprocess.run([str(bin_dir / script), "--help"], env=clean_env(WARMUP_BIN_DIR=str(BIN_DIR)),
                             cwd=tmp_path, capture_output=True, text=True, timeout=HANG)
        assert run.returncode == 0 and run.stderr == "", run.stderr
        assert "\nOptions:\n" in run.stdout, run.stdout[:400]
