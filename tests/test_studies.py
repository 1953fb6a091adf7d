"""The studies floor: named streams, typed frozen results, the old import paths, one row entropy."""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest

from attnsym.claims import CheckContext
from attnsym.graphs import routing_graph
from attnsym.graphs import row_entropy as graph_row_entropy
from attnsym.numeric import softmax
from attnsym.numeric.entropy import row_entropy, softmax_entropy
from attnsym.studies import Estimate, streams
from attnsym.studies.saturation import SaturationSizes, gradient_ratio, softmax_saturation
from attnsym.studies.training import train_retrieval


def test_streams_are_the_check_contexts_streams():
    # a claim passes its CheckContext.rng; a user passes streams(seed): the same numbers
    ours, ctx = streams(7, "softmax-saturation"), CheckContext(seed=7)
    assert ours("scores").standard_normal(3).tolist() == ctx.rng("softmax-saturation", "scores").standard_normal(3).tolist()
    assert ours("a").standard_normal() != ours("b").standard_normal()


def test_study_results_are_frozen_and_typed():
    rows = softmax_saturation(np.random.default_rng(0), [4], rows=50, n=8)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rows[0].d = 5  # type: ignore[misc]
    assert isinstance(rows[0].unscaled.entropy, Estimate)
    g = gradient_ratio(np.random.default_rng(0), 4, draws=6, n=4)
    assert g.geometric_mean_ratio.lo <= g.geometric_mean_ratio.value <= g.geometric_mean_ratio.hi
    assert SaturationSizes.of(True).rows < SaturationSizes.of(False).rows


def test_estimate_unpacks_and_scales():
    value, lo, hi = Estimate(0.5, 0.25, 0.75).scaled(100)
    assert (value, lo, hi) == (50.0, 25.0, 75.0)


@pytest.mark.parametrize(("old", "new", "names"), [
    ("attnsym.numeric.saturation", "attnsym.studies.saturation", ("softmax_saturation", "gradient_ratio",
                                                                  "w_q_gradients", "VJP_CHECKED_DRAWS")),
    ("attnsym.numeric.saturation", "attnsym.studies.intervals", ("mean_interval", "median_interval",
                                                                 "wilson_interval", "binomial_half_quantile")),
    ("attnsym.numeric.training", "attnsym.studies.training", ("train_retrieval", "retrieval_batch",
                                                              "retrieval_gradients", "ARMS", "VJP_SEQUENCES")),
    ("attnsym.numeric.training", "attnsym.studies.intervals", ("t_interval",)),
    ("attnsym.numeric.softmax_search", "attnsym.numeric.entropy", ("softmax_entropy",)),
])
def test_old_import_paths_re_export_the_moved_names(old, new, names):
    old_module, new_module = importlib.import_module(old), importlib.import_module(new)
    for name in names:
        assert getattr(old_module, name) is getattr(new_module, name), name


def test_one_row_entropy_for_weights_graphs_heads_and_logits():
    rng = np.random.default_rng(2)
    z = rng.standard_normal((6, 6)) * 3
    A = np.asarray(softmax(z))
    H = row_entropy(A)
    np.testing.assert_allclose(softmax_entropy(z), H, rtol=1e-12)
    np.testing.assert_array_equal(graph_row_entropy(A), H)
    np.testing.assert_array_equal(graph_row_entropy(routing_graph(A)), row_entropy(A))
    masked = np.zeros((2, 3))
    masked[0] = [0.5, 0.5, 0.0]
    assert row_entropy(masked).tolist() == [pytest.approx(np.log(2)), 0.0]  # 0 ln 0 = 0, an all-zero row: 0


def test_the_training_run_reports_typed_results_per_d():
    run = train_retrieval(np.random.default_rng(0), dims=[48], steps=4, seeds=2, learning_rates=(0.1, 1.0),
                          batch=4, keys=3, width=2, evaluate=5, checkpoints=2)
    at = run.per_d[0]
    assert at.best("sqrt").rate == at.best_rate["sqrt"] and set(at.start) == {"sqrt", "none"}
    assert run.best_curve("none", 0).shape == (2, len(run.steps))
    assert run.steps_to(1e9, "none", 0) == 0 and run.steps_to(-1.0, "none", 0) is None
