"""Softmax with an attention sink: Miller's softmax₁ (2023) and a learned sink logit, exactly.

* :func:`softmax_one` — ``softmax₁(x)_i = e^{x_i} / (1 + Σ_j e^{x_j})`` (weights may sum to less than 1);
* :func:`sink_softmax` — softmax over ``[s, x_1 … x_n]``, the sink's weight first;
* :func:`sink_mass` — the sink's weight written as ``σ(s − lse(x))``.
"""

from __future__ import annotations

import sympy as sp

from .._exact import exact, exact_matrix

__all__ = ["sink_mass", "sink_softmax", "softmax_one"]


def softmax_one(x: sp.Matrix) -> sp.Matrix:
    """``e^{x_i} / (1 + Σ_j e^{x_j})`` for a row (or column) of logits.

    >>> softmax_one(sp.Matrix([0, 0]))
    Matrix([
    [1/3],
    [1/3]])
    """
    e = exact_matrix("x", x).applyfunc(sp.exp)
    return e / (1 + sum(e))


def sink_softmax(x: sp.Matrix, s) -> sp.Matrix:
    """Softmax over ``[s, x_1 … x_n]`` (a column): entry 0 is the sink's weight.

    >>> sink_softmax(sp.Matrix([0]), 0).T
    Matrix([[1/2, 1/2]])
    """
    column = exact_matrix("x", x)
    z = sp.Matrix.vstack(sp.Matrix([[exact("s", s)]]), column.reshape(len(column), 1))
    e = z.applyfunc(sp.exp)
    return e / sum(e)


def sink_mass(x: sp.Matrix, s):
    """``σ(s − lse(x)) = 1 / (1 + e^{−(s − log Σ_j e^{x_j})})``.

    >>> sink_mass(sp.Matrix([0]), 0)
    1/2
    """
    lse = sp.log(sum(exact_matrix("x", x).applyfunc(sp.exp)))
    return 1 / (1 + sp.exp(-(exact("s", s) - lse)))
