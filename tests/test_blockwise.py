"""The memory-lean blockwise path: equal to the plain path, forward and backward, in O(b² + n·d) memory."""

from __future__ import annotations

import contextlib
import tracemalloc

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import attnsym.numeric.blockwise as bw
from attnsym import numeric as nm
from attnsym.numeric import _fast
from attnsym.testing import TOLERANCES

TOL64 = TOLERANCES["float64"]


@st.composite
def blockwise_cases(draw):
    n = draw(st.integers(1, 12))
    heads = draw(st.sampled_from([1, 2]))
    d = 2 * draw(st.integers(1, 3))
    batch = draw(st.sampled_from([(), (2,)]))
    mask = None
    if draw(st.booleans()):
        mask = np.array(draw(st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=n, max_size=n)))
    return dict(n=n, heads=heads, d=d, batch=batch, mask=mask, causal=draw(st.booleans()),
                block=draw(st.integers(1, n + 2)), seed=draw(st.integers(0, 2**16)), fast=draw(st.booleans()))


@contextlib.contextmanager
def numpy_fast_path(enabled: bool):
    """Run NumPy arrays through the fast path (attnsym.numeric._fast) or the generic array-API code."""
    saved, _fast.ENABLED = _fast.ENABLED, enabled
    try:
        yield
    finally:
        _fast.ENABLED = saved


@settings(max_examples=60, deadline=None)
@given(case=blockwise_cases())
def test_blockwise_equals_plain_forward_and_backward(case):
    rng = np.random.default_rng(case["seed"])
    n, d, heads = case["n"], case["d"], case["heads"]
    X = rng.standard_normal((*case["batch"], n, d))
    Ws = [rng.standard_normal((d, d)) for _ in range(4)]
    b = {k: rng.standard_normal(d) for k in ("b_Q", "b_K", "b_V", "b_O")}
    G = rng.standard_normal(X.shape)
    kw = dict(heads=heads, causal=case["causal"], mask=case["mask"], positions="sinusoidal", **b)
    Y_plain, _ = nm.attention(X, *Ws, **kw)
    g_plain = nm.attention_vjp(X, *Ws[:3], G, Ws[3], **kw)
    with numpy_fast_path(case["fast"]):
        Y_block = nm.attention(X, *Ws, return_weights=False, block_size=case["block"], **kw)
        g_block = nm.attention_vjp(X, *Ws[:3], G, Ws[3], block_size=case["block"], **kw)
    np.testing.assert_allclose(Y_block, Y_plain, rtol=TOL64.rtol, atol=TOL64.atol)
    assert g_plain.keys() == g_block.keys()
    for name in g_plain:
        np.testing.assert_allclose(g_block[name], g_plain[name], rtol=TOL64.rtol, atol=TOL64.atol, err_msg=name)


def test_long_sequences_without_weights_take_the_blockwise_path(monkeypatch):
    calls = []
    real = bw.blockwise_core

    def spy(layer, Q, K, V, block_size):
        calls.append(block_size)
        return real(layer, Q, K, V, block_size)

    monkeypatch.setattr(bw, "blockwise_core", spy)
    n = nm.AUTO_BLOCKWISE_N
    X = np.random.default_rng(0).standard_normal((n, 4))
    W = np.eye(4)
    nm.attention(X[:16], W, W, W, return_weights=False)
    assert calls == []  # short: plain path
    Y = nm.attention(X, W, W, W, return_weights=False, causal=True)
    assert calls == [nm.DEFAULT_BLOCK_SIZE]
    nm.attention(X, W, W, W, return_weights=False, block_size=300)
    assert calls[-1] == 300
    Y_plain, _ = nm.attention(X, W, W, W, causal=True)  # weights asked for: plain path
    assert len(calls) == 2
    np.testing.assert_allclose(Y, Y_plain, rtol=TOL64.rtol, atol=TOL64.atol)


def _peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_blockwise_memory_is_linear_in_n_not_quadratic():
    n, d, block = 2048, 16, 128
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    W = np.eye(d)
    G = rng.standard_normal((n, d))
    square = n * n * 8  # one n × n float64 array: 32 MiB
    plain = _peak_bytes(lambda: nm.attention(X, W, W, W))
    lean = _peak_bytes(lambda: nm.attention(X, W, W, W, return_weights=False, block_size=block))
    lean_vjp = _peak_bytes(lambda: nm.attention_vjp(X, W, W, W, G, block_size=block))
    assert plain >= square  # the plain path holds the n × n weights it returns
    # blockwise: a few block × block arrays plus O(n·d) vectors (n·d·8 = 256 KiB each)
    budget = 8 * block * block * 8 + 24 * n * d * 8
    assert lean < budget < square / 4, (lean, budget)
    assert lean_vjp < budget, (lean_vjp, budget)


def test_online_softmax_twin_of_the_symbolic_merge():
    """Blockwise attention over two key blocks equals the symbolic (m, ℓ, o) merge at the same numbers."""
    from attnsym.symbolic.online_softmax import block_statistics, merge_blocks

    s = [sp.Rational(3, 2), sp.Rational(-7, 4), sp.Integer(5), sp.Rational(1, 3)]
    v = [sp.Integer(2), sp.Rational(-1, 2), sp.Rational(3, 5), sp.Integer(-4)]
    V = sp.Matrix(4, 1, v)
    first = block_statistics(s[:2], V[:2, :], max(s[:2]))
    second = block_statistics(s[2:], V[2:, :], max(s[2:]))
    _, ell, o = merge_blocks(first, second, max(s))
    expected = float((o[0] / ell).evalf(30))
    # X_j = (1, s_j, v_j); q_j = 1, k_j = s_j, v_j as value: every query's score row is s
    X = np.array([[1.0, float(a), float(b)] for a, b in zip(s, v, strict=True)])
    W_Q, W_K, W_V = np.array([[1.0], [0], [0]]), np.array([[0.0], [1], [0]]), np.array([[0.0], [0], [1]])
    Y = nm.attention(X, W_Q, W_K, W_V, scale="none", return_weights=False, block_size=2)
    np.testing.assert_allclose(Y[:, 0], expected, rtol=TOL64.rtol, atol=TOL64.atol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_blockwise_handles_rows_masked_in_early_blocks_only(dtype):
    # query 3 may attend only to key 5: its running max stays -inf through the first blocks
    n = 6
    mask = np.zeros((n, n), dtype=bool)
    mask[:, 0] = True
    mask[3] = False
    mask[3, 5] = True
    mask[4] = False  # fully masked
    rng = np.random.default_rng(3)
    X = rng.standard_normal((n, 4)).astype(dtype)
    W = np.eye(4, dtype=dtype)
    Y, A = nm.attention(X, W, W, W, mask=mask)
    Yb = nm.attention(X, W, W, W, mask=mask, return_weights=False, block_size=2)
    tol = TOLERANCES[dtype]
    np.testing.assert_allclose(Yb, Y, rtol=tol.rtol, atol=tol.atol)
    np.testing.assert_allclose(Yb[3], X[5], rtol=tol.rtol)
    assert np.all(Yb[4] == 0) and np.all(A[4] == 0)


def test_many_heads_and_batch_elements_shrink_the_default_block(monkeypatch):
    calls = []
    real = bw.blockwise_core
    monkeypatch.setattr(bw, "blockwise_core", lambda layer, Q, K, V, b: calls.append(b) or real(layer, Q, K, V, b))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((8, 300, 16))  # 8 batch elements × 4 heads: 32 lanes of 300 × 300 scores
    W = np.eye(16)
    Y = nm.attention(X, W, W, W, W, heads=4, return_weights=False)
    assert calls and 32 * calls[0] ** 2 <= nm.BLOCK_ELEMENTS < 32 * (2 * calls[0]) ** 2
    assert calls[0] < 300  # so this short sequence takes the blockwise path, in several blocks
    Y_plain, _ = nm.attention(X, W, W, W, W, heads=4)
    np.testing.assert_allclose(Y, Y_plain, rtol=TOL64.rtol, atol=TOL64.atol)
