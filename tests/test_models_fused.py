"""The forward pass's compiled float32 kernels (attnsym.numeric._kernels), tied to the array path they replace.

Each kernel against its NumPy counterpart and a float64 reference, the softmax's edge cases
(masked keys, a fully masked row, underflow), and whole forward passes of both families with the
kernels on and off. The agreement of the fused pass with transformers is in test_models_oracle.py
(the kernels are on there whenever Numba is installed).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from models_support import SENTENCES, minilm, tiny_gpt2
from scipy.special import erf

pytest.importorskip("numba")

from attnsym import models
from attnsym.errors import BackendError, ShapeError
from attnsym.numeric import _kernels, gelu_float32, layer_norm

forward_module = importlib.import_module("attnsym.models.forward")


def _softmax64(S):
    S = S.astype(np.float64)
    top = S.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(S - top)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


def test_available_and_switched_off(monkeypatch):
    assert _kernels.available()
    monkeypatch.setenv("ATTNSYM_NUMBA", "0")
    assert not _kernels.available()
    monkeypatch.delenv("ATTNSYM_NUMBA")
    with _kernels.disabled():
        assert not _kernels.available()
        with _kernels.disabled():
            assert not _kernels.available()
        assert not _kernels.available()
    assert _kernels.available()


def test_bias_gelu_is_the_array_gelu_and_exact_gelu():
    rng = np.random.default_rng(0)
    x = np.concatenate([np.linspace(-12, 12, 4801), rng.standard_normal(5000) * 3]).astype(np.float32)
    h = x.reshape(1, -1) - 0.25
    b = np.full(h.shape[1], 0.25, np.float32)
    got = _kernels.bias_gelu(h.copy(), b)[0]
    x64 = (h[0].astype(np.float64) + 0.25)
    exact = 0.5 * x64 * (1 + erf(x64 / np.sqrt(2)))
    assert np.abs(got - exact).max() <= 2e-6 * max(1.0, np.abs(x64).max()) / 4
    assert np.abs(got - gelu_float32((h[0] + b).astype(np.float32))).max() <= 1e-6 * 12


def test_residual_layernorm_is_layer_norm_of_the_sum():
    rng = np.random.default_rng(1)
    a, res = (rng.standard_normal((7, 384)).astype(np.float32) * 3 for _ in range(2))
    bias, w, beta = (rng.standard_normal(384).astype(np.float32) for _ in range(3))
    want = layer_norm((a.astype(np.float64) + bias + res), w, beta, 1e-12)
    got = a.copy()
    out = _kernels.residual_layernorm(got, bias, res, w, beta, 1e-12, np.empty_like(a))
    np.testing.assert_allclose(got, a + bias + res, rtol=0, atol=1e-5)  # the sum stays in a
    np.testing.assert_allclose(out, want, rtol=0, atol=2e-5)
    same = a.copy()  # out may be a itself
    np.testing.assert_allclose(_kernels.residual_layernorm(same, None, None, w, beta, 1e-5, same),
                               layer_norm(a.astype(np.float64), w, beta, 1e-5), rtol=0, atol=2e-5)
    assert np.array_equal(a, a.copy())


def test_softmax_rows_masks_underflow_and_a_fully_masked_row():
    S = np.array([[0.0, np.log(3.0), -np.inf, -np.inf],
                  [-np.inf] * 4,  # no allowed key: all 0 (attnsym.numeric.softmax's policy)
                  [0.0, -86.0, -88.0, -1e30],  # e^-86 kept, below e^-87 flushed to 0
                  [1e4, 1e4 - 20, -1e4, 3e4]], np.float32)
    A = _kernels.softmax_rows(S, np.full_like(S, np.nan))
    assert np.array_equal(A[0, 2:], [0, 0]) and np.array_equal(A[1], np.zeros(4))
    np.testing.assert_allclose(A[0, :2], [0.25, 0.75], rtol=2e-6)
    assert A[2, 1] > 0 and A[2, 2] == 0 and A[2, 3] == 0
    np.testing.assert_allclose(A, _softmax64(S), rtol=0, atol=1e-7)
    assert np.isfinite(S).sum() == 10  # S unchanged


def test_softmax_rows_exp_is_accurate_over_the_whole_range():
    x = np.linspace(-86.9, 0, 200001).astype(np.float32)  # below -87 the weight is flushed to 0
    S = np.stack([np.zeros_like(x), x], axis=1)  # A[:, 1] = e^x / (1 + e^x)
    got = _kernels.softmax_rows(S, np.empty_like(S))[:, 1].astype(np.float64)
    want = np.exp(x.astype(np.float64)) / (1 + np.exp(x.astype(np.float64)))
    assert np.max(np.abs(got - want) / want) <= 2e-6


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=2, max_dims=4, min_side=1, max_side=40),
                  elements=st.floats(-1e4, 1e4, width=32) | st.just(-np.inf)))
def test_softmax_rows_matches_float64_softmax(S):
    A = _kernels.softmax_rows(S, np.empty_like(S))
    want = _softmax64(S)
    np.testing.assert_allclose(A, want, rtol=0, atol=2e-6)
    assert np.all((A >= 0) & (A <= 1))
    assert np.all(A[S == -np.inf] == 0)
    sums = A.sum(axis=-1)
    some = np.isfinite(S).any(axis=-1)
    np.testing.assert_allclose(sums[some], 1.0, atol=3e-6)
    assert np.all(sums[~some] == 0)


def test_softmax_rows_of_a_strided_range_of_heads():
    rng = np.random.default_rng(2)
    S = rng.standard_normal((3, 12, 9, 9)).astype(np.float32)
    A = np.zeros_like(S)
    _kernels.softmax_rows(S[:, 4:8], A[:, 4:8])  # not contiguous: one call per text
    np.testing.assert_allclose(A[:, 4:8], _softmax64(S[:, 4:8]), rtol=0, atol=2e-7)
    assert not A[:, :4].any() and not A[:, 8:].any()


def test_kernels_refuse_what_they_cannot_take():
    with pytest.raises(ShapeError, match="float64"):
        _kernels.bias_gelu(np.zeros((2, 3)), np.zeros(3))
    with pytest.raises(ShapeError, match="not C-contiguous"):
        _kernels.softmax_rows(np.zeros((4, 4), np.float32)[:, ::2], np.zeros((4, 2), np.float32))
    with pytest.raises(ShapeError, match="same shape"):
        _kernels.softmax_rows(np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32))


def test_without_numba_the_kernels_say_what_to_install(monkeypatch):
    monkeypatch.setitem(_kernels._STATE, "kernels", None)  # as if Numba could not be imported
    assert not _kernels.available()
    with pytest.raises(BackendError, match=r"pip install 'attnsym\[fast\]'"):
        _kernels.softmax_rows(np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32))
    m = minilm()  # the forward pass takes the NumPy operations instead
    out = forward_module.forward(m.config, m.weights, np.array([[101, 1045, 2066, 102]]))
    np.testing.assert_allclose(out.attention.sum(-1), 1.0, atol=1e-6)


@pytest.fixture
def every_pass_fused(monkeypatch):
    """The kernels for passes of any length (by default only from FUSED_MIN_TOKENS tokens on)."""
    monkeypatch.setattr(forward_module, "FUSED_MIN_TOKENS", 1)


def test_short_passes_take_the_numpy_operations():
    x = np.zeros((1, forward_module.FUSED_MIN_TOKENS - 1, 8), np.float32)
    assert not forward_module._fusable(x)
    assert forward_module._fusable(np.zeros((2, forward_module.FUSED_MIN_TOKENS // 2, 8), np.float32))  # texts together
    assert not forward_module._fusable(np.zeros((1, 128, 8)))  # float64: the array path


def _both(m, ids, mask=None):
    x = forward_module.embed(m.config, m.weights, ids)
    assert forward_module._fusable(x)  # the kernels really run
    out = forward_module.forward(m.config, m.weights, ids, mask)
    with _kernels.disabled():
        ref = forward_module.forward(m.config, m.weights, ids, mask)
    return out, ref


def _assert_close(out, ref, tol):
    for name in ("hidden_states", "attention", "scores"):
        a, b = getattr(out, name), getattr(ref, name)
        finite = np.isfinite(b)
        assert np.array_equal(np.isfinite(a), finite), name
        np.testing.assert_allclose(a[finite], b[finite], rtol=tol, atol=tol, err_msg=name)  # scores reach ~30


def test_bert_pass_with_and_without_the_kernels(every_pass_fused):
    m = minilm()
    routes = [m.route(t) for t in (SENTENCES[0], SENTENCES[2])]
    n = max(len(r.ids) for r in routes)
    ids = np.zeros((2, n), np.int64)
    mask = np.zeros((2, n), np.int64)
    for b, r in enumerate(routes):
        ids[b, :len(r.ids)], mask[b, :len(r.ids)] = r.ids, 1
    out, ref = _both(m, ids, mask)
    _assert_close(out, ref, 2e-5)  # hidden states reach 10.5: a few float32 steps apart
    exact = forward_module.forward(m.config, models.load(m.folder, dtype="float64").weights, ids, mask)
    for path in (out, ref):  # both as close to the float64 pass (measured: about 2e-6 each)
        _assert_close(path, exact, 1e-5)
    assert np.all(out.attention[:, 1, :, :, mask[1] == 0] == 0)  # padding keys: exactly 0


@pytest.mark.parametrize("scale_by_layer", [False, True])
def test_gpt2_pass_with_and_without_the_kernels(scale_by_layer, every_pass_fused):
    m = models.load(tiny_gpt2(scale_by_layer=scale_by_layer))
    ids = np.array([[1, 5, 9, 2, 7, 7, 3, 11]], np.int64)
    out, ref = _both(m, ids)
    _assert_close(out, ref, 1e-5)
    assert np.all(out.attention[..., 0, 1:] == 0)  # causal


# ----------------------------------------------------------------------------- the pass's primitives
def _inputs(dtype, rng):
    x, res = (rng.standard_normal((2, 5, 48)).astype(dtype) * 3 for _ in range(2))
    w, beta = (rng.standard_normal(48).astype(dtype) for _ in range(2))
    return x, res, w, beta


@pytest.mark.parametrize("kind", ["layer", "rms"])
def test_fused_primitives_are_the_array_primitives_float32_and_float64(kind):
    """Each primitive of FusedPrimitives (float32) against ArrayPrimitives in float32 and in float64."""
    from attnsym.models.forward import ARRAY, FUSED
    from attnsym.models.plan import Norm

    rng = np.random.default_rng(3)
    norm = Norm(kind, 1e-5, offset=0.0)
    x, res, w, beta = _inputs(np.float32, rng)
    x64, res64, w64, beta64 = (a.astype(np.float64) for a in (x, res, w, beta))
    for tol, args in ((2e-5, (x, w, beta)), (2e-5, (x64, w64, beta64))):
        np.testing.assert_allclose(FUSED.norm(np, x, norm, w, beta), ARRAY.norm(np, *args[:1], norm, *args[1:]),
                                   rtol=0, atol=tol)
    s, out = FUSED.add_norm(np, x.copy(), beta, res, norm, w, beta)
    s64, out64 = ARRAY.add_norm(np, x64, beta64, res64, norm, w64, beta64)
    np.testing.assert_allclose(s, s64, rtol=0, atol=1e-5)
    np.testing.assert_allclose(out, out64, rtol=0, atol=2e-5)
    h = x[0] * 2
    for act in ("gelu", "gelu_tanh", "relu"):
        got = FUSED.bias_act(np, h.copy(), beta, act)
        np.testing.assert_allclose(got, ARRAY.bias_act(np, h.astype(np.float64), beta64, act), rtol=0, atol=1e-5)
        np.testing.assert_allclose(got, ARRAY.bias_act(np, h.copy(), beta, act), rtol=0, atol=5e-6)
    S = np.where(rng.random((2, 3, 6, 6)) < 0.2, -np.inf, rng.standard_normal((2, 3, 6, 6)) * 8).astype(np.float32)
    S[0, 0, 2] = -np.inf  # a fully masked row: all 0 in both
    A = FUSED.softmax(np, S)
    np.testing.assert_allclose(A, ARRAY.softmax(np, S.astype(np.float64)), rtol=0, atol=1e-6)
    np.testing.assert_allclose(A, ARRAY.softmax(np, S), rtol=0, atol=1e-6)
    assert np.all(A[0, 0, 2] == 0) and np.isneginf(S[0, 0, 2]).all()  # S kept


def _count(monkeypatch):
    from attnsym.models.forward import ArrayPrimitives, FusedPrimitives

    calls = {"array": 0, "fused": 0}
    for cls, key in ((ArrayPrimitives, "array"), (FusedPrimitives, "fused")):
        original = cls.__dict__["softmax"]

        def counted(self, xp, S, out=None, original=original, key=key):
            calls[key] += 1
            return original(self, xp, S, out)

        monkeypatch.setattr(cls, "softmax", counted)
    return calls


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_one_implementation_per_pass(monkeypatch, dtype):
    """A pass takes one implementation: the kernels for a long float32 NumPy pass, the array operations otherwise."""
    m = minilm() if dtype == "float32" else models.load(minilm().folder, dtype="float64")
    long = " ".join([SENTENCES[0]] * 20)
    calls = _count(monkeypatch)
    r = m.route(long)
    assert r.n >= forward_module.FUSED_MIN_TOKENS
    fused = dtype == "float32"
    assert calls == {"array": 0 if fused else 6, "fused": 6 if fused else 0}
    assert type(forward_module.primitives(np.zeros((1, r.n, 4), dtype))).__name__ == (
        "FusedPrimitives" if fused else "ArrayPrimitives")
    monkeypatch.setenv("ATTNSYM_NUMBA", "0")
    calls.update(array=0, fused=0)
    off = m.route(long)
    assert calls == {"array": 6, "fused": 0}
    tol = 1e-5 if fused else 1e-12  # float32: kernels vs array operations; float64: the same code twice
    np.testing.assert_allclose(r.attention, off.attention, rtol=0, atol=tol)
    np.testing.assert_allclose(r.hidden_states, off.hidden_states, rtol=0, atol=20 * tol)


def test_kernels_load_with_a_cold_numba_cache(tmp_path):
    """The one registry loaded from two threads at once (the forward's kernels and the fast path's), with an empty
    Numba cache: no deadlock, one compilation, the softmax right."""
    import os
    import subprocess
    import sys

    code = """
import threading, numpy as np
from attnsym.numeric import _kernels
done = []
threads = [threading.Thread(target=lambda: done.append(_kernels.load())),
           threading.Thread(target=lambda: done.append(_kernels.compiled() is not None))]
for t in threads: t.start()
for t in threads: t.join(240)
assert done == [True, True] or sorted(done) == [True, True], done
S = np.array([[0.0, np.log(3.0), -np.inf]], np.float32)
assert _kernels.compiled() is _kernels.compiled() and "bias_gelu" in _kernels.compiled()
print(np.round(_kernels.softmax_rows(S, np.empty_like(S)), 6).tolist())
"""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "ATTNSYM_NUMBA": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[[0.25, 0.75, 0.0]]"
