r"""FAVOR+ positive random features (Choromanski et al. 2021): unbiasedness and variance, exactly.

With ``ω ~ N(0, I_d)`` the positive feature of ``x`` is ``φ_ω(x) = exp(ωᵀx − ‖x‖²/2)`` and
``Z = φ_ω(x) φ_ω(y) = exp(ωᵀ(x + y) − (‖x‖² + ‖y‖²)/2)``. Its moments follow from the Gaussian
moment generating function ``E[exp(uᵀω)] = exp(‖u‖²/2)``, itself the completed square
``u w − w²/2 = u²/2 − (w − u)²/2`` per coordinate (the shifted normal density integrates to 1):

.. math::

    E[Z] = e^{x^\top y},\qquad
    \operatorname{Var} Z = E[Z^2] - E[Z]^2 = e^{\|x+y\|^2} e^{2x^\top y}\,(1 - e^{-\|x+y\|^2}),

so the mean of ``m`` independent features estimates ``exp(xᵀy)`` without bias with MSE
``Var Z / m`` (the paper's Lemma 2).

* :func:`positive_feature` — ``φ_ω(x)``;
* :func:`completed_square` — the per-coordinate identity behind the MGF (True when it expands to 0);
* :func:`gaussian_exp_expectation` — ``E_ω[exp(L(ω))]`` for an exponent affine in ``ω``;
* :func:`feature_moments` — ``(E[Z], E[Z²])`` for ``Z = φ_ω(x) φ_ω(y)``.
"""

from __future__ import annotations

import sympy as sp

from .._exact import exact, exact_matrix
from ..errors import SpecError

__all__ = ["completed_square", "feature_moments", "gaussian_exp_expectation", "positive_feature"]


def positive_feature(x, omega):
    """``exp(ωᵀx − ‖x‖²/2)`` for column (or row) vectors ``x``, ``ω``.

    >>> positive_feature([1, 0], [2, 5])
    exp(3/2)
    """
    x, omega = exact_matrix("x", x), exact_matrix("omega", omega)
    x, omega = x.reshape(len(x), 1), omega.reshape(len(omega), 1)
    return sp.exp(omega.dot(x) - x.dot(x) / 2)


def completed_square() -> bool:
    """``u w − w²/2 = u²/2 − (w − u)²/2``: ``∫ e^{uw} φ(w) dw = e^{u²/2} ∫ φ(w − u) dw = e^{u²/2}``.

    >>> completed_square()
    True
    """
    u, w = sp.symbols("u w", real=True)
    return sp.expand(u * w - w**2 / 2 - (u**2 / 2 - (w - u) ** 2 / 2)) == 0


def _exponent(expr):
    combined = sp.powsimp(sp.expand_power_base(expr), combine="exp")
    if combined == 1:
        return sp.Integer(0)
    if not isinstance(combined, sp.exp):
        raise SpecError(f"expected a single exponential exp(L(ω)), got {combined}")
    return sp.expand(combined.args[0])


def gaussian_exp_expectation(expr, omega):
    """``E_ω[expr]`` for ``expr = exp(c + uᵀω)`` and ``ω ~ N(0, I)``: ``exp(c + ‖u‖²/2)``.

    The exponent must be affine in ``ω`` (else :class:`~attnsym.errors.SpecError`); the MGF is the
    completed square of :func:`completed_square`.

    >>> w = sp.symbols("w_1:3", real=True)
    >>> gaussian_exp_expectation(sp.exp(2 * w[0] - w[1] + 1), w)
    exp(7/2)
    """
    omega = list(exact_matrix("omega", list(omega)))
    if not all(isinstance(w, sp.Symbol) for w in omega):
        raise SpecError(f"omega must be SymPy symbols (got {omega})")
    L = _exponent(exact("expr", expr))
    if any(sp.diff(L, a, b) != 0 for a in omega for b in omega):
        raise SpecError(f"the exponent {L} is not affine in {omega}")
    u = [sp.diff(L, w) for w in omega]
    c = L.xreplace({w: sp.Integer(0) for w in omega})
    return sp.exp(sp.expand(c + sum(ui**2 for ui in u) / 2))


def feature_moments(x, y, omega) -> tuple[sp.Expr, sp.Expr]:
    """``(E[Z], E[Z²])`` for ``Z = φ_ω(x) φ_ω(y)`` (:func:`positive_feature`), ``ω`` the symbols of the feature.

    >>> w = sp.symbols("w_1:3", real=True)
    >>> feature_moments([1, 0], [1, 0], w)
    (E, exp(6))
    """
    z = positive_feature(x, omega) * positive_feature(y, omega)
    return gaussian_exp_expectation(z, omega), gaussian_exp_expectation(z**2, omega)
