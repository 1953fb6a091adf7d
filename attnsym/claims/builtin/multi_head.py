"""The claim that heads attend to different relations at the same parameter count: ``multi-head``.

The registered claim calls the parametrised check :func:`check_multi_head` with the statement of
the shipped claims list; the tests call it with deliberately wrong variants (full-width heads, a
wrong scale, a permuted concatenation) and see it fail. The forward pass is
:func:`attnsym.numeric.attention` and :func:`attnsym.symbolic.attention`; the independent
reference, when PyTorch is installed, is ``torch.nn.MultiheadAttention``
(:mod:`attnsym.references`).
"""

from __future__ import annotations

import itertools

import numpy as np
import sympy as sp

from ... import plots
from ..._checks import one_of
from ...graphs import routing_distance
from ...numeric import attention
from ...numeric.paper_formulas import multihead_attention_formula
from ...references import torch_installed, torch_multihead_attention, torch_multihead_parameter_count, torch_version
from ...spec import AttentionSpec
from ...symbolic.matrices import attention as sym_attention
from .._compare import TOL64, close, max_abs, random_weights
from .._evidence import CheckContext, Evidence
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = ["check_multi_head"]


def _parameter_equation():
    d, h = sp.symbols("d h", positive=True, integer=True)
    width = sp.Mul(h, sp.UnevaluatedExpr(d / h), evaluate=False)  # h heads of width d/h
    qkv = sp.Mul(3, d, width, evaluate=False)  # W_Q, W_K, W_V: d × (h·d/h) each
    out = sp.Mul(width, d, evaluate=False)  # W_O: (h·d/h) × d
    return sp.Eq(sp.Add(qkv, out, evaluate=False), 4 * d**2, evaluate=False)


# ----------------------------------------------------------------------------- multi-head

MULTI_STATEMENT = statement("multi-head")


def check_multi_head(ctx: CheckContext, *, d_k_of=None, head_order=None, scale="sqrt", reference: str = "auto"
                     ) -> Evidence:
    """Parameter counts for ``h`` heads of width ``d_k_of(d_model, h)`` (default ``d_model // h``), per-head maps, concat + W_O.

    Parameters
    ----------
    ctx : CheckContext
    d_k_of : callable ``(d_model, h) -> d_k``, optional
        ``lambda d, h: d`` states (wrongly) that full-width heads keep the parameter count.
    head_order : sequence of int, optional
        The order in which the heads are concatenated before ``W_O`` (default 0, 1, …); a
        permutation states (wrongly) that the order of the heads does not matter.
    scale : "sqrt" or float, default "sqrt"
        The score scale attnsym's layers use (``"sqrt"``: ``1/√d_k`` of each head). A number
        such as ``1/√d_model`` states (wrongly) that multi-head attention scales by the model
        width: attnsym's multi-head and single-head layers then still agree with each other
        (the check against attnsym itself cannot see it); PyTorch does not.
    reference : {"auto", "torch", "none"}
        The independent reference for the counts and the output: ``torch.nn.MultiheadAttention``
        with attnsym's weights copied in (:mod:`attnsym.references`). "auto" uses it when PyTorch
        is installed and the check is not quick (importing PyTorch alone costs more than a second);
        without it the comparison of the output with concat·W_O is attnsym against attnsym and is
        labelled true by construction.
    """
    reference = one_of("reference", reference, ("auto", "torch", "none"))
    use_torch = reference == "torch" or (reference == "auto" and not ctx.quick and torch_installed())
    d_k_of = (lambda d, h: d // h) if d_k_of is None else d_k_of
    d_model = 8 if ctx.quick else 16
    counts = []
    for h in (1, 2, 4, 8):
        spec = AttentionSpec(n=4, d_model=d_model, heads=h, d_k=d_k_of(d_model, h), output_projection=True)
        row = {"heads": h, "d_k": spec.d_k, "parameters": spec.parameter_count,
               "4·d_model² (single head with W_O)": 4 * d_model**2}
        if use_torch:
            row["torch.nn.MultiheadAttention parameters"] = torch_multihead_parameter_count(d_model, h, bias=False)
        counts.append(row)
    counts_kept = all(r["parameters"] == 4 * d_model**2 for r in counts)
    counts_match_torch = all(r["parameters"] == r["torch.nn.MultiheadAttention parameters"] for r in counts) \
        if use_torch else True
    # numeric: per-head maps differ, and the layer equals per-head attention, concatenated, times W_O
    rng = ctx.rng("multi-head")
    n, heads = (6, 4) if ctx.quick else (16, 4)
    order = list(range(heads)) if head_order is None else [int(h) for h in head_order]
    spec = AttentionSpec(n=n, d_model=d_model, heads=heads)
    w = random_weights(rng, spec)
    X = rng.standard_normal((n, d_model))
    Y, A = attention(X, **w, heads=heads, scale=scale)
    d_k = spec.d_k
    Z = []
    for h in order:
        cols = slice(h * d_k, (h + 1) * d_k)
        Zh, _ = attention(X, w["W_Q"][:, cols], w["W_K"][:, cols], w["W_V"][:, cols], scale=scale)  # one head, width d_k
        Z.append(Zh)
    concat = np.concatenate(Z, axis=1) @ w["W_O"]
    concat_error = max_abs(concat, Y)
    head_distances = [routing_distance(A[a], A[b]) for a, b in itertools.combinations(range(heads), 2)]
    heads_differ = min(head_distances) > 0
    details = {"parameter counts": counts, "head distances": head_distances, "concat·W_O error": concat_error}
    torch_ok = True
    if use_torch:
        Y_t, A_t = torch_multihead_attention(X, w, heads=heads)
        details.update({"reference": f"torch.nn.MultiheadAttention (PyTorch {torch_version()}, float64, weights copied in)",
                        "max |Y − Y_torch|": max_abs(Y, Y_t), "max |concat·W_O − Y_torch|": max_abs(concat, Y_t),
                        "max |A − A_torch| (per head)": max_abs(A, A_t)})
        torch_ok = close(Y, Y_t) and close(concat, Y_t) and close(A, A_t)
    # symbolic: each head of the 2-head layer is exactly the 1-head layer on its own weight columns
    sspec = AttentionSpec(n=2, d_model=2, heads=2)
    multi = sym_attention(sspec)
    single = sym_attention(AttentionSpec(n=2, d_model=2, d_k=1))
    symbolic_ok = True
    for h in range(2):
        rename = {}
        for name in ("W_Q", "W_K", "W_V"):
            rename.update({single.inputs[name][i, 0]: multi.inputs[name][i, h] for i in range(2)})
        symbolic_ok = symbolic_ok and all(e == 0 for e in (single.Y.xreplace(rename) - multi.Z_heads[h]))
    symbolic_ok = symbolic_ok and all(e == 0 for e in (sp.Matrix.hstack(*multi.Z_heads) * multi.W_O - multi.Y))
    details["symbolic per-head identity"] = symbolic_ok
    # the symbolic layer, lambdified, against an outside reference (its 1/√d_k included: d_k = 2 here):
    # torch.nn.MultiheadAttention when it is used, else the paper's formula written apart (numeric.paper_formulas)
    lspec = AttentionSpec(n=2, d_model=4, heads=2, output_projection=True)
    layer = sym_attention(lspec).lambdify("Y")
    lw = {name: rng.standard_normal(lspec.shapes[name]) for name in ("X", "W_Q", "W_K", "W_V", "W_O")}
    Y_sym = np.asarray(layer(**lw)["Y"], dtype=float)
    if use_torch:
        Y_ref, _ = torch_multihead_attention(lw["X"], {k: v for k, v in lw.items() if k != "X"}, heads=2)
        ref_name = f"torch.nn.MultiheadAttention (PyTorch {torch_version()})"
    else:
        Y_ref = multihead_attention_formula(lw["X"], lw["W_Q"], lw["W_K"], lw["W_V"], lw["W_O"], heads=2)
        ref_name = "Vaswani et al. eq. (1) written apart (numeric.paper_formulas; PyTorch " + (
            "not installed)" if not torch_installed() else "not used in this run)")
    lambdified_error = max_abs(Y_sym, Y_ref)
    lambdified_ok = close(Y_sym, Y_ref)
    # the numeric layer (with the scale the claim states) against the formula written apart, too
    formula_error = max_abs(multihead_attention_formula(X, w["W_Q"], w["W_K"], w["W_V"], w["W_O"], heads=heads), Y)
    details.update({"symbolic layer (lambdified, n = 2, d_model = 4, 2 heads) vs": ref_name,
                    "max |Y_symbolic − Y_reference|": lambdified_error,
                    "max |Y_numeric − Y_formula| (paper's formula written apart)": formula_error})
    facts = {"the parameter count is kept": counts_kept, "counts = torch.nn.MultiheadAttention's": counts_match_torch,
             "per-head maps differ": heads_differ, "output = concat(heads)·W_O": close(concat, Y),
             "= torch.nn.MultiheadAttention": torch_ok, "symbolic per-head identity": symbolic_ok,
             "symbolic layer (lambdified) = the reference": lambdified_ok,
             "numeric layer = the paper's formula": formula_error <= 1e-12}

    def figure():
        return plots.attention_heatmap(A, title="Per-head attention maps for one input (same X, different W_Q, W_K)")
    tol = f"float64, rtol={TOL64.rtol:g}"
    if use_torch:
        method = (f"parameter counts against torch.nn.MultiheadAttention + numeric check against "
                  f"torch.nn.MultiheadAttention (weights copied in, {tol}) + symbolic identity")
        reference_line = (f"independent reference: torch.nn.MultiheadAttention (PyTorch {torch_version()}) with the same "
                          "weights — its parameter count for each h, its output and its per-head weights")
        construction = ("that the count does not depend on h is the identity h·(d/h) = d (PyTorch's module has the same "
                        "4·d² for every h: that checks attnsym's count, not the identity)",
                        "the symbolic per-head identity compares attnsym's SymPy layer with attnsym's SymPy layer "
                        "(the same formulas)")
    else:
        method = f"exact parameter counts + symbolic identity + numeric check ({tol})"
        why = ("reference='none'" if reference == "none" else "PyTorch is not installed" if not torch_installed()
               else "the torch.nn.MultiheadAttention reference runs in full mode (importing PyTorch takes longer "
                    "than the check)")
        reference_line = f"no independent reference: {why}"
        construction = ("'splitting d into h heads of d/h keeps the parameter count' is the identity h·(d/h) = d: "
                        "4·d² for every h by arithmetic (a wrong width d_k fails it, nothing else can)",
                        "'the output equals concatenation followed by W_O' compares attnsym's multi-head layer with "
                        "attnsym's single-head layer on weight columns (numeric) and SymPy with SymPy (symbolic): "
                        "the same formulas, not an independent implementation")
    exact = "exact" if symbolic_ok else "NOT exact"
    return Evidence(
        "multi-head", MULTI_STATEMENT, verdict(facts, passing="holds-under-conditions"),
        method=method,
        summary=(f"parameters for h = 1, 2, 4, 8: {', '.join(map(str, sorted({r['parameters'] for r in counts})))} "
                 f"(4·d²{', as in torch.nn.MultiheadAttention' if use_torch and counts_match_torch else ''}); "
                 f"per-head maps differ (distance ≥ {min(head_distances):.2f}); output = concat(heads)·W_O ({exact}"
                 + (f"; = torch.nn.MultiheadAttention to {details['max |concat·W_O − Y_torch|']:.1e}" if use_torch
                    else "") + ")"
                 + f"; symbolic layer lambdified vs {'torch.nn.MultiheadAttention' if use_torch else 'the paper formula'}"
                 f" {'agrees' if lambdified_ok else 'DISAGREES'} (max gap {lambdified_error:.1e}); numeric layer vs the "
                 f"paper formula: max gap {formula_error:.1e}" + failed_clause(facts)),
        conditions=("the count is kept when d_k = d_v = d_model/h (with W_O counted in both layouts)",
                    "'different relations' is checked as 'different maps' for random weights; trained heads can be redundant",
                    reference_line,
                    f"the symbolic layer (lambdified) is compared with {ref_name}"),
        details=details,
        by_construction=construction,
        equations=(("parameters of h heads of width d/h, with W_O", _parameter_equation()),),
        figures={"heads": figure},
    )


def _multi_head(ctx: CheckContext) -> Evidence:
    return check_multi_head(ctx)


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (builtin_claim("multi-head", _multi_head),)
