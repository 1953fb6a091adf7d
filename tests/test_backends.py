"""Every public numeric function on every array library: same code, the caller's array type out.

Each test runs once per library (the ``xp`` fixture: NumPy, PyTorch, CuPy marked ``gpu``) and
compares with the NumPy result within the dtype's tolerance from the one table.
"""

from __future__ import annotations

import numpy as np
import pytest
from backends import as_xp, assert_close, is_of
from strategies import random_arrays

import attnsym as at
from attnsym import numeric as nm
from attnsym.errors import BackendError

SPEC = at.AttentionSpec(n=6, d_model=4, heads=2, causal=True, bias=True, positions="sinusoidal")


def _params(spec, a):
    return {k: a[k] for k in spec.parameter_names}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_forward_backward_and_blockwise_agree_with_numpy(xp, dtype):
    a = {k: v.astype(dtype) for k, v in random_arrays(SPEC, 3, batch=(2,)).items()}
    t = {k: as_xp(xp, v) for k, v in a.items()}
    Y, A = nm.attention(a["X"], spec=SPEC, **_params(SPEC, a))
    Yx, Ax = nm.attention(t["X"], spec=SPEC, **_params(SPEC, t))
    assert is_of(xp, Yx) and is_of(xp, Ax) and str(Yx.dtype).endswith(dtype)
    assert_close(Yx, Y, dtype)
    assert_close(Ax, A, dtype)
    assert_close(nm.attention(t["X"], spec=SPEC, return_weights=False, block_size=4, **_params(SPEC, t)), Y, dtype)
    g = nm.attention_vjp(a["X"], G=a["G"], spec=SPEC, **_params(SPEC, a))
    for block in (None, 4):
        gx = nm.attention_vjp(t["X"], G=t["G"], spec=SPEC, block_size=block, **_params(SPEC, t))
        assert gx.keys() == g.keys()
        for k in g:
            assert is_of(xp, gx[k])
            assert_close(gx[k], g[k], dtype, err_msg=k)


def test_keyword_mask_from_numpy_works_with_every_library(xp):
    a = random_arrays(SPEC, 4)
    t = {k: as_xp(xp, v) for k, v in a.items()}
    mask = np.tril(np.ones((6, 6), dtype=bool))
    mask[2, :] = False  # a fully masked row
    kw = dict(heads=2, mask=mask)
    _, A = nm.attention(a["X"], a["W_Q"], a["W_K"], a["W_V"], a["W_O"], **kw)
    _, Ax = nm.attention(t["X"], t["W_Q"], t["W_K"], t["W_V"], t["W_O"], **kw)
    assert_close(Ax, A)
    assert not np.any(A[:, 2])


def test_causal_decode_on_every_library(xp):
    rng = np.random.default_rng(5)
    X, W = rng.standard_normal((5, 4)), rng.standard_normal((4, 4, 4))
    ref = nm.causal_decode(X, *W, heads=2)
    for cache in (True, False):
        out = nm.causal_decode(as_xp(xp, X), *(as_xp(xp, w) for w in W), heads=2, cache=cache)
        assert is_of(xp, out.Y)
        assert_close(out.Y, ref.Y)
        assert [s["mul"] for s in out.steps] == [s["mul"] for s in (ref if cache else nm.causal_decode(
            X, *W, heads=2, cache=False)).steps]


def test_elementwise_twins_on_every_library(xp):
    rng = np.random.default_rng(6)
    S = rng.standard_normal((3, 4))
    S[1, 2] = -np.inf
    allowed = rng.random((3, 4)) > 0.3
    Q, K = rng.standard_normal((3, 2)), rng.standard_normal((4, 2))
    a = nm.softmax(rng.standard_normal((2, 5)))
    cases = [
        (lambda f: f(nm.softmax, S), nm.softmax(S)),
        (lambda f: nm.softmax(as_xp(xp, S), allowed, axis=0), nm.softmax(S, allowed, axis=0)),
        (lambda f: nm.scores(as_xp(xp, Q), as_xp(xp, K), 0.5, allowed), nm.scores(Q, K, 0.5, allowed)),
        (lambda f: f(nm.softmax_jacobian, a), nm.softmax_jacobian(a)),
        (lambda f: f(nm.gelu, S[0]), nm.gelu(S[0])),
        (lambda f: f(nm.gelu_tanh, Q), nm.gelu_tanh(Q)),
        (lambda f: nm.sinusoidal_positions(5, 3, xp=xp), nm.sinusoidal_positions(5, 3)),
        (lambda f: nm.conv1d(as_xp(xp, Q), as_xp(xp, np.array([0.5, -1.0, 2.0]))),
         nm.conv1d(Q, np.array([0.5, -1.0, 2.0]))),
    ]
    apply = lambda fn, value: fn(as_xp(xp, value))
    for compute, expected in cases:
        got = compute(apply)
        assert is_of(xp, got)
        assert_close(got, expected)


def test_mixing_libraries_is_a_backend_error_unless_converted(xp):
    if xp.__name__.endswith("numpy"):
        pytest.skip("needs a second library")
    X, W = np.ones((3, 2)), np.eye(2)
    with pytest.raises(BackendError, match=r"\(got X is numpy\.ndarray, W_Q is numpy\.ndarray, W_K is "):
        nm.attention(X, W, as_xp(xp, W), W)
    Y, _ = nm.attention(X, W, as_xp(xp, W), W, backend="numpy")
    assert isinstance(Y, np.ndarray)


def test_backend_keyword_converts_every_array_first(xp):
    a = random_arrays(SPEC, 7)
    name = xp.__name__.rsplit(".", 1)[1]
    Y, _ = nm.attention(a["X"], spec=SPEC, **_params(SPEC, a))
    Yc, _ = nm.attention(a["X"], spec=SPEC, backend=name, **_params(SPEC, a))
    assert is_of(xp, Yc)
    assert_close(Yc, Y)
    t = {k: as_xp(xp, v) for k, v in a.items()}
    Yn, _ = nm.attention(t["X"], spec=SPEC, backend="numpy", **_params(SPEC, t))
    assert isinstance(Yn, np.ndarray)
    assert_close(Yn, Y)
