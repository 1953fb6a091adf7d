"""Claims about the structure of the score map: ``qk-asymmetry``, ``permutation-equivariance``,
``no-locality-bias``.

Each registered claim calls a parametrised check (``check_*``) with the statement of CLAIMS.md;
the tests call the same checks with deliberately wrong statements and see them fail. The
mathematics lives in :mod:`attnsym.symbolic.symmetry`, :mod:`attnsym.symbolic.equivariance`,
:mod:`attnsym.numeric` and :mod:`attnsym.numeric.conv`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import sympy as sp

from ...errors import SpecError
from ...studies import equivariance, symmetry
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

    A verdict on :func:`attnsym.studies.symmetry.study`: the ground truth for each weight pair is the
    exact symbolic test (generic symbolic ``X``); a numeric counter-example (random weights, the
    numeric score function), ``X Xᵀ`` and the biases complete the evidence.
    """
    r = symmetry.study(partial(ctx.rng, "qk-asymmetry"), quick=ctx.quick)
    judged = [c for c in r.cases if c.W_Q is not None]
    agree = all(bool(criterion(c.W_Q, c.W_K)) == c.truth for c in judged)
    proofs_ok = all(c.equivalence_holds for c in r.cases)
    separate_gap = _max_abs(r.S_separate, r.S_separate.T)
    facts = {"X Xᵀ symmetric (exact)": r.gram, "the symmetry criterion proved": proofs_ok,
             "symbolic and numeric cases agree with the criterion": agree,
             "a random W_Q, W_K breaks it": (not _close(r.S_separate, r.S_separate.T) and _close(r.S_gram, r.S_gram.T)
                                             and _close(r.S_tied, r.S_tied.T)),
             "a shared bias keeps it": r.shared_bias_symmetric, "separate biases break it": not r.separate_biases_symmetric}
    X_, M_ = sp.MatrixSymbol("X", sp.Symbol("n"), sp.Symbol("d")), sp.MatrixSymbol("M", sp.Symbol("d"), sp.Symbol("d"))
    return Evidence(
        "qk-asymmetry", QK_STATEMENT,
        verdict(facts, passing="holds-under-conditions"),
        method=f"symbolic proof + numeric counter-example (float64, rtol={_TOL.rtol:g}, atol={_TOL.atol:g})",
        summary=(f"X Xᵀ symmetric (proof); Q Kᵀ symmetric for all X ⇔ {criterion_text}: "
                 f"{'confirmed' if agree and proofs_ok else 'contradicted'}; random W_Q, W_K: "
                 f"max|S − Sᵀ| = {separate_gap:.3g}" + failed_clause(facts)),
        conditions=(f"Q Kᵀ stays symmetric whenever {criterion_text} (W_K = W_Q, or W_K = W_Q R with R symmetric); "
                    "separate projections break the symmetry only when W_Q W_Kᵀ is not symmetric",
                    "projections without biases: with biases b_Q, b_K, Q Kᵀ is symmetric for all X exactly when "
                    "W_Q W_Kᵀ is symmetric and W_Q b_Kᵀ = W_K b_Qᵀ (W_K = W_Q with b_K ≠ b_Q is not symmetric)"),
        details={"cases": [{"weights": c.name, "QKᵀ symmetric for all X": c.truth,
                            criterion_text: None if c.W_Q is None else bool(criterion(c.W_Q, c.W_K)),
                            "coefficients of S₁₂−S₂₁ = (M−Mᵀ)": c.coefficients_match} for c in r.cases],
                 "numeric": {"max |S − Sᵀ|, S = X Xᵀ": _max_abs(r.S_gram, r.S_gram.T),
                             "max |S − Sᵀ|, separate random W_Q, W_K": separate_gap,
                             "max |S − Sᵀ|, W_K = W_Q": _max_abs(r.S_tied, r.S_tied.T)},
                 "X Xᵀ symmetric (entrywise and as matrix expression)": r.gram,
                 "QKᵀ symmetric for all X, with biases (exact)": {
                     "W_K = W_Q, separate biases b_Q, b_K": r.separate_biases_symmetric,
                     "W_K = W_Q, shared bias b_K = b_Q": r.shared_bias_symmetric}},
        equations=(("S − Sᵀ = X (M − Mᵀ) Xᵀ with M = W_Q W_Kᵀ",
                    sp.Eq((X_ * M_ * X_.T) - (X_ * M_ * X_.T).T, X_ * (M_ - M_.T) * X_.T)),),
    )


def _qk_asymmetry(ctx: CheckContext) -> Evidence:
    return check_qk_symmetry(ctx)


# ----------------------------------------------------------------------------- permutation-equivariance

PERM_STATEMENT = statement("permutation-equivariance")


def check_permutation_equivariance(ctx: CheckContext, *, positions: str | None = None, causal: bool = False,
                                   explore: bool = True) -> Evidence:
    """Check ``A(PX) = P A(X) Pᵀ`` and ``Y(PX) = P Y(X)`` for a layer with the given positions and mask.

    A verdict on :func:`attnsym.studies.equivariance.permutation_study`: symbolically (``n = 3``,
    exact) and numerically (multi-head, float64, a random permutation). With ``explore=True`` the
    other configurations (sinusoidal positions, causal mask) are checked too and reported as the
    conditions where the identity stops holding.
    """
    run = partial(equivariance.permutation_study, partial(ctx.rng, "permutation-equivariance"), ctx.seed,
                  quick=ctx.quick)
    main = run(positions=positions, causal=causal, symbolic=True)
    rows = [main] + [run(positions=pos, causal=cau, symbolic=not ctx.quick) for pos, cau in
                     ((None, False), ("sinusoidal", False), (None, True)) if explore and (pos, cau) != (positions, causal)]
    broken = [r for r in rows[1:] if not r.holds]
    what = lambda r: "sinusoidal positions" if r.positions else "a causal mask" if r.causal else "no positions, no mask"
    conditions = [f"fails with {what(r)} (max |Y(PX) − P Y(X)| = {r.Y_gap:.3g})" for r in broken]
    config = ", ".join(filter(None, [f"{positions} positions" if positions else "no positions",
                                     "causal mask" if causal else "no mask"]))
    facts = {f"A(PX) = P A(X) Pᵀ with {config} (exact)": main.symbolic_A is not False,
             f"Y(PX) = P Y(X) with {config} (exact)": main.symbolic_Y is not False,
             f"both, exact and float64, with {config}": main.holds}
    if main.holds:
        conditions.insert(0, f"holds with {config} (also for a mask M with P M Pᵀ = M)")
    return Evidence(
        "permutation-equivariance", PERM_STATEMENT, verdict(facts, passing="holds-under-conditions" if broken else "holds"),
        method=f"symbolic proof (n=3, exact) + numeric check (float64, rtol={_TOL.rtol:g}, atol={_TOL.atol:g})",
        summary=(f"{config}: A(PX) = P A(X) Pᵀ {'holds' if main.holds else 'fails'} (exact; numeric "
                 f"{main.A_gap:.1g}); broken by "
                 f"{', '.join('positions' if r.positions else 'causal mask' for r in broken) or 'nothing tried'}"
                 + failed_clause(facts)),
        conditions=tuple(conditions),
        details={"configurations": rows},
        equations=_equivariance_equations(),
    )


def _permutation_equivariance(ctx: CheckContext) -> Evidence:
    return check_permutation_equivariance(ctx)


# ----------------------------------------------------------------------------- no-locality-bias

LOCALITY_STATEMENT = statement("no-locality-bias")


def check_locality(ctx: CheckContext, *, layer: str = "attention", positions: str | None = None) -> Evidence:
    """Check that ``layer`` ("attention", "banded-attention" or "conv") lacks the two biases of a convolution.

    A verdict on :func:`attnsym.studies.equivariance.layer_profile`. The definitions the verdict
    uses, and the statement's three parts:

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
    profile = partial(equivariance.layer_profile, partial(ctx.rng, "no-locality-bias"), ctx.seed, quick=ctx.quick)
    conv = profile(layer="conv", positions=None)
    subject = profile(layer="attention" if layer == "banded-attention" else layer, positions=positions)
    profiles = [conv] if layer == "conv" and positions is None else [conv, subject]
    if layer == "attention" and not ctx.quick:
        profiles.append(profile(layer="attention", positions="sinusoidal" if positions is None else None))
    n_band = 5  # restricted self-attention: a banded mask |i − j| <= 1 makes the dependency pattern a band again
    band_window = equivariance.banded_window(n_band)
    subject_biased = (subject.local or subject.translation_biased
                      or (layer == "banded-attention" and band_window <= 1))  # restricted self-attention is local
    facts = {"the convolution is local and translation-biased": conv.local and conv.translation_biased,
             f"{layer} is neither local nor translation-biased": not subject_biased}
    yes = lambda b: "yes" if b else "no"
    return Evidence(
        "no-locality-bias", LOCALITY_STATEMENT,
        verdict(facts, passing="holds-under-conditions"),
        method="symbolic proof (exact, small n) + numeric check (float64: shift error, reach of a perturbed token)",
        summary=(f"conv: window ±{conv.window}, shift- not permutation-equivariant; {layer} "
                 f"({'sinusoidal' if positions else 'no'} positions): "
                 f"{'global' if subject.global_dependency else 'local'}, shift-equivariant: "
                 f"{yes(subject.shift_equivariant)}, permutation-equivariant: {yes(subject.permutation_equivariant)}"
                 + failed_clause(facts)),
        conditions=(*LOCALITY_CONDITIONS,
                    "vanilla attention only: a banded mask |i − j| ≤ 1 (restricted self-attention) makes it local again "
                    f"(dependency window ±{band_window}, exact for n = {n_band}); relative-position biases add a "
                    "notion of distance"),
        details={"profiles": profiles, "banded mask |i − j| ≤ 1: dependency window": band_window},
        equations=_locality_equations(),
    )


LOCALITY_CONDITIONS = (
    "NOT checkable here: 'which is why it needs more data' (an empirical claim about training, e.g. "
    "Dosovitskiy et al. 2021 §4); checked: the two biases as defined below",
    "locality bias = each output depends on a window of tokens; translation bias = commuting with "
    "shifts but not with every permutation (order kept, positions alike)",
    "attention without positions IS shift-equivariant: it commutes with every permutation, so it lacks "
    "the translation bias by ignoring order; with absolute sinusoidal positions it commutes with no shift")


def _no_locality_bias(ctx: CheckContext) -> Evidence:
    return check_locality(ctx)


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (
    builtin_claim("qk-asymmetry", _qk_asymmetry),
    builtin_claim("permutation-equivariance", _permutation_equivariance),
    builtin_claim("no-locality-bias", _no_locality_bias),
)
