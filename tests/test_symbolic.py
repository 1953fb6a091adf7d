"""The symbolic forward pass against an independent, hand-written NumPy reference."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
import scipy.special
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_attention import ref_attention, ref_positions
from strategies import attention_specs

import attnsym.symbolic.matrices as matrices_module
from attnsym import AttentionSpec
from attnsym.errors import ShapeError, SizeLimitError, SpecError
from attnsym.symbolic import (
    DEFAULT_MAX_TERMS,
    attention,
    enforce_limit,
    estimate_cost,
    gelu,
    gelu_tanh,
    input_symbols,
    mlp,
    row_softmax,
    sinusoidal_positions,
)
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)


# ----------------------------------------------------------------------------- helpers
def rational_values(sym, rng):
    """Random small rationals for every input, as Fractions (exact) and floats."""
    exact = {}
    for name, matrix in sym.inputs.items():
        exact[name] = [[Fraction(rng.randint(-9, 9), rng.randint(1, 6)) for _ in range(matrix.shape[1])]
                       for _ in range(matrix.shape[0])]
    floats = {name: np.array(rows, dtype=float) for name, rows in exact.items()}
    return exact, floats


def to_float(matrix):
    return np.array([[float(sp.N(e, 30)) for e in row] for row in matrix.tolist()])


SPECS = [
    dict(n=2, d_model=2),
    dict(n=3, d_model=2, causal=True),
    dict(n=2, d_model=2, scale="none", bias=True),
    dict(n=3, d_model=4, heads=2),
    dict(n=2, d_model=4, heads=2, bias=True, causal=True),
    dict(n=3, d_model=2, positions="sinusoidal"),
    dict(n=3, d_model=2, mask=[[False, False, False], [True, False, True], [True, True, True]]),
    dict(n=2, d_model=2, scale=Fraction(1, 3), output_projection=True, bias=True),
    dict(n=2, d_model=3, d_k=2, d_v=1),
]


@pytest.mark.parametrize("kwargs", SPECS, ids=str)
def test_every_matrix_matches_numpy_at_rational_points(kwargs):
    spec = AttentionSpec(**kwargs)
    sym = attention(spec)
    rng = random.Random(str(kwargs))
    exact, floats = rational_values(sym, rng)
    num = sym.subs(exact)
    ref = ref_attention(kwargs, floats)
    for name in ("Q", "K", "V", "Z", "Y"):
        np.testing.assert_allclose(to_float(getattr(num, name)), ref[name], rtol=TOL64.rtol, atol=TOL64.atol, err_msg=name)
    for h in range(spec.heads):
        np.testing.assert_allclose(to_float(num.A_heads[h]), ref["A_heads"][h], rtol=TOL64.rtol, atol=TOL64.atol)
        np.testing.assert_array_equal(np.isinf(to_float(num.S_heads[h])), np.isinf(ref["S_heads"][h]))
        finite = np.isfinite(ref["S_heads"][h])
        np.testing.assert_allclose(to_float(num.S_heads[h])[finite], ref["S_heads"][h][finite], rtol=TOL64.rtol, atol=TOL64.atol)


def test_separate_d_k_and_d_v():
    spec = AttentionSpec(n=2, d_model=3, d_k=2, d_v=1)
    sym = attention(spec)
    assert sym.Q.shape == (2, 2) and sym.V.shape == (2, 1) and sym.Y.shape == (2, 1)
    exact, v = rational_values(sym, random.Random(1))
    num = sym.subs(exact)
    Q, K, V = v["X"] @ v["W_Q"], v["X"] @ v["W_K"], v["X"] @ v["W_V"]
    S = Q @ K.T / math.sqrt(2)
    A = np.exp(S) / np.exp(S).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(to_float(num.Y), A @ V, rtol=TOL64.rtol)


@pytest.mark.parametrize("kwargs", SPECS, ids=str)
def test_lambdify_matches_numpy_with_batch_axes(kwargs):
    spec = AttentionSpec(**kwargs)
    sym = attention(spec)
    rng = np.random.default_rng(0)
    arrays = {name: rng.standard_normal((3, *m.shape)) for name, m in sym.inputs.items()}
    out = sym.lambdify("Y", "A_heads", "Q")(**arrays)
    assert out["Y"].shape == (3, *sym.Y.shape)
    assert out["A_heads"].shape == (3, spec.heads, spec.n, spec.n)
    for b in range(3):
        ref = ref_attention(kwargs, {k: a[b] for k, a in arrays.items()})
        np.testing.assert_allclose(out["Y"][b], ref["Y"], rtol=TOL64.rtol, atol=TOL64.atol)
        np.testing.assert_allclose(out["Q"][b], ref["Q"], rtol=TOL64.rtol, atol=TOL64.atol)
        np.testing.assert_allclose(out["A_heads"][b], np.stack(ref["A_heads"]), rtol=TOL64.rtol, atol=TOL64.atol)


def test_multi_head_with_output_projection_structure():
    spec = AttentionSpec(n=2, d_model=4, heads=2)
    sym = attention(spec)
    assert sym.W_O.shape == (4, 4) and len(sym.A_heads) == 2
    assert sym.Z.shape == (2, 4)
    # head 1 uses only columns 0-1 of W_Q, head 2 only columns 2-3
    head_1 = sym.S_heads[0].free_symbols
    assert sp.Symbol("W^{Q}_{1,1}", real=True) in head_1 and sp.Symbol("W^{Q}_{1,3}", real=True) not in head_1
    assert sp.Symbol("W^{Q}_{1,3}", real=True) in sym.S_heads[1].free_symbols
    # Y = Z W_O exactly
    assert sp.expand(sym.Y[0, 0] - sum(sym.Z[0, k] * sym.W_O[k, 0] for k in range(4))) == 0
    with pytest.raises(SpecError, match="S_heads"):
        _ = sym.S
    with pytest.raises(SpecError, match="A_heads"):
        _ = sym.A


def test_causal_mask_gives_exact_zeros_and_minus_infinity():
    sym = attention(AttentionSpec(n=3, d_model=2, causal=True))
    for i in range(3):
        for j in range(3):
            if j > i:
                assert sym.A[i, j] is sp.S.Zero
                assert sym.S[i, j] == -sp.oo
            else:
                assert sym.A[i, j] != 0
    assert sym.A[0, 0] == 1
    assert not sym.Y[0, 0].has(sp.Symbol("x_{2,1}", real=True))  # the first token sees only itself


def test_softmax_rows_sum_to_one_and_ignore_row_shifts_exactly():
    S = sp.Matrix(3, 3, sp.symbols("s:9", real=True))
    c = sp.Symbol("c", real=True)
    A = row_softmax(S)
    assert [sp.cancel(sum(A[i, :])) for i in range(3)] == [1, 1, 1]
    shifted = row_softmax(S + c * sp.ones(3, 3))
    assert all(sp.cancel(sp.expand(shifted[i, j] - A[i, j], power_exp=True)) == 0 for i in range(3) for j in range(3))
    masked = attention(AttentionSpec(n=3, d_model=1, causal=True)).A
    assert [sp.cancel(sum(masked[i, :])) for i in range(3)] == [1, 1, 1]


def test_fully_masked_row_gives_zero_weights_and_output():
    mask = [[False, False], [True, True]]
    sym = attention(AttentionSpec(n=2, d_model=2, mask=mask))
    assert list(sym.A[0, :]) == [0, 0]
    assert list(sym.Y[0, :]) == [0, 0]
    assert sym.A[1, 0] != 0
    assert list(row_softmax(sp.Matrix([[-sp.oo, -sp.oo]]))) == [0, 0]


def test_two_by_two_rational_case_worked_by_hand():
    # X = [[1/2, 0], [0, 1]], W_Q = W_K = I, unscaled: S = X Xᵀ = diag(1/4, 1)
    sym = attention(AttentionSpec(n=2, d_model=2, scale="none"))
    num = sym.subs({"X": [[Fraction(1, 2), 0], [0, 1]], "W_Q": sp.eye(2), "W_K": np.eye(2, dtype=int),
                    "W_V": [[1, 2], [3, 4]]})
    e4, e = sp.exp(sp.Rational(1, 4)), sp.E
    assert num.S == sp.Matrix([[sp.Rational(1, 4), 0], [0, 1]])
    expected_A = sp.Matrix([[e4 / (e4 + 1), 1 / (e4 + 1)], [1 / (1 + e), e / (1 + e)]])
    assert sp.simplify(num.A - expected_A) == sp.zeros(2, 2)
    # V = X W_V = [[1/2, 1], [3, 4]]
    expected_Y = sp.Matrix([[(e4 / 2 + 3) / (e4 + 1), (e4 + 4) / (e4 + 1)], [(sp.Rational(1, 2) + 3 * e) / (1 + e),
                                                                            (1 + 4 * e) / (1 + e)]])
    assert sp.simplify(num.Y - expected_Y) == sp.zeros(2, 2)
    assert not any(entry.has(sp.Float) for entry in num.Y)


def test_subs_types():
    sym = attention(AttentionSpec(n=1, d_model=1, scale="none"))
    assert sym.subs({"X": np.array([[3]])}).X[0, 0] == sp.Integer(3)
    assert isinstance(sym.subs({"X": [[0.5]]}).X[0, 0], sp.Float)
    assert sym.subs({"X": [[Fraction(2, 3)]]}).X[0, 0] == sp.Rational(2, 3)
    assert sym.subs({"X": sp.Matrix([[sp.sqrt(2)]])}).X[0, 0] == sp.sqrt(2)
    assert sym.subs({"X": np.array(5)}).X[0, 0] == 5  # a 0-d array is a number
    biased = attention(AttentionSpec(n=1, d_model=2, bias=True))
    assert list(biased.subs({"b_Q": np.array([1, Fraction(1, 2)])}).b_Q) == [1, sp.Rational(1, 2)]
    partial = sym.subs({"W_Q": 1})
    assert list(partial.free_inputs()) == ["X", "W_K", "W_V"]
    assert sym.subs({}) is sym
    # a one-token layer attends to itself with weight exactly 1
    assert sym.A[0, 0] == 1


def test_lambdify_after_substituting_single_symbols():
    sym = attention(AttentionSpec(n=2, d_model=1, scale="none"))
    x11 = sp.Symbol("x_{1,1}", real=True)
    f = sym.subs({x11: 2}).lambdify("Y")
    X = np.array([[99.0], [1.0]])  # entry (0, 0) is ignored: it was substituted by 2
    one = np.ones((1, 1))
    Y = f(X=X, W_Q=one, W_K=one, W_V=one)["Y"]
    x = np.array([[2.0], [1.0]])
    S = x @ x.T
    np.testing.assert_allclose(Y, (np.exp(S) / np.exp(S).sum(1, keepdims=True)) @ x, rtol=TOL64.rtol)


def test_symbolic_scale_must_be_substituted_before_lambdify():
    c = sp.Symbol("c", positive=True)
    sym = attention(AttentionSpec(n=2, d_model=1, scale=c))
    with pytest.raises(SpecError, match="not inputs"):
        sym.lambdify("A")
    f = sym.subs({c: Fraction(1, 2)}).lambdify("A")
    X = np.array([[1.0], [2.0]])
    A = f(X=X, W_Q=np.ones((1, 1)), W_K=np.ones((1, 1)), W_V=np.ones((1, 1)))["A"]
    S = 0.5 * X @ X.T
    np.testing.assert_allclose(A, np.exp(S) / np.exp(S).sum(1, keepdims=True), rtol=TOL64.rtol)


# ----------------------------------------------------------------------------- positions
@pytest.mark.parametrize(("n", "d", "base"), [(3, 2, 10000), (4, 4, 10000), (3, 5, 10000), (5, 6, 100)])
def test_positions_match_closed_form_and_lie_in_unit_interval(n, d, base):
    pe = sinusoidal_positions(n, d, base)
    assert pe.shape == (n, d)
    values = to_float(pe)
    np.testing.assert_allclose(values, ref_positions(n, d, base), rtol=TOL64.rtol, atol=TOL64.atol)
    assert np.all(np.abs(values) <= 1)
    assert list(pe[0, :]) == [0 if c % 2 == 0 else 1 for c in range(d)]  # position 0, exactly


def test_positions_are_added_before_projection():
    sym = attention(AttentionSpec(n=2, d_model=2, positions="sinusoidal"))
    assert sym.X_in[1, 0] == sym.X[1, 0] + sp.sin(1)
    assert sym.X_in[1, 1] == sym.X[1, 1] + sp.cos(1)


# ----------------------------------------------------------------------------- GELU
def test_gelu_matches_scipy_erf_and_derivative():
    x = sp.Symbol("x", real=True)
    f = sp.lambdify(x, gelu(x), modules=["scipy", "numpy"])
    df = sp.lambdify(x, sp.diff(gelu(x), x), modules=["scipy", "numpy"])
    t = np.linspace(-5, 5, 41)
    Phi = 0.5 * (1 + scipy.special.erf(t / np.sqrt(2)))
    phi = np.exp(-t**2 / 2) / np.sqrt(2 * np.pi)
    np.testing.assert_allclose(f(t), t * Phi, rtol=TOL64.rtol, atol=TOL64.atol)
    np.testing.assert_allclose(df(t), Phi + t * phi, rtol=TOL64.rtol, atol=TOL64.atol)
    assert gelu(0) == 0
    assert sp.simplify(gelu(x) - gelu(-x) - x) == 0  # x Φ(x) + x Φ(-x) = x since Φ(-x) = 1 - Φ(x)


def test_gelu_tanh_matches_published_formula():
    t = np.linspace(-4, 4, 33)
    expected = 0.5 * t * (1 + np.tanh(np.sqrt(2 / np.pi) * (t + 0.044715 * t**3)))
    got = np.array([float(gelu_tanh(sp.Float(v))) for v in t])
    np.testing.assert_allclose(got, expected, rtol=TOL64.rtol, atol=TOL64.atol)
    exact = 0.5 * t * (1 + scipy.special.erf(t / np.sqrt(2)))
    assert np.max(np.abs(got - exact)) < 1e-3  # a close approximation


def test_gelu_elementwise_on_matrices():
    m = sp.Matrix([[0, 1]])
    assert gelu(m) == sp.Matrix([[0, gelu(1)]])
    assert gelu_tanh(m)[0, 0] == 0


# ----------------------------------------------------------------------------- MLP
def test_mlp_is_x_times_w_plus_b():
    layer = mlp((2, 3, 2), bias=True)
    rng = random.Random(3)
    vals = {s: Fraction(rng.randint(-5, 5), rng.randint(1, 4)) for s in layer.Y.free_symbols}
    X = np.array([[float(vals[s]) for s in row] for row in layer.X.tolist()])
    W = np.array([[float(vals[s]) for s in row] for row in layer.W.tolist()])
    b = np.array([[float(vals[s]) for s in row] for row in layer.b.tolist()])
    got = to_float(layer.Y.xreplace(vals))
    np.testing.assert_allclose(got, X @ W + b, rtol=TOL64.rtol)
    assert mlp(AttentionSpec(n=2, d_model=3)).W.shape == (3, 3)


# ----------------------------------------------------------------------------- invariants
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), perm=st.permutations([0, 1, 2]))
def test_rows_sum_to_one_and_permutation_equivariance(seed, perm):
    rng = np.random.default_rng(seed)
    sym = _cached_attention()
    f = _cached_lambdified()
    arrays = {name: rng.standard_normal(m.shape) for name, m in sym.inputs.items()}
    out = f(**arrays)
    np.testing.assert_allclose(out["A"].sum(axis=1), 1, rtol=TOL64.rtol)
    assert np.all(out["A"] >= 0)
    P = np.eye(3)[list(perm)]
    permuted = f(**{**arrays, "X": P @ arrays["X"]})
    np.testing.assert_allclose(permuted["A"], P @ out["A"] @ P.T, rtol=TOL64.rtol, atol=TOL64.atol)
    np.testing.assert_allclose(permuted["Y"], P @ out["Y"], rtol=TOL64.rtol, atol=TOL64.atol)


@settings(max_examples=15, deadline=None)
@given(spec=attention_specs(max_n=3, max_d=3), seed=st.integers(0, 2**16))
def test_any_small_spec_matches_numpy(spec, seed):
    kwargs = {name: getattr(spec, name) for name in ("n", "d_model", "heads", "d_k", "d_v", "causal", "mask", "scale",
                                                      "positions")}
    sym = attention(spec)
    rng = np.random.default_rng(seed)
    arrays = {name: rng.standard_normal(m.shape) for name, m in sym.inputs.items()}
    out = sym.lambdify("Y", "A_heads")(**arrays)
    ref = ref_attention(kwargs, arrays)
    np.testing.assert_allclose(out["Y"], ref["Y"], rtol=TOL64.rtol, atol=TOL64.atol)
    np.testing.assert_allclose(out["A_heads"], np.stack(ref["A_heads"]), rtol=TOL64.rtol, atol=TOL64.atol)


_CACHE: dict = {}


def _cached_attention():
    if "sym" not in _CACHE:
        _CACHE["sym"] = attention(AttentionSpec(n=3, d_model=2))
    return _CACHE["sym"]


def _cached_lambdified():
    if "f" not in _CACHE:
        _CACHE["f"] = _cached_attention().lambdify("A", "Y")
    return _CACHE["f"]


# ----------------------------------------------------------------------------- size guard
def test_size_guard_raises_before_building(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("built symbols although the size guard should have refused")

    monkeypatch.setattr(matrices_module, "input_symbols", fail)
    with pytest.raises(SizeLimitError) as info:
        attention(AttentionSpec(n=64, d_model=64))
    message = str(info.value)
    assert "max_terms=" in message and str(DEFAULT_MAX_TERMS) in message and "attnsym.numeric" in message
    assert "n=64" in message


def test_size_guard_can_be_raised_and_estimate_is_monotone():
    spec = AttentionSpec(n=3, d_model=3)
    small = estimate_cost(spec).total
    with pytest.raises(SizeLimitError):
        attention(spec, max_terms=small - 1)
    assert attention(spec, max_terms=small).Y.shape == (3, 3)
    assert estimate_cost(AttentionSpec(n=4, d_model=3)).total > small
    assert estimate_cost(AttentionSpec(n=3, d_model=3, causal=True)).total < small
    assert estimate_cost(AttentionSpec(n=6, d_model=6, heads=2)).total <= DEFAULT_MAX_TERMS
    assert estimate_cost(AttentionSpec(n=8, d_model=8)).total > DEFAULT_MAX_TERMS


def test_estimate_counts_score_terms_by_hand():
    # n=2, d_model=2: a score entry is a sum of d_k=2 products of two 2-term sums: 8 leaves
    cost = estimate_cost(AttentionSpec(n=2, d_model=2))
    assert cost.terms_per_entry["S"] == 8
    assert cost.terms_per_entry["A"] == 3 * 8  # numerator + 2 denominator exponentials
    sym = attention(AttentionSpec(n=2, d_model=2, scale="none"))
    # a term is one product x * W: count the weight symbols in the unexpanded tree
    terms = sum(1 for a in sp.preorder_traversal(sym.S[0, 1]) if a.is_Symbol and a.name.startswith("W"))
    assert terms == cost.terms_per_entry["S"]


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("call", "error", "pattern"),
    [
        (lambda: attention({"n": 2}), SpecError, "spec must be an AttentionSpec"),
        (lambda: attention(AttentionSpec(n=2, d_model=2), max_terms=-1), SpecError, "max_terms"),
        (lambda: attention(AttentionSpec(n=2, d_model=2), max_terms="big"), SpecError, "max_terms"),
        (lambda: estimate_cost("n=2"), SpecError, "spec must be an AttentionSpec"),
        (lambda: enforce_limit(10, 0, what="x"), SpecError, "max_terms"),
        (lambda: input_symbols("x y", (2, 2)), SpecError, "name"),
        (lambda: input_symbols(3, (2, 2)), SpecError, "name"),
        (lambda: input_symbols("X", (0, 2)), ShapeError, "shape"),
        (lambda: input_symbols("X", 2), ShapeError, "shape"),
        (lambda: input_symbols("b_Q", (2, 2)), ShapeError, "b_Q"),
        (lambda: row_softmax([[1, 2]]), ShapeError, "S must be a SymPy Matrix"),
        (lambda: row_softmax(sp.Matrix([[1, 2]]), allowed=[[True]]), ShapeError, "square"),
        (lambda: row_softmax(sp.eye(2), allowed=[[True]]), ShapeError, "allowed"),
        (lambda: row_softmax(sp.eye(2), allowed=[[1, 0], [1, 1]]), ShapeError, "booleans"),
        (lambda: sinusoidal_positions(0, 2), SpecError, "n must be"),
        (lambda: sinusoidal_positions(2, 2.5), SpecError, "d_model must be"),
        (lambda: sinusoidal_positions(2, 2, base=1), SpecError, "base must be"),
        (lambda: gelu("x"), SpecError, "x must be"),
        (lambda: gelu_tanh(None), SpecError, "x must be"),
        (lambda: mlp((2,)), SpecError, "spec_or_sizes"),
        (lambda: mlp((2, 0)), SpecError, "spec_or_sizes"),
        (lambda: mlp((2, 2), bias="yes"), SpecError, "bias"),
    ],
)
def test_bad_input_names_the_argument(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


@pytest.mark.parametrize(
    ("values", "error", "pattern"),
    [
        ({"Z": 1}, SpecError, "unknown input 'Z'"),
        ({"X": [[1, 2]]}, ShapeError, r"X must have shape \(2, 2\)"),
        ({"X": [[1, 2], [3]]}, ShapeError, r"X must be a 2-d array-like of shape \(2, 2\)"),
        ({"X": [1, 2]}, ShapeError, "X must be a 2-d array-like"),
        ({"X": np.zeros((2, 2, 1))}, ShapeError, r"got an array of shape \(2, 2, 1\)"),
        ({"X": np.zeros((2, 3))}, ShapeError, r"X must have shape \(2, 2\) \(got \(2, 3\)\)"),
        ({"W_Q": [[1, float("nan")], [0, 0]]}, ShapeError, "finite"),
        ({"W_Q": [[1, True], [0, 0]]}, ShapeError, r"W_Q\[0\]\[1\]"),
        ({"W_K": "ones"}, ShapeError, "W_K must be"),
        ({"W_V": sp.oo}, ShapeError, "finite"),
        ([("X", 1)], SpecError, "mapping"),
    ],
)
def test_bad_substitutions(values, error, pattern):
    sym = attention(AttentionSpec(n=2, d_model=2))
    with pytest.raises(error, match=pattern):
        sym.subs(values)


def test_bad_lambdify_calls():
    sym = attention(AttentionSpec(n=2, d_model=2))
    with pytest.raises(SpecError, match="'B'"):
        sym.lambdify("B")
    f = sym.lambdify("Y")
    good = {name: np.zeros(m.shape) for name, m in sym.inputs.items()}
    with pytest.raises(SpecError, match="missing"):
        f(X=good["X"])
    with pytest.raises(SpecError, match="unexpected"):
        f(**good, W_O=np.zeros((2, 2)))
    with pytest.raises(ShapeError, match=r"X must have shape \(\.\.\., 2, 2\)"):
        f(**{**good, "X": np.zeros((3, 2))})


@pytest.mark.oracle
def test_causal_multi_head_against_pytorch():
    torch = pytest.importorskip("torch")
    spec = AttentionSpec(n=3, d_model=4, heads=2, causal=True, bias=True)
    sym = attention(spec)
    rng = np.random.default_rng(7)
    arrays = {name: rng.standard_normal(m.shape) for name, m in sym.inputs.items()}
    ours = sym.lambdify("Y")(**arrays)["Y"]
    mha = torch.nn.MultiheadAttention(4, 2, bias=True, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        # PyTorch stores weights as (out, in) and computes x Wᵀ + b
        mha.in_proj_weight.copy_(torch.from_numpy(np.vstack([arrays["W_Q"].T, arrays["W_K"].T, arrays["W_V"].T])))
        mha.in_proj_bias.copy_(torch.from_numpy(np.concatenate([arrays["b_Q"][0], arrays["b_K"][0], arrays["b_V"][0]])))
        mha.out_proj.weight.copy_(torch.from_numpy(arrays["W_O"].T))
        mha.out_proj.bias.copy_(torch.from_numpy(arrays["b_O"][0]))
        x = torch.from_numpy(arrays["X"])[None]
        causal = torch.triu(torch.ones(3, 3, dtype=torch.bool), 1)  # PyTorch: True = masked out
        theirs, _ = mha(x, x, x, attn_mask=causal, need_weights=False)
    np.testing.assert_allclose(ours, theirs[0].numpy(), rtol=TOL64.rtol, atol=TOL64.atol)


# ----------------------------------------------------------------------------- twins
def test_scores_twin_of_numeric_scores():
    from attnsym import numeric
    from attnsym.symbolic import scores

    rng = random.Random(11)
    Q = [[Fraction(rng.randint(-5, 5), 3) for _ in range(2)] for _ in range(3)]
    K = [[Fraction(rng.randint(-5, 5), 2) for _ in range(2)] for _ in range(3)]
    allowed = [[True, False, True], [True, True, False], [False, False, False]]
    exact = scores(sp.Matrix(Q), sp.Matrix(K), scale=sp.Rational(1, 3), allowed=allowed)
    assert exact[0, 1] == -sp.oo and all(e == -sp.oo for e in exact[2, :])
    got = numeric.scores(np.array(Q, dtype=float), np.array(K, dtype=float), 1 / 3, np.array(allowed))
    np.testing.assert_allclose(to_float(exact), got, rtol=TOL64.rtol)
    by_hand = sum(Q[1][c] * K[0][c] for c in range(2)) / 3
    assert exact[1, 0] == sp.Rational(by_hand.numerator, by_hand.denominator)
    with pytest.raises(ShapeError, match="same number of columns"):
        scores(sp.ones(2, 2), sp.ones(2, 3))
    with pytest.raises(ShapeError, match="K must be a SymPy Matrix"):
        scores(sp.ones(2, 2), np.ones((2, 2)))
    with pytest.raises(ShapeError, match="scale"):
        scores(sp.ones(2, 2), sp.ones(2, 2), scale="1/2")


def test_lambdify_stays_finite_for_large_scores():
    # scores ±900 and 0: exp(900) overflows float64, but the weights are plain softmax values
    sym = attention(AttentionSpec(n=3, d_model=1, scale="none", causal=True, bias=True))
    f = sym.lambdify("Y", "A")
    X = np.array([[30.0], [-30.0], [0.0]])
    one, zero = np.ones((1, 1)), np.zeros((1, 1))
    with np.errstate(over="raise", invalid="raise"):
        out = f(X=X, W_Q=one, W_K=one, W_V=one, b_Q=zero, b_K=zero, b_V=zero)
    # by hand: row 0 attends to itself only; row 1 scores (-900, 900): weight 1 on itself;
    # row 2 scores (0, 0, 0): uniform over its three keys
    A = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(out["A"], A, rtol=TOL64.rtol, atol=1e-300)
    np.testing.assert_allclose(out["Y"], A @ X, rtol=TOL64.rtol, atol=TOL64.atol)
    batch = f(X=np.stack([X, X / 30]), W_Q=one, W_K=one, W_V=one, b_Q=zero, b_K=zero, b_V=zero)["A"]
    S = (X / 30) @ (X / 30).T
    small = np.where(np.tril(np.ones((3, 3), bool)), np.exp(S), 0.0)
    np.testing.assert_allclose(batch[1], small / small.sum(1, keepdims=True), rtol=TOL64.rtol)
    np.testing.assert_allclose(batch[0], A, rtol=TOL64.rtol, atol=1e-300)
