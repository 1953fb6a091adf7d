"""Claims about the building blocks: ``softmax-jacobian``, ``sinusoidal-positions``, ``gelu``.

Each check pairs the symbolic layer (exact SymPy) with its numeric twin and an independent
reference (finite differences, SciPy's normal CDF, trigonometric identities).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ... import plots
from ..._exact import exact
from ...numeric import gelu as num_gelu
from ...numeric import gelu_tanh as num_gelu_tanh
from ...numeric import sinusoidal_positions as num_pe
from ...numeric import sinusoidal_shift as num_shift
from ...numeric import softmax
from ...numeric import softmax_jacobian as num_jacobian
from ...spec import DEFAULT_POSITION_BASE
from ...symbolic import gelu, gelu_tanh, prove_gelu, prove_sinusoidal_shift
from ...symbolic import sinusoidal_positions as sym_pe
from ...symbolic import sinusoidal_shift as sym_shift
from ...symbolic.jacobians import derive_softmax_jacobian, softmax_output_symbols
from ...symbolic.jacobians import softmax_jacobian as sym_jacobian
from ...testing import TOLERANCES
from .._evidence import CheckContext, Evidence, tex
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = ["check_gelu", "check_sinusoidal_positions", "check_softmax_jacobian"]


# ----------------------------------------------------------------------------- softmax-jacobian
JACOBIAN_STATEMENT = statement("softmax-jacobian")
#: central differences with step h: truncation O(h^2) + rounding O(eps/h); h = 1e-5 gives ~1e-10
FD_STEP = 1e-5
FD_ATOL = 1e-8


def check_softmax_jacobian(ctx: CheckContext, *, claimed=None) -> Evidence:
    """Symbolic proof for small n, rank n − 1, and agreement with central finite differences.

    ``claimed(a)`` is the Jacobian formula under test, applied to a SymPy column ``a`` and to a
    NumPy vector ``a`` alike (default ``diag(a) − a aᵀ``); a wrong formula fails both checks.
    """
    def default(a):
        if isinstance(a, np.ndarray):
            return np.diag(a) - np.outer(a, a)
        return sp.diag(*a) - a * a.T

    claimed = default if claimed is None else claimed

    sizes = (2, 3) if ctx.quick else (2, 3, 4)
    proofs = []
    for n in sizes:
        jac = derive_softmax_jacobian(n)
        claimed_here = sp.Matrix(claimed(sp.Matrix(jac.softmax)))  # the claimed formula at a = softmax(z)
        equal = all(sp.cancel(sp.together(u - v)) == 0 for u, v in zip(jac.derived, claimed_here, strict=True))
        # the rank computed, not assumed: diag(a) − a aᵀ at an exact rational point of the open simplex
        a_syms = sorted(jac.closed_form.free_symbols, key=lambda v: v.name)
        a_point = {v: sp.Rational(2 * k + 1, n * n) for k, v in enumerate(a_syms)}  # Σ (2k + 1) = n², all > 0
        rank = sp.Matrix(jac.closed_form).xreplace(a_point).rank()
        proofs.append({"n": n, "derived = diag(a) − a aᵀ": jac.proven and equal, "rank": rank,
                       "row sums zero": all(v == 0 for v in jac.row_sums),
                       "leading minor": jac.minor_determinant})
    symbolic_ok = all(p["derived = diag(a) − a aᵀ"] and p["rank"] == p["n"] - 1 and p["row sums zero"] for p in proofs)

    rng = ctx.rng("softmax-jacobian")
    tol = TOLERANCES["float64"]
    fd_rows = []
    pairing_ok = True
    for n in (2, 5, 16) if ctx.quick else (2, 5, 16, 64):
        z = rng.standard_normal(n) * 2.0
        a = np.asarray(softmax(z))
        J = np.asarray(claimed(a), dtype=float)
        fd = np.empty((n, n))
        for j in range(n):
            e = np.zeros(n)
            e[j] = FD_STEP
            fd[:, j] = (np.asarray(softmax(z + e)) - np.asarray(softmax(z - e))) / (2 * FD_STEP)
        err = float(np.max(np.abs(J - fd)))
        rank = int(np.linalg.matrix_rank(J, tol=1e-10))
        null = float(np.max(np.abs(J @ np.ones(n))))
        row = {"n": n, "max |J − FD|": err, "numeric rank": rank, "max |J·1|": null,
               "agrees": err <= FD_ATOL and rank == n - 1 and null <= tol.atol}
        if n <= 4:  # the symbolic closed form, evaluated at a, against the numeric twin
            S = sym_jacobian(n)  # the twins: symbolic closed form and numeric function of the library
            values = {sym: float(a[i]) for i, sym in enumerate(softmax_output_symbols(n))}  # a_1 is a[0]
            sym_num = np.array(S.xreplace(values).evalf(), dtype=float)
            twin = np.asarray(num_jacobian(a))
            row["max |symbolic − numeric twin|"] = float(np.max(np.abs(sym_num - twin)))
            pairing_ok &= bool(np.allclose(sym_num, twin, rtol=tol.rtol, atol=tol.atol))
        fd_rows.append(row)
    facts = {"∂softmax/∂z = diag(a) − a aᵀ, rank n − 1, rows sum to 0 (exact)": symbolic_ok,
             "central differences agree": all(r["agrees"] for r in fd_rows),
             "symbolic Jacobian = numeric twin": pairing_ok}
    jac2 = derive_softmax_jacobian(2)
    worst = max(r["max |J − FD|"] for r in fd_rows)
    return Evidence(
        claim="softmax-jacobian",
        statement=JACOBIAN_STATEMENT,
        verdict=verdict(facts),
        method=f"symbolic proof (n ≤ {sizes[-1]}) + finite differences (h = {FD_STEP:g}, atol = {FD_ATOL:g})",
        summary=(f"∂softmax/∂z = diag(a) − a aᵀ proven for n = {', '.join(map(str, sizes))}; rank n − 1 (kernel 1); "
                 f"central differences agree to {worst:.1e} for n up to {fd_rows[-1]['n']}" + failed_clause(facts)),
        conditions=("rank n − 1 holds for every a in the open simplex (all a_i > 0); a one-hot a (saturated softmax) "
                    "gives the zero matrix",),
        details={"symbolic proofs": proofs, "finite differences": fd_rows},
        equations=(
            ("softmax", sp.Eq(tex("a_i"), sp.exp(sp.Symbol("z_i")) / sp.Sum(sp.exp(sp.Symbol("z_k")), (sp.Symbol("k"), 1,
                                                                                                     sp.Symbol("n"))),
                              evaluate=False)),
            ("derived by differentiation, n = 2", sp.Eq(tex(r"\partial a / \partial z"), jac2.derived, evaluate=False)),
            ("closed form, n = 2", sp.Eq(tex(r"\operatorname{diag}(a) - a a^\top"), jac2.closed_form, evaluate=False)),
            ("leading minor on the simplex, n = 3 (nonzero: rank n − 1)",
             sp.Eq(tex(r"\det J_{[1:2, 1:2]}"), derive_softmax_jacobian(3).minor_determinant, evaluate=False)),
        ),
    )


# ----------------------------------------------------------------------------- sinusoidal-positions
POSITIONS_STATEMENT = statement("sinusoidal-positions")


def check_sinusoidal_positions(ctx: CheckContext, *, claimed_ratio=None) -> Evidence:
    """Symbolic PE, bounded, geometric frequencies, PE(p + k) = R_k PE(p) per pair (proved for symbolic p, k).

    ``claimed_ratio`` is the asserted ratio of consecutive frequencies (default ``base^(-2/d_model)``).
    """
    base = DEFAULT_POSITION_BASE
    n_sym, d_sym = 6, 8
    PE = sym_pe(n_sym, d_sym, base)
    # frequencies read off the symbolic matrix: row 1 holds sin(omega_i), cos(omega_i)
    omegas = [PE[1, 2 * i].args[0] if PE[1, 2 * i] != 0 else sp.Integer(0) for i in range(d_sym // 2)]
    ratios = [sp.nsimplify(omegas[i + 1] / omegas[i]) for i in range(len(omegas) - 1)]
    expected_ratio = sp.Integer(base) ** sp.Rational(-2, d_sym) if claimed_ratio is None else sp.nsimplify(
        exact("claimed_ratio", claimed_ratio))
    geometric = all(sp.simplify(r - expected_ratio) == 0 for r in ratios)
    matches_definition = all(
        sp.simplify(PE[p, c] - (sp.sin if c % 2 == 0 else sp.cos)(p * omegas[c // 2])) == 0
        for p in range(n_sym) for c in range(d_sym))
    bounded_exact = all(abs(float(v)) <= 1 for v in PE)

    # the rotation, proved for symbolic p, k, omega: R_k(omega) [sin, cos](omega p) = [sin, cos](omega (p + k))
    proof = prove_sinusoidal_shift()
    rotation_proved, independent_of_p, orthogonal = proof.holds, proof.independent_of_p, proof.orthogonal
    p = proof.position
    # and the stacked R_k (every pair of width d_sym) maps PE(p) to PE(p + k), again for symbolic p and k
    k = proof.shift
    stacked = sym_shift(k, d_sym, base) * sym_pe(1, d_sym, base, offset=p).T - sym_pe(1, d_sym, base, offset=p + k).T
    stacked_ok = all(sp.expand(v, trig=True) == 0 for v in stacked)

    # numeric twin: bounded; the block-diagonal R_k maps row p to row p + k for every p
    tol = TOLERANCES["float64"]
    n_num, d_num = (128, 32) if ctx.quick else (512, 128)
    P = np.asarray(num_pe(n_num, d_num, base))
    twin_err = float(np.max(np.abs(np.asarray(num_pe(n_sym, d_sym, base)) - np.array(PE.evalf(), dtype=float))))
    rot_err = 0.0
    for shift in (1, 7, 50):
        pred = P[:-shift] @ np.asarray(num_shift(shift, d_num, base)).T  # (n - k, d): R_k applied to every row p
        rot_err = max(rot_err, float(np.max(np.abs(pred - P[shift:]))))
    # positions up to 512: angles up to 512 rad, so the rounding of sin/cos arguments sets the tolerance
    rot_tol = 1e3 * np.finfo(float).eps * n_num
    facts = {"geometric frequencies (exact)": bool(geometric), "symbolic matrix = the definition": matches_definition,
             "bounded in [−1, 1] (exact)": bounded_exact, "PE(p + k) = R_k PE(p) (symbolic p, k)": rotation_proved,
             "R_k free of p": independent_of_p, "R_k orthogonal": orthogonal, "every pair rotates (stacked)": stacked_ok,
             "float64 |PE| ≤ 1": float(np.max(np.abs(P))) <= 1.0, "float64 rotation": bool(rot_err <= rot_tol),
             "numeric twin = symbolic": twin_err <= tol.atol + tol.rtol}
    equations = (
        ("even columns", sp.Eq(tex(r"PE_{p, 2i}"), sp.sin(p / sp.Symbol("b") ** (2 * sp.Symbol("i") / sp.Symbol("d"))),
                               evaluate=False)),
        ("odd columns", sp.Eq(tex(r"PE_{p, 2i+1}"), sp.cos(p / sp.Symbol("b") ** (2 * sp.Symbol("i") / sp.Symbol("d"))),
                              evaluate=False)),
        (f"symbolic PE, n = 3 rows of d = {d_sym}", sp.Eq(tex("PE"), PE[:3, :], evaluate=False)),
        ("geometric frequencies: ratio of consecutive ω_i", sp.Eq(tex(r"\omega_{i+1}/\omega_i"), expected_ratio, evaluate=False)),
        ("shift by k is a rotation of each (sin, cos) pair, independent of p",
         sp.Eq(sp.MatMul(proof.rotation, proof.pair, evaluate=False), proof.shifted)),
        ("similarity of two positions depends only on their distance (per pair)",
         sp.Eq(tex(r"\langle pe_\omega(p), pe_\omega(p+k)\rangle"), proof.similarity, evaluate=False)),
    )

    def figure():
        return plots.positional_encoding_figure(n=64, d_model=16, base=base)

    return Evidence(
        claim="sinusoidal-positions",
        statement=POSITIONS_STATEMENT,
        verdict=verdict(facts),
        method="symbolic proof (trigonometric identities, symbolic p and k) + numeric twin",
        summary=(f"frequencies ω_i = {base}^(-2i/d) (ratio {expected_ratio}); |PE| ≤ 1; PE(p+k) = R_k PE(p) proven "
                 f"for symbolic p, k (R_k orthogonal, free of p); numeric: rotation error {rot_err:.1e} over "
                 f"{n_num} positions, twin error {twin_err:.1e}" + failed_clause(facts)),
        conditions=(f"absolute positions from 0, base {base} (AttentionSpec.position_base); for odd d_model the last "
                    "column is an unpaired sine",),
        details={"geometric frequencies": geometric, "symbolic matrix matches the definition": matches_definition,
                 "bounded in [-1, 1]": bounded_exact, "rotation proved (symbolic p, k)": rotation_proved,
                 "R_k independent of p": independent_of_p, "R_k orthogonal": orthogonal,
                 f"stacked R_k (d = {d_sym}) maps PE(p) to PE(p + k) (symbolic p, k)": stacked_ok,
                 "numeric": [{"n": n_num, "d_model": d_num, "max |PE|": float(np.max(np.abs(P))),
                              "max rotation error": rot_err, "tolerance": rot_tol,
                              "symbolic vs numeric twin": twin_err}]},
        equations=equations,
        figures={"positions": figure},
    )


# ----------------------------------------------------------------------------- gelu
GELU_STATEMENT = statement("gelu")


def _refine_peak(f, lo: float, hi: float, *, xatol: float, points: int = 201) -> tuple[float, float]:
    """The largest value of ``f`` (vectorised) on ``[lo, hi]`` and where: a grid, narrowed around its best point.

    Each round evaluates ``points`` equally spaced points and keeps the two cells around the
    best one (a 100-fold narrowing), until the interval is narrower than ``xatol``; for a peak
    that is the only maximum of the interval (the grid search bracketed it) this converges to it
    as SciPy's bounded Brent search did, in four rounds here, without importing scipy.optimize.
    """
    while True:
        t = np.linspace(lo, hi, points)
        values = f(t)
        best = int(np.argmax(values))
        if hi - lo <= xatol:
            return float(values[best]), float(t[best])
        lo, hi = t[max(best - 1, 0)], t[min(best + 1, points - 1)]


def check_gelu(ctx: CheckContext, *, claimed_max_error: float = 1e-3) -> Evidence:
    """Symbolic form against the normal CDF, derivative, limits, the tanh approximation's maximum error.

    ``claimed_max_error`` is the asserted bound on ``|gelu_tanh − gelu|`` (default 1e-3).
    """
    # the standard normal CDF certified by its definition (Phi' = phi, Phi(-oo) = 0), GELU = x Phi, GELU', limits
    proof = prove_gelu()
    x, Phi, g, dg = proof.x, proof.cdf, gelu(proof.x), proof.derivative
    form_ok, derivative_ok, limits, limits_ok = (proof.is_x_cdf, proof.derivative_is_cdf_plus_x_density, proof.limits,
                                                 proof.limits_vanish)
    minimum_x = proof.minimum_at

    # numeric twin against SciPy's normal CDF (an independent implementation of Phi); imported here, not at
    # module top: scipy.special is about 0.2 s CPU of importing attnsym.claims
    from scipy.special import ndtr

    grid = np.linspace(-10.0, 10.0, 20001 if ctx.quick else 200001)
    exact = np.asarray(num_gelu(grid))
    twin_err = float(np.max(np.abs(exact - grid * ndtr(grid))))
    sym_points = [-3, -1, sp.Rational(1, 2), 2]
    sym_err = max(abs(float(gelu(v)) - float(num_gelu(np.array([float(v)]))[0])) for v in sym_points)
    # maximum error of the tanh approximation: grid search, then refine around the peak
    diff = np.abs(np.asarray(num_gelu_tanh(grid)) - exact)
    i = int(np.argmax(diff))
    step = grid[1] - grid[0]
    max_err, at_x = _refine_peak(lambda t: np.abs(np.asarray(num_gelu_tanh(t)) - t * ndtr(t)),
                                 grid[i] - step, grid[i] + step, xatol=1e-10)
    sym_at = abs(float((gelu_tanh(sp.Float(at_x, 30)) - gelu(sp.Float(at_x, 30))).evalf(30)))
    tol = TOLERANCES["float64"]
    facts = {"GELU = x·Φ(x) (exact)": form_ok, "GELU′ = Φ + xφ (exact)": derivative_ok, "limits (exact)": limits_ok,
             "numeric twin = x·ndtr(x)": twin_err <= 10 * tol.atol, "symbolic = numeric": sym_err <= 10 * tol.atol,
             f"tanh approximation error < {claimed_max_error:g}": max_err < claimed_max_error,
             "the peak error confirmed in exact arithmetic": abs(sym_at - max_err) <= 1e-12}

    def figure():
        return plots.gelu_figure()

    return Evidence(
        claim="gelu",
        statement=GELU_STATEMENT,
        verdict=verdict(facts),
        method="symbolic proof (Φ certified by Φ' = φ, Φ(−∞) = 0) + numeric twin vs SciPy + grid refinement of the peak",
        summary=(f"GELU = x·Φ(x) exactly; GELU' = Φ(x) + x φ(x); minimum at x = {float(minimum_x):.4f}; "
                 f"tanh approximation max error {max_err:.3e} at x = ±{abs(at_x):.4f} (two maxima, the error is even in x; "
                 "checked in exact arithmetic)" + failed_clause(facts)),
        conditions=(f"'approximates' means an absolute error below {claimed_max_error:g} everywhere (maximum "
                    f"{max_err:.2e}); the relative error is larger for x → −∞ where both tend to 0",),
        details={"GELU = x·Φ(x)": form_ok, "derivative": dg, "derivative = Φ + xφ": derivative_ok,
                 "limits (GELU − x at +∞, GELU at −∞)": list(limits), "minimum at x": float(minimum_x),
                 "minimum value": float(gelu(minimum_x)),
                 "numeric twin vs x·ndtr(x), max error": twin_err, "symbolic vs numeric, max error": sym_err,
                 "tanh approximation, max |error|": max_err, "at x": at_x,
                 "same error in 30-digit symbolic arithmetic": sym_at},
        equations=(
            ("exact", sp.Eq(tex(r"\operatorname{GELU}(x)"), g, evaluate=False)),
            ("as x Φ(x) with the standard normal CDF", sp.Eq(tex(r"\operatorname{GELU}(x)"), x * Phi, evaluate=False)),
            ("derivative", sp.Eq(tex(r"\operatorname{GELU}'(x)"), dg, evaluate=False)),
            ("tanh approximation", sp.Eq(tex(r"\operatorname{GELU}_{\tanh}(x)"), gelu_tanh(x), evaluate=False)),
            ("maximum error of the approximation",
             sp.Eq(tex(r"\max_x |\operatorname{GELU}_{\tanh} - \operatorname{GELU}|"), sp.Float(max_err, 4), evaluate=False)),
        ),
        figures={"gelu": figure},
    )


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (
    builtin_claim("softmax-jacobian", check_softmax_jacobian),
    builtin_claim("sinusoidal-positions", check_sinusoidal_positions),
    builtin_claim("gelu", check_gelu),
)
