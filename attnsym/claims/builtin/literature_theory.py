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

import math
import re
from functools import partial

import numpy as np
import sympy as sp

from ...numeric import attention as numeric_attention
from ...numeric import kernel_smoother as numeric_kernel
from ...numeric import linear_attention as numeric_linear
from ...numeric import performer as numeric_performer
from ...numeric import softmax as numeric_softmax
from ...numeric.montecarlo.moments import z_value
from ...plots.literature_theory import kernel_figure, linear_rnn_figure, lipschitz_result_figure, mup_figure, performer_figure
from ...spec import AttentionSpec
from ...studies import lipschitz as lipschitz_study
from ...studies import mup
from ...symbolic import kernel_smoother as exact_kernel
from ...symbolic import linear_attention as exact_linear
from ...symbolic import lipschitz as exact_lipschitz
from ...symbolic import performer as exact_performer
from ...symbolic.matrices import attention as symbolic_attention
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


def _verdict(ok: bool) -> str:
    return "holds" if ok else "fails"


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

    Exact: attnsym's symbolic layer (``n = 2`` quick, 3 full; ``d = 2``, symbolic X and weights)
    against :func:`attnsym.symbolic.kernel_smoother.kernel_smoother_weights`; the log-asymmetry
    matrix read off the kernel against ``c(M − Mᵀ)``; tied (``W_K = W_Q``), ``W_K = W_Q S`` (S
    symmetric) and untied integer weights. ``claimed_symmetric_when`` is the asserted condition on
    ``M``: ``"symmetric"`` (the claim) or ``"always"`` (false). Numeric: float64 attention weights
    against the float64 smoother.
    """
    n = 2 if ctx.quick else 3
    layer = symbolic_attention(AttentionSpec(n=n, d_model=2))
    c = layer.spec.scale_expr
    smoother = exact_kernel.kernel_smoother_weights(layer.X, layer.W_Q, layer.W_K, c)
    weights_equal = exact_kernel.same_softmax_form(layer.A, smoother)
    B, bilinear = exact_kernel.log_asymmetry_matrix(layer.W_Q, layer.W_K, c)
    M = layer.W_Q * layer.W_K.T
    asymmetry_form = bilinear and (B - c * (M - M.T)).applyfunc(sp.expand).is_zero_matrix
    W_Q = sp.Matrix([[1, 2], [-1, 3]])
    cases = {"W_K = W_Q": W_Q, "W_K = W_Q S, S = (2 1; 1 3)": W_Q * sp.Matrix([[2, 1], [1, 3]]),
             "W_K = (0 1; 2 −1)": sp.Matrix([[0, 1], [2, -1]])}
    rows = []
    for label, W_K in cases.items():
        Mc = W_Q * W_K.T
        Bc, _ = exact_kernel.log_asymmetry_matrix(W_Q, W_K, c)
        e1, e2 = [[1, 0]], [[0, 1]]
        swap = sp.powsimp(exact_kernel.attention_kernel(e1, e2, W_Q, W_K, c)
                          / exact_kernel.attention_kernel(e2, e1, W_Q, W_K, c))
        rows.append({"case": label, "M symmetric": Mc == Mc.T, "kernel symmetric": Bc.is_zero_matrix,
                     "k(e1, e2)/k(e2, e1)": swap})
    predicted = (lambda r: r["M symmetric"]) if claimed_symmetric_when == "symmetric" else (lambda r: True)
    iff = all(r["kernel symmetric"] == predicted(r) for r in rows)
    witness = all((r["k(e1, e2)/k(e2, e1)"] == 1) == r["kernel symmetric"] for r in rows)
    rng = ctx.rng("kernel-smoother")
    m, d = (8, 4) if ctx.quick else (32, 8)
    X = rng.standard_normal((m, d))
    Wq, Wk, Wv = (rng.standard_normal((d, d)) / math.sqrt(d) for _ in range(3))
    _, A = numeric_attention(X, Wq, Wk, Wv)
    numeric_gap = float(np.max(np.abs(np.asarray(A) - numeric_kernel.kernel_smoother_weights(X, Wq, Wk, 1 / math.sqrt(d)))))
    K_tied = numeric_kernel.kernel_matrix(X, Wq, Wq, 1 / math.sqrt(d))
    K_untied = numeric_kernel.kernel_matrix(X, Wq, Wk, 1 / math.sqrt(d))
    relative = lambda K: float(np.linalg.norm(K - K.T) / np.linalg.norm(K))
    tied_asym, untied_asym = relative(K_tied), relative(K_untied)
    facts = {f"layer weights = kernel smoother (n = {n}, d = 2, exact)": weights_equal,
             "log k(a,b) − log k(b,a) = c a(M − Mᵀ)bᵀ (exact)": asymmetry_form,
             "k symmetric exactly when M is (3 cases)": iff, "k(e1,e2) ≠ k(e2,e1) exactly when not symmetric": witness,
             "float64 weights = smoother (1e-12)": numeric_gap <= 1e-12,
             "float64: tied kernel symmetric, untied not": tied_asym <= 1e-12 < untied_asym}
    ok = all(facts.values())

    def figure():
        return kernel_figure(K_tied, K_untied)

    return Evidence(
        "kernel-smoother", statement("kernel-smoother"), _verdict(ok),
        method=(f"symbolic proof (the symbolic layer's weights, n = {n}, d = 2, against the kernel smoother; the "
                "bilinear log-asymmetry; three weight cases) + numeric check (float64, "
                f"{m} tokens, d = {d})"),
        summary=(f"weights {'=' if weights_equal else '≠'} k(x_i, x_j)/Σ_l k(x_i, x_l) exactly; log-asymmetry "
                 f"{'=' if asymmetry_form else '≠'} c·a(M − Mᵀ)bᵀ; "
                 + "; ".join(f"{r['case']}: M {'symmetric' if r['M symmetric'] else 'not symmetric'}, "
                             f"k(e1,e2)/k(e2,e1) = {_plain(r['k(e1, e2)/k(e2, e1)'])}" for r in rows)
                 + f"; float64 gap {numeric_gap:.1e}, ‖K − Kᵀ‖/‖K‖ = {tied_asym:.1e} tied, {untied_asym:.2f} untied"
                 + failed_clause(facts)),
        conditions=("the scale c = 1/√d_k and no bias, mask or positions: a mask sets k to 0 off the allowed keys, "
                    "RoPE makes k depend on the positions too",
                    "k need not be positive definite even when symmetric (Tsai et al. discuss this); the claim is "
                    "about symmetry only"),
        details={**facts, "cases": rows, "log-asymmetry matrix": B, "numeric gap": numeric_gap,
                 "relative asymmetry (tied, untied)": [tied_asym, untied_asym]},
        equations=(("kernel", sp.Eq(tex(r"k(a, b)"), sp.exp(tex(r"a W_Q W_K^\top b^\top / \sqrt{d_k}")),
                                    evaluate=False)),
                   ("weights", sp.Eq(tex(r"A_{ij}"), tex(r"k(x_i, x_j) / \sum_l k(x_i, x_l)"), evaluate=False))),
        figures={"kernel-smoother": figure},
    )


def _favor_mse(x, y, m):
    """Lemma 2 of Choromanski et al., written from the paper: ``(1/m) e^{‖x+y‖²} SM²(x, y) (1 − e^{−‖x+y‖²})``."""
    s = (x + y).dot(x + y)
    return sp.exp(s) * sp.exp(x.dot(y)) ** 2 * (1 - sp.exp(-s)) / m


def check_performer_unbiased(ctx: CheckContext, *, claimed_mean=None) -> Evidence:
    """FAVOR+: ``E[φ(x)ᵀφ(y)] = exp(xᵀy)`` and Lemma 2's MSE exactly (Gaussian MGF); Monte Carlo MSE; the output's bias.

    Exact (d = 2, symbolic x, y): :func:`attnsym.symbolic.performer.feature_moments` against
    ``exp(xᵀy)`` (``claimed_mean(x, y)`` replaces it for a false variant) and ``m·MSE`` of Lemma 2.
    Monte Carlo (d = 4): the float64 estimate of :mod:`attnsym.numeric.performer` over R draws
    of Ω per m: its mean and MSE against the exact values (Bonferroni 99.9% intervals); the
    row-normalised output's mean against the softmax output (the bias, its interval excluding 0 at
    the smallest m, shrinking with m).
    """
    x = sp.Matrix(sp.symbols("x_1:3", real=True))
    y = sp.Matrix(sp.symbols("y_1:3", real=True))
    omega = sp.symbols("omega_1:3", real=True)
    mean, second = exact_performer.feature_moments(x, y, omega)
    target = sp.exp(x.dot(y)) if claimed_mean is None else claimed_mean(x, y)
    unbiased = sp.expand(sp.powsimp(sp.expand(mean - target))) == 0
    variance = sp.expand(sp.powsimp(sp.expand(second - mean**2 - _favor_mse(x, y, 1)))) == 0
    mgf = exact_performer.completed_square()
    # Monte Carlo
    rng = ctx.rng("performer-unbiased")
    d = 4
    xv, yv = np.array([0.4, -0.2, 0.3, 0.1]), np.array([0.3, 0.2, -0.1, 0.4])
    sm = math.exp(float(xv @ yv))
    exact_mse = lambda m: float(_favor_mse(sp.Matrix(xv.tolist()), sp.Matrix(yv.tolist()), m))
    features = (1, 8) if ctx.quick else (1, 4, 16, 64)
    draws = 2000 if ctx.quick else 20000
    z = z_value(0.999, tests=3 * len(features))
    q = np.array([1.0, 0.5, -0.5, 0.2])
    K = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [-0.5, 0.5, 1.0, 0.0]])
    V = np.array([[1.0], [0.0], [-1.0]])
    softmax_out = float((np.asarray(numeric_softmax(q @ K.T / 1.0)) @ V)[0])
    rows = []
    for m in features:
        omega_draws = rng.standard_normal((draws, m, d))
        est = numeric_performer.kernel_estimate(xv, yv, omega_draws)
        sq = (est - sm) ** 2
        out = numeric_performer.favor_attention(q[None, :], K, V, omega_draws)[..., 0, 0]
        rows.append({"m": m, "mean": float(est.mean()), "mean half-width": z * float(est.std()) / math.sqrt(draws),
                     "MSE": float(sq.mean()), "MSE half-width": z * float(sq.std()) / math.sqrt(draws),
                     "exact MSE": exact_mse(m), "bias": float(out.mean()) - softmax_out,
                     "bias half-width": z * float(out.std()) / math.sqrt(draws)})
    mean_in = all(abs(r["mean"] - sm) <= r["mean half-width"] for r in rows)
    mse_in = all(abs(r["MSE"] - r["exact MSE"]) <= r["MSE half-width"] for r in rows)
    biased = abs(rows[0]["bias"]) > rows[0]["bias half-width"]
    shrinks = abs(rows[-1]["bias"]) < abs(rows[0]["bias"])
    facts = {"Gaussian MGF (completed square)": mgf, "E[φ(x)ᵀφ(y)] = exp(xᵀy) (exact)": unbiased,
             "Var = e^{‖x+y‖²}SM²(1 − e^{−‖x+y‖²}) (exact)": variance,
             "Monte Carlo mean within its CI of exp(xᵀy)": mean_in, "Monte Carlo MSE within its CI of Lemma 2": mse_in,
             "normalised output biased at the smallest m": biased, "its bias shrinks with m": shrinks}
    ok = all(facts.values())

    def figure():
        return performer_figure(features, [r["exact MSE"] for r in rows], [r["MSE"] for r in rows],
                                [r["MSE half-width"] for r in rows], [r["bias"] for r in rows],
                                [r["bias half-width"] for r in rows])

    return Evidence(
        "performer-unbiased", statement("performer-unbiased"), _verdict(ok),
        method=("symbolic proof (Gaussian MGF by the completed square; d = 2, symbolic x, y) + Monte Carlo "
                f"({draws} draws of Ω per m = {', '.join(map(str, features))}, d = 4, Bonferroni 99.9% intervals)"),
        summary=(f"E[Z] = {_plain(mean)} ({'=' if unbiased else '≠'} exp(xᵀy)), Var {'=' if variance else '≠'} Lemma 2; "
                 f"exp(xᵀy) = {sm:.4f}: "
                 + "; ".join(f"m = {r['m']}: mean {r['mean']:.4f} ± {r['mean half-width']:.4f}, MSE {r['MSE']:.4f} ± "
                             f"{r['MSE half-width']:.4f} (exact {r['exact MSE']:.4f})" for r in rows)
                 + f"; normalised output − softmax output: {rows[0]['bias']:+.4f} ± {rows[0]['bias half-width']:.4f} at "
                 f"m = {rows[0]['m']}, {rows[-1]['bias']:+.4f} ± {rows[-1]['bias half-width']:.4f} at m = {rows[-1]['m']}"
                 + failed_clause(facts)),
        conditions=("ω_i i.i.d. N(0, I_d) (FAVOR+'s orthogonal features lower the MSE further; not checked here)",
                    "only the kernel estimate is unbiased: the Performer's output divides two estimates, and "
                    "E[ratio] ≠ ratio of expectations — it is biased, consistently (the bias shrinks as m grows)",
                    "the MSE grows like e^{‖x+y‖²}: large queries and keys need many features"),
        details={**facts, "E[Z]": mean, "E[Z²]": second, "exp(x·y)": sm, "softmax output": softmax_out, "rows": rows},
        equations=(("positive feature", sp.Eq(tex(r"\varphi_\omega(x)"), exact_performer.positive_feature(x, omega),
                                              evaluate=False)),
                   ("unbiased", sp.Eq(tex(r"E[\varphi_\omega(x)\varphi_\omega(y)]"), mean, evaluate=False)),
                   ("MSE (Lemma 2, m features)", sp.Eq(tex(r"\mathrm{MSE}_m"), _favor_mse(x, y, sp.Symbol("m")),
                                                       evaluate=False))),
        figures={"performer-unbiased": figure},
    )


def check_linear_attention_rnn(ctx: CheckContext, *, claimed_keys: str = "j ≤ i") -> Evidence:
    """Katharopoulos et al.: causal linear attention = its recurrent form ``y_i = φ_i S_i / φ_i z_i`` exactly.

    Exact (n = 3 quick, 4 full; feature and value width 2; positive symbolic features, symbolic
    values): :func:`attnsym.symbolic.linear_attention.causal_linear_attention` and
    :func:`~attnsym.symbolic.linear_attention.recurrent_linear_attention` against each other and
    against the definition ``Σ_{j ≤ i}(φ_i·ψ_j)v_j / Σ_{j ≤ i} φ_i·ψ_j`` written here
    (``claimed_keys="all"`` sums over every j: false). Numeric: the float64 twins with
    ``φ = elu + 1`` on random q, k, v.
    """
    n, r, dv = (3, 2, 2) if ctx.quick else (4, 2, 2)
    Phi = sp.Matrix(n, r, lambda i, c: sp.Symbol(f"phi_{i + 1}{c + 1}", positive=True))
    Psi = sp.Matrix(n, r, lambda i, c: sp.Symbol(f"psi_{i + 1}{c + 1}", positive=True))
    V = sp.Matrix(n, dv, lambda i, c: sp.Symbol(f"v_{i + 1}{c + 1}", real=True))
    keys = (lambda i: range(i + 1)) if claimed_keys == "j ≤ i" else (lambda i: range(n))
    sim = lambda i, j: (Phi[i, :] * Psi[j, :].T)[0, 0]
    definition = sp.Matrix(n, dv, lambda i, c: sum(sim(i, j) * V[j, c] for j in keys(i)) / sum(sim(i, j) for j in keys(i)))
    parallel = exact_linear.causal_linear_attention(Phi, Psi, V)
    recurrent = exact_linear.recurrent_linear_attention(Phi, Psi, V)
    same = lambda A, B: A.shape == B.shape and all(sp.cancel(a - b) == 0 for a, b in zip(A, B, strict=True))
    parallel_ok, recurrent_ok = same(parallel, definition), same(recurrent, definition)
    rng = ctx.rng("linear-attention-rnn")
    m, d = (64, 8) if ctx.quick else (512, 16)
    Q, K, Vn = (rng.standard_normal((m, d)) for _ in range(3))
    fq, fk = numeric_linear.elu_feature_map(Q), numeric_linear.elu_feature_map(K)
    par = numeric_linear.causal_linear_attention(fq, fk, Vn)
    rec = numeric_linear.recurrent_linear_attention(fq, fk, Vn)
    numeric_gap = float(np.max(np.abs(par - rec)) / np.max(np.abs(par)))
    first = float(np.max(np.abs(par[0] - Vn[0])))  # the first query sees only itself
    # φ = identity (not positive): the algebra is unchanged, but the "weights" are no longer a distribution
    W_id = np.tril(Q @ K.T)
    negative = float(np.mean(W_id[np.tril_indices(m)] < 0))
    smallest_denominator = float(np.min(np.abs(W_id.sum(axis=1))))
    facts = {f"parallel form = definition (n = {n}, exact)": parallel_ok,
             f"recurrent form = definition (n = {n}, exact)": recurrent_ok,
             "float64 forms agree (1e-12, φ = elu + 1)": numeric_gap <= 1e-12, "y_1 = v_1 (float64)": first <= 1e-12}
    ok = all(facts.values())
    shown = 16
    W = np.tril(fq[:shown] @ fk[:shown].T)
    W = W / W.sum(axis=1, keepdims=True)
    par_shown, rec_shown = par[:shown, 0].copy(), rec[:shown, 0].copy()

    def figure():
        return linear_rnn_figure(W, par_shown, rec_shown)

    state = r * dv + r
    return Evidence(
        "linear-attention-rnn", statement("linear-attention-rnn"), _verdict(ok),
        method=(f"symbolic proof (n = {n}, positive symbolic features, symbolic values; both forms against the "
                f"definition) + numeric check (float64, n = {m}, d = {d}, φ = elu + 1)"),
        summary=(f"n = {n}: parallel {'=' if parallel_ok else '≠'} definition, recurrent "
                 f"{'=' if recurrent_ok else '≠'} definition exactly (keys {claimed_keys}); float64 n = {m}: largest "
                 f"relative gap {numeric_gap:.1e}, |y_1 − v_1| = {first:.1e}; with φ = identity {negative:.0%} of the "
                 f"causal similarities are negative (smallest |denominator| {smallest_denominator:.2g}); the state has "
                 f"r(d_v + 1) = {state} numbers at every step (r = d_v = 2)" + failed_clause(facts)),
        conditions=("the identity is algebraic: it holds for any feature map whose denominators do not vanish; a "
                    "positive φ (elu + 1 in the paper) is what makes the weights a distribution and the denominators "
                    "positive (with φ = identity many similarities are negative)",
                    "causal masking: the recurrence reads tokens 1 … i; the non-causal form needs all keys first",
                    "in floating point the two orders of summation differ by rounding only"),
        details={**facts, "numeric gap": numeric_gap, "parallel (exact)": parallel, "state size": state,
                 "negative similarities with φ = identity": negative,
                 "smallest |denominator| with φ = identity": smallest_denominator},
        equations=(("recurrent form", sp.Eq(tex(r"y_i"), tex(r"\varphi_i S_i / (\varphi_i z_i)"), evaluate=False)),
                   ("state update", sp.Eq(tex(r"S_i"), tex(r"S_{i-1} + \psi_i^\top v_i"), evaluate=False))),
        figures={"linear-attention-rnn": figure},
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
        figures={"mup-scaling": partial(mup_figure, r.grid, r.curves, sampled, rho=float(mup.RHO))},
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
