"""The claim that unscaled scores saturate softmax as d grows: ``softmax-saturation``.

The experiment lives in :mod:`attnsym.numeric.saturation` (seeded softmax statistics and the
gradient reaching W_Q, every statistic with a 95 % interval) and, for "slowing learning", in
:mod:`attnsym.numeric.training` (a seeded SGD run of one attention layer on a retrieval task,
scaled vs unscaled, held-out loss with 95 % intervals over seeds); the figures of
:mod:`attnsym.plots.scaling` and :mod:`attnsym.plots.training` draw the same tables. :func:`check_softmax_saturation` takes the
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
from ...numeric.training import VJP_SEQUENCES, t_interval, train_retrieval
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


def _training_sizes(quick: bool) -> dict:
    """The training run's dimensions, SGD steps, seeds and learning-rate grid (quick: one d, fewer of each)."""
    if quick:
        return {"dims": [1024], "steps": 40, "seeds": 4, "learning_rates": (0.03, 0.3, 3.0)}
    return {"dims": [256, 1024, 4096], "steps": 200, "seeds": 6, "learning_rates": (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)}


#: the held-out loss whose first crossing (by a best-rate mean curve) the conditions report as the speed
TARGET_LOSS = 0.3


def _steps_text(step: int | None) -> str:
    return "not within the run" if step is None else f"step {step}"


def _training_extras(training: dict) -> None:
    """Add to each d of the run the start loss and the steps to :data:`TARGET_LOSS` of each arm's best-rate curve."""
    rates = training["learning rates"]
    for j, run in enumerate(training["per d"]):
        run["start"], run["steps to target"] = {}, {}
        for arm, rate in run["best rate"].items():
            mean = training["curves"][arm][j, rates.index(rate)].mean(axis=0)  # (checkpoints,)
            run["start"][arm] = float(mean[0])
            below = np.flatnonzero(mean <= TARGET_LOSS)
            run["steps to target"][arm] = int(training["steps"][below[0]]) if below.size else None


def _fmt_ci(ci) -> str:
    return f"[{ci[0]:.2g}, {ci[1]:.2g}]"


def _significance(ci) -> str:
    """Words for a paired interval of (unscaled − scaled) loss."""
    if ci[0] > 0:
        return "unscaled slower"
    return "scaled slower" if ci[1] < 0 else "no difference measured"


def _training_line(run: dict) -> str:
    """One d of the training run for the summary: each arm's best-rate loss and the paired difference."""
    best = {arm: next(r for r in run["final"][arm] if r["rate"] == run["best rate"][arm]) for arm in ("sqrt", "none")}
    diff = run["best-rate difference"]
    return (f"d = {run['d']}, held-out loss unscaled {best['none']['mean']:.3f} {_fmt_ci(best['none']['95% CI'])} "
            f"(lr {run['best rate']['none']:g}) vs scaled {best['sqrt']['mean']:.3f} {_fmt_ci(best['sqrt']['95% CI'])} "
            f"(lr {run['best rate']['sqrt']:g}), paired difference {diff['mean']:+.3f} {_fmt_ci(diff['95% CI'])}")


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

    sizes = _training_sizes(ctx.quick)
    with mc.blas_single_thread():
        training = train_retrieval(ctx.rng("softmax-saturation", "training"), **sizes)
    _training_extras(training)
    runs = training["per d"]
    difference = runs[-1]["best-rate difference"]  # unscaled minus scaled, each at its best rate, at the largest d
    # the arm the claim says saturates must learn slower: its loss higher, by the whole paired interval
    learning_slows = difference["95% CI"][0] > 0 if saturating == "unscaled" else difference["95% CI"][1] < 0
    vjp_training = training["vjp max rel. difference"]

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
    backward_ok = all(r[vjp_key] <= 1e-9 for r in grad_rows) and vjp_training <= 1e-9
    holds = (symbolic_ok and backward_ok and saturates(saturating) and stable
             and (saturating != "unscaled" or gradient_shrinks) and learning_slows)
    mean_grows = g_last["mean ‖∇W_Q‖ unscaled"] > g_last["mean ‖∇W_Q‖ scaled"]
    verdict = "holds-under-conditions" if holds else "fails"
    summary = (f"d = {big['d']}, n = {n}, {rows} rows per d: unscaled max weight {big['max weight unscaled']:.3f} "
               f"{_fmt_ci(big['max weight unscaled 95% CI'])}, entropy {big['entropy unscaled']:.3f} nats "
               f"{_fmt_ci(big['entropy unscaled 95% CI'])} (scaled {big['entropy scaled']:.2f}, log n = {logn:.2f}); "
               f"median ‖J‖ {big['‖J‖ median unscaled']:.1e} vs {big['‖J‖ median scaled']:.2f}; mean ‖J‖ ∝ d^{slope:.2f}; "
               f"∇W_Q ratio unscaled/scaled at d = {g_last['d']} ({g_last['draws']} draws): geometric mean "
               f"{g_last['geometric-mean ratio']:.1e} {_fmt_ci(g_last['geometric-mean ratio 95% CI'])}, "
               f"{100 * g_last['fraction ratio < 1%']:.0f}% {_fmt_ci([100 * v for v in g_last['fraction ratio < 1% 95% CI']])} "
               f"of queries below 1%; training ({sizes['steps']} SGD steps, {sizes['seeds']} seeds): "
               + "; ".join(_training_line(run) for run in runs))
    conditions = (
        f"scores of q, k with independent unit-variance components (LeCun-initialised W_Q, W_K for the gradient), n = {n} "
        "keys; every statistic with a 95% interval (means: normal approximation; medians: order statistics; "
        "fractions: Wilson; the gradient ratio: t-interval of its logarithm)",
        "measured: saturation of the softmax and the gradient reaching W_Q at initialisation, and whether learning "
        f"slows: one attention layer trained by plain SGD on a retrieval task (each sequence {training['keys']} "
        f"key-value tokens of width {training['width']} and a query holding a noisy copy of one key, noise "
        f"{training['noise']}; W_Q, W_K of width d trained from LeCun initialisation, W_V fixed to read the value; "
        f"loss: squared error of the retrieved value on {training['evaluate']} held-out sequences per seed), "
        f"{sizes['steps']} steps of batch {training['batch']}, {sizes['seeds']} seeds, d = "
        f"{', '.join(map(str, sizes['dims']))}"
        + (" (quick mode: one d, fewer steps, seeds and learning rates; the full run has d = 256, 1024, 4096, "
              "200 steps, 6 seeds, 6 rates)"
           if ctx.quick else ""),
        "each arm at its own best learning rate of the grid "
        f"{', '.join(f'{r:g}' for r in sizes['learning_rates'])} (at a common rate the comparison says little: the "
        "unscaled gradients are up to √d times larger, so small rates favour it); both arms of a seed share the "
        "initial weights and every batch, so the loss difference is paired seed by seed (t-interval; the best rate "
        "is picked on the same held-out loss, a small optimistic bias shared by both arms); the claim's "
        f"saturating arm must be slower at d = {runs[-1]['d']}: "
        + "; ".join(f"d = {run['d']}: difference {run['best-rate difference']['mean']:+.3f} "
                    f"{_fmt_ci(run['best-rate difference']['95% CI'])} "
                    f"({_significance(run['best-rate difference']['95% CI'])})" for run in runs),
        "part of the gap is the saturated start (held-out loss before any update: "
        + "; ".join(f"d = {run['d']}: unscaled {run['start']['none']:.2f}, scaled {run['start']['sqrt']:.2f}"
                    for run in runs)
        + "); the speed itself, as the first checkpoint where the mean loss of the best-rate curve is at most "
        f"{TARGET_LOSS}: " + "; ".join(f"d = {run['d']}: unscaled {_steps_text(run['steps to target']['none'])}, "
                                      f"scaled {_steps_text(run['steps to target']['sqrt'])}" for run in runs),
        "saturation is per row: the MEDIAN Jacobian norm collapses (a typical query gets almost no gradient), while "
        f"the MEAN decays only like d^{slope:.2f}: rare near-ties between the top two scores keep some rows soft",
        ("the mean gradient reaching W_Q does not shrink" if mean_grows else "the mean gradient reaching W_Q shrinks too")
        + ": the unscaled path multiplies by 1 instead of 1/√d, so the few unsaturated queries get large gradients",
        "with 1/√d the score distribution, and with it max weight, entropy and Jacobian, is the same for every d",
        f"the gradient of every draw by the vectorised backward (numeric.saturation.w_q_gradients); the first "
        f"{VJP_CHECKED_DRAWS} draws of each d recomputed by attention_vjp one layer at a time: largest relative "
        f"difference {max(r[vjp_key] for r in grad_rows):.1e} (at most 1e-9 required); the training run's "
        f"gradients by its own backward (numeric.training.retrieval_gradients, exact in the span of the initial "
        f"rows), recomputed at full d by attention_vjp on {VJP_SEQUENCES} sequences at the first and last step: "
        f"largest relative difference {vjp_training:.1e} (at most 1e-9 required)",
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
        "training run": {k: v for k, v in training.items() if k != "curves"},
        "learning slows (the claimed arm, at the largest d)": learning_slows,
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

    def training_fig():
        panels = []
        for j, run in enumerate(runs):
            panel = {"d": run["d"]}
            for arm, key in (("sqrt", "scaled"), ("none", "unscaled")):
                r = training["learning rates"].index(run["best rate"][arm])
                curves = training["curves"][arm][j, r]  # (seeds, checkpoints)
                intervals = np.array([t_interval(curves[:, k]) for k in range(curves.shape[1])])
                panel[key] = {"rate": run["best rate"][arm], "mean": intervals[:, 0], "lo": intervals[:, 1],
                              "hi": intervals[:, 2]}
            panels.append(panel)
        last = runs[-1]
        sweep = {"d": last["d"], "rates": training["learning rates"]}
        for arm, key in (("sqrt", "scaled"), ("none", "unscaled")):
            rows = last["final"][arm]
            sweep[key] = {"mean": [r["mean"] for r in rows], "lo": [r["95% CI"][0] for r in rows],
                          "hi": [r["95% CI"][1] for r in rows]}
        return plots.training_figure(training["steps"], panels, sweep=sweep)

    return Evidence(
        claim="softmax-saturation",
        statement=SATURATION_STATEMENT,
        verdict=verdict,
        method=("symbolic limit + Monte Carlo of softmax statistics (95% intervals) + numeric backward (vectorised over "
                "draws, checked against attention_vjp) + a seeded SGD training run, scaled vs unscaled (paired 95% "
                "intervals over seeds)"),
        summary=summary,
        conditions=conditions,
        details=details,
        equations=equations,
        figures={"entropy": entropy_fig, "jacobian-gradient": gradient_fig, "training": training_fig},
    )


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (builtin_claim("softmax-saturation", check_softmax_saturation),)
