"""Claims about gradients that vanish exactly: ``key-bias-invariance``, ``rank-one-input``.

Each registered claim calls a parametrised check (``check_*``) with the statement of the shipped
claims list; the tests call the same checks with deliberately wrong statements and see them fail.
The proofs live in :mod:`attnsym.symbolic.invariances` (exact derivatives for the spec family),
the numeric side is :func:`attnsym.numeric.attention_vjp` and central differences of
:func:`attnsym.numeric.attention`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from ... import plots
from ...errors import SpecError
from ...numeric.invariances import bias_loss_slices, gradients_near_equal_tokens
from ...spec import AttentionSpec
from ...symbolic.invariances import bias_score_derivatives, equal_token_gradients, rows_constant
from .._evidence import CheckContext, Evidence, tex
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = ["check_key_bias_invariance", "check_rank_one_input"]


# ----------------------------------------------------------------------------- key-bias-invariance

def check_key_bias_invariance(ctx: CheckContext, *, claimed_zero: str = "b_K") -> Evidence:
    """``∂S/∂b_K`` is constant along every (attended part of a) row for each spec of the family, so ``∂A/∂b_K = 0``.

    ``claimed_zero`` names the bias whose gradient is asserted to vanish (``"b_Q"`` is false).
    The family: heads 1 and 2, no mask and causal, 1/√d_k and no scaling, with and without
    sinusoidal positions. Numeric: finite differences of the numeric forward pass and the
    numeric backward (``attention_vjp``) at random points.
    """
    if claimed_zero not in ("b_K", "b_Q"):
        raise SpecError(f"claimed_zero must be 'b_K' or 'b_Q' (got {claimed_zero!r})")
    family = [AttentionSpec(n=3, d_model=2, heads=1, bias=True), AttentionSpec(n=3, d_model=2, heads=1, bias=True, causal=True)]
    if not ctx.quick:
        family += [AttentionSpec(n=3, d_model=2, heads=2, bias=True), AttentionSpec(n=3, d_model=2, bias=True, scale="none"),
                   AttentionSpec(n=3, d_model=2, bias=True, positions="sinusoidal")]
    table = []
    for spec in family:
        allowed = [[(not spec.causal) or j <= i for j in range(spec.n)] for i in range(spec.n)]
        row: dict[str, Any] = {"spec": spec.describe()}
        for which in ("b_K", "b_Q"):
            derivs = bias_score_derivatives(spec, which)
            row[f"∂S/∂{which} row-constant"] = all(rows_constant(D, allowed) for head in derivs for D in head)
        table.append(row)
    symbolic_zero = {w: all(r[f"∂S/∂{w} row-constant"] for r in table) for w in ("b_K", "b_Q")}
    # numeric: the loss along a line through each bias, the backward pass and central differences (multi-head,
    # random point): the one experiment the figure draws too
    num_spec = AttentionSpec(n=6, d_model=4, heads=2, bias=True)
    slices = bias_loss_slices(num_spec, int(ctx.rng("key-bias-invariance").integers(2**32)))
    flat = {w: float(np.max(np.abs(slices.loss_change[w]))) for w in ("b_K", "b_Q")}
    numeric = {"spec": num_spec.describe(),
               "max |∂L/∂b_K| (backward)": slices.backward["b_K"], "max |∂L/∂b_Q| (backward)": slices.backward["b_Q"],
               "max |∂L/∂b_K| (central differences)": slices.central["b_K"],
               "max |∂L/∂b_Q| (central differences)": slices.central["b_Q"],
               f"max |L(b_K + t u) − L(b_K)|, |t| ≤ {slices.offsets.max():g}": flat["b_K"],
               f"max |L(b_Q + t u) − L(b_Q)|, |t| ≤ {slices.offsets.max():g}": flat["b_Q"]}
    zero_num = {w: slices.backward[w] <= 1e-12 and slices.central[w] <= 1e-8 and flat[w] <= 1e-10 for w in ("b_K", "b_Q")}
    other = "b_Q" if claimed_zero == "b_K" else "b_K"
    facts = {f"∂L/∂{claimed_zero} = 0 (exact)": symbolic_zero[claimed_zero], f"∂L/∂{claimed_zero} = 0 (numeric)":
             zero_num[claimed_zero], f"∂L/∂{other} ≠ 0 (exact)": not symbolic_zero[other],
             f"∂L/∂{other} ≠ 0 (numeric)": not zero_num[other]}
    return Evidence(
        "key-bias-invariance", statement("key-bias-invariance"), verdict(facts),
        method=("symbolic proof (∂S/∂b row-constant for the spec family) + numeric loss slices, backward and central "
                f"differences (h = {slices.step:g})"),
        summary=(f"∂S/∂b_K constant along every row in {sum(r['∂S/∂b_K row-constant'] for r in table)}/{len(table)} specs "
                 f"(so ∂A/∂b_K = J·1 = 0); ∂S/∂b_Q is not; numeric |∂L/∂b_K| = {numeric['max |∂L/∂b_K| (backward)']:.1e}, "
                 f"|∂L/∂b_Q| = {numeric['max |∂L/∂b_Q| (backward)']:.2f}" + failed_clause(facts)),
        conditions=("a key bias adds q_i·b_K to every score of row i: softmax is shift invariant, so A, Y and any loss are "
                    "free of b_K (masked keys keep −∞, so masks do not matter); the value bias b_V is not affected",
                    "positions added to X (sinusoidal) keep it; a position-dependent transform of the keys after the bias "
                    "(rotary embeddings rotate b_K by the key's position) breaks it",
                    "b_K is redundant, not harmful: frameworks that keep it (nn.MultiheadAttention's in_proj_bias) waste "
                    "d parameters per layer"),
        details={"family": table, "numeric": numeric},
        figures={"bias-slices": lambda: plots.bias_slices_figure(slices)},
        equations=(("a key bias shifts each score row by a constant",
                    sp.Eq(tex(r"(q_i)(k_j + b_K)^\top"), tex(r"q_i k_j^\top + q_i b_K^\top"), evaluate=False)),
                   ("softmax ignores a row constant",
                    sp.Eq(tex(r"\partial A_{i\cdot}/\partial b_K"),
                          tex(r"J_i \,(\mathbf{1}\, \partial(q_i b_K^\top)/\partial b_K) = 0"), evaluate=False))),
    )


# ----------------------------------------------------------------------------- rank-one-input

def check_rank_one_input(ctx: CheckContext, *, claimed_zero: tuple[str, ...] = ("W_Q", "W_K")) -> Evidence:
    """Exact ``∂⟨G, Y⟩/∂W`` at ``X = 1 xᵀ`` (symbolic weights, G, x); numeric backward on equal vs distinct tokens.

    ``claimed_zero`` names the weights whose gradient is asserted to vanish (adding ``"W_V"`` is false).
    """
    specs = [AttentionSpec(n=3, d_model=2), AttentionSpec(n=3, d_model=2, heads=2, causal=True)]
    if not ctx.quick:
        specs.append(AttentionSpec(n=3, d_model=2, bias=True))
    table = []
    for spec in specs:
        grads = equal_token_gradients(spec)
        table.append({"spec": spec.describe(), **{f"∂L/∂{k} = 0": all(e == 0 for e in g) for k, g in grads.items()}})
    # numeric: the weight gradients at X = 1xᵀ + εE from ε = 0 (equal tokens) to ε = 1 (distinct tokens): the one
    # experiment the figure draws too
    num_spec = AttentionSpec(n=8, d_model=4, heads=2)
    sweep = gradients_near_equal_tokens(num_spec, int(ctx.rng("rank-one-input").integers(2**32)))
    at = {"equal tokens": 0, "distinct tokens": len(sweep.epsilons) - 1}  # ε = 0 and ε = 1
    numeric = {label: {k: float(sweep.max_gradient[k][i]) for k in ("W_Q", "W_K", "W_V")} for label, i in at.items()}
    small = (sweep.epsilons > 0) & (sweep.epsilons <= 1e-2)
    growth = {k: float(np.polyfit(np.log(sweep.epsilons[small]), np.log(sweep.max_gradient[k][small]), 1)[0])
              for k in ("W_Q", "W_K")}
    names = ("W_Q", "W_K", "W_V")
    exact_zero = {k: all(r.get(f"∂L/∂{k} = 0", False) for r in table) for k in names}
    numeric_zero = {k: numeric["equal tokens"][k] <= 1e-12 for k in names}
    distinct_nonzero = all(numeric["distinct tokens"][k] > 1e-6 for k in ("W_Q", "W_K"))
    facts = {**{f"∂L/∂{k} = 0 (exact and numeric)": exact_zero[k] and numeric_zero[k] for k in claimed_zero},
             **{f"∂L/∂{k} ≠ 0 (exact)": not exact_zero[k] for k in names if k not in claimed_zero},
             "distinct tokens give ∂L/∂W_Q, ∂L/∂W_K ≠ 0": distinct_nonzero}
    return Evidence(
        "rank-one-input", statement("rank-one-input"), verdict(facts),
        method="symbolic proof (exact gradients, symbolic W, G, x) + numeric backward (attention_vjp)",
        summary=(f"X = 1xᵀ: ∂L/∂W_Q = ∂L/∂W_K = 0 exactly in {len(table)} specs, ∂L/∂W_V ≠ 0; numeric max |∂L/∂W_Q| "
                 f"{numeric['equal tokens']['W_Q']:.1e} (equal tokens) vs {numeric['distinct tokens']['W_Q']:.2f} (distinct)"
                 + failed_clause(facts)),
        conditions=("every token the same vector and no positions: sinusoidal or rotary positions make the tokens distinct "
                    "again, and the gradient returns",
                    "holds with a causal mask (each row is uniform over its prefix) and with biases",
                    "the gradient of W_V (and W_O) does not vanish: the layer still learns what to output, not where to look; "
                    "this is the vanishing query/key gradient at rank collapse (see rank-collapse)",
                    f"near equal tokens the query/key gradients grow like ε^{growth['W_Q']:.1f} (X = 1xᵀ + εE): a "
                    "nearly collapsed input gives a quadratically small signal, not only an exactly zero one at ε = 0"),
        details={"exact": table, "numeric spec": num_spec.describe(), "numeric (max |gradient|)": numeric,
                 "near equal tokens max |∂L/∂W| ∝ ε^slope (1e-4 ≤ ε ≤ 1e-2)": growth},
        figures={"equal-tokens": lambda: plots.equal_tokens_figure(sweep)},
        equations=(("equal tokens give equal scores and uniform routing",
                    sp.Eq(tex(r"X = \mathbf{1} x^\top \Rightarrow A"), tex(r"\tfrac{1}{n}\mathbf{1}\mathbf{1}^\top"),
                          evaluate=False)),
                   ("so the score gradient vanishes",
                    sp.Eq(tex(r"dS = A \odot (dA - \operatorname{rowsum}(dA \odot A))"), 0, evaluate=False))),
    )


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (
    builtin_claim("key-bias-invariance", check_key_bias_invariance),
    builtin_claim("rank-one-input", check_rank_one_input),
)
