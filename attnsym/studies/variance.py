"""Why scores are scaled by 1/√d_k: the moments of q·k, exactly and by sampling, and the scores of real initialisations.

:func:`study` returns a :class:`VarianceResult`:

1. **exact** (:mod:`attnsym.symbolic.stats`), for a symbolic ``d`` and any component law with
   mean 0 and variance 1: ``E[q·k]``, ``Var[q·k]``, scaled by ``1/√d`` too; the general law
   (other means and variances), ``q = k``, the kurtosis of the Gaussian case;
2. **Monte Carlo** (:mod:`attnsym.numeric.montecarlo`) of ``Var[q·k]`` for ``d = 1 … 4096``
   (normal components) and two non-Gaussian laws, each estimate with its standard error from the
   exact fourth moment, and the family-wise ``z`` of all those intervals (Bonferroni);
3. **beyond the conditions**: ``q = k`` and non-zero means sampled against their exact formulas;
4. **real scores**: the exact variance of ``X W_Q (X W_K)ᵀ`` entries under common
   initialisations and input scales, and a Monte Carlo of the score matrix for some of them;
5. the scalings people use and the variance each gives.

The claim ``variance-scaling`` judges it against the claimed moments (it computes the ``z`` of
each estimate against the claimed variance); :func:`attnsym.plots.variance_result_figure`
draws the same result.

>>> VarianceSizes.of(quick=True).dims[-1]
4096
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from ..numeric import montecarlo as mc
from ..symbolic import stats

__all__ = ["FAMILY_ALPHA", "REALISTIC", "BeyondSample", "InitScores", "ScalingVariant", "ScoreSample", "SeedStreams",
           "VarianceResult", "VarianceSample", "VarianceSizes", "number", "study"]

#: a key -> an independent ``numpy.random.SeedSequence`` (``CheckContext.seed_sequence`` is one)
SeedStreams = Callable[..., np.random.SeedSequence]

#: model width and head size of the "realistic" score check (the base model of Vaswani et al. 2017)
REALISTIC = {"d_model": 512, "d_k": 64, "heads": 8, "n_tokens": 16}
#: family-wise error rate of the Monte Carlo agreement tests (Bonferroni over all intervals)
FAMILY_ALPHA = 1e-3
#: the initialisations of the real-score table
INITS = ("lecun", "xavier", "he", "normal-0.02", "pytorch-linear")


def number(x: Any) -> float:
    """A SymPy number (or a float) as a float, to 17 digits."""
    return float(sp.N(x, 17)) if isinstance(x, sp.Basic) else float(x)


def _at(expr: Any, dim: int) -> float:
    """A moment (a SymPy expression in :data:`attnsym.symbolic.stats.d`) at ``d = dim``, as a float."""
    return number(expr.subs(stats.d, dim))


@dataclass(frozen=True)
class VarianceSizes:
    """The sizes: ``d`` of the normal Monte Carlo, target relative half-width (95 %) of each estimate,
    ``d`` of the other laws and of the beyond-the-conditions cases, score-matrix repetitions and initialisations."""

    dims: tuple[int, ...]
    rel: float
    other_dims: tuple[int, ...]
    beyond_dims: tuple[int, ...]
    reps: int
    mc_inits: tuple[str, ...]

    @classmethod
    def of(cls, quick: bool) -> VarianceSizes:
        """Quick or full sizes (``±1`` components skip ``d = 1``: ``q·k = ±1`` has no spread to estimate)."""
        if quick:
            return cls((1, 4, 16, 64, 256, 1024, 4096), 0.08, (16,), (64,), 32, ("xavier",))
        return cls(tuple(2**k for k in range(13)), 0.02, (4, 16, 256), (16, 256), 256, INITS)


@dataclass(frozen=True)
class VarianceSample:
    """One Monte Carlo estimate of ``Var[q·k]``: its law, ``d``, samples, estimate and standard error; exact values."""

    law: str
    d: int
    samples: int
    variance: float
    se: float
    exact_variance: float
    exact_kurtosis: float
    sample_kurtosis: float


@dataclass(frozen=True)
class BeyondSample:
    """A case outside the claim's conditions (``q = k``, non-zero means) sampled against its exact moments."""

    case: str
    d: int
    samples: int
    exact_mean: float
    mean: float
    exact_variance: float
    variance: float
    se_variance: float
    agrees: bool


@dataclass(frozen=True)
class InitScores:
    """Exact variance of a score entry ``s_ij`` under an initialisation and an input scale."""

    init: str
    fan_out: int
    var_w: float
    input: str
    var_q: float
    var_unscaled: float
    var_scaled: float
    var_scaled_diagonal: float


@dataclass(frozen=True)
class ScoreSample:
    """The score matrix sampled under an initialisation: off-diagonal and diagonal variance, exact and measured."""

    init: str
    reps: int
    off_exact: float
    off: float
    off_se: float
    diag_exact: float
    diag: float
    diag_se: float
    agrees: bool


@dataclass(frozen=True)
class ScalingVariant:
    """A scaling people use: its factor on ``q·k`` and the variance it gives (symbolic, and at the realistic sizes)."""

    name: str
    factor: sp.Expr
    variance: sp.Expr
    variance_realistic: float


@dataclass(frozen=True)
class VarianceResult:
    """Everything :func:`study` found (``moments`` holds the exact results by name, see :func:`study`)."""

    sizes: VarianceSizes
    moments: dict[str, Any]
    samples: tuple[VarianceSample, ...]
    z_family: float
    beyond: tuple[BeyondSample, ...]
    init_scores: tuple[InitScores, ...]
    score_samples: tuple[ScoreSample, ...]
    variants: tuple[ScalingVariant, ...]


def _exact_moments() -> dict[str, Any]:
    """The exact moments of q·k the claim and its equations read, by name."""
    d, sigma = stats.d, sp.Symbol("sigma", positive=True)
    q0, k0 = stats.general(0, 1, name="q"), stats.general(0, 1, name="k")
    d_model, d_k, v_x, v_w = sp.symbols("d_model d_k v_x v_w", positive=True)
    scores = stats.score_moments(d_model, d_k, v_x, v_w, v_w, scale=sp.Symbol("c", positive=True))
    return {"unit": stats.dot_product_moments(d, q0, k0),
            "unit scaled": stats.dot_product_moments(d, q0, k0, scale=1 / sp.sqrt(d)),
            "general": stats.general_dot_product_moments(),
            "general scaled": stats.general_dot_product_moments(scale=1 / sp.sqrt(d)),
            "same": stats.general_dot_product_moments(same=True),
            "same gaussian": stats.dot_product_moments(d, stats.normal(0, sigma**2), same=True),
            "same gaussian scaled": stats.dot_product_moments(d, stats.normal(0, sigma**2), same=True, scale=1 / sp.sqrt(d)),
            "gaussian": stats.dot_product_moments(d), "scores": scores}


def _samples(sizes: VarianceSizes, seeds: SeedStreams, gauss: Any,
             progress: Callable[[int, int], None] | None) -> tuple[tuple[VarianceSample, ...], float]:
    d = stats.d
    other_laws = {"uniform": stats.uniform(-sp.sqrt(3), sp.sqrt(3)), "rademacher": stats.rademacher()}
    plan = [("normal", dim, stats.normal()) for dim in sizes.dims]
    plan += [(name, dim, law) for name, law in other_laws.items() for dim in sizes.other_dims]
    budget, spent, out = sum(dim for _, dim, _ in plan), 0, []
    for law_name, dim, law in plan:
        exact = gauss if law_name == "normal" else stats.dot_product_moments(d, law, law)
        var_true, mu4 = _at(exact.variance, dim), _at(exact.fourth_central, dim)
        n = mc.samples_for_precision(sizes.rel, mu4 / var_true**2)
        est = mc.dot_product_moments(dim, n, law=law_name, seed=seeds("mc", law_name, dim))
        out.append(VarianceSample(law_name, dim, n, est.variance, est.se_variance(fourth_central=mu4, variance=var_true),
                                  var_true, mu4 / var_true**2, est.kurtosis))
        spent += dim
        if progress is not None:
            progress(spent, budget + len(plan) * 8)
    return tuple(out), mc.z_value(1 - FAMILY_ALPHA, tests=len(plan))


def _beyond(sizes: VarianceSizes, seeds: SeedStreams) -> tuple[BeyondSample, ...]:
    d, half = stats.d, sp.Rational(1, 2)
    cases: dict[str, tuple[Any, dict[str, Any]]] = {
        "q = k (W_Q = W_K)": (stats.dot_product_moments(d, stats.normal(), same=True), {"same": True}),
        "means μ_q = μ_k = 1/2": (stats.dot_product_moments(d, stats.normal(half, 1), stats.normal(half, 1)),
                                  {"mean_q": 0.5, "mean_k": 0.5}),
    }
    z = mc.z_value(1 - FAMILY_ALPHA, tests=2 * len(cases) * len(sizes.beyond_dims))
    out = []
    for case, (exact, kwargs) in cases.items():
        for dim in sizes.beyond_dims:
            var_true, mean_true, mu4 = _at(exact.variance, dim), _at(exact.mean, dim), _at(exact.fourth_central, dim)
            n = mc.samples_for_precision(sizes.rel, mu4 / var_true**2)
            est = mc.dot_product_moments(dim, n, seed=seeds("beyond", case, dim), **kwargs)
            se_v, se_m = est.se_variance(fourth_central=mu4, variance=var_true), est.se_mean(var_true)
            agrees = abs(est.variance - var_true) <= z * se_v and abs(est.mean - mean_true) <= z * se_m
            out.append(BeyondSample(case, dim, n, mean_true, est.mean, var_true, est.variance, se_v, bool(agrees)))
    return tuple(out)


def _init_scores() -> tuple[InitScores, ...]:
    m_, dk = REALISTIC["d_model"], REALISTIC["d_k"]
    input_vars = {"LayerNorm output (var 1)": 1, "N(0, 0.02²) embeddings (var 4e-4)": sp.Rational(1, 2500)}
    # Xavier depends on fan_out: a per-head d_model × d_k matrix (the rows named "xavier"), one d_model × d_model
    # W_Q split into heads (= LeCun here), or torch.nn.MultiheadAttention's packed (3 d_model) × d_model in_proj
    xavier_layouts = {"xavier (W_Q d_model × d_model)": m_, "xavier (torch MHA packed in_proj)": 3 * m_}
    out = []
    for init in (*INITS, *xavier_layouts):
        fan_out = xavier_layouts.get(init, dk)
        vw = stats.init_variance(init.split(" ")[0], m_, fan_out)
        for label, vx in input_vars.items():
            un = stats.score_moments(m_, dk, vx, vw, vw)
            sc = stats.score_moments(m_, dk, vx, vw, vw, scale=1 / sp.sqrt(dk))
            out.append(InitScores(init, fan_out, number(vw), label, number(m_ * vx * vw), number(un.off_diagonal_variance),
                                  number(sc.off_diagonal_variance), number(sc.diagonal_variance)))
    return tuple(out)


def _score_samples(sizes: VarianceSizes, seeds: SeedStreams) -> tuple[ScoreSample, ...]:
    m_, dk = REALISTIC["d_model"], REALISTIC["d_k"]
    z = mc.z_value(1 - FAMILY_ALPHA, tests=2 * len(sizes.mc_inits))
    out = []
    for init in sizes.mc_inits:
        vw = stats.init_variance(init, m_, dk)
        exact = stats.score_moments(m_, dk, 1, vw, vw, scale=1 / sp.sqrt(dk))
        r = mc.score_entry_moments(m_, dk, var_x=1.0, var_wq=number(vw), var_wk=number(vw), reps=sizes.reps,
                                   n_tokens=REALISTIC["n_tokens"], scale=1 / math.sqrt(dk), seed=seeds("scores", init))
        off, diag = number(exact.off_diagonal_variance), number(exact.diagonal_variance)
        agrees = abs(r["off_diagonal"] - off) <= z * r["off_diagonal_se"] and abs(r["diagonal"] - diag) <= z * r["diagonal_se"]
        out.append(ScoreSample(init, sizes.reps, off, r["off_diagonal"], r["off_diagonal_se"], diag, r["diagonal"],
                               r["diagonal_se"], bool(agrees)))
    return tuple(out)


def study(seeds: SeedStreams, *, quick: bool, progress: Callable[[int, int], None] | None = None) -> VarianceResult:
    """The moments of q·k exactly and sampled, beyond the conditions, for real initialisations; the scalings in use.

    Parameters
    ----------
    seeds : callable
        A key -> an independent ``SeedSequence`` (a claim passes ``partial(ctx.seed_sequence, "variance-scaling")``);
        the parts draw from ``seeds("mc", law, d)``, ``seeds("beyond", case, d)`` and ``seeds("scores", init)``.
    quick : bool
        The quick sizes of :meth:`VarianceSizes.of`.
    progress : callable, optional
        Called with ``(done, total)`` as the Monte Carlo advances.
    """
    sizes = VarianceSizes.of(quick)
    moments = _exact_moments()
    samples, z_family = _samples(sizes, seeds, moments["gaussian"], progress)
    beyond = _beyond(sizes, seeds)
    score_samples = _score_samples(sizes, seeds)
    if progress is not None:
        progress(1, 1)
    dk, h = REALISTIC["d_k"], REALISTIC["heads"]
    realistic = stats.scale_variants(dk, h)
    variants = tuple(ScalingVariant(name, v["factor"], v["variance"], number(realistic[name]["variance"]))
                     for name, v in stats.scale_variants().items())
    return VarianceResult(sizes=sizes, moments=moments, samples=samples, z_family=z_family, beyond=beyond,
                          init_scores=_init_scores(), score_samples=score_samples, variants=variants)
