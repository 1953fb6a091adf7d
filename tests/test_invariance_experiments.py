"""The measured key-bias and equal-token experiments (numeric.invariances), shared by two claims and their figures."""

from __future__ import annotations

import numpy as np
import pytest
from figure_checks import layout_problems

from attnsym import plots
from attnsym.claims import verify
from attnsym.errors import SpecError
from attnsym.numeric.invariances import bias_loss_slices, gradients_near_equal_tokens
from attnsym.spec import AttentionSpec

BIAS_SPECS = [AttentionSpec(n=5, d_model=4, heads=2, bias=True), AttentionSpec(n=4, d_model=3, bias=True, causal=True),
              AttentionSpec(n=4, d_model=2, bias=True, scale="none")]


@pytest.mark.parametrize("spec", BIAS_SPECS, ids=lambda s: s.describe())
@pytest.mark.parametrize("seed", [0, 7])
def test_only_the_key_bias_leaves_the_loss_unchanged(spec, seed):
    s = bias_loss_slices(spec, seed, offsets=np.linspace(-2, 2, 9))
    assert np.max(np.abs(s.loss_change["b_K"])) < 1e-12
    assert s.backward["b_K"] < 1e-12 and s.central["b_K"] < 1e-8
    for name in ("b_Q", "b_V"):
        assert np.max(np.abs(s.loss_change[name])) > 1e-3, name
        # the backward pass against central differences of the forward pass, an independent route to the gradient
        assert s.backward[name] == pytest.approx(s.central[name], rel=1e-5), name


def test_bias_slices_are_reproducible_and_seeded():
    a, b = (bias_loss_slices(BIAS_SPECS[0], 3, offsets=[1.0]) for _ in range(2))
    c = bias_loss_slices(BIAS_SPECS[0], 4, offsets=[1.0])
    assert a.loss_change["b_Q"][0] == b.loss_change["b_Q"][0] != c.loss_change["b_Q"][0]
    assert bias_loss_slices(BIAS_SPECS[0], 3, offsets=[0.0]).loss_change["b_Q"][0] == 0.0


@pytest.mark.parametrize("spec", [AttentionSpec(n=6, d_model=4, heads=2), AttentionSpec(n=5, d_model=3, causal=True),
                                  AttentionSpec(n=4, d_model=4, bias=True)], ids=lambda s: s.describe())
def test_equal_tokens_give_query_and_key_no_gradient_and_it_returns_quadratically(spec):
    eps = [0.0, 1e-4, 1e-3, 1e-2, 1.0]
    g = gradients_near_equal_tokens(spec, 1, epsilons=eps)
    for name in ("W_Q", "W_K"):
        assert g.max_gradient[name][0] < 1e-12, name
        assert np.all(g.max_gradient[name][1:] > 0), name
        slope = np.polyfit(np.log(eps[1:4]), np.log(g.max_gradient[name][1:4]), 1)[0]
        assert slope == pytest.approx(2.0, abs=0.1), (name, slope)
    assert g.max_gradient["W_V"][0] > 1e-3  # the layer still learns what to output


@pytest.mark.parametrize(("call", "message"), [
    (lambda: bias_loss_slices(AttentionSpec(n=3, d_model=2)), "spec must have bias=True"),
    (lambda: bias_loss_slices(BIAS_SPECS[0], offsets=[]), "offsets must be a non-empty sequence"),
    (lambda: bias_loss_slices(BIAS_SPECS[0], offsets=[np.nan]), "offsets must be a non-empty sequence"),
    (lambda: bias_loss_slices(BIAS_SPECS[0], step=0.0), r"step must be a number in \(0, 1\)"),
    (lambda: bias_loss_slices(BIAS_SPECS[0], seed=-1), "seed"),
    (lambda: gradients_near_equal_tokens(AttentionSpec(n=3, d_model=2, positions="sinusoidal")), "spec must have no positions"),
    (lambda: gradients_near_equal_tokens(AttentionSpec(n=3, d_model=2), epsilons=[-1.0]), "epsilons must be >= 0"),
])
def test_bad_arguments_are_spec_errors(call, message):
    with pytest.raises(SpecError, match=message):
        call()


def test_the_figures_draw_the_experiment_they_are_given():
    s = bias_loss_slices(plots.limits.BIAS_SPEC, 2, offsets=np.linspace(-1, 1, 5))
    fig = plots.bias_slices_figure(s)
    lines = {line.get_label().split(":")[0]: line for line in fig.axes[0].get_lines() if ":" in line.get_label()}
    assert sorted(lines) == sorted(s.loss_change)
    for name, line in lines.items():
        np.testing.assert_array_equal(line.get_ydata(), s.loss_change[name])
    g = gradients_near_equal_tokens(plots.limits.EQUAL_TOKENS_SPEC, 2, epsilons=[0.0, 1e-3, 1e-1])
    fig = plots.equal_tokens_figure(g)
    drawn = {line.get_label().split("|")[1]: line for line in fig.axes[0].get_lines() if "∂L/∂" in line.get_label()}
    assert sorted(drawn) == ["∂L/∂W_K", "∂L/∂W_O", "∂L/∂W_Q", "∂L/∂W_V"]
    np.testing.assert_array_equal(drawn["∂L/∂W_Q"].get_xdata(), [1e-3, 1e-1])  # ε = 0 is in the legend, not on the axis
    np.testing.assert_array_equal(drawn["∂L/∂W_Q"].get_ydata(), g.max_gradient["W_Q"][1:])
    assert "exactly 0" in drawn["∂L/∂W_Q"].get_label()


@pytest.mark.parametrize(("claim_id", "figure"), [("key-bias-invariance", "bias-slices"), ("rank-one-input", "equal-tokens")])
def test_each_claim_draws_its_own_experiment_and_the_figure_reads_cleanly(claim_id, figure):
    ev = verify(claim_id, quick=True)
    assert ev.as_expected and set(ev.figures) == {figure}
    assert layout_problems(ev.figures[figure](), f"{claim_id}: {figure}") == []
