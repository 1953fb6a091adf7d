"""The property suite: invariants of attention and exact export round trips, on random inputs.

Every property runs under the ``attnsym-properties`` hypothesis profile (200 examples, the
number CI runs, drawn deterministically; ``ATTNSYM_PROPERTY_EXAMPLES`` changes the count
locally, and ``ATTNSYM_PROPERTY_RANDOM=1`` draws fresh examples, seeded by pytest's
``--hypothesis-seed=N``, to hunt for rare failures). Sizes are bounded so the whole file stays
within about a minute on two cores.
"""

from __future__ import annotations

import math
import os
from functools import cache

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import attention_specs, hostile_graphs, random_arrays

import attnsym as at
from attnsym.graphs import export, read
from attnsym.graphs.io import GraphFormatError

settings.register_profile(
    "attnsym-properties",
    max_examples=int(os.environ.get("ATTNSYM_PROPERTY_EXAMPLES", "200")),
    deadline=None,
    derandomize=not os.environ.get("ATTNSYM_PROPERTY_RANDOM"),  # by default the same examples every run (CI)
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
PROPERTY = settings(settings.get_profile("attnsym-properties"))
SEEDS = st.integers(0, 2**32 - 1)


def _forward(spec, v, **kwargs):
    weights = {name: v[name] for name in spec.parameter_names}
    return at.numeric.attention(v["X"], **weights, spec=spec, **kwargs)


# ----------------------------------------------------------------------------- weights
@PROPERTY
@given(attention_specs(max_n=5, max_d=4), SEEDS)
def test_rows_of_A_are_distributions_and_masked_rows_are_zero(spec, seed):
    _, A = _forward(spec, random_arrays(spec, seed))
    A = np.asarray(A).reshape(-1, spec.n, spec.n)
    assert (A >= 0).all()
    allowed = spec.allowed_array()
    dead = set(spec.fully_masked_rows)
    for i in range(spec.n):
        if i in dead:  # the documented policy: a query that may attend to nothing gets zeros
            assert (A[:, i] == 0).all()
        else:
            np.testing.assert_allclose(A[:, i].sum(axis=-1), 1.0, rtol=0, atol=1e-12)
            if allowed is not None:
                assert (A[:, i][:, ~allowed[i]] == 0).all()


@PROPERTY
@given(st.integers(1, 6), st.integers(1, 6), SEEDS, st.floats(-1e3, 1e3))
def test_softmax_is_invariant_to_a_constant_per_row(rows, cols, seed, shift):
    rng = np.random.default_rng(seed)
    S = rng.standard_normal((rows, cols)) * 5
    c = rng.standard_normal((rows, 1)) * shift
    np.testing.assert_allclose(at.numeric.softmax(S + c), at.numeric.softmax(S), rtol=1e-9, atol=1e-12)


@PROPERTY
@given(attention_specs(max_n=5, max_d=4, masks=False), SEEDS, st.randoms(use_true_random=False))
def test_permutation_equivariance_without_positions(spec, seed, rnd):
    spec = spec.replace(causal=False, positions=None)
    v = random_arrays(spec, seed)
    perm = list(range(spec.n))
    rnd.shuffle(perm)
    Y, A = _forward(spec, v)
    Yp, Ap = _forward(spec, {**v, "X": v["X"][perm]})
    A, Ap = np.asarray(A).reshape(-1, spec.n, spec.n), np.asarray(Ap).reshape(-1, spec.n, spec.n)
    np.testing.assert_allclose(Yp, np.asarray(Y)[perm], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(Ap, A[:, perm][:, :, perm], rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- symbolic = numeric
_COMPILED_SPECS = [
    at.AttentionSpec(n=2, d_model=2),
    at.AttentionSpec(n=3, d_model=2, causal=True),
    at.AttentionSpec(n=2, d_model=2, heads=2, bias=True),
    at.AttentionSpec(n=3, d_model=2, positions="sinusoidal"),
]


@cache
def _compiled(k: int):
    return at.symbolic.attention(_COMPILED_SPECS[k]).lambdify("Y")


@PROPERTY
@given(st.integers(0, len(_COMPILED_SPECS) - 1), SEEDS)
def test_numeric_equals_lambdified_symbolic(k, seed):
    spec = _COMPILED_SPECS[k]
    v = random_arrays(spec, seed)
    symbolic = _compiled(k)(**{name: v[name] for name in ("X", *spec.parameter_names)})["Y"]
    Y, _ = _forward(spec, v)
    np.testing.assert_allclose(Y, symbolic, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- gradients
@PROPERTY
@given(attention_specs(max_n=3, max_d=3), SEEDS)
def test_closed_form_gradients_equal_finite_differences(spec, seed):
    v = random_arrays(spec, seed)
    weights = {name: v[name] for name in spec.parameter_names}
    grads = at.numeric.attention_vjp(v["X"], **weights, G=v["G"], spec=spec)
    rng = np.random.default_rng(seed + 1)

    def loss(values):
        Y, _ = at.numeric.attention(values["X"], **{n: values[n] for n in spec.parameter_names}, spec=spec)
        return float(np.sum(np.asarray(Y) * v["G"]))

    for name in ("X", *spec.parameter_names):
        direction = rng.standard_normal(v[name].shape)
        h = 1e-6
        plus, minus = dict(v), dict(v)
        plus[name] = v[name] + h * direction
        minus[name] = v[name] - h * direction
        numeric = (loss(plus) - loss(minus)) / (2 * h)
        analytic = float(np.sum(np.asarray(grads[name]) * direction))
        assert math.isclose(analytic, numeric, rel_tol=1e-5, abs_tol=1e-7), (name, analytic, numeric)


# ----------------------------------------------------------------------------- blockwise
@PROPERTY
@given(attention_specs(max_n=6, max_d=4), SEEDS, st.integers(1, 6))
def test_blockwise_equals_plain(spec, seed, block):
    v = random_arrays(spec, seed)
    Y, _ = _forward(spec, v)
    Yb = _forward(spec, v, block_size=block, return_weights=False)  # the memory-lean path: Y only
    np.testing.assert_allclose(Yb, Y, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- exports
def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b


def _same_items(x: dict, y: dict) -> bool:
    return x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)


def assert_same_graph(G: nx.Graph, H: nx.Graph) -> None:
    """Exactly the same graph: node ids with their types, every attribute with its type and value."""
    assert sorted(map(repr, G.nodes)) == sorted(map(repr, H.nodes))
    assert _same_items(G.graph, H.graph), (G.graph, H.graph)
    for node in G:
        assert _same_items(G.nodes[node], H.nodes[node]), (node, G.nodes[node], H.nodes[node])
    assert set(G.edges) == set(H.edges)
    for u, v in G.edges:
        assert _same_items(G.edges[u, v], H.edges[u, v]), ((u, v), G.edges[u, v], H.edges[u, v])


@pytest.mark.parametrize("fmt", ["json", "graphml", "gexf", "dot"])
def test_exports_round_trip_exactly_or_refuse_naming_the_culprit(fmt, tmp_path):
    counter = iter(range(10**9))

    @PROPERTY
    @given(hostile_graphs())
    def check(G):
        path = tmp_path / f"g{next(counter)}.{fmt}"
        try:
            export(G, path)
        except GraphFormatError as error:
            assert any(word in str(error) for word in ("node", "attribute", "edge", "graph", "id")), str(error)
            assert not path.exists()
            return
        assert_same_graph(G, read(path))

    check()
