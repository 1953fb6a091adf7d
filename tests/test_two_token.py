"""The two-token example solved exactly, checked by a hand formula and the numeric backend."""

import math
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from attnsym.errors import SpecError
from attnsym.numeric import attention
from attnsym.symbolic.two_token import solve_two_token
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)


def test_default_targets_exact():
    ex = solve_two_token()
    assert ex.routings_match and ex.routings_differ and ex.mlp_unchanged
    assert [list(r) for r in ex.routings] == [[sp.Rational(1, 10), sp.Rational(9, 10)],
                                              [sp.Rational(19, 20), sp.Rational(1, 20)]]
    assert [list(r) for r in ex.mlp_routings] == [[sp.Rational(7, 10), sp.Rational(3, 10)]] * 2


@pytest.mark.parametrize("p", [Fraction(1, 3), Fraction(1, 2), Fraction(99, 100), 0.25])
def test_hand_formula(p):
    """x₁ = (1, 0), x₂ = (t, 1), identity weights, scale 1/√2: a₁₁ = 1 / (1 + exp((t − 1)/√2))."""
    ex = solve_two_token([(p, 1 - p)])
    t = float(ex.solutions[0])
    assert math.isclose(1 / (1 + math.exp((t - 1) / math.sqrt(2))), float(p), rel_tol=1e-12)
    assert ex.routings_match
    X = np.array(ex.inputs[0].evalf(30), dtype=float)
    _, A = attention(X, np.eye(2), np.eye(2), np.eye(2))
    np.testing.assert_allclose(A[0], [float(p), 1 - float(p)], rtol=TOL64.rtol)


def test_same_routing_twice_does_not_differ():
    ex = solve_two_token([(0.2, 0.8), (0.2, 0.8)])
    assert ex.routings_match and not ex.routings_differ


@pytest.mark.parametrize("bad", [(0.5, 0.6), (0, 1), (1.2, -0.2), "ab", (0.5,)])
def test_bad_routings(bad):
    with pytest.raises(SpecError, match="routings\\[0\\]"):
        solve_two_token([bad])


def test_no_routings():
    with pytest.raises(SpecError, match="at least one"):
        solve_two_token([])
