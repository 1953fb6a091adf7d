"""Does scaling logits by ``s·log n`` keep attention sharp as n grows? (Chiang & Cholak 2022; SSMax 2025)

:func:`study` returns a :class:`LengthScalingResult`: with one logit Δ = 2 above n − 1 equal ones,
the exact limit of the plain top weight (:func:`attnsym.symbolic.length_scaling.top_weight`) and of
the scaled one (:func:`~attnsym.symbolic.length_scaling.scaled_top_weight`) for ``sΔ`` = 2, 1, ½;
the top weight of :func:`attnsym.numeric.length_scaling.scalable_softmax` on the actual logit vectors
for n up to 10⁵ against the exact form; the figure's curves.

The claim ``length-scaling`` judges it; :func:`attnsym.plots.literature.length_scaling_figure` draws it.

>>> ScaledRow("2", 10, 0.5, 0.5).gap
0.0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..numeric.length_scaling import scalable_softmax
from ..symbolic.length_scaling import scaled_top_weight, top_weight

__all__ = ["GAP", "PRODUCTS", "LengthScalingResult", "ScaledRow", "study"]

#: the logit gap Δ and the products sΔ (above, at and below 1)
GAP = sp.Integer(2)
PRODUCTS = (sp.Integer(2), sp.Integer(1), sp.Rational(1, 2))


@dataclass(frozen=True)
class ScaledRow:
    """``sΔ`` (as text), ``n``, the float64 top weight and the exact one at that n."""

    product: str
    n: int
    numeric: float
    exact: float

    @property
    def gap(self) -> float:
        """``|numeric − exact|``."""
        return abs(self.numeric - self.exact)


@dataclass(frozen=True)
class LengthScalingResult:
    """What :func:`study` found: the plain limit, the scaled limits (one per product), the rows, the figure's n and
    curves (label -> top weight per n)."""

    plain_limit: sp.Expr
    limits: tuple[sp.Expr, ...]
    rows: tuple[ScaledRow, ...]
    curve_n: np.ndarray
    curves: dict[str, list[float]]

    @property
    def sizes(self) -> tuple[int, ...]:
        """The n of the float64 rows."""
        return tuple(sorted({r.n for r in self.rows}))


def study(*, quick: bool) -> LengthScalingResult:
    """Exact limits and float64 rows for n = 10 … 10⁴ (10⁵ in full mode); nothing is sampled."""
    n = sp.Symbol("n", positive=True)
    limits = tuple(sp.limit(scaled_top_weight(n, GAP, p / GAP), n, sp.oo) for p in PRODUCTS)
    rows = []
    for p in PRODUCTS:
        for m in (10, 100, 1000, 10000) if quick else (10, 100, 1000, 10000, 100000):
            z = np.zeros(m)
            z[0] = float(GAP)
            rows.append(ScaledRow(str(p), m, float(scalable_softmax(z, float(p / GAP))[0]),
                                  float(scaled_top_weight(sp.Integer(m), GAP, p / GAP))))
    curve_n = np.unique(np.logspace(0.3, 8, 80).astype(int))
    nn, ss = sp.symbols("n s", positive=True)
    scaled = sp.lambdify((nn, ss), scaled_top_weight(nn, GAP, ss), "numpy")
    plain = sp.lambdify(nn, top_weight(nn, GAP), "numpy")
    curves = {f"sΔ = {p}": scaled(curve_n.astype(float), float(p / GAP)).tolist() for p in PRODUCTS}
    curves["no scaling (Δ = 2)"] = plain(curve_n.astype(float)).tolist()
    return LengthScalingResult(sp.limit(top_weight(n, GAP), n, sp.oo), limits, tuple(rows), curve_n, curves)
