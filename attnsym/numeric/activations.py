"""GELU and SiLU as floating-point arrays: the numeric twin of :mod:`attnsym.symbolic.activations`.

Written once against the array API; NumPy uses :func:`scipy.special.erf`, CuPy and PyTorch
their own ``erf`` (dispatched in :mod:`attnsym.numeric.backend`).

Two forms serve the real-model forward pass (:mod:`attnsym.models.forward`), which checks its
result once at the end instead of each activation's input: :func:`silu` (any library, a
non-finite value propagates) and :func:`gelu_float32`, the exact GELU of float32 NumPy arrays
by the float32 rational approximation of erf (:data:`ERF_P`, :data:`ERF_Q`), also the
formula of the compiled kernel :func:`attnsym.numeric._kernels.bias_gelu`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import ShapeError
from ._inputs import float_inputs
from .backend import array_namespace, erf

__all__ = ["ERF_P", "ERF_Q", "GELU_BLOCK", "GELU_TANH_CUBIC", "gelu", "gelu_float32", "gelu_tanh", "gelu_tanh_unchecked", "silu"]

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


def gelu_tanh_unchecked(x: Any) -> Any:
    r""":func:`gelu_tanh` for a forward pass: the values are not checked (the pass checks its result once).

    NumPy: ``½(1 + tanh z) = 1 / (1 + e^(−2z))``, so ``x / (1 + e^(−2z))`` with
    ``z = √(2/π)(x + 0.044715 x³)``, in one new array (float32's ``exp`` runs about 2.4× faster than
    its ``tanh``; an overflowing cube gives ``e^(∓inf)`` and so ``x`` or ``−0``, the limits). Other
    libraries: :func:`gelu_tanh`'s own form. The two forms agree to a few units in the last place
    (a test ties them).

    Examples
    --------
    >>> gelu_tanh_unchecked(np.array([-1e30, 0.0, 1.0])).round(6)  # 1·½(1 + tanh(√(2/π)·1.044715)) = 0.841192
    array([-0.      ,  0.      ,  0.841192])
    """
    if not isinstance(x, np.ndarray):
        return gelu_tanh(x)
    with np.errstate(over="ignore", invalid="ignore"):
        t = np.multiply(x, x)
        t *= GELU_TANH_CUBIC
        t += 1.0
        t *= x  # x + 0.044715 x³
        t *= -2.0 * math.sqrt(2.0 / math.pi)
        np.exp(t, out=t)
    t += 1.0
    return np.divide(x, t, out=t)


def silu(x: Any) -> Any:
    r"""SiLU (swish), :math:`x\,\sigma(x) = x / (1 + e^{-x})`, elementwise, into a new array.

    Twin of :func:`attnsym.symbolic.silu`; the gate of LLaMA's SwiGLU MLP. NumPy:
    ``x / (1 + e^(−x))`` in one new array (``e^(−x) = inf`` gives ``−0``, the limit; float32's
    ``exp`` runs about 2.4× faster than its ``tanh``); other libraries: ``x · ½(1 + tanh(x/2))``,
    which cannot overflow. Float32 or float64 of any library; the values are not checked (a
    non-finite value propagates): the forward pass checks its result once.

    Examples
    --------
    >>> silu(np.array([-50.0, 0.0, 1.0])).round(6)  # 1·σ(1) = 0.731059
    array([-0.      ,  0.      ,  0.731059])
    """
    if isinstance(x, np.ndarray):
        with np.errstate(over="ignore"):
            t = np.negative(x)
            np.exp(t, out=t)
        t += 1.0
        return np.divide(x, t, out=t)
    xp = array_namespace(x)
    return x * (0.5 * (1.0 + xp.tanh(0.5 * x)))


#: the float32 rational approximation of erf on ``[-4, 4]`` (the form XLA and Eigen use):
#: ``erf(z) ≈ z · P(z²) / Q(z²)``, highest power first; beyond ``±4`` erf is ``±1`` to float32 precision
ERF_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
         -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
#: the denominator ``Q`` of :data:`ERF_P`'s approximation, highest power first
ERF_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
         -1.42647390514189e-02)

#: elements of one block of :func:`gelu_float32` (256 KiB of float32 per temporary: they stay in a core's L2 cache)
GELU_BLOCK = 1 << 16


def gelu_float32(x: Any) -> np.ndarray:
    r"""Exact GELU :math:`x\,\Phi(x)` of a float32 NumPy array, several times faster than :func:`gelu`.

    ``scipy.special.erf`` evaluates float32 input in double precision (about 4 ms for the
    ``128 × 1536`` feed-forward activations of MiniLM, a quarter of a forward pass); this uses
    the float32 rational approximation :math:`\operatorname{erf}(z) \approx z P(z^2) / Q(z^2)`
    (:data:`ERF_P`, :data:`ERF_Q`) on :math:`z` clipped to :math:`[-4, 4]` (where erf is 1 to
    float32 precision), a few in-place array operations on blocks of :data:`GELU_BLOCK` elements
    (so their temporaries stay in cache). Its largest error against double-precision erf is below
    ``5e-7`` (the tests check it on a fine grid and tie it to :func:`gelu`); float64 and other
    libraries use :func:`gelu`. The values are not checked (a non-finite value propagates).

    Raises
    ------
    ShapeError
        ``x`` is not a float32 NumPy array.

    Examples
    --------
    >>> x = np.linspace(-5, 5, 11, dtype=np.float32)
    >>> bool(np.abs(gelu_float32(x) - gelu(x.astype(np.float64))).max() < 2e-6)
    True
    """
    if not isinstance(x, np.ndarray) or x.dtype != np.float32:
        raise ShapeError(f"gelu_float32 takes a float32 NumPy array (got a {type(x).__name__} of "
                         f"{getattr(x, 'dtype', '?')}); use gelu for other dtypes and libraries")
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    flat, out_flat = x.reshape(-1), out.reshape(-1)
    size = max(1, min(GELU_BLOCK, flat.size))
    z, z2, q = (np.empty(size, np.float32) for _ in range(3))
    for start in range(0, flat.size, size):
        xb, p = flat[start:start + size], out_flat[start:start + size]  # (k,)
        k = xb.size
        zb, z2b, qb = z[:k], z2[:k], q[:k]
        np.multiply(xb, np.float32(1 / math.sqrt(2.0)), out=zb)
        np.clip(zb, -4.0, 4.0, out=zb)
        np.multiply(zb, zb, out=z2b)
        np.multiply(z2b, np.float32(ERF_P[0]), out=p)
        p += np.float32(ERF_P[1])
        for a in ERF_P[2:]:
            p *= z2b
            p += np.float32(a)
        np.multiply(z2b, np.float32(ERF_Q[0]), out=qb)
        qb += np.float32(ERF_Q[1])
        for c in ERF_Q[2:]:
            qb *= z2b
            qb += np.float32(c)
        p *= zb
        p /= qb  # erf(x / √2)
        p += 1.0
        p *= xb
        p *= 0.5
    return out
