"""Numeric backend: forward against a loop-by-loop reference, gradients against finite
differences, numerical edge cases, input validation, backends, and the symbolic twins."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import attention_specs, random_arrays

import attnsym as at
from attnsym import numeric as nm
from attnsym.errors import BackendError, ShapeError, SpecError
from attnsym.testing import TOLERANCES, check_grad

TOL64 = TOLERANCES["float64"]


# ---------------------------------------------------------------------------- an independent reference
def loop_attention(spec: at.AttentionSpec, a: dict) -> tuple[np.ndarray, np.ndarray]:
    """Attention for one (n, d_model) X written entry by entry from the spec's definition."""
    n, d, H, dk, dv = spec.n, spec.d_model, spec.heads, spec.d_k, spec.d_v
    X = a["X"].copy()
    if spec.positions == "sinusoidal":
        for p in range(n):
            for c in range(d):
                angle = p / spec.position_base ** ((c - c % 2) / d)
                X[p, c] += math.sin(angle) if c % 2 == 0 else math.cos(angle)

    def proj(W, b):
        out = [[sum(X[i, r] * W[r, c] for r in range(d)) for c in range(W.shape[1])] for i in range(n)]
        out = np.array(out)
        return out if b is None else out + b.reshape(-1)

    Q, K, V = (proj(a[f"W_{m}"], a.get(f"b_{m}")) for m in "QKV")
    allowed = spec.allowed
    Z = np.zeros((n, H * dv))
    A = np.zeros((H, n, n))
    for h in range(H):
        for i in range(n):
            ok = [allowed is None or allowed[i][j] for j in range(n)]
            s = [spec.scale_float * sum(Q[i, h * dk + c] * K[j, h * dk + c] for c in range(dk)) for j in range(n)]
            if not any(ok):
                continue  # fully masked: zero weights, zero output
            top = max(s[j] for j in range(n) if ok[j])
            e = [math.exp(s[j] - top) if ok[j] else 0.0 for j in range(n)]
            for j in range(n):
                A[h, i, j] = e[j] / math.fsum(e)
            for c in range(dv):
                Z[i, h * dv + c] = sum(A[h, i, j] * V[j, h * dv + c] for j in range(n))
    if not spec.output_projection:
        return Z, A
    Y = Z @ a["W_O"]
    return (Y if a.get("b_O") is None else Y + a["b_O"].reshape(-1)), A


def params(spec, a):
    return {k: a[k] for k in spec.parameter_names}


@settings(max_examples=40, deadline=None)
@given(spec=attention_specs(), seed=st.integers(0, 2**16))
def test_forward_matches_loop_reference(spec, seed):
    a = random_arrays(spec, seed)
    Y, A = nm.attention(a["X"], spec=spec, **params(spec, a))
    Y_ref, A_ref = loop_attention(spec, a)
    np.testing.assert_allclose(Y, Y_ref, rtol=TOL64.rtol, atol=TOL64.atol)
    np.testing.assert_allclose(A if spec.heads > 1 else A[None], A_ref, rtol=TOL64.rtol, atol=TOL64.atol)


@settings(max_examples=25, deadline=None)
@given(spec=attention_specs(max_n=3, max_d=3), seed=st.integers(0, 2**16))
def test_gradients_match_central_differences(spec, seed):
    a = random_arrays(spec, seed)
    names = ("X", *spec.parameter_names)

    def loss(**kw):
        Y = nm.attention(kw["X"], spec=spec, return_weights=False, **{k: kw[k] for k in spec.parameter_names})
        return float(np.sum(a["G"] * Y))

    grads = nm.attention_vjp(a["X"], G=a["G"], spec=spec, **params(spec, a))
    assert set(grads) == set(names)
    check_grad(loss, {k: a[k] for k in names}, grads, seed=seed)  # central differences: check_grad's own tolerance


def test_batched_equals_loop_over_batch_and_sums_parameter_gradients():
    spec = at.AttentionSpec(n=5, d_model=4, heads=2, causal=True, bias=True)
    a = random_arrays(spec, 3, batch=(2, 3))
    Y, A = nm.attention(a["X"], spec=spec, **params(spec, a))
    grads = nm.attention_vjp(a["X"], G=a["G"], spec=spec, **params(spec, a))
    assert Y.shape == (2, 3, 5, 4) and A.shape == (2, 3, 2, 5, 5)
    total = {k: np.zeros_like(a[k]) for k in spec.parameter_names}
    for i in range(2):
        for j in range(3):
            Yij, Aij = nm.attention(a["X"][i, j], spec=spec, **params(spec, a))
            np.testing.assert_allclose(Y[i, j], Yij, rtol=TOL64.rtol, atol=TOL64.atol)
            np.testing.assert_allclose(A[i, j], Aij, rtol=TOL64.rtol, atol=TOL64.atol)
            g = nm.attention_vjp(a["X"][i, j], G=a["G"][i, j], spec=spec, **params(spec, a))
            np.testing.assert_allclose(grads["X"][i, j], g["X"], rtol=TOL64.rtol, atol=TOL64.atol)
            for k in total:
                total[k] += g[k]
    for k in total:
        np.testing.assert_allclose(grads[k], total[k], rtol=TOL64.rtol, atol=TOL64.atol)


def test_keyword_arguments_equal_the_spec():
    mask = np.array([[True, False, True], [True, True, False], [False, True, True]])
    spec = at.AttentionSpec(n=3, d_model=4, heads=2, causal=True, mask=mask, scale="none", positions="sinusoidal")
    a = random_arrays(spec, 0)
    Y1, A1 = nm.attention(a["X"], spec=spec, **params(spec, a))
    Y2, A2 = nm.attention(a["X"], a["W_Q"], a["W_K"], a["W_V"], a["W_O"], heads=2, causal=True, mask=mask,
                          scale="none", positions="sinusoidal")
    np.testing.assert_array_equal(Y1, Y2)
    np.testing.assert_array_equal(A1, A2)


def test_batched_mask_applies_per_batch_element():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2, 3, 2))
    W = np.eye(2)
    mask = np.ones((2, 3, 3), dtype=bool)
    mask[1, :, 0] = False
    _, A = nm.attention(X, W, W, W, mask=mask)
    assert np.all(A[1, :, 0] == 0) and np.all(A[0, :, 0] > 0)
    _, A0 = nm.attention(X[1], W, W, W, mask=mask[1])
    np.testing.assert_allclose(A[1], A0, rtol=TOL64.rtol, atol=TOL64.atol)


# ---------------------------------------------------------------------------- properties
@settings(max_examples=30, deadline=None)
@given(spec=attention_specs(masks=False), seed=st.integers(0, 2**16))
def test_weights_are_a_distribution_and_permutation_equivariant(spec, seed):
    a = random_arrays(spec, seed)
    Y, A = nm.attention(a["X"], spec=spec, **params(spec, a))
    A = A if spec.heads > 1 else A[None]
    assert np.all(A >= 0)
    np.testing.assert_allclose(A.sum(axis=-1), 1.0, rtol=TOL64.rtol, atol=TOL64.atol)
    if spec.positions is None and not spec.causal:
        perm = np.random.default_rng(seed).permutation(spec.n)
        Yp, Ap = nm.attention(a["X"][perm], spec=spec, **params(spec, a))
        Ap = Ap if spec.heads > 1 else Ap[None]
        np.testing.assert_allclose(Yp, Y[perm], rtol=TOL64.rtol, atol=TOL64.atol)
        np.testing.assert_allclose(Ap, A[:, perm][:, :, perm], rtol=TOL64.rtol, atol=TOL64.atol)


@settings(deadline=None)
@given(shift=st.floats(-1e3, 1e3), seed=st.integers(0, 100))
def test_softmax_ignores_a_constant_added_to_a_row(shift, seed):
    S = np.random.default_rng(seed).standard_normal((3, 4))
    np.testing.assert_allclose(nm.softmax(S + shift), nm.softmax(S), rtol=TOL64.rtol, atol=TOL64.atol)


def test_softmax_along_another_axis_and_does_not_modify_its_input():
    S = np.random.default_rng(1).standard_normal((3, 4))
    before = S.copy()
    np.testing.assert_allclose(nm.softmax(S, axis=0), nm.softmax(S.T).T, rtol=TOL64.rtol, atol=TOL64.atol)
    np.testing.assert_array_equal(S, before)


# ---------------------------------------------------------------------------- edge cases
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_extreme_logits_stay_finite(dtype):
    # |s| ≈ 1e4: entries of Q Kᵀ up to 4·50² = 1e4 with scale "none"
    rng = np.random.default_rng(0)
    X = (50 * rng.choice([-1.0, 1.0], size=(2, 4, 4))).astype(dtype)
    W = np.eye(4, dtype=dtype)
    S = X @ np.swapaxes(X, -1, -2)
    assert np.abs(S).max() >= 1e4
    for causal in (False, True):
        Y, A = nm.attention(X, W, W, W, scale="none", causal=causal)
        Yb = nm.attention(X, W, W, W, scale="none", causal=causal, return_weights=False, block_size=3)
        G = np.ones_like(Y)
        grads = nm.attention_vjp(X, W, W, W, G, scale="none", causal=causal)
        grads_b = nm.attention_vjp(X, W, W, W, G, scale="none", causal=causal, block_size=3)
        for value in (Y, A, Yb, *grads.values(), *grads_b.values()):
            assert value.dtype == np.dtype(dtype)
            assert np.all(np.isfinite(value))
        np.testing.assert_allclose(A.sum(axis=-1), 1.0, rtol=TOLERANCES[dtype].rtol)


def test_fully_masked_rows_give_zero_weights_zero_output_and_finite_gradients():
    mask = np.array([[False, False, False], [True, False, True], [False, False, False]])
    spec = at.AttentionSpec(n=3, d_model=2, mask=mask, bias=True, output_projection=True)
    a = random_arrays(spec, 7)
    Y, A = nm.attention(a["X"], spec=spec, **params(spec, a))
    np.testing.assert_array_equal(A[0], 0.0)
    np.testing.assert_array_equal(A[2], 0.0)
    np.testing.assert_allclose(Y[0], a["b_O"][0], rtol=0, atol=0)  # Z row is 0, so Y = b_O
    np.testing.assert_array_equal(A[1, 1], 0.0)
    for block in (None, 1, 2):
        grads = nm.attention_vjp(a["X"], G=a["G"], spec=spec, block_size=block, **params(spec, a))
        assert all(np.all(np.isfinite(g)) for g in grads.values())
        # a query that attends nowhere has no influence through its query vector
        Yb = nm.attention(a["X"], spec=spec, return_weights=False, block_size=block or 3, **params(spec, a))
        np.testing.assert_allclose(Yb, Y, rtol=TOL64.rtol, atol=TOL64.atol)

    def loss(**kw):
        return float(np.sum(a["G"] * nm.attention(kw["X"], spec=spec, return_weights=False, **params(spec, a))))

    check_grad(loss, {"X": a["X"]}, {"X": grads["X"]})


def test_float32_in_float32_out():
    spec = at.AttentionSpec(n=4, d_model=4, heads=2)
    a32 = random_arrays(spec, 1, dtype=np.float32)
    a64 = {k: v.astype(np.float64) for k, v in a32.items()}
    Y32, A32 = nm.attention(a32["X"], spec=spec, **params(spec, a32))
    Y64, _ = nm.attention(a64["X"], spec=spec, **params(spec, a64))
    assert Y32.dtype == np.float32 and A32.dtype == np.float32
    np.testing.assert_allclose(Y32, Y64, rtol=TOLERANCES["float32"].rtol, atol=TOLERANCES["float32"].atol)


# ---------------------------------------------------------------------------- bad input
def _eye_args(n=3, d=2, dtype=np.float64):
    X = np.random.default_rng(0).standard_normal((n, d)).astype(dtype)
    W = np.eye(d, dtype=dtype)
    return X, W


def test_errors_name_argument_expected_and_received():
    X, W = _eye_args()
    spec = at.AttentionSpec(n=3, d_model=2)
    with pytest.raises(ShapeError, match=r"X must have shape \(\.\.\., n, d_model\) = \(\.\.\., 4, 2\) \(got \(3, 2\)\)"):
        nm.attention(X, W, W, W, spec=spec.replace(n=4))
    with pytest.raises(ShapeError, match=r"W_K must have shape .* = \(2, 2\) \(got \(2, 3\)\)"):
        nm.attention(X, W, np.ones((2, 3)), W, spec=spec)
    with pytest.raises(ShapeError, match="X must have dtype float32 or float64 \\(got int64\\)"):
        nm.attention(np.ones((3, 2), dtype=np.int64), W, W, W)
    with pytest.raises(ShapeError, match="W_V has dtype float32 but X has dtype float64"):
        nm.attention(X, W, W, W.astype(np.float32))
    with pytest.raises(ShapeError, match="X contains non-finite values"):
        nm.attention(np.full((3, 2), np.nan), W, W, W)
    with pytest.raises(ShapeError, match=r"mask must have shape \(n, n\) = \(3, 3\)"):
        nm.attention(X, W, W, W, mask=np.ones((2, 2), dtype=bool))
    with pytest.raises(ShapeError, match="mask must be a boolean array"):
        nm.attention(X, W, W, W, mask=np.zeros((3, 3)))
    with pytest.raises(ShapeError, match=r"G must have the shape of the output Y, \(\.\.\., n, d_out\) = \(3, 2\)"):
        nm.attention_vjp(X, W, W, W, np.ones((3, 3)))
    with pytest.raises(ShapeError, match=r"G \(the upstream gradient dL/dY, shape of Y\) is required \(got None\)"):
        nm.attention_vjp(X, W, W, W, None)
    with pytest.raises(ShapeError, match="W_O is required by the spec"):
        nm.attention(X, W, W, W, spec=spec.replace(output_projection=True))
    with pytest.raises(ShapeError, match="W_Q must have shape \\(d_model, heads\\*d_k\\) with d_model=2, heads=3"):
        nm.attention(X, W, W, W, heads=3)
    with pytest.raises(SpecError, match=r"give either spec= or the keyword arguments \['causal'\]"):
        nm.attention(X, W, W, W, spec=spec, causal=True)
    with pytest.raises(SpecError, match="pass return_weights=False"):
        nm.attention(X, W, W, W, block_size=2)
    with pytest.raises(SpecError, match="block_size must be a positive integer"):
        nm.attention(X, W, W, W, block_size=0, return_weights=False)
    with pytest.raises(SpecError, match="scale must be"):
        nm.attention(X, W, W, W, scale="1/2")


def test_lists_run_on_numpy_and_unknown_backend_is_rejected():
    X, W = _eye_args()
    Y, _ = nm.attention(X.tolist(), W.tolist(), W, W)
    np.testing.assert_allclose(Y, nm.attention(X, W, W, W)[0], rtol=TOL64.rtol, atol=TOL64.atol)
    with pytest.raises(BackendError, match="backend must be one of"):
        nm.attention(X, W, W, W, backend="jax")


def test_arrays_of_an_unsupported_library_are_rejected():
    import types

    class ForeignArray:  # implements the array API protocol, but for a library attnsym does not run on
        shape, dtype, ndim = (3, 2), "float64", 2

        def __array_namespace__(self, api_version=None):
            return types.ModuleType("foreignlib")

    _, W = _eye_args()
    with pytest.raises(BackendError, match=r"attnsym.numeric runs on numpy, cupy, torch arrays \(got .*ForeignArray\)"):
        nm.attention(ForeignArray(), W.tolist(), W.tolist(), W.tolist())


def test_asking_for_cupy_without_a_usable_cupy_falls_back_with_a_warning():
    ok, why = nm.cupy_usable()
    if ok:
        pytest.skip("CuPy runs here; the fallback cannot be observed")
    X, W = _eye_args()
    with pytest.warns(RuntimeWarning, match="backend='cupy' was asked for but CuPy cannot run here"):
        Y, _ = nm.attention(X, W, W, W, backend="cupy")
    assert isinstance(Y, np.ndarray) and why


def test_import_attnsym_does_not_import_cupy_torch_or_matplotlib():
    code = ("import sys, numpy as np, attnsym as at; X = np.eye(2);"
            "at.numeric.attention(X, X, X, X); at.numeric.attention_vjp(X, X, X, X, X);"
            "print(sorted(m for m in ('cupy', 'torch', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("module", ["backend", "forward", "backward", "blockwise"])
def test_the_numeric_core_does_not_use_sympy(module):
    """The numeric backend is the independent reference: no SymPy (and no lambdified SymPy) inside."""
    import ast
    import importlib

    source = importlib.import_module(f"attnsym.numeric.{module}").__file__
    tree = ast.parse(open(source, encoding="utf-8").read())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "sympy" not in imported and "symbolic" not in imported


# ---------------------------------------------------------------------------- array libraries: tests/test_backends.py


# ---------------------------------------------------------------------------- symbolic twins
def test_sinusoidal_positions_twin():
    for n, d in [(1, 1), (4, 5), (6, 4)]:
        exact = np.array(at.symbolic.sinusoidal_positions(n, d, base=100).evalf(30).tolist(), dtype=np.float64)
        np.testing.assert_allclose(nm.sinusoidal_positions(n, d, base=100), exact, rtol=TOL64.rtol, atol=TOL64.atol)
    pe = nm.sinusoidal_positions(3, 4, dtype=np.float32)
    assert pe.dtype == np.float32
    with pytest.raises(SpecError, match="d_model must be a positive integer"):
        nm.sinusoidal_positions(3, 0)


@pytest.mark.parametrize("name", ["gelu", "gelu_tanh"])
def test_gelu_twins(name):
    x = sp.Symbol("x")
    exact = getattr(at.symbolic, name)(x)
    points = np.array([-6.0, -1.5, -0.1, 0.0, 0.3, 1.0, 2.5, 8.0])
    expected = np.array([float(exact.subs(x, sp.Float(p, 30)).evalf(30)) for p in points])
    np.testing.assert_allclose(getattr(nm, name)(points), expected, rtol=TOL64.rtol, atol=TOL64.atol)


def test_softmax_twin_with_masks():
    allowed = ((True, False, True), (False, False, False), (True, True, True))
    S = sp.Matrix(3, 3, lambda i, j: sp.Rational(i * 3 + j - 4, 3))
    exact = np.array(at.symbolic.row_softmax(S, allowed).evalf(30).tolist(), dtype=np.float64)
    got = nm.softmax(np.array(S.tolist(), dtype=np.float64), allowed=np.array(allowed))
    np.testing.assert_allclose(got, exact, rtol=TOL64.rtol, atol=TOL64.atol)


def test_scores_twin_against_the_symbolic_layer():
    spec = at.AttentionSpec(n=3, d_model=4, heads=2, causal=True, mask=[[True] * 3, [False, True, True], [True] * 3])
    a = random_arrays(spec, 5)
    sym = at.symbolic.attention(spec).lambdify("S_heads", "Q", "K")(**{k: a[k] for k in ("X", *spec.parameter_names)})
    Q = np.stack(np.split(sym["Q"], 2, axis=-1))
    K = np.stack(np.split(sym["K"], 2, axis=-1))
    S = nm.scores(Q, K, spec.scale_float, spec.allowed_array())
    np.testing.assert_array_equal(np.isinf(S), np.isinf(sym["S_heads"]))
    finite = np.isfinite(S)
    np.testing.assert_allclose(S[finite], sym["S_heads"][finite], rtol=TOL64.rtol, atol=TOL64.atol)


def test_softmax_jacobian_twin():
    a_sym = sp.symbols("s0:4")
    exact = at.symbolic.row_softmax(sp.Matrix([a_sym]))
    jac = exact.jacobian(a_sym)
    point = {s: sp.Rational(k, 3) - 1 for k, s in enumerate(a_sym)}
    J_exact = np.array(jac.subs(point).evalf(30).tolist(), dtype=np.float64)
    a_num = nm.softmax(np.array([float(v) for v in point.values()]))
    np.testing.assert_allclose(nm.softmax_jacobian(a_num), J_exact, rtol=TOL64.rtol, atol=TOL64.atol)
    J = nm.softmax_jacobian(a_num)
    np.testing.assert_allclose(J.sum(axis=1), 0.0, atol=1e-16)
    assert np.linalg.matrix_rank(J) == 3
    sym = at.symbolic.softmax_jacobian(4)  # in the symbols a_1 … a_4 (the softmax outputs)
    values = {s: sp.Float(float(a_num[int(s.name.split("_")[1]) - 1]), 30) for s in sym.free_symbols}
    np.testing.assert_allclose(np.array(sym.subs(values).tolist(), dtype=np.float64), J, rtol=TOL64.rtol, atol=TOL64.atol)


def test_zero_tokens_is_a_clear_shape_error():
    W = np.eye(2)
    for X in (np.ones((0, 2)), np.ones((4, 0, 2))):
        with pytest.raises(ShapeError, match=r"X must hold at least one token, n >= 1 .* \(got shape \(.*0, 2\)\)"):
            nm.attention(X, W, W, W)
        with pytest.raises(ShapeError, match="at least one token"):
            nm.attention_vjp(X, W, W, W, np.ones(X.shape))
    # an empty batch is still fine: nothing to compute, shapes kept
    Y, A = nm.attention(np.ones((0, 3, 2)), W, W, W)
    assert Y.shape == (0, 3, 2) and A.shape == (0, 3, 3)


def test_mask_may_not_add_batch_dimensions_to_X():
    # a (2, n, n) mask with an unbatched X used to give Y of shape (2, n, d) from attention
    # but a NumPy broadcast ValueError from attention_vjp; both now refuse it the same way
    rng = np.random.default_rng(0)
    X, W = rng.standard_normal((3, 2)), np.eye(2)
    mask = np.ones((2, 3, 3), dtype=bool)
    with pytest.raises(ShapeError, match=r"mask batch dimensions \(2,\) must broadcast to X's batch dimensions \(\)"):
        nm.attention(X, W, W, W, mask=mask)
    with pytest.raises(ShapeError, match=r"mask batch dimensions \(2,\) must broadcast to X's batch dimensions \(\)"):
        nm.attention_vjp(X, W, W, W, np.ones((3, 2)), mask=mask)
    with pytest.raises(ShapeError, match=r"mask batch dimensions \(3,\) must broadcast to X's batch dimensions \(1,\)"):
        nm.attention(X[None], W, W, W, mask=np.ones((3, 3, 3), dtype=bool))
    # masks with fewer or size-1 batch dimensions still broadcast, per batch element
    X2 = rng.standard_normal((2, 3, 3, 2))
    m = rng.random((3, 3, 3)) > 0.4
    Y = nm.attention(X2, W, W, W, mask=m, return_weights=False)
    for i in range(2):
        for j in range(3):
            np.testing.assert_allclose(Y[i, j], nm.attention(X2[i, j], W, W, W, mask=m[j], return_weights=False),
                                       rtol=TOL64.rtol, atol=TOL64.atol)
    grads = nm.attention_vjp(X2, W, W, W, np.ones_like(X2), mask=m[None, :1])  # (1, 1, n, n)
    assert grads["X"].shape == X2.shape


def test_mixed_libraries_error_names_each_argument():
    torch = pytest.importorskip("torch")
    X, W = np.ones((3, 2)), np.eye(2)
    with pytest.raises(BackendError, match=r"\(got X is numpy\.ndarray, W_Q is numpy\.ndarray, W_K is torch\.Tensor, "
                                           r"W_V is numpy\.ndarray\)"):
        nm.attention(X, W, torch.eye(2, dtype=torch.float64), W)
    with pytest.raises(BackendError, match=r"W_Q is torch\.Tensor.*G is numpy\.ndarray"):
        t = torch.ones(3, 2, dtype=torch.float64)
        nm.attention_vjp(t, t[:2], t[:2], t[:2], np.ones((3, 2)))
    # backend= converts everything first, so the same mix is accepted then
    Y, _ = nm.attention(X, W, torch.eye(2, dtype=torch.float64), W, backend="numpy")
    assert isinstance(Y, np.ndarray)


def test_softmax_mask_along_another_axis():
    # allowed is given in the layout of S; it used to be applied after moving `axis` last,
    # so axis=0 crashed for a non-square S and masked the transposed pattern for a square one
    S = np.arange(6.0).reshape(2, 3)
    allowed = np.array([[True, False, True], [True, True, False]])
    E = np.where(allowed, np.exp(S), 0.0)
    np.testing.assert_allclose(nm.softmax(S, allowed, axis=0), E / E.sum(axis=0, keepdims=True), rtol=TOL64.rtol, atol=TOL64.atol)
    S2, allowed2 = np.arange(4.0).reshape(2, 2), np.array([[True, False], [True, True]])
    E2 = np.where(allowed2, np.exp(S2), 0.0)
    np.testing.assert_allclose(nm.softmax(S2, allowed2, axis=0), E2 / E2.sum(axis=0, keepdims=True),
                               rtol=TOL64.rtol, atol=TOL64.atol)
    np.testing.assert_allclose(nm.softmax(S2, allowed2, axis=-2), E2 / E2.sum(axis=0, keepdims=True),
                               rtol=TOL64.rtol, atol=TOL64.atol)
