"""The claim from Dong, Cordonnier & Loukas (2021) that pure attention loses rank: ``rank-collapse``.

The registered claim calls the parametrised check :func:`check_rank_collapse` with the statement
of the shipped claims list; the tests call it with deliberately wrong outcomes and see it fail.
The experiment lives in :mod:`attnsym.numeric.rank_collapse` (seeded stacks of layers), the exact
fixed point is built with :func:`attnsym.symbolic.attention`; the figure in
:mod:`attnsym.plots.limits` draws the measured residuals.
"""

from __future__ import annotations

from functools import partial

import sympy as sp

from ... import plots
from ...studies import rank_collapse as collapse_study
from .._evidence import CheckContext, Evidence, tex
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = ["check_rank_collapse"]


def check_rank_collapse(ctx: CheckContext, *, collapses: dict[str, bool] | None = None) -> Evidence:
    """Relative residual ``‖res(X_l)‖_{1,∞}/‖X_l‖_{1,∞}`` over layers, for each stack of ``ARCHITECTURES``.

    A verdict on :func:`attnsym.studies.rank_collapse.study`. ``collapses`` maps architecture ->
    whether the claim says it collapses (default: pure attention True, with skips False, with an MLP
    True — the claim's "skip connections prevent it, an MLP does not"). Every clause must agree with
    the measurement (a stack collapses when its median final relative residual is below 1e-8); pure
    attention must in addition contract cubically (``log r_{l+1}/log r_l ≥ 2``), the doubly
    exponential rate of Dong et al.'s bound ``r_{l+1} ≤ c r_l³``. Exact: ``X = 1 xᵀ`` is a fixed point.
    """
    claimed = {"attention": True, "attention+skip": False, "attention+mlp": True} if collapses is None else dict(collapses)
    r = collapse_study.study(partial(ctx.rng, "rank-collapse"), quick=ctx.quick)
    pure = r.row("attention")
    said = lambda collapse: "collapse" if collapse else "no collapse"
    judged = [row for row in r.rows if row.architecture in claimed]
    facts = {"a rank-1 input is a fixed point (exact)": r.fixed_point,
             **{f"{row.architecture}: {said(claimed[row.architecture])} as claimed":
                row.collapses == claimed[row.architecture] for row in judged},
             "pure attention contracts cubically": ((pure.rate is not None and pure.rate >= 2)
                                                    or not claimed.get("attention", True))}
    disagreements = [f"{row.architecture}: claimed {said(claimed[row.architecture])}, measured {said(row.collapses)}"
                     for row in judged if row.collapses != claimed[row.architecture]]
    return Evidence(
        "rank-collapse", statement("rank-collapse"), verdict(facts, passing="holds-under-conditions"),
        method="symbolic proof (rank-1 fixed point) + numeric experiment (seeded stacks, median and 95% range over seeds)",
        summary=(f"{r.depth} layers, {r.seeds} seeds, n = {r.n}, d = {r.d}: relative residual "
                 + "; ".join(f"{row.architecture} {row.final:.1e}" for row in r.rows)
                 + f"; pure attention contracts at log-rate {pure.rate or float('nan'):.1f}"
                 " (cubic: 3)" + (" — " + "; ".join(disagreements) if disagreements else "") + failed_clause(facts)),
        conditions=RANK_COLLAPSE_CONDITIONS,
        details={"rows": list(r.rows), "claimed": claimed, "rank-1 input is a fixed point (exact)": r.fixed_point,
                 "depth": r.depth, "seeds": r.seeds},
        equations=(("residual", sp.Eq(tex(r"\operatorname{res}(X)"), tex(r"X - \mathbf{1} x^\top"), evaluate=False)),
                   ("composite norm", sp.Eq(tex(r"\|M\|_{1,\infty}"), tex(r"\sqrt{\|M\|_1 \|M\|_\infty}"),
                                            evaluate=False)),
                   ("Dong et al. 2021, Lemma 2.1 (per layer)",
                    sp.Le(tex(r"\|\operatorname{res}(SA(X))\|_{1,\infty}"),
                          tex(r"\frac{4\gamma\beta}{\sqrt{d}} \|\operatorname{res}(X)\|_{1,\infty}^3"), evaluate=False))),
        figures={"rank-collapse": partial(plots.rank_collapse_figure, r.curves)},
    )


RANK_COLLAPSE_CONDITIONS = (
    "single-head layers with fresh LeCun-initialised W_Q, W_K, W_V per layer, scores scaled by 1/√d, "
    "no layer norm; the residual uses the column median for x (an upper bound on the paper's minimum)",
    "skip connections prevent the collapse (the residual decays slowly, not doubly exponentially)",
    "the MLP (relu, He-initialised, width 4d, no skip) is one draw of weights per layer; Dong et al. (§3) "
    "bound the convergence with the MLP's Lipschitz constant, so MLPs of large Lipschitz constant can slow "
    "it further; the check measures whether the stack collapses, not how much the MLP slows it",
    "Theorem 2.2's constant 4γβ/√d needs γ (a bound on the attention entries); we report β per layer and "
    "the measured cubic rate, not the constant")


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (
    builtin_claim("rank-collapse", check_rank_collapse),
)
