"""The claim folder of by-key mode on a full disk (harness/warmup_harness/autotune/claims.py): a folder
with no room is refused up front, as a read-only one is (exit 4), and a disk that fills later
never fails a test: the key is tuned and recorded without a claim, no empty claim file is left,
and the caller is told once."""

from __future__ import annotations

import errno
import os
import sys

import pytest

from support import ROOT

sys.path.insert(0, str(ROOT / "harness"))

from warmup_harness.autotune import claims  # noqa: E402


def full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EDQUOT])
def test_a_claim_folder_with_no_room_is_a_usage_error_up_front(tmp_path, monkeypatch, err):
    def no_room(*args, **kwargs):
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(os, "write", no_room)
    with pytest.raises(claims.ClaimError) as refused:
        claims.Claims(tmp_path / "claims")
    assert str(tmp_path / "claims") in str(refused.value)
    assert os.strerror(err) in str(refused.value)
    assert issubclass(claims.ClaimError, claims.ProtocolError)  # pytest's usage error, exit 4
    monkeypatch.undo()
    assert os.listdir(tmp_path / "claims") == [], "the check leaves nothing"


@pytest.mark.parametrize("where", ["pwrite", "open"])
def test_a_disk_that_fills_later_tunes_the_key_unclaimed_leaves_no_claim_and_warns_once(
        tmp_path, monkeypatch, where):
    folder = claims.Claims(tmp_path / "claims")
    real_open = os.open

    def open_no_claim(path, flags, *args, **kwargs):
        if str(path).endswith(".claim") and flags & os.O_CREAT:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "pwrite", full) if where == "pwrite" else monkeypatch.setattr(os, "open", open_no_claim)
    held = folder.take("k", "[1]")
    assert held is not None and held.fd is None, "the key is this process's to tune"
    assert not list((tmp_path / "claims").glob("*.claim")), "no empty claim file is left"
    again = folder.take("k", "[2]")
    monkeypatch.undo()
    with pytest.raises(OSError) as told:
        folder.publish(held, "k", "[1]", {"kwargs": {}}, 1.0, str(tmp_path / "rec"))
    assert "without claims" in str(told.value)
    folder.publish(again, "k", "[2]", {"kwargs": {}}, 1.0, str(tmp_path / "rec"))  # said once
    assert folder.winner("k", "[1]") is None


def test_a_winner_with_no_room_warns_once_and_lets_the_claim_go(tmp_path, monkeypatch):
    folder = claims.Claims(tmp_path / "claims")
    first, second = folder.take("k", "[1]"), folder.take("k", "[2]")
    assert first.fd is not None and second.fd is not None
    monkeypatch.setattr(claims.atomic, "write_bytes", full)
    with pytest.raises(OSError):
        folder.publish(first, "k", "[1]", {"kwargs": {}}, 1.0, "rec")
    folder.publish(second, "k", "[2]", {"kwargs": {}}, 1.0, "rec")
    monkeypatch.undo()
    # Both claims were let go: a re-run takes them over (their holder published nothing).
    assert folder.take("k", "[1]").taken_from == os.getpid()


def test_other_errors_still_raise(tmp_path, monkeypatch):
    folder = claims.Claims(tmp_path / "claims")

    def denied(*args, **kwargs):
        raise OSError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(os, "pwrite", denied)
    with pytest.raises(OSError) as raised:
        folder.take("k", "[1]")
    assert raised.value.errno == errno.EACCES


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_winner_that_is_a_fifo_or_a_device_is_no_winner_and_is_not_waited_on(tmp_path, kind):
    folder = claims.Claims(tmp_path / "claims")
    path = tmp_path / "claims" / f"{claims.claim_name('k', '[1]')}.winner.json"
    os.mkfifo(path) if kind == "fifo" else path.symlink_to("/dev/zero")
    assert folder.winner("k", "[1]") is None  # before: blocked on the FIFO, read /dev/zero without end


def test_a_link_planted_in_the_claim_folder_is_refused_and_never_written_through(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / ".lock").symlink_to(tmp_path / "made")
    with pytest.raises(claims.ClaimError, match=r"claims/\.lock is a symbolic link, which the harness never "
                                                r"writes through"):
        claims.Claims(tmp_path / "claims")
    assert not (tmp_path / "made").exists(), "a file was made where the link points"
    (tmp_path / "claims" / ".lock").unlink()
    folder = claims.Claims(tmp_path / "claims")
    (tmp_path / "claims" / f"{claims.claim_name('k', '[1]')}.claim").symlink_to(victim)
    with pytest.raises(OSError, match="is a symbolic link, which the harness never writes through"):
        folder.take("k", "[1]")
    assert victim.read_text() == "precious"
