"""variance-scaling and softmax-saturation: every part of the checks, and variants that must fail."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

import attnsym as at
from attnsym.claims import CheckContext
from attnsym.claims.builtin.variance import variance_scaling_evidence
from attnsym.symbolic.stats import d
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)


@pytest.fixture(scope="module")
def variance():
    return at.verify("variance-scaling", quick=True, seed=0)


@pytest.fixture(scope="module")
def saturation():
    return at.verify("softmax-saturation", quick=True, seed=0)


def test_variance_scaling_verdict_and_conditions(variance):
    assert variance.verdict == "holds-under-conditions" and variance.as_expected
    text = " ".join(variance.conditions)
    for needed in ("independent", "mean 0 and variance 1", "q = k", "d_model"):
        assert needed in text
    assert variance.details["exact checks"] == {"mean": True, "variance": True, "scaled variance": True}


def test_variance_scaling_exact_results_for_symbolic_d(variance):
    assert variance.details["Var[q·k] (mean 0, var 1)"] == d
    eqs = dict(variance.equations)
    assert eqs["Scaled by 1/√d, mean 0 and variance 1"].rhs == 1
    assert eqs["q = k, Gaussian N(0, σ²): variance 2dσ⁴"].rhs == 2 * d * sp.Symbol("sigma", positive=True) ** 4
    mq, mk = sp.Symbol("mu_q", real=True), sp.Symbol("mu_k", real=True)
    assert sp.simplify(eqs["Scaled by 1/√d, general: the mean grows as √d unless μ_q μ_k = 0"].rhs - sp.sqrt(d) * mq * mk) == 0


def test_variance_scaling_monte_carlo_covers_d_1_to_4096(variance):
    rows = [r for r in variance.details["Monte Carlo"] if r["law"] == "normal"]
    assert rows[0]["d"] == 1 and rows[-1]["d"] == 4096
    z = variance.details["Monte Carlo family-wise z"]
    for r in rows:
        assert r["agrees"] and abs(r["z"]) <= z
        lo, hi = r["95% CI"]
        # the interval half-width is 1.96 * sqrt((mu4 - sigma^4)/N) with mu4 = 3d^2 + 6d: by hand
        assert (hi - lo) / 2 == pytest.approx(1.96 * math.sqrt((2 * r["d"] ** 2 + 6 * r["d"]) / r["samples"]), rel=1e-9)
        assert r["exact kurtosis"] == pytest.approx(3 + 6 / r["d"])


def test_variance_scaling_monte_carlo_for_non_gaussian_components(variance):
    other = {r["law"]: r for r in variance.details["Monte Carlo"] if r["law"] != "normal"}
    assert set(other) == {"uniform", "rademacher"} and all(r["agrees"] for r in other.values())
    # kurtosis of q·k for d = 16 by hand: kappa4 = d (E[x^4]^2 - 3); uniform E[x^4] = 9/5, ±1: E[x^4] = 1
    assert other["uniform"]["exact kurtosis"] == pytest.approx(3 + 16 * (81 / 25 - 3) / 256)
    assert other["rademacher"]["exact kurtosis"] == pytest.approx(3 - 2 * 16 / 256)


def test_realistic_score_variances_by_hand(variance):
    table = {(r["init"], r["input"].startswith("LayerNorm")): r for r in variance.details["real score variance (exact)"]}
    # d_model = 512, d_k = 64, unit-variance inputs: Var[s/sqrt(d_k)] = (512 Var W)^2
    assert table[("he", True)]["Var s/√d_k"] == pytest.approx((512 * 2 / 512) ** 2)
    assert table[("xavier", True)]["Var s/√d_k"] == pytest.approx((512 * 2 / 576) ** 2)
    assert table[("normal-0.02", True)]["Var s/√d_k"] == pytest.approx((512 * 0.02**2) ** 2)
    assert table[("lecun", True)]["Var s/√d_k"] == pytest.approx(1.0)
    assert table[("he", True)]["Var s (unscaled)"] == pytest.approx(64 * 4)
    assert all(r["agrees"] for r in variance.details["real score variance (Monte Carlo)"])


def test_wrong_scalings_have_the_stated_variances(variance):
    rows = {r["scaling"]: r for r in variance.details["scaling variants"]}
    assert rows["1/sqrt(d_model)"]["Var at d_k=64, h=8"] == pytest.approx(1 / 8)
    assert rows["1/d_k"]["Var at d_k=64, h=8"] == pytest.approx(1 / 64)
    assert rows["d_k^(-1/4) on q and on k"]["Var at d_k=64, h=8"] == pytest.approx(1.0)
    assert rows["none"]["Var at d_k=64, h=8"] == pytest.approx(64)


@pytest.mark.parametrize("kwargs", [{"claimed_variance": d**2}, {"claimed_variance": d + 1},
                                    {"claimed_scaled_variance": sp.Rational(1, 2)}])
def test_false_variance_claims_fail(kwargs):
    ev = variance_scaling_evidence(CheckContext(quick=True, seed=1), **kwargs)
    assert ev.verdict == "fails"
    assert "differ from the claim" in ev.summary


def test_variance_figure_is_built_from_the_evidence(variance):
    fig = variance.figures["variance"]()
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and len(ax.lines) >= 2


def test_softmax_saturation_verdict_and_trends(saturation):
    assert saturation.verdict == "holds-under-conditions" and saturation.as_expected
    table = saturation.details["softmax statistics"]
    maxw = [r.unscaled.max_weight.value for r in table]
    ent = [r.unscaled.entropy.value for r in table]
    assert maxw == sorted(maxw) and ent == sorted(ent, reverse=True)  # monotone in d
    assert table[-1].unscaled.max_weight.value > 0.95 and table[-1].unscaled.entropy.value < 0.1
    scaled = [r.scaled.entropy.value for r in table[1:]]
    assert max(scaled) - min(scaled) < 0.1  # the scaled softmax does not depend on d
    assert table[0].unscaled.max_weight == table[0].scaled.max_weight  # d = 1: the same scores
    assert saturation.details["facts"]["∂a₁/∂s = a₁(1 − a₁) → 0 (exact)"] is True
    assert -0.7 < saturation.details["mean ‖J‖ unscaled ∝ d^slope (d ≥ 64)"] < -0.3


def test_softmax_saturation_gradient_reaching_w_q(saturation):
    rows = saturation.details["gradient reaching W_Q"]
    assert rows[0].median_ratio == pytest.approx(1.0)  # d = 1: 1/sqrt(d) = 1
    assert rows[-1].geometric_mean_ratio.value < 1
    assert rows[-1].below_one_percent.value > rows[0].below_one_percent.value


def test_softmax_saturation_statistics_against_a_direct_computation():
    """Max weight and entropy at one d from explicit q, k vectors and a plain softmax (independent code)."""
    ev = at.verify("softmax-saturation", quick=True, seed=3)
    row = next(r for r in ev.details["softmax statistics"] if r.d == 64)
    rng = np.random.default_rng(123)
    q = rng.standard_normal((4000, 1, 64))
    K = rng.standard_normal((4000, 16, 64))
    S = (q * K).sum(-1)
    A = np.exp(S - S.max(1, keepdims=True))
    A /= A.sum(1, keepdims=True)
    H = -(A * np.log(np.where(A > 0, A, 1))).sum(1)
    assert row.unscaled.max_weight.value == pytest.approx(A.max(1).mean(), abs=0.02)
    assert row.unscaled.entropy.value == pytest.approx(H.mean(), abs=0.05)


def test_saturation_figures_build(saturation):
    for build in saturation.figures.values():
        fig = build()
        assert len(fig.axes) >= 2


def test_beyond_the_conditions_the_exact_formulas_hold_and_the_claim_does_not(variance):
    rows = variance.details["beyond the conditions (Monte Carlo vs exact)"]
    by_case = {r["case"]: r for r in rows}
    same, means = by_case["q = k (W_Q = W_K)"], by_case["means μ_q = μ_k = 1/2"]
    dim = same["d"]
    # by hand: q·q is chi-square(d): mean d, variance 2d; with means 1/2: E = d/4, Var = d (1 + 1/4 + 1/4)
    assert (same["exact E[q·k]"], same["exact Var[q·k]"]) == (dim, 2 * dim)
    assert (means["exact E[q·k]"], means["exact Var[q·k]"]) == (dim / 4, 1.5 * dim)
    assert means["exact E[q·k/√d]"] == pytest.approx(math.sqrt(dim) / 4)  # grows with d despite the scaling
    assert all(r["agrees with exact"] for r in rows)
    assert all(abs(r["z against the claim's Var = d"]) > 5 for r in rows)  # the measured variance is not d


def test_xavier_score_variance_depends_on_the_matrix_layout(variance):
    # Glorot: Var W = 2/(fan_in + fan_out). A square 512 × 512 W_Q gives 1/512 (the LeCun value, sd 1);
    # torch.nn.MultiheadAttention initialises its packed (3·512) × 512 in_proj, so Var W = 2/2048 (sd 0.5)
    table = {(r["init"], r["input"].startswith("LayerNorm")): r for r in variance.details["real score variance (exact)"]}
    assert table[("xavier (W_Q d_model × d_model)", True)]["fan_in, fan_out"] == (512, 512)
    assert table[("xavier (W_Q d_model × d_model)", True)]["Var s/√d_k"] == pytest.approx(1.0)
    assert table[("xavier (torch MHA packed in_proj)", True)]["Var s/√d_k"] == pytest.approx((512 * 2 / 2048) ** 2)
    assert table[("xavier", True)]["fan_in, fan_out"] == (512, 64)
    implied = variance.details["what the real scores imply"]
    assert "only LeCun init" not in implied and "Xavier on a square d_model × d_model W_Q" in implied


@pytest.mark.oracle
def test_torch_mha_in_proj_xavier_variance_matches_the_table(variance):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(512, 8)
    row = {r["init"]: r for r in variance.details["real score variance (exact)"]}["xavier (torch MHA packed in_proj)"]
    assert float(mha.in_proj_weight.detach().var()) == pytest.approx(row["Var W"], rel=0.02)


def test_saturation_reports_an_interval_for_every_statistic_and_measures_learning():
    from attnsym.claims.builtin.saturation import check_softmax_saturation

    ev = check_softmax_saturation(CheckContext(quick=True))
    assert ev.verdict == "holds-under-conditions" and "FAILED" not in ev.summary
    assert all(ev.details["facts"].values())
    for row in ev.details["softmax statistics"]:
        for stats in (row.unscaled, row.scaled):
            for e in (stats.max_weight, stats.entropy, stats.jacobian_mean, stats.jacobian_median, stats.flat_rows):
                assert e.lo <= e.value <= e.hi
    for row in ev.details["gradient reaching W_Q"]:
        assert row.geometric_mean_ratio.lo <= row.geometric_mean_ratio.value <= row.geometric_mean_ratio.hi
    assert not any("NOT measured" in c for c in ev.conditions)
    runs = ev.details["training run"]
    assert runs and min(run.d for run in runs) >= 256
    for run in runs:
        for rows in run.final.values():
            for row in rows:
                assert row.loss.lo <= row.loss.value <= row.loss.hi
    false = check_softmax_saturation(CheckContext(quick=True), saturating="scaled")
    assert false.verdict == "fails" and "FAILED: scaled max weight" in false.summary


def test_entropy_figure_uses_the_claims_experiment_fresh_draws_per_d():
    import math

    import numpy as np

    from attnsym.plots.scaling import _entropy_data

    for seed in (0, 1):
        data = _entropy_data(None, n=16, seed=seed, quick=True)
        assert np.all(np.diff(data["unscaled"]) < 0)  # monotone (one weight draw per d made it not)
        assert data["unscaled"][0] < math.log(16) - 0.1  # d = 1 is not the uniform row


def test_interval_helpers_by_hand():
    import numpy as np

    from attnsym.studies.intervals import mean_interval, median_interval, wilson_interval

    m, lo, hi = mean_interval(np.array([1.0, 2.0, 3.0, 4.0]))
    assert m == 2.5 and hi - m == pytest.approx(1.959964 * np.std([1, 2, 3, 4], ddof=1) / 2, rel=1e-5)
    p, lo, hi = wilson_interval(0, 20)
    assert p == 0 and lo == pytest.approx(0, abs=TOL64.atol) and hi == pytest.approx(0.1611, abs=1e-3)
    med, lo, hi = median_interval(np.arange(101.0))
    assert med == 50 and lo < 50 < hi


def test_binomial_ranks_and_t_quantile_match_scipy_stats():
    """The median interval's ranks and the gradient ratio's t quantile, computed without scipy.stats."""
    from fractions import Fraction

    from scipy import stats
    from scipy.special import stdtrit

    from attnsym.studies.intervals import binomial_half_quantile

    for n in [*range(1, 120), 500, 4000]:
        for level in (0.5, 0.9, 0.95, 0.99):
            q = (1 - level) / 2
            assert binomial_half_quantile(q, n) == int(stats.binom.ppf(q, n, 0.5)), (n, level)
            assert binomial_half_quantile(1 - Fraction(q), n) == int(stats.binom.isf(q, n, 0.5)), (n, level)
    for df in (1, 2, 7, 63, 511):
        assert float(stdtrit(df, 0.975)) == pytest.approx(stats.t.ppf(0.975, df), rel=TOL64.rtol)


@pytest.mark.parametrize(("b", "n", "d", "scale"), [(1, 1, 1, 1.0), (3, 5, 4, 0.5), (4, 16, 8, 1.0), (2, 3, 17, 0.25)])
def test_vectorised_w_q_gradients_match_attention_vjp_layer_by_layer(b, n, d, scale):
    """The saturation experiment's batched backward: each layer's own weights, a general upstream gradient."""
    from attnsym.numeric import attention_vjp
    from attnsym.studies.saturation import w_q_gradients

    rng = np.random.default_rng(b * 100 + n * 10 + d)
    X, W, G = rng.standard_normal((b, n, d)), rng.standard_normal((3, b, d, d)), rng.standard_normal((b, n, d))
    grads = w_q_gradients(X, W, G, scale)
    assert grads.shape == (b, d, d)
    for i in range(b):
        ref = attention_vjp(X[i], W[0, i], W[1, i], W[2, i], G[i], scale=scale)["W_Q"]
        np.testing.assert_allclose(grads[i], ref, rtol=TOL64.rtol, atol=TOL64.atol)
    if n > 1:  # (one key: softmax is 1 whatever the score, so W_Q gets no gradient)
        assert not np.allclose(w_q_gradients(X, W, G, 2 * scale), grads)  # the scale is used, not assumed
    else:
        assert not grads.any()


def test_gradient_ratio_reports_its_check_against_attention_vjp():
    from attnsym.studies.saturation import VJP_CHECKED_DRAWS, gradient_ratio

    row = gradient_ratio(np.random.default_rng(0), 8, draws=VJP_CHECKED_DRAWS + 3)
    assert 0 <= row.vjp_difference <= 1e-12 and row.draws == VJP_CHECKED_DRAWS + 3
    assert row.vjp_draws == VJP_CHECKED_DRAWS


def test_blocked_jacobian_norms_equal_one_call_on_all_rows():
    from attnsym.numeric import softmax, softmax_jacobian
    from attnsym.studies.saturation import _JACOBIAN_ROWS, _jacobian_norms

    A = np.asarray(softmax(np.random.default_rng(1).standard_normal((2 * _JACOBIAN_ROWS + 7, 6)) * 20))
    whole = np.linalg.norm(np.asarray(softmax_jacobian(A)), axis=(-2, -1))
    assert np.array_equal(_jacobian_norms(A), whole)  # same numbers, bit for bit
