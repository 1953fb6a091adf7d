"""Rollout and flow (against hand computations and an independent max-flow), Table 1, drawing."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnsym as at
from attnsym.graphs import (
    ARCHITECTURES,
    attention_flow,
    attention_rollout,
    decide_growth,
    max_path_length,
    mlp_graph,
    routing_graph,
    sequential_depth,
)
from attnsym.graphs.architectures import expected_growth
from attnsym.plots import draw_contrast, draw_routing
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)

# ------------------------------------------------------------------ the 2-layer, 3-token example, by hand
# Layer 1: query i reads key i+1 (mod 3). Layer 2: a softer pattern.
A1 = [[0, 1, 0], [0, 0, 1], [1, 0, 0]]
A2 = [[F(1, 2), F(1, 2), 0], [0, F(1, 2), F(1, 2)], [F(1, 3), F(1, 3), F(1, 3)]]
# Residual: Â = A/2 + I/2 (rows already sum to 1), written out by hand:
HAT1 = [[F(1, 2), F(1, 2), 0], [0, F(1, 2), F(1, 2)], [F(1, 2), 0, F(1, 2)]]
HAT2 = [[F(3, 4), F(1, 4), 0], [0, F(3, 4), F(1, 4)], [F(1, 6), F(1, 6), F(2, 3)]]
# Rollout Â2 Â1, multiplied out by hand on paper:
ROLLOUT = [[F(3, 8), F(1, 2), F(1, 8)], [F(1, 8), F(3, 8), F(1, 2)], [F(5, 12), F(1, 6), F(5, 12)]]
# Flow: with two layers the paths j -> m -> i share no edges, so maxflow(j -> i) = sum_m min(Â1[m][j], Â2[i][m]):
FLOW_RAW = [[F(1, 2), F(3, 4), F(1, 4)], [F(1, 4), F(1, 2), F(3, 4)], [F(2, 3), F(1, 3), F(2, 3)]]
FLOW = [[F(1, 3), F(1, 2), F(1, 6)], [F(1, 6), F(1, 3), F(1, 2)], [F(2, 5), F(1, 5), F(2, 5)]]


def _floats(M):
    return np.array([[float(x) for x in row] for row in M])


def test_hand_example_is_self_consistent():
    # the hand values obey their definitions (exact rational arithmetic, no attnsym involved)
    for i in range(3):
        assert sum(ROLLOUT[i]) == 1 and sum(FLOW[i]) == 1
        for j in range(3):
            assert ROLLOUT[i][j] == sum(HAT2[i][m] * HAT1[m][j] for m in range(3))
            assert FLOW_RAW[i][j] == sum(min(HAT1[m][j], HAT2[i][m]) for m in range(3))
            assert FLOW[i][j] == FLOW_RAW[i][j] / sum(FLOW_RAW[i])


def test_rollout_matches_hand_computation():
    R = attention_rollout([_floats(A1), _floats(A2)])
    np.testing.assert_allclose(R, _floats(ROLLOUT), rtol=0, atol=TOL64.atol)
    steps = attention_rollout([_floats(A1), _floats(A2)], all_layers=True)
    np.testing.assert_allclose(steps[0], _floats(HAT1), rtol=0, atol=TOL64.atol)
    # heads are averaged: two heads whose mean is A2 give the same rollout
    D = 0.1 * np.array([[1, -1, 0], [0, 1, -1], [1, -1, 0]])  # rows sum to 0
    heads = np.stack([np.stack([_floats(A1)] * 2), np.stack([_floats(A2) + D, _floats(A2) - D])])
    np.testing.assert_allclose(attention_rollout(heads), R, atol=TOL64.atol)


@pytest.mark.parametrize("method", ["dinic", "networkx"])
def test_flow_matches_hand_computation(method):
    stack = [_floats(A1), _floats(A2)]
    np.testing.assert_allclose(attention_flow(stack, normalize=False, method=method), _floats(FLOW_RAW), atol=TOL64.atol)
    np.testing.assert_allclose(attention_flow(stack, method=method), _floats(FLOW), atol=TOL64.atol)
    np.testing.assert_allclose(attention_flow(stack, outputs=[2], method=method), _floats(FLOW)[2:], atol=TOL64.atol)


def test_flow_solvers_agree_on_a_dense_stack():
    rng = np.random.default_rng(5)
    stack = [m / m.sum(axis=1, keepdims=True) for m in rng.random((4, 6, 6)) ** 3]
    np.testing.assert_allclose(
        attention_flow(stack, normalize=False), attention_flow(stack, normalize=False, method="networkx"), atol=TOL64.atol
    )


def test_rollout_without_residual_is_the_plain_product():
    rng = np.random.default_rng(0)
    mats = [m / m.sum(axis=1, keepdims=True) for m in rng.random((3, 4, 4))]
    expected = np.einsum("ab,bc,cd->ad", mats[2], mats[1], mats[0])
    np.testing.assert_allclose(attention_rollout(mats, residual=False), expected, rtol=TOL64.rtol)


@st.composite
def quarter_stacks(draw):
    """Layers whose weights are multiples of 1/4, so Â = A/2 + I/2 has integer capacities x 8."""
    n = draw(st.integers(2, 4))
    layers = draw(st.integers(2, 4))
    picks = draw(st.lists(st.integers(0, n - 1), min_size=layers * n * 4, max_size=layers * n * 4))
    A = np.zeros((layers, n, n))
    for t, j in enumerate(picks):
        A[t // (4 * n), (t // 4) % n, j] += 0.25
    return A


@settings(max_examples=30, deadline=None)
@given(quarter_stacks())
def test_flow_equals_an_independent_integer_max_flow(A):
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    layers, n = A.shape[0], A.shape[1]
    hat = (A + np.eye(n)) / 2
    cap = np.zeros(((layers + 1) * n, (layers + 1) * n), dtype=np.int32)
    for layer in range(layers):
        for i in range(n):
            for j in range(n):
                cap[layer * n + j, (layer + 1) * n + i] = round(8 * hat[layer, i, j])
    graph = csr_matrix(cap)
    expected = np.array(
        [[maximum_flow(graph, j, layers * n + i).flow_value / 8 for j in range(n)] for i in range(n)]
    )
    stack = list(A)  # a list is one entry per layer (a 3-D array would be one layer's heads)
    np.testing.assert_allclose(attention_flow(stack, normalize=False), expected, rtol=0, atol=TOL64.atol)
    np.testing.assert_allclose(attention_flow(stack, normalize=False, method="networkx"), expected, rtol=0, atol=TOL64.atol)
    if layers == 2:  # and the two-layer closed form
        closed = np.array([[sum(min(hat[0, m, j], hat[1, i, m]) for m in range(n)) for j in range(n)] for i in range(n)])
        np.testing.assert_allclose(attention_flow(stack, normalize=False), closed, atol=TOL64.atol)


def test_flow_bad_arguments():
    with pytest.raises(at.ShapeError, match=r"outputs=5 is out of range"):
        attention_flow([np.eye(2)], outputs=[5])
    with pytest.raises(at.ShapeError, match=r"method must be 'dinic' or 'networkx' \(got 'lp'\)"):
        attention_flow([np.eye(2)], method="lp")


# ------------------------------------------------------------------ Table 1
NS = range(2, 65)
K, R = 3, 4


def _smallest_layers(n, reach_after):
    """Fewest layers L >= 1 with reach_after(L) >= n - 1: an independent closed-form count."""
    L = 1
    while reach_after(L) < n - 1:
        L += 1
    return L


@pytest.fixture(scope="module")
def measured():
    return {
        arch: ([sequential_depth(arch, n, k=K, r=R) for n in NS], [max_path_length(arch, n, k=K, r=R) for n in NS])
        for arch in ARCHITECTURES
    }


def test_table1_values(measured):
    ns = list(NS)
    assert measured["self_attention"] == ([1] * len(ns), [1] * len(ns))
    assert measured["recurrent"] == (ns, ns)  # x_0 -> h_0 -> ... -> h_{n-1}: n steps
    # stacks: contiguous kernel k reaches L(k-1) back; dilated k^L - 1; a window of radius r reaches L r
    assert measured["convolution"][1] == [_smallest_layers(n, lambda L: L * (K - 1)) for n in ns]
    assert measured["dilated_convolution"][1] == [_smallest_layers(n, lambda L: K**L - 1) for n in ns]
    assert measured["restricted_self_attention"][1] == [_smallest_layers(n, lambda L: L * R) for n in ns]
    for arch in ("convolution", "dilated_convolution", "restricted_self_attention"):
        assert measured[arch][0] == [1] * len(ns)


def test_table1_growth_classes(measured):
    for arch, (seq, path) in measured.items():
        decided = (decide_growth(NS, seq, k=K, r=R).growth, decide_growth(NS, path, k=K, r=R).growth)
        assert decided == expected_growth(arch), arch
    # the constants of the table: O(n/k), O(log_k n), O(n/r), each the only candidate that explains its column
    assert decide_growth(NS, measured["convolution"][1], k=K, r=R).explained_by == ("O(n/k)",)
    assert decide_growth(NS, measured["dilated_convolution"][1], k=K, r=R).explained_by == ("O(log_k n)",)
    assert decide_growth(NS, measured["restricted_self_attention"][1], k=K, r=R).explained_by == ("O(n/r)",)


def test_table1_rows_carry_the_decision(measured):
    rows = {row["arch"]: row for row in at.graphs.table1(NS, k=K, r=R)}
    for arch, (seq, path) in measured.items():
        assert (rows[arch]["sequential_values"], rows[arch]["path_values"]) == (seq, path)
        assert rows[arch]["path"] == decide_growth(NS, path, k=K, r=R)
        assert (rows[arch]["sequential"].growth, rows[arch]["path"].growth) == expected_growth(arch), arch


def test_architecture_errors():
    with pytest.raises(at.SpecError, match=r"arch must be one of"):
        max_path_length("transformer", 4)
    with pytest.raises(at.SpecError, match=r"k must be an integer >= 2 \(got k=1\)"):
        max_path_length("convolution", 4, k=1)
    with pytest.raises(at.ShapeError, match="same length >= 3"):
        decide_growth([1, 2], [1, 2], k=K, r=R)


# ------------------------------------------------------------------ drawing (data, not pixels)
def test_draw_routing_widths_follow_weights():
    A = np.array([[0.8, 0.2, 0.0], [0.0, 1.0, 0.0], [0.5, 0.25, 0.25]])
    fig = draw_routing(A, tokens=["a", "b", "c"], max_width=10.0)
    lines = fig.axes[0].collections[0]
    assert len(lines.get_segments()) == np.count_nonzero(A)
    assert sorted(lines.get_linewidths()) == sorted(10.0 * A[A > 0])
    fig = draw_routing(routing_graph(A), layout="circle")
    assert len(fig.axes[0].patches) == np.count_nonzero(A)
    with pytest.raises(at.ShapeError, match="layout must be"):
        draw_routing(A, layout="grid")


def test_draw_mlp_and_contrast():
    fig = draw_routing(mlp_graph(np.array([[1.0, -0.5]])))
    assert len(fig.axes[0].collections[0].get_segments()) == 2
    spec = at.AttentionSpec(n=3, d_model=4, heads=2)
    rng = np.random.default_rng(0)
    weights = {name: rng.standard_normal(spec.shapes[name]) for name in spec.parameter_names}
    c = at.graphs.contrast(spec, *rng.standard_normal((2, 3, 4)), weights)
    fig = draw_contrast(c, head=1)
    assert len(fig.axes) == 4
    assert "distance" in fig.axes[3].get_title()


def test_draw_contrast_head_out_of_range_is_a_shape_error():
    # head=5 of 2 heads was a raw IndexError; head=3 of a single-head layer drew head 0 titled "head 3".
    rng = np.random.default_rng(0)
    for heads in (2, 1):
        spec = at.AttentionSpec(n=3, d_model=4, heads=heads)
        weights = {name: rng.standard_normal(spec.shapes[name]) for name in spec.parameter_names}
        c = at.graphs.contrast(spec, *rng.standard_normal((2, 3, 4)), weights)
        with pytest.raises(at.ShapeError, match=r"head=3 is out of range"):
            draw_contrast(c, head=3)
        if heads == 2:  # negative counts from the end, titled with the real head (labels count from 1)
            fig = draw_contrast(c, head=-1)
            assert fig.axes[2].get_title().splitlines()[0].startswith("attention head 2, input 1")


def test_attention_flow_single_output_position_needs_a_sequence():
    # outputs=0 (the [CLS] position, not in a list) raised TypeError: 'int' object is not iterable.
    A = np.array([[1.0, 0.0], [0.5, 0.5]])
    for bad in (0, np.int64(0), np.array(0)):
        with pytest.raises(at.ShapeError, match=r"sequence of positions \(got 0\); for one position pass \[0\]"):
            attention_flow([A, A], outputs=bad)
    # by hand (residual, two layers): A_hat = [[1, 0], [1/4, 3/4]]; flow j -> 0 is sum_m min(A_hat[m, j], A_hat[0, m])
    assert attention_flow([A, A], outputs=np.array([0]), normalize=False).tolist() == [[1.0, 0.0]]


@given(st.integers(0, 2**32 - 1), st.sampled_from(["max", "min"]), st.booleans())
@settings(max_examples=25, deadline=None)
def test_head_fusion_max_min_are_elementwise_then_row_normalised(seed, fusion, residual):
    rng = np.random.default_rng(seed)
    stack = rng.dirichlet(np.ones(4), size=(2, 3, 4))  # (layers, heads, n, n), rows on the simplex
    fused = stack.max(axis=1) if fusion == "max" else stack.min(axis=1)
    by_hand = fused / fused.sum(-1, keepdims=True)
    if residual:
        by_hand = 0.5 * by_hand + 0.5 * np.eye(4)
    R = np.eye(4)
    for M in by_hand:
        R = M @ R
    np.testing.assert_allclose(attention_rollout(stack, head=fusion, residual=residual), R, rtol=TOL64.rtol, atol=TOL64.atol)
    F_ = attention_flow(stack, head=fusion, outputs=[0])
    np.testing.assert_allclose(F_.sum(-1), 1.0)


def test_head_fusion_mean_is_the_default_and_bad_names_are_refused():
    rng = np.random.default_rng(1)
    stack = rng.dirichlet(np.ones(3), size=(2, 2, 3))
    np.testing.assert_array_equal(attention_rollout(stack), attention_rollout(stack, head="mean"))
    assert not np.allclose(attention_rollout(stack, head="max"), attention_rollout(stack, head="min"))
    with pytest.raises(at.ShapeError, match="head must be an integer or one of 'mean', 'max', 'min' \\(got 'median'\\)"):
        attention_rollout(stack, head="median")
