"""Theory claims from the literature: ``not-lipschitz``, ``kernel-smoother``, ``performer-unbiased``,
``linear-attention-rnn``, ``mup-scaling``.

The mathematics lives in :mod:`attnsym.symbolic.lipschitz`, :mod:`attnsym.symbolic.kernel_smoother`,
:mod:`attnsym.symbolic.performer`, :mod:`attnsym.symbolic.linear_attention`, :mod:`attnsym.symbolic.mup`
(exact) and their numeric twins in :mod:`attnsym.numeric`; the figures in
:mod:`attnsym.plots.literature_theory` draw what the checks computed. Each check compares those
implementations with a formula written in the check from the paper, so a mutated implementation
fails it (``tests/test_claims_mutations_theory.py``).
"""

from __future__ import annotations

import re
from functools import partial

import sympy as sp

from ...plots.literature_theory import kernel_figure, linear_rnn_figure, lipschitz_result_figure, mup_figure, performer_figure
from ...studies import kernel_smoother, linear_attention, mup, performer
from ...studies import lipschitz as lipschitz_study
from ...symbolic import lipschitz as exact_lipschitz
from ...symbolic import performer as exact_performer
from .._evidence import CheckContext, Evidence, tex
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = [
    "check_kernel_smoother",
    "check_linear_attention_rnn",
    "check_mup_scaling",
    "check_not_lipschitz",
    "check_performer_unbiased",
]


def _plain(expr) -> str:
    """A SymPy expression for a summary line: ``w_v*(t**2 + 2)/4`` reads ``w_v·(t^2 + 2)/4``, ``oo`` reads ``∞``."""
    return re.sub(r"\boo\b", "∞", str(expr).replace("**", "^").replace("*", "·"))


def check_not_lipschitz(ctx: CheckContext, *, claimed_growth: int = 2) -> Evidence:
    """Kim et al. Thm 3.1: the witness ``x_1 = 0, x_2 = t u`` has ``∂f_1/∂x_1 = ½W_V + (t²/4)c(Auᵀ)(uW_V)``, unbounded.

    A verdict on :func:`attnsym.studies.lipschitz.study`: the symbolic layer's witness block
    against the closed form (d = 1 with symbolic weights; d = 2 with integer weights and
    ``c = 1/√2``, in quick mode too, so a wrong scale fails), a polynomial of degree
    ``claimed_growth`` in ``t`` with limit ∞; the float64 layer at the witness; ``‖J‖₂`` in balls.
    """
    r = lipschitz_study.study(partial(ctx.rng, "not-lipschitz"), quick=ctx.quick)
    facts = {"layer = closed form (d = 1, symbolic weights)": r.entry_equal,
             "layer = closed form (d = 2, scale 1/√2)": r.d2_equal,
             f"degree {claimed_growth} in t": r.degree == claimed_growth, "limit ∞": r.limit == sp.oo,
             "numeric layer at the witness = exact (rel 1e-6)": r.numeric_gap <= 1e-6,
             "largest ‖J‖₂ found at the largest radius": r.largest[-1] > max(r.largest[:-1]),
             "grows at least like r": r.slope >= 1.0}
    radii = r.sizes.radii
    return Evidence(
        "not-lipschitz", statement("not-lipschitz"), verdict(facts),
        method=("symbolic proof (the symbolic layer's Jacobian at the witness x₁ = 0, x₂ = t u against the derived "
                "closed form, d = 1 and d = 2; its limit) + numeric check (float64 layer at the witness; ‖J‖₂ at "
                f"{r.sizes.samples} random points per radius and a local search, radii {radii[0]:g} … {radii[-1]:g})"),
        summary=(f"∂f₁/∂x₁ at x₁ = 0, x₂ = t: {_plain(sp.factor(r.entry))} "
                 f"({'=' if r.entry_equal else '≠'} the closed form; d = 2 {'=' if r.d2_equal else '≠'} it with c = 1/√2), "
                 f"{'not a polynomial' if r.degree is None else f'degree {r.degree}'} in t, limit {_plain(r.limit)} for "
                 f"unit weights; numeric vs exact {r.numeric_gap:.1e}; largest ‖J‖₂ found "
                 + ", ".join(f"{v:.3g} (r = {rad:g})" for v, rad in zip(r.largest, radii, strict=True))
                 + f": growth exponent {r.slope:.2f} (median ‖J‖₂ stays {min(r.median):.2f} … {max(r.median):.2f})"
                 + failed_clause(facts)),
        conditions=("dot-product scores c·X W_Q W_Kᵀ Xᵀ on an unbounded input domain, W_Q W_Kᵀ ≠ 0 and W_V ≠ 0; on a "
                    "bounded domain the layer is Lipschitz (its Jacobian is continuous), with a constant growing "
                    "with the radius",
                    "the numeric search gives lower bounds of the local constant (random points in the ball); large "
                    "Jacobians sit near balanced rows (a query orthogonal to A Xᵀ), so a typical point has a small one",
                    "Kim et al.'s L2 attention (scores −‖x_i W_Q − x_j W_Q‖², W_K tied to W_Q) is Lipschitz: the claim "
                    "is about the dot product"),
        details={**facts, "witness entry": r.entry, "closed form": r.closed, "numeric gap": r.numeric_gap,
                 "radii": list(radii), "largest norm": list(r.largest), "median norm": list(r.median),
                 "growth exponent": r.slope},
        equations=(("witness Jacobian (d = 1, a = c·w_Q·w_K)", sp.Eq(tex(r"\partial f_1/\partial x_1"),
                                              exact_lipschitz.kim_witness_block(r.t, [[sp.Symbol("a")]], [[1]],
                                                                                [[sp.Symbol("w_V")]], 1, [1])[0, 0],
                                              evaluate=False)),),
        figures={"not-lipschitz": partial(lipschitz_result_figure, r)},
    )


def check_kernel_smoother(ctx: CheckContext, *, claimed_symmetric_when: str = "symmetric") -> Evidence:
    """Tsai et al.: ``A_ij = k(x_i, x_j)/Σ_l k(x_i, x_l)``, ``k(a, b) = exp(c a W_Q (b W_K)ᵀ)``, symmetric iff ``W_Q W_Kᵀ`` is.

    A verdict on :func:`attnsym.studies.kernel_smoother.study`: the symbolic layer's weights against
    the smoother, the log-asymmetry against ``c(M − Mᵀ)``, three integer weight cases, float64.
    ``claimed_symmetric_when`` is the asserted condition on ``M``: ``"symmetric"`` (the claim) or
    ``"always"`` (false).
    """
    r = kernel_smoother.study(partial(ctx.rng, "kernel-smoother"), quick=ctx.quick)
    e = r.exact
    asymmetry_form = e.bilinear and (e.B - e.c * (e.M - e.M.T)).applyfunc(sp.expand).is_zero_matrix
    predicted = (lambda k: k.m_symmetric) if claimed_symmetric_when == "symmetric" else (lambda k: True)
    facts = {f"layer weights = kernel smoother (n = {e.n}, d = 2, exact)": e.weights_equal,
             "log k(a,b) − log k(b,a) = c a(M − Mᵀ)bᵀ (exact)": bool(asymmetry_form),
             "k symmetric exactly when M is (3 cases)": all(k.kernel_symmetric == predicted(k) for k in e.cases),
             "k(e1,e2) ≠ k(e2,e1) exactly when not symmetric": all((k.swap_ratio == 1) == k.kernel_symmetric
                                                                   for k in e.cases),
             "float64 weights = smoother (1e-12)": r.numeric_gap <= 1e-12,
             "float64: tied kernel symmetric, untied not": r.tied_asymmetry <= 1e-12 < r.untied_asymmetry}
    return Evidence(
        "kernel-smoother", statement("kernel-smoother"), verdict(facts),
        method=(f"symbolic proof (the symbolic layer's weights, n = {e.n}, d = 2, against the kernel smoother; the "
                f"bilinear log-asymmetry; three weight cases) + numeric check (float64, {r.m} tokens, d = {r.d})"),
        summary=(f"weights {'=' if e.weights_equal else '≠'} k(x_i, x_j)/Σ_l k(x_i, x_l) exactly; log-asymmetry "
                 f"{'=' if asymmetry_form else '≠'} c·a(M − Mᵀ)bᵀ; "
                 + "; ".join(f"{k.label}: M {'symmetric' if k.m_symmetric else 'not symmetric'}, "
                             f"k(e1,e2)/k(e2,e1) = {_plain(k.swap_ratio)}" for k in e.cases)
                 + f"; float64 gap {r.numeric_gap:.1e}, ‖K − Kᵀ‖/‖K‖ = {r.tied_asymmetry:.1e} tied, "
                 f"{r.untied_asymmetry:.2f} untied" + failed_clause(facts)),
        conditions=("the scale c = 1/√d_k and no bias, mask or positions: a mask sets k to 0 off the allowed keys, "
                    "RoPE makes k depend on the positions too",
                    "k need not be positive definite even when symmetric (Tsai et al. discuss this); the claim is "
                    "about symmetry only"),
        details={**facts, "cases": list(e.cases), "log-asymmetry matrix": e.B, "numeric gap": r.numeric_gap,
                 "relative asymmetry (tied, untied)": [r.tied_asymmetry, r.untied_asymmetry]},
        equations=(("kernel", sp.Eq(tex(r"k(a, b)"), sp.exp(tex(r"a W_Q W_K^\top b^\top / \sqrt{d_k}")),
                                    evaluate=False)),
                   ("weights", sp.Eq(tex(r"A_{ij}"), tex(r"k(x_i, x_j) / \sum_l k(x_i, x_l)"), evaluate=False))),
        figures={"kernel-smoother": partial(kernel_figure, r.K_tied.tolist(), r.K_untied.tolist())},
    )


def check_performer_unbiased(ctx: CheckContext, *, claimed_mean=None) -> Evidence:
    """FAVOR+: ``E[φ(x)ᵀφ(y)] = exp(xᵀy)`` and Lemma 2's MSE exactly (Gaussian MGF); Monte Carlo MSE; the output's bias.

    A verdict on :func:`attnsym.studies.performer.study`: the exact mean against ``exp(xᵀy)``
    (``claimed_mean(x, y)`` replaces it for a false variant) and the variance against Lemma 2; the
    Monte Carlo mean and MSE inside their Bonferroni 99.9% intervals; the row-normalised output
    biased at the smallest m (its interval excludes 0), the bias shrinking with m.
    """
    r = performer.study(partial(ctx.rng, "performer-unbiased"), quick=ctx.quick)
    e, rows = r.exact, r.rows
    target = sp.exp(e.x.dot(e.y)) if claimed_mean is None else claimed_mean(e.x, e.y)
    unbiased = sp.expand(sp.powsimp(sp.expand(e.mean - target))) == 0
    variance = sp.expand(sp.powsimp(sp.expand(e.second - e.mean**2 - e.lemma2))) == 0
    facts = {"Gaussian MGF (completed square)": e.completed_square, "E[φ(x)ᵀφ(y)] = exp(xᵀy) (exact)": unbiased,
             "Var = e^{‖x+y‖²}SM²(1 − e^{−‖x+y‖²}) (exact)": variance,
             "Monte Carlo mean within its CI of exp(xᵀy)": all(abs(w.mean - r.kernel) <= w.mean_half_width for w in rows),
             "Monte Carlo MSE within its CI of Lemma 2": all(abs(w.mse - w.exact_mse) <= w.mse_half_width for w in rows),
             "normalised output biased at the smallest m": abs(rows[0].bias) > rows[0].bias_half_width,
             "its bias shrinks with m": abs(rows[-1].bias) < abs(rows[0].bias)}
    first, last = rows[0], rows[-1]
    return Evidence(
        "performer-unbiased", statement("performer-unbiased"), verdict(facts),
        method=("symbolic proof (Gaussian MGF by the completed square; d = 2, symbolic x, y) + Monte Carlo "
                f"({r.draws} draws of Ω per m = {', '.join(map(str, r.features))}, d = 4, Bonferroni 99.9% intervals)"),
        summary=(f"E[Z] = {_plain(e.mean)} ({'=' if unbiased else '≠'} exp(xᵀy)), Var {'=' if variance else '≠'} Lemma 2; "
                 f"exp(xᵀy) = {r.kernel:.4f}: "
                 + "; ".join(f"m = {w.m}: mean {w.mean:.4f} ± {w.mean_half_width:.4f}, MSE {w.mse:.4f} ± "
                             f"{w.mse_half_width:.4f} (exact {w.exact_mse:.4f})" for w in rows)
                 + f"; normalised output − softmax output: {first.bias:+.4f} ± {first.bias_half_width:.4f} at "
                 f"m = {first.m}, {last.bias:+.4f} ± {last.bias_half_width:.4f} at m = {last.m}" + failed_clause(facts)),
        conditions=PERFORMER_CONDITIONS,
        details={**facts, "E[Z]": e.mean, "E[Z²]": e.second, "exp(x·y)": r.kernel, "softmax output": r.softmax_output,
                 "rows": list(rows)},
        equations=(("positive feature", sp.Eq(tex(r"\varphi_\omega(x)"), exact_performer.positive_feature(e.x, e.omega),
                                              evaluate=False)),
                   ("unbiased", sp.Eq(tex(r"E[\varphi_\omega(x)\varphi_\omega(y)]"), e.mean, evaluate=False)),
                   ("MSE (Lemma 2, m features)", sp.Eq(tex(r"\mathrm{MSE}_m"), performer.lemma2_mse(e.x, e.y, sp.Symbol("m")),
                                                       evaluate=False))),
        figures={"performer-unbiased": partial(performer_figure, r.features, [w.exact_mse for w in rows],
                                               [w.mse for w in rows], [w.mse_half_width for w in rows],
                                               [w.bias for w in rows], [w.bias_half_width for w in rows])},
    )


PERFORMER_CONDITIONS = (
    "ω_i i.i.d. N(0, I_d) (FAVOR+'s orthogonal features lower the MSE further; not checked here)",
    "only the kernel estimate is unbiased: the Performer's output divides two estimates, and "
    "E[ratio] ≠ ratio of expectations — it is biased, consistently (the bias shrinks as m grows)",
    "the MSE grows like e^{‖x+y‖²}: large queries and keys need many features")


def check_linear_attention_rnn(ctx: CheckContext, *, claimed_keys: str = "j ≤ i") -> Evidence:
    """Katharopoulos et al.: causal linear attention = its recurrent form ``y_i = φ_i S_i / φ_i z_i`` exactly.

    A verdict on :func:`attnsym.studies.linear_attention.study`: both exact forms against the
    definition ``Σ_{j ≤ i}(φ_i·ψ_j)v_j / Σ_{j ≤ i} φ_i·ψ_j`` written here (``claimed_keys="all"``
    sums over every j: false); the float64 twins with ``φ = elu + 1`` against each other.
    """
    r = linear_attention.study(partial(ctx.rng, "linear-attention-rnn"), quick=ctx.quick)
    e, n = r.exact, r.exact.n
    keys = (lambda i: range(i + 1)) if claimed_keys == "j ≤ i" else (lambda i: range(n))
    sim = lambda i, j: (e.Phi[i, :] * e.Psi[j, :].T)[0, 0]
    definition = sp.Matrix(n, e.V.shape[1], lambda i, c: sum(sim(i, j) * e.V[j, c] for j in keys(i))
                           / sum(sim(i, j) for j in keys(i)))
    same = lambda A, B: A.shape == B.shape and all(sp.cancel(a - b) == 0 for a, b in zip(A, B, strict=True))
    parallel_ok, recurrent_ok = same(e.parallel, definition), same(e.recurrent, definition)
    facts = {f"parallel form = definition (n = {n}, exact)": parallel_ok,
             f"recurrent form = definition (n = {n}, exact)": recurrent_ok,
             "float64 forms agree (1e-12, φ = elu + 1)": r.numeric_gap <= 1e-12, "y_1 = v_1 (float64)": r.first_gap <= 1e-12}
    state = linear_attention.FEATURES * linear_attention.VALUE_WIDTH + linear_attention.FEATURES
    return Evidence(
        "linear-attention-rnn", statement("linear-attention-rnn"), verdict(facts),
        method=(f"symbolic proof (n = {n}, positive symbolic features, symbolic values; both forms against the "
                f"definition) + numeric check (float64, n = {r.m}, d = {r.d}, φ = elu + 1)"),
        summary=(f"n = {n}: parallel {'=' if parallel_ok else '≠'} definition, recurrent "
                 f"{'=' if recurrent_ok else '≠'} definition exactly (keys {claimed_keys}); float64 n = {r.m}: largest "
                 f"relative gap {r.numeric_gap:.1e}, |y_1 − v_1| = {r.first_gap:.1e}; with φ = identity "
                 f"{r.negative_share:.0%} of the causal similarities are negative (smallest |denominator| "
                 f"{r.smallest_denominator:.2g}); the state has r(d_v + 1) = {state} numbers at every step (r = d_v = 2)"
                 + failed_clause(facts)),
        conditions=("the identity is algebraic: it holds for any feature map whose denominators do not vanish; a "
                    "positive φ (elu + 1 in the paper) is what makes the weights a distribution and the denominators "
                    "positive (with φ = identity many similarities are negative)",
                    "causal masking: the recurrence reads tokens 1 … i; the non-causal form needs all keys first",
                    "in floating point the two orders of summation differ by rounding only"),
        details={**facts, "numeric gap": r.numeric_gap, "parallel (exact)": e.parallel, "state size": state,
                 "negative similarities with φ = identity": r.negative_share,
                 "smallest |denominator| with φ = identity": r.smallest_denominator},
        equations=(("recurrent form", sp.Eq(tex(r"y_i"), tex(r"\varphi_i S_i / (\varphi_i z_i)"), evaluate=False)),
                   ("state update", sp.Eq(tex(r"S_i"), tex(r"S_{i-1} + \psi_i^\top v_i"), evaluate=False))),
        figures={"linear-attention-rnn": partial(linear_rnn_figure, r.weights.tolist(), r.parallel_shown.tolist(),
                                                 r.recurrent_shown.tolist())},
    )


def check_mup_scaling(ctx: CheckContext, *, claimed_variance=None) -> Evidence:
    """Correlated q, k (correlation ρ): ``E[q·k] = ρd``, ``Var = d(1 + ρ²)``; 1/√d logits grow like ρ√d, 1/d ones stay Θ(1).

    A verdict on :func:`attnsym.studies.mup.study`: the exact moments against ``ρd`` and
    ``d(1 + ρ²)`` (``claimed_variance(ρ, d)`` replaces the latter for a false variant), against
    attnsym's independent moment engine at ρ = 0 and ρ = 1, the limits of the scaled logits, and
    the sampled logits at ρ = 1/2 inside Bonferroni 99.9% intervals of the exact values.
    """
    r = mup.study(partial(ctx.rng, "mup-scaling"), quick=ctx.quick)
    e, rho, d = r.exact, r.exact.rho, r.exact.d
    claimed = d * (1 + rho**2) if claimed_variance is None else claimed_variance(rho, d)
    facts = {"E[q·k] = ρd, Var = d(1 + ρ²) (exact)": (sp.expand(e.mean - rho * d) == 0
                                                       and sp.expand(e.variance - claimed) == 0),
             "ρ = 0 and ρ = 1 agree with the independent moment engine": (
                 sp.expand(e.variance.subs(rho, 0) - e.independent_variance) == 0
                 and sp.expand(e.variance.subs(rho, 1) - e.same_variance) == 0 and e.mean.subs(rho, 0) == e.independent_mean),
             "limits: 1/√d mean → ∞, 1/d mean → ρ, variance → 0": (
                 e.sqrt_mean_limit == sp.oo and e.sqrt_variance_limit == 1 + rho**2 and e.mup_mean_limit == rho
                 and e.mup_variance_limit == 0),
             "sampled means and variances inside their intervals": all(w.inside for w in r.sampled)}
    sampled = {k: ([w.d for w in r.sampled if w.scale == k], [w.mean for w in r.sampled if w.scale == k])
               for k in ("1/√d", "1/d")}
    return Evidence(
        "mup-scaling", statement("mup-scaling"), verdict(facts),
        method=("symbolic proof (Gaussian moments of a correlated pair, symbolic ρ and d; limits) + Monte Carlo "
                f"(ρ = 1/2, d = {', '.join(map(str, r.sizes.dims))}, {r.sizes.samples} samples each, Bonferroni 99.9% "
                "intervals)"),
        summary=_mup_summary(r, claimed) + failed_clause(facts),
        conditions=MUP_CONDITIONS,
        details={**facts, "mean": e.mean, "variance": e.variance,
                 "limits": {"1/√d mean": e.sqrt_mean_limit, "1/√d variance": e.sqrt_variance_limit,
                            "1/d mean": e.mup_mean_limit, "1/d variance": e.mup_variance_limit},
                 "rows": list(r.sampled)},
        equations=(("mean", sp.Eq(tex(r"E[q \cdot k]"), e.mean, evaluate=False)),
                   ("variance", sp.Eq(tex(r"\operatorname{Var}[q \cdot k]"), e.variance, evaluate=False))),
        figures={"mup-scaling": partial(mup_figure, r.grid.tolist(), r.curves, sampled, rho=float(mup.RHO))},
    )


def _mup_summary(r: mup.MupResult, claimed: sp.Expr) -> str:
    e, rho = r.exact, r.exact.rho
    return (f"E[q·k] = {_plain(e.mean)}, Var[q·k] = {_plain(e.variance)} (claimed {_plain(claimed)}); ρ = 0: "
            f"{_plain(e.variance.subs(rho, 0))}, ρ = 1: {_plain(e.variance.subs(rho, 1))}; as d → ∞ the 1/√d logit's "
            f"mean → {_plain(e.sqrt_mean_limit)} (variance → {_plain(e.sqrt_variance_limit)}), the 1/d logit's mean → "
            f"{_plain(e.mup_mean_limit)} (variance → {_plain(e.mup_variance_limit)}); sampled at ρ = 1/2, d = "
            f"{r.sizes.dims[-1]}: "
            + ", ".join(f"{w.scale} mean {w.mean:.3f} ± {w.mean_half_width:.3f} (exact {w.exact_mean:.3f}), variance "
                        f"{w.variance:.4f} (exact {w.exact_variance:.4f})"
                        for w in r.sampled if w.d == r.sizes.dims[-1]))


MUP_CONDITIONS = (
    "each coordinate pair (q_i, k_i) jointly Gaussian with unit variances and correlation ρ, pairs "
    "independent across i: with other laws Var[q_i k_i] = E[q_i²k_i²] − ρ² depends on the fourth "
    "moments (for example d(1 − ρ²) when a Rademacher z replaces the Gaussian one)",
    "at initialisation q and k are nearly independent (ρ ≈ 0) and 1/√d is the right scale "
    "(variance-scaling); μP's 1/d is for the correlation that training builds")


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (builtin_claim("not-lipschitz", check_not_lipschitz), builtin_claim("kernel-smoother", check_kernel_smoother),
          builtin_claim("performer-unbiased", check_performer_unbiased),
          builtin_claim("linear-attention-rnn", check_linear_attention_rnn), builtin_claim("mup-scaling", check_mup_scaling))
