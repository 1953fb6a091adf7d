"""K/V-cache decoding against full causal attention, token by token, and its recorded costs."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsym.errors import ShapeError, SpecError
from attnsym.numeric import attention
from attnsym.numeric.kvcache import causal_decode
from attnsym.testing import TOLERANCES

TOL64 = TOLERANCES["float64"]


def _reference_rows(X, W_Q, W_K, W_V, scale):
    """Plain loop: output t attends to tokens 0..t only (independent of the library)."""
    rows = []
    for t in range(X.shape[0]):
        q = X[t] @ W_Q
        K, V = X[: t + 1] @ W_K, X[: t + 1] @ W_V
        s = K @ q * scale
        a = np.exp(s - s.max())
        rows.append((a / a.sum()) @ V)
    return np.array(rows)


@pytest.mark.parametrize("cache", [True, False])
def test_matches_hand_loop(cache):
    rng = np.random.default_rng(0)
    X, W = rng.standard_normal((7, 3)), rng.standard_normal((3, 3, 2))
    Y = causal_decode(X, *W, cache=cache).Y
    np.testing.assert_allclose(Y, _reference_rows(X, *W, 1 / np.sqrt(2)), rtol=TOL64.rtol, atol=TOL64.atol)


@pytest.mark.parametrize("cache", [True, False])
@pytest.mark.parametrize("kwargs", [
    {"heads": 2},
    {"heads": 4, "scale": "none"},
    {"heads": 2, "positions": "sinusoidal", "bias": True},
    {"heads": 1, "scale": 0.3},
])
def test_matches_full_causal_attention(cache, kwargs):
    rng = np.random.default_rng(1)
    n, d = 9, 8
    X = rng.standard_normal((n, d))
    W_Q, W_K, W_V, W_O = rng.standard_normal((4, d, d)) / np.sqrt(d)
    kw = dict(kwargs)
    biases = {}
    if kw.pop("bias", False):
        biases = {name: rng.standard_normal(d) for name in ("b_Q", "b_K", "b_V", "b_O")}
    full, _ = attention(X, W_Q, W_K, W_V, W_O, causal=True, **kw, **biases)
    result = causal_decode(X, W_Q, W_K, W_V, W_O, cache=cache, **kw, **biases)
    np.testing.assert_allclose(result.Y, full, rtol=TOL64.rtol, atol=TOL64.atol)
    assert result.cached == cache and len(result.steps) == n


def test_cached_steps_are_linear_uncached_quadratic():
    rng = np.random.default_rng(2)
    X, W = rng.standard_normal((12, 4)), rng.standard_normal((3, 4, 4))
    fast = [s["mul"] for s in causal_decode(X, *W).steps]
    slow = [s["mul"] for s in causal_decode(X, *W, cache=False).steps]
    assert len(set(np.diff(fast))) == 1  # constant increments: linear in t
    assert len(set(np.diff(np.diff(slow)))) == 1 and np.diff(np.diff(slow))[0] > 0  # quadratic
    assert causal_decode(X, *W).total_mul < causal_decode(X, *W, cache=False).total_mul


def test_errors():
    X, W = np.ones((3, 4)), np.ones((4, 4))
    with pytest.raises(ShapeError, match="X must have shape"):
        causal_decode(np.ones(4), W, W, W)
    with pytest.raises(ShapeError, match="W_K must have shape"):
        causal_decode(X, W, np.ones((3, 4)), W)
    with pytest.raises(SpecError, match="heads must be a positive integer"):
        causal_decode(X, W, W, W, heads=0)
    with pytest.raises(ShapeError, match="W_Q must have shape"):
        causal_decode(X, W, W, W, heads=3)
    with pytest.raises(SpecError, match="positions"):
        causal_decode(X, W, W, W, positions="rotary")
    with pytest.raises(ShapeError, match="b_O needs an output projection"):
        causal_decode(X, W, W, W, b_O=np.ones(4))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 7), heads=st.integers(1, 3), width=st.integers(1, 3), d_model=st.integers(1, 5),
       seed=st.integers(0, 2**16), with_wo=st.booleans())
def test_property_any_size_matches_causal_attention(n, heads, width, d_model, seed, with_wo):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d_model))
    W_Q, W_K, W_V = (rng.standard_normal((d_model, heads * width)) for _ in range(3))
    W_O = rng.standard_normal((heads * width, d_model)) if with_wo else None
    if heads > 1 and W_O is None:
        W_O = rng.standard_normal((heads * width, d_model))
    full, _ = attention(X, W_Q, W_K, W_V, W_O, heads=heads, causal=True)
    for cache in (True, False):
        np.testing.assert_allclose(causal_decode(X, W_Q, W_K, W_V, W_O, heads=heads, cache=cache).Y, full,
                                   rtol=TOL64.rtol, atol=TOL64.atol)


@pytest.mark.oracle
def test_against_torch_sdpa_causal():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    n, d, heads = 10, 8, 2
    X = rng.standard_normal((n, d))
    W_Q, W_K, W_V, W_O = rng.standard_normal((4, d, d)) / np.sqrt(d)
    split = lambda M: torch.asarray(M).reshape(n, heads, d // heads).transpose(0, 1)  # (H, n, d_k)
    Z = torch.nn.functional.scaled_dot_product_attention(split(X @ W_Q), split(X @ W_K), split(X @ W_V), is_causal=True)
    Y_torch = Z.transpose(0, 1).reshape(n, d).numpy() @ W_O
    np.testing.assert_allclose(causal_decode(X, W_Q, W_K, W_V, W_O, heads=heads).Y, Y_torch, rtol=TOL64.rtol, atol=TOL64.atol)
