"""GELU, exactly and in its tanh approximation (Hendrycks & Gimpel, 2016)."""

from __future__ import annotations

import sympy as sp

from .._exact import exact, exact_matrix
from ..errors import SpecError

__all__ = ["GELU_TANH_CUBIC", "gelu", "gelu_tanh"]

#: the cubic coefficient of the tanh approximation, 0.044715, as an exact rational
GELU_TANH_CUBIC = sp.Rational(44715, 1000000)


def _as_expr(x, name: str = "x"):
    if isinstance(x, sp.MatrixBase):
        return exact_matrix(name, x, error=SpecError)
    return exact(name, x)


def gelu(x):
    r"""Exact GELU, :math:`x\,\Phi(x) = \tfrac{x}{2}\left(1 + \operatorname{erf}(x/\sqrt{2})\right)`.

    Parameters
    ----------
    x : number, SymPy expression or SymPy Matrix
        Applied elementwise to a Matrix. Python ints and fractions stay exact; floats become
        ``Float``.

    Returns
    -------
    SymPy expression or Matrix

    See Also
    --------
    gelu_tanh : the tanh approximation; attnsym.numeric.gelu : the floating-point twin.

    Examples
    --------
    >>> x = sp.Symbol("x", real=True)
    >>> gelu(x)
    x*(erf(sqrt(2)*x/2) + 1)/2
    >>> gelu(0), gelu(1)
    (0, erf(sqrt(2)/2)/2 + 1/2)
    >>> sp.simplify(sp.diff(gelu(x), x) - (sp.erf(x / sp.sqrt(2)) + 1) / 2 - x * sp.exp(-x**2 / 2) / sp.sqrt(2 * sp.pi))
    0
    """
    x = _as_expr(x)
    if isinstance(x, sp.MatrixBase):
        return x.applyfunc(gelu)
    return x / 2 * (1 + sp.erf(x / sp.sqrt(2)))


def gelu_tanh(x):
    r"""The tanh approximation of GELU used by BERT and GPT-2.

    .. math::

        \tfrac{x}{2}\left(1 + \tanh\!\left(\sqrt{2/\pi}\,(x + 0.044715\,x^3)\right)\right)

    with 0.044715 kept as the exact rational :data:`GELU_TANH_CUBIC`.

    Parameters
    ----------
    x : number, SymPy expression or SymPy Matrix
        Applied elementwise to a Matrix.

    Returns
    -------
    SymPy expression or Matrix

    Examples
    --------
    >>> x = sp.Symbol("x", real=True)
    >>> gelu_tanh(x)
    x*(tanh(sqrt(2)*(8943*x**3/200000 + x)/sqrt(pi)) + 1)/2
    >>> float(gelu_tanh(1)), float(gelu(1))  # the approximation is good to ~1e-4 here
    (0.8411919906082768, 0.8413447460685429)
    """
    x = _as_expr(x)
    if isinstance(x, sp.MatrixBase):
        return x.applyfunc(gelu_tanh)
    return x / 2 * (1 + sp.tanh(sp.sqrt(2 / sp.pi) * (x + GELU_TANH_CUBIC * x**3)))
