r"""Correlated queries and keys (Yang et al. 2022, Tensor Programs V): the moments of q·k, exactly.

Each coordinate pair is jointly Gaussian with unit variances and correlation ``ρ``, written
``q_i = z_1``, ``k_i = ρ z_1 + √(1 − ρ²) z_2`` with ``z_1, z_2`` independent standard normals;
pairs are independent across ``i = 1 … d``. Then ``E[q_i k_i] = ρ`` and, by Isserlis,
``E[q_i² k_i²] = 1 + 2ρ²``, so

.. math::

    E[q\cdot k] = \rho d, \qquad \operatorname{Var}[q\cdot k] = d(1 + \rho^2):

with the scale ``1/√d`` the logit's mean ``ρ√d`` grows with the width, with ``1/d`` (μP) the
logit tends to ``ρ`` and its variance ``(1 + ρ²)/d`` to 0.

* :func:`correlated_pair` — ``(q_i, k_i)`` in terms of ``z_1, z_2``;
* :func:`normal_moment` — ``E[z^k]`` of a standard normal: ``(k − 1)!!`` for even ``k``, else 0;
* :func:`normal_expectation` — ``E`` of a polynomial in independent standard normals, monomial by monomial;
* :func:`correlated_dot_moments` — ``(E[q·k], Var[q·k])`` for ``d`` independent pairs.
"""

from __future__ import annotations

import sympy as sp

from .._checks import non_negative_int
from .._exact import exact, exact_matrix
from ..errors import SpecError

__all__ = ["correlated_dot_moments", "correlated_pair", "normal_expectation", "normal_moment"]


def correlated_pair(rho, z1, z2) -> tuple[sp.Expr, sp.Expr]:
    """``(z_1, ρ z_1 + √(1 − ρ²) z_2)``: unit variances, correlation ``ρ``.

    >>> correlated_pair(sp.Rational(3, 5), *sp.symbols("z1 z2"))
    (z1, 3*z1/5 + 4*z2/5)
    """
    rho, z1, z2 = exact("rho", rho), exact("z1", z1), exact("z2", z2)
    return z1, rho * z1 + sp.sqrt(1 - rho**2) * z2


def normal_moment(k: int) -> int:
    """``E[z^k]`` for ``z ~ N(0, 1)``: 1, 0, 1, 0, 3, 0, 15, …

    >>> [normal_moment(k) for k in range(7)]
    [1, 0, 1, 0, 3, 0, 15]
    """
    k = non_negative_int("k", k)
    return 0 if k % 2 else int(sp.factorial2(k - 1)) if k else 1


def normal_expectation(expr, variables) -> sp.Expr:
    """``E[expr]`` for a polynomial in independent standard normals ``variables``.

    >>> z1, z2 = sp.symbols("z1 z2")
    >>> normal_expectation((z1 + z2) ** 4, (z1, z2))
    12
    """
    variables = tuple(exact_matrix("variables", list(variables)))
    if not variables or not all(isinstance(v, sp.Symbol) for v in variables):
        raise SpecError(f"variables must be SymPy symbols (got {variables})")
    poly = sp.Poly(sp.expand(exact("expr", expr)), *variables)
    total = sp.Integer(0)
    for powers, coefficient in poly.terms():
        factor = sp.Integer(1)
        for k in powers:
            factor *= normal_moment(k)
        total += coefficient * factor
    return sp.expand(total)


def correlated_dot_moments(rho, d) -> tuple[sp.Expr, sp.Expr]:
    """``(E[q·k], Var[q·k]) = (d E[q_1k_1], d Var[q_1k_1])`` for ``d`` independent correlated pairs.

    >>> rho, d = sp.symbols("rho d", positive=True)
    >>> correlated_dot_moments(rho, d)
    (d*rho, d*(rho**2 + 1))
    """
    z1, z2 = sp.symbols("z_1 z_2", real=True)
    q, k = correlated_pair(rho, z1, z2)
    first = normal_expectation(q * k, (z1, z2))
    second = normal_expectation((q * k) ** 2, (z1, z2))
    d = exact("d", d)
    return sp.factor(d * first), sp.factor(d * (second - first**2))
