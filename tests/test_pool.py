"""The worker pool of the NumPy fast path (attnsym.numeric._pool): BLAS at one thread, products split by rows."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from attnsym import numeric as nm
from attnsym.numeric import _pool
from attnsym.testing import TOLERANCES


def _blas_threads() -> list[int]:
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


@pytest.fixture
def two_workers(monkeypatch):
    """Two worker threads whatever the machine has, so the parallel code runs."""
    monkeypatch.setattr(_pool, "THREADS", 2)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(3, 700, 40), (2000, 64), (5, 7)])
def test_split_products_equal_numpy(two_workers, monkeypatch, dtype, shape):
    monkeypatch.setattr(_pool, "MIN_SPLIT", 1)  # split even the small one
    rng = np.random.default_rng(0)
    A = rng.standard_normal(shape).astype(dtype)
    B = rng.standard_normal((shape[-1], 33)).astype(dtype)
    tol = TOLERANCES[dtype]
    with _pool.one_blas_thread():
        got = _pool.matmul(A, B)
        got_t = _pool.matmul(A.reshape(-1, shape[-1]).T, A.reshape(-1, shape[-1]))  # a weight gradient Xᵀ X
    assert got.shape == (*shape[:-1], 33) and got.dtype == A.dtype
    np.testing.assert_allclose(got, A @ B, rtol=tol.rtol, atol=tol.atol * shape[-1])
    flat = A.reshape(-1, shape[-1])
    np.testing.assert_allclose(got_t, flat.T @ flat, rtol=tol.rtol, atol=tol.atol * flat.shape[0])


def test_products_are_split_only_inside_a_lean_call(two_workers, monkeypatch):
    tasks = []
    real = _pool.run
    monkeypatch.setattr(_pool, "run", lambda ts, scratch=None, private=None: tasks.append(len(ts)) or real(ts, scratch, private))
    A, B = np.ones((4096, 64)), np.ones((64, 64))
    _pool.matmul(A, B)
    assert tasks == []  # outside one_blas_thread: one np.matmul
    with _pool.one_blas_thread():
        _pool.matmul(A, B)
        _pool.matmul(A[:8], B)  # below MIN_SPLIT multiply-adds
    assert tasks == [4]


def test_products_too_small_to_split_alone_share_one_wait(two_workers, monkeypatch):
    """The three projections of a 2048-token head (8.4 M multiply-adds each, MIN_SPLIT 16.8 M) go to the
    pool together, as 4 row blocks each, in one run, and equal NumPy's products."""
    tasks = []
    real = _pool.run
    monkeypatch.setattr(_pool, "run", lambda ts, scratch=None, private=None: tasks.append(len(ts)) or real(ts, scratch, private))
    rng = np.random.default_rng(2)
    X = rng.standard_normal((2048, 64)).astype(np.float32)
    Ws = [rng.standard_normal((64, 64)).astype(np.float32) for _ in range(3)]
    assert 2048 * 64 * 64 < _pool.MIN_SPLIT <= 3 * 2048 * 64 * 64
    with _pool.one_blas_thread():
        alone = _pool.matmul(X, Ws[0])
        together = _pool.matmuls([(X, W) for W in Ws], ["a", None, "c"])
    assert tasks == [6]  # nothing for the product alone; 3 × 2 blocks for the three together: two per worker
    tol = TOLERANCES["float32"]
    for got, W in zip([alone, *together], [Ws[0], *Ws], strict=True):
        np.testing.assert_allclose(got, X @ W, rtol=tol.rtol, atol=tol.atol * 64)


def test_a_weight_gradient_is_cut_along_its_sum(two_workers, monkeypatch):
    """Xᵀ dQ (64 × 2048)·(2048 × 192) has too few rows to cut well: one part of the sum per worker, added up after,
    and the other product of the same call (dX, 2048 rows) is cut by rows in the same run."""
    tasks = []
    real = _pool.run
    monkeypatch.setattr(_pool, "run", lambda ts, scratch=None, private=None: tasks.append(len(ts)) or real(ts, scratch, private))
    rng = np.random.default_rng(3)
    X = rng.standard_normal((2048, 64))
    D = rng.standard_normal((2048, 192))
    W = rng.standard_normal((64, 192))
    with _pool.one_blas_thread():
        dW, dX = _pool.matmuls([(X.T, D), (D, W.T)])
    assert tasks == [2 + 2]  # two tasks per worker over both products
    np.testing.assert_allclose(dW, X.T @ D, rtol=1e-12, atol=1e-12 * 2048)
    np.testing.assert_allclose(dX, D @ W.T, rtol=1e-12, atol=1e-12 * 192)


def test_a_lean_call_runs_every_product_with_blas_at_one_thread(two_workers, monkeypatch):
    before = _blas_threads()
    seen = []
    real_matmuls, real_run = _pool.matmuls, _pool.run

    def matmuls(pairs, scratch=None):
        seen.extend([("matmul", _blas_threads())] * len(pairs))
        return real_matmuls(pairs, scratch)

    def run(tasks, scratch=None, private=None):
        seen.append(("run", _blas_threads()))
        return real_run(tasks, scratch, private)

    monkeypatch.setattr(_pool, "matmuls", matmuls)
    monkeypatch.setattr(_pool, "run", run)
    rng = np.random.default_rng(1)
    n = nm.AUTO_BLOCKWISE_N
    X, G = rng.standard_normal((n, 8)), rng.standard_normal((n, 8))
    W = [rng.standard_normal((8, 8)) / 3 for _ in range(4)]
    nm.attention(X, *W, return_weights=False)
    nm.attention_vjp(X, *W[:3], G, W[3])
    kinds = [kind for kind, _ in seen]
    # the projections of each call, the weight gradients and dX (one product each, over [dQ dK dV]), the forward's
    # W_O, and the backward's dW_O and dZ
    assert kinds.count("matmul") >= 3 + 3 + 1 + 1 + 3
    assert "run" in kinds  # the attention blocks went to the pool
    assert all(threads == [1] * len(before) for _, threads in seen)
    assert _blas_threads() == before  # restored after the call


def test_one_blas_thread_nests_and_restores(two_workers):
    before = _blas_threads()
    with _pool.one_blas_thread():
        with _pool.one_blas_thread():
            assert _pool.active() and _blas_threads() == [1] * len(before)
        assert _pool.active() and _blas_threads() == [1] * len(before)
    assert not _pool.active() and _blas_threads() == before


def test_a_plain_call_leaves_blas_alone(two_workers, monkeypatch):
    seen = []
    monkeypatch.setattr(_pool, "run", lambda *a, **k: seen.append(1))
    rng = np.random.default_rng(2)
    X = rng.standard_normal((16, 4))
    _, A = nm.attention(X, np.eye(4), np.eye(4), np.eye(4))
    assert A.shape == (16, 16) and seen == [] and not _pool.active()


# ----------------------------------------------------------------------------- the workspace
def test_workspace_buffers_are_kept_per_name_and_thread(monkeypatch):
    import threading

    monkeypatch.setattr(_pool, "WORKSPACE_MAX_BYTES", 4096)
    a = _pool.workspace("test:a", (4, 8), np.float32)
    again = _pool.workspace("test:a", (8, 4), np.float64)  # same name: the same memory, grown when too small
    other = _pool.workspace("test:b", (4, 8), np.float32)
    assert a.flags.c_contiguous and a.shape == (4, 8) and a.dtype == np.float32
    assert again.shape == (8, 4) and again.dtype == np.float64
    assert not np.shares_memory(a, other)
    assert np.shares_memory(_pool.workspace("test:a", (2, 2), np.float32), again)
    big = _pool.workspace("test:a", (1025,), np.float32)  # over the limit: a fresh array, nothing kept
    assert not np.shares_memory(big, _pool.workspace("test:a", (2, 2), np.float32))
    seen = []
    t = threading.Thread(target=lambda: seen.append(_pool.workspace("test:a", (2, 2), np.float32)))
    t.start()
    t.join()
    assert not np.shares_memory(seen[0], again)  # another thread: its own buffer


def test_a_lean_call_does_not_change_what_an_earlier_one_returned(two_workers):
    """The workspace is reused call after call: what a call returns is never a view of it."""
    rng = np.random.default_rng(5)
    n = nm.AUTO_BLOCKWISE_N + 3
    W = [rng.standard_normal((8, 8)) / 3 for _ in range(4)]
    X1, X2, G = (rng.standard_normal((n, 8)) for _ in range(3))
    Y1 = nm.attention(X1, *W[:3], return_weights=False)
    grads1 = nm.attention_vjp(X1, *W[:3], G, W[3])
    kept = Y1.copy(), {k: v.copy() for k, v in grads1.items()}
    nm.attention(X2, *W[:3], return_weights=False)
    nm.attention_vjp(X2, *W[:3], G, W[3])
    np.testing.assert_array_equal(Y1, kept[0])
    for k, v in grads1.items():
        np.testing.assert_array_equal(v, kept[1][k])
    Y_plain, _ = nm.attention(X1, *W[:3])  # the stored-weights path, no workspace
    tol = TOLERANCES["float64"]
    np.testing.assert_allclose(Y1, Y_plain, rtol=tol.rtol, atol=tol.atol)


def test_a_repeated_lean_call_allocates_its_temporaries_once():
    """The second call takes the projections, the padded operands and the score blocks from the workspace."""
    import tracemalloc

    rng = np.random.default_rng(6)
    n, d = 2048, 32
    X = rng.standard_normal((n, d), dtype=np.float32)
    W = [(rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float32) for _ in range(3)]
    _pool._LOCAL.__dict__.pop("workspace", None)  # as in a fresh thread
    tracemalloc.start()
    try:
        nm.attention(X, *W, return_weights=False)
        first = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        nm.attention(X, *W, return_weights=False)
        second = tracemalloc.get_traced_memory()[1] - tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    temporaries = 4 * n * (3 * d + 2 * (d + 1))  # Q, K, V and [K, 1], [V, 1] in float32
    assert second < first - temporaries


def test_fresh_workspace_keeps_nothing_inside_the_block():
    kept = _pool.workspace("test:fresh", (4,), np.float32)
    with _pool.fresh_workspace():
        a = _pool.workspace("test:fresh", (4,), np.float32)
        b = _pool.workspace("test:fresh", (4,), np.float32)
        assert not np.shares_memory(a, b) and not np.shares_memory(a, kept)
    assert np.shares_memory(_pool.workspace("test:fresh", (4,), np.float32), kept)


def test_the_first_lean_call_writes_each_workers_blas_buffer_once(two_workers, monkeypatch):
    """One warming product per worker, on the first entry only; never while traced, never waiting on a pool worker."""
    import threading
    import tracemalloc

    monkeypatch.setitem(_pool._STATE, "warm", set())
    monkeypatch.setattr(_pool, "_WARMERS", {"numpy": _pool._WARMERS["numpy"]})
    seen: list[tuple[str, tuple]] = []
    real = np.matmul

    def spy(a, b, *args, **kwargs):
        seen.append((threading.current_thread().name, (a.shape, b.shape)))
        return real(a, b, *args, **kwargs)

    monkeypatch.setattr(_pool.np, "matmul", spy)
    tracemalloc.start()
    try:
        with _pool.one_blas_thread():
            pass
    finally:
        tracemalloc.stop()
    assert not _pool._STATE["warm"] and seen == []  # traced: left for a later, untraced call
    _pool.run([lambda _: _pool.warm_blas()] * 4)  # run's entry warms; its tasks (some on the pool's thread) ask again
    assert _pool._STATE["warm"] == {"numpy"}
    warming = [name for name, shapes in seen if shapes == _pool.WARM_SHAPES]
    assert len(warming) == 2 and len(set(warming)) == 2  # one product per worker (the caller and one pool thread)
    seen.clear()
    with _pool.one_blas_thread():
        pass
    assert seen == []  # once per process
