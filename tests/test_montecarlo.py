"""Monte Carlo engine: determinism, merging, interval coverage, samplers against direct sampling."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats as sst

from attnsym.numeric import montecarlo as mc


def test_same_seed_same_result_whatever_the_workers():
    a = mc.dot_product_moments(32, 300_000, seed=7, workers=1)
    b = mc.dot_product_moments(32, 300_000, seed=7, workers=2)
    c = mc.dot_product_moments(32, 300_000, seed=7, workers=3)
    assert a == b == c
    assert mc.dot_product_moments(32, 300_000, seed=8, workers=2) != a


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, st.integers(2, 60), elements=st.floats(-1e3, 1e3)), st.data())
def test_merge_equals_moments_of_concatenation(x, data):
    cut = data.draw(st.integers(1, x.size - 1))
    merged = mc.SampleMoments.of(x[:cut]).merge(mc.SampleMoments.of(x[cut:]))
    whole = mc.SampleMoments.of(x)
    assert merged.n == whole.n
    scale = 1 + np.abs(x).max()
    assert merged.mean == pytest.approx(whole.mean, abs=1e-9 * scale)
    for r, (m, w) in enumerate([(merged.m2, whole.m2), (merged.m3, whole.m3), (merged.m4, whole.m4)], start=2):
        assert m == pytest.approx(w, rel=1e-7, abs=1e-7 * scale**r * x.size)


def test_sample_moments_against_numpy_and_scipy():
    x = np.random.default_rng(0).gamma(2.0, size=1000)
    m = mc.SampleMoments.of(x)
    assert m.variance == pytest.approx(np.var(x, ddof=1), rel=1e-12)
    assert m.kurtosis == pytest.approx(sst.kurtosis(x, fisher=False), rel=1e-10)


def test_samples_for_precision_by_hand():
    # 1.96^2 * (3 - 1) / 0.01^2 = 76829.2 -> 76830 (a Gaussian statistic, kurtosis 3)
    assert mc.samples_for_precision(0.01, 3.0) == math.ceil(mc.z_value(0.95) ** 2 * 2 / 1e-4)
    assert 76800 < mc.samples_for_precision(0.01, 3.0) < 76850
    assert mc.z_value(0.95) == pytest.approx(1.959964, abs=1e-6)
    with pytest.raises(ValueError, match="rel_error"):
        mc.samples_for_precision(0, 3)
    with pytest.raises(ValueError, match="kurtosis"):
        mc.samples_for_precision(0.1, 0.5)


def test_interval_coverage_matches_its_level():
    """Over many seeds, the 95 % interval from the exact fourth moment covers Var = d about 95 % of the time."""
    dim, n = 8, 4000
    mu4 = 3 * dim**2 + 6 * dim
    hits = [lo <= dim <= hi for lo, hi in (mc.dot_product_moments(dim, n, seed=s, workers=1)
                                           .variance_interval(0.95, fourth_central=mu4, variance=dim) for s in range(200))]
    # binomial(200, 0.95): mean 190, sd 3.1 -> [178, 199] is a 4-sd band
    assert 178 <= sum(hits) <= 199


def test_monte_carlo_detects_a_wrong_variance():
    """The interval is narrow enough to reject a 10 % error at the default precision (power)."""
    dim = 64
    n = mc.samples_for_precision(0.02, 3 + 6 / dim)
    est = mc.dot_product_moments(dim, n, seed=0)
    se = est.se_variance(fourth_central=3 * dim**2 + 6 * dim, variance=dim)
    assert abs(est.variance - dim) / se < 4
    assert abs(est.variance - 1.1 * dim) / se > 4


def test_means_and_variances_other_than_zero_and_one():
    # Var = d (sq^2 sk^2 + mq^2 sk^2 + mk^2 sq^2) = 10 (4*0.25 + 1*0.25 + 4*4) = 172.5
    est = mc.dot_product_moments(10, 200_000, mean_q=1.0, std_q=2.0, mean_k=-2.0, std_k=0.5, seed=1)
    assert abs(est.variance - 172.5) < 4 * est.se_variance()
    assert abs(est.mean - 10 * 1.0 * -2.0) < 4 * est.se_mean()
    same = mc.dot_product_moments(10, 200_000, same=True, seed=2)  # chi-square: mean 10, var 20
    assert abs(same.variance - 20) < 4 * same.se_variance()
    assert abs(same.mean - 10) < 4 * same.se_mean()


@pytest.mark.parametrize("law, e4", [("uniform", 9 / 5), ("rademacher", 1.0)])
def test_non_gaussian_component_laws(law, e4):
    """Components with mean 0, variance 1 and E[x^4] = e4: Var[q·k] = d, kurtosis 3 + d (e4^2 - 3) / d^2."""
    dim = 6
    est = mc.dot_product_moments(dim, 400_000, law=law, seed=3)
    mu4 = 3 * dim**2 + dim * (e4**2 - 3)
    assert abs(est.variance - dim) < 4 * est.se_variance(fourth_central=mu4, variance=dim)
    assert est.kurtosis == pytest.approx(mu4 / dim**2, rel=0.03)
    with pytest.raises(ValueError, match="law must be one of"):
        mc.dot_product_moments(dim, 10, law="cauchy")


def test_score_rows_has_the_law_of_explicit_dot_products():
    """The chi-square shortcut against forming q and the k_j explicitly: KS tests on two row statistics."""
    rows, n, dim = 4000, 5, 7
    fast = mc.score_rows(np.random.default_rng(0), rows, n, dim)
    rng = np.random.default_rng(1)
    q = rng.standard_normal((rows, 1, dim))
    K = rng.standard_normal((rows, n, dim))
    direct = (q * K).sum(-1)
    for stat in (lambda S: S.max(axis=1), lambda S: S.var(axis=1)):
        assert sst.ks_2samp(stat(fast), stat(direct)).pvalue > 1e-3
    # and within a row the scores are correlated through ||q|| exactly as the direct ones
    assert np.corrcoef(fast[:, 0] ** 2, fast[:, 1] ** 2)[0, 1] == pytest.approx(
        np.corrcoef(direct[:, 0] ** 2, direct[:, 1] ** 2)[0, 1], abs=0.08)


def test_score_entry_moments_agree_with_exact_formula():
    from attnsym.symbolic import stats

    exact = stats.score_moments(48, 12, 1, sp_rational(1, 48), sp_rational(1, 48))
    r = mc.score_entry_moments(48, 12, var_wq=1 / 48, var_wk=1 / 48, reps=300, seed=0)
    assert abs(r["off_diagonal"] - float(exact.off_diagonal_variance)) < 4 * r["off_diagonal_se"]
    assert abs(r["diagonal"] - float(exact.diagonal_variance)) < 4 * r["diagonal_se"]
    assert r == mc.score_entry_moments(48, 12, var_wq=1 / 48, var_wk=1 / 48, reps=300, seed=0, workers=1)


def sp_rational(p, q):
    import sympy as sp

    return sp.Rational(p, q)


def test_score_variance_contract_for_plots():
    r = mc.score_variance([1, 16], seed=0, rel_error=0.1)
    assert set(r) >= {"d", "unscaled", "scaled", "unscaled_ci", "scaled_ci", "exact_unscaled", "exact_scaled", "samples"}
    assert r["unscaled_ci"].shape == (2, 2)
    assert np.all(r["unscaled_ci"][:, 0] < r["unscaled"]) and np.all(r["unscaled"] < r["unscaled_ci"][:, 1])
    np.testing.assert_allclose(r["scaled"], r["unscaled"] / np.array([1, 16]))
    fixed = mc.score_variance([4], samples=1000, seed=0)
    assert fixed["samples"].tolist() == [1000]


def test_progress_is_reported_in_order():
    seen = []
    mc.sample_statistic(lambda rng, size: rng.standard_normal(size), 1000, block=300, progress=lambda a, b: seen.append((a, b)))
    assert seen == [(300, 1000), (600, 1000), (900, 1000), (1000, 1000)]


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="n_samples must be a positive integer"):
        mc.dot_product_moments(4, 0)
    with pytest.raises(ValueError, match="d must be a positive integer"):
        mc.dot_product_moments(0, 10)
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        mc.dot_product_moments(4, 10, seed=-1)
    with pytest.raises(ValueError, match="sampler must return"):
        mc.sample_statistic(lambda rng, size: np.zeros(size + 1), 10)
    with pytest.raises(ValueError, match="level"):
        mc.z_value(1.5)


def test_normal_rate_is_positive():
    assert mc.normal_rate(0.05) > 1e6
