"""Exception hierarchy of attnsym.

Every error raised for bad input derives from :class:`AttnsymError`, and also from the
built-in exception a user would naturally catch (``ValueError`` for impossible values,
``TypeError`` for wrong kinds of objects), so both ``except at.SpecError`` and
``except ValueError`` work.

Messages name the argument, the value received and what was expected, e.g.::

    SpecError: heads must divide d_model (got d_model=10, heads=3)
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "AttnsymError",
    "BackendError",
    "FileFormatError",
    "OutputError",
    "OverwriteError",
    "ShapeError",
    "SizeLimitError",
    "SpecError",
    "SpecTypeError",
]


class AttnsymError(Exception):
    """Base class of every error attnsym raises on purpose."""


class SpecError(AttnsymError, ValueError):
    """An :class:`~attnsym.AttentionSpec` (or a keyword that builds one) is invalid."""


class SpecTypeError(SpecError, TypeError):
    """An argument of the wrong kind (a string where a Claim is expected ...): a SpecError and a TypeError."""


class ShapeError(AttnsymError, ValueError):
    """An array or matrix has the wrong shape, dtype, or contains non-finite values."""


class BackendError(AttnsymError, TypeError):
    """Arrays come from an unknown or mixed array library."""


class SizeLimitError(AttnsymError, ValueError):
    """A symbolic computation was asked for at a size that would take too long.

    The message gives the estimated cost, the limit, and how to raise it or which
    numeric alternative to use instead.
    """


class OverwriteError(AttnsymError, FileExistsError):
    """A write would replace an existing file and overwriting was not asked for.

    ``paths`` holds the existing files (the command line turns the message into
    "``<path>`` exists; pass --force to replace it").
    """

    def __init__(self, message: str, *, paths=()) -> None:
        super().__init__(message)
        self.paths = tuple(Path(p) for p in paths)


class OutputError(AttnsymError, OSError):
    """An output cannot be written where asked: not a regular file, a parent that is a file, no permission.

    Raised even with ``overwrite=True``: attnsym replaces only regular files, never a directory,
    symbolic link, FIFO, socket or device node.
    """


class FileFormatError(AttnsymError, ValueError):
    """A file attnsym was asked to read is missing, malformed or not of the expected kind.

    The message names the file and what is wrong with it (``g.graphml: line 3: edge to undeclared
    node 'x'``); the underlying parser's exception, if any, is the ``__cause__``.
    """
