"""Claims about positions as used today: ``rope-relative``, ``rope-shift-invariance``,
``rope-long-range-decay``, ``alibi-recency``.

Each registered claim calls a parametrised check with the statement of the claims list; the
tests call the same checks with a deliberately false variant (absolute sinusoids instead of
RoPE, a monotone or a score-level decay, ALiBi cutting far tokens off) and see it fail. The
mathematics lives in :mod:`attnsym.symbolic.rope_proofs`, :mod:`attnsym.symbolic.positions`,
:mod:`attnsym.numeric.positions` and :mod:`attnsym.numeric.position_experiments`; the figures
in :mod:`attnsym.plots.rope_alibi` call the same experiments.
"""

from __future__ import annotations

from functools import partial
from typing import cast

import numpy as np
import sympy as sp

from ... import plots
from ..._checks import one_of
from ...errors import SpecError
from ...numeric.paper_formulas import alibi_paper_slopes
from ...plots.rope_alibi import decay_result_figure
from ...studies import alibi as alibi_study
from ...studies import positions as position_study
from ...testing import TOLERANCES
from .._evidence import CheckContext, Evidence, tex
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = ["check_alibi_recency", "check_rope_long_range_decay", "check_rope_relative", "check_rope_shift_invariance"]

_TOL = TOLERANCES["float64"]
SEE_ALSO_SHIFT = ("permutation-equivariance: without positions attention is permutation-equivariant; RoPE keeps only "
                  "the shift (translation) part of that symmetry",
                  "no-locality-bias: RoPE and ALiBi make the layer shift-equivariant like a convolution, yet every "
                  "output still depends on every token (no window), so the locality bias stays absent")


# ----------------------------------------------------------------------------- rope-relative
RELATIVE_STATEMENT = statement("rope-relative")


def check_rope_relative(ctx: CheckContext, *, positions: str = "rope") -> Evidence:
    """Check that the score of a query at ``m`` and a key at ``n`` depends on ``m − n`` only.

    A verdict on :func:`attnsym.studies.positions.relative_study`. ``positions="rope"`` (the claim):
    exact proofs for symbolic ``m, n`` in both pairings and with partial rotary, the same tokens moved
    by a common offset keep their scores, and the scores equal ``g(q, k, n − m)``.
    ``positions="sinusoidal"`` (a false variant): the same question for absolute sinusoids added to ``X``.
    """
    if positions not in ("rope", "sinusoidal"):
        raise SpecError(f"positions must be 'rope' or 'sinusoidal' (got {positions!r})")
    r = position_study.relative_study(partial(ctx.rng, "rope-relative"), quick=ctx.quick, positions=positions)
    symbolic_ok = all(r.proofs.values())
    tol = _TOL.atol + 1e3 * np.finfo(float).eps * 1000 * r.largest_score  # angles up to ~1000 rad
    facts = {f"{positions} scores depend on m − n only (symbolic)": symbolic_ok,
             "float64 scores unchanged by a shift of every position": all(v <= tol for v in r.shifts.values())}
    if r.g_error is not None:  # RoPE: every score equals g(q_m, k_n, n − m)
        facts["every float64 score = g(q_m, k_n, n − m)"] = bool(r.g_error <= tol)
    equation = (("RoPE score of q at m and k at n (d_k = 2)", sp.Eq(r.main.lhs, r.main.rhs, evaluate=False))
                if positions == "rope" else
                ("score at positions t, t + 1 minus the score at 0, 1 (sinusoids, n = 2, d_model = 2)",
                 sp.Eq(tex(r"s_{12}(t) - s_{12}(0)"), r.main.residual, evaluate=False)))
    return Evidence(
        "rope-relative", RELATIVE_STATEMENT,
        verdict(facts),
        method=f"symbolic proof (symbolic m, n) + numeric check (float64, tolerance {tol:.1e})",
        summary=(f"{positions}: scores depend on m − n only: {'proved' if symbolic_ok else 'disproved'} "
                 f"symbolically; moving the tokens by t = 1, 17, 1000 changes scores by at most "
                 f"{max(r.shifts.values()):.1e}" + failed_clause(facts)),
        conditions=("the positions enter through RoPE's rotations only (nothing added to X); with absolute sinusoids "
                    "added to X the scores depend on m and n separately",
                    "g also depends on the queries and keys themselves; the claim is about the position dependence"),
        details={"proofs": [{"spec": spec, "proved": ok} for spec, ok in r.proofs.items()],
                 "max |S(t) − S(0)| by offset t": r.shifts, "max |S − g(q, k, n − m)|": r.g_error, "tokens": r.n,
                 "d_model": r.d},
        equations=(equation,),
        figures={"frequencies": plots.rope_frequencies_figure},
    )


# ----------------------------------------------------------------------------- rope-shift-invariance
SHIFT_STATEMENT = statement("rope-shift-invariance")


def check_rope_shift_invariance(ctx: CheckContext, *, positions: str = "rope") -> Evidence:
    """Check that adding one offset to every position leaves scores, weights and routing graphs unchanged.

    A verdict on :func:`attnsym.studies.positions.shift_study`: exact for a symbolic offset ``t``,
    then on float64 causal weights and their routing graphs, compared edge by edge.
    ``positions="sinusoidal"`` is the false variant.
    """
    positions = one_of("positions", positions, ("rope", "alibi", "sinusoidal", None))
    r = position_study.shift_study(partial(ctx.rng, "rope-shift-invariance"), quick=ctx.quick, positions=positions)
    proof = r.proof
    facts = {f"{positions} scores at p + t = at p (symbolic t)": proof.holds,
             "float64 causal weights unchanged by the offset": r.max_change <= 1e-9,
             "routing graphs identical under the offset": r.graphs_same}
    return Evidence(
        "rope-shift-invariance", SHIFT_STATEMENT,
        verdict(facts, passing="holds-under-conditions"),
        method="symbolic proof (symbolic offset t) + numeric check (float64) + graph computation (routing graphs)",
        summary=(f"{positions} positions: scores at p + t equal scores at p for symbolic t: "
                 f"{'proved' if proof.holds else 'disproved'}; causal weights move by at most {r.max_change:.1e} "
                 f"for t = 1, 5, {position_study.FAR_OFFSET}; routing graphs {'identical' if r.graphs_same else 'differ'}; "
                 f"permuting tokens changes the routing by {r.permutation_gap:.2f} (no permutation symmetry)"
                 + failed_clause(facts)),
        conditions=("no absolute positions added to X: with sinusoids added the routing changes with the offset",
                    "the mask stays with the token indices (a causal window moved with the tokens)",
                    "equivariance under shifts of the whole sequence, not under permutations",
                    *SEE_ALSO_SHIFT),
        details={"symbolic (n = 3, symbolic offset t)": proof.holds, "other schemes (symbolic)": r.others,
                 "max |A(t) − A(0)|": r.max_change, "routing graphs identical": r.graphs_same,
                 "max |A(PX) − P A(X) Pᵀ|": r.permutation_gap,
                 "see also": ["permutation-equivariance", "no-locality-bias"]},
        equations=((("a score at the shifted positions t, t + 1 (it reduces to the score at 0, 1)",
                     sp.Eq(tex(r"s_{1,2}(t)"), cast(sp.Matrix, proof.lhs)[0, 1], evaluate=False))
                    if proof.holds else ("a score that changes with t: s(t) − s(0)",
                                         sp.Eq(tex("s(t) - s(0)"), proof.residual, evaluate=False))),),
        figures={"shift": partial(plots.shift_figure, r.panels)},
    )


# ----------------------------------------------------------------------------- rope-long-range-decay
DECAY_STATEMENT = statement("rope-long-range-decay")


def check_rope_long_range_decay(ctx: CheckContext, *, subject: str = "bound") -> Evidence:
    """Check RoFormer's long-range decay: the relative upper bound falls as ``|m − n|`` grows.

    A verdict on :func:`attnsym.studies.positions.decay_study`. ``subject="bound"`` (the claim): the
    bound at 0 is ``(d/2 + 1)/2`` exactly, far distances are a fraction of it, and the Abel-summation
    inequality holds for random ``q, k`` at every distance. The false variants: ``"monotone"`` (the
    bound never increases) and ``"random-scores"`` (the scores of independent random ``q, k`` decay).
    """
    if subject not in ("bound", "monotone", "random-scores"):
        raise SpecError(f"subject must be 'bound', 'monotone' or 'random-scores' (got {subject!r})")
    r = position_study.decay_study(partial(ctx.rng, "rope-long-range-decay"), quick=ctx.quick)
    D, bound, far, increases = position_study.DECAY_D, r.bound, r.far_fraction, r.increases
    at_zero_exact = bool(abs(bound[0] - (D / 2 + 1) / 2) <= 1e-12)
    within = r.abel_ratio <= 1 + 1e-12
    if subject == "random-scores":  # their spread far away would have to be well below the spread nearby
        facts = {"random scores spread less far away than nearby": r.far_spread < 0.5 * r.near_spread}
    else:
        facts = {"bound(0) = (d/2 + 1)/2": at_zero_exact, "far bound < 0.3 × bound(0)": far < 0.3,
                 "|score| ≤ the Abel bound": within}
        if subject == "monotone":
            facts["the bound never increases"] = increases == 0
    return Evidence(
        "rope-long-range-decay", DECAY_STATEMENT,
        verdict(facts, passing="holds-under-conditions" if subject == "bound" else "holds"),
        method=f"numeric computation of the bound (float64) + Monte Carlo ({r.samples} random q, k)",
        summary=(f"bound(0) = {bound[0]:g} {'=' if at_zero_exact else '≠'} (d/2 + 1)/2 = {(D / 2 + 1) / 2:g}; "
                 f"mean bound over |m − n| ∈ [192, 256] = {far:.2f} × bound(0); |score| "
                 f"{'≤' if within else 'exceeds the'} Abel bound {'for every sample' if within else 'for some samples'} "
                 f"(max ratio {r.abel_ratio:.2f}); the bound rises again at {increases} of 256 steps; std of random "
                 f"scores {r.near_spread:.1f} near vs {r.far_spread:.1f} far" + failed_clause(facts)),
        conditions=("only an upper bound: for independent random q, k the scores do not decay (their spread is the "
                    f"same near and far, {r.near_spread:.1f} vs {r.far_spread:.1f}); the mean of q·R(Δθ)q (key equal "
                    f"to the query) decays, to {r.same_key[-1]:.2f} of its value at 0",
                    f"the decay is not monotone: the bound has ripples (it increases at {increases} of 256 steps)",
                    "the bound covers the rotated coordinates; with rotary_pct < 1 the pass-through coordinates add "
                    "a distance-independent term",
                    f"θ_i = {r.spec.position_base}^(−2i/d) with d = {D}, as in the paper; other bases move the curve"),
        details={"bound at 0, 10, 100, 256": [float(bound[i]) for i in (0, 10, 100, 256)],
                 "far/zero ratio": far, "increases": increases, "max |score| / Abel bound": r.abel_ratio,
                 "std of random scores (near, far)": [r.near_spread, r.far_spread],
                 "mean q·R q / d at 0, 100, 256": [float(r.same_key[i]) for i in (0, 100, 256)]},
        equations=(("RoFormer (§3.4.3): Abel summation",
                    sp.Le(tex(r"\left|\sum_i h_i e^{\mathrm{i}(m-n)\theta_i}\right|"),
                          tex(r"\max_i |h_{i+1}-h_i| \sum_{j=1}^{d/2} |S_j|,\quad S_j = \sum_{i<j} "
                              r"e^{\mathrm{i}(m-n)\theta_i}"), evaluate=False)),),
        figures={"decay": partial(decay_result_figure, r)},  # the study the verdict judged
    )


# ----------------------------------------------------------------------------- alibi-recency
ALIBI_STATEMENT = statement("alibi-recency")


def check_alibi_recency(ctx: CheckContext, *, cuts_off_far_tokens: bool = False) -> Evidence:
    """Check ALiBi's recency bias (:func:`attnsym.studies.alibi.study`): the bias, its effect on entropy and on paths.

    The bias is ``−m_h (i − j)`` exactly; zero scores give weights in the ratio ``e^{m_h}``
    per step; random scores lose entropy, more for steeper heads; the routing graph still has
    every causal edge (path length 1) with weights decaying in distance.
    ``cuts_off_far_tokens=True`` is the false variant "ALiBi makes far tokens unreachable".
    """
    r = alibi_study.study(partial(ctx.rng, "alibi-recency"), quick=ctx.quick)
    drop, order, heads = r.drop, r.order, r.sizes.heads
    if cuts_off_far_tokens:  # the false variant: far tokens would have to be cut off
        facts = {"far tokens cut off (a path longer than 1, or a causal edge lost)": r.reach > 1 or not r.every_edge}
    else:
        facts = {"slopes = the ALiBi reference code's": r.slope_gap <= 1e-9 and r.used_gap <= 1e-9,
                 "bias −m_h (i − j) (exact)": r.bias_exact, "weights in the ratio e^(m_h) per step (exact)": r.ratio_exact,
                 "steeper heads have lower entropy": bool(drop[order[0]] > 0.5 and np.all(drop > -0.02)
                                                          and np.all(np.diff(drop[order]) <= 0.02)),
                 "every key one step away": r.reach == 1, "every causal edge kept": r.every_edge,
                 "weight decays with distance": bool(np.all(r.profile[:, 0] > r.profile[:, r.sizes.n // 2]))}
    return Evidence(
        "alibi-recency", ALIBI_STATEMENT,
        verdict(facts, passing="holds" if cuts_off_far_tokens else "holds-under-conditions"),
        method="symbolic proof (exact bias and weight ratios) + numeric check (float64) + graph computation",
        summary=(f"slopes against the ALiBi reference code for H = 1 … {r.sizes.head_counts[-1]}: largest |log₂ gap| "
                 f"{r.slope_gap:.1e}, in the layer's weights (H = {heads}) {r.used_gap:.1e}; {heads} heads, slopes "
                 f"2^-{min(r.exponents)} … 2^-{max(r.exponents)}: bias −m_h (i − j) "
                 f"{'exact' if r.bias_exact else 'NOT exact'}; zero scores give weights in the ratio e^(m_h) per step"
                 f"{'' if r.ratio_exact else ' (NOT)'}; entropy drop {drop[order[0]]:.2f} nats for the steepest head, "
                 f"{drop[order[-1]]:.3f} for the shallowest (steeper head, lower entropy); longest shortest path "
                 f"{r.reach} (every causal edge kept, smallest weight {r.far_weight:.1e})" + failed_clause(facts)),
        conditions=ALIBI_CONDITIONS,
        details=_alibi_details(r),
        equations=(("bias of head h", sp.Eq(tex(r"B^{(h)}_{ij}"), tex(r"-m_h\,(i - j),\ j \le i"), evaluate=False)),
                   ("head 1, n = 4 (exact)", sp.Eq(tex("B^{(1)}"), r.bias, evaluate=False)),
                   ("zero scores: weights of the last query", sp.Eq(tex(r"A^{(1)}_{4,\cdot}"), r.last_row,
                                                                   evaluate=False))),
        figures={"bias": partial(plots.alibi_bias_figure, heads=heads, n=r.sizes.n, weights=r.profile)},
    )


ALIBI_CONDITIONS = (
    "causal layer (the paper's setting); ALiBi adds nothing to X and leaves values untouched",
    "global-path-length: every key is still one step from every later query, but the edge "
    "weights decay with distance, so far keys are reached weakly rather than not at all",
    "the entropy drop is measured for random queries and keys (scores of spread ~1); large learned "
    "scores can override the bias, and the shallowest heads (m = 2^-8 over a short sequence) barely "
    "change the weights")


def _alibi_details(r: alibi_study.AlibiResult) -> dict:
    n = r.sizes.n
    return {"slopes": [float(s) for s in r.slopes], "slopes of the reference code": alibi_paper_slopes(r.sizes.heads),
            "largest |log2 slope − log2 reference| (H = 1 … 16 or 64)": r.slope_gap,
            "largest |log2 slope in the weights − log2 reference|": r.used_gap,
            "mean row entropy with ALiBi (per head)": [float(h) for h in r.entropy],
            "mean row entropy without (per head)": [float(h) for h in r.entropy_plain],
            "entropy drop (per head)": [float(x) for x in r.drop], "longest shortest path": r.reach,
            "mean weight at distance 0 and n/2 (per head)": [[float(r.profile[h, 0]), float(r.profile[h, n // 2])]
                                                             for h in range(r.sizes.heads)],
            "see also": ["global-path-length"]}


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (
    builtin_claim("rope-relative", check_rope_relative),
    builtin_claim("rope-shift-invariance", check_rope_shift_invariance),
    builtin_claim("rope-long-range-decay", check_rope_long_range_decay),
    builtin_claim("alibi-recency", check_alibi_recency),
)
