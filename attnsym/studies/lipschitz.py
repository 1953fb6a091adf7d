"""Is dot-product self-attention Lipschitz? Kim et al.'s witness, exactly and in float64, and the growth of ‖J‖₂.

:func:`study` returns a :class:`LipschitzResult`:

* the exact half: the Jacobian block ``∂f₁/∂x₁`` of attnsym's symbolic layer at ``x₁ = 0,
  x₂ = t u`` against the closed form ``½W_V + (t²/4)c(W_Q W_Kᵀuᵀ)(uW_V)`` of
  :func:`attnsym.symbolic.lipschitz.kim_witness_block` with ``c = 1/√d`` — at ``d = 1`` with
  symbolic weights and, in quick mode too, at ``d = 2`` with integer weights (where ``1/√d`` and a
  wrong ``1/d`` differ); its degree in ``t`` and its limit;
* the float64 layer's Jacobian at the witness against the exact entry;
* the largest ``‖J‖₂`` found in balls of growing radius (random points and a local search).

The claim ``not-lipschitz`` judges it; :func:`attnsym.plots.literature_theory.lipschitz_result_figure`
draws it.

>>> LipschitzSizes.of(quick=True).radii
(2.0, 8.0, 32.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .._exact import exact
from ..numeric import lipschitz as numeric_lipschitz
from ..symbolic import lipschitz as exact_lipschitz
from ._streams import Streams

__all__ = ["D2_DIRECTION", "D2_WEIGHTS", "LipschitzResult", "LipschitzSizes", "study"]

#: the integer weights and direction of the d = 2 witness (W_Q W_Kᵀ uᵀ ≠ 0 and u W_V ≠ 0)
D2_WEIGHTS = {"W_Q": [[1, 3], [2, 4]], "W_K": [[1, 0], [-1, 2]], "W_V": [[2, 1], [0, 1]]}
D2_DIRECTION = (1, 2)


@dataclass(frozen=True)
class LipschitzSizes:
    """Radii of the balls searched, random points per radius, and the witness grid ``t = 0 … 12``."""

    radii: tuple[float, ...]
    samples: int
    ts: tuple[float, ...] = tuple(float(v) for v in range(13))

    @classmethod
    def of(cls, quick: bool) -> LipschitzSizes:
        """Quick: radii 2, 8, 32 and 30 points; full: radii 2 … 64 and 200 points."""
        return cls((2.0, 8.0, 32.0), 30) if quick else cls((2.0, 4.0, 8.0, 16.0, 32.0, 64.0), 200)


@dataclass(frozen=True)
class LipschitzResult:
    """What :func:`study` found.

    ``entry`` is ``∂f₁/∂x₁`` of the symbolic layer at ``d = 1`` (symbolic ``w_q, w_k, w_v``),
    ``closed`` the closed form there; ``degree`` its degree in ``t`` (None: not a polynomial);
    ``limit`` its limit for unit weights; ``d2_equal`` whether the ``d = 2`` layer equals the closed
    form with ``c = 1/√2``. ``numeric_entry`` / ``exact_entry`` are the float64 and exact entries on
    ``sizes.ts``; ``largest`` / ``median`` the ``‖J‖₂`` found per radius, ``slope`` the growth
    exponent between the first and last radius.
    """

    sizes: LipschitzSizes
    t: sp.Symbol
    entry: sp.Expr
    closed: sp.Expr
    degree: int | None
    limit: sp.Expr
    d2_equal: bool
    numeric_entry: np.ndarray
    exact_entry: np.ndarray
    largest: tuple[float, ...]
    median: tuple[float, ...]

    @property
    def entry_equal(self) -> bool:
        """The symbolic layer's entry equals the closed form (d = 1, symbolic weights)."""
        return sp.expand(self.entry - self.closed) == 0

    @property
    def numeric_gap(self) -> float:
        """Largest relative difference of the float64 entry from the exact one on the grid."""
        return float(np.max(np.abs(self.numeric_entry - self.exact_entry) / np.maximum(1.0, np.abs(self.exact_entry))))

    @property
    def slope(self) -> float:
        """``log(largest[-1]/largest[0]) / log(r[-1]/r[0])``: how fast the largest ``‖J‖₂`` found grows with ``r``."""
        r = self.sizes.radii
        return math.log(self.largest[-1] / self.largest[0]) / math.log(r[-1] / r[0])


def study(rng: Streams, *, quick: bool) -> LipschitzResult:
    """Kim et al.'s witness on attnsym's layers, and the largest Jacobian norm found in growing balls.

    ``rng()`` draws the orthogonal weights (n = 3, d = 2) and the search points.
    """
    sizes = LipschitzSizes.of(quick)
    t = sp.Symbol("t", real=True)
    wq, wk, wv = sp.symbols("w_q w_k w_v", real=True)
    entry = exact_lipschitz.witness_jacobian(1, t, weights={"W_Q": [[wq]], "W_K": [[wk]], "W_V": [[wv]]})[0, 0]
    closed = exact_lipschitz.kim_witness_block(t, [[wq]], [[wk]], [[wv]], 1, [1])[0, 0]
    degree = sp.Poly(entry, t).degree() if entry.is_polynomial(t) else None
    at_one = entry.subs({wq: 1, wk: 1, wv: 1})
    block = exact_lipschitz.witness_jacobian(2, t, direction=list(D2_DIRECTION), weights=D2_WEIGHTS)
    closed2 = exact_lipschitz.kim_witness_block(t, D2_WEIGHTS["W_Q"], D2_WEIGHTS["W_K"], D2_WEIGHTS["W_V"],
                                                1 / sp.sqrt(2), list(D2_DIRECTION))
    ts = np.array(sizes.ts)
    X = np.zeros((ts.size, 2, 1))  # (grid, n = 2, d = 1): x₁ = 0, x₂ = t
    X[:, 1, 0] = ts
    one = np.eye(1)
    generator = rng()
    Ws = [np.linalg.qr(generator.standard_normal((2, 2)))[0] for _ in range(3)]  # random orthogonal W_Q, W_K, W_V
    found = [numeric_lipschitz.largest_jacobian_norm(generator, r, sizes.samples, *Ws, n=3, d=2) for r in sizes.radii]
    return LipschitzResult(
        sizes=sizes, t=t, entry=entry, closed=closed, degree=degree, limit=sp.limit(at_one, t, sp.oo),
        d2_equal=(block - closed2).applyfunc(sp.expand).is_zero_matrix is True,
        numeric_entry=numeric_lipschitz.input_jacobians(X, one, one, one)[:, 0, 0],
        exact_entry=np.array([float(at_one.subs(t, exact("sizes.ts", v))) for v in ts]),
        largest=tuple(f[0] for f in found), median=tuple(f[1] for f in found))
