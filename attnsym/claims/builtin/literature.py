"""Third-round claims from the literature that no tool checks: ``length-scaling``, ``off-by-one-sink``,
``softcap-facts``.

The mathematics lives in :mod:`attnsym.symbolic.softcap`, :mod:`attnsym.symbolic.sink`,
:mod:`attnsym.symbolic.length_scaling` (exact) and :mod:`attnsym.numeric.sink`,
:mod:`attnsym.numeric.length_scaling` (float); the figures in :mod:`attnsym.plots.literature` draw
what the checks computed. Each check evaluates the functions of those modules, so a mutated
implementation fails it (``tests/test_claims_mutations.py``).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import sympy as sp

from ..._exact import exact_subs
from ...plots.literature import length_scaling_figure, sink_figure, softcap_figure
from ...studies import length_scaling, sink
from ...studies import softcap as softcap_study
from ...symbolic import sink as exact_sink
from ...symbolic.length_scaling import scaled_top_weight, top_weight
from .._evidence import CheckContext, Evidence, tex
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = ["SOFTCAP_EXAMPLE", "check_length_scaling", "check_off_by_one_sink", "check_softcap_facts"]

#: the claim's example: c = 50, ℓ = 10: the error 0.13123 (5 decimals) against the bound 0.13333
SOFTCAP_EXAMPLE = {"cap": 50, "logit": 10, "error": 0.13123, "bound": 0.13333}


def check_softcap_facts(ctx: CheckContext, *, cap: int = 50, claimed_bound=None) -> Evidence:
    """``c·tanh(ℓ/c)``: in ``(−c, c)``, increasing, 1-Lipschitz, within ``|ℓ|³/(3c²)`` of ``ℓ``; exact and on a grid.

    A verdict on :func:`attnsym.studies.softcap.study`: the exact slope is ``1 − tanh²(ℓ/c)`` (in
    ``(0, 1]``), the limits at ``±∞`` are ``±c``, the certificate ``g′ = x² − tanh² x ≥ 0`` proves
    the cubic bound; on the float64 grid the capped logit stays in ``[−c, c]``, never decreases,
    moves by at most ``|Δℓ|`` and stays within the bound; the claim's example to 5 decimals.
    ``claimed_bound(|ℓ|, c)`` is the asserted error bound (default ``|ℓ|³/(3c²)``).
    """
    bound_of = (lambda a, cc: a**3 / (3 * cc**2)) if claimed_bound is None else claimed_bound
    r = softcap_study.study(quick=ctx.quick, cap=cap)
    ell, c, values, steps = r.ell, r.c, r.values, np.diff(r.values)
    error, bound = np.abs(r.grid - values), bound_of(np.abs(r.grid), cap)
    ex = SOFTCAP_EXAMPLE
    at = exact_subs("the soft-cap example", {ell: sp.Float(ex["logit"], 30), c: ex["cap"]}, (ell, c))
    ex_error, ex_bound = float(ex["logit"] - r.f.subs(at)), float(bound_of(float(ex["logit"]), float(ex["cap"])))
    facts = {"slope = 1 − tanh²(ℓ/c) ∈ (0, 1] (exact)": sp.simplify(r.slope - (1 - sp.tanh(ell / c) ** 2)) == 0,
             "limits ±c (exact)": sp.simplify(r.limits[0] - c) == 0 and sp.simplify(r.limits[1] + c) == 0,
             "g′ = x² − tanh² x (exact)": r.certificate, "g(0) = 0": r.g_at_zero == 0,
             # float64 rounds tanh to ±1 far out: ≤, the exact limit is strict
             "grid: |capped| ≤ c": bool(np.all(np.abs(values) <= cap)), "grid: order kept": bool(np.all(steps >= 0)),
             "grid: 1-Lipschitz": bool(np.all(steps <= np.diff(r.grid) * (1 + 1e-12))),
             "grid: error ≤ |ℓ|³/(3c²)": bool(np.all(error <= bound * (1 + 1e-9) + 1e-12)),
             "example to 5 decimals": round(ex_error, 5) == ex["error"] and round(ex_bound, 5) == ex["bound"]}
    x = sp.Symbol("x")
    return Evidence(
        "softcap-facts", statement("softcap-facts"), verdict(facts),
        method="symbolic proof (slope, limits, cubic-bound certificate) + numeric check (float64 grid, "
               f"{r.grid.size} logits up to 10⁴·c)",
        summary=(f"slope {r.slope}; limits {r.limits[0]}, {r.limits[1]}; certificate g′ = {sp.factor(r.dg)}; "
                 f"c = {ex['cap']}, ℓ = {ex['logit']}: error {ex_error:.5f} {'≤' if ex_error <= ex_bound else '>'} "
                 f"bound {ex_bound:.5f}; largest error/bound on the grid {float(np.max(error / np.maximum(bound, 1e-300))):.3f}"
                 + failed_clause(facts)),
        conditions=("c > 0; the open interval (−c, c) is exact: in float64 tanh rounds to ±1 beyond |ℓ| ≈ 19c, so "
                    "the grid checks |capped| ≤ c",
                    "the cubic bound is tight near 0 (x − tanh x = x³/3 − 2x⁵/15 + …) and loose for |ℓ| ≫ c, where "
                    "the error is |ℓ| − c"),
        details={**facts, "example error": ex_error, "example bound": ex_bound, "cap of the grid": cap},
        equations=(("soft-capped logit", sp.Eq(tex(r"\operatorname{cap}_c(\ell)"), r.f, evaluate=False)),
                   ("its slope", sp.Eq(tex(r"\partial_\ell \operatorname{cap}_c(\ell)"), r.slope, evaluate=False)),
                   ("certificate of the cubic bound", sp.Eq(tex(r"g'(x)"), x**2 - sp.tanh(x) ** 2, evaluate=False)),
                   ("the bound", sp.Le(tex(r"|\ell - c\tanh(\ell/c)|"), tex(r"|\ell|^3/(3c^2)"), evaluate=False))),
        figures={"softcap": partial(softcap_figure, r.shown.tolist(), r.shown_values.tolist(),
                                    np.abs(r.shown - r.shown_values).tolist(),
                                    (np.abs(r.shown) ** 3 / (3 * cap**2)).tolist(), cap=float(cap))},
    )


def check_off_by_one_sink(ctx: CheckContext, *, extra_logit: int = 0) -> Evidence:
    """softmax₁ = softmax over ``[extra_logit, x]`` without its first entry; with a zero value the outputs agree; sink mass.

    A verdict on :func:`attnsym.studies.sink.study`: exact for ``n = 3`` symbolic logits, values and
    sink logit ``s`` (``extra_logit`` is the claimed extra logit: 0 in the claim), and the stable
    float64 softmax₁ against the softmax of the appended logits, logits up to ±1000 included.
    """
    r = sink.study(partial(ctx.rng, "off-by-one-sink"), quick=ctx.quick, extra_logit=extra_logit)
    sums = r.row_sums
    facts = {"softmax₁ weights = softmax with the extra logit (exact)": r.weights_equal,
             "outputs equal with a zero value (exact)": r.outputs_equal,
             "sink weight = σ(s − lse(x)) (exact)": r.mass_equal, "float64 finite": r.finite,
             "float64 within 1e-12": r.numeric_gap <= 1e-12,
             # < 1 exactly; float64 rounds 1 − σ(−lse) to 1 once lse(x) > 37
             "row sums ≤ 1": bool(np.all(sums <= 1 + 1e-15))}
    grid = np.linspace(-8.0, 8.0, 161)
    return Evidence(
        "off-by-one-sink", statement("off-by-one-sink"), verdict(facts),
        method="symbolic proof (n = 3, symbolic logits, values and sink logit) + numeric check (float64, logits to ±1000)",
        summary=(f"softmax₁(x) {'=' if r.weights_equal else '≠'} softmax([{extra_logit}, x])[1:] exactly; outputs with a "
                 f"zero value {'equal' if r.outputs_equal else 'DIFFER'}; sink weight {'=' if r.mass_equal else '≠'} "
                 f"σ(s − lse(x)); float64: largest gap {r.numeric_gap:.1e} over {r.rows} rows, "
                 f"{'all finite' if r.finite else 'NOT finite'}, row sums in [{sums.min():.3g}, {sums.max():.3g}]"
                 + failed_clause(facts)),
        conditions=("the sink key's value is the zero vector (softmax₁'s 1 in the denominator is e⁰); a learned sink "
                    "logit s replaces that 0 and the sink's weight σ(s − lse(x)) falls as the other logits grow",
                    "softmax₁ may put (almost) no weight anywhere: its rows sum to 1 − σ(−lse(x)) < 1"),
        details={"weights equal (exact)": r.weights_equal, "outputs equal (exact)": r.outputs_equal,
                 "sink mass = σ(s − lse) (exact)": r.mass_equal, "largest float64 gap": r.numeric_gap,
                 "row sums (min, max)": [float(sums.min()), float(sums.max())], "claimed extra logit": extra_logit},
        equations=(("softmax₁", sp.Eq(tex(r"\operatorname{softmax}_1(x)_1"), r.one[0], evaluate=False)),
                   ("the sink's weight", sp.Eq(tex(r"a_{\mathrm{sink}}"), exact_sink.sink_mass(r.x, r.s), evaluate=False))),
        figures={"sink": partial(sink_figure, grid.tolist(), (1 / (1 + np.exp(-grid))).tolist(), lengths=(1, 16, 256))},
    )


#: the limits of the scaled top weight for sΔ above, at and below 1
LENGTH_SCALING_LIMITS = (sp.Integer(1), sp.Rational(1, 2), sp.Integer(0))


def check_length_scaling(ctx: CheckContext, *, claimed_limits=LENGTH_SCALING_LIMITS) -> Evidence:
    """Plain top weight → 0; with ``s·log n`` scaling → 1, ½, 0 for ``sΔ`` = 2, 1, ½ (exact limits); numeric at finite n.

    A verdict on :func:`attnsym.studies.length_scaling.study`. ``claimed_limits`` are the asserted
    limits for ``sΔ`` above, at and below 1; the float64 top weight of the scalable softmax on the
    actual logit vectors for n up to 10⁵ must equal the exact form at that n.
    """
    r = length_scaling.study(quick=ctx.quick)
    products = length_scaling.PRODUCTS
    limits_ok = r.plain_limit == 0 and all(sp.simplify(a - b) == 0 for a, b in zip(r.limits, claimed_limits, strict=True))
    numeric_gap = max(row.gap for row in r.rows)
    facts = {"limits as claimed (exact)": limits_ok, "float64 = exact form within 1e-12": numeric_gap <= 1e-12}
    n = sp.Symbol("n", positive=True)
    return Evidence(
        "length-scaling", statement("length-scaling"), verdict(facts),
        method="symbolic proof (exact limits) + numeric check (float64 softmax of s·log n·z up to n = "
               f"{r.sizes[-1]:,}, against the exact form)",
        summary=(f"Δ = 2: plain top weight → {r.plain_limit}; with s·log n scaling → "
                 + ", ".join(f"{lim} at sΔ = {p}" for lim, p in zip(r.limits, products, strict=True))
                 + f" (claimed {', '.join(map(str, claimed_limits))}); numeric vs exact at finite n: largest gap "
                 f"{numeric_gap:.1e}" + failed_clause(facts)),
        conditions=("one logit Δ above n − 1 equal logits (the extreme case of a fixed gap); at sΔ = 1 the limit 1/2 "
                    "is approached like 1/(1 + (n − 1)/n)",
                    "s is a per-layer constant (SSMax learns it); the limits need sΔ fixed while n grows"),
        details={"plain limit": r.plain_limit, "scaled limits": dict(zip(map(str, products), r.limits, strict=True)),
                 "rows": [{"sΔ": row.product, "n": row.n, "numeric": row.numeric, "exact": row.exact, "gap": row.gap}
                          for row in r.rows], "claimed limits": [str(c) for c in claimed_limits]},
        equations=(("top weight", sp.Eq(tex(r"a_{\max}"), top_weight(n, sp.Symbol("Delta")), evaluate=False)),
                   ("with s·log n scaling", sp.Eq(tex(r"a_{\max}^{(s)}"),
                                                 scaled_top_weight(n, sp.Symbol("Delta"), sp.Symbol("s")),
                                                 evaluate=False))),
        figures={"length-scaling": partial(length_scaling_figure, r.curve_n.tolist(), r.curves)},
    )


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (builtin_claim("length-scaling", check_length_scaling),
          builtin_claim("off-by-one-sink", check_off_by_one_sink), builtin_claim("softcap-facts", check_softcap_facts))
