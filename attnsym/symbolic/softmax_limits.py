"""Exact limits of softmax: dispersion, the entropy lower bound and the Jacobian's spectral norm.

Three results from the literature on attention, in closed form (SymPy) so that a claim can
check them exactly and a figure can draw them:

* :func:`dispersion_top_weight` — one logit ``Δ`` above ``n − 1`` equal ones: the top weight
  ``1 / (1 + (n − 1) e^{−Δ})`` tends to 0 as ``n`` grows (Veličković et al. 2024, Thm 2.2);
* :func:`entropy_lower_bound` and :func:`entropy_minimiser` — the smallest entropy of
  ``softmax(z)`` over ``‖z‖₂ ≤ σ`` with ``T`` keys (Zhai et al. 2023, Thm 3.1) and the logits
  that reach it;
* :func:`two_point_jacobian_norm` and :func:`jacobian_quadratic_form` — ``‖diag(a) − a aᵀ‖₂``
  at ``a = (p, 1 − p, 0, …)`` is ``2p(1 − p)`` and ``vᵀ J v`` is the variance of ``v`` under ``a``.

>>> import sympy as sp
>>> n, gap = sp.symbols("n Delta", positive=True)
>>> sp.limit(dispersion_top_weight(n, gap), n, sp.oo)
0
"""

from __future__ import annotations

import sympy as sp

from .._checks import positive_int
from .._exact import exact

__all__ = [
    "dispersion_half_point",
    "dispersion_top_weight",
    "entropy",
    "entropy_lower_bound",
    "entropy_minimiser",
    "jacobian_quadratic_form",
    "two_point_jacobian_norm",
]


def dispersion_top_weight(n, gap):
    """The largest softmax weight when one logit exceeds ``n − 1`` equal others by ``gap``.

    .. math:: a_{\\max} = \\frac{e^{\\Delta}}{e^{\\Delta} + n - 1} = \\frac{1}{1 + (n - 1) e^{-\\Delta}}

    It is also the largest weight any key can get when all ``n`` logits lie in an interval of
    width ``gap`` (the top logit at the top of the interval, every other at the bottom).

    >>> float(dispersion_top_weight(10, 5))  # logits +3 and nine times -2
    0.9428...
    """
    n, gap = exact("n", n), exact("gap", gap)
    return 1 / (1 + (n - 1) * sp.exp(-gap))


def dispersion_half_point(gap):
    """The number of keys at which the top weight of :func:`dispersion_top_weight` falls to 1/2: ``1 + e^Δ``.

    >>> dispersion_half_point(5)
    1 + exp(5)
    """
    return 1 + sp.exp(exact("gap", gap))


def entropy(a) -> sp.Expr:
    """Shannon entropy ``−Σ a_i log a_i`` (nats) of a probability vector (SymPy entries)."""
    return -sum(p * sp.log(p) for p in (exact("a", v) for v in a))


def entropy_lower_bound(sigma, T):
    """Zhai et al. (2023), Theorem 3.1: the least entropy of ``softmax(z)`` over ``‖z‖₂ ≤ σ``, ``T`` keys.

    .. math::

        H \\ge \\log(1 + (T-1)\\beta) + \\frac{\\sigma \\sqrt{T(T-1)}\\,\\beta}{1 + (T-1)\\beta},
        \\qquad \\beta = \\exp\\!\\left(-\\sigma\\sqrt{T/(T-1)}\\right)

    >>> float(entropy_lower_bound(0, 4)) == float(sp.log(4))  # σ = 0: uniform weights
    True
    """
    sigma, T = exact("sigma", sigma), exact("T", T)
    beta = sp.exp(-sigma * sp.sqrt(T / (T - 1)))
    return sp.log(1 + (T - 1) * beta) + sigma * sp.sqrt(T * (T - 1)) * beta / (1 + (T - 1) * beta)


def entropy_minimiser(sigma, T: int | sp.Expr):
    """The logits that reach :func:`entropy_lower_bound`: one key against ``T − 1`` equal ones, ``‖z‖₂ = σ``, mean 0.

    Returns ``(z_top, z_rest)``: ``z_top = σ √((T − 1)/T)``, ``z_rest = −σ / √(T(T − 1))``; their
    gap is ``σ √(T/(T − 1))``, so ``β = e^{−gap}`` is the ratio of a rest weight to the top one.

    >>> top, rest = entropy_minimiser(sp.Symbol("sigma", positive=True), 4)
    >>> sp.simplify(top**2 + 3 * rest**2)
    sigma**2
    """
    sigma, T = exact("sigma", sigma), exact("T", T)
    return sigma * sp.sqrt((T - 1) / T), -sigma / sp.sqrt(T * (T - 1))


def two_point_jacobian_norm(p):
    """The spectral norm of ``diag(a) − a aᵀ`` at ``a = (p, 1 − p, 0, …, 0)``: ``2p(1 − p)``, at most 1/2 (p = 1/2).

    Computed from the eigenvalues of the 2 × 2 block (the zero weights add zero rows and columns).

    >>> two_point_jacobian_norm(sp.Rational(1, 2))
    1/2
    """
    p = exact("p", p)
    a = sp.Matrix([p, 1 - p])
    J = sp.diag(*a) - a * a.T
    eigs = [sp.factor(e) for e in J.eigenvals()]
    nonzero = [e for e in eigs if e != 0]
    return sp.factor(nonzero[0]) if nonzero else sp.Integer(0)


def jacobian_quadratic_form(n: int) -> tuple[sp.Expr, sp.Expr]:
    """``vᵀ (diag(a) − a aᵀ) v`` and the variance ``Σ a_i v_i² − (Σ a_i v_i)²`` of ``v`` under ``a``, for symbolic a, v.

    They are the same polynomial: the Jacobian is the covariance matrix of a one-hot draw from
    ``a``, so its largest eigenvalue is the largest variance of a unit vector ``v`` under ``a``.

    >>> form, var = jacobian_quadratic_form(3)
    >>> sp.expand(form - var)
    0
    """
    n = positive_int("n", n)
    a = sp.Matrix(sp.symbols(f"a_0:{n}", nonnegative=True))
    v = sp.Matrix(sp.symbols(f"v_0:{n}", real=True))
    J = sp.diag(*a) - a * a.T
    form = (v.T * J * v)[0]
    mean = sum(a[i] * v[i] for i in range(n))
    variance = sum(a[i] * v[i] ** 2 for i in range(n)) - mean**2
    return sp.expand(form), sp.expand(variance)
