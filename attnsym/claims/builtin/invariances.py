"""Claims about gradients that vanish exactly: ``key-bias-invariance``, ``rank-one-input``.

Each registered claim calls a parametrised check (``check_*``) with the statement of the shipped
claims list; the tests call the same checks with deliberately wrong statements and see them fail.
The proofs live in :mod:`attnsym.symbolic.invariances` (exact derivatives for the spec family),
the numeric side is :func:`attnsym.numeric.attention_vjp` and central differences of
:func:`attnsym.numeric.attention`.
"""

from __future__ import annotations

from functools import partial

import sympy as sp

from ... import plots
from ...errors import SpecError
from ...studies import invariances as invariance_study
from .._evidence import CheckContext, Evidence, tex
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = ["check_key_bias_invariance", "check_rank_one_input"]


# ----------------------------------------------------------------------------- key-bias-invariance

def check_key_bias_invariance(ctx: CheckContext, *, claimed_zero: str = "b_K") -> Evidence:
    """``∂S/∂b_K`` is constant along every (attended part of a) row for each spec of the family, so ``∂A/∂b_K = 0``.

    A verdict on :func:`attnsym.studies.invariances.key_bias_study`. ``claimed_zero`` names the bias
    whose gradient is asserted to vanish (``"b_Q"`` is false): exactly for the spec family, and in
    the numeric loss slices, backward and central differences at a random point.
    """
    if claimed_zero not in ("b_K", "b_Q"):
        raise SpecError(f"claimed_zero must be 'b_K' or 'b_Q' (got {claimed_zero!r})")
    r = invariance_study.key_bias_study(partial(ctx.rng, "key-bias-invariance"), quick=ctx.quick)
    s = r.slices
    symbolic_zero = {w: all(row.row_constant[w] for row in r.family) for w in invariance_study.BIASES}
    zero_num = {w: s.backward[w] <= 1e-12 and s.central[w] <= 1e-8 and r.loss_change(w) <= 1e-10
                for w in invariance_study.BIASES}
    other = "b_Q" if claimed_zero == "b_K" else "b_K"
    facts = {f"∂L/∂{claimed_zero} = 0 (exact)": symbolic_zero[claimed_zero], f"∂L/∂{claimed_zero} = 0 (numeric)":
             zero_num[claimed_zero], f"∂L/∂{other} ≠ 0 (exact)": not symbolic_zero[other],
             f"∂L/∂{other} ≠ 0 (numeric)": not zero_num[other]}
    numeric = {"spec": r.numeric_spec, **{f"max |∂L/∂{w}| ({how})": v[w] for how, v in
                                          (("backward", s.backward), ("central differences", s.central)) for w in ("b_K", "b_Q")},
               **{f"max |L({w} + t u) − L({w})|, |t| ≤ {s.offsets.max():g}": r.loss_change(w) for w in ("b_K", "b_Q")}}
    return Evidence(
        "key-bias-invariance", statement("key-bias-invariance"), verdict(facts),
        method=("symbolic proof (∂S/∂b row-constant for the spec family) + numeric loss slices, backward and central "
                f"differences (h = {s.step:g})"),
        summary=(f"∂S/∂b_K constant along every row in {sum(row.row_constant['b_K'] for row in r.family)}/{len(r.family)} "
                 f"specs (so ∂A/∂b_K = J·1 = 0); ∂S/∂b_Q is not; numeric |∂L/∂b_K| = {s.backward['b_K']:.1e}, "
                 f"|∂L/∂b_Q| = {s.backward['b_Q']:.2f}" + failed_clause(facts)),
        conditions=KEY_BIAS_CONDITIONS,
        details={"family": [{"spec": row.spec, **{f"∂S/∂{w} row-constant": ok for w, ok in row.row_constant.items()}}
                            for row in r.family], "numeric": numeric},
        figures={"bias-slices": partial(plots.bias_slices_figure, s)},
        equations=(("a key bias shifts each score row by a constant",
                    sp.Eq(tex(r"(q_i)(k_j + b_K)^\top"), tex(r"q_i k_j^\top + q_i b_K^\top"), evaluate=False)),
                   ("softmax ignores a row constant",
                    sp.Eq(tex(r"\partial A_{i\cdot}/\partial b_K"),
                          tex(r"J_i \,(\mathbf{1}\, \partial(q_i b_K^\top)/\partial b_K) = 0"), evaluate=False))),
    )


KEY_BIAS_CONDITIONS = (
    "a key bias adds q_i·b_K to every score of row i: softmax is shift invariant, so A, Y and any loss are "
    "free of b_K (masked keys keep −∞, so masks do not matter); the value bias b_V is not affected",
    "positions added to X (sinusoidal) keep it; a position-dependent transform of the keys after the bias "
    "(rotary embeddings rotate b_K by the key's position) breaks it",
    "b_K is redundant, not harmful: frameworks that keep it (nn.MultiheadAttention's in_proj_bias) waste "
    "d parameters per layer")


# ----------------------------------------------------------------------------- rank-one-input

def check_rank_one_input(ctx: CheckContext, *, claimed_zero: tuple[str, ...] = ("W_Q", "W_K")) -> Evidence:
    """Exact ``∂⟨G, Y⟩/∂W`` at ``X = 1 xᵀ`` (symbolic weights, G, x); numeric backward on equal vs distinct tokens.

    A verdict on :func:`attnsym.studies.invariances.rank_one_study`. ``claimed_zero`` names the
    weights whose gradient is asserted to vanish (adding ``"W_V"`` is false).
    """
    r = invariance_study.rank_one_study(partial(ctx.rng, "rank-one-input"), quick=ctx.quick)
    names = invariance_study.WEIGHTS
    exact_zero = {k: all(row.zero.get(k, False) for row in r.exact) for k in names}
    numeric = {label: {k: r.largest(k, distinct=distinct) for k in names}
               for label, distinct in (("equal tokens", False), ("distinct tokens", True))}
    facts = {**{f"∂L/∂{k} = 0 (exact and numeric)": exact_zero[k] and numeric["equal tokens"][k] <= 1e-12
                for k in claimed_zero},
             **{f"∂L/∂{k} ≠ 0 (exact)": not exact_zero[k] for k in names if k not in claimed_zero},
             "distinct tokens give ∂L/∂W_Q, ∂L/∂W_K ≠ 0": all(numeric["distinct tokens"][k] > 1e-6 for k in ("W_Q", "W_K"))}
    return Evidence(
        "rank-one-input", statement("rank-one-input"), verdict(facts),
        method="symbolic proof (exact gradients, symbolic W, G, x) + numeric backward (attention_vjp)",
        summary=(f"X = 1xᵀ: ∂L/∂W_Q = ∂L/∂W_K = 0 exactly in {len(r.exact)} specs, ∂L/∂W_V ≠ 0; numeric max |∂L/∂W_Q| "
                 f"{numeric['equal tokens']['W_Q']:.1e} (equal tokens) vs {numeric['distinct tokens']['W_Q']:.2f} (distinct)"
                 + failed_clause(facts)),
        conditions=(*RANK_ONE_CONDITIONS,
                    f"near equal tokens the query/key gradients grow like ε^{r.growth['W_Q']:.1f} (X = 1xᵀ + εE): a "
                    "nearly collapsed input gives a quadratically small signal, not only an exactly zero one at ε = 0"),
        details={"exact": [{"spec": row.spec, **{f"∂L/∂{k} = 0": z for k, z in row.zero.items()}} for row in r.exact],
                 "numeric spec": r.numeric_spec, "numeric (max |gradient|)": numeric,
                 "near equal tokens max |∂L/∂W| ∝ ε^slope (1e-4 ≤ ε ≤ 1e-2)": r.growth},
        figures={"equal-tokens": partial(plots.equal_tokens_figure, r.sweep)},
        equations=(("equal tokens give equal scores and uniform routing",
                    sp.Eq(tex(r"X = \mathbf{1} x^\top \Rightarrow A"), tex(r"\tfrac{1}{n}\mathbf{1}\mathbf{1}^\top"),
                          evaluate=False)),
                   ("so the score gradient vanishes",
                    sp.Eq(tex(r"dS = A \odot (dA - \operatorname{rowsum}(dA \odot A))"), 0, evaluate=False))),
    )


RANK_ONE_CONDITIONS = (
    "every token the same vector and no positions: sinusoidal or rotary positions make the tokens distinct "
    "again, and the gradient returns",
    "holds with a causal mask (each row is uniform over its prefix) and with biases",
    "the gradient of W_V (and W_O) does not vanish: the layer still learns what to output, not where to look; "
    "this is the vanishing query/key gradient at rank collapse (see rank-collapse)")


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (
    builtin_claim("key-bias-invariance", check_key_bias_invariance),
    builtin_claim("rank-one-input", check_rank_one_input),
)
