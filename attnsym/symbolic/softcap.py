"""Logit soft-capping (Gemma 2): ``c·tanh(ℓ/c)``, exactly, and the facts the ``softcap-facts`` claim checks.

* :func:`softcap` — the capped logit ``c·tanh(ℓ/c)`` as a SymPy expression;
* :func:`softcap_slope` — its derivative ``∂/∂ℓ``, which lies in ``(0, 1]`` (order preserved, 1-Lipschitz);
* :func:`cubic_gap_certificate` — ``g(x) = tanh x − x + x³/3`` with ``g(0) = 0`` and
  ``g′(x) = x² − tanh² x ≥ 0`` (because ``|tanh x| ≤ |x|``), so ``x − tanh x ≤ x³/3`` for ``x ≥ 0``,
  which with ``x = |ℓ|/c`` is ``|ℓ − c·tanh(ℓ/c)| ≤ |ℓ|³/(3c²)``.
"""

from __future__ import annotations

import sympy as sp

from .._exact import exact

__all__ = ["cubic_gap_certificate", "softcap", "softcap_slope"]


def softcap(logit, cap):
    """``cap·tanh(logit/cap)``.

    >>> l, c = sp.symbols("ell c", positive=True)
    >>> softcap(l, c)
    c*tanh(ell/c)
    """
    logit, cap = exact("logit", logit), exact("cap", cap)
    return cap * sp.tanh(logit / cap)


def softcap_slope(logit, cap):
    """``∂ softcap/∂ℓ`` rewritten with ``tanh``: ``1 − tanh²(ℓ/c)``.

    >>> l, c = sp.symbols("ell c", positive=True)
    >>> softcap_slope(l, c)
    1 - tanh(ell/c)**2
    """
    return sp.expand(sp.diff(softcap(logit, cap), logit))


def cubic_gap_certificate() -> tuple[sp.Expr, sp.Expr, bool]:
    """``(g, g′, g′ = x² − tanh² x)`` for ``g(x) = tanh x − x + x³/3``: the proof of the cubic error bound.

    >>> g, dg, identity = cubic_gap_certificate()
    >>> identity, g.subs(sp.Symbol("x", nonnegative=True), 0)
    (True, 0)
    """
    x = sp.Symbol("x", nonnegative=True)
    g = sp.tanh(x) - x + x**3 / 3
    dg = sp.diff(g, x)
    identity = sp.simplify(dg.rewrite(sp.tanh) - (x**2 - sp.tanh(x) ** 2)) == 0
    return g, dg, bool(identity)
