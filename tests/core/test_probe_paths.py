"""The probe's ``real_file``: ``os.path.realpath`` with each folder resolved once per process."""

from __future__ import annotations

import os

from equisa_core.probe import equisa_probe
from equisa_core.probe.equisa_probe import real_file


def test_real_file_resolves_as_realpath_does_through_linked_folders_and_files(tmp_path, monkeypatch):
    (tmp_path / "real" / "pkg").mkdir(parents=True)
    (tmp_path / "real" / "pkg" / "mod.py").write_text("x = 1\n")
    (tmp_path / "real" / "pkg" / "target.py").write_text("y = 2\n")
    os.symlink(tmp_path / "real", tmp_path / "linked")
    os.symlink(tmp_path / "real" / "pkg" / "target.py", tmp_path / "real" / "pkg" / "alias.py")
    monkeypatch.chdir(tmp_path)
    paths = [
        str(tmp_path / "linked" / "pkg" / "mod.py"),      # a linked folder
        str(tmp_path / "linked" / "pkg" / "alias.py"),    # a linked file in a linked folder
        str(tmp_path / "real" / "pkg" / "mod.py"),        # nothing linked
        str(tmp_path / "linked" / "pkg" / "absent.py"),   # not there (yet)
        str(tmp_path / "linked" / "pkg" / ".." / "pkg" / "mod.py"),
        "linked/pkg/mod.py",                               # relative: the working directory's
        str(tmp_path / "linked" / "pkg") + os.sep,
    ]
    for path in paths:
        assert real_file(path) == os.path.realpath(path), path
        assert real_file(path) == os.path.realpath(path), path  # from the folder cache
    assert str(tmp_path / "linked" / "pkg") in equisa_probe._REAL_FOLDERS
    assert not any(not os.path.isabs(folder) for folder in equisa_probe._REAL_FOLDERS)
