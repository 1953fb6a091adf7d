"""GELU, exactly and in its tanh approximation (Hendrycks & Gimpel, 2016), and the proof of its form.

:func:`prove_gelu` certifies the normal CDF Φ by its definition and proves ``GELU = x·Φ(x)``,
its derivative and limits (the ``gelu`` claim and the GELU figure rest on it).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .._exact import exact, exact_matrix
from ..errors import SpecError

__all__ = ["GELU_TANH_CUBIC", "GeluProof", "gelu", "gelu_tanh", "prove_gelu", "silu"]

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


def silu(x):
    r"""SiLU (swish), :math:`x\,\sigma(x) = x / (1 + e^{-x})`: the gate of LLaMA's SwiGLU MLP.

    Twin of :func:`attnsym.numeric.silu`. Applied elementwise to a Matrix.

    Examples
    --------
    >>> x = sp.Symbol("x", real=True)
    >>> silu(x)
    x/(1 + exp(-x))
    >>> sp.limit(silu(x), x, -sp.oo), sp.limit(silu(x) - x, x, sp.oo)
    (0, 0)
    """
    x = _as_expr(x)
    if isinstance(x, sp.MatrixBase):
        return x.applyfunc(silu)
    return x / (1 + sp.exp(-x))


@dataclass(frozen=True)
class GeluProof:
    """The exact facts about GELU that :func:`prove_gelu` establishes, each with its verdict.

    Attributes
    ----------
    x : sympy.Symbol
        The real variable.
    density, cdf : sympy.Expr
        The standard normal density ``φ(x) = e^{−x²/2}/√(2π)`` and ``Φ(x) = (1 + erf(x/√2))/2``.
    cdf_certified : bool
        ``Φ' = φ`` and ``Φ(−∞) = 0`` exactly: ``Φ`` is the normal CDF by definition, not by name.
    is_x_cdf : bool
        ``cdf_certified`` and ``GELU(x) − x Φ(x)`` expands to exactly 0.
    derivative : sympy.Expr
        ``GELU'(x)`` as SymPy differentiates it.
    derivative_is_cdf_plus_x_density : bool
        ``GELU' − (Φ + x φ)`` expands to exactly 0.
    limits : tuple of sympy.Expr
        ``lim_{x→∞} (GELU(x) − x)`` and ``lim_{x→−∞} GELU(x)``.
    limits_vanish : bool
        Both limits are exactly 0: GELU tends to the identity on the right and to 0 on the left.
    minimum_at : sympy.Float
        The root of ``GELU'`` near −0.75 (``sympy.nsolve``, 15 digits): where GELU is smallest.
    holds : bool
        All of the above verdicts.
    """

    x: sp.Symbol
    density: sp.Expr
    cdf: sp.Expr
    cdf_certified: bool
    is_x_cdf: bool
    derivative: sp.Expr
    derivative_is_cdf_plus_x_density: bool
    limits: tuple[sp.Expr, sp.Expr]
    limits_vanish: bool
    minimum_at: sp.Float
    holds: bool


def prove_gelu() -> GeluProof:
    r"""Prove ``GELU(x) = x Φ(x)`` with Φ certified as the normal CDF, ``GELU' = Φ + x φ``, and the limits.

    .. math::

        \Phi' = \varphi,\quad \Phi(-\infty) = 0,\quad \operatorname{GELU}(x) = x\,\Phi(x),\quad
        \operatorname{GELU}'(x) = \Phi(x) + x\,\varphi(x),\quad
        \lim_{x\to\infty} (\operatorname{GELU}(x) - x) = \lim_{x\to-\infty} \operatorname{GELU}(x) = 0.

    Returns
    -------
    GeluProof
        Every verdict True for :func:`gelu` as defined here.

    See Also
    --------
    gelu : the function proved about; attnsym.numeric.gelu : its floating-point twin.

    Examples
    --------
    >>> proof = prove_gelu()
    >>> proof.holds, proof.cdf_certified, proof.derivative_is_cdf_plus_x_density
    (True, True, True)
    >>> proof.limits
    (0, 0)
    >>> round(float(proof.minimum_at), 4)
    -0.7518
    """
    x = sp.Symbol("x", real=True)
    phi = sp.exp(-(x**2) / 2) / sp.sqrt(2 * sp.pi)
    Phi = (1 + sp.erf(x / sp.sqrt(2))) / 2
    cdf_certified = sp.simplify(sp.diff(Phi, x) - phi) == 0 and sp.limit(Phi, x, -sp.oo) == 0
    g = gelu(x)
    is_x_cdf = cdf_certified and sp.expand(g - x * Phi) == 0
    dg = sp.diff(g, x)
    derivative_ok = sp.expand(dg - (Phi + x * phi)) == 0
    limits = (sp.limit((g - x).rewrite(sp.erfc), x, sp.oo), sp.limit(g.rewrite(sp.erfc), x, -sp.oo))
    limits_vanish = limits == (0, 0)
    minimum_at = sp.nsolve(dg, x, -0.75)
    return GeluProof(x=x, density=phi, cdf=Phi, cdf_certified=bool(cdf_certified), is_x_cdf=bool(is_x_cdf),
                     derivative=dg, derivative_is_cdf_plus_x_density=bool(derivative_ok), limits=limits,
                     limits_vanish=bool(limits_vanish), minimum_at=minimum_at,
                     holds=bool(is_x_cdf and derivative_ok and limits_vanish))
