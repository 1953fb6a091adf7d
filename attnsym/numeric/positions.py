"""Positional information as floating-point arrays: the numeric twin of :mod:`attnsym.symbolic.positions`.

Written once against the array API (NumPy by default; CuPy and PyTorch through ``xp=``).
The conventions (positions counted from 0, the base) are those of :mod:`attnsym.spec`.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

from .._checks import positive_int
from ..errors import SpecError
from ..spec import DEFAULT_POSITION_BASE
from .backend import array_namespace

__all__ = ["sinusoidal_positions"]


def sinusoidal_positions(n: int, d_model: int, base: int = DEFAULT_POSITION_BASE, *,
                         xp: ModuleType | None = None, dtype: Any = None):
    """Sinusoidal positional encodings ``PE`` of shape ``(n, d_model)``, positions from 0.

    .. math::

        PE_{p, 2i} = \\sin\\!\\big(p / \\text{base}^{2i/d}\\big),\\qquad
        PE_{p, 2i+1} = \\cos\\!\\big(p / \\text{base}^{2i/d}\\big)

    For odd ``d_model`` the last column is an unpaired sine. Twin of
    :func:`attnsym.symbolic.sinusoidal_positions` (exact SymPy), with the same positional
    arguments.

    Parameters
    ----------
    n, d_model : int
        Number of positions and width.
    base : int, default DEFAULT_POSITION_BASE (10000)
        Base of the geometric frequency progression (``AttentionSpec.position_base``), >= 2.
    xp : namespace, optional
        Array namespace to build in (NumPy by default).
    dtype : dtype, optional
        Result dtype (float64 by default); computed in float64 and then cast.

    Returns
    -------
    (n, d_model) array
        Every entry lies in ``[-1, 1]``.

    Raises
    ------
    SpecError
        ``n``, ``d_model`` not positive integers, or ``base`` not an integer >= 2.

    Examples
    --------
    >>> pe = sinusoidal_positions(3, 4)
    >>> pe.shape
    (3, 4)
    >>> np.allclose(pe[1], [np.sin(1), np.cos(1), np.sin(1 / 100), np.cos(1 / 100)])
    True
    """
    n = positive_int("n", n)
    d_model = positive_int("d_model", d_model)
    if not positive_int("base", base) >= 2:
        raise SpecError(f"base must be an integer >= 2 (got {base!r})")
    base = int(base)
    xp = array_namespace() if xp is None else xp
    half = (d_model + 1) // 2
    pos = xp.reshape(xp.arange(n, dtype=xp.float64), (n, 1))  # (n, 1)
    two_i = xp.arange(0, 2 * half, 2, dtype=xp.float64)  # (half,)
    angle = pos * xp.exp(-(two_i / d_model) * math.log(base))  # (n, half)
    pe = xp.reshape(xp.stack([xp.sin(angle), xp.cos(angle)], axis=-1), (n, 2 * half))[:, :d_model]
    return pe if dtype is None else xp.astype(pe, dtype)
