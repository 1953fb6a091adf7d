"""The claim from Dong, Cordonnier & Loukas (2021) that pure attention loses rank: ``rank-collapse``.

The registered claim calls the parametrised check :func:`check_rank_collapse` with the statement
of the shipped claims list; the tests call it with deliberately wrong outcomes and see it fail.
The experiment lives in :mod:`attnsym.numeric.rank_collapse` (seeded stacks of layers), the exact
fixed point is built with :func:`attnsym.symbolic.attention`; the figure in
:mod:`attnsym.plots.limits` draws the measured residuals.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from ... import plots
from ...numeric.rank_collapse import ARCHITECTURES, collapse_run
from ...spec import AttentionSpec
from ...symbolic.matrices import attention as sym_attention
from .._evidence import CheckContext, Evidence, tex
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = ["RATE", "check_rank_collapse"]


def _interval(values, level: float = 0.95) -> tuple[float, float]:
    """Equal-tailed empirical interval of ``values`` (the spread over seeds, not a CI of the mean)."""
    lo, hi = np.quantile(np.asarray(values, dtype=float), [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


# ----------------------------------------------------------------------------- rank-collapse

RATE = "median log r_{l+1}/log r_l where r_l < 0.1"


def check_rank_collapse(ctx: CheckContext, *, collapses: dict[str, bool] | None = None) -> Evidence:
    """Relative residual ``‖res(X_l)‖_{1,∞}/‖X_l‖_{1,∞}`` over layers, for each stack of ``ARCHITECTURES``.

    ``collapses`` maps architecture -> whether the claim says it collapses (default: pure
    attention True, with skips False, with an MLP True — the claim's "skip connections prevent it,
    an MLP does not"). Every clause must agree with the measurement. A stack "collapses" when its
    median relative residual after ``depth`` layers is below 1e-8; pure attention must in addition contract cubically
    (``log r_{l+1}/log r_l ≥ 2`` where the residual is small), the doubly exponential rate of
    Dong et al.'s bound ``r_{l+1} ≤ c r_l³``. Exact: ``X = 1 xᵀ`` is a fixed point (``A 1 = 1``).
    """
    claimed = {"attention": True, "attention+skip": False, "attention+mlp": True} if collapses is None else dict(collapses)
    seeds = 5 if ctx.quick else 20
    depth = 8 if ctx.quick else 12
    n, d = 16, 8
    runs: dict[str, list[Any]] = {arch: [] for arch in ARCHITECTURES}
    for s in range(seeds):
        X0 = ctx.rng("rank-collapse", "X", s).standard_normal((n, d))
        for arch in ARCHITECTURES:
            runs[arch].append(collapse_run(arch, X0, depth, ctx.rng("rank-collapse", arch, s)))
    rows: list[dict[str, Any]] = []
    measured: dict[str, bool] = {}
    for arch, rs in runs.items():
        R = np.array([r.relative_residual for r in rs])  # (seeds, depth + 1)
        final = R[:, -1]
        measured[arch] = float(np.median(final)) < 1e-8
        rate = [float(np.log(r[k + 1]) / np.log(r[k])) for r in R for k in range(depth)
                if 1e-13 < r[k + 1] and r[k] < 0.1]
        rows.append({"architecture": arch, "median final relative residual": float(np.median(final)),
                     "95% range over seeds": _interval(final), "collapses (median < 1e-8)": measured[arch],
                     RATE: float(np.median(rate)) if rate else None,
                     "median per-layer β = ‖W_QW_Kᵀ‖₁‖W_V‖_{1,∞}": float(np.median([r.beta for r in rs]))})
    pure = rows[0]
    cubic = pure[RATE] is not None and pure[RATE] >= 2
    # exact: a rank-1 input stays rank-1 (rows of A sum to 1), for symbolic weights
    sym = sym_attention(AttentionSpec(n=3, d_model=2))
    x = sp.symbols("x_0:2", real=True)
    Y = sym.Y.xreplace({sym.X[i, j]: x[j] for i in range(3) for j in range(2)})
    fixed_point = all(sp.expand(Y[i, j] - Y[0, j]) == 0 for i in range(3) for j in range(2))
    agree = {arch: measured[arch] == claimed.get(arch, measured[arch]) for arch in ARCHITECTURES}
    # every clause of the statement must agree with the measurement: a clause that does not makes the claim fail
    facts = {"a rank-1 input is a fixed point (exact)": fixed_point,
             **{f"{arch}: {'collapse' if claimed[arch] else 'no collapse'} as claimed": agree[arch]
                for arch in ARCHITECTURES if arch in claimed},
             "pure attention contracts cubically": cubic or not claimed.get("attention", True)}
    curves = {arch: np.array([r.relative_residual for r in rs]) for arch, rs in runs.items()}

    def figure():
        return plots.rank_collapse_figure(curves)

    disagreements = [f"{a}: claimed {'collapse' if claimed[a] else 'no collapse'}, measured "
                     f"{'collapse' if measured[a] else 'no collapse'}" for a in ARCHITECTURES if a in claimed and not agree[a]]
    return Evidence(
        "rank-collapse", statement("rank-collapse"), verdict(facts, passing="holds-under-conditions"),
        method="symbolic proof (rank-1 fixed point) + numeric experiment (seeded stacks, median and 95% range over seeds)",
        summary=(f"{depth} layers, {seeds} seeds, n = {n}, d = {d}: relative residual "
                 + "; ".join(f"{r['architecture']} {r['median final relative residual']:.1e}" for r in rows)
                 + f"; pure attention contracts at log-rate {pure[RATE] or float('nan'):.1f}"
                 " (cubic: 3)" + (" — " + "; ".join(disagreements) if disagreements else "") + failed_clause(facts)),
        conditions=("single-head layers with fresh LeCun-initialised W_Q, W_K, W_V per layer, scores scaled by 1/√d, "
                    "no layer norm; the residual uses the column median for x (an upper bound on the paper's minimum)",
                    "skip connections prevent the collapse (the residual decays slowly, not doubly exponentially)",
                    "the MLP (relu, He-initialised, width 4d, no skip) is one draw of weights per layer; Dong et al. (§3) "
                    "bound the convergence with the MLP's Lipschitz constant, so MLPs of large Lipschitz constant can slow "
                    "it further; the check measures whether the stack collapses, not how much the MLP slows it",
                    "Theorem 2.2's constant 4γβ/√d needs γ (a bound on the attention entries); we report β per layer and "
                    "the measured cubic rate, not the constant"),
        details={"rows": rows, "claimed": claimed, "rank-1 input is a fixed point (exact)": fixed_point,
                 "depth": depth, "seeds": seeds},
        equations=(("residual", sp.Eq(tex(r"\operatorname{res}(X)"), tex(r"X - \mathbf{1} x^\top"), evaluate=False)),
                   ("composite norm", sp.Eq(tex(r"\|M\|_{1,\infty}"), tex(r"\sqrt{\|M\|_1 \|M\|_\infty}"), evaluate=False)),
                   ("Dong et al. 2021, Lemma 2.1 (per layer)",
                    sp.Le(tex(r"\|\operatorname{res}(SA(X))\|_{1,\infty}"),
                          tex(r"\frac{4\gamma\beta}{\sqrt{d}} \|\operatorname{res}(X)\|_{1,\infty}^3"), evaluate=False))),
        figures={"rank-collapse": figure},
    )


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (
    builtin_claim("rank-collapse", check_rank_collapse),
)
