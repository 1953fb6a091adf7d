"""Claims about the building blocks: ``softmax-jacobian``, ``sinusoidal-positions``, ``gelu``.

Each check pairs the symbolic layer (exact SymPy) with its numeric twin and an independent
reference (finite differences, SciPy's normal CDF, trigonometric identities).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import sympy as sp

from ... import plots
from ..._exact import exact
from ...studies import gelu as gelu_study
from ...studies import sinusoidal, softmax_jacobian
from ...symbolic import gelu, gelu_tanh
from ...testing import TOLERANCES
from .._evidence import CheckContext, Evidence, tex
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = ["check_gelu", "check_sinusoidal_positions", "check_softmax_jacobian"]


# ----------------------------------------------------------------------------- softmax-jacobian
JACOBIAN_STATEMENT = statement("softmax-jacobian")
#: the largest ``max|J − FD|`` accepted (central differences with h = 1e-5 are good to ~1e-10)
FD_ATOL = 1e-8


def check_softmax_jacobian(ctx: CheckContext, *, claimed=None) -> Evidence:
    """Symbolic proof for small n, rank n − 1, and agreement with central finite differences.

    A verdict on :func:`attnsym.studies.softmax_jacobian.study`. ``claimed(a)`` is the Jacobian
    formula under test, applied to a SymPy column ``a`` and to a NumPy vector ``a`` alike (default
    ``diag(a) − a aᵀ``); a wrong formula fails both the proof and the finite differences.
    """
    r = softmax_jacobian.study(partial(ctx.rng, "softmax-jacobian"), quick=ctx.quick,
                               claimed=softmax_jacobian.closed_form if claimed is None else claimed)
    atol = TOLERANCES["float64"].atol
    facts = {"∂softmax/∂z = diag(a) − a aᵀ, rank n − 1, rows sum to 0 (exact)": all(
                 p.equal and p.rank == p.n - 1 and p.row_sums_zero for p in r.proofs),
             "central differences agree": all(w.fd_error <= FD_ATOL and w.rank == w.n - 1 and w.null <= atol
                                              for w in r.rows),
             "symbolic Jacobian = numeric twin": all(w.twin_excess is None or w.twin_excess <= atol for w in r.rows)}
    sizes, two, three = [p.n for p in r.proofs], r.proofs[0], r.proofs[1]
    z, k, n = sp.Symbol("z_i"), sp.Symbol("z_k"), sp.Symbol("n")
    return Evidence(
        claim="softmax-jacobian",
        statement=JACOBIAN_STATEMENT,
        verdict=verdict(facts),
        method=f"symbolic proof (n ≤ {sizes[-1]}) + finite differences (h = {softmax_jacobian.FD_STEP:g}, atol = {FD_ATOL:g})",
        summary=(f"∂softmax/∂z = diag(a) − a aᵀ proven for n = {', '.join(map(str, sizes))}; rank n − 1 (kernel 1); "
                 f"central differences agree to {max(w.fd_error for w in r.rows):.1e} for n up to {r.rows[-1].n}"
                 + failed_clause(facts)),
        conditions=("rank n − 1 holds for every a in the open simplex (all a_i > 0); a one-hot a (saturated softmax) "
                    "gives the zero matrix",),
        details={"symbolic proofs": list(r.proofs), "finite differences": list(r.rows)},
        equations=(
            ("softmax", sp.Eq(tex("a_i"), sp.exp(z) / sp.Sum(sp.exp(k), (sp.Symbol("k"), 1, n)), evaluate=False)),
            ("derived by differentiation, n = 2", sp.Eq(tex(r"\partial a / \partial z"), two.derived, evaluate=False)),
            ("closed form, n = 2", sp.Eq(tex(r"\operatorname{diag}(a) - a a^\top"), two.closed_form, evaluate=False)),
            ("leading minor on the simplex, n = 3 (nonzero: rank n − 1)",
             sp.Eq(tex(r"\det J_{[1:2, 1:2]}"), three.minor, evaluate=False)),
        ),
    )


# ----------------------------------------------------------------------------- sinusoidal-positions
POSITIONS_STATEMENT = statement("sinusoidal-positions")


def check_sinusoidal_positions(ctx: CheckContext, *, claimed_ratio=None) -> Evidence:
    """Symbolic PE, bounded, geometric frequencies, PE(p + k) = R_k PE(p) per pair (proved for symbolic p, k).

    A verdict on :func:`attnsym.studies.sinusoidal.study`. ``claimed_ratio`` is the asserted ratio
    of consecutive frequencies (default ``base^(-2/d_model)``).
    """
    r = sinusoidal.study(quick=ctx.quick)
    base, proof, d_sym = r.base, r.proof, sinusoidal.SYMBOLIC_SIZE[1]
    expected = (sp.Integer(base) ** sp.Rational(-2, d_sym) if claimed_ratio is None
                else sp.nsimplify(exact("claimed_ratio", claimed_ratio)))
    geometric = all(sp.simplify(x - expected) == 0 for x in r.ratios)
    # positions up to 512: angles up to 512 rad, so the rounding of sin/cos arguments sets the tolerance
    rot_tol = 1e3 * float(np.finfo(float).eps) * r.n
    tol = TOLERANCES["float64"]
    facts: dict[str, bool] = {
             "geometric frequencies (exact)": geometric, "symbolic matrix = the definition": r.matches_definition,
             "bounded in [−1, 1] (exact)": r.bounded, "PE(p + k) = R_k PE(p) (symbolic p, k)": proof.holds,
             "R_k free of p": proof.independent_of_p, "R_k orthogonal": proof.orthogonal,
             "every pair rotates (stacked)": r.stacked, "float64 |PE| ≤ 1": r.largest <= 1.0,
             "float64 rotation": r.rotation_error <= rot_tol, "numeric twin = symbolic": r.twin_error <= tol.atol + tol.rtol}
    return Evidence(
        claim="sinusoidal-positions",
        statement=POSITIONS_STATEMENT,
        verdict=verdict(facts),
        method="symbolic proof (trigonometric identities, symbolic p and k) + numeric twin",
        summary=(f"frequencies ω_i = {base}^(-2i/d) (ratio {expected}); |PE| ≤ 1; PE(p+k) = R_k PE(p) proven "
                 f"for symbolic p, k (R_k orthogonal, free of p); numeric: rotation error {r.rotation_error:.1e} over "
                 f"{r.n} positions, twin error {r.twin_error:.1e}" + failed_clause(facts)),
        conditions=(f"absolute positions from 0, base {base} (AttentionSpec.position_base); for odd d_model the last "
                    "column is an unpaired sine",),
        details={**facts, f"stacked R_k (d = {d_sym}) maps PE(p) to PE(p + k) (symbolic p, k)": r.stacked,
                 "numeric": [{"n": r.n, "d_model": r.d, "max |PE|": r.largest, "max rotation error": r.rotation_error,
                              "tolerance": rot_tol, "symbolic vs numeric twin": r.twin_error}]},
        equations=_positions_equations(r, expected),
        figures={"positions": partial(plots.positional_encoding_figure, r.figure)},
    )


def _positions_equations(r: sinusoidal.SinusoidalResult, ratio: sp.Expr) -> tuple[tuple[str, sp.Basic], ...]:
    p, proof = r.proof.position, r.proof
    omega = p / sp.Symbol("b") ** (2 * sp.Symbol("i") / sp.Symbol("d"))
    return (
        ("even columns", sp.Eq(tex(r"PE_{p, 2i}"), sp.sin(omega), evaluate=False)),
        ("odd columns", sp.Eq(tex(r"PE_{p, 2i+1}"), sp.cos(omega), evaluate=False)),
        (f"symbolic PE, n = 3 rows of d = {sinusoidal.SYMBOLIC_SIZE[1]}", sp.Eq(tex("PE"), r.PE[:3, :], evaluate=False)),
        ("geometric frequencies: ratio of consecutive ω_i", sp.Eq(tex(r"\omega_{i+1}/\omega_i"), ratio, evaluate=False)),
        ("shift by k is a rotation of each (sin, cos) pair, independent of p",
         sp.Eq(sp.MatMul(proof.rotation, proof.pair, evaluate=False), proof.shifted)),
        ("similarity of two positions depends only on their distance (per pair)",
         sp.Eq(tex(r"\langle pe_\omega(p), pe_\omega(p+k)\rangle"), proof.similarity, evaluate=False)),
    )


# ----------------------------------------------------------------------------- gelu
GELU_STATEMENT = statement("gelu")


def check_gelu(ctx: CheckContext, *, claimed_max_error: float = 1e-3) -> Evidence:
    """Symbolic form against the normal CDF, derivative, limits, the tanh approximation's maximum error.

    A verdict on :func:`attnsym.studies.gelu.study`. ``claimed_max_error`` is the asserted bound on
    ``|gelu_tanh − gelu|`` (default 1e-3).
    """
    r = gelu_study.study(quick=ctx.quick)
    proof, tol = r.proof, TOLERANCES["float64"]
    x = proof.x
    facts = {"GELU = x·Φ(x) (exact)": proof.is_x_cdf, "GELU′ = Φ + xφ (exact)": proof.derivative_is_cdf_plus_x_density,
             "limits (exact)": proof.limits_vanish, "numeric twin = x·ndtr(x)": r.twin_error <= 10 * tol.atol,
             "symbolic = numeric": r.symbolic_error <= 10 * tol.atol,
             f"tanh approximation error < {claimed_max_error:g}": r.max_error < claimed_max_error,
             "the peak error confirmed in exact arithmetic": abs(r.exact_at - r.max_error) <= 1e-12}
    return Evidence(
        claim="gelu",
        statement=GELU_STATEMENT,
        verdict=verdict(facts),
        method="symbolic proof (Φ certified by Φ' = φ, Φ(−∞) = 0) + numeric twin vs SciPy + grid refinement of the peak",
        summary=(f"GELU = x·Φ(x) exactly; GELU' = Φ(x) + x φ(x); minimum at x = {float(proof.minimum_at):.4f}; "
                 f"tanh approximation max error {r.max_error:.3e} at x = ±{abs(r.at_x):.4f} (two maxima, the error is "
                 "even in x; checked in exact arithmetic)" + failed_clause(facts)),
        conditions=(f"'approximates' means an absolute error below {claimed_max_error:g} everywhere (maximum "
                    f"{r.max_error:.2e}); the relative error is larger for x → −∞ where both tend to 0",),
        details={**facts, "derivative": proof.derivative, "limits (GELU − x at +∞, GELU at −∞)": list(proof.limits),
                 "minimum at x": float(proof.minimum_at), "minimum value": float(gelu(proof.minimum_at)),
                 "numeric twin vs x·ndtr(x), max error": r.twin_error, "symbolic vs numeric, max error": r.symbolic_error,
                 "tanh approximation, max |error|": r.max_error, "at x": r.at_x,
                 "same error in 30-digit symbolic arithmetic": r.exact_at},
        equations=(
            ("exact", sp.Eq(tex(r"\operatorname{GELU}(x)"), gelu(x), evaluate=False)),
            ("as x Φ(x) with the standard normal CDF", sp.Eq(tex(r"\operatorname{GELU}(x)"), x * proof.cdf, evaluate=False)),
            ("derivative", sp.Eq(tex(r"\operatorname{GELU}'(x)"), proof.derivative, evaluate=False)),
            ("tanh approximation", sp.Eq(tex(r"\operatorname{GELU}_{\tanh}(x)"), gelu_tanh(x), evaluate=False)),
            ("maximum error of the approximation",
             sp.Eq(tex(r"\max_x |\operatorname{GELU}_{\tanh} - \operatorname{GELU}|"), sp.Float(r.max_error, 4),
                   evaluate=False)),
        ),
        figures={"gelu": partial(plots.gelu_figure, *r.figure)},
    )


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (
    builtin_claim("softmax-jacobian", check_softmax_jacobian),
    builtin_claim("sinusoidal-positions", check_sinusoidal_positions),
    builtin_claim("gelu", check_gelu),
)
