"""Sinusoidal positional encodings as exact SymPy expressions."""

from __future__ import annotations

import numbers

import sympy as sp

from ..errors import SpecError
from ..spec import DEFAULT_POSITION_BASE

__all__ = ["sinusoidal_positions"]


def _positive_int(name: str, value, minimum: int = 1) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        raise SpecError(f"{name} must be an integer >= {minimum} (got {value!r})")
    return int(value)


def sinusoidal_positions(n: int, d_model: int, base: int = DEFAULT_POSITION_BASE) -> sp.ImmutableMatrix:
    r"""The ``(n, d_model)`` sinusoidal position matrix of Vaswani et al. (2017), exactly.

    .. math::

        PE_{pos, 2i} = \sin\!\left(\frac{pos}{base^{2i/d}}\right), \qquad
        PE_{pos, 2i+1} = \cos\!\left(\frac{pos}{base^{2i/d}}\right),

    with positions ``pos = 0, …, n-1`` (row ``pos``) and ``d = d_model``. For odd
    ``d_model`` the last column is a sine.

    Parameters
    ----------
    n : int
        Number of positions (rows).
    d_model : int
        Width (columns).
    base : int, default DEFAULT_POSITION_BASE (10000)
        Base of the frequencies (``AttentionSpec.position_base``).

    Returns
    -------
    sympy.ImmutableMatrix
        Exact entries such as ``sin(1/100)``; every value lies in ``[-1, 1]``.

    See Also
    --------
    attnsym.numeric.sinusoidal_positions : the floating-point twin.

    Examples
    --------
    >>> sinusoidal_positions(2, 4)
    Matrix([
    [     0,      1,          0,          1],
    [sin(1), cos(1), sin(1/100), cos(1/100)]])
    """
    n = _positive_int("n", n)
    d_model = _positive_int("d_model", d_model)
    base = _positive_int("base", base, minimum=2)

    def entry(pos: int, col: int):
        i2 = col - col % 2  # 2i
        angle = sp.Integer(pos) / sp.Integer(base) ** sp.Rational(i2, d_model)
        return sp.sin(angle) if col % 2 == 0 else sp.cos(angle)

    return sp.ImmutableMatrix(n, d_model, entry)
