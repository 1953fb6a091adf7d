"""The head classifier counts a learned sink's mass π (gpt-oss): the ``learned-sink`` score and a broad row's entropy.

A head that gives most of each row to its sink logit is a ``learned-sink`` head, its score the mean
π over the queries that count; the sink is one more outcome of the row's entropy (``ln(m + 1)``),
so such a head is not called broad. Without a sink the score is NaN and no query counts for it. A
real route of a sink family (gpt-oss's random checkpoint) is classified from its ``sink_mass``
without ``sinks=True``.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnsym import heads as hd
from attnsym.errors import ShapeError

P = hd.PATTERNS.index


def _two_heads(n: int = 6) -> np.ndarray:
    """(1, 2, n, n): head 0 spreads 0.3 of each row over its keys (the sink takes 0.7), head 1 reads the previous token."""
    A = np.zeros((1, 2, n, n))
    for i in range(n):
        A[0, 0, i, :i + 1] = 0.3 / (i + 1)
    A[0, 1] = np.eye(n, k=-1)
    A[0, 1, 0, 0] = 1.0
    return A


def test_sink_score_is_the_mean_pi_and_names_the_head():
    report = hd.classify(_two_heads(), causal=True, sinks=True)
    assert report.scores[0, 0, P("sink")] == pytest.approx(0.7, abs=1e-12)
    assert report.scores[0, 1, P("sink")] == pytest.approx(0.0, abs=1e-12)
    assert report.primary[0][0] == "learned-sink" and "learned-sink" in report.labels[0][0]
    assert report.primary[0][1] == "previous-token"
    assert report.queries["sink"] == 5  # queries 1 … 5: query 0 sees one key only


def test_the_sink_is_an_outcome_of_the_entropy():
    """A row that spreads 0.3 uniformly and gives 0.7 to the sink: entropy over keys and sink, over ln(m + 1)."""
    report = hd.classify(_two_heads(), causal=True, sinks=True)
    expected = []
    for i in range(1, 6):
        row = np.r_[np.full(i + 1, 0.3 / (i + 1)), 0.7]
        expected.append(-(row * np.log(row)).sum() / np.log(i + 2))
    assert report.scores[0, 0, P("broad")] == pytest.approx(np.mean(expected), rel=1e-12)
    assert report.scores[0, 0, P("broad")] < hd.DEFAULT_THRESHOLDS["broad"]


def test_without_a_sink_the_score_is_nan():
    A = _two_heads()
    A[0, 0] /= A[0, 0].sum(axis=-1, keepdims=True)
    report = hd.classify(A, causal=True)
    assert np.isnan(report.scores[..., P("sink")]).all() and "sink" not in report.queries
    with pytest.raises(ShapeError, match="pass sinks=True"):
        hd.classify(_two_heads(), causal=True)


def test_a_gpt_oss_route_is_classified_from_its_sink_mass():
    pytest.importorskip("transformers")
    from test_models_2026 import checkpoint

    from attnsym import models

    m = models.load(checkpoint("gpt_oss")[0], dtype="float64")
    route = m.route("the apple phone launch event and a small model")
    assert route.sink_mass is not None
    report = hd.classify(route)
    A = np.asarray(route.attention)
    pi = np.asarray(route.sink_mass)
    np.testing.assert_allclose(pi, 1 - A.sum(axis=-1), atol=1e-12)
    np.testing.assert_allclose(report.scores[..., P("sink")], pi[..., 1:].mean(axis=-1), rtol=1e-12)
    assert report.scores[..., P("sink")].max() > 0.05  # the sinks take a visible share
