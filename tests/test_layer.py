"""The bound layer (attnsym.numeric.layer): one spec binding, and the three position hooks.

The hooks are exercised with test schemes installed on :class:`BoundLayer` (a per-position
rotation of Q and K, an additive per-head score bias): the plain path must equal an
independent NumPy write-out, and the blockwise path, the backward pass (against finite
differences) and causal decoding must all see the same scheme.
"""

from __future__ import annotations

import numpy as np
import pytest

import attnsym as at
import attnsym.numeric as nm
from attnsym.errors import ShapeError, SpecError
from attnsym.numeric import _fast
from attnsym.numeric.binding import bind, spec_from_keywords
from attnsym.numeric.kvcache import causal_decode
from attnsym.numeric.layer import BoundLayer
from attnsym.testing import TOLERANCES

TOL64 = TOLERANCES["float64"]
THETA = 0.7


def _rotation(M, p0, adjoint, xp=np):
    """Turn coordinate pairs (0, 1), (2, 3), … of each row p by the angle ±p·θ·(k+1)."""
    r, w = M.shape[-2], M.shape[-1]
    p = np.arange(p0, p0 + r, dtype=float)[:, None]  # (r, 1)
    angle = p * THETA * np.arange(1, w // 2 + 1)[None, :] * (-1.0 if adjoint else 1.0)  # (r, w/2)
    c, s = np.cos(angle), np.sin(angle)
    out = np.array(M, copy=True)
    a, b = M[..., 0:2 * (w // 2):2], M[..., 1:2 * (w // 2):2]
    out[..., 0:2 * (w // 2):2] = c * a - s * b
    out[..., 1:2 * (w // 2):2] = s * a + c * b
    return out


def _bias(H, i0, i1, j0, j1):
    slopes = 2.0 ** -np.arange(1, H + 1)[:, None, None]  # (H, 1, 1)
    i, j = np.arange(i0, i1)[:, None], np.arange(j0, j1)[None, :]
    return -slopes * np.abs(i - j)  # (H, bi, bj)


@pytest.fixture
def schemes(monkeypatch):
    monkeypatch.setattr(BoundLayer, "rotate", lambda self, M, p0=0, *, adjoint=False: _rotation(M, p0, adjoint))
    monkeypatch.setattr(BoundLayer, "score_bias", lambda self, i0, i1, j0, j1: _bias(self.heads, i0, i1, j0, j1))


def _weights(rng, d, heads, width):
    return [rng.standard_normal((d, heads * width)) / np.sqrt(d) for _ in range(3)] + \
        [rng.standard_normal((heads * width, d)) / np.sqrt(d)]


def _reference(X, W_Q, W_K, W_V, W_O, heads, causal):
    """The hooked layer written out in NumPy, independently of attnsym.numeric."""
    n = X.shape[0]
    split = lambda M: M.reshape(n, heads, -1).transpose(1, 0, 2)  # (H, n, w)
    Q, K, V = _rotation(split(X @ W_Q), 0, False), _rotation(split(X @ W_K), 0, False), split(X @ W_V)
    S = Q @ K.transpose(0, 2, 1) / np.sqrt(Q.shape[-1]) + _bias(heads, 0, n, 0, n)
    if causal:
        S = np.where(np.tril(np.ones((n, n), bool)), S, -np.inf)
    A = np.exp(S - S.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    return (A @ V).transpose(1, 0, 2).reshape(n, -1) @ W_O, A


@pytest.mark.parametrize("fast", [True, False], ids=["numpy-fast-path", "generic-path"])
@pytest.mark.parametrize("causal", [False, True])
def test_rotation_and_score_bias_hooks_reach_every_path(schemes, causal, fast, monkeypatch):
    monkeypatch.setattr(_fast, "ENABLED", fast)
    rng = np.random.default_rng(0)
    n, d, heads = 9, 8, 2
    X = rng.standard_normal((n, d))
    W = _weights(rng, d, heads, 4)
    Y_ref, A_ref = _reference(X, *W, heads, causal)
    Y, A = nm.attention(X, *W[:3], W[3], heads=heads, causal=causal)
    np.testing.assert_allclose(Y, Y_ref, rtol=TOL64.rtol, atol=TOL64.atol)
    np.testing.assert_allclose(A, A_ref, rtol=TOL64.rtol, atol=TOL64.atol)
    Y_block = nm.attention(X, *W[:3], W[3], heads=heads, causal=causal, return_weights=False, block_size=4)
    np.testing.assert_allclose(Y_block, Y_ref, rtol=TOL64.rtol, atol=TOL64.atol)
    if causal:
        for cache in (True, False):
            np.testing.assert_allclose(causal_decode(X, *W[:3], W[3], heads=heads, cache=cache).Y, Y_ref,
                                       rtol=TOL64.rtol, atol=TOL64.atol)
    G = rng.standard_normal(Y.shape)
    plain = nm.attention_vjp(X, *W[:3], G, W[3], heads=heads, causal=causal)
    blocked = nm.attention_vjp(X, *W[:3], G, W[3], heads=heads, causal=causal, block_size=4)
    loss = lambda **kw: float(np.sum(G * _reference(kw.get("X", X), kw.get("W_Q", W[0]), kw.get("W_K", W[1]),
                                                     W[2], W[3], heads, causal)[0]))
    for name, value in (("X", X), ("W_Q", W[0]), ("W_K", W[1])):
        np.testing.assert_allclose(blocked[name], plain[name], rtol=TOL64.rtol, atol=TOL64.atol, err_msg=name)
        E = np.zeros_like(value)
        E.flat[3] = 1e-6
        fd = (loss(**{name: value + E}) - loss(**{name: value - E})) / 2e-6
        assert abs(fd - plain[name].flat[3]) < 1e-7, (name, fd, plain[name].flat[3])


def test_keywords_and_spec_bind_to_the_same_layer():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((2, 5, 4))
    W = _weights(rng, 4, 2, 2)
    biases = dict.fromkeys(("b_Q", "b_K", "b_V", "b_O"))
    spec = at.AttentionSpec(n=5, d_model=4, heads=2, causal=True, scale="none", positions="sinusoidal")
    kw = dict(heads=1, causal=False, mask=None, scale="sqrt", positions=None, backend=None)
    by_spec, _ = bind(X, *W, biases, spec=spec, **kw)
    kw.update(heads=2, causal=True, scale="none", positions="sinusoidal")
    by_keywords, _ = bind(X, *W, biases, spec=None, **kw)
    assert by_keywords.spec == spec
    assert (by_spec.batch_shape, by_spec.dtype, by_spec.mask) == ((2,), "float64", None)
    assert by_keywords == by_spec


def test_spec_from_keywords_validates_with_the_spec_messages():
    W = np.ones((4, 4))
    with pytest.raises(SpecError, match=r"heads must be a positive integer \(got 0\)"):
        spec_from_keywords(3, 4, W, W, W, None, heads=0, causal=False, scale="sqrt", positions=None)
    with pytest.raises(SpecError, match="causal must be True or False"):
        spec_from_keywords(3, 4, W, W, W, None, heads=1, causal="yes", scale="sqrt", positions=None)
    with pytest.raises(SpecError, match="scale must be"):
        spec_from_keywords(3, 4, W, W, W, None, heads=1, causal=False, scale="cube", positions=None)
    assert spec_from_keywords(3, 4, W, W, W, None, heads=2, causal=False, scale=0.5, positions=None).scale_float == 0.5


def test_causal_decode_takes_a_spec_and_honours_its_position_base():
    rng = np.random.default_rng(2)
    n, d = 6, 4
    X = rng.standard_normal((n, d))
    W_Q, W_K, W_V, W_O = _weights(rng, d, 2, 2)
    spec = at.AttentionSpec(n=n, d_model=d, heads=2, causal=True, positions="sinusoidal", position_base=7)
    full, _ = nm.attention(X, W_Q, W_K, W_V, W_O, spec=spec)
    default_base, _ = nm.attention(X, W_Q, W_K, W_V, W_O, spec=spec.replace(position_base=10000))
    assert not np.allclose(full, default_base)  # the base matters at these positions
    for cache in (True, False):
        out = causal_decode(X, W_Q, W_K, W_V, W_O, spec=spec, cache=cache)
        np.testing.assert_allclose(out.Y, full, rtol=TOL64.rtol, atol=TOL64.atol)
    with pytest.raises(SpecError, match="causal_decode needs a causal spec"):
        causal_decode(X, W_Q, W_K, W_V, W_O, spec=spec.replace(causal=False))
    with pytest.raises(SpecError, match=r"give either spec= or the keyword arguments \['heads'\]"):
        causal_decode(X, W_Q, W_K, W_V, W_O, spec=spec, heads=2)
    with pytest.raises(ShapeError, match=r"X must have shape \(n, d_model\), one sequence"):
        causal_decode(np.stack([X, X]), W_Q, W_K, W_V, W_O, heads=2)


def test_causal_decode_with_a_mask_matches_masked_causal_attention():
    rng = np.random.default_rng(3)
    n, d = 5, 2
    X = rng.standard_normal((n, d))
    W = _weights(rng, d, 1, 2)[:3]
    mask = np.ones((n, n), bool)
    mask[3, :] = False  # query 3 may attend to nothing: zero row by the policy
    mask[4, 1] = False
    full, _ = nm.attention(X, *W, causal=True, mask=mask)
    for cache in (True, False):
        np.testing.assert_allclose(causal_decode(X, *W, mask=mask, cache=cache).Y, full, rtol=TOL64.rtol, atol=TOL64.atol)
    assert np.all(full[3] == 0)


@pytest.mark.parametrize("group", [1, 3])
def test_grouped_key_heads_give_the_scores_and_outputs_of_repeated_ones(group):
    """A key/value head serving its group of query heads unrepeated (grouped_matmul) equals expand_kv's repetition,
    and block_scores writes into ``out`` with a precomputed ``blocked`` mask as it returns a new array."""
    rng = np.random.default_rng(group)
    spec = at.AttentionSpec(n=6, d_model=24, heads=6, kv_heads=6 // group, causal=True, window=3)
    layer = BoundLayer(spec=spec, xp=np, batch_shape=(2,), dtype="float64", device="cpu")
    Q = rng.standard_normal((2, 6, 6, 4))
    K, V = rng.standard_normal((2, 6 // group, 6, 4)), rng.standard_normal((2, 6 // group, 6, 4))
    K_rep, V_rep = nm.layer.expand_kv(np, K, group), nm.layer.expand_kv(np, V, group)
    expected = nm.layer.block_scores(layer, Q, K_rep, 0, 6, 0, 6)
    out = np.empty_like(expected)
    blocked = ~nm.layer.allowed_block(layer, 0, 6, 0, 6)
    got = nm.layer.block_scores(layer, Q, K, 0, 6, 0, 6, out=out, blocked=blocked)
    assert got is out
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert np.array_equal(np.isneginf(got), np.isneginf(expected)) and np.isneginf(got).any()
    A = np.abs(rng.standard_normal((2, 6, 6, 6)))
    np.testing.assert_allclose(nm.layer.grouped_matmul(np, A, V), A @ V_rep, rtol=0, atol=1e-12)
