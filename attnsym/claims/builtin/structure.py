"""Claims about the structure of the score map: ``qk-asymmetry``, ``permutation-equivariance``,
``no-locality-bias``.

Each registered claim calls a parametrised check (``check_*``) with the statement of CLAIMS.md;
the tests call the same checks with deliberately wrong statements and see them fail. The
mathematics lives in :mod:`attnsym.symbolic.symmetry`, :mod:`attnsym.symbolic.equivariance`,
:mod:`attnsym.numeric` and :mod:`attnsym.numeric.conv`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import sympy as sp

from ...errors import SpecError
from ...numeric import attention, scores
from ...numeric.conv import conv1d, shift_tokens
from ...spec import AttentionSpec
from ...symbolic.equivariance import (
    check_attention_equivariance,
    check_conv_equivariance,
    cyclic_shift,
    dependency_pattern,
)
from ...symbolic.equivariance import conv1d as sym_conv1d
from ...symbolic.matrices import attention as sym_attention
from ...symbolic.naming import input_symbols
from ...symbolic.symmetry import prove_gram_symmetric, prove_qk_symmetry_condition
from ...testing import TOLERANCES
from .._evidence import CheckContext, Evidence
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = ["check_locality", "check_permutation_equivariance", "check_qk_symmetry"]

_TOL = TOLERANCES["float64"]


def _close(a, b) -> bool:
    return bool(np.allclose(a, b, rtol=_TOL.rtol, atol=_TOL.atol))


def _max_abs(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def _weights(rng: np.random.Generator, d_model: int, d_k: int, count: int = 3) -> list[np.ndarray]:
    return [rng.standard_normal((d_model, d_k)) / np.sqrt(d_model) for _ in range(count)]


def _equivariance_equations():
    n, d = sp.symbols("n d", positive=True, integer=True)
    P = sp.MatrixSymbol("P", n, n)
    A_PX, A_X = sp.MatrixSymbol("A(PX)", n, n), sp.MatrixSymbol("A(X)", n, n)
    Y_PX, Y_X = sp.MatrixSymbol("Y(PX)", n, d), sp.MatrixSymbol("Y(X)", n, d)
    return (("weights", sp.Eq(A_PX, P * A_X * P.T, evaluate=False)), ("outputs", sp.Eq(Y_PX, P * Y_X, evaluate=False)))


def _locality_equations():
    n, d = sp.symbols("n d", positive=True, integer=True)
    S = sp.MatrixSymbol("S", n, n)
    conv_SX, conv_X = sp.MatrixSymbol(r"\operatorname{conv}(SX)", n, d), sp.MatrixSymbol(r"\operatorname{conv}(X)", n, d)
    i, r, k = sp.symbols("i r k", integer=True)
    w, x = sp.IndexedBase("w"), sp.IndexedBase("x")
    window = sp.Sum(w[r] * x[i + r - sp.floor(k / 2)], (r, 0, k - 1))
    return (("convolution (window of k tokens)", sp.Eq(sp.Indexed("y", i), window)),
            ("convolution commutes with the shift S", sp.Eq(conv_SX, S * conv_X, evaluate=False)))


# ----------------------------------------------------------------------------- qk-asymmetry

QK_STATEMENT = statement("qk-asymmetry")


def _m_symmetric(W_Q, W_K) -> bool:
    M = sp.Matrix(W_Q) * sp.Matrix(W_K).T
    return all(sp.expand(e) == 0 for e in (M - M.T))


def check_qk_symmetry(ctx: CheckContext, *, criterion: Callable[[sp.Matrix, sp.Matrix], bool] = _m_symmetric,
                      criterion_text: str = "W_Q W_Kᵀ symmetric") -> Evidence:
    """Check that ``criterion(W_Q, W_K)`` decides exactly when ``Q Kᵀ`` is symmetric for every ``X``.

    The ground truth for each weight pair is the exact symbolic test of
    :func:`attnsym.symbolic.symmetry.prove_qk_symmetry_condition` (generic symbolic ``X``);
    the pairs are generic symbols, ``W_K = W_Q``, ``W_K = W_Q R`` with ``R`` symmetric but
    ``≠ I``, and two random integer pairs. A numeric counter-example (random weights, the
    numeric score function) and ``X Xᵀ`` complete the evidence.
    """
    rng = ctx.rng("qk-asymmetry")
    d = 2 if ctx.quick else 3
    W = sp.Matrix(d, d, [int(v) for v in rng.integers(-3, 4, d * d)])
    while W.det() == 0:
        W = sp.Matrix(d, d, [int(v) for v in rng.integers(-3, 4, d * d)])
    R = sp.Matrix(d, d, lambda i, j: 1 + i + j)  # symmetric, not the identity
    cases = {
        "generic symbolic W_Q, W_K": (None, None),
        "W_K = W_Q": (W, W),
        "W_K = W_Q R, R symmetric": (W, W * R),
        "random integer W_Q, W_K": (W, sp.Matrix(d, d, [int(v) for v in rng.integers(-3, 4, d * d)])),
    }
    table, agree, proofs_ok = [], True, True
    for name, (WQ, WK) in cases.items():
        proof = prove_qk_symmetry_condition(WQ, WK, d_model=d, d_k=d)
        claimed = None if WQ is None else bool(criterion(WQ, WK))
        truth = proof.scores_symmetric
        proofs_ok = proofs_ok and proof.equivalence_holds
        if claimed is not None:
            agree = agree and claimed == truth
        table.append({"weights": name, "QKᵀ symmetric for all X": truth, f"{criterion_text}": claimed,
                      "coefficients of S₁₂−S₂₁ = (M−Mᵀ)": proof.coefficients_match})
    gram = prove_gram_symmetric(3 if ctx.quick else 4, 2)
    n = 6 if ctx.quick else 16
    X = rng.standard_normal((n, d))
    WQn, WKn = _weights(rng, d, d, 2)
    S_gram = scores(X, X)
    S_sep = scores(X @ WQn, X @ WKn)
    S_tied = scores(X @ WQn, X @ WQn)
    numeric = {
        "max |S − Sᵀ|, S = X Xᵀ": _max_abs(S_gram, S_gram.T),
        "max |S − Sᵀ|, separate random W_Q, W_K": _max_abs(S_sep, S_sep.T),
        "max |S − Sᵀ|, W_K = W_Q": _max_abs(S_tied, S_tied.T),
    }
    counter_example = not _close(S_sep, S_sep.T) and _close(S_gram, S_gram.T) and _close(S_tied, S_tied.T)
    # biases: S − Sᵀ gains X(u − w)1ᵀ − 1(u − w)ᵀXᵀ with u = W_Q b_Kᵀ, w = W_K b_Qᵀ, so W_K = W_Q is not enough
    Xs = sp.Matrix(2, d, lambda i, j: sp.Symbol(f"x_{{{i + 1},{j + 1}}}"))
    b_Q, b_K = (sp.Matrix(1, d, lambda _, j, name=name: sp.Symbol(f"b^{{{name}}}_{{{j + 1}}}")) for name in ("Q", "K"))
    ones = sp.ones(2, 1)

    def biased_symmetric(bq, bk) -> bool:
        S = (Xs * W + ones * bq) * (Xs * W + ones * bk).T
        return sp.expand(S[0, 1] - S[1, 0]) == 0

    bias_cases = {"W_K = W_Q, separate biases b_Q, b_K": biased_symmetric(b_Q, b_K),
                  "W_K = W_Q, shared bias b_K = b_Q": biased_symmetric(b_Q, b_Q)}
    facts = {"X Xᵀ symmetric (exact)": gram, "the symmetry criterion proved": proofs_ok,
             "symbolic and numeric cases agree with the criterion": agree, "a random W_Q, W_K breaks it": counter_example,
             "a shared bias keeps it": bias_cases["W_K = W_Q, shared bias b_K = b_Q"],
             "separate biases break it": not bias_cases["W_K = W_Q, separate biases b_Q, b_K"]}
    X_, M_ = sp.MatrixSymbol("X", sp.Symbol("n"), sp.Symbol("d")), sp.MatrixSymbol("M", sp.Symbol("d"), sp.Symbol("d"))
    return Evidence(
        "qk-asymmetry", QK_STATEMENT,
        verdict(facts, passing="holds-under-conditions"),
        method=f"symbolic proof + numeric counter-example (float64, rtol={_TOL.rtol:g}, atol={_TOL.atol:g})",
        summary=(f"X Xᵀ symmetric (proof); Q Kᵀ symmetric for all X ⇔ {criterion_text}: "
                 f"{'confirmed' if agree and proofs_ok else 'contradicted'}; random W_Q, W_K: "
                 f"max|S − Sᵀ| = {numeric['max |S − Sᵀ|, separate random W_Q, W_K']:.3g}" + failed_clause(facts)),
        conditions=(f"Q Kᵀ stays symmetric whenever {criterion_text} (W_K = W_Q, or W_K = W_Q R with R symmetric); "
                    "separate projections break the symmetry only when W_Q W_Kᵀ is not symmetric",
                    "projections without biases: with biases b_Q, b_K, Q Kᵀ is symmetric for all X exactly when "
                    "W_Q W_Kᵀ is symmetric and W_Q b_Kᵀ = W_K b_Qᵀ (W_K = W_Q with b_K ≠ b_Q is not symmetric)"),
        details={"cases": table, "numeric": numeric, "X Xᵀ symmetric (entrywise and as matrix expression)": gram,
                 "QKᵀ symmetric for all X, with biases (exact)": bias_cases},
        equations=(("S − Sᵀ = X (M − Mᵀ) Xᵀ with M = W_Q W_Kᵀ",
                    sp.Eq((X_ * M_ * X_.T) - (X_ * M_ * X_.T).T, X_ * (M_ - M_.T) * X_.T)),),
    )


def _qk_asymmetry(ctx: CheckContext) -> Evidence:
    return check_qk_symmetry(ctx)


# ----------------------------------------------------------------------------- permutation-equivariance

PERM_STATEMENT = statement("permutation-equivariance")


def _equivariance_once(ctx: CheckContext, *, positions: str | None, causal: bool, symbolic: bool) -> dict:
    rng = ctx.rng("permutation-equivariance", str(positions), int(causal))
    out: dict = {"positions": positions, "causal": causal}
    if symbolic:
        spec = AttentionSpec(n=3, d_model=1 if ctx.quick else 2, positions=positions, causal=causal)
        checks = check_attention_equivariance(spec, perm=(2, 0, 1), seed=ctx.seed)
        out["symbolic A(PX) = P A(X) Pᵀ"] = checks["A"].holds
        out["symbolic Y(PX) = P Y(X)"] = checks["Y"].holds
    n, d, heads = (8, 4, 2) if ctx.quick else (24, 8, 2)
    X = rng.standard_normal((n, d))
    W_Q, W_K, W_V, W_O = (rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(4))
    perm = rng.permutation(n)
    while np.all(perm == np.arange(n)):
        perm = rng.permutation(n)
    kw = dict(heads=heads, positions=positions, causal=causal)
    Y, A = attention(X, W_Q, W_K, W_V, W_O, **kw)
    Yp, Ap = attention(X[perm], W_Q, W_K, W_V, W_O, **kw)
    A_expected = A[:, perm][:, :, perm]  # (heads, n, n): P A Pᵀ per head
    out["numeric max |A(PX) − P A(X) Pᵀ|"] = _max_abs(Ap, A_expected)
    out["numeric max |Y(PX) − P Y(X)|"] = _max_abs(Yp, Y[perm])
    numeric_ok = _close(Ap, A_expected) and _close(Yp, Y[perm])
    symbolic_ok = not symbolic or (out["symbolic A(PX) = P A(X) Pᵀ"] and out["symbolic Y(PX) = P Y(X)"])
    out["holds"] = bool(numeric_ok and symbolic_ok)
    return out


def check_permutation_equivariance(ctx: CheckContext, *, positions: str | None = None, causal: bool = False,
                                   explore: bool = True) -> Evidence:
    """Check ``A(PX) = P A(X) Pᵀ`` and ``Y(PX) = P Y(X)`` for a layer with the given positions and mask.

    Symbolically (``n = 3``, ``d_model = 2``, exact) and numerically (multi-head, float64,
    a random permutation). With ``explore=True`` the other configurations (sinusoidal positions,
    causal mask) are checked too and reported as the conditions where the identity stops holding.
    """
    main = _equivariance_once(ctx, positions=positions, causal=causal, symbolic=True)
    rows = [main]
    if explore:
        for pos, cau in ((None, False), ("sinusoidal", False), (None, True)):
            if (pos, cau) != (positions, causal):
                rows.append(_equivariance_once(ctx, positions=pos, causal=cau, symbolic=not ctx.quick))
    broken = [r for r in rows[1:] if not r["holds"]]
    conditions = []
    for r in broken:
        what = "sinusoidal positions" if r["positions"] else "a causal mask" if r["causal"] else "no positions, no mask"
        conditions.append(f"fails with {what} (max |Y(PX) − P Y(X)| = {r['numeric max |Y(PX) − P Y(X)|']:.3g})")
    config = ", ".join(filter(None, [f"{positions} positions" if positions else "no positions",
                                     "causal mask" if causal else "no mask"]))
    facts = {f"A(PX) = P A(X) Pᵀ with {config} (exact)": main.get("symbolic A(PX) = P A(X) Pᵀ", True),
             f"Y(PX) = P Y(X) with {config} (exact)": main.get("symbolic Y(PX) = P Y(X)", True),
             f"both, exact and float64, with {config}": main["holds"]}
    if main["holds"]:
        conditions.insert(0, f"holds with {config} (also for a mask M with P M Pᵀ = M)")
    return Evidence(
        "permutation-equivariance", PERM_STATEMENT, verdict(facts, passing="holds-under-conditions" if broken else "holds"),
        method=f"symbolic proof (n=3, exact) + numeric check (float64, rtol={_TOL.rtol:g}, atol={_TOL.atol:g})",
        summary=(f"{config}: A(PX) = P A(X) Pᵀ {'holds' if main['holds'] else 'fails'} (exact; numeric "
                 f"{main['numeric max |A(PX) − P A(X) Pᵀ|']:.1g}); broken by "
                 f"{', '.join('positions' if r['positions'] else 'causal mask' for r in broken) or 'nothing tried'}"
                 + failed_clause(facts)),
        conditions=tuple(conditions),
        details={"configurations": rows},
        equations=_equivariance_equations(),
    )


def _permutation_equivariance(ctx: CheckContext) -> Evidence:
    return check_permutation_equivariance(ctx)


# ----------------------------------------------------------------------------- no-locality-bias

LOCALITY_STATEMENT = statement("no-locality-bias")


def _layer_profile(ctx: CheckContext, layer: str, positions: str | None) -> dict:
    """Symbolic and numeric symmetry/locality profile of one token-mixing layer."""
    n_sym = 4 if ctx.quick else 5
    swap = (1, 0, *range(2, n_sym))  # a permutation that is not a shift
    k = 3
    if layer == "conv":
        shift_ok = check_conv_equivariance(n_sym, k, seed=ctx.seed).holds
        perm_ok = check_conv_equivariance(n_sym, k, perm=swap, seed=ctx.seed).holds
        X = input_symbols("X", (n_sym, 1))
        D = dependency_pattern(sym_conv1d(X, sp.symbols(f"w_0:{k}"), padding="circular"), X)
    else:
        spec = AttentionSpec(n=n_sym if positions is None else 3, d_model=2, positions=positions)
        shift_ok = all(c.holds for c in check_attention_equivariance(spec, perm=cyclic_shift(spec.n), seed=ctx.seed).values())
        swap_n = (1, 0, *range(2, spec.n))
        perm_ok = all(c.holds for c in check_attention_equivariance(spec, perm=swap_n, seed=ctx.seed).values())
        sym = sym_attention(spec)
        D = dependency_pattern(sym.Y, sym.X)
    window = max(abs(i - j) if abs(i - j) <= D.rows // 2 else D.rows - abs(i - j)
                 for i in range(D.rows) for j in range(D.cols) if D[i, j])
    # numeric: shift-equivariance on a longer sequence, and how far a perturbation travels
    rng = ctx.rng("no-locality-bias", layer, str(positions))
    n, d = (12, 4) if ctx.quick else (32, 8)
    X = rng.standard_normal((n, d))
    if layer == "conv":
        w = rng.standard_normal(k)
        f = lambda Z: conv1d(Z, w)
    else:
        W_Q, W_K, W_V = (rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3))
        f = lambda Z: attention(Z, W_Q, W_K, W_V, positions=positions, return_weights=False)
    shift_err = _max_abs(f(shift_tokens(X)), shift_tokens(f(X)))
    j = n - 1
    X2 = X.copy()
    X2[j] += 1.0
    moved = np.max(np.abs(f(X2) - f(X)), axis=1)  # how much each output row changed
    far = [i for i in range(n) if min(abs(i - j), n - abs(i - j)) > k // 2]
    far_change = float(np.max(moved[far]))
    return {
        "layer": layer, "positions": positions,
        "symbolic shift-equivariant": shift_ok, "symbolic permutation-equivariant": perm_ok,
        "symbolic dependency window (tokens either side)": window,
        "symbolic every output depends on every token": all(D[i, j] for i in range(D.rows) for j in range(D.cols)),
        "numeric max |f(shift X) − shift f(X)|": shift_err,
        "numeric shift-equivariant": shift_err <= _TOL.atol * 10 + _TOL.rtol * float(np.max(np.abs(f(X)))),
        "numeric change of outputs farther than k//2 from a perturbed token": far_change,
        "local": window <= k // 2 and far_change == 0.0,
    }


def check_locality(ctx: CheckContext, *, layer: str = "attention", positions: str | None = None) -> Evidence:
    """Check that ``layer`` ("attention", "banded-attention" or "conv") lacks the two biases of a convolution.

    The definitions the verdict uses, and the statement's three parts:

    1. *locality bias* — the output at ``i`` depends only on a window of tokens around ``i``
       (symbolically: the token dependency pattern of ``∂Y/∂X`` is a band; numerically:
       perturbing one token leaves far outputs exactly unchanged);
    2. *translation bias* — the layer commutes with a shift of the tokens **but not** with every
       permutation: it treats every position alike *and* keeps their order. Attention without
       positions is shift-equivariant too (it commutes with every permutation), so it lacks
       this bias by having no notion of order at all; with absolute sinusoidal positions it
       commutes with no shift;
    3. "which is why it needs more data" — an empirical statement about training; not checkable
       here, and the verdict is therefore at most "holds-under-conditions".

    The claim holds for ``layer`` when it is neither local (1) nor translation-biased (2), while
    the convolution is both. ``"banded-attention"`` (a mask ``|i − j| ≤ 1``, restricted
    self-attention) is local: the claim is false for it.
    """
    if layer not in ("attention", "banded-attention", "conv"):
        raise SpecError(f"layer must be 'attention', 'banded-attention' or 'conv' (got {layer!r})")
    if positions not in (None, "sinusoidal"):
        raise SpecError(f"positions must be None or 'sinusoidal' (got {positions!r})")
    conv = _layer_profile(ctx, "conv", None)
    subject = _layer_profile(ctx, "attention" if layer == "banded-attention" else layer, positions)
    profiles = [conv] if layer == "conv" and positions is None else [conv, subject]
    if layer == "attention" and not ctx.quick:
        other = "sinusoidal" if positions is None else None
        profiles.append(_layer_profile(ctx, "attention", other))
    # restricted self-attention: a banded mask |i − j| <= 1 makes the dependency pattern a band again

    n_band = 5
    band = [[abs(i - j) <= 1 for j in range(n_band)] for i in range(n_band)]
    banded = sym_attention(AttentionSpec(n=n_band, d_model=1, mask=band))
    D = dependency_pattern(banded.Y, banded.X)
    banded_window = max(abs(i - j) for i in range(n_band) for j in range(n_band) if D[i, j])
    conv_biased = conv["local"] and conv["symbolic shift-equivariant"] and not conv["symbolic permutation-equivariant"]
    subject_biased = subject["local"] or (subject["symbolic shift-equivariant"]
                                          and not subject["symbolic permutation-equivariant"])
    if layer == "banded-attention":
        subject_biased = subject_biased or banded_window <= 1  # restricted self-attention is local
    facts = {"the convolution is local and translation-biased": conv_biased,
             f"{layer} is neither local nor translation-biased": not subject_biased}
    pos = "sinusoidal" if positions else "no"
    return Evidence(
        "no-locality-bias", LOCALITY_STATEMENT,
        verdict(facts, passing="holds-under-conditions"),
        method="symbolic proof (exact, small n) + numeric check (float64: shift error, reach of a perturbed token)",
        summary=(f"conv: window ±{conv['symbolic dependency window (tokens either side)']}, shift- not "
                 f"permutation-equivariant; {layer} ({pos} positions): "
                 f"{'global' if subject['symbolic every output depends on every token'] else 'local'}, "
                 f"shift-equivariant: {'yes' if subject['symbolic shift-equivariant'] else 'no'}, "
                 f"permutation-equivariant: {'yes' if subject['symbolic permutation-equivariant'] else 'no'}"
                 + failed_clause(facts)),
        conditions=("NOT checkable here: 'which is why it needs more data' (an empirical claim about training, e.g. "
                    "Dosovitskiy et al. 2021 §4); checked: the two biases as defined below",
                    "locality bias = each output depends on a window of tokens; translation bias = commuting with "
                    "shifts but not with every permutation (order kept, positions alike)",
                    "attention without positions IS shift-equivariant: it commutes with every permutation, so it lacks "
                    "the translation bias by ignoring order; with absolute sinusoidal positions it commutes with no shift",
                    "vanilla attention only: a banded mask |i − j| ≤ 1 (restricted self-attention) makes it local again "
                    f"(dependency window ±{banded_window}, exact for n = {n_band}); relative-position biases add a "
                    "notion of distance"),
        details={"profiles": profiles, "banded mask |i − j| ≤ 1: dependency window": banded_window},
        equations=_locality_equations(),
    )


def _no_locality_bias(ctx: CheckContext) -> Evidence:
    return check_locality(ctx)


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (
    builtin_claim("qk-asymmetry", _qk_asymmetry),
    builtin_claim("permutation-equivariance", _permutation_equivariance),
    builtin_claim("no-locality-bias", _no_locality_bias),
)
