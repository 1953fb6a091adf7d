"""The claim that heads attend to different relations at the same parameter count: ``multi-head``.

A verdict on :func:`attnsym.studies.multi_head.study` (parameter counts for h = 1, 2, 4, 8, the
per-head maps of one input, the layer against its heads concatenated times W_O, the exact
per-head identity, the symbolic layer lambdified against an outside reference); the figure draws
the study's per-head maps. The registered claim calls the parametrised check
:func:`check_multi_head` with the statement of the shipped claims list; the tests call it with
deliberately wrong variants (full-width heads, a wrong scale, a permuted concatenation) and see
it fail. The independent reference, when PyTorch is installed, is ``torch.nn.MultiheadAttention``
(:mod:`attnsym.references`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import sympy as sp

from ... import plots
from ..._checks import one_of
from ...references import torch_installed
from ...studies import multi_head as multi_head_study
from ...studies.multi_head import MultiHeadResult
from .._compare import TOL64
from .._evidence import CheckContext, Evidence
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = ["check_multi_head"]

#: the largest gap allowed between the numeric layer and the paper's formula written apart
FORMULA_TOLERANCE = 1e-12


def _parameter_equation():
    d, h = sp.symbols("d h", positive=True, integer=True)
    width = sp.Mul(h, sp.UnevaluatedExpr(d / h), evaluate=False)  # h heads of width d/h
    qkv = sp.Mul(3, d, width, evaluate=False)  # W_Q, W_K, W_V: d × (h·d/h) each
    out = sp.Mul(width, d, evaluate=False)  # W_O: (h·d/h) × d
    return sp.Eq(sp.Add(qkv, out, evaluate=False), 4 * d**2, evaluate=False)


# ----------------------------------------------------------------------------- multi-head

MULTI_STATEMENT = statement("multi-head")


def check_multi_head(ctx: CheckContext, *, d_k_of: Callable[[int, int], int] | None = None,
                     head_order: Sequence[int] | None = None, scale: Any = "sqrt", reference: str = "auto"
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
    r = multi_head_study.study(partial(ctx.rng, "multi-head"), quick=ctx.quick, torch=use_torch, d_k_of=d_k_of,
                               head_order=head_order, scale=scale)
    facts = multi_head_facts(r)
    method, reference_line, construction = _wording(r, reference)
    return Evidence(
        "multi-head", MULTI_STATEMENT, verdict(facts, passing="holds-under-conditions"),
        method=method,
        summary=_summary(r) + failed_clause(facts),
        conditions=("the count is kept when d_k = d_v = d_model/h (with W_O counted in both layouts)",
                    "'different relations' is checked as 'different maps' for random weights; trained heads can be redundant",
                    reference_line,
                    f"the symbolic layer (lambdified) is compared with {_reference_name(r)}"),
        details=_details(r),
        by_construction=construction,
        equations=(("parameters of h heads of width d/h, with W_O", _parameter_equation()),),
        figures={"heads": partial(plots.attention_heatmap, r.weights,
                                  title="Per-head attention maps for one input (same X, different W_Q, W_K)")},
    )


def multi_head_facts(r: MultiHeadResult) -> dict[str, bool]:
    """The falsifiable conditions of the claim on a study result, by name (all must hold)."""
    return {"the parameter count is kept": r.counts_kept, "counts = torch.nn.MultiheadAttention's": r.counts_match_torch,
            "per-head maps differ": min(r.head_distances) > 0, "output = concat(heads)·W_O": r.concat_close,
            "= torch.nn.MultiheadAttention": r.torch is None or r.torch.agrees,
            "symbolic per-head identity": r.symbolic_per_head,
            "symbolic layer (lambdified) = the reference": r.lambdified.agrees,
            "numeric layer = the paper's formula": r.formula_gap <= FORMULA_TOLERANCE}


def _reference_name(r: MultiHeadResult) -> str:
    """What the lambdified symbolic layer was compared with, in words."""
    if r.torch is not None:  # the lambdified layer was compared with PyTorch too
        return f"torch.nn.MultiheadAttention (PyTorch {r.torch.version})"
    return "Vaswani et al. eq. (1) written apart (numeric.paper_formulas; PyTorch " + (
        "not installed)" if not torch_installed() else "not used in this run)")


def _details(r: MultiHeadResult) -> dict[str, Any]:
    d_model = r.sizes.d_model
    counts = []
    for c in r.counts:
        row: dict[str, Any] = {"heads": c.heads, "d_k": c.d_k, "parameters": c.parameters,
                               "4·d_model² (single head with W_O)": 4 * d_model**2}
        if c.torch is not None:
            row["torch.nn.MultiheadAttention parameters"] = c.torch
        counts.append(row)
    details: dict[str, Any] = {"parameter counts": counts, "head distances": list(r.head_distances),
                               "concat·W_O error": r.concat_gap}
    if r.torch is not None:
        details.update({"reference": f"torch.nn.MultiheadAttention (PyTorch {r.torch.version}, float64, weights copied in)",
                        "max |Y − Y_torch|": r.torch.output_gap, "max |concat·W_O − Y_torch|": r.torch.concat_gap,
                        "max |A − A_torch| (per head)": r.torch.weights_gap})
    details.update({"symbolic per-head identity": r.symbolic_per_head,
                    "symbolic layer (lambdified, n = 2, d_model = 4, 2 heads) vs": _reference_name(r),
                    "max |Y_symbolic − Y_reference|": r.lambdified.gap,
                    "max |Y_numeric − Y_formula| (paper's formula written apart)": r.formula_gap})
    return details


def _summary(r: MultiHeadResult) -> str:
    torch = r.torch
    exact = "exact" if r.symbolic_per_head else "NOT exact"
    return (f"parameters for h = 1, 2, 4, 8: {', '.join(map(str, sorted({c.parameters for c in r.counts})))} "
            f"(4·d²{', as in torch.nn.MultiheadAttention' if torch and r.counts_match_torch else ''}); "
            f"per-head maps differ (distance ≥ {min(r.head_distances):.2f}); output = concat(heads)·W_O ({exact}"
            + (f"; = torch.nn.MultiheadAttention to {torch.concat_gap:.1e}" if torch else "") + ")"
            + f"; symbolic layer lambdified vs {'torch.nn.MultiheadAttention' if torch else 'the paper formula'}"
            f" {'agrees' if r.lambdified.agrees else 'DISAGREES'} (max gap {r.lambdified.gap:.1e}); numeric layer vs "
            f"the paper formula: max gap {r.formula_gap:.1e}")


def _wording(r: MultiHeadResult, reference: str) -> tuple[str, str, tuple[str, str]]:
    """The method, the reference condition and what is true by construction, with or without PyTorch."""
    tol = f"float64, rtol={TOL64.rtol:g}"
    if r.torch is not None:
        return ((f"parameter counts against torch.nn.MultiheadAttention + numeric check against "
                 f"torch.nn.MultiheadAttention (weights copied in, {tol}) + symbolic identity"),
                (f"independent reference: torch.nn.MultiheadAttention (PyTorch {r.torch.version}) with the same "
                 "weights — its parameter count for each h, its output and its per-head weights"),
                ("that the count does not depend on h is the identity h·(d/h) = d (PyTorch's module has the same "
                 "4·d² for every h: that checks attnsym's count, not the identity)",
                 "the symbolic per-head identity compares attnsym's SymPy layer with attnsym's SymPy layer "
                 "(the same formulas)"))
    why = ("reference='none'" if reference == "none" else "PyTorch is not installed" if not torch_installed()
           else "the torch.nn.MultiheadAttention reference runs in full mode (importing PyTorch takes longer "
                "than the check)")
    return (f"exact parameter counts + symbolic identity + numeric check ({tol})",
            f"no independent reference: {why}",
            ("'splitting d into h heads of d/h keeps the parameter count' is the identity h·(d/h) = d: "
             "4·d² for every h by arithmetic (a wrong width d_k fails it, nothing else can)",
             "'the output equals concatenation followed by W_O' compares attnsym's multi-head layer with "
             "attnsym's single-head layer on weight columns (numeric) and SymPy with SymPy (symbolic): "
             "the same formulas, not an independent implementation"))


def _multi_head(ctx: CheckContext) -> Evidence:
    return check_multi_head(ctx)


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (builtin_claim("multi-head", _multi_head),)
