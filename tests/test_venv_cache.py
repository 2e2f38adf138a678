"""tests/venv.sh, the test virtualenvs kept in a cache folder: made once per set of inputs, reused by
every clone, never a half-made one."""

import os
import subprocess
import sys
from pathlib import Path

from support import HANG, ROOT, clean_env

SCRIPT = ROOT / "tests" / "venv.sh"


def venv(tmp_path: Path, link: str, requirements: Path, *specs: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), str(tmp_path / link), sys.executable, str(requirements), *specs],
                          env=clean_env(PARALLEL_WARMUP_CACHE=str(tmp_path / "cache")),
                          capture_output=True, text=True, timeout=HANG)


def requirements(tmp_path: Path, name: str, text: str = "# nothing to install\n") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_same_inputs_reuse_one_virtualenv_and_other_inputs_get_their_own(tmp_path):
    reqs = requirements(tmp_path, "r.txt")
    # A .venv folder made before the cache is moved aside, not removed: a process may run from it.
    old = tmp_path / "a/.venv"
    (old / "bin").mkdir(parents=True)
    (old / "ready").write_text("")
    first = venv(tmp_path, "a/.venv", reqs)
    assert first.returncode == 0, first.stderr
    assert "making" in first.stderr, first.stderr
    aside = [p for p in old.parent.iterdir() if p.name.startswith(".venv.pre-cache.")]
    assert len(aside) == 1 and (aside[0] / "ready").exists(), first.stderr
    assert f"moved it to {aside[0]}" in first.stderr, first.stderr
    target = old.resolve()
    assert (target / ".complete").exists() and old.is_symlink()
    # Another clone, same inputs: linked to the same folder, nothing made.
    again = venv(tmp_path, "b/.venv", reqs)
    assert again.returncode == 0 and "making" not in again.stderr, again.stderr
    assert (tmp_path / "b/.venv").resolve() == target
    # A changed requirements file is another virtualenv; the first stays for whoever uses it.
    reqs.write_text("# nothing to install, said differently\n")
    changed = venv(tmp_path, "b/.venv", reqs)
    assert changed.returncode == 0 and "making" in changed.stderr, changed.stderr
    assert (tmp_path / "b/.venv").resolve() != target and target.exists()
    # The scripts a virtualenv holds name the folder they are in: it never moved.
    pip = "\n".join((tmp_path / "b/.venv/bin/pip").read_text().splitlines()[:3])
    assert f"{(tmp_path / 'b/.venv').resolve()}/bin/python" in pip, pip


def test_a_killed_or_damaged_build_is_never_used_and_the_next_build_removes_it(tmp_path):
    reqs = requirements(tmp_path, "r.txt")
    made = venv(tmp_path, ".venv", reqs)
    assert made.returncode == 0, made.stderr
    link = Path(os.readlink(tmp_path / ".venv"))
    published = link.parent / os.readlink(link)
    # What a build killed half-way leaves: its folder, with no link naming it. And a published
    # one that lost its completion mark.
    half = link.parent / f"{link.name}.d.killed"
    (half / "bin").mkdir(parents=True)
    (published / ".complete").unlink()
    redo = venv(tmp_path, ".venv", reqs)
    assert redo.returncode == 0 and "making" in redo.stderr, redo.stderr
    assert not half.exists() and not published.exists(), "both are removed"
    assert (tmp_path / ".venv/.complete").exists()
    assert sorted(p.name for p in link.parent.glob(f"{link.name}.d.*")) == [os.readlink(link)]


def test_a_requirements_file_that_is_missing_or_cannot_be_installed_publishes_nothing(tmp_path):
    missing = venv(tmp_path, ".venv", tmp_path / "nope.txt")
    assert missing.returncode == 1 and "nope.txt: no such file" in missing.stderr, missing.stderr
    bad = venv(tmp_path, ".venv", requirements(tmp_path, "r.txt", "./no-such-project-here\n"))
    assert bad.returncode == 1 and "nothing was published" in bad.stderr, bad.stderr
    assert not (tmp_path / ".venv").exists()
    assert not [p for p in (tmp_path / "cache").iterdir() if p.is_symlink()]
