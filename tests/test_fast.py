"""The NumPy fast path of the blockwise core (attnsym.numeric._fast) against the generic array-API code.

Same inputs, fast path on and off: equal within the dtype's tolerance, including the cases the
fast path treats specially — a loose Cauchy–Schwarz bound (the exact running-maximum
fallback), fully masked rows, batch masks, blocks of every odd size, one or two threads.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import ClassVar

import numpy as np
import pytest

from attnsym import numeric as nm
from attnsym.numeric import _fast, _kernels, _pool
from attnsym.testing import TOLERANCES


def _both(monkeypatch, fn):
    monkeypatch.setattr(_fast, "ENABLED", False)
    generic = fn()
    monkeypatch.setattr(_fast, "ENABLED", True)
    return fn(), generic


def _assert_same(got, want, dtype):
    tol = TOLERANCES[dtype]
    if isinstance(want, dict):
        assert got.keys() == want.keys()
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=tol.rtol, atol=tol.atol * max(1.0, np.abs(want[k]).max()),
                                       err_msg=k)
    else:
        np.testing.assert_allclose(got, want, rtol=tol.rtol, atol=tol.atol)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("block", [3, 16, None])
def test_fast_path_equals_generic_path(monkeypatch, dtype, causal, block):
    rng = np.random.default_rng(0)
    n, d, heads = 90, 8, 2
    X = rng.standard_normal((2, n, d)).astype(dtype)
    W = [(rng.standard_normal((d, d)) / np.sqrt(d)).astype(dtype) for _ in range(4)]
    G = rng.standard_normal(X.shape).astype(dtype)
    kw = dict(heads=heads, causal=causal, block_size=block or 2048)
    Y, Y_generic = _both(monkeypatch, lambda: nm.attention(X, *W, return_weights=False, **kw))
    _assert_same(Y, Y_generic, dtype)
    g, g_generic = _both(monkeypatch, lambda: nm.attention_vjp(X, *W[:3], G, W[3], **kw))
    _assert_same(g, g_generic, dtype)


def test_a_loose_bound_takes_the_fast_path(monkeypatch):
    rng = np.random.default_rng(1)
    n, d = 40, 4
    X = np.zeros((n, d))
    X[:, 0] = X[:, 1] = 60.0
    X[:, 2] = rng.standard_normal(n)
    W_Q, W_K = np.diag([1.0, 0.0, 1.0, 0.0]), np.diag([0.0, 1.0, 1.0, 0.0])  # q = (60, 0, r, 0), k = (0, 60, r, 0)
    calls = []  # |q|·|k|/2 ≈ 1800 bounds scores that are only r_i·r_j/2: shifted by the bound, the row sums underflow;
    # shifted by the first key block's maximum they do not, and no block is computed twice
    real = _fast._forward_block
    monkeypatch.setattr(_fast, "_forward_block", lambda *a, **k: calls.append(k["exact"]) or real(*a, **k))
    W = np.eye(d)
    Y = nm.attention(X, W_Q, W_K, W, return_weights=False, block_size=16)
    assert calls.count(False) > 0 and calls.count(True) == 0
    Y_plain, _ = nm.attention(X, W_Q, W_K, W)
    np.testing.assert_allclose(Y, Y_plain, rtol=TOLERANCES["float64"].rtol, atol=TOLERANCES["float64"].atol)


@pytest.mark.parametrize("compiled", [True, False])
def test_a_score_far_above_the_first_key_block_falls_back_to_the_running_maximum(monkeypatch, compiled):
    """NumPy's blocks or the compiled rows first (float32), then each query block again with the running maximum."""
    if compiled and not _kernels.available():
        pytest.skip("the compiled rows need Numba")
    rng = np.random.default_rng(1)
    n, d = 40, 4
    X = (0.1 * rng.standard_normal((n, d))).astype(np.float32)
    X[:, 0] = 1.0
    X[30, 0] = 300.0  # key 30 scores 150 against every query: e^150 passes float32's range after a shift near 0
    calls = []
    real = _fast._forward_block
    monkeypatch.setattr(_fast, "_forward_block", lambda *a, **k: calls.append(k["exact"]) or real(*a, **k))
    W = np.eye(d, dtype=np.float32)
    with warnings.catch_warnings(), contextlib.nullcontext() if compiled else _kernels.disabled():
        warnings.simplefilter("error")  # the overflow of the first attempt is not reported: it is redone
        Y = nm.attention(X, W, W, W, return_weights=False, block_size=16)
    blocks = -(-n // 16)
    assert calls == [True] * blocks if compiled else calls.count(True) == calls.count(False) == blocks
    Y_plain, _ = nm.attention(X.astype(np.float64), *(np.eye(d),) * 3)
    np.testing.assert_allclose(Y, Y_plain, rtol=TOLERANCES["float32"].rtol, atol=TOLERANCES["float32"].atol * 300)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fully_masked_rows_and_batch_masks(monkeypatch, dtype):
    rng = np.random.default_rng(2)
    n, d = 37, 4
    X = rng.standard_normal((3, n, d)).astype(dtype)
    W = np.eye(d, dtype=dtype)
    mask = rng.random((3, n, n)) > 0.4
    mask[0, 5, :] = False  # fully masked rows: zero output, zero gradient
    mask[2, :, 3] = False
    G = rng.standard_normal(X.shape).astype(dtype)
    for causal in (False, True):
        kw = dict(mask=mask, causal=causal, block_size=8)
        Y, Y_generic = _both(monkeypatch, lambda kw=kw: nm.attention(X, W, W, W, return_weights=False, **kw))
        _assert_same(Y, Y_generic, dtype)
        assert np.all(Y[0, 5] == 0)
        g, g_generic = _both(monkeypatch, lambda kw=kw: nm.attention_vjp(X, W, W, W, G, **kw))
        _assert_same(g, g_generic, dtype)


def test_one_thread_and_two_threads_agree(monkeypatch):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 8)).astype(np.float32)
    W = [rng.standard_normal((8, 8)).astype(np.float32) / 3 for _ in range(3)]
    G = rng.standard_normal((300, 8)).astype(np.float32)
    results = []
    for threads in (1, 2):
        monkeypatch.setattr(_pool, "THREADS", threads)
        results.append((nm.attention(X, *W, return_weights=False, block_size=64), nm.attention_vjp(X, *W, G, block_size=64)))
    _assert_same(results[1][0], results[0][0], "float32")
    _assert_same(results[1][1], results[0][1], "float32")


def test_numpy_sequences_from_the_auto_length_take_the_fast_backward(monkeypatch):
    seen = []
    monkeypatch.setattr(_fast, "backward", lambda *a, real=_fast.backward, **k: seen.append(1) or real(*a, **k))
    rng = np.random.default_rng(4)
    n = nm.AUTO_BLOCKWISE_N
    X, G = rng.standard_normal((n, 4)), rng.standard_normal((n, 4))
    W = np.eye(4)
    nm.attention_vjp(X[:64], W, W, W, G[:64])
    assert seen == []  # short: the plain path keeps the weights
    nm.attention_vjp(X, W, W, W, G)
    assert seen == [1]


class _Counting(np.ndarray):
    """An array that logs every ufunc call touching it (name, method, largest operand size)."""

    log: ClassVar[list] = []

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = lambda xs: tuple(x.view(np.ndarray) if isinstance(x, _Counting) else x for x in xs)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = plain(out)
        sizes = [x.size for x in (*inputs, *(out or ())) if isinstance(x, np.ndarray)]
        _Counting.log.append((ufunc.__name__, method, max(sizes, default=0)))
        result = getattr(ufunc, method)(*plain(inputs), **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return result.view(_Counting) if isinstance(result, np.ndarray) else result


def test_the_generic_path_makes_the_passes_the_fast_path_docstring_counts(monkeypatch):
    """4 element-wise passes per score block forward (max, subtract, exp, sum) and 4 backward."""
    from attnsym.numeric import blockwise
    from attnsym.numeric.binding import bind

    monkeypatch.setattr(_fast, "ENABLED", False)
    rng = np.random.default_rng(5)
    n, d, b = 12, 3, 4
    X = rng.standard_normal((n, d))
    layer, _ = bind(X, np.eye(d), np.eye(d), np.eye(d), None, dict.fromkeys(("b_Q", "b_K", "b_V", "b_O")),
                    spec=None, heads=1, causal=False, mask=None, scale="sqrt", positions=None, backend=None)
    Q, K, V, dZ = (rng.standard_normal((1, n, d)).view(_Counting) for _ in range(4))
    blocks = (n // b) ** 2

    def passes():
        calls = [(name, method) for name, method, size in _Counting.log if size == b * b and name != "matmul"]
        _Counting.log.clear()
        return calls

    _Counting.log.clear()
    Z, lse = blockwise.blockwise_core(layer, Q, K, V, b)
    forward = passes()
    assert sorted(set(forward)) == [("add", "reduce"), ("exp", "__call__"), ("maximum", "reduce"),
                                    ("subtract", "__call__")]
    assert len(forward) == 4 * blocks
    blockwise.blockwise_core_vjp(layer, Q, K, V, Z, lse, dZ, b)
    backward = passes()
    assert sorted(set(backward)) == [("exp", "__call__"), ("multiply", "__call__"), ("subtract", "__call__")]
    assert len(backward) == 4 * blocks  # S -= L, exp, dA -= D, dA *= A


def test_the_forward_takes_one_task_per_worker_unless_causal_or_kept(monkeypatch):
    """An unmasked forward packs each key block once per worker (one tall task each); a causal one splits its rows
    four ways per worker (unequal costs); one that keeps its exponentials uses tiles of at most TASK_ROWS rows."""
    monkeypatch.setattr(_pool, "THREADS", 2)
    counts = []
    real = _fast.forward
    monkeypatch.setattr(_fast, "forward", lambda *a, **k: counts.append(_tasks(monkeypatch)) or real(*a, **k))
    rng = np.random.default_rng(6)
    n = nm.AUTO_BLOCKWISE_N * 2
    X, G = rng.standard_normal((n, 4)).astype(np.float32), rng.standard_normal((n, 4)).astype(np.float32)
    W = np.eye(4, dtype=np.float32)
    nm.attention(X, W, W, W, return_weights=False)
    nm.attention(X, W, W, W, return_weights=False, causal=True)
    nm.attention_vjp(X, W, W, W, G)
    assert [len(c) for c in counts] == [2, 8, 4]
    assert [_fast.forward_rows(n, 1, _fast.FAST_BLOCK, causal=c, keep=k) for c, k in ((0, 0), (1, 0), (0, 1))] == \
        [n // 2, n // 8, _fast.TASK_ROWS]


def _tasks(monkeypatch) -> list:
    """The tasks of the next pool run (recorded by a one-shot wrapper of _pool.run)."""
    seen: list = []
    real = _pool.run

    def once(tasks, scratch=None, private=None):
        seen.extend(tasks)
        monkeypatch.setattr(_pool, "run", real)
        return real(tasks, scratch, private)

    monkeypatch.setattr(_pool, "run", once)
    return seen


def test_the_compiled_rows_take_the_plain_and_causal_float32_forwards(monkeypatch):
    """Masks, ALiBi and float64 stay on NumPy's blocks, a forward that keeps its exponentials takes the compiled
    rows too; every result agrees."""
    if not _kernels.available():
        pytest.skip("the compiled rows need Numba")
    used = []
    real = _fast._compiled_rows
    monkeypatch.setattr(_fast, "_compiled_rows", lambda *a: used.append(real(*a) is not None) or real(*a))
    rng = np.random.default_rng(5)
    n = 300
    X = rng.standard_normal((2, n, 8)).astype(np.float32)
    W = [(rng.standard_normal((8, 8)) / 3).astype(np.float32) for _ in range(3)]
    mask = rng.random((n, n)) > 0.2
    cases = {"plain": ({}, True), "causal, 2 heads": ({"causal": True, "heads": 2}, True),
             "mask": ({"mask": mask}, False), "alibi": ({"positions": "alibi", "heads": 2}, False)}
    for name, (kw, compiled) in cases.items():
        used.clear()
        Y, Y_generic = _both(monkeypatch, lambda kw=kw: nm.attention(X, *W, return_weights=False, block_size=64, **kw))
        assert used == [compiled], name
        _assert_same(Y, Y_generic, "float32")
    used.clear()
    nm.attention(X.astype(np.float64), *(w.astype(np.float64) for w in W), return_weights=False, block_size=64)
    assert used == [False]
    used.clear()
    X_long = rng.standard_normal((nm.AUTO_BLOCKWISE_N, 8)).astype(np.float32)
    nm.attention_vjp(X_long, *W, X_long)  # keeps its exponentials for the backward: the compiled rows fill the tiles
    assert used == [True]
    assert "scipy" in _pool._STATE["warm"]  # the compiled rows' BLAS had its buffers written before its first call
