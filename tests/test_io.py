"""atomic_write: atomic, refuses silent overwrites, keeps the user's file on refusal."""

import pytest

from attnsym import OutputError, OverwriteError
from attnsym._io import atomic_write


def test_refuses_overwrite_and_keeps_content(tmp_path):
    target = tmp_path / "sub" / "f.txt"
    atomic_write(target, "first")
    with pytest.raises(OverwriteError, match="exists; pass overwrite=True"):
        atomic_write(target, "second")
    assert target.read_text() == "first"
    atomic_write(target, b"third", overwrite=True)
    assert target.read_text() == "third"
    assert [p.name for p in target.parent.iterdir()] == ["f.txt"]  # no temp files left behind


def test_directory_target_is_an_error(tmp_path):
    for overwrite in (False, True):
        with pytest.raises(OutputError, match="is a directory; attnsym replaces only regular files"):
            atomic_write(tmp_path, "x", overwrite=overwrite)


def test_written_file_gets_the_ordinary_permissions(tmp_path):
    import os

    mask = os.umask(0o022)
    try:
        path = atomic_write(tmp_path / "f.txt", "x")
        reference = tmp_path / "plain.txt"
        reference.write_text("x")
    finally:
        os.umask(mask)
    assert path.stat().st_mode & 0o777 == reference.stat().st_mode & 0o777 == 0o644


def test_unwritable_folder_error_names_the_requested_file(tmp_path, monkeypatch):
    # The error named the hidden temporary file (".a.md.x1y2.tmp"), not the file the user asked for.
    import errno
    import tempfile

    def refuse(*args, dir=None, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", f"{dir}/.a.md.x1y2.tmp")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(OutputError, match=r"cannot write .*a\.md: Permission denied") as info:
        atomic_write(tmp_path / "a.md", "x")
    assert ".tmp" not in str(info.value)
    assert info.value.errno == errno.EACCES and isinstance(info.value, OSError)
    assert not (tmp_path / "a.md").exists()
