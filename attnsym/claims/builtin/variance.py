"""The claim about the 1/sqrt(d_k) scaling of attention scores: ``variance-scaling``.

A verdict on :func:`attnsym.studies.variance.study` (exact moments for a symbolic ``d`` from
:mod:`attnsym.symbolic.stats`, seeded sampling from :mod:`attnsym.numeric.montecarlo`); the figure
(:func:`attnsym.plots.variance_result_figure`) draws the same result.

:func:`variance_scaling_evidence` takes the claimed mean and variance as arguments, so a wrong
claim (say ``Var[q·k] = d**2``) can be registered and is reported as failing:

>>> from attnsym.claims import CheckContext
>>> from attnsym.symbolic.stats import d
>>> variance_scaling_evidence(CheckContext(quick=True), claimed_variance=d**2).verdict
'fails'
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import sympy as sp

from ... import plots
from ...studies import variance as variance_study
from ...studies.variance import REALISTIC, VarianceResult, VarianceSample, number
from ...symbolic import stats
from .._evidence import CheckContext, Evidence, tex
from .._real_model import real_model_scores
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = ["VARIANCE_STATEMENT", "check_variance_scaling", "variance_scaling_evidence"]

VARIANCE_STATEMENT = statement("variance-scaling")

def _is_zero(expr: Any) -> bool:
    return sp.expand(expr) == 0 or sp.simplify(expr) == 0


def variance_scaling_evidence(
    ctx: CheckContext,
    *,
    claimed_mean: Any = 0,
    claimed_variance: Any = None,
    claimed_scaled_variance: Any = 1,
    claim_id: str = "variance-scaling",
    statement: str = VARIANCE_STATEMENT,
) -> Evidence:
    """Check ``E[q·k] = claimed_mean``, ``Var[q·k] = claimed_variance`` (default ``d``) and the √d scaling.

    A verdict on :func:`attnsym.studies.variance.study`. ``claimed_mean``, ``claimed_variance``,
    ``claimed_scaled_variance`` (numbers or SymPy expressions in :data:`attnsym.symbolic.stats.d`)
    are what the claim asserts for independent components with mean 0 and variance 1;
    ``claim_id`` and ``statement`` name the evidence (for user-registered variants). The verdict is
    ``holds-under-conditions`` when the exact moments equal the claimed ones and every Monte Carlo
    interval contains the claimed variance, ``fails`` otherwise.
    """
    d = stats.d
    claimed_mean = stats._exact(claimed_mean, "claimed_mean")
    claimed_variance = d if claimed_variance is None else stats._exact(claimed_variance, "claimed_variance")
    claimed_scaled_variance = stats._exact(claimed_scaled_variance, "claimed_scaled_variance")
    r = variance_study.study(partial(ctx.seed_sequence, "variance-scaling"), quick=ctx.quick, progress=ctx.advance)
    m = r.moments
    exact_ok = {"mean": _is_zero(m["unit"].mean - claimed_mean),
                "variance": _is_zero(m["unit"].variance - claimed_variance),
                "scaled variance": _is_zero(m["unit scaled"].variance - claimed_scaled_variance)}
    z = {(s.law, s.d): (s.variance - number(claimed_variance.subs(d, s.d))) / s.se for s in r.samples}
    worst = max(r.samples, key=lambda s: abs(z[s.law, s.d]))
    facts = {**{f"exact {k} as claimed": ok for k, ok in exact_ok.items()},
             "Monte Carlo agrees with the claimed variance": all(abs(v) <= r.z_family for v in z.values()),
             "score-matrix Monte Carlo agrees with the exact score variance": all(s.agrees for s in r.score_samples),
             "q = k and non-zero means agree with their exact formulas": all(b.agrees for b in r.beyond)}
    real_details, real_condition = real_model_scores(ctx, "variance")  # attnsym.models: a trained model's scores
    return Evidence(
        claim=claim_id,
        statement=statement,
        verdict=verdict(facts, passing="holds-under-conditions"),
        method="symbolic proof (symbolic d, moments) + Monte Carlo (CI from the fourth moment) + exact score moments",
        summary=_summary(r, facts, worst, z, claimed_variance),
        conditions=(*CONDITIONS, real_condition),
        details={**_details(r, exact_ok, z, claimed_variance), **real_details},
        equations=_equations(m),
        figures={"variance": partial(plots.variance_result_figure, r)},
    )


def _summary(r: VarianceResult, facts: dict[str, bool], worst: VarianceSample, z: dict, claimed_variance: Any) -> str:
    if all(facts.values()):
        return (f"exact for symbolic d: E = 0, Var = d, Var/d = 1; Monte Carlo agrees at {len(r.sizes.dims)} d in "
                f"{r.sizes.dims[0]}..{r.sizes.dims[-1]} and for uniform and ±1 components (max |z| = "
                f"{abs(z[worst.law, worst.d]):.2f} ≤ {r.z_family:.2f}); q = k gives Var = 2d; "
                "nonzero means make the scaled mean grow as √d")
    exact = f"exact moments differ from the claim (Var[q·k] = {r.moments['unit'].variance}, claimed {claimed_variance}); "
    return ((exact if not all(v for k, v in facts.items() if k.startswith("exact")) else "")
            + f"the largest Monte Carlo |z| against the claimed variance is {abs(z[worst.law, worst.d]):.1f} at "
            f"d = {worst.d} ({worst.law} components; limit {r.z_family:.2f})" + failed_clause(facts))


#: the conditions of the verdict (the real-model line is added when a model is installed)
CONDITIONS = (
    "components q_i (and k_i) independent across i, and q independent of k",
    "mean 0 and variance 1 for every component; otherwise Var[q·k] = d(σ_q²σ_k² + μ_q²σ_k² + μ_k²σ_q²) "
    "and the scaled mean √d·μ_qμ_k grows with d",
    "q ≠ k: for q = k (W_Q = W_K, the diagonal of QKᵀ) E = dσ², Var = 2dσ⁴ (Gaussian), the scaled mean √d σ² grows",
    "only second moments enter the variance (no Gaussian assumption); the Monte Carlo intervals use the exact "
    "fourth moment of each law",
    f"real scores X W_Q (X W_K)ᵀ have unit-variance components only when d_model·Var[x]·Var[W] = 1 "
    f"(LeCun init on unit-variance inputs, or Xavier on a square d_model × d_model W_Q); at "
    f"d_model={REALISTIC['d_model']}, d_k={REALISTIC['d_k']} He gives Var[s/√d_k] = 4, Xavier gives 3.2 per head "
    "(fan_out = d_k) but 0.25 with torch's packed in_proj, N(0, 0.02²) gives ≈ 0.04",
    "scale by d_k (the head size), not d_model: 1/√d_model gives variance 1/h",
)

#: what the real-score table implies, in words
REAL_SCORES_IMPLY = (
    "only Var W = 1/d_model (LeCun, or Xavier on a square d_model × d_model W_Q) on unit-variance inputs gives "
    "unit-variance q, k components and Var[s/√d_k] = 1; He and Xavier on a per-head d_model × d_k matrix give "
    "a scaled score sd of 2 and 1.8 (sharper attention at initialisation), Xavier on torch's packed "
    "(3 d_model) × d_model in_proj 0.5, N(0, 0.02²) 0.2 (almost uniform attention), and tiny embedding-scale "
    "inputs give scores near 0 whatever the scaling: √d_k fixes the growth with d_k, not the overall scale")


def _details(r: VarianceResult, exact_ok: dict[str, bool], z: dict, claimed_variance: Any) -> dict[str, Any]:
    """The report's tables, from the study's typed rows."""
    d, m = stats.d, r.moments
    dk, h = REALISTIC["d_k"], REALISTIC["heads"]
    return {
        "exact checks": exact_ok, "E[q·k] (mean 0, var 1)": m["unit"].mean,
        "Var[q·k] (mean 0, var 1)": m["unit"].variance, "claimed Var[q·k]": claimed_variance,
        "general Var[q·k]": sp.factor(m["general"].variance), "q = k Var (general)": sp.factor(m["same"].variance),
        "Monte Carlo": [{"law": s.law, "d": s.d, "samples": s.samples, "Var[q·k] estimate": s.variance,
                         "claimed": number(claimed_variance.subs(d, s.d)),
                         "95% CI": (s.variance - 1.96 * s.se, s.variance + 1.96 * s.se), "z": z[s.law, s.d],
                         "Var[q·k/√d] estimate": s.variance / s.d, "sample kurtosis": s.sample_kurtosis,
                         "exact kurtosis": s.exact_kurtosis, "agrees": bool(abs(z[s.law, s.d]) <= r.z_family)}
                        for s in r.samples],
        "Monte Carlo family-wise z": r.z_family,
        "Monte Carlo sample rule": f"N = z²(κ − 1)/ε² with ε = {r.sizes.rel} (relative, 95 %), κ = μ₄/σ⁴ exact per law "
                                   "(3 + 6/d for normal components)",
        "beyond the conditions (Monte Carlo vs exact)": [
            {"case": b.case, "d": b.d, "samples": b.samples, "exact E[q·k]": b.exact_mean, "E estimate": b.mean,
             "exact Var[q·k]": b.exact_variance, "Var estimate": b.variance,
             "z against the claim's Var = d": (b.variance - b.d) / b.se_variance,
             "exact E[q·k/√d]": b.exact_mean / math.sqrt(b.d), "exact Var[q·k/√d]": b.exact_variance / b.d,
             "agrees with exact": b.agrees} for b in r.beyond],
        "real score variance (exact)": [
            {"init": s.init, "fan_in, fan_out": (REALISTIC["d_model"], s.fan_out), "Var W": s.var_w, "input": s.input,
             "Var[q_a]": s.var_q, "Var s (unscaled)": s.var_unscaled, "Var s/√d_k": s.var_scaled,
             "sd s/√d_k": math.sqrt(s.var_scaled), "Var s_ii/√d_k (diagonal)": s.var_scaled_diagonal}
            for s in r.init_scores],
        "real score variance (Monte Carlo)": [
            {"init": s.init, "reps": s.reps, "off-diagonal exact": s.off_exact, "off-diagonal MC": s.off,
             "off-diagonal SE": s.off_se, "diagonal exact": s.diag_exact, "diagonal MC": s.diag,
             "diagonal SE": s.diag_se, "agrees": s.agrees} for s in r.score_samples],
        "what the real scores imply": REAL_SCORES_IMPLY,
        "scaling variants": [{"scaling": v.name, "factor on q·k": v.factor, "Var (symbolic, d_model = h d_k)": v.variance,
                              f"Var at d_k={dk}, h={h}": v.variance_realistic} for v in r.variants],
    }


def _equations(m: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    def E(x: str):
        return tex(rf"\mathbb{{E}}\left[{x}\right]")

    def V(x: str):
        return tex(rf"\operatorname{{Var}}\left[{x}\right]")

    qk, qkd, qq, qqd = r"q \cdot k", r"\frac{q \cdot k}{\sqrt{d}}", r"q \cdot q", r"\frac{q \cdot q}{\sqrt{d}}"
    return (
        ("Mean, by linearity (components with means μ_q, μ_k)", sp.Eq(E(qk), m["general"].mean, evaluate=False)),
        ("Variance, by independence over i (variances σ_q², σ_k²)",
         sp.Eq(V(qk), sp.factor(m["general"].variance), evaluate=False)),
        ("Mean 0, variance 1 (any law: only second moments enter)", sp.Eq(V(qk), m["unit"].variance, evaluate=False)),
        ("Scaled by 1/√d, mean 0 and variance 1", sp.Eq(V(qkd), m["unit scaled"].variance, evaluate=False)),
        ("Scaled by 1/√d, general: the mean grows as √d unless μ_q μ_k = 0",
         sp.Eq(E(qkd), m["general scaled"].mean, evaluate=False)),
        ("Scaled by 1/√d, general variance", sp.Eq(V(qkd), sp.factor(m["general scaled"].variance), evaluate=False)),
        ("q = k (W_Q = W_K, diagonal of QQᵀ), any law: third and fourth central moments m3, m4 enter",
         sp.Eq(V(qq), sp.factor(m["same"].variance), evaluate=False)),
        ("q = k, Gaussian N(0, σ²): mean dσ²", sp.Eq(E(qq), m["same gaussian"].mean, evaluate=False)),
        ("q = k, Gaussian N(0, σ²): variance 2dσ⁴", sp.Eq(V(qq), m["same gaussian"].variance, evaluate=False)),
        ("q = k scaled by 1/√d: the mean √d σ² grows", sp.Eq(E(qqd), m["same gaussian scaled"].mean, evaluate=False)),
        ("Kurtosis of q·k with N(0, 1) components (sets the Monte Carlo error bars)",
         sp.Eq(tex(r"\mu_4 / \sigma^4"), m["gaussian"].kurtosis, evaluate=False)),
        ("Score entry i ≠ j of c·X W_Q (X W_K)ᵀ (x ~ N(0, v_x), W ~ N(0, v_w))",
         sp.Eq(V("s_{ij}"), m["scores"].off_diagonal_variance, evaluate=False)),
    )


def check_variance_scaling(ctx: CheckContext) -> Evidence:
    """The built-in check: the claim as stated in CLAIMS.md (mean 0, variance d, scaled variance 1)."""
    return variance_scaling_evidence(ctx)


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (builtin_claim("variance-scaling", check_variance_scaling),)
