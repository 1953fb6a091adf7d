"""atomic_write: atomic, refuses silent overwrites, keeps the user's file on refusal."""

import os
import subprocess
import sys

import pytest

from attnsym import OutputError, OverwriteError, SpecError
from attnsym._io import atomic_write, refuse_existing, staged_directory


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


# ----------------------------------------------------------------------------- only regular files are replaced


def _dead_pid() -> int:
    """The id of a process that has finished (and been reaped)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(proc.stdout)


def _specials(tmp_path):
    """Non-regular files at a destination: a symlink (to a file and dangling), a FIFO, a folder, a device."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    made = {"symlink": tmp_path / "link.txt", "dangling": tmp_path / "dangling.txt", "fifo": tmp_path / "pipe",
            "directory": tmp_path / "folder"}
    made["symlink"].symlink_to(victim)
    made["dangling"].symlink_to(tmp_path / "nowhere")
    os.mkfifo(made["fifo"])
    made["directory"].mkdir()
    try:
        import stat

        os.mknod(tmp_path / "null", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        made["device"] = tmp_path / "null"
    except (PermissionError, OSError):  # not root: no device node to test with
        pass
    return victim, made


@pytest.mark.parametrize("overwrite", [False, True])
def test_force_never_replaces_what_is_not_a_regular_file(tmp_path, overwrite):
    victim, made = _specials(tmp_path)
    for kind, path in made.items():
        before = os.lstat(path)
        with pytest.raises(OutputError, match="attnsym replaces only regular files"):
            atomic_write(path, "replacement", overwrite=overwrite)
        after = os.lstat(path)
        assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino), kind
    assert victim.read_text() == "precious"  # the link's target was not written through either
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_overwrite_must_be_a_bool(tmp_path):
    target = tmp_path / "a.txt"
    target.write_text("keep")
    for value in ("no", "yes", 1, 0, None):
        with pytest.raises(SpecError, match="overwrite must be True or False"):
            atomic_write(target, "x", overwrite=value)
        with pytest.raises(SpecError, match="overwrite must be True or False"):
            refuse_existing(target, overwrite=value)
    assert target.read_text() == "keep"


def test_a_parent_that_is_a_file_is_named(tmp_path):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(OutputError, match=r"cannot write .*afile/x\.md: .*afile is a regular file, not a folder"):
        atomic_write(tmp_path / "afile" / "x.md", "y")
    with pytest.raises(OutputError, match="not a folder"):
        with staged_directory(tmp_path / "afile" / "sub"):
            pass


def test_refuse_existing_lists_the_existing_files(tmp_path):
    paths = [tmp_path / f"{k}.txt" for k in range(3)]
    for p in paths[:2]:
        p.write_text("x")
    with pytest.raises(OverwriteError, match=r"0\.txt exists \(and 1 more\); pass overwrite=True") as info:
        refuse_existing(paths, overwrite=False)
    assert info.value.paths == tuple(paths[:2])
    assert refuse_existing(paths, overwrite=True) == paths


def test_stale_temporaries_of_killed_writers_are_removed(tmp_path):
    target = tmp_path / "big.graphml"
    dead = tmp_path / f".big.graphml.attnsym-{_dead_pid()}-abc123.tmp"
    dead.write_bytes(b"x" * 1000)  # what a SIGKILL mid-export leaves behind
    live = tmp_path / f".big.graphml.attnsym-{os.getppid()}-def456.tmp"  # a writer that still runs
    live.write_bytes(b"y")
    other = tmp_path / ".big.graphml.someone-else.tmp"  # not of our naming
    other.write_bytes(b"z")
    atomic_write(target, "data")
    assert not dead.exists() and live.exists() and other.exists()
    assert target.read_text() == "data"


def test_a_killed_writer_really_leaves_a_temporary_that_the_next_write_removes(tmp_path):
    # a child process is SIGKILLed while its temporary exists; the next write cleans up after it
    script = (
        "import os, signal, tempfile, sys\n"
        "from attnsym import _io\n"
        f"fd, tmp = tempfile.mkstemp(prefix=_io._temp_prefix('out.json'), suffix='.tmp', dir={str(tmp_path)!r})\n"
        "os.write(fd, b'partial'); os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": os.getcwd()}, check=False)
    assert proc.returncode == -9
    assert len(list(tmp_path.glob(".out.json.attnsym-*.tmp"))) == 1
    atomic_write(tmp_path / "out.json", "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_staged_directory_appears_complete_or_not_at_all(tmp_path):
    out = tmp_path / "set"
    with pytest.raises(RuntimeError):
        with staged_directory(out) as stage:
            atomic_write(stage / "one.txt", "1")
            raise RuntimeError("interrupted half-way")
    assert not out.exists() and list(tmp_path.iterdir()) == []  # nothing, not half a set
    with staged_directory(out) as stage:
        atomic_write(stage / "one.txt", "1")
        atomic_write(stage / "two" / "two.txt", "2")
        assert not out.exists()  # nothing visible until the set is complete
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == ["one.txt", "two/two.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["set"]


def test_staged_directory_into_a_non_empty_folder(tmp_path):
    out = tmp_path / "set"
    out.mkdir()
    (out / "mine.txt").write_text("the user's")
    (out / "one.txt").write_text("old")
    with pytest.raises(OverwriteError, match="not empty"):
        with staged_directory(out):
            pass
    with staged_directory(out, overwrite=True) as stage:
        atomic_write(stage / "one.txt", "new")
    assert (out / "one.txt").read_text() == "new" and (out / "mine.txt").read_text() == "the user's"
    # a destination that is not a regular file stops the move before anything is replaced
    (out / "two.txt").symlink_to(out / "mine.txt")
    with pytest.raises(OutputError, match="symbolic link"):
        with staged_directory(out, overwrite=True) as stage:
            atomic_write(stage / "one.txt", "newer")
            atomic_write(stage / "two.txt", "2")
    assert (out / "one.txt").read_text() == "new" and (out / "mine.txt").read_text() == "the user's"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_killed_staging_folder_is_removed_by_the_next_run(tmp_path):
    stale = tmp_path / f".set.attnsym-{_dead_pid()}-xyz.tmp"
    (stale / "figures").mkdir(parents=True)
    (stale / "figures" / "a.png").write_bytes(b"partial")
    with staged_directory(tmp_path / "set") as stage:
        atomic_write(stage / "a.txt", "a")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["set"]
