"""Claims from the literature: rank-collapse, entropy-lower-bound, key-bias-invariance,
softmax-jacobian-norm, dispersion, rank-one-input — and the exact/numeric layers behind them."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

from attnsym.claims import CheckContext
from attnsym.claims.builtin import invariances, rank_collapse, softmax_limits
from attnsym.errors import SpecError
from attnsym.numeric import attention_vjp, softmax
from attnsym.numeric.rank_collapse import collapse_run, composite_norm, residual_norm
from attnsym.numeric.softmax_search import max_jacobian_norm, min_entropy_on_sphere, softmax_entropy
from attnsym.spec import AttentionSpec
from attnsym.symbolic.invariances import bias_score_derivatives, equal_token_gradients, rows_constant
from attnsym.symbolic.softmax_limits import (
    dispersion_top_weight,
    entropy_lower_bound,
    entropy_minimiser,
    two_point_jacobian_norm,
)
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)

QUICK = CheckContext(quick=True)


# ----------------------------------------------------------------------------- exact layer against numbers

def test_dispersion_numbers_of_the_issue_by_hand():
    # logits +3 and -2 elsewhere: e^3 / (e^3 + (n - 1) e^-2), computed directly
    for n, expected in ((10, 0.943), (1000, 0.129), (100000, 0.00148)):
        direct = math.exp(3) / (math.exp(3) + (n - 1) * math.exp(-2))
        assert float(dispersion_top_weight(n, 5)) == pytest.approx(direct, rel=TOL64.rtol)
        assert float(f"{direct:.3g}") == expected


def test_entropy_bound_against_the_numeric_entropy_of_its_minimiser():
    for T in (2, 3, 16):
        for sigma in (0.3, 2.0, 7.0):
            top, rest = (float(v) for v in entropy_minimiser(sigma, T))
            z = np.array([top] + [rest] * (T - 1))
            assert np.linalg.norm(z) == pytest.approx(sigma)
            assert float(softmax_entropy(z)) == pytest.approx(float(entropy_lower_bound(sigma, T)), abs=TOL64.atol)


def test_entropy_search_never_beats_the_bound():
    rng = np.random.default_rng(3)
    for sigma in (1.0, 4.0):
        found = min_entropy_on_sphere(8, sigma, rng, samples=300, restarts=2)
        assert found.value >= float(entropy_lower_bound(sigma, 8)) - 1e-9
        assert np.linalg.norm(found.point) == pytest.approx(sigma)


def test_jacobian_two_point_norm_and_search():
    p = sp.Symbol("p", positive=True)
    assert sp.expand(two_point_jacobian_norm(p) - 2 * p * (1 - p)) == 0
    best = max_jacobian_norm(5, np.random.default_rng(1), samples=200, restarts=2)
    assert best.value == pytest.approx(0.5, abs=1e-9)
    assert sorted(best.point)[-2:] == pytest.approx([0.5, 0.5], abs=1e-4)
    uniform = np.linalg.eigvalsh(np.diag(np.full(4, 0.25)) - np.full((4, 4), 1 / 16))[-1]
    assert uniform == pytest.approx(0.25)  # 1/n at the uniform a


def test_key_bias_derivatives_are_row_constant_and_query_bias_ones_are_not():
    spec = AttentionSpec(n=3, d_model=2, bias=True, causal=True)
    allowed = [[j <= i for j in range(3)] for i in range(3)]
    assert all(rows_constant(D, allowed) for D in bias_score_derivatives(spec, "b_K")[0])
    assert not all(rows_constant(D, allowed) for D in bias_score_derivatives(spec, "b_Q")[0])
    with pytest.raises(SpecError, match="has no biases"):
        bias_score_derivatives(AttentionSpec(n=2, d_model=1), "b_K")


def test_equal_tokens_give_zero_query_key_gradients_exactly_and_numerically():
    grads = equal_token_gradients(AttentionSpec(n=3, d_model=2, heads=2))
    assert all(e == 0 for e in grads["W_Q"]) and all(e == 0 for e in grads["W_K"])
    assert any(e != 0 for e in grads["W_V"])
    rng = np.random.default_rng(0)
    X = np.tile(rng.standard_normal(3), (5, 1))
    W = [rng.standard_normal((3, 3)) for _ in range(3)]
    g = attention_vjp(X, *W, rng.standard_normal((5, 3)))
    assert np.abs(g["W_Q"]).max() < 1e-12 and np.abs(g["W_K"]).max() < 1e-12 and np.abs(g["W_V"]).max() > 1e-3


def test_residual_and_composite_norm_by_hand():
    M = np.array([[1.0, -2.0], [3.0, 0.5]])
    # max column abs sum 4, max row abs sum 3.5
    assert composite_norm(M) == pytest.approx(math.sqrt(4 * 3.5))
    assert residual_norm(np.tile([2.0, -1.0], (4, 1))) == 0.0
    run = collapse_run("attention", np.random.default_rng(0).standard_normal((8, 4)), 6, np.random.default_rng(1))
    assert run.relative_residual.shape == (7,) and run.relative_residual[-1] < 1e-8
    with pytest.raises(ValueError, match="architecture must be one of"):
        collapse_run("rnn", np.zeros((2, 2)), 1, np.random.default_rng(0))


# ----------------------------------------------------------------------------- the claims

@pytest.mark.parametrize("check", [softmax_limits.check_dispersion, softmax_limits.check_softmax_jacobian_norm,
                                   softmax_limits.check_entropy_lower_bound, invariances.check_key_bias_invariance,
                                   invariances.check_rank_one_input])
def test_claims_hold(check):
    ev = check(QUICK)
    assert ev.verdict == "holds", ev.summary
    assert ev.conditions and ev.equations


def test_rank_collapse_holds_only_under_conditions_because_mlps_do_not_prevent_it():
    ev = rank_collapse.check_rank_collapse(QUICK)
    assert ev.verdict == "holds-under-conditions"
    rows = {r.architecture: r for r in ev.details["rows"]}
    assert rows["attention"].collapses and not rows["attention+skip"].collapses
    assert rows["attention"].rate >= 2  # cubic-like contraction: doubly exponential
    assert ev.details["rank-1 input is a fixed point (exact)"]
    lo, hi = rows["attention+skip"].final_range
    assert 0 < lo <= hi


@pytest.mark.parametrize(("check", "wrong"), [
    (softmax_limits.check_dispersion, {"claimed": {1000: 0.5}}),
    (softmax_limits.check_dispersion, {"claimed_limit": 0.1}),
    (softmax_limits.check_softmax_jacobian_norm, {"claimed_bound": 0.25}),   # beaten at (1/2, 1/2)
    (softmax_limits.check_softmax_jacobian_norm, {"claimed_bound": 1.0}),    # true but never reached
    (softmax_limits.check_entropy_lower_bound, {"claimed_bound": lambda s, T: entropy_lower_bound(s, T) + sp.Rational(1, 20)}),
    (softmax_limits.check_entropy_lower_bound, {"claimed_bound": lambda s, T: entropy_lower_bound(s, T) / 2}),  # not tight
    (invariances.check_key_bias_invariance, {"claimed_zero": "b_Q"}),
    (invariances.check_rank_one_input, {"claimed_zero": ("W_Q", "W_K", "W_V")}),
    (rank_collapse.check_rank_collapse, {"collapses": {"attention": False}}),
    (rank_collapse.check_rank_collapse, {"collapses": {"attention": True, "attention+skip": True}}),
])
def test_false_statements_fail(check, wrong):
    assert check(QUICK, **wrong).verdict == "fails"


@pytest.mark.parametrize(("check", "name"), [
    (softmax_limits.check_dispersion, "dispersion"), (softmax_limits.check_softmax_jacobian_norm, "jacobian-norm"),
    (softmax_limits.check_entropy_lower_bound, "entropy-bound"), (rank_collapse.check_rank_collapse, "rank-collapse"),
])
def test_figures_draw_the_checked_data(check, name):
    ev = check(QUICK)
    fig = ev.figures[name]()
    ax = fig.axes[0]
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel() and ax.lines


def test_dispersion_figure_marks_the_checked_numbers():
    ev = softmax_limits.check_dispersion(QUICK)
    ax = ev.figures["dispersion"]().axes[0]
    marks = next(line for line in ax.lines if line.get_marker() == "o")
    assert list(marks.get_ydata()) == [r.exact for r in ev.details["rows"]]
    assert float(np.asarray(softmax(np.array([3.0] + [-2.0] * 9)))[0]) == pytest.approx(ev.details["rows"][0].exact)


def test_softmax_entropy_is_the_entropy_of_numeric_softmax():
    """softmax_entropy forms softmax from its own shifted exponentials: tied here to attnsym.numeric.softmax."""
    from attnsym.numeric import softmax

    rng = np.random.default_rng(5)
    for scale in (0.1, 3.0, 40.0):  # 40: weights down to e^-100, where a log of the weights would lose them
        z = scale * rng.standard_normal((7, 16))
        a = np.asarray(softmax(z))
        direct = -(a * np.log(np.maximum(a, np.finfo(float).tiny))).sum(axis=-1)
        np.testing.assert_allclose(softmax_entropy(z), direct, rtol=1e-10, atol=1e-12)
        assert softmax_entropy(z[0]).shape == ()


def test_entropy_on_sphere_gradient_matches_central_differences():
    from attnsym.numeric.softmax_search import entropy_on_sphere_and_gradient

    rng = np.random.default_rng(11)
    for T, sigma in ((2, 0.7), (5, 3.0), (16, 10.0)):
        u = rng.standard_normal(T) * 2.5
        value, grad = entropy_on_sphere_and_gradient(u, sigma)
        assert value == pytest.approx(float(softmax_entropy(sigma * u / np.linalg.norm(u))), abs=1e-14)
        h = 1e-6
        fd = np.array([(entropy_on_sphere_and_gradient(u + h * e, sigma)[0]
                        - entropy_on_sphere_and_gradient(u - h * e, sigma)[0]) / (2 * h) for e in np.eye(T)])
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-9)
