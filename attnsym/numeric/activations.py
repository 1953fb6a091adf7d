"""GELU as floating-point arrays: the numeric twin of :mod:`attnsym.symbolic.activations`.

Written once against the array API; NumPy uses :func:`scipy.special.erf`, CuPy and PyTorch
their own ``erf`` (dispatched in :mod:`attnsym.numeric.backend`).
"""

from __future__ import annotations

import math

from .backend import array_namespace, erf

__all__ = ["GELU_TANH_CUBIC", "gelu", "gelu_tanh"]

#: the cubic coefficient of the tanh approximation; equals ``float(attnsym.symbolic.GELU_TANH_CUBIC)`` (tested)
GELU_TANH_CUBIC = 0.044715


def gelu(x):
    """Exact GELU, ``x·Φ(x) = x/2 · (1 + erf(x/√2))``, elementwise.

    Twin of :func:`attnsym.symbolic.gelu`.

    Parameters
    ----------
    x : array
        float32 or float64 values (NumPy, CuPy or PyTorch).

    Returns
    -------
    array
        Same shape, type and dtype as ``x``.

    Examples
    --------
    >>> gelu(np.array([0.0, 1.0])).round(6)  # 1·Φ(1) = 0.841345
    array([0.      , 0.841345])
    """
    xp = array_namespace(x)
    x = xp.asarray(x)
    return 0.5 * x * (1.0 + erf(xp, x / math.sqrt(2.0)))


def gelu_tanh(x):
    """The tanh approximation of GELU, ``x/2 · (1 + tanh(√(2/π)(x + 0.044715 x³)))``.

    Twin of :func:`attnsym.symbolic.gelu_tanh`.

    Examples
    --------
    >>> float(abs(gelu_tanh(np.array([1.0]))[0] - gelu(np.array([1.0]))[0])) < 1e-3
    True
    """
    xp = array_namespace(x)
    x = xp.asarray(x)
    return 0.5 * x * (1.0 + xp.tanh(math.sqrt(2.0 / math.pi) * (x + GELU_TANH_CUBIC * x**3)))
