"""prove_gelu: Φ certified as the normal CDF, GELU = x Φ(x), its derivative, limits and minimum, against SciPy."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from scipy.optimize import minimize_scalar
from scipy.special import ndtr

from attnsym.numeric import gelu as num_gelu
from attnsym.symbolic import gelu, gelu_tanh, prove_gelu
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)


@pytest.fixture(scope="module")
def proof():
    return prove_gelu()


def test_every_part_of_the_proof_holds(proof):
    assert proof.holds
    assert (proof.cdf_certified, proof.is_x_cdf, proof.derivative_is_cdf_plus_x_density, proof.limits_vanish) == (
        True, True, True, True)
    assert proof.limits == (0, 0)


def test_the_certified_cdf_is_scipys_normal_cdf(proof):
    f = sp.lambdify(proof.x, proof.cdf, "math")
    for v in (-3.0, -0.5, 0.0, 1.25, 4.0):
        assert f(v) == pytest.approx(float(ndtr(v)), rel=TOL64.rtol, abs=TOL64.atol)


def test_the_minimum_is_where_a_numeric_search_finds_it(proof):
    res = minimize_scalar(lambda t: float(num_gelu(np.array([t]))[0]), bounds=(-3, 0), method="bounded",
                          options={"xatol": 1e-10})
    assert float(proof.minimum_at) == pytest.approx(res.x, abs=1e-6)
    assert abs(float(proof.derivative.subs(proof.x, proof.minimum_at))) < 1e-14


def test_the_same_checks_reject_the_tanh_approximation(proof):
    x = proof.x
    assert sp.expand(gelu_tanh(x) - x * proof.cdf) != 0  # not x Φ(x) exactly
    assert sp.expand(sp.diff(gelu_tanh(x), x) - (proof.cdf + x * proof.density)) != 0
    assert sp.expand(gelu(x) - x * proof.cdf) == 0
