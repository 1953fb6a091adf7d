"""Score symmetry: X Xᵀ always; Q Kᵀ for all X exactly when W_Q W_Kᵀ is symmetric."""

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsym.errors import SpecError
from attnsym.numeric import scores
from attnsym.symbolic.symmetry import is_symmetric, prove_gram_symmetric, prove_qk_symmetry_condition
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)

small_ints = st.integers(-3, 3)


def int_matrix(d):
    return st.lists(small_ints, min_size=d * d, max_size=d * d).map(lambda v: sp.Matrix(d, d, v))


def test_gram_symmetric():
    assert prove_gram_symmetric(2, 1) and prove_gram_symmetric(3, 3)


def test_generic_weights_not_symmetric_and_coefficients_are_M_minus_MT():
    proof = prove_qk_symmetry_condition(d_model=3, d_k=2, n=2)
    assert not proof.scores_symmetric and not proof.M_symmetric
    assert proof.coefficients_match and proof.equivalence_holds
    # by hand: coefficient of x_{1,1} x_{2,2} in S_12 − S_21 is M_12 − M_21
    M = proof.M
    assert sp.expand(proof.coefficients[(0, 1)] - (M[0, 1] - M[1, 0])) == 0


def test_symmetric_M_with_different_projections():
    W = sp.Matrix([[1, 2], [0, 1]])
    R = sp.Matrix([[2, 1], [1, 3]])  # symmetric, not the identity: W_K = W R ≠ W_Q
    proof = prove_qk_symmetry_condition(W, W * R)
    assert proof.scores_symmetric and proof.M_symmetric and proof.equivalence_holds


@settings(max_examples=25, deadline=None)
@given(int_matrix(2), int_matrix(2))
def test_criterion_is_exact_for_integer_weights(WQ, WK):
    proof = prove_qk_symmetry_condition(WQ, WK)
    M = WQ * WK.T
    assert proof.scores_symmetric == (M == M.T)
    assert proof.equivalence_holds


def test_numeric_counter_example_and_tied_weights():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 3))
    WQ, WK = rng.standard_normal((2, 3, 3))
    S = scores(X @ WQ, X @ WK)
    assert np.max(np.abs(S - S.T)) > 1e-3
    S = scores(X @ WQ, X @ WQ)
    np.testing.assert_allclose(S, S.T, rtol=TOL64.rtol, atol=TOL64.atol)
    # symbolic and numeric agree on the same integer weights
    Wq, Wk = sp.Matrix([[1, 2], [3, 4]]), sp.Matrix([[0, 1], [1, 0]])
    Xn = rng.standard_normal((4, 2))
    Sn = scores(Xn @ np.array(Wq, dtype=float), Xn @ np.array(Wk, dtype=float))
    assert prove_qk_symmetry_condition(Wq, Wk).scores_symmetric == bool(np.allclose(Sn, Sn.T))


def test_is_symmetric_non_square():
    assert not is_symmetric(sp.Matrix([[1, 2, 3]]))


def test_errors():
    with pytest.raises(SpecError, match="give both W_Q and W_K"):
        prove_qk_symmetry_condition(sp.eye(2), None)
    with pytest.raises(SpecError, match="same shape"):
        prove_qk_symmetry_condition(sp.eye(2), sp.ones(2, 3))
    with pytest.raises(SpecError, match="n must be an integer >= 2"):
        prove_qk_symmetry_condition(n=1)
