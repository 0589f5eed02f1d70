"""Where run folders go: ``$EQUISA_SCRATCH``, else a RAM-backed tmpfs with room, else the system's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.sandbox.scratch import SCRATCH_ENV, is_tmpfs, scratch_root


def _mounts(tmp_path: Path, *rows: str) -> Path:
    table = tmp_path / "mounts"
    table.write_text("".join(row + "\n" for row in rows))
    return table


def test_a_tmpfs_mount_point_is_told_from_a_disk_and_from_a_folder_under_it(tmp_path):
    table = _mounts(tmp_path, "/dev/vda / ext4 rw 0 0", "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0",
                    "tmpfs /run tmpfs rw 0 0")
    assert is_tmpfs(Path("/dev/shm"), table)
    assert not is_tmpfs(Path("/"), table)
    assert not is_tmpfs(Path("/dev/shm/sub"), table)
    assert not is_tmpfs(Path("/dev/shm"), tmp_path / "no-such-table")


def test_the_environment_names_the_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(SCRATCH_ENV, str(tmp_path))
    assert scratch_root(ram=tmp_path / "not-a-tmpfs") == tmp_path


def test_a_folder_that_is_no_tmpfs_is_not_chosen(tmp_path, monkeypatch):
    monkeypatch.delenv(SCRATCH_ENV, raising=False)
    assert scratch_root(ram=tmp_path) is None  # the system's temporary folder


@pytest.mark.skipif(not is_tmpfs(Path("/dev/shm")), reason="/dev/shm is not a tmpfs on this machine")
def test_dev_shm_is_chosen_with_room_and_left_when_it_is_short(monkeypatch):
    monkeypatch.delenv(SCRATCH_ENV, raising=False)
    assert scratch_root(min_free=1) == Path("/dev/shm")
    assert scratch_root(min_free=1 << 60) is None  # no tmpfs has an exbibyte free
