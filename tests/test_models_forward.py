"""How attnsym.models runs a forward pass: the packed Q|K|V weight, the slices, threads, overflow.

The agreement with transformers is checked in test_models_oracle.py; here the NumPy slices run on
several threads are tied to the one-slice run (which is the code path every library runs), the
slicing plan is checked to cover every row and head exactly once, and the packed weights to be
the separate ones.
"""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest
from models_support import SENTENCES, minilm
from threadpoolctl import threadpool_limits

from attnsym.errors import ShapeError
from attnsym.models import _parallel
from attnsym.models.forward import GELU_BLOCK, gelu_float32

forward_module = importlib.import_module("attnsym.models.forward")  # attnsym.models.forward is also the function

TOL = 1e-5  # float32: row slices change BLAS's blocking, so the last bits differ (the oracle's tolerance)
LONG = " ".join(["the Apple phone launch event drew a large crowd while I like to eat apples"] * 6)


@pytest.fixture(scope="module")
def m():
    return minilm()


def _batch(m, texts):
    encodings = m.encode(texts)
    n = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(texts), n), dtype=np.int64)
    mask = np.zeros((len(texts), n), dtype=np.int64)
    for b, e in enumerate(encodings):
        ids[b, :len(e.ids)] = e.ids
        mask[b, :len(e.ids)] = 1
    return ids, mask


def _run(m, ids, mask, threads):
    return forward_module.forward(m.config, m.weights, ids, mask, threads=threads)


@pytest.mark.parametrize("texts", [[LONG], [LONG, SENTENCES[2]], [LONG, SENTENCES[0], LONG[:150]]],
                         ids=["one text", "padded pair", "padded three"])
@pytest.mark.parametrize("threads", [2, 3, 5])
def test_threaded_slices_equal_the_one_slice_pass(m, texts, threads):
    ids, mask = _batch(m, texts)
    assert ids.shape[1] >= 90  # long enough that the plan really cuts it into several slices
    p = _parallel.plan(*ids.shape, m.config.heads, numpy=True, threads=threads)
    assert p.threads > 1 and len(p.rows) == p.threads
    one, many = _run(m, ids, mask if mask.min() == 0 else None, 1), _run(m, ids, mask if mask.min() == 0 else None,
                                                                        threads)
    for name in ("hidden_states", "attention", "scores"):
        a, b = getattr(one, name), getattr(many, name)
        assert a.shape == b.shape
        finite = np.isfinite(a)
        assert np.array_equal(finite, np.isfinite(b))  # the same masked (-inf) scores
        np.testing.assert_allclose(a[finite], b[finite], rtol=TOL, atol=TOL, err_msg=name)


def test_one_slice_by_default_and_other_libraries_get_one_slice():
    assert _parallel.plan(1, 128, 12, numpy=True) == _parallel.Plan(1, ((0, 128),), ((0, 1, 0, 12),), 4)
    with threadpool_limits(limits=1):
        assert _parallel.plan(1, 128, 12, numpy=True).threads == 1
    assert _parallel.plan(1, 128, 12, numpy=False, threads=4) == _parallel.Plan(1, ((0, 128),), ((0, 1, 0, 12),), 12)
    assert _parallel.plan(1, 8, 12, numpy=True, threads=4).threads == 1  # too few rows for a second thread


@pytest.mark.parametrize("batch, n, heads, threads", [(1, 128, 12, 2), (1, 100, 12, 5), (2, 64, 12, 3), (5, 40, 4, 2),
                                                      (3, 33, 2, 8), (1, 512, 1, 4)])
def test_plan_covers_every_row_and_head_once(batch, n, heads, threads):
    p = _parallel.plan(batch, n, heads, numpy=True, threads=threads)
    rows = np.zeros(batch * n, dtype=int)
    for r0, r1 in p.rows:
        rows[r0:r1] += 1
    cells = np.zeros((batch, heads), dtype=int)
    for b0, b1, h0, h1 in p.heads:
        cells[b0:b1, h0:h1] += 1
    assert np.all(rows == 1) and np.all(cells == 1)
    assert all(r1 - r0 >= _parallel.MIN_ROWS_PER_THREAD for r0, r1 in p.rows) or p.threads == 1
    assert p.head_block >= 1 and p.head_block * n * n <= max(_parallel.CACHE_BLOCK, n * n)


def test_packed_projection_is_the_three_weights_and_shares_their_memory(m):
    lw = m.weights.layers[0]
    d = m.config.width
    assert lw.W_QKV.shape == (d, 3 * d) and lw.b_QKV.shape == (3 * d,)
    for k, (W, b) in enumerate(((lw.W_Q, lw.b_Q), (lw.W_K, lw.b_K), (lw.W_V, lw.b_V))):
        assert np.shares_memory(W, lw.W_QKV) and np.shares_memory(b, lw.b_QKV)  # views: nothing stored twice
        assert np.array_equal(lw.W_QKV[:, k * d:(k + 1) * d], W) and np.array_equal(lw.b_QKV[k * d:(k + 1) * d], b)
    assert "W_QKV" not in lw.arrays() and len(lw.arrays()) == 16
    count = sum(v.size for v in (m.weights.word, m.weights.position, m.weights.token_type, m.weights.embed_ln_weight,
                                 m.weights.embed_ln_bias))
    count += sum(v.size for layer in m.weights.layers for v in layer.arrays().values())
    assert m.weights.parameter_count == count
    replaced = dataclasses.replace(lw, W_Q=lw.W_Q * 2)  # a changed weight is repacked
    assert np.array_equal(replaced.W_QKV[:, :d], lw.W_Q * 2)


def test_an_overflowing_forward_pass_is_a_clear_error(m):
    layers = list(m.weights.layers)
    layers[3] = dataclasses.replace(layers[3], W_1=layers[3].W_1 * np.float32(1e37))
    weights = dataclasses.replace(m.weights, layers=tuple(layers))
    ids, _ = _batch(m, [SENTENCES[1]])
    with pytest.raises(ShapeError, match=r"overflows float32 in layer 3 for these finite weights; .*dtype='float64'"):
        forward_module.forward(m.config, weights, ids)
    big = np.float32(1e20)  # Q and K stay finite, their products do not
    layers[3] = dataclasses.replace(m.weights.layers[3], W_Q=m.weights.layers[3].W_Q * big,
                                    W_K=m.weights.layers[3].W_K * big)
    weights = dataclasses.replace(m.weights, layers=tuple(layers))
    with pytest.raises(ShapeError, match=r"overflows float32 in the scores of layer 3 "):
        forward_module.forward(m.config, weights, ids, np.ones_like(ids))


def test_gelu_float32_blocks_and_strided_input():
    from scipy.special import erf

    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, GELU_BLOCK // 2 + 7)) * 4).astype(np.float32)[:, ::2]  # strided, not one block
    exact = 0.5 * x.astype(np.float64) * (1 + erf(x.astype(np.float64) / np.sqrt(2)))
    out = gelu_float32(x)
    assert out.shape == x.shape and out.dtype == np.float32
    assert np.abs(out - exact).max() <= 5e-6
    assert gelu_float32(np.zeros((0, 4), np.float32)).shape == (0, 4)
