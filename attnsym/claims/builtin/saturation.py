"""The claim that unscaled scores saturate softmax as d grows: ``softmax-saturation``.

The experiment lives in :mod:`attnsym.numeric.saturation` (seeded softmax statistics and the
gradient reaching W_Q, every statistic with a 95 % interval); the figures of
:mod:`attnsym.plots.scaling` draw the same tables. :func:`check_softmax_saturation` takes the
scoring the claim says saturates as an argument, so the false variant (``"scaled"``) fails.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from ... import plots
from ...errors import SpecError
from ...numeric import montecarlo as mc
from ...numeric.saturation import VJP_CHECKED_DRAWS, gradient_ratio, softmax_saturation
from ...symbolic import row_softmax
from .._evidence import CheckContext, Evidence, tex
from .._real_model import real_model_scores
from ..catalogue import builtin_claim, statement

__all__ = ["SATURATION_STATEMENT", "check_softmax_saturation"]

SATURATION_STATEMENT = statement("softmax-saturation")


def _saturation_dims(quick: bool) -> tuple[list[int], list[int], int, int]:
    """Dimensions of the score study and of the gradient study, rows per d, gradient draws per d."""
    if quick:
        return [1, 4, 16, 64, 256, 1024, 4096], [1, 16, 256], 2000, 48
    return [2**k for k in range(13)], [1, 4, 16, 64, 256], 20000, 256


def _fmt_ci(ci) -> str:
    return f"[{ci[0]:.2g}, {ci[1]:.2g}]"


def check_softmax_saturation(ctx: CheckContext, *, saturating: str = "unscaled") -> Evidence:
    """Max weight, row entropy and softmax Jacobian norm against d, scaled vs unscaled; the gradient reaching W_Q.

    Every statistic comes with a 95 % interval (:mod:`attnsym.numeric.saturation`, the same
    experiment the figures draw). ``saturating`` names the scoring the claim says saturates as
    d grows (``"scaled"`` — "even with 1/√d large d saturates" — is false). Whether *learning*
    slows is not measured (no training run): the verdict holds under that condition.
    """
    if saturating not in ("unscaled", "scaled"):
        raise SpecError(f"saturating must be 'unscaled' or 'scaled' (got {saturating!r})")
    n = 16
    dims, grad_dims, rows, draws = _saturation_dims(ctx.quick)

    # symbolic: two keys with score gap s; the Jacobian entry a(1 - a) -> 0 as the gap grows
    s = sp.Symbol("s", real=True)
    a = row_softmax(sp.Matrix([[s, 0]]))
    # a rational function of e^s: cancel decides it exactly (simplify reached the same, ~10x slower)
    da = sp.factor(sp.cancel(sp.diff(a[0, 0], s)))
    jac_limit = sp.limit(da, s, sp.oo)
    symbolic_ok = sp.cancel(da - a[0, 0] * (1 - a[0, 0])) == 0 and jac_limit == 0

    table = softmax_saturation(ctx.rng("softmax-saturation", "scores"), dims, rows=rows, n=n)
    ctx.advance(len(dims), len(dims) + len(grad_dims))
    big, small = table[-1], table[0]
    half = [r for r in table if r["d"] >= 64]
    slope = float(np.polyfit(np.log([r["d"] for r in half]), np.log([r["‖J‖ mean unscaled"] for r in half]), 1)[0])
    grad_rows = []
    with mc.blas_single_thread():
        for dim in grad_dims:
            grad_rows.append(gradient_ratio(ctx.rng("softmax-saturation", "gradient", dim), dim, draws=draws, n=n))
            ctx.advance(len(dims) + len(grad_rows), len(dims) + len(grad_dims))

    logn = math.log(n)

    def saturates(key: str) -> bool:  # judged on interval bounds, not point estimates
        return (big[f"max weight {key} 95% CI"][0] >= 0.9 and big[f"entropy {key} 95% CI"][1] <= 0.25 * logn
                and big[f"‖J‖ median {key} 95% CI"][1] <= 0.05 * small[f"‖J‖ median {key} 95% CI"][0])

    other = "scaled" if saturating == "unscaled" else "unscaled"
    stable = all(r[f"entropy {other} 95% CI"][0] >= 0.5 * logn for r in table)
    g_first, g_last = grad_rows[0], grad_rows[-1]
    gradient_shrinks = (g_last["geometric-mean ratio 95% CI"][1] < 1.0
                        and g_last["fraction ratio < 1% 95% CI"][0] > g_first["fraction ratio < 1% 95% CI"][1])
    # the vectorised gradients against the engine's own backward (attention_vjp), on each d's first draws
    vjp_key = next(k for k in g_last if k.startswith("attention_vjp vs vectorised"))
    backward_ok = all(r[vjp_key] <= 1e-9 for r in grad_rows)
    holds = (symbolic_ok and backward_ok and saturates(saturating) and stable
             and (saturating != "unscaled" or gradient_shrinks))
    mean_grows = g_last["mean ‖∇W_Q‖ unscaled"] > g_last["mean ‖∇W_Q‖ scaled"]
    verdict = "holds-under-conditions" if holds else "fails"
    summary = (f"d = {big['d']}, n = {n}, {rows} rows per d: unscaled max weight {big['max weight unscaled']:.3f} "
               f"{_fmt_ci(big['max weight unscaled 95% CI'])}, entropy {big['entropy unscaled']:.3f} nats "
               f"{_fmt_ci(big['entropy unscaled 95% CI'])} (scaled {big['entropy scaled']:.2f}, log n = {logn:.2f}); "
               f"median ‖J‖ {big['‖J‖ median unscaled']:.1e} vs {big['‖J‖ median scaled']:.2f}; mean ‖J‖ ∝ d^{slope:.2f}; "
               f"∇W_Q ratio unscaled/scaled at d = {g_last['d']} ({g_last['draws']} draws): geometric mean "
               f"{g_last['geometric-mean ratio']:.1e} {_fmt_ci(g_last['geometric-mean ratio 95% CI'])}, "
               f"{100 * g_last['fraction ratio < 1%']:.0f}% {_fmt_ci([100 * v for v in g_last['fraction ratio < 1% 95% CI']])} "
               "of queries below 1%")
    conditions = (
        f"scores of q, k with independent unit-variance components (LeCun-initialised W_Q, W_K for the gradient), n = {n} "
        "keys; every statistic with a 95% interval (means: normal approximation; medians: order statistics; "
        "fractions: Wilson; the gradient ratio: t-interval of its logarithm)",
        "measured: saturation of the softmax and the gradient reaching W_Q at initialisation; NOT measured: that "
        "learning slows — no training run is part of this check",
        "saturation is per row: the MEDIAN Jacobian norm collapses (a typical query gets almost no gradient), while "
        f"the MEAN decays only like d^{slope:.2f}: rare near-ties between the top two scores keep some rows soft",
        ("the mean gradient reaching W_Q does not shrink" if mean_grows else "the mean gradient reaching W_Q shrinks too")
        + ": the unscaled path multiplies by 1 instead of 1/√d, so the few unsaturated queries get large gradients",
        "with 1/√d the score distribution, and with it max weight, entropy and Jacobian, is the same for every d",
        f"the gradient of every draw by the vectorised backward (numeric.saturation.w_q_gradients); the first "
        f"{VJP_CHECKED_DRAWS} draws of each d recomputed by attention_vjp one layer at a time: largest relative "
        f"difference {max(r[vjp_key] for r in grad_rows):.1e} (at most 1e-9 required)",
    )
    equations = (
        ("Softmax of two scores with gap s", sp.Eq(tex("a_1"), a[0, 0], evaluate=False)),
        ("Its derivative: the Jacobian entry a₁(1 − a₁)", sp.Eq(tex(r"\partial a_1 / \partial s"), da, evaluate=False)),
        ("Saturation: the derivative vanishes as the gap grows",
         sp.Eq(tex(r"\lim_{s\to\infty} \partial a_1/\partial s"), jac_limit, evaluate=False)),
        ("Unscaled scores have standard deviation √d (variance-scaling), so gaps grow like √d",
         sp.Eq(tex(r"\operatorname{sd}[q\cdot k]"), sp.sqrt(sp.Symbol("d", positive=True)), evaluate=False)),
    )
    details = {
        "symbolic check": symbolic_ok,
        "scores (rows per d)": rows,
        "softmax statistics": table,
        "mean ‖J‖ unscaled ∝ d^slope (d ≥ 64)": slope,
        "gradient reaching W_Q": grad_rows,
        "claimed to saturate": saturating,
    }
    real_details, real_condition = real_model_scores(ctx, "entropy")  # attnsym.models: a trained model's rows
    details.update(real_details)
    conditions = (*conditions, real_condition)

    def entropy_fig():
        return plots.entropy_figure(np.array([r["d"] for r in table]), np.array([r["entropy unscaled"] for r in table]),
                                    np.array([r["entropy scaled"] for r in table]), n=n,
                                    max_weight_unscaled=np.array([r["max weight unscaled"] for r in table]),
                                    max_weight_scaled=np.array([r["max weight scaled"] for r in table]))

    def gradient_fig():
        return plots.saturation_gradient_figure(
            [r["d"] for r in table], [r["‖J‖ mean unscaled"] for r in table], [r["‖J‖ mean scaled"] for r in table],
            [r["d"] for r in grad_rows], [r["geometric-mean ratio"] for r in grad_rows],
            [r["fraction ratio < 1%"] for r in grad_rows],
            jacobian_median_unscaled=[r["‖J‖ median unscaled"] for r in table],
            jacobian_median_scaled=[r["‖J‖ median scaled"] for r in table])

    return Evidence(
        claim="softmax-saturation",
        statement=SATURATION_STATEMENT,
        verdict=verdict,
        method=("symbolic limit + Monte Carlo of softmax statistics (95% intervals) + numeric backward (vectorised over "
                "draws, checked against attention_vjp)"),
        summary=summary,
        conditions=conditions,
        details=details,
        equations=equations,
        figures={"entropy": entropy_fig, "jacobian-gradient": gradient_fig},
    )


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (builtin_claim("softmax-saturation", check_softmax_saturation),)
