"""Routing graphs, MLP graphs, metrics, validation, Hugging Face input and the contrast."""

from __future__ import annotations

import subprocess
import sys
import warnings

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import attention_specs, random_arrays, row_stochastic

import attnsym as at
from attnsym import ShapeError, SpecError
from attnsym.graphs import (
    RowSumWarning,
    attention_matrix,
    contrast,
    effective_attended,
    in_strength,
    layered_graph,
    mlp_graph,
    node_changes,
    out_strength,
    routing_distance,
    routing_graph,
    row_entropy,
)
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)

A3 = np.array([[0.5, 0.25, 0.25], [0.0, 1.0, 0.0], [0.1, 0.2, 0.7]])


# ------------------------------------------------------------------ routing graph
def test_edge_direction_and_attributes():
    G = routing_graph(A3, tokens=["the", "cat", "sat"])
    assert isinstance(G, nx.DiGraph)
    assert sorted(G.nodes) == [0, 1, 2]
    assert G.nodes[2] == {"index": 2, "token": "sat", "label": "sat", "layer": 0}
    # value flows from key j to query i with weight A[i, j]
    assert G[0][2]["weight"] == 0.1 and G[2][0]["weight"] == 0.25
    assert not G.has_edge(0, 1)  # A[1, 0] == 0: no edge
    assert G.number_of_edges() == 7
    for _, _, w in G.edges(data="weight"):
        assert type(w) is float
    assert G.graph["kind"] == "attention" and G.graph["n"] == 3


def test_pruning_threshold_and_top_k():
    G = routing_graph(A3, top_k=1)
    assert sorted(G.edges) == [(0, 0), (1, 1), (2, 2)]
    G = routing_graph(A3, threshold=0.25)
    assert sorted(G.edges) == [(0, 0), (1, 0), (1, 1), (2, 0), (2, 2)]
    assert G.graph["threshold"] == 0.25


def test_heads_layers_and_selection():
    stack = np.stack([np.eye(3), A3])  # (heads=2, n, n)
    with pytest.raises(ShapeError, match="holds 2 heads; pass head="):
        routing_graph(stack)
    assert attention_matrix(routing_graph(stack, head=1)).tolist() == A3.tolist()
    assert np.allclose(attention_matrix(routing_graph(stack, head="mean")), (np.eye(3) + A3) / 2)
    layers = np.stack([stack, stack[::-1]])  # (layers=2, heads=2, n, n)
    G = routing_graph(layers, layer=1, head=0)
    assert G.graph["layer"] == 1 and G.graph["head"] == 0 and G.nodes[0]["layer"] == 1
    assert np.array_equal(attention_matrix(G), A3)
    with pytest.raises(ShapeError, match="holds 2 layers"):
        routing_graph(layers, head=0)
    with pytest.raises(ShapeError, match="layer=5 is out of range: the input has 2 layers"):
        routing_graph(layers, layer=5, head=0)


def test_layered_graph_structure():
    G = layered_graph([A3, np.eye(3)], tokens="a b c".split())
    assert G.number_of_nodes() == 9
    assert G.number_of_edges() == 7 + 3
    assert G[3 + 0][6 + 0]["weight"] == 1.0  # layer 1 pos 0 -> layer 2 pos 0
    assert G[0][3 + 2]["weight"] == 0.1
    assert G.nodes[7] == {"index": 1, "token": "b", "label": "b", "layer": 2}
    R = layered_graph([A3], residual=True)
    assert R[1][3 + 1]["weight"] == 1.0 and R[0][3]["weight"] == 0.75


def test_mlp_graph():
    W = np.array([[0.5, -1.0, 0.0], [2.0, 0.0, 0.25]])  # (d_in=2, d_out=3), y = x W
    M = mlp_graph(W, b=np.array([1.0, 0.0, -1.0]))
    assert sorted(M.edges(data="weight")) == [(0, 2, 0.5), (0, 3, -1.0), (1, 2, 2.0), (1, 4, 0.25)]
    assert M.nodes[4] == {"index": 2, "token": "y3", "label": "y3", "layer": 1, "bias": -1.0}  # features count from 1
    assert M.nodes[1] == {"index": 1, "token": "x2", "label": "x2", "layer": 0}
    assert sorted(mlp_graph(W, top_k=1).edges) == [(0, 3), (1, 2), (1, 4)]  # largest |w| per output
    with pytest.raises(ShapeError, match="b must have shape"):
        mlp_graph(W, b=np.ones(2))
    with pytest.raises(ShapeError, match="finite"):
        mlp_graph(np.array([[np.nan]]))


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("A", "kwargs", "message"),
    [
        (np.ones((2, 3)) / 3, {}, r"A must be square in its last two axes, \(\.\.\., n, n\) \(got shape \(2, 3\)\)"),
        (np.array([[1.5, -0.5], [0.5, 0.5]]), {}, r"must be non-negative \(got -0.5 at index \(0, 1\)\)"),
        (np.array([[np.nan, 1.0], [0.5, 0.5]]), {}, r"finite weights \(got nan"),
        (np.array([[np.inf, 0.0], [0.5, 0.5]]), {}, r"finite weights \(got inf"),
        (np.eye(2), {"tokens": ["a", "b", "c"]}, r"tokens must have one label per position: expected 2 \(got 3\)"),
        (np.eye(2), {"tokens": "ab"}, r"not a single string"),
        (np.eye(2), {"threshold": -0.1}, r"threshold must be a finite number >= 0 \(got threshold=-0.1\)"),
        (np.eye(2), {"threshold": float("nan")}, r"threshold must be a finite number"),
        (np.eye(2), {"top_k": 0}, r"top_k must be an integer >= 1 \(got top_k=0\)"),
        (np.eye(2), {"top_k": 1.5}, r"top_k must be an integer >= 1 \(got top_k=1.5\)"),
        (np.eye(2), {"head": "max"}, r"head must be an integer or 'mean' \(got 'max'\)"),
        (np.eye(2), {"head": 3}, r"head=3 is out of range: the input has 1 heads"),
        (np.ones(3), {}, r"must be a square \(n, n\) matrix"),
        ("abc", {}, r"must be a numeric array"),
    ],
)
def test_bad_input_errors(A, kwargs, message):
    with pytest.raises(ShapeError, match=message):
        routing_graph(A, **kwargs)


def test_rows_not_summing_to_one_warn_but_build():
    A = np.array([[0.5, 0.4], [0.0, 0.0]])  # row 0 sums to 0.9; row 1 all zero (fully masked): fine
    with pytest.warns(RowSumWarning, match=r"1 row\(s\) of A do not sum to 1 .* sums to 0.9"):
        G = routing_graph(A)
    assert G.number_of_edges() == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        routing_graph(np.array([[1.0, 0.0], [0.0, 0.0]]))  # an all-zero row alone does not warn
        routing_graph(np.array([[1.0 + 1e-9, 0.0], [0.0, 1.0]]))  # within ROW_SUM_ATOL


# ------------------------------------------------------------------ array libraries
@pytest.mark.oracle
def test_hugging_face_output_attentions_tuple():
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(0)
    # 3 layers, batch 2, 4 heads, 5 tokens, as model(..., output_attentions=True).attentions
    attentions = tuple(torch.softmax(torch.randn(2, 4, 5, 5, generator=gen), dim=-1) for _ in range(3))
    G = routing_graph(attentions, layer=2, head=3, batch=1)
    expected = attentions[2][1, 3].double().numpy()
    assert np.array_equal(attention_matrix(G), expected)  # float32 -> float64 is exact
    L = layered_graph(attentions, head="mean")
    assert L.number_of_nodes() == 4 * 5 and L.graph["layers"] == 3
    R = at.graphs.attention_rollout(attentions)
    assert R.shape == (5, 5) and np.allclose(R.sum(axis=1), 1.0, atol=1e-6)
    stacked = torch.stack(attentions)  # (layers, batch, heads, n, n)
    assert np.array_equal(attention_matrix(routing_graph(stacked, layer=2, head=3, batch=1)), expected)


@pytest.mark.gpu
def test_cupy_array_is_accepted():
    cp = pytest.importorskip("cupy")
    A = cp.asarray([[0.25, 0.75], [1.0, 0.0]])
    assert attention_matrix(routing_graph(A)).tolist() == [[0.25, 0.75], [1.0, 0.0]]


def test_torch_tensor_with_grad_is_accepted():
    torch = pytest.importorskip("torch")
    A = torch.tensor([[0.25, 0.75], [1.0, 0.0]], dtype=torch.float64, requires_grad=True)
    assert attention_matrix(routing_graph(A)).tolist() == [[0.25, 0.75], [1.0, 0.0]]


def test_import_does_not_load_matplotlib():
    code = "import attnsym.graphs, sys; assert 'matplotlib' not in sys.modules, 'matplotlib imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------ metrics
def test_entropy_and_effective_attended_by_hand():
    A = np.array([[1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.25] * 4, [0.0] * 4])
    assert np.allclose(row_entropy(A), [0.0, np.log(2), np.log(4), 0.0], rtol=0, atol=TOL64.atol)
    assert np.allclose(effective_attended(A), [1.0, 2.0, 4.0, 0.0], rtol=TOL64.rtol)


def test_strengths_and_distance_by_hand():
    G = routing_graph(A3)
    assert in_strength(G) == pytest.approx({0: 1.0, 1: 1.0, 2: 1.0})
    assert out_strength(G) == pytest.approx({0: 0.6, 1: 1.45, 2: 0.95})
    B = np.array([[0.0, 0.5, 0.5], [0.0, 1.0, 0.0], [0.1, 0.2, 0.7]])
    # row TVs: 0.5 (|.5|+|.25|+|.25|)/2, 0, 0 -> mean 1/6
    assert routing_distance(A3, B) == pytest.approx(0.5 / 3, abs=TOL64.atol)
    assert routing_distance(routing_graph(A3), routing_graph(B)) == routing_distance(A3, B)
    ch = node_changes(A3, B)
    assert ch.row_tv.tolist() == [0.5, 0.0, 0.0]
    assert ch.top_key_changed.tolist() == [True, False, False]
    assert np.allclose(ch.received_change, [-0.5, 0.25, 0.25])
    with pytest.raises(ShapeError, match="same shape"):
        routing_distance(A3, np.eye(2))


@settings(max_examples=40, deadline=None)
@given(row_stochastic())
def test_graph_invariants(A):
    G = routing_graph(A)
    assert G.number_of_edges() == np.count_nonzero(A)
    ins, outs = in_strength(G), out_strength(G)
    assert np.allclose([ins[i] for i in range(len(A))], A.sum(axis=1), rtol=TOL64.rtol)
    assert np.allclose([outs[j] for j in range(len(A))], A.sum(axis=0), rtol=TOL64.rtol)
    assert sum(ins.values()) == pytest.approx(sum(outs.values()), rel=TOL64.rtol)
    assert np.array_equal(attention_matrix(G), A)
    k = 2
    assert routing_graph(A, top_k=k).number_of_edges() == int(np.minimum(np.count_nonzero(A, axis=1), k).sum())
    H = row_entropy(A)
    assert np.all(H >= -1e-15) and np.all(H <= np.log(len(A)) + 1e-12)
    eff = effective_attended(A)
    assert np.all(eff >= 1 - 1e-12) and np.all(eff <= np.count_nonzero(A, axis=1) + 1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(0, 2**31))
def test_distance_is_a_metric(n, seed):
    rng = np.random.default_rng(seed)
    A, B, C = (m / m.sum(axis=1, keepdims=True) for m in rng.random((3, n, n)))
    d = routing_distance
    assert d(A, A) == 0.0
    assert 0.0 <= d(A, B) <= 1.0
    assert d(A, B) == pytest.approx(d(B, A), abs=TOL64.atol)
    assert d(A, C) <= d(A, B) + d(B, C) + 1e-12


# ------------------------------------------------------------------ contrast
def _weights(spec, rng):
    return {name: rng.standard_normal(spec.shapes[name]) for name in spec.parameter_names}


@pytest.mark.parametrize("spec", [at.AttentionSpec(n=4, d_model=4), at.AttentionSpec(n=5, d_model=6, heads=2, bias=True)])
def test_contrast_random_and_identical_inputs(spec):
    rng = np.random.default_rng(1)
    weights = _weights(spec, rng)
    X1, X2 = rng.standard_normal((2, *spec.shapes["X"]))
    c = contrast(spec, X1, X2, weights)
    assert c.mlp_identical is True
    assert c.attention_identical is False and c.attention_distance > 0 and c.routing_differs
    assert len(c.head_distances) == spec.heads and len(c.attention1) == spec.heads
    # the distance is the definition applied to the weights numeric.attention returns
    _, A1 = at.numeric.attention(X1, **weights, spec=spec)
    _, A2 = at.numeric.attention(X2, **weights, spec=spec)
    tv = 0.5 * np.abs(np.asarray(A1) - np.asarray(A2)).sum(axis=-1)
    assert c.attention_distance == pytest.approx(tv.mean(), rel=TOL64.rtol)
    assert c.changes[0].row_tv.shape == (spec.n,)
    same = contrast(spec, X1, X1.copy(), weights)
    assert same.attention_distance == 0.0 and same.attention_identical and same.mlp_identical
    assert not same.routing_differs
    assert set(c.as_dict()) >= {"mlp_identical", "attention_distance", "changes"}


def test_contrast_bad_weights():
    spec = at.AttentionSpec(n=2, d_model=2)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2, 2))
    with pytest.raises(SpecError, match=r"missing \['W_V'\]"):
        contrast(spec, X, X, {"W_Q": np.eye(2), "W_K": np.eye(2)})
    with pytest.raises(ShapeError, match=r"X2 must have shape \(n, d_model\) = \(2, 2\) \(got \(3, 2\)\)"):
        contrast(spec, X, np.ones((3, 2)), {"W_Q": np.eye(2), "W_K": np.eye(2), "W_V": np.eye(2)})


@settings(max_examples=25, deadline=None)
@given(attention_specs(max_n=4, max_d=4), st.integers(0, 2**31))
def test_contrast_invariants_over_specs(spec, seed):
    arrays = random_arrays(spec, seed)
    weights = {name: arrays[name] for name in spec.parameter_names}
    X2 = np.random.default_rng(seed + 1).standard_normal(spec.shapes["X"])
    same = contrast(spec, arrays["X"], arrays["X"].copy(), weights)
    assert same.attention_distance == 0.0 and same.attention_identical and same.mlp_identical
    c = contrast(spec, arrays["X"], X2, weights)
    assert c.mlp_identical and 0.0 <= c.attention_distance <= 1.0
    assert (c.attention_distance == 0.0) == c.attention_identical


def test_routing_graph_records_negative_layer_and_head_as_their_index():
    # layer=-1, head=-1 were stored verbatim: node attribute layer=-1 and graph head=-1.
    stack = np.stack([np.stack([np.eye(3), np.full((3, 3), 1 / 3)])] * 2)  # 2 layers, 2 heads
    G = routing_graph(stack, layer=-1, head=-1)
    assert G.graph["layer"] == 1 and G.graph["head"] == 1
    assert {data["layer"] for _, data in G.nodes(data=True)} == {1}
    assert np.allclose(attention_matrix(G), 1 / 3)
    G = routing_graph(stack, layer=0, head="mean")
    assert G.graph["head"] == "mean" and G.graph["layer"] == 0
    assert "layer" not in routing_graph(np.eye(2)).graph and "head" not in routing_graph(np.eye(2)).graph


def test_complex_attention_is_refused_not_truncated():
    # np.array(..., dtype=float64) dropped the imaginary part with only a ComplexWarning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(at.ShapeError, match=r"A must hold real numbers \(got complex dtype complex128\)"):
            routing_graph(np.array([[1.0, 0.5j], [0.0, 1.0]]))
        with pytest.raises(at.ShapeError, match="must be a numeric array"):
            routing_graph([[1.0, 0.0], [0.0, 1.0, 2.0]])  # ragged lists still get the numeric-array message
