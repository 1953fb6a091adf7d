"""The variants of 2026 as verdicts on :mod:`attnsym.studies.variants`: ``sink-semantics``, ``mla-absorbed``,
``nope-position-blind``.

Each check runs one study, reads its typed fields and compares them with the claim's statement;
a keyword states the false variant (tests/test_claims_false_variants.py) and the mutations of
tests/test_claims_mutations_variants.py break the code the study runs.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ...plots.variants import mla_figure, nope_figure, sink_figure
from ...studies import variants
from .._evidence import CheckContext, Evidence
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = ["CLAIMS", "check_mla_absorbed", "check_nope_position_blind", "check_sink_semantics"]


def check_sink_semantics(ctx: CheckContext, *, claimed_row_sum: str = "1 - pi") -> Evidence:
    """A sink logit in the denominator: the dropped-column softmax, the rescale σ(lse − s), softmax₁, the shift;
    a numeric layer's rows summing to ``1 − π``.

    ``claimed_row_sum="1"`` states the false variant: the rows are renormalised to 1.
    """
    r = variants.sink(seed=ctx.seed, quick=ctx.quick)
    row_sum_fact = (r.rows_gap <= 1e-12 and r.least_mass > 1e-3) if claimed_row_sum == "1 - pi" \
        else float(np.abs(r.weights.sum(-1) - 1.0).max()) <= 1e-12
    facts = {
        "softmax with s in the denominator = softmax over [x, s] with the sink column dropped": r.dropped_column,
        "the output rescale is σ(lse(x) − s)": r.rescale,
        "softmax₁ is the sink with s = 0": r.softmax_one,
        "the shift (s inside or outside the max) cancels": r.shift,
        f"the numeric layer's rows sum to {claimed_row_sum.replace('pi', 'π')}": row_sum_fact,
        "the numeric layer = softmax([S, s]) without its last column": r.reference_gap <= 1e-12,
    }
    return Evidence(
        "sink-semantics", statement("sink-semantics"), verdict(facts),
        method=f"symbolic proof ({r.n} symbolic scores, SymPy simplify) + numeric check (a causal windowed layer with "
               "a sink per head, float64, 1e-12)",
        summary=(f"exact for {r.n} scores; numeric: rows + π − 1 up to {r.rows_gap:.0e}, layer vs the "
                 f"dropped-column reference {r.reference_gap:.0e}, the smallest π {r.least_mass:.3f}"
                 + failed_clause(facts)),
        conditions=("π_i = σ(s − lse(x_i)) is kept as the sink's own mass: attnsym never renormalises the rows",
                    "a fully masked row gives all its mass to the sink (π = 1)"),
        details={"facts": facts},
        figures={"sink-semantics": partial(sink_figure, r)},
    )


def check_mla_absorbed(ctx: CheckContext, *, rope_in_bound: bool = True) -> Evidence:
    """Multi-head latent attention: absorbed = expanded scores; each head's W_QK of rank ≤ d_c + d_rope; one rotary key.

    ``rope_in_bound=False`` states the false variant: the rank is at most ``d_c``.
    """
    r = variants.mla(seed=ctx.seed, quick=ctx.quick)
    bound = r.bound if rope_in_bound else r.d_c
    facts = {
        "absorbed (W_UKᵀ q)·c = expanded q·(W_UK c), exactly (integer weights)": r.absorbed_exact,
        "absorbed = expanded with the rotary part (float64, relative 1e-12)": r.absorbed_gap <= 1e-12,
        f"every head's effective W_QK has rank ≤ {'d_c + d_rope' if rope_in_bound else 'd_c'} = {bound}":
            all(k <= bound for k in r.ranks),
        "the rotary key is one vector for all heads": r.shared_rope_key,
    }
    return Evidence(
        "mla-absorbed", statement("mla-absorbed"), verdict(facts),
        method=f"exact (SymPy integers: scores and ranks, d_model {r.d_model}, {r.heads} heads, d_c {r.d_c}, "
               f"d_nope {r.d_nope}, d_rope {r.d_rope}) + numeric check with RoPE (float64)",
        summary=(f"absorbed = expanded exactly; with RoPE relative gap {r.absorbed_gap:.0e}; ranks {list(r.ranks)} "
                 f"≤ d_c + d_rope = {r.bound} of a {r.d_model} × {r.d_model} W_QK" + failed_clause(facts)),
        conditions=("the rotary part of the key is computed once from the token (shared by all heads) and kept beside "
                    "the latent: a token's cache is d_c + d_rope numbers",
                    "the bound is on W_QK at position 0; a rotation changes no rank"),
        details={"facts": facts, "ranks": r.ranks},
        figures={"mla-absorbed": partial(mla_figure, r)},
    )


def check_nope_position_blind(ctx: CheckContext, *, claimed_queries: str = "last") -> Evidence:
    """Without positions a causal layer's last output ignores the order of the earlier tokens; a bidirectional layer
    is permutation-equivariant; RoPE breaks both.

    ``claimed_queries="all"`` states the false variant: every query of the causal layer is order-blind.
    """
    r = variants.nope(seed=ctx.seed, quick=ctx.quick)
    facts = {
        "exact: the last output of a causal layer (n = 3) is unchanged by swapping the first two tokens":
            r.symbolic_last_invariant,
        "float64: the last output is invariant to every permutation of the earlier tokens": r.causal_last_invariant,
        "float64: a bidirectional layer is permutation-equivariant": r.bidirectional_equivariant,
        "with RoPE the last output changes (the contrast)": not r.rope_last_invariant,
    }
    if claimed_queries == "all":
        facts["every query of the causal layer is order-blind"] = bool(r.shifts[0].max() <= 1e-12)
    return Evidence(
        "nope-position-blind", statement("nope-position-blind"), verdict(facts),
        method=f"symbolic proof (n = 3) + numeric check (n = {r.n}, every permutation of the earlier tokens, float64)",
        summary=(f"causal last output gap {r.causal_gap:.0e}, bidirectional equivariance gap {r.bidirectional_gap:.0e};"
                 f" with RoPE the last output moves by {r.rope_gap:.2g}" + failed_clause(facts)),
        conditions=("only the last query sees every earlier token: an earlier query's output changes when the tokens "
                    "it sees are swapped with ones it does not",),
        details={"facts": facts},
        figures={"nope-position-blind": partial(nope_figure, r)},
    )


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (builtin_claim("sink-semantics", check_sink_semantics),
          builtin_claim("mla-absorbed", check_mla_absorbed),
          builtin_claim("nope-position-blind", check_nope_position_blind))
