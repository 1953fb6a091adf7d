"""Is FAVOR+'s positive random-feature estimate of ``exp(xᵀy)`` unbiased, with Lemma 2's MSE? (Choromanski et al. 2021)

:func:`study` returns a :class:`PerformerResult`:

* exactly (d = 2, symbolic x, y): the first two moments of ``φ_ω(x)φ_ω(y)`` from
  :func:`attnsym.symbolic.performer.feature_moments` (Gaussian MGF), Lemma 2's MSE for one
  feature as :func:`lemma2_mse` writes it from the paper, and the completed square behind the MGF;
* Monte Carlo (d = 4, float64 :mod:`attnsym.numeric.performer`): per number of features m, the
  estimate's mean and MSE with Bonferroni 99.9 % half-widths beside the exact ones, and the bias of
  the row-normalised output against the softmax output.

The claim ``performer-unbiased`` judges it; :func:`attnsym.plots.literature_theory.performer_figure`
draws it.

>>> x, y = sp.Matrix([0, 0]), sp.Matrix([0, 0])
>>> lemma2_mse(x, y, 4)
0
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..numeric import performer as numeric_performer
from ..numeric import softmax as numeric_softmax
from ..numeric.montecarlo.moments import z_value
from ..symbolic import performer as exact_performer
from ._streams import Streams

__all__ = ["FeatureRow", "PerformerExact", "PerformerResult", "X", "Y", "lemma2_mse", "study"]

#: the sampled query and key of the kernel estimate (d = 4)
X, Y = (0.4, -0.2, 0.3, 0.1), (0.3, 0.2, -0.1, 0.4)
#: the query, keys and values of the normalised output whose bias is measured
QUERY = (1.0, 0.5, -0.5, 0.2)
KEYS = ((1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 0.0, 0.0), (-0.5, 0.5, 1.0, 0.0))
VALUES = ((1.0,), (0.0,), (-1.0,))


def lemma2_mse(x: sp.MatrixBase, y: sp.MatrixBase, m: sp.Expr | int) -> sp.Expr:
    """Lemma 2 of Choromanski et al., written from the paper: ``(1/m) e^{‖x+y‖²} SM²(x, y) (1 − e^{−‖x+y‖²})``."""
    s = (x + y).dot(x + y)
    return sp.exp(s) * sp.exp(x.dot(y)) ** 2 * (1 - sp.exp(-s)) / m


@dataclass(frozen=True)
class PerformerExact:
    """The symbolic ``x``, ``y`` (d = 2), ``E[φ(x)φ(y)]`` (``mean``) and ``E[(φ(x)φ(y))²]`` (``second``), Lemma 2's
    MSE for one feature, and whether the completed square behind the Gaussian MGF holds."""

    x: sp.Matrix
    y: sp.Matrix
    omega: tuple[sp.Symbol, ...]
    mean: sp.Expr
    second: sp.Expr
    lemma2: sp.Expr
    completed_square: bool


@dataclass(frozen=True)
class FeatureRow:
    """m features over many draws of Ω: the estimate's mean and MSE (Bonferroni 99.9 % half-widths), the exact MSE,
    and the normalised output's bias against the softmax output with its half-width."""

    m: int
    mean: float
    mean_half_width: float
    mse: float
    mse_half_width: float
    exact_mse: float
    bias: float
    bias_half_width: float


@dataclass(frozen=True)
class PerformerResult:
    """What :func:`study` found: the exact moments, ``exp(xᵀy)`` and the softmax output of the sampled case, the
    draws per m, one :class:`FeatureRow` per m."""

    exact: PerformerExact
    kernel: float
    softmax_output: float
    draws: int
    rows: tuple[FeatureRow, ...]

    @property
    def features(self) -> tuple[int, ...]:
        """The numbers of features sampled."""
        return tuple(r.m for r in self.rows)


def _exact() -> PerformerExact:
    x = sp.Matrix(sp.symbols("x_1:3", real=True))
    y = sp.Matrix(sp.symbols("y_1:3", real=True))
    omega = sp.symbols("omega_1:3", real=True)
    mean, second = exact_performer.feature_moments(x, y, omega)
    return PerformerExact(x, y, omega, mean, second, lemma2_mse(x, y, 1), exact_performer.completed_square())


def study(rng: Streams, *, quick: bool) -> PerformerResult:
    """The exact moments and the Monte Carlo rows (m = 1, 8 quick; 1, 4, 16, 64 full). ``rng()`` draws Ω."""
    xv, yv, q, K, V = (np.array(a) for a in (X, Y, QUERY, KEYS, VALUES))
    d = xv.size
    sm = math.exp(float(xv @ yv))
    features, draws = ((1, 8), 2000) if quick else ((1, 4, 16, 64), 20000)
    z = z_value(0.999, tests=3 * len(features))
    softmax_output = float((np.asarray(numeric_softmax(q @ K.T / 1.0)) @ V)[0])
    generator, rows = rng(), []
    for m in features:
        omega_draws = generator.standard_normal((draws, m, d))
        est = numeric_performer.kernel_estimate(xv, yv, omega_draws)  # (draws,)
        sq = (est - sm) ** 2
        out = numeric_performer.favor_attention(q[None, :], K, V, omega_draws)[..., 0, 0]  # (draws,)
        rows.append(FeatureRow(m, float(est.mean()), z * float(est.std()) / math.sqrt(draws), float(sq.mean()),
                               z * float(sq.std()) / math.sqrt(draws),
                               float(lemma2_mse(sp.Matrix(xv.tolist()), sp.Matrix(yv.tolist()), m)),
                               float(out.mean()) - softmax_output, z * float(out.std()) / math.sqrt(draws)))
    return PerformerResult(_exact(), sm, softmax_output, draws, tuple(rows))
