"""GELU as floating-point arrays: the numeric twin of :mod:`attnsym.symbolic.activations`.

Written once against the array API; NumPy uses :func:`scipy.special.erf`, CuPy and PyTorch
their own ``erf`` (dispatched in :mod:`attnsym.numeric.backend`).
"""

from __future__ import annotations

import math

from ._inputs import float_inputs
from .backend import erf

__all__ = ["GELU_TANH_CUBIC", "gelu", "gelu_tanh"]

#: the cubic coefficient of the tanh approximation; equals ``float(attnsym.symbolic.GELU_TANH_CUBIC)`` (tested)
GELU_TANH_CUBIC = 0.044715


def gelu(x):
    """Exact GELU, ``x·Φ(x) = x/2 · (1 + erf(x/√2))``, elementwise.

    Twin of :func:`attnsym.symbolic.gelu`.

    Parameters
    ----------
    x : array
        Finite float32 or float64 values (NumPy, CuPy or PyTorch); lists become NumPy arrays.

    Returns
    -------
    array
        Same shape, type and dtype as ``x``.

    Raises
    ------
    ShapeError
        Another dtype (integers, float16, complex) or a non-finite value.

    Examples
    --------
    >>> gelu(np.array([0.0, 1.0])).round(6)  # 1·Φ(1) = 0.841345
    array([0.      , 0.841345])
    """
    xp, a, _ = float_inputs({"x": x})
    x = a["x"]
    return 0.5 * x * (1.0 + erf(xp, x / math.sqrt(2.0)))


def gelu_tanh(x):
    """The tanh approximation of GELU, ``x/2 · (1 + tanh(√(2/π)(x + 0.044715 x³)))``.

    Twin of :func:`attnsym.symbolic.gelu_tanh`. Inputs are checked as in :func:`gelu`. The
    cubic is evaluated at ``x`` clipped to ``[-10, 10]``, where ``tanh`` is already ±1 in
    float32 and float64, so large inputs cannot overflow it.

    Examples
    --------
    >>> float(abs(gelu_tanh(np.array([1.0]))[0] - gelu(np.array([1.0]))[0])) < 1e-3
    True
    """
    xp, a, _ = float_inputs({"x": x})
    x = a["x"]
    u = xp.clip(x, -10.0, 10.0)
    return 0.5 * x * (1.0 + xp.tanh(math.sqrt(2.0 / math.pi) * (u + GELU_TANH_CUBIC * u**3)))
