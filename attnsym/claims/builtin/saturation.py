"""The claim that unscaled scores saturate softmax as d grows: ``softmax-saturation``.

A verdict on :func:`attnsym.studies.saturation.study` (the exact two-key limit, sampled softmax
statistics and the gradient reaching W_Q with 95 % intervals, and a seeded SGD training run,
scaled vs unscaled); the three figures draw the same result object
(:func:`attnsym.plots.saturation_entropy_figure`, :func:`~attnsym.plots.saturation_jacobian_figure`,
:func:`~attnsym.plots.training_run_figure`). :func:`check_softmax_saturation` takes the scoring
the claim says saturates as an argument, so the false variant (``"scaled"``) fails.
"""

from __future__ import annotations

import math
from functools import partial

import sympy as sp

from ... import plots
from ...errors import SpecError
from ...studies import saturation
from ...studies.intervals import Estimate
from ...studies.saturation import VJP_CHECKED_DRAWS, SaturationResult
from ...studies.training import VJP_SEQUENCES, TrainingAtD
from .._evidence import CheckContext, Evidence, tex
from .._real_model import real_model_scores
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = ["SATURATION_STATEMENT", "check_softmax_saturation", "saturation_facts"]

SATURATION_STATEMENT = statement("softmax-saturation")

#: the held-out loss whose first crossing (by a best-rate mean curve) the conditions report as the speed
TARGET_LOSS = 0.3
#: largest relative difference allowed between the study's backward and the engine's attention_vjp
VJP_TOLERANCE = 1e-9


def saturation_facts(r: SaturationResult, saturating: str) -> dict[str, bool]:
    """The falsifiable conditions of the claim on a study result, by name (all must hold)."""
    other = "scaled" if saturating == "unscaled" else "unscaled"
    big, small, logn = r.largest.of(saturating), r.smallest.of(saturating), math.log(r.sizes.n)
    g_first, g_last = r.gradients[0], r.gradients[-1]
    diff = r.training.per_d[-1].difference  # unscaled minus scaled, each at its best rate, at the largest d
    facts = {
        "∂a₁/∂s = a₁(1 − a₁) → 0 (exact)": r.exact.vanishes,
        "backward = attention_vjp": (all(g.vjp_difference <= VJP_TOLERANCE for g in r.gradients)
                                     and r.training.vjp_difference <= VJP_TOLERANCE),
        # judged on interval bounds, not point estimates
        f"{saturating} max weight ≥ 0.9 at d = {r.largest.d}": big.max_weight.lo >= 0.9,
        f"{saturating} entropy ≤ ¼ log n at d = {r.largest.d}": big.entropy.hi <= 0.25 * logn,
        f"{saturating} median ‖J‖ ≤ 5% of d = {r.smallest.d}'s": big.jacobian_median.hi <= 0.05 * small.jacobian_median.lo,
        f"{other} entropy ≥ ½ log n at every d": all(row.of(other).entropy.lo >= 0.5 * logn for row in r.table),
        # the arm the claim says saturates must learn slower: its loss higher, by the whole paired interval
        f"{saturating} learns slower at d = {r.training.per_d[-1].d}": (diff.lo > 0 if saturating == "unscaled"
                                                                      else diff.hi < 0),
    }
    if saturating == "unscaled":
        facts[f"∇W_Q ratio shrinks by d = {g_last.d}"] = (g_last.geometric_mean_ratio.hi < 1.0
                                                          and g_last.below_one_percent.lo > g_first.below_one_percent.hi)
    return facts


def check_softmax_saturation(ctx: CheckContext, *, saturating: str = "unscaled") -> Evidence:
    """Max weight, row entropy and softmax Jacobian norm against d, scaled vs unscaled; the gradient reaching W_Q;
    whether learning slows (a seeded training run).

    ``saturating`` names the scoring the claim says saturates as d grows (``"scaled"`` — "even
    with 1/√d large d saturates" — is false).
    """
    if saturating not in ("unscaled", "scaled"):
        raise SpecError(f"saturating must be 'unscaled' or 'scaled' (got {saturating!r})")
    r = saturation.study(partial(ctx.rng, "softmax-saturation"), quick=ctx.quick, progress=ctx.advance)
    facts = saturation_facts(r, saturating)
    real_details, real_condition = real_model_scores(ctx, "entropy")  # attnsym.models: a trained model's rows
    return Evidence(
        claim="softmax-saturation",
        statement=SATURATION_STATEMENT,
        verdict=verdict(facts, passing="holds-under-conditions"),
        method=("symbolic limit + Monte Carlo of softmax statistics (95% intervals) + numeric backward (vectorised over "
                "draws, checked against attention_vjp) + a seeded SGD training run, scaled vs unscaled (paired 95% "
                "intervals over seeds)"),
        summary=_summary(r) + failed_clause(facts),
        conditions=(*_conditions(r, ctx.quick), real_condition),
        details={"facts": facts, "claimed to saturate": saturating, "softmax statistics": r.table,
                 "mean ‖J‖ unscaled ∝ d^slope (d ≥ 64)": r.jacobian_slope, "gradient reaching W_Q": r.gradients,
                 "training run": r.training.per_d, **real_details},
        equations=_equations(r),
        figures={"entropy": partial(plots.saturation_entropy_figure, r),
                 "jacobian-gradient": partial(plots.saturation_jacobian_figure, r),
                 "training": partial(plots.training_run_figure, r.training)},
    )


def _ci(e: Estimate, factor: float = 1.0) -> str:
    return f"[{e.lo * factor:.2g}, {e.hi * factor:.2g}]"


def _training_line(at: TrainingAtD) -> str:
    """One d of the run: each arm's best-rate loss and the paired difference."""
    u, s = at.best("none").loss, at.best("sqrt").loss
    return (f"d = {at.d}, held-out loss unscaled {u.value:.3f} {_ci(u)} (lr {at.best_rate['none']:g}) vs scaled "
            f"{s.value:.3f} {_ci(s)} (lr {at.best_rate['sqrt']:g}), paired difference {at.difference.value:+.3f} "
            f"{_ci(at.difference)}")


def _summary(r: SaturationResult) -> str:
    u, s, g = r.largest.unscaled, r.largest.scaled, r.gradients[-1]
    return (f"d = {r.largest.d}, n = {r.sizes.n}, {r.sizes.rows} rows per d: unscaled max weight "
            f"{u.max_weight.value:.3f} {_ci(u.max_weight)}, entropy {u.entropy.value:.3f} nats {_ci(u.entropy)} "
            f"(scaled {s.entropy.value:.2f}, log n = {math.log(r.sizes.n):.2f}); median ‖J‖ "
            f"{u.jacobian_median.value:.1e} vs {s.jacobian_median.value:.2f}; mean ‖J‖ ∝ d^{r.jacobian_slope:.2f}; "
            f"∇W_Q ratio unscaled/scaled at d = {g.d} ({g.draws} draws): geometric mean "
            f"{g.geometric_mean_ratio.value:.1e} {_ci(g.geometric_mean_ratio)}, {100 * g.below_one_percent.value:.0f}% "
            f"{_ci(g.below_one_percent, 100)} of queries below 1%; training ({r.sizes.steps} SGD steps, "
            f"{r.sizes.seeds} seeds): " + "; ".join(_training_line(at) for at in r.training.per_d))


def _significance(e: Estimate) -> str:
    """Words for a paired interval of (unscaled − scaled) loss."""
    if e.lo > 0:
        return "unscaled slower"
    return "scaled slower" if e.hi < 0 else "no difference measured"


def _steps_text(step: int | None) -> str:
    return "not within the run" if step is None else f"step {step}"


def _conditions(r: SaturationResult, quick: bool) -> tuple[str, ...]:
    """The conditions under which the verdict was reached, each with the study's numbers."""
    t, z = r.training, r.sizes
    runs = t.per_d
    return (
        f"scores of q, k with independent unit-variance components (LeCun-initialised W_Q, W_K for the gradient), "
        f"n = {z.n} keys; every statistic with a 95% interval (means: normal approximation; medians: order "
        "statistics; fractions: Wilson; the gradient ratio: t-interval of its logarithm)",
        "measured: saturation of the softmax and the gradient reaching W_Q at initialisation, and whether learning "
        f"slows: one attention layer trained by plain SGD on a retrieval task (each sequence {t.keys} "
        f"key-value tokens of width {t.width} and a query holding a noisy copy of one key, noise "
        f"{t.noise}; W_Q, W_K of width d trained from LeCun initialisation, W_V fixed to read the value; "
        f"loss: squared error of the retrieved value on {t.evaluate} held-out sequences per seed), "
        f"{z.steps} steps of batch {t.batch}, {z.seeds} seeds, d = {', '.join(map(str, z.training_dims))}"
        + (" (quick mode: one d, fewer steps, seeds and learning rates; the full run has d = 256, 1024, 4096, "
           "200 steps, 6 seeds, 6 rates)" if quick else ""),
        "each arm at its own best learning rate of the grid "
        f"{', '.join(f'{rate:g}' for rate in z.learning_rates)} (at a common rate the comparison says little: the "
        "unscaled gradients are up to √d times larger, so small rates favour it); both arms of a seed share the "
        "initial weights and every batch, so the loss difference is paired seed by seed (t-interval; the best rate "
        "is picked on the same held-out loss, a small optimistic bias shared by both arms); the claim's "
        f"saturating arm must be slower at d = {runs[-1].d}: "
        + "; ".join(f"d = {at.d}: difference {at.difference.value:+.3f} {_ci(at.difference)} "
                    f"({_significance(at.difference)})" for at in runs),
        "part of the gap is the saturated start (held-out loss before any update: "
        + "; ".join(f"d = {at.d}: unscaled {at.start['none']:.2f}, scaled {at.start['sqrt']:.2f}" for at in runs)
        + "); the speed itself, as the first checkpoint where the mean loss of the best-rate curve is at most "
        f"{TARGET_LOSS}: " + "; ".join(f"d = {at.d}: unscaled {_steps_text(t.steps_to(TARGET_LOSS, 'none', j))}, "
                                      f"scaled {_steps_text(t.steps_to(TARGET_LOSS, 'sqrt', j))}"
                                      for j, at in enumerate(runs)),
        "saturation is per row: the MEDIAN Jacobian norm collapses (a typical query gets almost no gradient), while "
        f"the MEAN decays only like d^{r.jacobian_slope:.2f}: rare near-ties between the top two scores keep some "
        "rows soft",
        ("the mean gradient reaching W_Q does not shrink"
         if r.gradients[-1].mean_norm_unscaled > r.gradients[-1].mean_norm_scaled
         else "the mean gradient reaching W_Q shrinks too")
        + ": the unscaled path multiplies by 1 instead of 1/√d, so the few unsaturated queries get large gradients",
        "with 1/√d the score distribution, and with it max weight, entropy and Jacobian, is the same for every d",
        f"the gradient of every draw by the vectorised backward (studies.saturation.w_q_gradients); the first "
        f"{VJP_CHECKED_DRAWS} draws of each d recomputed by attention_vjp one layer at a time: largest relative "
        f"difference {max(g.vjp_difference for g in r.gradients):.1e} (at most {VJP_TOLERANCE:g} required); the "
        f"training run's gradients by its own backward (studies.training.retrieval_gradients, exact in the span of "
        f"the initial rows), recomputed at full d by attention_vjp on {VJP_SEQUENCES} sequences at the first and "
        f"last step: largest relative difference {t.vjp_difference:.1e} (at most {VJP_TOLERANCE:g} required)",
    )


def _equations(r: SaturationResult) -> tuple[tuple[str, sp.Expr], ...]:
    e = r.exact
    return (
        ("Softmax of two scores with gap s", sp.Eq(tex("a_1"), e.weight, evaluate=False)),
        ("Its derivative: the Jacobian entry a₁(1 − a₁)", sp.Eq(tex(r"\partial a_1 / \partial s"), e.derivative,
                                                               evaluate=False)),
        ("Saturation: the derivative vanishes as the gap grows",
         sp.Eq(tex(r"\lim_{s\to\infty} \partial a_1/\partial s"), e.limit, evaluate=False)),
        ("Unscaled scores have standard deviation √d (variance-scaling), so gaps grow like √d",
         sp.Eq(tex(r"\operatorname{sd}[q\cdot k]"), sp.sqrt(sp.Symbol("d", positive=True)), evaluate=False)),
    )


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (builtin_claim("softmax-saturation", check_softmax_saturation),)
