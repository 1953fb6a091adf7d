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


# ----------------------------------------------------------------------------- a result folder: whole or not at all


def _tree(folder):
    """Relative path -> bytes (files) or what the entry is (links, FIFOs, folders), without following links."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            out[rel] = f"link to {os.readlink(path)}"
        elif path.is_fifo():
            out[rel] = "fifo"
        elif path.is_dir():
            out[rel] = "folder"
        else:
            out[rel] = path.read_bytes()
    return out


def _users_folder(tmp_path):
    """A result folder a user has been working in: an old set, notes, a link, a FIFO, a folder of their own."""
    out = tmp_path / "out"
    (out / "text1").mkdir(parents=True)
    (out / "report.md").write_text("old report")
    (out / "text1" / "route.json").write_text("old route")
    (out / "notes.txt").write_text("the user's notes")
    (out / "mine").mkdir()
    (out / "mine" / "data.csv").write_text("1,2")
    (out / "shortcut").symlink_to(tmp_path / "elsewhere")
    os.mkfifo(out / "pipe")
    return out


def _new_set(stage):
    atomic_write(stage / "report.md", "new report")
    atomic_write(stage / "text1" / "route.json", "new route")
    atomic_write(stage / "text1" / "heatmaps.png", b"png")


def test_two_overlapping_runs_the_second_to_finish_refuses_and_the_first_set_stays(tmp_path):
    # both start while the folder is absent (each passes the check on entry); the one that finishes first
    # puts its set in place; the other must refuse at its move, not merge into or replace the first's files
    out = tmp_path / "out"
    with pytest.raises(OverwriteError, match="filled by someone else while this run was writing"):
        with staged_directory(out) as late:
            atomic_write(late / "report.md", "late")
            with staged_directory(out) as early:
                atomic_write(early / "report.md", "early")
                atomic_write(early / "text1" / "route.json", "early")
            atomic_write(late / "text1" / "route.json", "late")
    assert _tree(out) == {"report.md": b"early", "text1": "folder", "text1/route.json": b"early"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # the refused run's stage is gone


def test_an_empty_folder_filled_meanwhile_is_refused_too(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(OverwriteError, match="filled by someone else"):
        with staged_directory(out) as stage:
            atomic_write(stage / "a.txt", "ours")
            (out / "theirs.txt").write_text("theirs")
    assert _tree(out) == {"theirs.txt": b"theirs"}


def test_force_swaps_in_the_whole_set_and_keeps_everything_else(tmp_path):
    out = _users_folder(tmp_path)
    kept = {name: os.lstat(out / name).st_ino for name in ("notes.txt", "shortcut", "pipe", "mine/data.csv")}
    before = _tree(out)
    with staged_directory(out, overwrite=True) as stage:
        _new_set(stage)
        assert _tree(out) == before  # nothing of the user's is touched until the swap
    after = _tree(out)
    assert after == {**before, "report.md": b"new report", "text1/route.json": b"new route", "text1/heatmaps.png": b"png"}
    # the kept entries are the user's own (hard links, not copies; the link and the FIFO are still a link and a FIFO)
    assert {name: os.lstat(out / name).st_ino for name in kept} == kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize("fails_at", ["second rename", "exchange"])
def test_an_interrupt_between_the_renames_leaves_the_users_folder_whole(tmp_path, monkeypatch, fails_at):
    from attnsym import _io

    out = _users_folder(tmp_path)
    before = _tree(out)
    real_replace, calls = os.replace, []

    def replace_once(src, dst):  # the first rename happens, the next one is interrupted
        calls.append((src, dst))
        if len(calls) > 1:
            raise KeyboardInterrupt
        return real_replace(src, dst)

    if fails_at == "second rename":  # the fallback of systems without an atomic exchange
        monkeypatch.setattr(_io, "_exchange", lambda a, b: False)
        monkeypatch.setattr(os, "replace", replace_once)
    else:
        def interrupted(a, b):
            raise KeyboardInterrupt

        monkeypatch.setattr(_io, "_exchange", interrupted)
    with pytest.raises(KeyboardInterrupt):
        with staged_directory(out, overwrite=True) as stage:
            _new_set(stage)
    assert _tree(out) == before
    assert len(calls) == (2 if fails_at == "second rename" else 0)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_the_two_rename_fallback_completes(tmp_path, monkeypatch):
    from attnsym import _io

    monkeypatch.setattr(_io, "_exchange", lambda a, b: False)
    out = _users_folder(tmp_path)
    with staged_directory(out, overwrite=True) as stage:
        _new_set(stage)
    assert _tree(out)["report.md"] == b"new report" and _tree(out)["notes.txt"] == b"the user's notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_folder_a_killed_swap_moved_aside_is_put_back_by_the_next_run(tmp_path):
    out = _users_folder(tmp_path)
    before = _tree(out)
    aside = tmp_path / f".out.attnsym-{_dead_pid()}-abc.old"
    os.rename(out, aside)  # SIGKILL between the two renames of the fallback
    with pytest.raises(OverwriteError, match="not empty"):  # put back first, then the rule applies to it
        with staged_directory(out):
            pass
    assert _tree(out) == before and not aside.exists()


def test_force_never_writes_through_a_symlinked_subfolder(tmp_path):
    out = _users_folder(tmp_path)
    (tmp_path / "mydir" / "text1").mkdir(parents=True)
    (tmp_path / "mydir" / "text1" / "route.json").write_text("the user's own route")
    import shutil

    shutil.rmtree(out / "text1")
    (out / "text1").symlink_to(tmp_path / "mydir" / "text1")
    before = _tree(out)
    with pytest.raises(OutputError, match=r"text1 is a symbolic link, not a folder; attnsym never writes through a link"):
        with staged_directory(out, overwrite=True) as stage:
            _new_set(stage)
    assert _tree(out) == before
    assert (tmp_path / "mydir" / "text1" / "route.json").read_text() == "the user's own route"
    assert sorted(p.name for p in (tmp_path / "mydir" / "text1").iterdir()) == ["route.json"]


@pytest.mark.parametrize("overwrite", [False, True])
def test_an_output_folder_that_is_a_symlink_is_refused_before_any_work(tmp_path, overwrite):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "out").symlink_to(real)
    with pytest.raises(OutputError, match="is a symbolic link; attnsym never writes through a link"):
        with staged_directory(tmp_path / "out", overwrite=overwrite):
            raise AssertionError("no work starts")
    assert list(real.iterdir()) == []


def test_a_folder_replaced_by_a_link_meanwhile_is_not_written_through(tmp_path):
    out, real = tmp_path / "out", tmp_path / "real"
    real.mkdir()
    (real / "keep.txt").write_text("keep")
    with pytest.raises(OutputError, match="symbolic link"):
        with staged_directory(out, overwrite=True) as stage:
            atomic_write(stage / "keep.txt", "replaced?")
            out.symlink_to(real)
    assert (real / "keep.txt").read_text() == "keep" and out.is_symlink()


def test_the_working_folder_is_refused_not_pulled_from_under_the_shell(tmp_path, monkeypatch):
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    for name in (".", str(tmp_path / "here"), str(tmp_path)):
        with pytest.raises(OutputError, match="working folder"):
            with staged_directory(name, overwrite=True):
                raise AssertionError("no work starts")


def test_merge_keeps_other_files_and_refuses_a_name_that_appeared(tmp_path):
    out = tmp_path / "graphs"
    out.mkdir()
    (out / "earlier.graphml").write_text("earlier set")
    with staged_directory(out, merge=True) as stage:
        atomic_write(stage / "a.graphml", "a")
    assert _tree(out) == {"a.graphml": b"a", "earlier.graphml": b"earlier set"}
    with pytest.raises(OverwriteError, match=r"b\.graphml exists"):
        with staged_directory(out, merge=True) as stage:
            atomic_write(stage / "b.graphml", "mine")
            (out / "b.graphml").write_text("another run's")
    assert (out / "b.graphml").read_text() == "another run's"


def test_a_new_folder_gets_the_ordinary_mode_and_a_replaced_one_keeps_its_own(tmp_path):
    mask = os.umask(0o022)
    try:
        with staged_directory(tmp_path / "new") as stage:
            atomic_write(stage / "a.txt", "a")
    finally:
        os.umask(mask)
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o755
    (tmp_path / "new").chmod(0o750)
    with staged_directory(tmp_path / "new", overwrite=True) as stage:
        atomic_write(stage / "a.txt", "b")
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o750


def test_a_file_the_user_adds_during_the_swap_is_kept(tmp_path, monkeypatch):
    from attnsym import _io

    out = _users_folder(tmp_path)
    carry = _io._carry

    def carry_then_add(old, new, overwrite, replaced):
        carry(old, new, overwrite, replaced)
        if old == out:  # the user saves a file after the copy, before the swap
            (out / "mine" / "late.txt").write_text("saved during the swap")

    monkeypatch.setattr(_io, "_carry", carry_then_add)
    with staged_directory(out, overwrite=True) as stage:
        _new_set(stage)
    assert (out / "mine" / "late.txt").read_text() == "saved during the swap"
    assert (out / "report.md").read_text() == "new report" and (out / "mine" / "data.csv").read_text() == "1,2"


def test_a_file_where_the_set_needs_a_folder_is_named(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "text1").write_text("a file of the user's")
    with pytest.raises(OutputError, match=r"text1 is a regular file, not a folder; the new files need a folder there"):
        with staged_directory(out, overwrite=True) as stage:
            _new_set(stage)
    assert (out / "text1").read_text() == "a file of the user's"
