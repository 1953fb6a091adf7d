"""Safe file writing: atomic (temp file, then rename) and never a silent overwrite."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import OverwriteError

__all__ = ["atomic_write"]


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


def atomic_write(path: str | os.PathLike, data: str | bytes, *, overwrite: bool = False) -> Path:
    """Write ``data`` to ``path`` atomically; refuse to replace an existing file.

    The data goes to a temporary file in the same folder, which is then renamed over
    ``path``, so a reader never sees a half-written file and a crash leaves the old file
    intact. Parent folders are created.

    Parameters
    ----------
    path : str or PathLike
        Destination.
    data : str or bytes
        Text (written as UTF-8) or bytes.
    overwrite : bool, default False
        Replace an existing file. Without it an existing file raises :class:`OverwriteError`.

    Returns
    -------
    Path
        The path written.

    Raises
    ------
    OverwriteError
        ``path`` exists and ``overwrite`` is False.

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
    """
    path = Path(path)
    if path.is_dir():
        raise OverwriteError(f"{path} is a directory; give a file name")
    if path.exists() and not overwrite:
        raise OverwriteError(f"{path} exists; pass overwrite=True (--force on the command line) to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as error:  # name the file asked for, not the hidden temporary one
        raise type(error)(error.errno, f"cannot write {path}: {error.strerror}") from None
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
                raise OverwriteError(
                    f"{path} exists; pass overwrite=True (--force on the command line) to replace it"
                ) from None
            except OSError:  # file systems without hard links
                os.replace(tmp, path)
        else:
            os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
