"""The compiled element-wise kernels (attnsym.numeric._kernels) and the fast path with and without them.

The fast path runs with the Numba kernels (``numba``) and with NumPy (``numpy``, forced by
``ATTNSYM_NUMBA=0`` as for attnsym.models) in the same pytest run; both must equal the generic
array-API path: float32 and float64, masks, fully masked rows, ±1e4 spreads of scores.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnsym import numeric as nm
from attnsym.errors import ShapeError
from attnsym.numeric import _fast, _kernels
from attnsym.testing import TOLERANCES

numba_present = _kernels.compiled() is not None


@pytest.fixture(params=["numba", "numpy"])
def implementation(request, monkeypatch):
    if request.param == "numba":
        if not numba_present:
            pytest.skip("Numba is not installed")
        monkeypatch.delenv("ATTNSYM_NUMBA", raising=False)
    else:
        monkeypatch.setenv("ATTNSYM_NUMBA", "0")
    return request.param


def test_the_environment_variable_chooses_the_implementation(implementation):
    assert _fast.element_passes(np.float32)[2] == implementation
    assert _fast.element_passes(np.float64)[2] == "numpy"  # NumPy's exp is the faster in float64


@pytest.mark.skipif(not numba_present, reason="Numba is not installed")
def test_the_float32_exp_meets_its_stated_error_bound():
    x = np.linspace(_kernels.EXP_MIN + 1e-3, _kernels.EXP_MAX, 2_000_001).astype(np.float32)
    x = np.concatenate([x, np.random.default_rng(0).uniform(-1, 1, 500_000).astype(np.float32)])  # 2^0's neighbourhood
    sums = np.zeros(1, np.float32)
    got = _kernels.exp_rowsum(x.copy().reshape(1, -1), sums).ravel().astype(np.float64)
    want = np.exp(x.astype(np.float64))
    assert np.max(np.abs(got - want) / want) <= _kernels.EXP_RTOL
    unclamped = _kernels.exp_rowsum(x.copy().reshape(1, -1), np.zeros(1, np.float32), in_range=True)
    np.testing.assert_array_equal(unclamped.ravel(), got.astype(np.float32))  # the compiled rows' exp: the same bits


def test_the_exp_polynomial_is_the_minimax_fit_it_claims_to_be():
    """Refit p in e^f = 1 + f + f²·p(f) (degree 4, least largest relative error on |f| ≤ ln2/2) by linear
    programming: the shipped coefficients, rounded to float32, come within 30 % of the refit's error, far
    below float32's rounding (6e-8); a Taylor polynomial of the same degree is 40 times worse."""
    from scipy.optimize import linprog

    f = np.linspace(-np.log(2) / 2, np.log(2) / 2, 4001)
    unit = 1e-9  # the error in units of 1e-9: HiGHS's tolerances (1e-7) would otherwise call it 0
    powers = np.stack([f ** (2 + i) for i in range(5)], axis=1) / np.exp(f)[:, None] / unit  # relative: ÷ e^f
    target = (np.exp(f) - 1 - f) / np.exp(f) / unit
    ones = np.ones((f.size, 1))
    fit = linprog(np.r_[np.zeros(5), 1.0], A_ub=np.vstack([np.hstack([powers, -ones]), np.hstack([-powers, -ones])]),
                  b_ub=np.r_[target, -target], bounds=[(None, None)] * 5 + [(0, None)], method="highs")
    relative_error = lambda coefficients: np.max(np.abs(powers @ np.asarray(coefficients, np.float64) - target))
    shipped = [float(c) for c in _kernels.EXP_POLY[::-1]]  # lowest power first
    assert fit.status == 0 and relative_error(shipped) <= 1.3 * fit.x[-1] and relative_error(shipped) * unit < 5e-9
    taylor = [1 / 2, 1 / 6, 1 / 24, 1 / 120, 1 / 720]
    assert relative_error(taylor) > 40 * relative_error(shipped)


@pytest.mark.skipif(not numba_present, reason="Numba is not installed")
def test_every_kernel_takes_the_same_exp():
    S = (np.random.default_rng(3).standard_normal((4, 300)) * 20).astype(np.float32)
    S[0, :4] = [np.nan, -np.inf, 87.5, -86.5]
    E = _kernels.exp_rowsum(S.copy(), np.zeros(4, np.float32))
    assert np.isnan(E[0, 0]) and E[0, 1] == 0 and np.isfinite(E[0, 2]) and E[0, 3] > 0
    A, dS = S.copy(), np.ones_like(S)
    _kernels.exp_and_dscores(A, dS)
    np.testing.assert_array_equal(A, E)
    np.testing.assert_array_equal(dS, E)
    sums, moments, maxima = (np.zeros(4, np.float32), np.zeros(4, np.float32), np.full(4, -np.inf, np.float32))
    np.testing.assert_array_equal(_kernels.exp_rowsum_moment(S.copy(), sums, moments, maxima), E)
    rows = S[1:] - S[1:].max(axis=1, keepdims=True)  # softmax shifts by the row maximum
    weights = _kernels.softmax_rows(S[1:].copy(), np.empty_like(rows))
    E_rows = _kernels.exp_rowsum(rows.copy(), np.zeros(3, np.float32))
    np.testing.assert_allclose(weights, E_rows / E_rows.sum(axis=1, keepdims=True), rtol=1e-6)


@pytest.mark.skipif(not numba_present, reason="Numba is not installed")
def test_the_float32_exp_flushes_and_masks():
    x = np.array([[0.0, -86.9, -87.0, -88.0, -1e30, -np.inf, 1e4]], np.float32)
    sums = np.array([0.5], np.float32)
    got = _kernels.exp_rowsum(x.copy(), sums)
    assert got[0, 1] > 0 and np.all(got[0, 2:6] == 0)
    assert np.isfinite(got[0, 6])  # above 88: e^88, never inf
    assert sums[0] == np.float32(0.5) + got.astype(np.float64).sum(dtype=np.float32)  # added to what was there
    S = -np.abs(np.random.default_rng(0).standard_normal((3, 1000))).astype(np.float32) * 5
    sums = np.zeros(3, np.float32)
    E = _kernels.exp_rowsum(S.copy(), sums)
    np.testing.assert_allclose(sums, np.exp(S.astype(np.float64)).sum(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(E, _kernels.exp_rowsum(S.copy(), np.zeros(3, np.float32)))
    A = np.log(np.array([[0.5, 0.25, 0.0]], np.float32))
    dS = np.array([[2.0, 4.0, np.float32(1e30)]], np.float32)
    _kernels.exp_and_dscores(A, dS)
    np.testing.assert_allclose(A, [[0.5, 0.25, 0.0]], rtol=_kernels.EXP_RTOL)
    np.testing.assert_allclose(dS, [[1.0, 1.0, 0.0]], rtol=_kernels.EXP_RTOL)


@pytest.mark.skipif(not numba_present, reason="Numba is not installed")
def test_the_kernels_refuse_what_they_cannot_take():
    from attnsym.errors import ShapeError

    with pytest.raises(ShapeError, match="float64"):
        _kernels.exp_rowsum(np.zeros((2, 3)), np.zeros(2, np.float32))
    with pytest.raises(ShapeError, match="not C-contiguous"):
        _kernels.exp_rowsum(np.zeros((4, 4), np.float32)[:, ::2], np.zeros(4, np.float32))
    with pytest.raises(ShapeError, match=r"sums \(3,\)"):
        _kernels.exp_rowsum(np.zeros((2, 3), np.float32), np.zeros(3, np.float32))
    with pytest.raises(ShapeError, match="same shape"):
        _kernels.exp_and_dscores(np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32))


def _generic(monkeypatch, fn):
    monkeypatch.setattr(_fast, "ENABLED", False)
    try:
        return fn()
    finally:
        monkeypatch.setattr(_fast, "ENABLED", True)


def _close(got, want, dtype, grad_scale=1.0):
    tol = TOLERANCES[dtype]
    if isinstance(want, dict):  # gradients: errors grow with the score scale (dS enters multiplied by W_Q, W_K)
        for k in want:
            atol = tol.atol * grad_scale * max(1.0, np.abs(want[k]).max())
            np.testing.assert_allclose(got[k], want[k], rtol=tol.rtol * grad_scale, atol=atol, err_msg=k)
    else:
        np.testing.assert_allclose(got, want, rtol=tol.rtol, atol=tol.atol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("spread", [1.0, 1e4])
def test_fast_path_equals_generic_path_with_masks(implementation, monkeypatch, dtype, spread):
    rng = np.random.default_rng(7)
    n, d = 70, 4
    X = rng.standard_normal((2, n, d)).astype(dtype)
    W_Q = (np.eye(d) * np.sqrt(spread)).astype(dtype)  # scores up to about ±spread
    W = np.eye(d, dtype=dtype)
    mask = rng.random((2, n, n)) > 0.3
    mask[0, 3, :] = False  # a fully masked row: zero output, zero gradient
    G = rng.standard_normal(X.shape).astype(dtype)
    for causal in (False, True):
        kw = dict(mask=mask, causal=causal, block_size=16)
        Y = nm.attention(X, W_Q, W_Q, W, return_weights=False, **kw)
        _close(Y, _generic(monkeypatch, lambda kw=kw: nm.attention(X, W_Q, W_Q, W, return_weights=False, **kw)), dtype)
        assert np.all(Y[0, 3] == 0)
        g = nm.attention_vjp(X, W_Q, W_Q, W, G, **kw)
        # saturated rows (spread 1e4): A is one-hot, dS = A ⊙ (dA − D) is rounding of dA − D, which the fast path
        # takes from one product [dZ, −D][V, 1]ᵀ and the generic path from two steps; W_Q = 100·I scales it up
        _close(g, _generic(monkeypatch, lambda kw=kw: nm.attention_vjp(X, W_Q, W_Q, W, G, **kw)), dtype,
               grad_scale=np.sqrt(spread) * (10 if dtype == "float32" and spread > 1 else 1))


def test_float32_forward_agrees_with_float64_at_2048(implementation):
    rng = np.random.default_rng(8)
    n, d = 2048, 64
    X = rng.standard_normal((n, d))
    W = [rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3)]
    Y64 = nm.attention(X, *W, return_weights=False)
    Y32 = nm.attention(X.astype(np.float32), *(w.astype(np.float32) for w in W), return_weights=False)
    assert np.max(np.abs(Y32 - Y64)) <= 1e-6


_CACHE_PROBE = """
import json, numpy as np
from attnsym.numeric import _kernels
S = np.zeros((2, 3), np.float32)
_kernels.softmax_rows(S, np.empty_like(S)); _kernels.exp_rowsum(S.copy(), np.zeros(2, np.float32))
_kernels.exp_rowsum(S.copy(), np.zeros(2, np.float32), in_range=True)
_kernels.exp_and_dscores(S.copy(), S.copy())
_kernels.exp_rowsum_moment(S.copy(), *(np.zeros(2, np.float32) for _ in range(3)))
_kernels.load()
_kernels.rows_kernel()
kernels = _kernels.compiled()
print(json.dumps({name: [sum(k.stats.cache_hits.values()), sum(k.stats.cache_misses.values())]
                  for name, k in kernels.items()}))
"""


@pytest.mark.skipif(not numba_present, reason="Numba is not installed")
def test_a_second_process_loads_every_kernel_from_the_disk_cache(tmp_path):
    """The first process compiles and caches the kernels; the next one compiles nothing.

    A kernel that calls another compiled function through a closure cell missed the cache in
    every process (the dispatcher in the cell pickles with a new uuid): each process compiled
    it again, 1.1-1.6 s on its first call.
    """
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    env.pop("ATTNSYM_NUMBA", None)
    runs = [json.loads(subprocess.run([sys.executable, "-c", _CACHE_PROBE], env=env, check=True,
                                      capture_output=True, text=True).stdout) for _ in range(2)]
    first, second = runs
    assert set(first) == {"exp_rowsum", "exp_and_dscores", "softmax_rows", "exp_rowsum_moment", "bias_gelu",
                          "residual_layernorm", "attend_rows", "gemm_product"}
    assert all(misses >= 1 for _, misses in first.values()), first  # a cold cache: compiled
    assert all(hits >= 1 and misses == 0 for hits, misses in second.values()), second


# ---------------------------------------------------------------------------- the lean forward's compiled rows
def _softmax_rows_float64(Q, K, V, scale, causal):
    S = scale * (Q.astype(np.float64) @ K.T.astype(np.float64))
    if causal:
        S[np.triu_indices(len(S), 1)] = -np.inf
    top = S.max(axis=1, keepdims=True)
    P = np.exp(S - top)
    return (P @ V.astype(np.float64)) / P.sum(axis=1, keepdims=True), top[:, 0] + np.log(P.sum(axis=1))


@pytest.mark.skipif(not numba_present, reason="Numba is not installed")
@pytest.mark.parametrize("clamp_reach", [None, 0.0], ids=["unclamped exp", "clamped exp"])
@pytest.mark.parametrize("causal", [False, True])
def test_compiled_rows_equal_float64_attention(causal, clamp_reach):
    """Key blocks of 128 with a short last one, d_k ≠ d_v, a sub-range of rows; ℓ ≥ 1 (the first block's maximum).

    Every row's reach is about 0.3·5·7 + |t| < :data:`CLAMP_REACH`: by default the exp runs unclamped.
    """
    rng = np.random.default_rng(7)
    n, d_k, d_v = 613, 24, 40
    Q, K = (rng.standard_normal((n, d_k), dtype=np.float32) for _ in range(2))
    V = rng.standard_normal((n, d_v), dtype=np.float32)
    assert 2 * 0.3 * np.linalg.norm(Q, axis=1).max() * np.linalg.norm(K, axis=1).max() < _kernels.CLAMP_REACH
    Z, L, ell = _kernels.attend_rows(Q, K, V, 0.3, causal=causal, columns=128, clamp_reach=clamp_reach)
    Z_ref, L_ref = _softmax_rows_float64(Q, K, V, 0.3, causal)
    np.testing.assert_allclose(Z, Z_ref, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(L, L_ref, rtol=1e-6, atol=2e-6)
    assert (ell >= 1).all()
    Z_part, L_part, _ = _kernels.attend_rows(Q, K, V, 0.3, causal=causal, columns=128, rows=(100, 300))
    np.testing.assert_allclose(Z_part[100:300], Z[100:300], rtol=1e-6, atol=1e-6)  # BLAS may block other rows apart
    np.testing.assert_allclose(L_part[100:300], L[100:300], rtol=1e-6, atol=1e-6)
    assert not Z_part[:100].any() and not Z_part[300:].any()


@pytest.mark.skipif(not numba_present, reason="Numba is not installed")
@pytest.mark.parametrize("causal", [False, True])
def test_compiled_rows_skip_the_clamps_only_where_they_change_nothing(causal):
    """Rows of small and of large reach side by side: the same bits as with every row clamped, and
    exact where the scores spread far beyond the exp's range (an unclamped exp there wraps 2^k's
    exponent bits: weights of garbage) — on every row the kernel's sum does not send back to its
    caller (ℓ above MAX_ROW_SUM: a later score far above the first block's maximum)."""
    rng = np.random.default_rng(11)
    n, d = 300, 16
    Q, K, V = (rng.standard_normal((n, d), dtype=np.float32) for _ in range(3))
    Q *= np.geomspace(0.05, 100.0, n, dtype=np.float32)[rng.permutation(n), None]  # reach from ~0.5 to ~1000
    reach = 0.5 * np.linalg.norm(Q, axis=1) * np.linalg.norm(K, axis=1).max()
    S = 0.5 * Q.astype(np.float64) @ K.T.astype(np.float64)
    assert (2 * reach < _kernels.CLAMP_REACH).sum() > 50  # unclamped rows
    far = S.max(axis=1) - S.min(axis=1) > 2 * _kernels.EXP_MAX  # rows an unclamped exp would get wrong
    default = _kernels.attend_rows(Q, K, V, 0.5, causal=causal, columns=64)
    clamped = _kernels.attend_rows(Q, K, V, 0.5, causal=causal, columns=64, clamp_reach=0.0)
    for a, b in zip(default, clamped, strict=True):
        np.testing.assert_array_equal(a, b)
    Z, L, ell = default
    kept = ell <= _fast.MAX_ROW_SUM[np.dtype(np.float32)]  # the rest go back to the caller, redone exactly
    assert (far & kept).sum() > 30
    Z_ref, L_ref = _softmax_rows_float64(Q, K, V, 0.5, causal)
    np.testing.assert_allclose(Z[kept], Z_ref[kept], rtol=1e-5, atol=2e-5)
    np.testing.assert_allclose(L[kept], L_ref[kept], rtol=1e-6, atol=1e-4)


@pytest.mark.skipif(not numba_present, reason="Numba is not installed")
def test_compiled_rows_refuse_mismatched_shapes_and_dtypes():
    Q = np.zeros((4, 3), np.float32)
    with pytest.raises(ShapeError, match=r"attend_rows: Q has shape \(4, 3\), K \(4, 2\)"):
        _kernels.attend_rows(Q, np.zeros((4, 2), np.float32), Q, 1.0)
    with pytest.raises(ShapeError, match="with n = m when causal"):
        _kernels.attend_rows(Q, Q[:3], Q[:3], 1.0, causal=True)
    with pytest.raises(ShapeError, match="expected C-contiguous float32"):
        _kernels.attend_rows(Q.astype(np.float64), Q, Q, 1.0)
