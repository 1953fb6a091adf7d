"""rope-relative, rope-shift-invariance, rope-long-range-decay, alibi-recency: the checks, and false variants that fail."""

from __future__ import annotations

import numpy as np
import pytest

import attnsym as at
from attnsym.claims._evidence import CheckContext
from attnsym.claims.builtin import positions as claims
from attnsym.numeric.position_experiments import (
    alibi_weights,
    rope_abel_bound,
    rope_decay_bound,
    rope_relative_scores,
    weight_by_distance,
)
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)

QUICK = CheckContext(seed=0, quick=True)
IDS = ["rope-relative", "rope-shift-invariance", "rope-long-range-decay", "alibi-recency"]


@pytest.mark.parametrize("claim_id", IDS)
def test_position_claims_come_out_as_expected(claim_id):
    ev = at.verify(claim_id, quick=True)
    assert ev.as_expected, ev.summary
    assert ev.conditions and ev.figures and ev.source


def test_rope_relative_for_absolute_sinusoids_fails():
    ev = claims.check_rope_relative(QUICK, positions="sinusoidal")
    assert ev.verdict == "fails"
    assert max(ev.details["max |S(t) − S(0)| by offset t"].values()) > 1e-3


def test_rope_shift_invariance_for_sinusoids_fails_and_alibi_holds():
    assert claims.check_rope_shift_invariance(QUICK, positions="sinusoidal").verdict == "fails"
    assert claims.check_rope_shift_invariance(QUICK, positions="alibi").verdict == "holds-under-conditions"


def test_rope_shift_invariance_links_the_related_claims():
    ev = at.verify("rope-shift-invariance", quick=True)
    assert ev.details["see also"] == ["permutation-equivariance", "no-locality-bias"]
    assert any(c.startswith("permutation-equivariance") for c in ev.conditions)
    assert ev.details["max |A(PX) − P A(X) Pᵀ|"] > 1e-3  # RoPE is not permutation-equivariant


@pytest.mark.parametrize("subject", ["monotone", "random-scores"])
def test_long_range_decay_false_variants_fail(subject):
    assert claims.check_rope_long_range_decay(QUICK, subject=subject).verdict == "fails"


def test_alibi_cutting_off_far_tokens_fails():
    ev = claims.check_alibi_recency(QUICK, cuts_off_far_tokens=True)
    assert ev.verdict == "fails"
    assert ev.details["longest shortest path"] == 1


# ----------------------------------------------------------------------------- the experiments
def test_decay_bound_is_the_mean_modulus_of_partial_sums_written_out():
    spec = at.AttentionSpec(n=1, d_model=16, positions="rope", position_base=100)
    theta = [100 ** (-2 * i / 16) for i in range(8)]
    for distance in (0, 3, 40):
        partial = [abs(sum(np.exp(1j * distance * t) for t in theta[:j])) for j in range(1, 9)]
        assert rope_decay_bound(spec, [distance])[0] == pytest.approx(np.mean(partial), rel=TOL64.rtol)


@pytest.mark.parametrize("pairing", ["rotate_half", "interleaved"])
def test_relative_scores_equal_rotated_dot_products_and_stay_under_the_abel_bound(pairing):
    spec = at.AttentionSpec(n=1, d_model=8, positions="rope", rope_pairing=pairing)
    rng = np.random.default_rng(4)
    q, k = rng.standard_normal((2, 5, 8))
    d = np.arange(0, 60, 7)
    s = rope_relative_scores(q, k, spec, d)
    for a in range(5):
        for c, delta in enumerate(d):
            R = at.numeric.rope_rotation(spec, int(delta))
            assert s[a, c] == pytest.approx(q[a] @ R @ k[a], abs=TOL64.atol)
    assert np.all(np.abs(s) <= rope_abel_bound(q, k, spec, d) + 1e-12)


def test_alibi_weights_of_zero_scores_fall_geometrically():
    spec = at.AttentionSpec(n=6, d_model=4, heads=4, positions="alibi", causal=True)
    A = alibi_weights(np.zeros((4, 6, 1)), np.zeros((4, 6, 1)), spec)
    for h, m in enumerate(at.numeric.alibi_slopes(4)):
        row = A[h, 5]
        np.testing.assert_allclose(row[1:] / row[:-1], np.exp(m), rtol=TOL64.rtol)
    profile = weight_by_distance(A)
    assert np.all(np.diff(profile, axis=-1) < 0)


def test_position_figures_draw_the_claims_data():
    from attnsym import plots

    fig = plots.rope_decay_figure(d_k=32, max_distance=40, samples=20)
    spec = at.AttentionSpec(n=1, d_model=32, positions="rope")
    np.testing.assert_allclose(fig.axes[0].get_lines()[0].get_ydata(), rope_decay_bound(spec, np.arange(41)))
    fig = plots.alibi_bias_figure(heads=5, n=6, show_heads=2)
    assert [ax.get_title() for ax in fig.axes[:2]] == ["head 5: $m = 2^{-1}$", "head 1: $m = 2^{-2}$"]
    slopes = [line.get_ydata()[1] for line in fig.axes[3].get_lines()]  # the bias at distance 1, per head
    np.testing.assert_allclose(slopes, -at.numeric.alibi_slopes(5))
    fig = plots.rope_frequencies_figure(d_k=16, base=100, n=8)
    np.testing.assert_allclose(fig.axes[0].get_lines()[0].get_ydata(), at.numeric.rope_frequencies(
        at.AttentionSpec(n=1, d_model=16, positions="rope", position_base=100)))


@pytest.mark.parametrize("name", ["rope", "rope-decay", "alibi"])
def test_position_figures_are_in_the_catalogue(name, tmp_path):
    from attnsym import plots
    from attnsym.cli import main

    assert name in plots.FIGURES
    fig = plots.figure(name, quick=True)
    assert fig.axes and all(ax.has_data() for ax in fig.axes if ax.get_label() != "<colorbar>")
    assert main(["plot", name, "-o", str(tmp_path / f"{name}.png")]) == 0
    assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
