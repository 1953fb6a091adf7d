"""The top softmax weight of one logit Δ above n − 1 equal ones, plain and with scalable softmax (s·log n), exactly.

Chiang & Cholak (2022) and Nakanishi's SSMax (2025): multiplying the logits by ``s·log n``
turns ``a_max = 1/(1 + (n − 1)e^{−Δ})`` (which tends to 0) into
``1/(1 + (n − 1) n^{−sΔ})``, which tends to 1, 1/2 or 0 as ``sΔ`` is above, at or below 1.
"""

from __future__ import annotations

import sympy as sp

from .._exact import exact

__all__ = ["scaled_top_weight", "top_weight"]


def top_weight(n, gap):
    """``1/(1 + (n − 1)e^{−Δ})``.

    >>> n = sp.Symbol("n", positive=True)
    >>> sp.limit(top_weight(n, 3), n, sp.oo)
    0
    """
    n, gap = exact("n", n), exact("gap", gap)
    return 1 / (1 + (n - 1) * sp.exp(-gap))


def scaled_top_weight(n, gap, s):
    """The top weight after the logits are multiplied by ``s·log n``: ``1/(1 + (n − 1) e^{−sΔ log n})``.

    >>> n = sp.Symbol("n", positive=True)
    >>> [sp.limit(scaled_top_weight(n, 1, s), n, sp.oo) for s in (2, 1, sp.Rational(1, 2))]
    [1, 1/2, 0]
    """
    n, gap, s = exact("n", n), exact("gap", gap), exact("s", s)
    return top_weight(n, s * gap * sp.log(n))
