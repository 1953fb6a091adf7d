"""Exact moments (attnsym.symbolic.stats) against independent references: scipy.stats, brute-force
enumeration, sympy.stats for fixed small d, and hand computations."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sst

from attnsym.errors import SpecError
from attnsym.symbolic import stats
from attnsym.symbolic.stats import d
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)


@pytest.mark.parametrize("mean, var", [(0, 1), (1, 2), (-0.5, 0.25)])
def test_normal_raw_moments_match_scipy(mean, var):
    law = stats.normal(mean, var)
    for r in range(1, 9):
        expected = sst.norm(loc=mean, scale=np.sqrt(var)).moment(r)
        assert float(law.raw_moment(r)) == pytest.approx(expected, rel=TOL64.rtol, abs=TOL64.atol)


def test_uniform_and_rademacher_moments():
    law = stats.uniform(-2, 3)
    for r in range(1, 7):
        assert float(law.raw_moment(r)) == pytest.approx(sst.uniform(loc=-2, scale=5).moment(r), rel=TOL64.rtol)
    assert stats.rademacher().moments == (0, 1, 0, 1, 0, 1, 0, 1)


def _enumerate_rademacher(dim: int, same: bool):
    """Exact mean, variance, 4th central moment of q·k (or q·q) by listing all sign patterns."""
    values = []
    for signs in itertools.product((-1, 1), repeat=dim if same else 2 * dim):
        q, k = signs[:dim], (signs[:dim] if same else signs[dim:])
        values.append(sum(a * b for a, b in zip(q, k, strict=True)))
    n = len(values)
    mean = Fraction(sum(values), n)
    var = sum((Fraction(v) - mean) ** 2 for v in values) / n
    mu4 = sum((Fraction(v) - mean) ** 4 for v in values) / n
    return mean, var, mu4


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_dot_product_moments_match_enumeration(dim):
    mean, var, mu4 = _enumerate_rademacher(dim, same=False)
    m = stats.dot_product_moments(dim, stats.rademacher(), stats.rademacher())
    assert m.mean == mean and m.variance == var
    assert m.fourth_central == mu4


def test_uniform_dot_product_against_sympy_stats_for_fixed_d():
    from sympy.stats import E, Uniform, variance

    q = [Uniform(f"q{i}", 0, 2) for i in range(2)]
    k = [Uniform(f"k{i}", -1, 3) for i in range(2)]
    s = q[0] * k[0] + q[1] * k[1]
    m = stats.dot_product_moments(2, stats.uniform(0, 2), stats.uniform(-1, 3))
    assert sp.simplify(E(s) - m.mean) == 0
    assert sp.simplify(variance(s) - m.variance) == 0


def test_symbolic_d_results_by_hand():
    m = stats.dot_product_moments()
    assert (m.mean, m.variance, m.kappa4) == (0, d, 6 * d)  # E[(qk)^4] = 3*3 = 9, kappa4 = 9 - 3
    assert sp.simplify(m.kurtosis - (3 + 6 / d)) == 0
    scaled = stats.dot_product_moments(scale=1 / sp.sqrt(d))
    assert (scaled.mean, scaled.variance) == (0, 1)
    sigma = sp.Symbol("sigma", positive=True)
    same = stats.dot_product_moments(d, stats.normal(0, sigma**2), same=True)
    assert (same.mean, same.variance) == (d * sigma**2, 2 * d * sigma**4)  # chi-square: mean d, var 2d


def test_general_formula_with_means():
    g = stats.general_dot_product_moments()
    mq, mk = sp.Symbol("mu_q", real=True), sp.Symbol("mu_k", real=True)
    sq, sk = sp.Symbol("sigma_q", positive=True), sp.Symbol("sigma_k", positive=True)
    assert sp.expand(g.mean - d * mq * mk) == 0
    assert sp.expand(g.variance - d * (sq**2 * sk**2 + mq**2 * sk**2 + mk**2 * sq**2)) == 0
    gs = stats.general_dot_product_moments(scale=1 / sp.sqrt(d))
    assert sp.simplify(gs.mean - sp.sqrt(d) * mq * mk) == 0
    # q = k, Gaussian with mean mu: Var[q^2] = 2 sigma^4 + 4 mu^2 sigma^2
    m = stats.dot_product_moments(d, stats.normal(mq, sq**2), same=True)
    assert sp.expand(m.variance - d * (2 * sq**4 + 4 * mq**2 * sq**2)) == 0


def _gauss_expect(f, mean, var, nodes=12):
    """E[f(x)] for x ~ N(mean, var) by Gauss-Hermite quadrature (exact for polynomials of degree < 24)."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    return float(np.sum(w * f(mean + np.sqrt(var) * x)) / np.sqrt(2 * np.pi))


@pytest.mark.parametrize("mq, vq, mk, vk", [(1.0, 4.0, -3.0, 0.25), (0.5, 1.0, 0.0, 2.0)])
def test_numeric_instance_of_general_formula_against_quadrature(mq, vq, mk, vk):
    # one term X = q k: E[X^r] = E[q^r] E[k^r]; a sum of d i.i.d. terms has d times the cumulants
    ex = [_gauss_expect(lambda x, r=r: x**r, mq, vq) * _gauss_expect(lambda x, r=r: x**r, mk, vk) for r in (1, 2)]
    law_q = stats.normal(sp.nsimplify(mq), sp.nsimplify(vq))
    m = stats.dot_product_moments(5, law_q, stats.normal(sp.nsimplify(mk), sp.nsimplify(vk)))
    assert float(m.mean) == pytest.approx(5 * ex[0], rel=TOL64.rtol)
    assert float(m.variance) == pytest.approx(5 * (ex[1] - ex[0] ** 2), rel=TOL64.rtol)
    # q = k: X = q^2
    e2, e4 = (_gauss_expect(lambda x, r=r: x**r, mq, vq) for r in (2, 4))
    same = stats.dot_product_moments(5, stats.normal(sp.nsimplify(mq), sp.nsimplify(vq)), same=True)
    assert float(same.variance) == pytest.approx(5 * (e4 - e2**2), rel=TOL64.rtol)


def test_at_substitutes_symbols():
    m = stats.general_dot_product_moments().at(mu_q=0, mu_k=0, sigma_q=1, sigma_k=1, d=64)
    assert m.variance == 64


def test_score_moments_by_hand():
    # He init at d_model=512, d_k=64: Var[q_a] = 512 * 2/512 = 2, Var[s] = 64 * 2 * 2 = 256
    he = stats.init_variance("he", 512, 64)
    assert he == sp.Rational(1, 256)
    m = stats.score_moments(512, 64, 1, he, he, scale=1 / sp.sqrt(64))
    assert m.off_diagonal_variance == 4
    assert m.diagonal_variance == sp.Rational(4 * 514, 512)  # E||x||^4 = m(m+2) replaces m^2
    assert stats.init_variance("xavier", 512, 64) == sp.Rational(2, 576)
    assert stats.init_variance("normal-0.02", 512, 64) == sp.Rational(4, 10000)


def test_scale_variants_by_hand():
    v = stats.scale_variants(64, 8)
    assert {name: row["variance"] for name, row in v.items()} == {
        "none": 64, "1/sqrt(d_k)": 1, "1/sqrt(d_model)": sp.Rational(1, 8), "1/d_k": sp.Rational(1, 64),
        "d_k^(-1/4) on q and on k": 1, "1/sqrt(d_k) on q and on k": sp.Rational(1, 64),
    }


@settings(max_examples=25, deadline=None)
@given(st.fractions(-3, 3), st.fractions(Fraction(1, 10), 4))
def test_law_invariants(mean, var):
    law = stats.normal(sp.Rational(mean.numerator, mean.denominator), sp.Rational(var.numerator, var.denominator))
    assert law.mean == sp.Rational(mean.numerator, mean.denominator)
    assert sp.simplify(law.variance - sp.Rational(var.numerator, var.denominator)) == 0
    other = stats.rademacher()
    prod = law.times(other)
    assert all(sp.simplify(prod.raw_moment(r) - law.raw_moment(r) * other.raw_moment(r)) == 0 for r in range(1, 5))
    assert prod.scaled(2).raw_moment(2) == 4 * prod.raw_moment(2)


def test_errors_name_the_argument():
    with pytest.raises(SpecError, match=r"mean must be a real number or a SymPy expression .got the string"):
        stats.normal("1")
    with pytest.raises(ValueError, match="raw moments up to order 4"):
        stats.general(name="q").raw_moment(5)
    with pytest.raises(ValueError, match="d must be a positive integer"):
        stats.dot_product_moments(0)
    with pytest.raises(ValueError, match="name must be one of"):
        stats.init_variance("glorot-ish", 4, 4)
    with pytest.raises(ValueError, match="k=None"):
        stats.dot_product_moments(2, stats.normal(), stats.normal(), same=True)


def test_derivation_steps_are_the_equations_sympy_would_build():
    """The steps are built unevaluated (fast); evaluating them would give the very same objects."""
    import sympy as sp

    from attnsym.symbolic import stats

    sigma = sp.Symbol("sigma", positive=True)
    moments = [stats.dot_product_moments(), stats.dot_product_moments(scale=1 / sp.sqrt(stats.d)),
               stats.general_dot_product_moments(same=True),
               stats.dot_product_moments(stats.d, stats.normal(0, sigma**2), same=True),
               stats.dot_product_moments(4, stats.rademacher(), stats.uniform(-1, 1)),
               stats.score_moments(512, 64, 1, sp.Rational(1, 512), sp.Rational(1, 512))]
    steps = [eq for m in moments for _, eq in m.steps]
    assert len(steps) == 5 * 4 + 4
    for eq in steps:
        assert isinstance(eq, sp.Eq) and sp.srepr(sp.Eq(eq.lhs, eq.rhs)) == sp.srepr(eq)
