"""Safe file writing: atomic, never a silent overwrite, never replacing what is not a regular file.

Three promises, one module:

* **Atomic.** :func:`atomic_write` writes into a temporary file beside the destination and
  renames it into place, so a reader never sees half a file and a crash leaves the old file
  intact. :func:`staged_directory` does the same for a set of files (a tour, a set of graphs):
  they are written into a temporary sibling folder that is put in place with one rename (or
  one atomic swap with a copy of a non-empty folder) only when the whole set is complete, so
  the folder shows the old set or the new one, never a mixture, and re-running is just
  running again. The no-overwrite rule is checked again at that rename: a folder another run
  filled meanwhile is refused, its files intact.
* **No silent overwrite.** An existing file is replaced only with ``overwrite=True``
  (``--force`` on the command line), and ``overwrite`` must be a real ``bool``: ``"no"`` is
  refused, not taken as true. :func:`refuse_existing` is the one pre-check every writer calls
  before spending time on the content.
* **``--force`` never destroys what is not ours.** Only *regular files* are ever replaced. A
  symbolic link, a directory, a FIFO, a socket or a device node at the destination is refused
  with :class:`~attnsym.errors.OutputError` even with ``overwrite=True`` (writing through a
  symbolic link would write somewhere the user did not name; replacing it would destroy the
  link), and nothing is written through a symbolic link to a folder either (an output folder
  or a subfolder of it). A parent that is a file is reported as such.

Temporaries are named ``.<name>.attnsym-<pid>-<random>.tmp``. One left behind by a process
that was killed (SIGKILL, power loss) is removed by the next write to the same destination,
once its process is gone; a temporary of a process still running is left alone. Where the
system has no atomic swap, a user's folder is moved aside as ``.<name>.attnsym-<pid>-<random>.old``
for the instant between two renames; a killed run's ``.old`` folder is moved back by the next
write when nothing took its place.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import glob
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ._checks import boolean
from .errors import FileFormatError, OutputError, OverwriteError

__all__ = ["atomic_write", "open_regular", "read_array", "read_capped", "refuse_existing", "refuse_special",
           "staged_directory"]

_TAG = "attnsym"


def _current_umask() -> int:
    """The process umask, read without changing it where Linux allows (os.umask is a set-and-get)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _kind(path: Path) -> str | None:
    """What is at ``path`` without following a final symbolic link (``None``: nothing)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    if stat.S_ISREG(mode):
        return "regular file"
    if stat.S_ISLNK(mode):
        return "symbolic link"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device node"
    return "special file"


def _check_parent(path: Path) -> None:
    """The nearest existing ancestor of ``path`` must be a directory."""
    for parent in path.parents:
        kind = _kind(parent)
        if kind is None:
            continue
        if kind == "directory" or parent.is_dir():  # a link to a directory is a directory to write into
            return
        raise OutputError(f"cannot write {path}: {parent} is a {kind}, not a folder")


def _os_error(path: Path, error: OSError) -> OutputError:
    """An OSError while writing ``path``, naming ``path`` (never the hidden temporary)."""
    out = OutputError(f"cannot write {path}: {error.strerror or error}")
    out.errno = error.errno  # (strerror and filename stay unset: they would replace the message)
    return out


def _overwrite_error(paths: list[Path]) -> OverwriteError:
    more = f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""
    return OverwriteError(f"{paths[0]} exists{more}; pass overwrite=True (--force on the command line) to replace "
                          + ("them" if more else "it"), paths=paths)


def refuse_existing(paths: str | os.PathLike | Iterable[str | os.PathLike], *, overwrite: bool,
                    folders: bool = False) -> list[Path]:
    """Fail now, before any work, if writing ``paths`` would overwrite silently or destroy something.

    Every writer calls this before computing what it writes, so a refusal costs nothing.

    Parameters
    ----------
    paths : path or iterable of paths
        The files about to be written (with ``folders=True``: the folders about to be filled).
    overwrite : bool
        Whether existing regular files may be replaced (a non-empty folder written into). Must
        be a real ``bool``.
    folders : bool, default False
        ``paths`` are folders: each must be absent or a directory (a symbolic link, even to a
        directory, is refused: nothing is written through a link), and a non-empty one needs
        ``overwrite``.

    Returns
    -------
    list of Path
        ``paths`` as :class:`~pathlib.Path` objects.

    Raises
    ------
    OutputError
        A destination is not a regular file (a directory, symbolic link, FIFO, socket, device),
        or a parent folder is a file.
    OverwriteError
        A destination is an existing regular file and ``overwrite`` is False.
    SpecError
        ``overwrite`` is not a bool.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> (folder / "a.txt").write_text("x")
    1
    >>> refuse_existing([folder / "a.txt", folder / "b.txt"], overwrite=False)
    Traceback (most recent call last):
    ...
    attnsym.errors.OverwriteError: .../a.txt exists; pass overwrite=True (--force on the command line) to replace it
    >>> refuse_existing(folder, overwrite=True)
    Traceback (most recent call last):
    ...
    attnsym.errors.OutputError: ... is a directory; attnsym replaces only regular files: remove it or choose another name
    """
    overwrite = boolean("overwrite", overwrite)
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    checked = [Path(p) for p in paths]
    existing = []
    for path in checked:
        _check_parent(path)
        kind = _kind(path)
        if kind is None:
            continue
        if folders:
            if kind == "symbolic link":  # writing into it would write where the user did not name
                target = os.path.realpath(path)
                raise OutputError(f"{path} is a symbolic link; attnsym never writes through a link: give the folder "
                                  f"itself ({target}) or another name")
            if kind != "directory":
                raise OutputError(f"{path} is a {kind}; give a folder")
            if any(path.iterdir()) and not overwrite:
                raise OverwriteError(f"{path} exists and is not empty; pass overwrite=True (--force on the command "
                                     "line) to write into it (files of the same name are replaced)", paths=[path])
            continue
        if kind != "regular file":
            raise OutputError(f"{path} is a {kind}; attnsym replaces only regular files: remove it or choose another name")
        existing.append(path)
    if existing and not overwrite:
        raise _overwrite_error(existing)
    return checked


def _temp_prefix(name: str) -> str:
    return f".{name}.{_TAG}-{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's) or cannot tell: leave its files alone
    return True


def _remove_stale(folder: Path, name: str) -> None:
    """Clean up after attnsym processes that no longer run: remove their temporaries of ``name`` in ``folder``.

    A ``.old`` folder is a user's folder a killed swap had moved aside (:func:`_swap`): it is
    moved back when nothing took its place, and removed when the swap had completed.
    """
    pattern = os.path.join(glob.escape(str(folder)), f".{glob.escape(name)}.{_TAG}-*-*")
    for leftover in sorted(glob.glob(pattern)):
        if not leftover.endswith((".tmp", ".old")):
            continue
        pid_text = os.path.basename(leftover)[len(name) + len(_TAG) + 3:].split("-", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid() or _alive(int(pid_text)):
            continue  # not ours, this process's own (possibly in use), or its writer still runs
        kind = _kind(Path(leftover))
        with contextlib.suppress(OSError):
            if leftover.endswith(".old"):
                if kind == "directory" and _kind(folder / name) is None:
                    os.rename(leftover, folder / name)  # the user's folder, back where it was
                    continue
                if kind == "directory":
                    shutil.rmtree(leftover)
            elif kind == "regular file":
                os.unlink(leftover)
            elif kind == "directory":
                shutil.rmtree(leftover)


def atomic_write(path: str | os.PathLike, data: str | bytes, *, overwrite: bool = False) -> Path:
    """Write ``data`` to ``path`` atomically; refuse to replace an existing file unless asked.

    The data goes to a temporary file in the same folder, which is then renamed over
    ``path``, so a reader never sees a half-written file and a crash leaves the old file
    intact. Parent folders are created. Only a regular file is ever replaced (see
    :func:`refuse_existing`); stale temporaries of killed writers are removed.

    Parameters
    ----------
    path : str or PathLike
        Destination.
    data : str or bytes
        Text (written as UTF-8) or bytes.
    overwrite : bool, default False
        Replace an existing regular file. Without it an existing file raises :class:`OverwriteError`.

    Returns
    -------
    Path
        The path written.

    Raises
    ------
    OverwriteError
        ``path`` exists and ``overwrite`` is False.
    OutputError
        ``path`` is not a regular file (directory, symbolic link, FIFO, device...), or a parent is a file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> atomic_write(folder / "a.txt", "hello").read_text()
    'hello'
    >>> atomic_write(folder / "a.txt", "again")
    Traceback (most recent call last):
    ...
    attnsym.errors.OverwriteError: ... exists; pass overwrite=True (--force on the command line) to replace it
    >>> atomic_write(folder / "a.txt", "again", overwrite="no")
    Traceback (most recent call last):
    ...
    attnsym.errors.SpecError: overwrite must be True or False (got 'no' of type str)
    """
    (path,) = refuse_existing([path], overwrite=overwrite)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(path.parent, path.name)
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path.name), suffix=".tmp", dir=path.parent)
    except OSError as error:  # name the file asked for, not the hidden temporary one
        raise _os_error(path, error) from None
    try:
        # mkstemp makes the file private (0600); give it the mode an ordinary open() would
        os.fchmod(fd, 0o666 & ~_current_umask())
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        if not overwrite:
            # link() fails if the target appeared meanwhile: no race can clobber a file
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise _overwrite_error([path]) from None
            except OSError:  # file systems without hard links
                os.replace(tmp, path)
        else:
            if _kind(path) not in (None, "regular file"):  # appeared since the check: still never replaced
                refuse_existing([path], overwrite=True)
            os.replace(tmp, path)
    except OSError as error:
        if isinstance(error, OverwriteError | OutputError):
            raise
        raise _os_error(path, error) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return path


#: Linux renameat2(2): the working directory as the base of a relative path, and the flag that swaps two paths
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


@functools.cache
def _renameat2() -> Any:
    """The C library's ``renameat2`` (Linux, glibc 2.28 and later), or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    except OSError:
        return None


def _exchange(a: Path, b: Path) -> bool:
    """Swap the folders at ``a`` and ``b`` in one atomic rename; False where the system cannot (nothing moved)."""
    call = _renameat2()
    if call is None:
        return False
    if call(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # a file system or kernel without the flag
        return False
    raise OSError(code, os.strerror(code), str(b))


def _refuse_link(path: Path, kind: str) -> OutputError:
    """The refusal of a folder the set needs that is a link (or a file, FIFO...): nothing is written through it."""
    return OutputError(f"{path} is a {kind}; attnsym never writes through a link nor replaces what is not a regular "
                       "file: remove it or choose another folder")


def _carry(old: Path, new: Path, overwrite: bool, replaced: list[Path]) -> None:
    """Fill the staged folder ``new`` with what the user's ``old`` holds that the run does not replace.

    Files, links, pipes... are hard-linked (their bytes are not copied, and ``old`` stays whole
    until the swap); folders are made anew and filled the same way. A staged file whose name
    exists in ``old`` replaces it only if the old one is a regular file (collected in
    ``replaced``); a staged folder goes only where ``old`` has a real folder, never through a link.
    """
    with os.scandir(old) as entries:
        for entry in entries:
            source, target = old / entry.name, new / entry.name
            kind, staged = _kind(source), _kind(target)
            if staged is None:
                if kind == "directory":
                    target.mkdir()
                    _carry(source, target, overwrite, replaced)
                    shutil.copystat(source, target, follow_symlinks=False)
                else:
                    _link_or_copy(source, target, kind)
            elif staged == "directory":
                if kind == "symbolic link":  # even to a folder: the new files are never written through it
                    raise _refuse_link(source, "symbolic link, not a folder")
                if kind != "directory":
                    raise OutputError(f"{source} is a {kind}, not a folder; the new files need a folder there: "
                                      "remove it or choose another folder")
                _carry(source, target, overwrite, replaced)
                shutil.copystat(source, target, follow_symlinks=False)
            elif kind != "regular file":
                raise OutputError(f"{source} is a {kind}; attnsym replaces only regular files: remove it or choose "
                                  "another name")
            else:
                replaced.append(source)


def _link_or_copy(source: Path, target: Path, kind: str | None) -> None:
    """Put ``source`` at ``target`` as a hard link (a copy for a regular file or a link where none can be made)."""
    try:
        os.link(source, target, follow_symlinks=False)
        return
    except OSError:
        if kind == "regular file":
            shutil.copy2(source, target)
        elif kind == "symbolic link":
            os.symlink(os.readlink(source), target)
        else:
            raise OutputError(f"{source} is a {kind} that cannot be kept across the swap (no hard link can be made "
                              "here); move it out of the folder or choose another folder") from None


def _rescue(old: Path, new: Path) -> None:
    """Move into ``new`` what appeared in the user's ``old`` folder between the copy and the swap (never lost)."""
    with os.scandir(old) as entries:
        for entry in entries:
            source, target = old / entry.name, new / entry.name
            kind = _kind(target)
            if kind is None:
                with contextlib.suppress(OSError):
                    os.rename(source, target)
            elif kind == "directory" and _kind(source) == "directory":
                _rescue(source, target)


def _swap(stage: Path, folder: Path) -> None:
    """Put ``stage`` at ``folder`` and the old ``folder`` at ``stage``, with the user's folder whole at every instant.

    One atomic exchange where the system has one (Linux's ``renameat2``); elsewhere two
    renames, the old folder first moved aside under a hidden ``.old`` name and moved back if
    the second rename fails (after a SIGKILL between the two, the next run moves it back).
    """
    if _exchange(stage, folder):
        return
    backup = folder.with_name(stage.name.removesuffix(".tmp") + ".old")
    moved = False
    try:
        os.replace(folder, backup)
        moved = True
        os.replace(stage, folder)
    except BaseException:
        if moved:
            os.rename(backup, folder)  # rename, not replace: putting the user's folder back never replaces anything
        raise
    os.rename(backup, stage)  # the old folder where the caller removes its stage


def _move_into_place(stage: Path, folder: Path, *, overwrite: bool, merge: bool) -> None:
    """Put the complete staged set at ``folder``: one rename when ``folder`` is new or empty, else (with
    ``overwrite`` or ``merge``) one swap with a copy of ``folder`` whose new files are the staged ones."""
    kind = _kind(folder)
    if kind is None or (kind == "directory" and not any(folder.iterdir())):
        if kind is not None:
            shutil.copymode(folder, stage)  # keep the mode of the user's empty folder
        try:
            os.rename(stage, folder)  # fails if a non-empty folder (or anything but a folder) is there now
            return
        except OSError as error:
            if error.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                raise _os_error(folder, error) from None
        kind = _kind(folder)
    if kind != "directory":  # appeared meanwhile as a link, a file, a FIFO...: never replaced, never written through
        raise _refuse_link(folder, kind or "missing folder")
    if not (overwrite or merge):
        raise OverwriteError(f"{folder} was filled by someone else while this run was writing; its files are left "
                             "as they are. Pass overwrite=True (--force on the command line) to write into it",
                             paths=[folder])
    replaced: list[Path] = []
    try:
        _carry(folder, stage, overwrite, replaced)
        if replaced and not overwrite:
            raise _overwrite_error(replaced)
        shutil.copymode(folder, stage)
        _swap(stage, folder)
    except OSError as error:
        if isinstance(error, OverwriteError | OutputError):
            raise
        raise _os_error(folder, error) from None
    with contextlib.suppress(OSError):
        _rescue(stage, folder)  # the old folder, now at the stage's name, is removed next: keep what arrived late


def _check_swappable(folder: Path) -> None:
    """A folder replaced by a rename must not be a mount point or hold the working folder."""
    try:
        here, there = folder.resolve(), Path.cwd().resolve()
        mounted = os.lstat(folder).st_dev != os.stat(folder.parent).st_dev
    except OSError:
        return  # not there (yet): nothing to pull from under anyone
    if here == there or here in there.parents:
        raise OutputError(f"{folder} is the working folder (or holds it); attnsym puts a result folder in place with "
                          "one rename, which would pull it from under the shell working in it: give a new subfolder, "
                          f"e.g. {folder / 'out'}")
    if mounted:
        raise OutputError(f"{folder} is a mount point; attnsym puts a result folder in place with one rename, which "
                          f"cannot replace a mount point: give a new subfolder, e.g. {folder / 'out'}")


@contextlib.contextmanager
def staged_directory(folder: str | os.PathLike, *, overwrite: bool = False, merge: bool = False) -> Iterator[Path]:
    """Write a set of files into a temporary sibling of ``folder``, put in place whole when complete.

    Use it as ``with staged_directory(out, overwrite=force) as stage:`` and write every file
    under ``stage``. On success the set is put at ``folder`` with one rename: a new or empty
    ``folder`` is replaced by the staged one; a non-empty one (``overwrite=True``) is first
    copied into the stage (hard links: nothing large is copied), its files of the same name
    replaced by the new ones and everything else kept, and the two folders are swapped in one
    atomic exchange, so the folder shows the old set or the new one, never a mixture. Until the
    swap the user's folder is untouched; on an exception (or Ctrl-C) the staged files are
    removed; after a SIGKILL the next run removes them.

    The rule is checked twice, on entry (before any work) and at the move: a folder that
    another run filled meanwhile is refused without ``overwrite``, its files intact. Nothing is
    written through a symbolic link, neither ``folder`` itself nor a subfolder of it, and only
    regular files are ever replaced.

    Parameters
    ----------
    folder : str or PathLike
        The destination folder, created if missing.
    overwrite : bool, default False
        Required when ``folder`` exists and is not empty; files of the same name are replaced.
    merge : bool, default False
        ``folder`` may hold other files (they are kept); only a staged file whose name exists
        there needs ``overwrite`` (``attnsym graph`` adding a set to a folder of sets).

    Yields
    ------
    Path
        The staging folder to write into.

    Raises
    ------
    OverwriteError
        ``folder`` is not empty (with ``merge``: holds a file of a staged name) and
        ``overwrite`` is False, on entry or at the move.
    OutputError
        ``folder`` or a subfolder the set needs is a symbolic link, a file or another
        non-directory; a destination is not a regular file; ``folder`` is the working folder
        (or holds it) or a mount point, which no rename can replace; a parent is a file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "set"
    >>> with staged_directory(out) as stage:
    ...     _ = atomic_write(stage / "a.txt", "a")
    ...     _ = atomic_write(stage / "sub" / "b.txt", "b")
    >>> sorted(p.relative_to(out).as_posix() for p in out.rglob("*.txt"))
    ['a.txt', 'sub/b.txt']
    >>> with staged_directory(out) as stage:
    ...     pass
    Traceback (most recent call last):
    ...
    attnsym.errors.OverwriteError: ... exists and is not empty; pass overwrite=True (--force on the command line) ...
    """
    overwrite, merge = boolean("overwrite", overwrite), boolean("merge", merge)
    folder = Path(folder)
    if folder.name in ("", ".", ".."):  # "." or "x/..": its parent is the folder's real parent
        folder = Path(os.path.abspath(folder))
    _check_parent(folder)
    with contextlib.suppress(OSError):
        _remove_stale(folder.parent, folder.name)  # first: a folder a killed swap moved aside is put back
    refuse_existing([folder], overwrite=overwrite or merge, folders=True)
    _check_swappable(folder)
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=_temp_prefix(folder.name), suffix=".tmp", dir=folder.parent))
        os.chmod(stage, 0o777 & ~_current_umask())  # mkdtemp's folder is private (0700); give it an ordinary one
    except OSError as error:
        raise _os_error(folder, error) from None
    try:
        yield stage
        _move_into_place(stage, folder, overwrite=overwrite, merge=merge)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _stat_kind(mode: int) -> str:
    """What a stat mode is, in words (``"regular file"``, ``"FIFO (named pipe)"``, ...)."""
    for test, name in ((stat.S_ISREG, "regular file"), (stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO (named pipe)"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "device node"), (stat.S_ISBLK, "device node")):
        if test(mode):
            return name
    return "special file"


def refuse_special(path: str | os.PathLike, *, error: type[Exception] = FileFormatError,
                   limit: int | None = None) -> None:
    """Raise ``error`` if ``path`` exists but is not a regular file (a link to one is followed), or is larger than ``limit``.

    The check for a file another library opens by name (``tokenizers``); what attnsym opens
    itself goes through :func:`open_regular`, which checks the open descriptor.

    Examples
    --------
    >>> import os, tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> refuse_special(folder / "absent.txt")  # nothing there: the caller says what is missing
    >>> refuse_special(folder)
    Traceback (most recent call last):
    ...
    attnsym.errors.FileFormatError: ... is a directory, not a regular file
    """
    try:
        info = os.stat(path)
    except OSError:
        return
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{path} is a {_stat_kind(info.st_mode)}, not a regular file")
    if limit is not None and info.st_size > limit:
        raise error(f"{path} is {info.st_size:,} bytes, larger than the {limit:,} bytes read at most")


def open_regular(path: str | os.PathLike, *, error: type[Exception] = FileFormatError,
                 limit: int | None = None) -> BinaryIO:
    """Open ``path`` for reading only if it is a regular file (a link to one is followed), never blocking.

    The file is opened without blocking (``O_NONBLOCK``: a FIFO, whose open would wait for a
    writer forever, opens at once) and checked on the open descriptor (``fstat``), so nothing
    can be swapped in between the check and the read. A FIFO, a device, a socket or a folder is
    refused, as is a file larger than ``limit`` bytes (from its size, before a byte is read).

    Parameters
    ----------
    path : str or PathLike
        The file to read.
    error : exception class, default FileFormatError
        The :class:`~attnsym.errors.AttnsymError` subclass raised (a reader's own, e.g. ``ModelError``).
    limit : int, optional
        The largest size accepted, in bytes.

    Returns
    -------
    file object
        Open in binary mode; close it (``with``).

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist (the caller names what is missing).
    error
        ``path`` is not a regular file, cannot be opened, or is larger than ``limit``.

    Examples
    --------
    >>> import os, tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> os.mkfifo(folder / "pipe")
    >>> open_regular(folder / "pipe")
    Traceback (most recent call last):
    ...
    attnsym.errors.FileFormatError: .../pipe is a FIFO (named pipe), not a regular file
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except OSError as failure:
        if failure.errno == errno.ENXIO:  # a socket
            raise error(f"{path} is a socket, not a regular file") from None
        raise error(f"{path} cannot be read ({failure.strerror or failure})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{path} is a {_stat_kind(info.st_mode)}, not a regular file")
        if limit is not None and info.st_size > limit:
            raise error(f"{path} is {info.st_size:,} bytes, larger than the {limit:,} bytes read at most")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(path: str | os.PathLike, limit: int, *, error: type[Exception] = FileFormatError) -> bytes:
    """The bytes of the regular file ``path``, refused past ``limit`` bytes (checked before and while reading).

    Raises as :func:`open_regular`; also when the file grew past ``limit`` while it was read.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.json").write_text("{}")
    >>> read_capped(folder / "a.json", 10)
    b'{}'
    >>> read_capped(folder / "a.json", 1)
    Traceback (most recent call last):
    ...
    attnsym.errors.FileFormatError: .../a.json is 2 bytes, larger than the 1 bytes read at most
    """
    with open_regular(path, error=error, limit=limit) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as failure:
            raise error(f"{path} cannot be read ({failure.strerror or failure})") from None
    if len(data) > limit:
        raise error(f"{path} is larger than the {limit:,} bytes read at most")
    return data


def read_array(path: str | os.PathLike, name: str = "file") -> np.ndarray:
    """A real-valued array from a ``.npy`` file, or one :class:`~attnsym.errors.FileFormatError` saying what is wrong.

    The header is read and checked first (at most 10,000 bytes; no pickled objects; the data
    the header promises must be in the file), so an archive, an empty or truncated file, or a
    header written to exhaust memory is refused before anything is allocated.

    Parameters
    ----------
    path : str or PathLike
        A file written by ``numpy.save``.
    name : str
        What the file is for, as the user gave it (e.g. ``"--x"``), for the message.

    Returns
    -------
    numpy.ndarray
        The array (integer, unsigned or floating dtype).

    Raises
    ------
    FileFormatError
        The file is missing, not a regular file, empty, a ``.npz`` archive, not a ``.npy`` file,
        truncated, or holds objects, strings, booleans or complex numbers.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> np.save(folder / "x.npy", np.eye(2))
    >>> read_array(folder / "x.npy", "--x").shape
    (2, 2)
    >>> np.savez(folder / "x.npz", x=np.eye(2))
    >>> read_array(folder / "x.npz", "--x")
    Traceback (most recent call last):
    ...
    attnsym.errors.FileFormatError: --x: ...x.npz is a .npz archive (numpy.savez); save one array with numpy.save
    """
    path = Path(path)
    if not path.exists():
        raise FileFormatError(f"{name}: no such file {path}")
    if not path.is_file():
        raise FileFormatError(f"{name}: {path} is a {_kind(path)}, not a .npy file")
    size = path.stat().st_size
    if size == 0:
        raise FileFormatError(f"{name}: {path} is empty (expected an array written by numpy.save)")
    fmt = np.lib.format
    try:
        with open(path, "rb") as handle:
            if handle.read(4) == b"PK\x03\x04":
                raise FileFormatError(f"{name}: {path} is a .npz archive (numpy.savez); save one array with numpy.save")
            handle.seek(0)
            version = fmt.read_magic(handle)
            if version == (1, 0):
                shape, _, dtype = fmt.read_array_header_1_0(handle, max_header_size=10_000)
            elif version == (2, 0):
                shape, _, dtype = fmt.read_array_header_2_0(handle, max_header_size=10_000)
            else:
                raise FileFormatError(f"{name}: {path} is a .npy file of version {version}, which is not supported")
            offset = handle.tell()
    except FileFormatError:
        raise
    except (ValueError, EOFError, OSError, SyntaxError) as error:
        text = str(error)
        if "max_header_size" in text:
            text = "its header is longer than the 10,000 bytes a real array needs"
        raise FileFormatError(f"{name}: {path} is not a .npy array ({' '.join(text.split())})") from error
    if dtype.hasobject or dtype.kind not in "iuf":
        raise FileFormatError(f"{name}: {path} must hold real numbers (got dtype {dtype})")
    needed = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if needed > size - offset:
        raise FileFormatError(f"{name}: {path} is truncated: its header promises shape {shape} of {dtype} "
                              f"({needed} bytes), the file holds {size - offset}")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, EOFError, OSError) as error:
        raise FileFormatError(f"{name}: {path} is not a readable .npy array ({error})") from error
