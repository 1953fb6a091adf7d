"""The studies behind the literature, primitive, structure and position claims: typed frozen results, seeded streams,
and the helpers each study exposes, checked against numbers computed here another way."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import sympy as sp

from attnsym.studies import (
    bottleneck,
    certificates,
    identifiability,
    in_context,
    length_scaling,
    mup,
    positions,
    rank_collapse,
    sink,
    sinusoidal,
    softcap,
    softmax_jacobian,
    streams,
    table1,
)
from attnsym.studies.softmax_limits import dispersion_study


def _frozen(result: object) -> None:
    assert dataclasses.is_dataclass(result) and not isinstance(result, type)
    name = dataclasses.fields(result)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(result, name, None)


@pytest.mark.parametrize("make", [
    lambda: mup.study(streams(0, "mup-scaling"), quick=True),
    lambda: sinusoidal.study(quick=True),
    lambda: softcap.study(quick=True),
    lambda: length_scaling.study(quick=True),
    lambda: sink.study(streams(0, "off-by-one-sink"), quick=True),
    lambda: table1.study(quick=True),
    lambda: softmax_jacobian.study(streams(0, "softmax-jacobian"), quick=True),
    lambda: positions.decay_study(streams(0, "rope-long-range-decay"), quick=True),
], ids=["mup", "sinusoidal", "softcap", "length-scaling", "sink", "table1", "softmax-jacobian", "rope-decay"])
def test_study_results_are_frozen_dataclasses(make):
    _frozen(make())


def test_a_study_is_a_function_of_its_streams():
    a = mup.study(streams(3, "mup-scaling"), quick=True)
    b = mup.study(streams(3, "mup-scaling"), quick=True)
    c = mup.study(streams(4, "mup-scaling"), quick=True)
    assert a.sampled == b.sampled and a.sampled != c.sampled


def test_mup_moments_match_a_direct_simulation():
    r = mup.study(streams(0, "mup-scaling"), quick=True)
    assert sp.expand(r.exact.mean - r.exact.rho * r.exact.d) == 0
    rng = np.random.default_rng(1)
    q = rng.standard_normal((20000, 8))
    k = 0.5 * q + math.sqrt(0.75) * rng.standard_normal((20000, 8))
    assert float((q * k).sum(1).var()) == pytest.approx(float(r.exact.variance.subs({r.exact.rho: 0.5, r.exact.d: 8})),
                                                        rel=0.05)


def test_alternative_attention_keeps_the_output_and_moves_the_weights():
    rng = np.random.default_rng(0)
    A = rng.dirichlet(np.ones(10), size=10)
    V = rng.standard_normal((10, 3))
    a = identifiability.alternative(A, V)
    assert a.found and a.null_dimension == 10 - 3 - 1
    assert a.output_gap < 1e-12 and a.row_sum_gap < 1e-12 and a.min_entry >= 0 and a.moved > 1e-3
    none = identifiability.alternative(A[:4, :4] / A[:4, :4].sum(1, keepdims=True), V[:4])  # T = d_v + 1
    assert not none.found and math.isnan(none.output_gap)


def test_a_row_shift_removes_one_rank_never_two():
    assert bottleneck.no_shift_reaches(3 * sp.eye(4), 2) and not bottleneck.no_shift_reaches(3 * sp.eye(4), 3)


def test_the_numeric_gradient_step_is_the_least_squares_gradient():
    rng = np.random.default_rng(0)
    W0, X, Y = rng.standard_normal((2, 3)), rng.standard_normal((3, 7)), rng.standard_normal((2, 7))
    step = in_context.numeric_gd_step(W0, X, Y, 0.3)
    assert np.allclose(step, -0.3 * (W0 @ X - Y) @ X.T / 7, atol=1e-9)


def test_reading_rules_and_pairing_order():
    assert certificates.kv_reads(8, 2, "repeat") == [0, 0, 0, 0, 1, 1, 1, 1]
    assert certificates.kv_reads(8, 2, "tile") == [0, 1] * 4
    order = certificates.half_split_order(8, 8)
    assert sorted(order) == list(range(8)) and order[:4] == [0, 2, 4, 6]


def test_spread_is_the_equal_tailed_range():
    assert rank_collapse.spread(np.arange(101.0)) == pytest.approx((2.5, 97.5))


def test_dispersion_rows_are_the_closed_form():
    r = dispersion_study(streams(0, "dispersion"), quick=True, gap=5, sizes=(10, 1000))
    for row in r.rows:
        assert row.exact == pytest.approx(1 / (1 + (row.n - 1) * math.exp(-5)), rel=1e-12)
        assert row.numeric == pytest.approx(row.exact, rel=1e-12)


def test_scores_at_an_offset_move_with_sinusoids_not_with_rope():
    from attnsym.spec import AttentionSpec

    rng = np.random.default_rng(0)
    X, W_Q, W_K = rng.standard_normal((5, 4)), rng.standard_normal((4, 4)), rng.standard_normal((4, 4))
    rope, sinus = (AttentionSpec(n=5, d_model=4, positions=p) for p in ("rope", "sinusoidal"))
    assert np.allclose(positions.scores_at(X, W_Q, W_K, rope, 9), positions.scores_at(X, W_Q, W_K, rope, 0))
    assert not np.allclose(positions.scores_at(X, W_Q, W_K, sinus, 9), positions.scores_at(X, W_Q, W_K, sinus, 0))
