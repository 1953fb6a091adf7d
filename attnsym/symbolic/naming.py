"""The naming scheme of every symbol attnsym creates.

Names are chosen to render well in LaTeX and to be predictable, so a user can rebuild any
symbol by hand (``sp.Symbol("x_{1,2}", real=True)``). Indices are 1-based, as in the
papers. All symbols are declared ``real=True``.

=========  ===================  ============================================
name       entry symbols        renders as
=========  ===================  ============================================
``X``      ``x_{i,j}``          :math:`x_{i,j}`
``W_Q``    ``W^{Q}_{i,j}``      :math:`W^{Q}_{i,j}` (likewise ``W_K``, ``W_V``, ``W_O``)
``b_Q``    ``b^{Q}_{j}``        :math:`b^{Q}_{j}` (a ``1 x k`` row; likewise ``b_K``, ``b_V``, ``b_O``)
``g_Q``    ``g^{Q}_{j}``        :math:`g^{Q}_{j}` (the QK-norm gain, a ``1 x d_k`` row; likewise ``g_K``)
``W``      ``W_{i,j}``          :math:`W_{i,j}` (the MLP weight)
``b``      ``b_{j}``            :math:`b_{j}` (the MLP bias)
``G``      ``g_{i,j}``          :math:`g_{i,j}` (an upstream gradient)
``Q`` …    ``q_{i,j}``          any other single letter: its lower-case entries
=========  ===================  ============================================
"""

from __future__ import annotations

import re

import sympy as sp

from ..errors import ShapeError, SpecError
from .cost import enforce_limit

__all__ = ["entry_name", "input_symbols"]

_SUPERSCRIPTED = re.compile(r"^([A-Za-z])_([A-Za-z0-9]+)$")  # W_Q -> W^{Q}, b_O -> b^{O}
_SINGLE_INDEX = {"b", "g"}


def entry_name(name: str, i: int, j: int) -> str:
    """The symbol name of entry ``(i, j)`` (0-based arguments) of the matrix called ``name``.

    Parameters
    ----------
    name : str
        Matrix name: ``"X"``, ``"W_Q"``, ``"b_K"``, ``"G"``, ``"W"``, ``"b"`` or any letter,
        optionally followed by ``_`` and a superscript tag.
    i, j : int
        0-based row and column.

    Returns
    -------
    str
        The 1-based LaTeX-friendly symbol name.

    Examples
    --------
    >>> entry_name("X", 0, 1), entry_name("W_Q", 1, 0), entry_name("b_V", 0, 2), entry_name("G", 0, 0)
    ('x_{1,2}', 'W^{Q}_{2,1}', 'b^{V}_{3}', 'g_{1,1}')
    """
    match = _SUPERSCRIPTED.match(name)
    if match:
        letter, tag = match.groups()
        head = f"{letter}^{{{tag}}}"
    elif re.fullmatch(r"[A-Za-z]", name):
        letter, head = name, (name if name in ("W", "b") else name.lower())
    else:
        raise SpecError(
            f"name must be a letter optionally followed by '_' and a tag, like 'X', 'W_Q' or 'b_K' (got {name!r})"
        )
    if letter in _SINGLE_INDEX:
        return f"{head}_{{{j + 1}}}"
    return f"{head}_{{{i + 1},{j + 1}}}"


def input_symbols(name: str, shape: tuple[int, int]) -> sp.ImmutableMatrix:
    """A matrix of fresh real symbols named by the scheme of this module.

    Parameters
    ----------
    name : str
        Matrix name, e.g. ``"X"``, ``"W_Q"``, ``"b_Q"`` or ``"G"``.
    shape : tuple of int
        ``(rows, columns)``; bias names (``b``, ``b_*``) must have one row.

    Returns
    -------
    sympy.ImmutableMatrix
        Entries ``Symbol(entry_name(name, i, j), real=True)``.

    Raises
    ------
    SpecError
        ``name`` does not follow the scheme.
    ShapeError
        ``shape`` is not two positive integers, or a bias has more than one row.

    Examples
    --------
    >>> input_symbols("X", (2, 2))
    Matrix([
    [x_{1,1}, x_{1,2}],
    [x_{2,1}, x_{2,2}]])
    >>> input_symbols("b_Q", (1, 2))
    Matrix([[b^{Q}_{1}, b^{Q}_{2}]])
    >>> sp.latex(input_symbols("W_K", (1, 1))[0])
    'W^{K}_{1,1}'
    """
    if not isinstance(name, str):
        raise SpecError(f"name must be a string such as 'X' or 'W_Q' (got {name!r} of type {type(name).__name__})")
    try:
        rows, cols = shape
        valid = all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (rows, cols))
    except (TypeError, ValueError):
        valid = False
    if not valid:
        raise ShapeError(f"shape must be a pair of positive integers (rows, columns) (got {shape!r})")
    enforce_limit(rows * cols, None, what=f"symbols for a {rows} x {cols} matrix {name}")
    entry_name(name, 0, 0)  # validates the name
    if name[0] in _SINGLE_INDEX and rows != 1:  # biases and gains are rows
        raise ShapeError(f"{name} is a bias row and must have shape (1, k) (got {shape!r})")
    return sp.ImmutableMatrix(rows, cols, lambda i, j: sp.Symbol(entry_name(name, i, j), real=True))
