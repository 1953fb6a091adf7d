"""Claims from the literature on the limits of softmax: ``dispersion``, ``softmax-jacobian-norm``,
``entropy-lower-bound``.

Each registered claim calls a parametrised check (``check_*``) with the statement of the shipped
claims list; the tests call the same checks with deliberately wrong statements and see them fail.
The mathematics lives in :mod:`attnsym.symbolic.softmax_limits` (exact) and
:mod:`attnsym.numeric.softmax_search` (searched); the figures in :mod:`attnsym.plots.limits`
draw what the checks computed.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from ... import plots
from ..._exact import exact
from ...numeric import softmax, softmax_jacobian
from ...numeric.softmax_search import entropy_on_sphere, max_jacobian_norm, min_entropy_on_sphere, softmax_entropy
from ...symbolic.softmax_limits import (
    dispersion_half_point,
    dispersion_top_weight,
    entropy,
    entropy_lower_bound,
    entropy_minimiser,
    jacobian_quadratic_form,
    two_point_jacobian_norm,
)
from .._evidence import CheckContext, Evidence, tex
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = ["DISPERSION_EXAMPLE", "check_dispersion", "check_entropy_lower_bound", "check_softmax_jacobian_norm"]


# ----------------------------------------------------------------------------- dispersion

#: the example of the claim: logits +3 and −2 (gap 5), top weight at n = 10, 10³, 10⁵ (3 significant digits)
DISPERSION_EXAMPLE = {10: 0.943, 1000: 0.129, 100000: 0.00148}


def check_dispersion(ctx: CheckContext, *, gap: float = 5, claimed: dict[int, float] | None = None,
                     claimed_limit: float = 0.0) -> Evidence:
    """The top weight ``1/(1 + (n − 1)e^{−Δ})`` exactly, its limit as ``n → ∞``, the claimed numbers, the 1/2 point.

    ``claimed`` maps ``n`` to the asserted top weight (3 significant digits), ``claimed_limit``
    is the asserted limit. Numeric: :func:`attnsym.numeric.softmax` on the actual logit vectors
    (up to ``n = 10⁵``), and random logits in an interval of width ``Δ`` never beat the exact form.
    """
    claimed = dict(DISPERSION_EXAMPLE if claimed is None else claimed)
    n, D = sp.symbols("n Delta", positive=True)
    top = dispersion_top_weight(n, D)
    limit = sp.limit(top, n, sp.oo)
    exact_gap = exact("gap", gap, floats="rational")
    rows = []
    for size, value in sorted(claimed.items()):
        exact_top = top.subs({n: exact("claimed n", size), D: exact_gap})
        z = np.full(size, -2.0)
        z[0] = -2.0 + float(gap)
        numeric = float(np.asarray(softmax(z))[0])
        rows.append({"n": size, "exact": float(exact_top), "numeric softmax": numeric, "claimed": value,
                     "claimed (3 significant digits) matches": float(f"{float(exact_top):.3g}") == value,
                     "numeric = exact": math.isclose(numeric, float(exact_top), rel_tol=1e-12)})
    half = dispersion_half_point(exact_gap)
    # any logits inside an interval of width gap: the top weight never exceeds the exact form
    rng = ctx.rng("dispersion")
    sizes = (10, 100, 1000) if ctx.quick else (10, 100, 1000, 10000)
    worst = []
    for size in sizes:
        Z = rng.uniform(0.0, float(gap), size=(200, size))
        worst.append(float(np.asarray(softmax(Z)).max()) <= float(top.subs({n: size, D: exact_gap})) + 1e-15)
    limit_ok = sp.simplify(limit - exact("claimed_limit", claimed_limit, floats="rational")) == 0
    facts = {"limit as claimed (exact)": limit_ok,
             "claimed values match (3 significant digits)": all(r["claimed (3 significant digits) matches"] for r in rows),
             "numeric top weight = exact": all(r["numeric = exact"] for r in rows),
             "random logits never exceed the form": all(worst)}
    curve_n = np.unique(np.logspace(0, 6, 61).astype(int))
    gaps = (1.0, 3.0, float(gap), 10.0) if float(gap) not in (1.0, 3.0, 10.0) else (1.0, 3.0, 10.0)
    curves = {g: [float(1 / (1 + (m - 1) * math.exp(-g))) for m in curve_n] for g in gaps}

    def figure():
        return plots.dispersion_figure(curve_n, curves, [r["n"] for r in rows], [r["exact"] for r in rows],
                                       gap=float(gap))

    return Evidence(
        "dispersion", statement("dispersion"), verdict(facts),
        method="symbolic proof (exact form, limit) + numeric check (softmax up to n = 10⁵, random logits vs the form)",
        summary=(f"top weight 1/(1 + (n − 1)e^(−Δ)) → {limit} as n → ∞; Δ = {gap:g}: "
                 + ", ".join(f"{r['exact']:.3g} at n = {r['n']}" for r in rows)
                 + f"; falls below 1/2 at n = 1 + e^Δ ≈ {float(half):.0f}" + failed_clause(facts)),
        conditions=("the logit gap Δ is fixed while n grows (logits bounded independently of n); a gap growing like "
                    "log n keeps the top weight away from 0",
                    f"the form is the largest weight any key can get when all logits lie in an interval of width Δ; "
                    f"a gap stops being 'sharp' (top weight < 1/2) beyond n = 1 + e^Δ ({float(half):.1f} for Δ = {gap:g})"),
        details={"rows": rows, "limit": limit, "half point n = 1 + e^Δ": half,
                 "random logits in [0, Δ] never exceed the form": dict(zip(sizes, worst, strict=True))},
        equations=(("top weight, one logit Δ above n − 1 equal ones", sp.Eq(tex(r"a_{\max}"), top, evaluate=False)),
                   ("its limit as n grows", sp.Eq(tex(r"\lim_{n\to\infty} a_{\max}"), limit, evaluate=False)),
                   ("the top weight falls to 1/2 at", sp.Eq(tex("n_{1/2}"), dispersion_half_point(D), evaluate=False))),
        figures={"dispersion": figure},
    )


# ----------------------------------------------------------------------------- softmax-jacobian-norm

def check_softmax_jacobian_norm(ctx: CheckContext, *, claimed_bound: float = 0.5) -> Evidence:
    """``‖diag(a) − a aᵀ‖₂ ≤ claimed_bound``, attained: exact two-point analysis, variance identity, numeric search.

    The proof: ``vᵀJv`` is the variance of ``v`` under ``a`` (exact identity), at most
    ``(max v − min v)²/4 ≤ ‖v‖²/2`` (Popoviciu); equality needs ``a`` to put 1/2 on two keys.
    Exact: the two-point norm ``2p(1 − p)`` has maximum 1/2 at p = 1/2. Numeric: the largest
    norm found over the simplex (Dirichlet draws + SLSQP) for several ``n``.
    """
    p = sp.Symbol("p", positive=True)
    two_point = two_point_jacobian_norm(p)
    critical = sp.solve(sp.diff(two_point, p), p)
    # a two-point norm without a critical point in (0, 1) has no interior maximum: the claim then fails (no crash)
    critical = [c for c in critical if c.is_real and 0 < c < 1]
    peak = sp.nsimplify(max(two_point.subs(p, c) for c in critical)) if critical else None
    form, variance = jacobian_quadratic_form(3)
    identity = sp.expand(form - variance) == 0
    rng = ctx.rng("softmax-jacobian-norm")
    rows = []
    for n in (2, 3, 8) if ctx.quick else (2, 3, 5, 8, 16):
        best = max_jacobian_norm(n, rng, samples=300 if ctx.quick else 1000, restarts=2 if ctx.quick else 4)
        top2 = np.sort(best.point)[-2:]
        rows.append({"n": n, "largest norm found": best.value, "evaluations": best.evaluations,
                     "two largest weights at the maximum": top2.tolist(),
                     "uniform a: norm 1/n": 1 / n})
    found = max(r["largest norm found"] for r in rows)
    bound = exact("claimed_bound", claimed_bound, floats="rational")
    below = found <= float(bound) + 1e-12
    attained = peak is not None and sp.simplify(peak - bound) == 0 and abs(found - float(bound)) <= 1e-6
    two_point_at = all(abs(r["two largest weights at the maximum"][0] - 0.5) < 1e-3 for r in rows)
    facts = {"vᵀJv = Var_a(v) (exact)": identity, "largest norm found ≤ the claimed bound": below,
             "the two-point maximum attains the bound": attained, "the maximum sits at a two-point uniform a": two_point_at}
    samples = ctx.rng("softmax-jacobian-norm", "figure").dirichlet(np.full(3, 0.4), size=1500)

    def figure():
        norms = np.linalg.eigvalsh(np.asarray(softmax_jacobian(samples)))[:, -1]
        return plots.jacobian_norm_figure(samples.max(axis=1), norms, bound=float(bound))

    return Evidence(
        "softmax-jacobian-norm", statement("softmax-jacobian-norm"), verdict(facts),
        method="symbolic proof (variance identity, two-point eigenvalues) + numeric search (Dirichlet + SLSQP)",
        summary=(f"vᵀJv {'= Var_a(v) (exact)' if identity else '≠ Var_a(v)'}; two-point norm {two_point}, "
                 + (f"maximum {peak} at p = {', '.join(map(str, critical))}" if critical
                    else "no critical point in (0, 1), so no interior maximum")
                 + f"; largest norm found {found:.12f} for n up to {rows[-1]['n']} "
                 f"({'≤' if below else '>'} the claimed {bound}), "
                 + ("at a two-point uniform a" if two_point_at else "NOT at a two-point uniform a") + failed_clause(facts)),
        conditions=("the bound is over the whole simplex: it is reached only at a = (1/2, 1/2, 0, …) up to order; at the "
                    "uniform a the norm is 1/n, and at a one-hot a (saturated softmax) it is 0",
                    "Popoviciu's inequality Var ≤ (max − min)²/4 and (max − min)² ≤ 2‖v‖² give the bound for every n"),
        details={"variance identity (n = 3)": identity, "two-point norm": two_point, "its maximum": peak,
                 "search": rows, "claimed bound": bound},
        equations=(("the quadratic form is a variance", sp.Eq(tex(r"v^\top (\operatorname{diag}(a) - a a^\top) v"),
                                                           tex(r"\sum_i a_i v_i^2 - \left(\sum_i a_i v_i\right)^2"),
                                                           evaluate=False)),
                   ("two-point distribution a = (p, 1 − p)", sp.Eq(tex(r"\|J\|_2"), two_point, evaluate=False)),
                   *((("its maximum", sp.Eq(tex(r"\max_p \|J\|_2"), peak, evaluate=False)),) if peak is not None
                     else ())),
        figures={"jacobian-norm": figure},
    )


# ----------------------------------------------------------------------------- entropy-lower-bound

def check_entropy_lower_bound(ctx: CheckContext, *, claimed_bound=None) -> Evidence:
    """Zhai et al. Thm 3.1: the bound equals the entropy of its minimiser (exact, symbolic σ, T), and no search beats it.

    ``claimed_bound(sigma, T)`` is the asserted bound as a SymPy expression (default
    :func:`attnsym.symbolic.softmax_limits.entropy_lower_bound`). A bound that is too high is
    beaten by the minimiser; one that is too low is not tight.
    """
    bound_of = entropy_lower_bound if claimed_bound is None else claimed_bound
    sigma = sp.Symbol("sigma", positive=True)
    T = sp.Symbol("T", positive=True, integer=True)
    top, rest = entropy_minimiser(sigma, T)
    norm_ok = sp.simplify(top**2 + (T - 1) * rest**2 - sigma**2) == 0
    gap = sp.simplify(top - rest)
    beta = sp.exp(-gap)
    a_top, a_rest = 1 / (1 + (T - 1) * beta), beta / (1 + (T - 1) * beta)
    H_min = sp.log(1 + (T - 1) * beta) + (T - 1) * a_rest * gap  # −Σ a log a with log a_top = −log(1 + (T−1)β)
    # the same entropy from the definition, exactly, at concrete T and at σ where β = 1/r is rational
    tight_exact = []
    for t, r in ((2, 2), (3, 10), (5, 2)) if ctx.quick else ((2, 2), (2, 10), (3, 2), (3, 10), (5, 2), (5, 10)):
        s_exact = sp.log(r) * sp.sqrt(sp.Rational(t - 1, t))
        z_top, z_rest = entropy_minimiser(s_exact, t)
        w = [sp.exp(z_top)] + [sp.exp(z_rest)] * (t - 1)
        a = [sp.radsimp(sp.simplify(wi / sum(w))) for wi in w]
        diff = sp.expand_log(entropy(a), force=True) - sp.expand_log(bound_of(s_exact, t), force=True)
        tight_exact.append(sp.simplify(diff) == 0)
    general = sp.simplify(H_min - bound_of(sigma, T)) == 0
    collapse = sp.limit(entropy_lower_bound(sigma, 16), sigma, sp.oo)
    rng = ctx.rng("entropy-lower-bound")
    n_keys = 16
    sigmas = (0.5, 5.0, 10.0) if ctx.quick else (0.5, 1.0, 2.0, 5.0, 10.0, 20.0)
    rows = []
    for s in sigmas:
        b = float(bound_of(s, n_keys))
        found = min_entropy_on_sphere(n_keys, s, rng, samples=300 if ctx.quick else 1500, restarts=1 if ctx.quick else 3)
        z_top, z_rest = (float(v) for v in entropy_minimiser(s, n_keys))
        at_minimiser = float(softmax_entropy(np.array([z_top] + [z_rest] * (n_keys - 1))))
        rows.append({"σ": s, "bound": b, "entropy at the minimiser": at_minimiser, "least entropy found": found.value,
                     "search ≥ bound": found.value >= b - 1e-9, "minimiser reaches bound": abs(at_minimiser - b) <= 1e-9})
    facts = {"the minimiser has ‖z‖ = σ (exact)": norm_ok, "its entropy = the bound (symbolic T)": general,
             "its entropy = the bound at exact points": all(tight_exact),
             "no search point below the bound": all(r["search ≥ bound"] for r in rows),
             "the float64 minimiser reaches the bound": all(r["minimiser reaches bound"] for r in rows)}
    bound_numeric = sp.lambdify((sigma, T), entropy_lower_bound(sigma, T), "numpy")

    def figure():
        grid = np.linspace(0.0, 25.0, 101)
        sigmas_fig = (0.5, 1, 2, 3, 5, 8, 12, 16, 20, 25)
        draws = {float(s): entropy_on_sphere(n_keys, float(s), ctx.rng("entropy-lower-bound", "figure", float(s)), 400)
                 for s in sigmas_fig}
        return plots.entropy_bound_figure(grid, bound_numeric(grid, n_keys), draws, n_keys=n_keys)

    return Evidence(
        "entropy-lower-bound", statement("entropy-lower-bound"), verdict(facts),
        method="symbolic proof (minimiser's entropy = bound, symbolic σ and T) + numeric search (random sphere + BFGS)",
        summary=(f"the logits (σ√((T−1)/T), −σ/√(T(T−1)), …) have ‖z‖ {'= σ' if norm_ok else '≠ σ'} and entropy "
                 + ("equal to the bound exactly (symbolic T and at "
                    f"{len(tight_exact)} exact points)" if general and all(tight_exact)
                    else f"NOT equal to the bound (symbolic: {general}; exact points equal: {sum(tight_exact)} of "
                    f"{len(tight_exact)})")
                 + f"; {sum(not r['search ≥ bound'] for r in rows)} search points below it for T = {n_keys}, "
                 f"σ = {sigmas[0]:g}…{sigmas[-1]:g} (least margin "
                 f"{min(r['least entropy found'] - r['bound'] for r in rows):+.2e}); bound → {collapse} "
                 f"as σ → ∞ (entropy collapse); at σ = {sigmas[-1]:g} the bound is {rows[-1]['bound']:.2e}"
                 + failed_clause(facts)),
        conditions=("logits bounded in ℓ2 norm (‖z‖₂ ≤ σ); for attention σ is governed by the spectral norms of W_Q, "
                    "W_K and the token norms, which is why σReparam rescales the weights",
                    "the minimum over the ball lies on the sphere ‖z‖ = σ because the bound decreases in σ",
                    "tight: reached by one logit against T − 1 equal ones; the search is numeric (a local method from "
                    "many starts), the tightness exact"),
        details={"‖minimiser‖ = σ (exact)": norm_ok, "entropy of the minimiser = bound (symbolic T)": general,
                 "entropy from the definition = bound at T ∈ {2, 3, 5}, β = 1/r rational": tight_exact,
                 "limit σ → ∞ (T = 16)": collapse, "search": rows},
        equations=(("the bound (β = exp(−σ√(T/(T−1))))",
                    sp.Eq(tex(r"H_{\min}(\sigma, T)"), entropy_lower_bound(sigma, T), evaluate=False)),
                   ("its minimiser: one logit against T − 1 equal ones",
                    sp.Eq(tex("(z_1, z_{j>1})"), sp.Tuple(top, rest), evaluate=False)),
                   ("weights at the minimiser", sp.Eq(tex("(a_1, a_{j>1})"), sp.Tuple(a_top, a_rest), evaluate=False))),
        figures={"entropy-bound": figure},
    )


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (
    builtin_claim("entropy-lower-bound", check_entropy_lower_bound),
    builtin_claim("softmax-jacobian-norm", check_softmax_jacobian_norm),
    builtin_claim("dispersion", check_dispersion),
)
