"""The limits of softmax: dispersion with a fixed gap, the Jacobian's norm, Zhai et al.'s entropy bound.

Three studies, each exact where SymPy can do it and searched or sampled where not:

* :func:`dispersion_study` — the top weight ``1/(1 + (n − 1)e^{−Δ})`` of one logit Δ above
  ``n − 1`` equal ones (:func:`attnsym.symbolic.softmax_limits.dispersion_top_weight`), its limit and
  ½ point; :func:`attnsym.numeric.softmax` on those logit vectors; random logits in ``[0, Δ]``
  against the form; the figure's curves;
* :func:`jacobian_norm_study` — the two-point norm ``2p(1 − p)`` and its critical points, the
  quadratic form as a variance (n = 3), the largest ``‖diag(a) − a aᵀ‖₂`` found by
  :func:`attnsym.numeric.softmax_search.max_jacobian_norm`, Dirichlet samples for the figure;
* :func:`entropy_bound_study` — the minimiser of entropy on the sphere ``‖z‖ = σ``
  (:func:`attnsym.symbolic.softmax_limits.entropy_minimiser`), its entropy in closed form and from
  the definition at exact points, the least entropy a search finds for T = 16 keys.

The claims ``dispersion``, ``softmax-jacobian-norm`` and ``entropy-lower-bound`` judge them;
:mod:`attnsym.plots.limits` draws them.

>>> r = dispersion_study(lambda *k: np.random.default_rng(0), quick=True, gap=5, sizes=(10,))
>>> r.rows[0].n, round(r.rows[0].exact, 3)
(10, 0.943)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .._exact import exact
from ..numeric import softmax, softmax_jacobian
from ..numeric.softmax_search import entropy_on_sphere, max_jacobian_norm, min_entropy_on_sphere, softmax_entropy
from ..symbolic.softmax_limits import (
    dispersion_half_point,
    dispersion_top_weight,
    entropy,
    entropy_lower_bound,
    entropy_minimiser,
    jacobian_quadratic_form,
    two_point_jacobian_norm,
)
from ._streams import Streams

__all__ = ["ENTROPY_KEYS", "DispersionResult", "DispersionRow", "EntropyBoundResult", "EntropyExactPoint",
           "EntropySearchRow", "JacobianNormResult", "NormSearchRow", "dispersion_study", "entropy_bound_study",
           "entropy_figure_draws", "jacobian_norm_study"]


# ----------------------------------------------------------------------------- dispersion

@dataclass(frozen=True)
class DispersionRow:
    """``n`` keys: the exact top weight and :func:`attnsym.numeric.softmax`'s on the actual logit vector."""

    n: int
    exact: float
    numeric: float


@dataclass(frozen=True)
class DispersionResult:
    """What :func:`dispersion_study` found: the symbols ``n``, ``Delta``, the form ``top`` and its limit, the ½ point
    at the gap, a :class:`DispersionRow` per size, whether random logits in ``[0, Δ]`` stayed below the form per random
    size, and the figure's curves (top weight against ``curve_n`` per gap)."""

    gap: float
    n: sp.Symbol
    Delta: sp.Symbol
    top: sp.Expr
    limit: sp.Expr
    half_point: sp.Expr
    rows: tuple[DispersionRow, ...]
    random_below: dict[int, bool]
    curve_n: np.ndarray
    curves: dict[float, list[float]]


def dispersion_study(rng: Streams, *, quick: bool, gap: float, sizes: Sequence[int]) -> DispersionResult:
    """The exact form at ``sizes`` with the logit gap ``gap``, random logits (200 rows per n), the figure's curves."""
    n, D = sp.symbols("n Delta", positive=True)
    top = dispersion_top_weight(n, D)
    exact_gap = exact("gap", gap, floats="rational")
    rows = []
    for size in sorted(sizes):
        z = np.full(size, -2.0)
        z[0] = -2.0 + float(gap)
        rows.append(DispersionRow(size, float(top.subs({n: exact("claimed n", size), D: exact_gap})),
                                  float(np.asarray(softmax(z))[0])))
    generator, below = rng(), {}
    for size in (10, 100, 1000) if quick else (10, 100, 1000, 10000):  # any logits inside an interval of width gap
        Z = generator.uniform(0.0, float(gap), size=(200, size))
        below[size] = float(np.asarray(softmax(Z)).max()) <= float(top.subs({n: exact("n", size), D: exact_gap})) + 1e-15
    curve_n = np.unique(np.logspace(0, 6, 61).astype(int))
    gaps = (1.0, 3.0, float(gap), 10.0) if float(gap) not in (1.0, 3.0, 10.0) else (1.0, 3.0, 10.0)
    curves = {g: [float(1 / (1 + (m - 1) * math.exp(-g))) for m in curve_n] for g in gaps}
    return DispersionResult(float(gap), n, D, top, sp.limit(top, n, sp.oo), dispersion_half_point(exact_gap),
                            tuple(rows), below, curve_n, curves)


# ----------------------------------------------------------------------------- softmax-jacobian-norm

@dataclass(frozen=True)
class NormSearchRow:
    """The largest ``‖diag(a) − a aᵀ‖₂`` found for ``n`` keys, the evaluations it took, the two largest weights there."""

    n: int
    largest: float
    evaluations: int
    top_two: tuple[float, float]


@dataclass(frozen=True)
class JacobianNormResult:
    """What :func:`jacobian_norm_study` found: the two-point norm in ``p``, its critical points in (0, 1) and the
    largest value there (None: none), whether ``vᵀJv = Var_a(v)`` (n = 3), the searches, and the figure's Dirichlet
    samples (n = 3) with their norms."""

    p: sp.Symbol
    two_point: sp.Expr
    critical: tuple[sp.Expr, ...]
    peak: sp.Expr | None
    variance_identity: bool
    rows: tuple[NormSearchRow, ...]
    samples: np.ndarray
    norms: np.ndarray

    @property
    def largest(self) -> float:
        """The largest norm any search found."""
        return max(r.largest for r in self.rows)


def jacobian_norm_study(rng: Streams, *, quick: bool) -> JacobianNormResult:
    """The exact two-point analysis and the searches (n up to 8 quick, 16 full). ``rng()`` searches, ``rng("figure")``
    draws the figure's samples."""
    p = sp.Symbol("p", positive=True)
    two_point = two_point_jacobian_norm(p)
    # a two-point norm without a critical point in (0, 1) has no interior maximum: the claim then fails (no crash)
    critical = tuple(c for c in sp.solve(sp.diff(two_point, p), p) if c.is_real and 0 < c < 1)
    peak = sp.nsimplify(max(two_point.subs(p, c) for c in critical)) if critical else None
    form, variance = jacobian_quadratic_form(3)
    generator, rows = rng(), []
    for n in (2, 3, 8) if quick else (2, 3, 5, 8, 16):
        best = max_jacobian_norm(n, generator, samples=300 if quick else 1000, restarts=2 if quick else 4)
        top2 = np.sort(best.point)[-2:]
        rows.append(NormSearchRow(n, best.value, best.evaluations, (float(top2[0]), float(top2[1]))))
    samples = rng("figure").dirichlet(np.full(3, 0.4), size=1500)  # (1500, 3)
    return JacobianNormResult(p, two_point, critical, peak, sp.expand(form - variance) == 0, tuple(rows), samples,
                              np.linalg.eigvalsh(np.asarray(softmax_jacobian(samples)))[:, -1])


# ----------------------------------------------------------------------------- entropy-lower-bound

#: the number of keys of the search and the figure
ENTROPY_KEYS = 16


@dataclass(frozen=True)
class EntropyExactPoint:
    """``T`` keys at ``σ = log(r)·√((T − 1)/T)`` (where ``β = 1/r``): the minimiser's entropy from the definition."""

    T: int
    r: int
    sigma: sp.Expr
    entropy: sp.Expr


@dataclass(frozen=True)
class EntropySearchRow:
    """At logit norm ``sigma`` (T = 16): the entropy at the float64 minimiser and the least entropy a search found."""

    sigma: float
    at_minimiser: float
    least_found: float


@dataclass(frozen=True)
class EntropyBoundResult:
    """What :func:`entropy_bound_study` found: the symbols ``sigma``, ``T``; the minimiser's logits (``top``, ``rest``)
    and whether ``‖z‖ = σ``; its weights and its entropy ``H_min`` in closed form; the exact points; the limit of the
    bound as σ → ∞ (T = 16); the searches."""

    sigma: sp.Symbol
    T: sp.Symbol
    top: sp.Expr
    rest: sp.Expr
    norm_is_sigma: bool
    weights: tuple[sp.Expr, sp.Expr]
    H_min: sp.Expr
    points: tuple[EntropyExactPoint, ...]
    collapse: sp.Expr
    rows: tuple[EntropySearchRow, ...]


def _exact_point(t: int, r: int) -> EntropyExactPoint:
    s = sp.log(r) * sp.sqrt(sp.Rational(t - 1, t))
    z_top, z_rest = entropy_minimiser(s, t)
    w = [sp.exp(z_top)] + [sp.exp(z_rest)] * (t - 1)
    return EntropyExactPoint(t, r, s, entropy([sp.radsimp(sp.simplify(wi / sum(w))) for wi in w]))


def entropy_bound_study(rng: Streams, *, quick: bool) -> EntropyBoundResult:
    """The minimiser exactly (symbolic σ, T; 3 or 6 exact points) and the searches at 3 (6) σ. ``rng()`` searches."""
    sigma, T = sp.Symbol("sigma", positive=True), sp.Symbol("T", positive=True, integer=True)
    top, rest = entropy_minimiser(sigma, T)
    gap = sp.simplify(top - rest)
    beta = sp.exp(-gap)
    a_top, a_rest = 1 / (1 + (T - 1) * beta), beta / (1 + (T - 1) * beta)
    H_min = sp.log(1 + (T - 1) * beta) + (T - 1) * a_rest * gap  # −Σ a log a with log a_top = −log(1 + (T−1)β)
    points = ((2, 2), (3, 10), (5, 2)) if quick else ((2, 2), (2, 10), (3, 2), (3, 10), (5, 2), (5, 10))
    generator, rows = rng(), []
    for s in (0.5, 5.0, 10.0) if quick else (0.5, 1.0, 2.0, 5.0, 10.0, 20.0):
        found = min_entropy_on_sphere(ENTROPY_KEYS, s, generator, samples=300 if quick else 1500,
                                      restarts=1 if quick else 3)
        z_top, z_rest = (float(v) for v in entropy_minimiser(s, ENTROPY_KEYS))
        at = float(softmax_entropy(np.array([z_top] + [z_rest] * (ENTROPY_KEYS - 1))))
        rows.append(EntropySearchRow(s, at, found.value))
    return EntropyBoundResult(sigma, T, top, rest, sp.simplify(top**2 + (T - 1) * rest**2 - sigma**2) == 0,
                              (a_top, a_rest), H_min, tuple(_exact_point(t, r) for t, r in points),
                              sp.limit(entropy_lower_bound(sigma, ENTROPY_KEYS), sigma, sp.oo), tuple(rows))


def entropy_figure_draws(rng: Streams) -> tuple[np.ndarray, np.ndarray, dict[float, np.ndarray]]:
    """The figure's σ grid with Zhai et al.'s bound on it (T = 16), and 400 random logit vectors' entropies at ten σ
    (``rng("figure", σ)`` each)."""
    sigma, T = sp.Symbol("sigma", positive=True), sp.Symbol("T", positive=True, integer=True)
    grid = np.linspace(0.0, 25.0, 101)
    bound = sp.lambdify((sigma, T), entropy_lower_bound(sigma, T), "numpy")(grid, ENTROPY_KEYS)
    draws = {float(s): entropy_on_sphere(ENTROPY_KEYS, float(s), rng("figure", float(s)), 400)
             for s in (0.5, 1, 2, 3, 5, 8, 12, 16, 20, 25)}
    return grid, np.asarray(bound), draws
