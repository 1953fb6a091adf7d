"""softmax-jacobian, sinusoidal-positions, gelu: the checks, and false variants that must fail."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import attnsym as at
from attnsym.claims import CheckContext
from attnsym.claims.builtin import primitives

QUICK = CheckContext(quick=True, seed=0)


def test_softmax_jacobian_holds_with_evidence():
    ev = at.verify("softmax-jacobian", quick=True)
    assert ev.verdict == "holds"
    assert all(p.rank == p.n - 1 and p.equal for p in ev.details["symbolic proofs"])
    assert all(r.fd_error < 1e-8 and r.rank == r.n - 1 for r in ev.details["finite differences"])


def test_softmax_jacobian_wrong_formula_fails():
    def transposed_sign(a):  # diag(a) + a aᵀ: a plausible slip
        return np.diag(a) + np.outer(a, a) if isinstance(a, np.ndarray) else sp.diag(*a) + a * a.T

    ev = primitives.check_softmax_jacobian(QUICK, claimed=transposed_sign)
    assert ev.verdict == "fails"
    assert not any(p.equal for p in ev.details["symbolic proofs"])
    assert not any(r.fd_error <= primitives.FD_ATOL for r in ev.details["finite differences"])


def test_sinusoidal_positions_holds_and_rotation_is_exact():
    ev = at.verify("sinusoidal-positions", quick=True)
    assert ev.verdict == "holds"
    for key in ("geometric frequencies (exact)", "PE(p + k) = R_k PE(p) (symbolic p, k)", "R_k free of p",
                "R_k orthogonal", "bounded in [−1, 1] (exact)"):
        assert ev.details[key] is True, key
    num = ev.details["numeric"][0]
    assert num["max |PE|"] <= 1 and num["max rotation error"] < 1e-10
    k = sp.Symbol("k", real=True)
    assert dict(ev.equations)["similarity of two positions depends only on their distance (per pair)"].rhs == \
        sp.cos(sp.Symbol("omega", positive=True) * k)


def test_sinusoidal_positions_wrong_frequency_ratio_fails():
    assert primitives.check_sinusoidal_positions(QUICK, claimed_ratio=sp.Rational(1, 2)).verdict == "fails"


def test_gelu_holds_and_max_error_matches_an_independent_search():
    from scipy.special import ndtr

    ev = at.verify("gelu", quick=True)
    assert ev.verdict == "holds"
    x = np.linspace(-6, 6, 1_200_001)
    approx = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))  # written out from Hendrycks & Gimpel
    ref = np.abs(approx - x * ndtr(x)).max()
    assert ev.details["tanh approximation, max |error|"] == pytest.approx(ref, rel=1e-6)
    assert abs(ev.details["at x"]) == pytest.approx(2.6989, abs=1e-3)
    assert ev.details["minimum at x"] == pytest.approx(-0.75179, abs=1e-4)  # root of Phi(x) + x phi(x)


def test_gelu_too_tight_bound_fails():
    assert primitives.check_gelu(QUICK, claimed_max_error=1e-4).verdict == "fails"


@pytest.mark.parametrize("claim_id", ["softmax-jacobian", "sinusoidal-positions", "gelu"])
def test_figures_build(claim_id):
    ev = at.verify(claim_id, quick=True)
    for build in ev.figures.values():
        assert build().axes


@pytest.mark.parametrize("claim_id", ["softmax-jacobian", "sinusoidal-positions"])
def test_matrix_equations_are_shown_not_evaluated_to_false(claim_id):
    # sp.Eq(symbol, Matrix) evaluates to BooleanFalse: the report printed "False" for the Jacobian and PE
    ev = at.verify(claim_id, quick=True)
    for title, eq in ev.equations:
        assert isinstance(eq, sp.Equality), (title, eq)
    eqs = dict(ev.equations)
    if claim_id == "softmax-jacobian":
        a0, a1 = (sp.Symbol(f"a_{i}", positive=True) for i in (1, 2))  # the symbols count from 1
        closed = eqs["closed form, n = 2"].rhs
        assert sp.Matrix(closed).xreplace({a0: sp.Rational(1, 4), a1: sp.Rational(3, 4)}) == \
            sp.Matrix([[sp.Rational(3, 16), -sp.Rational(3, 16)], [-sp.Rational(3, 16), sp.Rational(3, 16)]])
    else:
        pe = sp.Matrix(eqs["symbolic PE, n = 3 rows of d = 8"].rhs)
        assert pe.shape == (3, 8) and pe[1, 0] == sp.sin(1) and pe[1, 1] == sp.cos(1) and pe[0, 1] == 1
