"""One input-checking path for every public numeric function (issue: reliability, "Numbers").

Every function refuses the same classes of bad input with the same messages, and finite
inputs whose results cannot be represented raise a ShapeError naming what overflowed — never
a silent NaN, forward or backward.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import attnsym as at
import attnsym.numeric as nm
from attnsym.errors import AttnsymError, ShapeError, SpecError

I2 = np.eye(2)

BAD_ARRAYS = [
    (np.array([[1, 2], [3, 4]]), "must have dtype float32 or float64 \\(got int64\\)"),
    (np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float16), "must have dtype float32 or float64 \\(got float16\\)"),
    (np.array([[1 + 1j, 2.0], [3.0, 4.0]]), "got complex128\\); complex numbers have no order"),
    (np.array([[np.nan, 2.0], [3.0, 4.0]]), "contains non-finite values"),
    (np.array([[np.inf, 2.0], [3.0, 4.0]]), "contains non-finite values"),
    (np.array([[True, False], [True, True]]), "must have dtype float32 or float64 \\(got bool\\)"),
]
CALLS = {
    "attention": lambda x: nm.attention(x, I2, I2, I2),
    "attention_vjp": lambda x: nm.attention_vjp(x, I2, I2, I2, np.ones((2, 2))),
    "causal_decode": lambda x: nm.causal_decode(x, I2, I2, I2),
    "softmax": lambda x: nm.softmax(x),
    "scores": lambda x: nm.scores(x, I2),
    "softmax_jacobian": lambda x: nm.softmax_jacobian(x),
    "gelu": lambda x: nm.gelu(x),
    "gelu_tanh": lambda x: nm.gelu_tanh(x),
}


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize(("value", "message"), BAD_ARRAYS, ids=["int", "float16", "complex", "nan", "inf", "bool"])
def test_every_function_refuses_the_same_bad_arrays_the_same_way(name, value, message):
    with pytest.raises(ShapeError, match=message):
        CALLS[name](value)


def test_softmax_takes_minus_inf_as_masked_and_refuses_plus_inf():
    np.testing.assert_array_equal(nm.softmax(np.array([[0.0, -np.inf]])), [[1.0, 0.0]])
    with pytest.raises(ShapeError, match=r"S contains non-finite values \(nan or \+inf\)"):
        nm.softmax(np.array([[0.0, np.inf]]))


@pytest.mark.parametrize("mask", [np.ones((2, 2), dtype=int), np.zeros((2, 2)), "True"], ids=["int", "float", "str"])
def test_masks_must_be_boolean_everywhere(mask):
    X = np.ones((2, 2))
    for call in (lambda: nm.attention(X, I2, I2, I2, mask=mask), lambda: nm.causal_decode(X, I2, I2, I2, mask=mask)):
        with pytest.raises(ShapeError, match="mask must be a boolean array with True = may attend"):
            call()
    for call in (lambda: nm.softmax(X, allowed=mask), lambda: nm.scores(X, X, allowed=mask)):
        with pytest.raises(ShapeError, match="allowed must be a boolean array with True = may attend"):
            call()


def test_flags_are_real_booleans():
    X = np.ones((2, 2))
    with pytest.raises(SpecError, match=r"cache must be True or False \(got 'no' of type str\)"):
        nm.causal_decode(X, I2, I2, I2, cache="no")
    with pytest.raises(SpecError, match=r"return_weights must be True or False \(got 0\)"):
        nm.attention(X, I2, I2, I2, return_weights=0)
    with pytest.raises(SpecError, match="causal must be True or False"):
        nm.attention(X, I2, I2, I2, causal="yes")


@pytest.mark.parametrize("scale", [sp.nan, 1 + sp.I, sp.I, 2j, complex(1, 0), 10**400, sp.Integer(10) ** 400,
                                   float("nan"), -1.0, sp.zoo], ids=str)
def test_scales_that_are_not_positive_finite_reals_are_spec_errors(scale):
    with pytest.raises(SpecError, match="scale must be"):
        at.AttentionSpec(n=2, d_model=2, scale=scale)
    with pytest.raises(SpecError, match="scale must be"):
        nm.attention(np.ones((2, 2)), I2, I2, I2, scale=scale)


def test_scores_scale_is_a_positive_finite_number():
    for scale in (float("nan"), 0.0, "2", 1j):
        with pytest.raises(SpecError, match=r"scale must be a (positive )?finite"):
            nm.scores(I2, I2, scale)


def test_softmax_axis_must_be_an_axis():
    with pytest.raises(SpecError, match=r"axis must be an integer axis of S, from -2 to 1 \(got 2\)"):
        nm.softmax(np.zeros((2, 2)), axis=2)


# ---------------------------------------------------------------------------- overflow: never a silent NaN
OVERFLOWING = [
    pytest.param(np.array([[1e155, 0.0], [0.0, 1.0]]), id="float64-1e155"),
    pytest.param(np.array([[1e20, 0.0], [0.0, 1.0]], dtype=np.float32), id="float32-1e20"),
]


@pytest.mark.parametrize("X", OVERFLOWING)
def test_overflowing_scores_raise_forward_backward_blockwise_and_decode(X):
    W = np.eye(2, dtype=X.dtype)
    calls = [
        lambda: nm.attention(X, W, W, W),
        lambda: nm.attention(X, W, W, W, return_weights=False, block_size=1),
        lambda: nm.attention_vjp(X, W, W, W, np.ones_like(X)),
        lambda: nm.attention_vjp(X, W, W, W, np.ones_like(X), block_size=1),
        lambda: nm.causal_decode(X, W, W, W),
    ]
    for call in calls:
        with pytest.raises(ShapeError, match=rf"the attention scores c·QKᵀ overflow {X.dtype} for these finite inputs "
                                             r"\(\|X\| up to"):
            call()
    with pytest.raises(ShapeError, match=f"the scores scale·Q Kᵀ overflow {X.dtype}"):
        nm.scores(X, X)


def test_a_large_bound_with_finite_scores_still_runs():
    X = np.array([[1e155, 0.0], [0.0, 1e155]])
    W_Q, W_K = np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([[0.0, 0.0], [0.0, 1.0]])  # Q ⟂ K: every score is 0
    Y, A = nm.attention(X, W_Q, W_K, np.eye(2) * 1e-150)
    np.testing.assert_allclose(A, 0.5)
    assert np.all(np.isfinite(Y))


def test_large_finite_logits_give_one_hot_rows_not_nan():
    X = np.array([[1e100, 0.0], [0.0, 1e100]])  # scores up to 1e200/sqrt(2): finite, softmax one-hot
    _, A = nm.attention(X, I2, I2, I2)
    np.testing.assert_array_equal(A, np.eye(2))


def test_overflow_in_the_output_projection_and_in_gradients_is_named():
    X = np.ones((2, 2))
    with pytest.raises(ShapeError, match="the output Y = Z W_O overflows float64"):
        nm.attention(X, I2, I2, I2 * 1e200, I2 * 1e200)
    with pytest.raises(ShapeError, match=r"the gradient d\w+ overflows float64 .*\|G\| up to 1e\+300"):
        nm.attention_vjp(X, I2, I2, I2 * 1e10, np.full((2, 2), 1e300))


@settings(max_examples=60, deadline=None)
@given(exponent=st.integers(-36, 36), seed=st.integers(0, 2**16), dtype=st.sampled_from(["float32", "float64"]),
       blockwise=st.booleans())
def test_property_finite_inputs_give_finite_results_or_a_named_error(exponent, seed, dtype, blockwise):
    rng = np.random.default_rng(seed)
    big = 10.0 ** (exponent * (8 if dtype == "float64" else 1))
    X = (rng.standard_normal((5, 4)) * big).astype(dtype)
    W = rng.standard_normal((4, 4)).astype(dtype)
    G = rng.standard_normal((5, 4)).astype(dtype)
    kw = dict(return_weights=False, block_size=2) if blockwise else {}
    try:
        out = nm.attention(X, W, W, W, causal=True, **kw)
        grads = nm.attention_vjp(X, W, W, W, G, causal=True, block_size=2 if blockwise else None)
    except AttnsymError as exc:
        assert "overflow" in str(exc)
        return
    Y = out if blockwise else out[0]
    assert np.all(np.isfinite(Y))
    assert all(np.all(np.isfinite(g)) for g in grads.values())


# ---------------------------------------------------------------------------- the checks skipped by the inputs' bounds
def _bound(X, W_Q, W_K, W_V, b=None, **kw):
    from attnsym.numeric.binding import bind
    from attnsym.numeric.layer import finite_by_bounds
    biases = {"b_Q": b, "b_K": b, "b_V": b, "b_O": None, **kw.pop("biases", {})}
    layer, a = bind(X, W_Q, W_K, W_V, None, biases, spec=kw.pop("spec", None), heads=1, causal=False, mask=None,
                    scale="sqrt", positions=kw.pop("positions", None), backend=None)
    return layer, a, finite_by_bounds(layer, a, a["X"])


@settings(max_examples=300, deadline=None)
@given(logs=st.tuples(*[st.floats(0.0, 1.0)] * 4), signs=st.booleans(), dtype=st.sampled_from(["float32", "float64"]))
def test_property_bounds_that_fit_mean_finite_projections_and_scores(logs, signs, dtype):
    """Entries all of one size and sign are the bound's worst case: every product reaches ``d·max|X|·max|W|``."""
    top = np.log10(np.finfo(dtype).max)
    x, w_q, w_k, b = (10.0 ** (t * top / 2 - 2) for t in logs)  # up to the square root of the largest float
    X = np.full((6, 4), x if signs else -x, dtype)
    W_Q, W_K, W_V = (np.full((4, 4), w, dtype) for w in (w_q, w_k, w_k))
    layer, _, fits = _bound(X, W_Q, W_K, W_V, np.full(4, b, dtype))
    if not fits:
        return
    with np.errstate(over="raise", invalid="raise"):
        Q, K = X @ W_Q + np.asarray(b, dtype), X @ W_K + np.asarray(b, dtype)
        S = (Q * np.asarray(layer.scale, dtype)) @ K.T
    assert np.isfinite(Q).all() and np.isfinite(K).all() and np.isfinite(S).all()


def test_bounds_decide_only_plain_projections_and_only_when_they_fit():
    X = np.ones((4, 2))
    assert _bound(X, I2, I2, I2)[2]
    assert not _bound(X, I2, I2, I2, positions="rope")[2]  # RoPE acts on Q and K after the product
    spec = at.AttentionSpec(n=4, d_model=2, d_k=2, d_v=2, qk_norm=True)  # so does QK-norm
    assert not _bound(X, I2, I2, I2, spec=spec, biases={"g_Q": np.ones(2), "g_K": np.ones(2)})[2]
    # scores could reach 1.6e309 by the bounds, but are 1.4e308: the passes decide, and the call runs
    assert not _bound(X, I2 * 1e154, I2 * 1e154, I2)[2]
    Y = nm.attention(X, I2 * 1e154, I2 * 1e154, I2, return_weights=False)
    assert np.isfinite(Y).all()


def test_keyword_specs_are_made_once_and_never_shared_across_types():
    from attnsym.numeric.binding import _keyword_spec

    X = np.ones((3, 2))
    nm.attention(X, I2, I2, I2, scale=0.5)
    before = _keyword_spec.cache_info().hits
    nm.attention(X, I2, I2, I2, scale=0.5)
    assert _keyword_spec.cache_info().hits == before + 1
    nm.attention(X, I2, I2, I2, scale=1)
    with pytest.raises(SpecError, match="got True"):  # refused, though 1 == True was accepted and cached
        nm.attention(X, I2, I2, I2, scale=True)
    with pytest.raises(SpecError, match="got array") as caught:  # unhashable: checked without the cache
        nm.attention(X, I2, I2, I2, scale=np.array(0.5))
    assert caught.value.__context__ is None


@pytest.mark.parametrize("library", ["numpy", "torch"])
def test_amax_is_the_largest_absolute_entry_and_keeps_nan(library):
    """``amax``: NumPy arrays take their own reductions, other libraries the namespace's; both give max |v| and NaN."""
    from attnsym.numeric._inputs import amax, namespace_of

    torch = pytest.importorskip("torch") if library == "torch" else None
    values = [np.array([[0.5, -3.0], [2.0, 1.0]]), np.array([4.0, -1.0]), np.zeros((0, 3)),
              np.array([1.0, np.nan]), np.array([np.nan, -2.0])]
    for v in values:
        a = torch.tensor(v, requires_grad=v.size > 0) if torch is not None else v
        got = amax(namespace_of({"v": a}), a)
        if np.isnan(v).any():
            assert np.isnan(got)
        else:
            assert got == (np.abs(v).max() if v.size else 0.0)


def test_dtype_name_names_numpy_and_torch_dtypes_and_unhashable_ones():
    from attnsym.numeric._inputs import dtype_name

    assert [dtype_name(np.zeros(1, t)) for t in (np.float32, np.float64, np.int64, bool)] == \
        ["float32", "float64", "int64", "bool"]
    torch = pytest.importorskip("torch")
    assert dtype_name(torch.zeros(1, dtype=torch.float32)) == "float32"

    class Odd:  # an array-like whose dtype is unhashable: named without the cache
        def __init__(self):
            self.dtype = ["float32"]

    assert dtype_name(Odd()) == "['float32']"
