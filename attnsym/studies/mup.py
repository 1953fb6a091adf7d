"""How do logits of correlated q, k grow with d? The moments behind μP's 1/d (Yang et al. 2022), exactly and sampled.

:func:`study` returns a :class:`MupResult`:

* exactly (:func:`attnsym.symbolic.mup.correlated_dot_moments`, symbolic ρ and d): ``E[q·k]`` and
  ``Var[q·k]``, attnsym's independent moment engine at ρ = 0 and ρ = 1
  (:func:`attnsym.symbolic.stats.dot_product_moments`), and the limits as ``d → ∞`` of the logit
  scaled by ``1/√d`` and by ``1/d``;
* sampled (:func:`attnsym.numeric.mup.correlated_logits`) at ρ = 1/2 for several d: the mean and
  variance of each scaled logit with Bonferroni 99.9 % half-widths, beside the exact values;
* the exact mean ± one standard deviation on a grid of d, for the figure.

The claim ``mup-scaling`` judges it; :func:`attnsym.plots.literature_theory.mup_figure` draws it.

>>> MupSizes.of(quick=True).dims
(64, 512)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..numeric import mup as numeric_mup
from ..numeric.montecarlo.moments import z_value
from ..symbolic import mup as exact_mup
from ..symbolic.stats import dot_product_moments
from ._streams import Streams

__all__ = ["RHO", "MupExact", "MupResult", "MupSizes", "SampledLogit", "study"]

#: the correlation of the sampled q, k
RHO = sp.Rational(1, 2)


@dataclass(frozen=True)
class MupSizes:
    """The widths sampled and the draws per width."""

    dims: tuple[int, ...]
    samples: int

    @classmethod
    def of(cls, quick: bool) -> MupSizes:
        """Quick: d = 64, 512 with 1000 draws; full: d = 16 … 4096 with 2000."""
        return cls((64, 512), 1000) if quick else cls((16, 64, 256, 1024, 4096), 2000)


@dataclass(frozen=True)
class MupExact:
    """The exact moments of ``q·k`` in ``rho`` and ``d``; the independent engine's at ρ = 0 (``independent_mean``,
    ``independent_variance``) and for ``q = k`` (``same_variance``); the limits as d → ∞ of the mean and variance of
    the logit scaled by ``1/√d`` (``sqrt_*``) and by ``1/d`` (``mup_*``)."""

    rho: sp.Symbol
    d: sp.Symbol
    mean: sp.Expr
    variance: sp.Expr
    independent_mean: sp.Expr
    independent_variance: sp.Expr
    same_variance: sp.Expr
    sqrt_mean_limit: sp.Expr
    sqrt_variance_limit: sp.Expr
    mup_mean_limit: sp.Expr
    mup_variance_limit: sp.Expr


@dataclass(frozen=True)
class SampledLogit:
    """The sampled logit ``c·q·k`` at width ``d`` with ``c = 1/√d`` (``scale = "1/√d"``) or ``1/d``: mean and
    variance with their Bonferroni 99.9 % half-widths, and the exact values."""

    d: int
    scale: str
    mean: float
    mean_half_width: float
    exact_mean: float
    variance: float
    variance_half_width: float
    exact_variance: float

    @property
    def inside(self) -> bool:
        """The exact mean and variance lie inside the sampled ones' intervals."""
        return (abs(self.mean - self.exact_mean) <= self.mean_half_width
                and abs(self.variance - self.exact_variance) <= self.variance_half_width)


@dataclass(frozen=True)
class MupResult:
    """What :func:`study` found: the exact moments, the sampled logits (two scales per d), and the figure's grid of d
    with the exact mean and standard deviation per scale (``curves[scale] = (mean, std)``)."""

    sizes: MupSizes
    exact: MupExact
    sampled: tuple[SampledLogit, ...]
    grid: np.ndarray
    curves: dict[str, tuple[list[float], list[float]]]


def _exact() -> MupExact:
    rho, d = sp.Symbol("rho", positive=True), sp.Symbol("d", positive=True, integer=True)
    mean, var = exact_mup.correlated_dot_moments(rho, d)
    independent, same = dot_product_moments(), dot_product_moments(same=True)
    engine_d = sp.Symbol("d", positive=True, integer=True)
    return MupExact(rho, d, mean, var, independent.mean, independent.variance.subs(engine_d, d), same.variance,
                    sqrt_mean_limit=sp.limit(mean / sp.sqrt(d), d, sp.oo),
                    sqrt_variance_limit=sp.limit(sp.expand(var / d), d, sp.oo),
                    mup_mean_limit=sp.limit(sp.expand(mean / d), d, sp.oo),
                    mup_variance_limit=sp.limit(sp.expand(var / d**2), d, sp.oo))


def _sampled(e: MupExact, rng: np.random.Generator, sizes: MupSizes) -> tuple[SampledLogit, ...]:
    z = z_value(0.999, tests=4 * len(sizes.dims))  # two scales of the same draws: Bonferroni over all four intervals
    n, rows = sizes.samples, []
    for dim in sizes.dims:
        raw = numeric_mup.correlated_logits(rng, dim, n, float(RHO), 1.0)  # q·k; both scales of the same draws
        for label, c in (("1/√d", 1 / math.sqrt(dim)), ("1/d", 1 / dim)):
            x = c * raw
            at = {e.rho: RHO, e.d: dim}
            s2 = float(x.var(ddof=1))
            m4 = float(np.mean((x - x.mean()) ** 4))
            rows.append(SampledLogit(dim, label, float(x.mean()), z * math.sqrt(s2 / n), float((e.mean * c).subs(at)),
                                     s2, z * math.sqrt(max(m4 - s2 * s2, 0.0) / n), float((e.variance * c**2).subs(at))))
    return tuple(rows)


def study(rng: Streams, *, quick: bool) -> MupResult:
    """The exact moments and limits, the sampled logits at ρ = 1/2, and the figure's curves. ``rng()`` draws q, k."""
    sizes = MupSizes.of(quick)
    e = _exact()
    d = e.d
    grid = np.unique(np.logspace(1, 4, 40).astype(int))
    forms = (e.mean / sp.sqrt(d), sp.expand(e.variance / d), sp.expand(e.mean / d), sp.expand(e.variance / d**2))
    at_grid = sp.lambdify(d, [f.subs(e.rho, RHO) for f in forms], "numpy")
    values = [np.broadcast_to(np.asarray(v, dtype=float), grid.shape) for v in at_grid(grid.astype(float))]
    curves = {"1/√d": (values[0].tolist(), np.sqrt(values[1]).tolist()),
              "1/d": (values[2].tolist(), np.sqrt(values[3]).tolist())}
    return MupResult(sizes, e, _sampled(e, rng(), sizes), grid, curves)
