"""How attnsym.models runs a forward pass: the BLAS threads, the weights it reads, overflow.

The agreement with transformers is checked in test_models_oracle.py and test_models_families.py;
here a pass on k BLAS threads is tied to the default one, the weights to the tensors the plan names,
and an overflow to its clear error.
"""

from __future__ import annotations

import dataclasses
import importlib
import re

import numpy as np
import pytest
from models_support import SENTENCES, minilm

from attnsym.errors import ShapeError
from attnsym.models import ModelError
from attnsym.numeric.activations import GELU_BLOCK, gelu_float32

forward_module = importlib.import_module("attnsym.models.forward")  # attnsym.models.forward is also the function

TOL = 1e-5  # float32: BLAS threads change its blocking, so the last bits may differ (the oracle's tolerance)
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


@pytest.mark.parametrize("texts", [[LONG], [LONG, SENTENCES[2]]], ids=["one text", "padded pair"])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_pass_on_k_blas_threads_equals_the_default_pass(m, texts, threads):
    ids, mask = _batch(m, texts)
    mask = mask if mask.min() == 0 else None
    one, many = _run(m, ids, mask, None), _run(m, ids, mask, threads)
    for name in ("hidden_states", "attention", "scores"):
        a, b = getattr(one, name), getattr(many, name)
        assert a.shape == b.shape
        finite = np.isfinite(a)
        assert np.array_equal(finite, np.isfinite(b))  # the same masked (-inf) scores
        np.testing.assert_allclose(a[finite], b[finite], rtol=TOL, atol=TOL, err_msg=name)


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "2"])
def test_threads_must_be_a_positive_integer(m, threads):
    with pytest.raises(ModelError, match=f"threads must be a positive integer or None \\(got {re.escape(repr(threads))}\\)"):
        _run(m, np.array([[101, 102]]), None, threads)


def test_the_weights_are_the_tensors_the_plan_names(m):
    from safetensors.numpy import load_file

    raw = load_file(str(m.folder / "model.safetensors"))
    lw = m.weights.layers[0]
    p = "encoder.layer.0."
    key = next(k for k in raw if k.endswith(p + "attention.self.query.weight"))
    prefix = key[: -len(p + "attention.self.query.weight")]
    assert np.array_equal(lw.W_Q, raw[key].T) and np.array_equal(lw.b_up, raw[prefix + p + "intermediate.dense.bias"])
    assert np.array_equal(lw.attn_norm_bias, raw[prefix + p + "attention.output.LayerNorm.bias"])
    assert np.array_equal(m.weights.token_type, raw[prefix + "embeddings.token_type_embeddings.weight"])
    assert len(lw.arrays()) == 16 and m.weights.final_norm is None  # BERT: post-norm blocks, no final norm
    count = sum(v.size for v in m.weights.arrays().values())
    count += sum(v.size for layer in m.weights.layers for v in layer.arrays().values())
    floats = sum(v.size for k, v in raw.items() if "pooler" not in k and v.dtype.kind == "f")  # not position_ids
    assert m.weights.parameter_count == count == floats


def test_an_overflowing_forward_pass_is_a_clear_error(m):
    layers = list(m.weights.layers)
    layers[3] = dataclasses.replace(layers[3], W_up=layers[3].W_up * np.float32(1e37))
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


@pytest.mark.parametrize("dtype, tol", [(np.float32, 2e-6), (np.float64, 1e-14)])
def test_the_forward_pass_gelu_tanh_is_the_checked_one(dtype, tol):
    """The pass's x / (1 + e^(−2z)) equals gelu_tanh's x·½(1 + tanh z) (the two copies of one formula), and its
    limits hold where the cube overflows."""
    from attnsym.numeric.activations import gelu_tanh, gelu_tanh_unchecked

    x = np.linspace(-12, 12, 4001).astype(dtype)
    fast, checked = gelu_tanh_unchecked(x), gelu_tanh(x)
    assert fast.dtype == dtype and fast is not x
    assert np.abs(fast - checked).max() <= tol * np.maximum(1.0, np.abs(x)).max()
    big = np.array([np.finfo(dtype).max, -np.finfo(dtype).max], dtype)
    np.testing.assert_array_equal(gelu_tanh_unchecked(big), [np.finfo(dtype).max, 0.0])


def test_packed_projection_is_the_three_weights_and_shares_their_memory(m):
    lw = m.weights.layers[0]
    d = m.config.width
    assert lw.W_QKV.shape == (d, 3 * d) and lw.b_QKV.shape == (3 * d,)
    for k, (W, b) in enumerate(((lw.W_Q, lw.b_Q), (lw.W_K, lw.b_K), (lw.W_V, lw.b_V))):
        assert np.shares_memory(W, lw.W_QKV) and np.shares_memory(b, lw.b_QKV)  # views: nothing stored twice
        assert np.array_equal(lw.W_QKV[:, k * d:(k + 1) * d], W) and np.array_equal(lw.b_QKV[k * d:(k + 1) * d], b)
    assert "W_QKV" not in lw.arrays()
    replaced = dataclasses.replace(lw, W_Q=lw.W_Q * 2)  # a changed weight is repacked
    assert np.array_equal(replaced.W_QKV[:, :d], lw.W_Q * 2)
    unbiased = dataclasses.replace(lw, b_Q=None, b_K=None, b_V=None)  # LLaMA: no q/k/v biases
    assert unbiased.b_QKV is None and unbiased.b_Q is None


@pytest.mark.parametrize("texts", [[LONG], [LONG, SENTENCES[2]]], ids=["one text", "padded pair"])
def test_a_numpy_pass_writes_every_layer_in_place_as_the_stacked_pass(m, texts, monkeypatch):
    """The NumPy pass writes each layer's scores, weights and output into one array each; the same pass with
    per-layer arrays stacked at the end (the other libraries' way) gives the same values, bit for bit."""
    ids, mask = _batch(m, texts)
    kept = forward_module.forward(m.config, m.weights, ids, mask)
    monkeypatch.setattr(forward_module, "_outputs", lambda plan, x: None)
    stacked = forward_module.forward(m.config, m.weights, ids, mask)
    for name in ("hidden_states", "attention", "scores"):
        np.testing.assert_array_equal(getattr(kept, name), getattr(stacked, name))
