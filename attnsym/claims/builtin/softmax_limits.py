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
from functools import partial

import sympy as sp

from ... import plots
from ..._exact import exact
from ...studies import softmax_limits as limits
from ...studies._streams import Streams
from ...symbolic.softmax_limits import dispersion_half_point, entropy_lower_bound
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

    A verdict on :func:`attnsym.studies.softmax_limits.dispersion_study`. ``claimed`` maps ``n`` to
    the asserted top weight (3 significant digits), ``claimed_limit`` is the asserted limit.
    """
    claimed = dict(DISPERSION_EXAMPLE if claimed is None else claimed)
    r = limits.dispersion_study(partial(ctx.rng, "dispersion"), quick=ctx.quick, gap=gap, sizes=tuple(claimed))
    facts = {"limit as claimed (exact)": sp.simplify(r.limit - exact("claimed_limit", claimed_limit,
                                                                     floats="rational")) == 0,
             "claimed values match (3 significant digits)": all(float(f"{w.exact:.3g}") == claimed[w.n] for w in r.rows),
             "numeric top weight = exact": all(math.isclose(w.numeric, w.exact, rel_tol=1e-12) for w in r.rows),
             "random logits never exceed the form": all(r.random_below.values())}
    half = float(r.half_point)
    return Evidence(
        "dispersion", statement("dispersion"), verdict(facts),
        method="symbolic proof (exact form, limit) + numeric check (softmax up to n = 10⁵, random logits vs the form)",
        summary=(f"top weight 1/(1 + (n − 1)e^(−Δ)) → {r.limit} as n → ∞; Δ = {gap:g}: "
                 + ", ".join(f"{w.exact:.3g} at n = {w.n}" for w in r.rows)
                 + f"; falls below 1/2 at n = 1 + e^Δ ≈ {half:.0f}" + failed_clause(facts)),
        conditions=("the logit gap Δ is fixed while n grows (logits bounded independently of n); a gap growing like "
                    "log n keeps the top weight away from 0",
                    f"the form is the largest weight any key can get when all logits lie in an interval of width Δ; "
                    f"a gap stops being 'sharp' (top weight < 1/2) beyond n = 1 + e^Δ ({half:.1f} for Δ = {gap:g})"),
        details={"rows": list(r.rows), "claimed": claimed, "limit": r.limit, "half point n = 1 + e^Δ": r.half_point,
                 "random logits in [0, Δ] never exceed the form": r.random_below},
        equations=(("top weight, one logit Δ above n − 1 equal ones", sp.Eq(tex(r"a_{\max}"), r.top, evaluate=False)),
                   ("its limit as n grows", sp.Eq(tex(r"\lim_{n\to\infty} a_{\max}"), r.limit, evaluate=False)),
                   ("the top weight falls to 1/2 at", sp.Eq(tex("n_{1/2}"), dispersion_half_point(r.Delta),
                                                            evaluate=False))),
        figures={"dispersion": partial(plots.dispersion_figure, r.curve_n.tolist(), r.curves, [w.n for w in r.rows],
                                       [w.exact for w in r.rows], gap=float(gap))},
    )


# ----------------------------------------------------------------------------- softmax-jacobian-norm

def check_softmax_jacobian_norm(ctx: CheckContext, *, claimed_bound: float = 0.5) -> Evidence:
    """``‖diag(a) − a aᵀ‖₂ ≤ claimed_bound``, attained: exact two-point analysis, variance identity, numeric search.

    A verdict on :func:`attnsym.studies.softmax_limits.jacobian_norm_study`. The proof: ``vᵀJv`` is
    the variance of ``v`` under ``a``, at most ``(max v − min v)²/4 ≤ ‖v‖²/2`` (Popoviciu); equality
    needs ``a`` to put 1/2 on two keys.
    """
    r = limits.jacobian_norm_study(partial(ctx.rng, "softmax-jacobian-norm"), quick=ctx.quick)
    bound = exact("claimed_bound", claimed_bound, floats="rational")
    below = r.largest <= float(bound) + 1e-12
    two_point_at = all(abs(w.top_two[0] - 0.5) < 1e-3 for w in r.rows)
    facts = {"vᵀJv = Var_a(v) (exact)": r.variance_identity, "largest norm found ≤ the claimed bound": below,
             "the two-point maximum attains the bound": (r.peak is not None and sp.simplify(r.peak - bound) == 0
                                                         and abs(r.largest - float(bound)) <= 1e-6),
             "the maximum sits at a two-point uniform a": two_point_at}
    return Evidence(
        "softmax-jacobian-norm", statement("softmax-jacobian-norm"), verdict(facts),
        method="symbolic proof (variance identity, two-point eigenvalues) + numeric search (Dirichlet + SLSQP)",
        summary=(f"vᵀJv {'= Var_a(v) (exact)' if r.variance_identity else '≠ Var_a(v)'}; two-point norm {r.two_point}, "
                 + (f"maximum {r.peak} at p = {', '.join(map(str, r.critical))}" if r.critical
                    else "no critical point in (0, 1), so no interior maximum")
                 + f"; largest norm found {r.largest:.12f} for n up to {r.rows[-1].n} "
                 f"({'≤' if below else '>'} the claimed {bound}), "
                 + ("at a two-point uniform a" if two_point_at else "NOT at a two-point uniform a") + failed_clause(facts)),
        conditions=("the bound is over the whole simplex: it is reached only at a = (1/2, 1/2, 0, …) up to order; at the "
                    "uniform a the norm is 1/n, and at a one-hot a (saturated softmax) it is 0",
                    "Popoviciu's inequality Var ≤ (max − min)²/4 and (max − min)² ≤ 2‖v‖² give the bound for every n"),
        details={"variance identity (n = 3)": r.variance_identity, "two-point norm": r.two_point, "its maximum": r.peak,
                 "search": list(r.rows), "claimed bound": bound},
        equations=(("the quadratic form is a variance", sp.Eq(tex(r"v^\top (\operatorname{diag}(a) - a a^\top) v"),
                                                           tex(r"\sum_i a_i v_i^2 - \left(\sum_i a_i v_i\right)^2"),
                                                           evaluate=False)),
                   ("two-point distribution a = (p, 1 − p)", sp.Eq(tex(r"\|J\|_2"), r.two_point, evaluate=False)),
                   *((("its maximum", sp.Eq(tex(r"\max_p \|J\|_2"), r.peak, evaluate=False)),) if r.peak is not None
                     else ())),
        figures={"jacobian-norm": partial(plots.jacobian_norm_figure, r.samples.max(axis=1).tolist(), r.norms.tolist(),
                                                  bound=float(bound))},
    )


# ----------------------------------------------------------------------------- entropy-lower-bound

def check_entropy_lower_bound(ctx: CheckContext, *, claimed_bound=None) -> Evidence:
    """Zhai et al. Thm 3.1: the bound equals the entropy of its minimiser (exact, symbolic σ, T), and no search beats it.

    A verdict on :func:`attnsym.studies.softmax_limits.entropy_bound_study`. ``claimed_bound(sigma, T)``
    is the asserted bound as a SymPy expression (default
    :func:`attnsym.symbolic.softmax_limits.entropy_lower_bound`). A bound that is too high is beaten
    by the minimiser; one that is too low is not tight.
    """
    bound_of = entropy_lower_bound if claimed_bound is None else claimed_bound
    rng = partial(ctx.rng, "entropy-lower-bound")
    r = limits.entropy_bound_study(rng, quick=ctx.quick)
    tight = [sp.simplify(sp.expand_log(x.entropy, force=True) - sp.expand_log(bound_of(x.sigma, x.T), force=True)) == 0
             for x in r.points]
    general = sp.simplify(r.H_min - bound_of(r.sigma, r.T)) == 0
    bounds = [float(bound_of(w.sigma, limits.ENTROPY_KEYS)) for w in r.rows]
    margins = [w.least_found - b for w, b in zip(r.rows, bounds, strict=True)]
    facts = {"the minimiser has ‖z‖ = σ (exact)": r.norm_is_sigma, "its entropy = the bound (symbolic T)": general,
             "its entropy = the bound at exact points": all(tight),
             "no search point below the bound": all(m >= -1e-9 for m in margins),
             "the float64 minimiser reaches the bound": all(abs(w.at_minimiser - b) <= 1e-9
                                                            for w, b in zip(r.rows, bounds, strict=True))}
    return Evidence(
        "entropy-lower-bound", statement("entropy-lower-bound"), verdict(facts),
        method="symbolic proof (minimiser's entropy = bound, symbolic σ and T) + numeric search (random sphere + BFGS)",
        summary=(f"the logits (σ√((T−1)/T), −σ/√(T(T−1)), …) have ‖z‖ {'= σ' if r.norm_is_sigma else '≠ σ'} and entropy "
                 + (f"equal to the bound exactly (symbolic T and at {len(tight)} exact points)" if general and all(tight)
                    else f"NOT equal to the bound (symbolic: {general}; exact points equal: {sum(tight)} of {len(tight)})")
                 + f"; {sum(m < -1e-9 for m in margins)} search points below it for T = {limits.ENTROPY_KEYS}, "
                 f"σ = {r.rows[0].sigma:g}…{r.rows[-1].sigma:g} (least margin {min(margins):+.2e}); bound → {r.collapse} "
                 f"as σ → ∞ (entropy collapse); at σ = {r.rows[-1].sigma:g} the bound is {bounds[-1]:.2e}"
                 + failed_clause(facts)),
        conditions=ENTROPY_CONDITIONS,
        details={"‖minimiser‖ = σ (exact)": r.norm_is_sigma, "entropy of the minimiser = bound (symbolic T)": general,
                 "entropy from the definition = bound at T ∈ {2, 3, 5}, β = 1/r rational": tight,
                 "limit σ → ∞ (T = 16)": r.collapse, "search": list(r.rows), "claimed bound at each σ": bounds},
        equations=(("the bound (β = exp(−σ√(T/(T−1))))",
                    sp.Eq(tex(r"H_{\min}(\sigma, T)"), entropy_lower_bound(r.sigma, r.T), evaluate=False)),
                   ("its minimiser: one logit against T − 1 equal ones",
                    sp.Eq(tex("(z_1, z_{j>1})"), sp.Tuple(r.top, r.rest), evaluate=False)),
                   ("weights at the minimiser", sp.Eq(tex("(a_1, a_{j>1})"), sp.Tuple(*r.weights), evaluate=False))),
        figures={"entropy-bound": partial(_entropy_figure, rng)},
    )


def _entropy_figure(rng: Streams):
    grid, bound, draws = limits.entropy_figure_draws(rng)
    return plots.entropy_bound_figure(grid.tolist(), bound.tolist(), draws, n_keys=limits.ENTROPY_KEYS)


ENTROPY_CONDITIONS = (
    "logits bounded in ℓ2 norm (‖z‖₂ ≤ σ); for attention σ is governed by the spectral norms of W_Q, "
    "W_K and the token norms, which is why σReparam rescales the weights",
    "the minimum over the ball lies on the sphere ‖z‖ = σ because the bound decreases in σ",
    "tight: reached by one logit against T − 1 equal ones; the search is numeric (a local method from "
    "many starts), the tightness exact")


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (
    builtin_claim("entropy-lower-bound", check_entropy_lower_bound),
    builtin_claim("softmax-jacobian-norm", check_softmax_jacobian_norm),
    builtin_claim("dispersion", check_dispersion),
)
