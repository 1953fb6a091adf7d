"""attention_vjp's kept exponentials (attnsym.numeric._fast.Kept): the backward reads the forward's blocks.

Without ``block_size``, a NumPy forward + backward keeps each score block's ``exp`` for its backward
when they fit ``KEEP_MAX_BYTES``; the gradients must equal the recomputing backward's (the flash
one, which keeps nothing) in every case the forward treats specially: causal blocks cut at the
diagonal, masks with fully masked rows, a score bias, several heads and texts, both dtypes, and a
block redone with the running maximum (whose tiles are then not used).
"""

from __future__ import annotations

import numpy as np
import pytest

from attnsym import numeric as nm
from attnsym.numeric import _fast, _kernels
from attnsym.testing import TOLERANCES


def _spy(monkeypatch) -> list:
    """The ``kept`` each fast backward receives (None: it recomputed)."""
    seen = []
    real = _fast.backward
    monkeypatch.setattr(_fast, "backward", lambda *a, **k: seen.append(k.get("kept")) or real(*a, **k))
    return seen


def _kept_and_recomputed(monkeypatch, call):
    seen = _spy(monkeypatch)
    kept = call()
    monkeypatch.setattr(_fast, "KEEP_MAX_BYTES", 0)
    recomputed = call()
    return kept, recomputed, seen


def _assert_close(got: dict, want: dict, dtype: str) -> None:
    tol = TOLERANCES[dtype]
    assert got.keys() == want.keys()
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=tol.rtol, atol=tol.atol * max(1.0, np.abs(want[k]).max()),
                                   err_msg=k)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", ["plain", "causal", "mask", "alibi-causal"])
def test_the_kept_backward_equals_the_recomputing_one(monkeypatch, dtype, case):
    rng = np.random.default_rng(7)
    n, d, heads = nm.AUTO_BLOCKWISE_N + 37, 8, 2  # not a multiple of any block: short last tiles
    X = rng.standard_normal((2, n, d)).astype(dtype)
    W = [(rng.standard_normal((d, d)) / np.sqrt(d)).astype(dtype) for _ in range(3)]
    G = rng.standard_normal(X.shape).astype(dtype)
    kw: dict = {"heads": heads}
    if case == "causal":
        kw["causal"] = True
    elif case == "mask":
        mask = rng.random((2, n, n)) > 0.3
        mask[0, 5] = False  # a fully masked row: weights 0, gradient 0
        mask[1, :, 900:] = False
        kw["mask"] = mask
    elif case == "alibi-causal":
        kw.update(causal=True, positions="alibi")
    kept, recomputed, seen = _kept_and_recomputed(monkeypatch, lambda: nm.attention_vjp(X, *W, G, **kw))
    assert isinstance(seen[0], _fast.Kept) and seen[0].valid and seen[1] is None
    _assert_close(kept, recomputed, dtype)


def test_the_kept_backward_matches_float64_finite_differences_of_a_float32_call(monkeypatch):
    """Independent of both backwards: the float32 kept gradient of one weight entry against a central difference."""
    rng = np.random.default_rng(8)
    n, d = nm.AUTO_BLOCKWISE_N, 4
    X = rng.standard_normal((n, d))
    W_Q, W_K, W_V = (rng.standard_normal((d, d)) / 2 for _ in range(3))
    G = rng.standard_normal((n, d))
    seen = _spy(monkeypatch)
    grads = nm.attention_vjp(*(M.astype(np.float32) for M in (X, W_Q, W_K, W_V, G)), causal=True)
    assert isinstance(seen[0], _fast.Kept) and seen[0].valid
    E = np.zeros_like(W_K)
    E[1, 2] = 1e-6
    f = lambda W: float(np.sum(G * nm.attention(X, W_Q, W, W_V, causal=True, return_weights=False)))
    numeric = (f(W_K + E) - f(W_K - E)) / 2e-6
    assert abs(grads["W_K"][1, 2] - numeric) <= 2e-4 * max(1.0, abs(numeric))


def test_a_block_redone_with_the_running_maximum_makes_the_backward_recompute(monkeypatch):
    rng = np.random.default_rng(9)
    n, d = nm.AUTO_BLOCKWISE_N, 4
    X = (0.1 * rng.standard_normal((n, d))).astype(np.float32)
    X[:, 0] = 1.0
    X[700, 0] = 300.0  # key 700 scores 150 against every query: past the first key block's maximum by e^60
    W = np.eye(d, dtype=np.float32)
    G = rng.standard_normal((n, d)).astype(np.float32)
    kept, recomputed, seen = _kept_and_recomputed(monkeypatch, lambda: nm.attention_vjp(X, W, W, W, G))
    assert isinstance(seen[0], _fast.Kept) and not seen[0].valid  # the tiles were not read
    _assert_close(kept, recomputed, "float32")


def test_nothing_is_kept_past_the_budget_or_when_a_block_size_is_given(monkeypatch):
    rng = np.random.default_rng(10)
    n, d = nm.AUTO_BLOCKWISE_N, 4
    X, G = rng.standard_normal((n, d)).astype(np.float32), rng.standard_normal((n, d)).astype(np.float32)
    W = np.eye(d, dtype=np.float32)
    seen = _spy(monkeypatch)
    nm.attention_vjp(X, W, W, W, G, block_size=256)  # the lean backward asked for by name keeps nothing n × n
    monkeypatch.setattr(_fast, "KEEP_MAX_BYTES", n * n * 4 - 1)  # one float32 head's tiles need n² · 4 bytes
    nm.attention_vjp(X, W, W, W, G)
    monkeypatch.setattr(_fast, "KEEP_MAX_BYTES", n * n * 4)
    nm.attention_vjp(X, W, W, W, G)
    assert seen[0] is None and seen[1] is None and isinstance(seen[2], _fast.Kept)


@pytest.mark.parametrize("causal", [False, True])
def test_the_compiled_rows_fill_the_tiles_numpys_blocks_fill(monkeypatch, causal):
    """The float32 forward's compiled rows write each block's exponentials to its tile: the tiles the backward
    reads (causal: cut at the diagonal), the row sums and the gradients equal those of NumPy's blocks."""
    if not _kernels.available():
        pytest.skip("the compiled rows need Numba")
    rng = np.random.default_rng(12)
    n, d = nm.AUTO_BLOCKWISE_N + 37, 8  # short last tiles in both directions
    X, G = (rng.standard_normal((n, d)).astype(np.float32) for _ in range(2))
    W = [(rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float32) for _ in range(3)]
    compiled_rows = []
    real = _fast._compiled_rows
    monkeypatch.setattr(_fast, "_compiled_rows", lambda *a: compiled_rows.append(real(*a) is not None) or real(*a))
    seen = _spy(monkeypatch)
    compiled = nm.attention_vjp(X, *W, G, causal=causal)
    with _kernels.disabled():
        generic = nm.attention_vjp(X, *W, G, causal=causal)
    assert compiled_rows == [True, False]
    a, b = seen
    assert a.valid and b.valid and (a.rows, a.columns) == (b.rows, b.columns)
    np.testing.assert_allclose(a.sums, b.sums, rtol=1e-5)
    blocks = 0
    for i0 in range(0, n, a.rows):
        i1 = min(n, i0 + a.rows)
        end = i1 if causal else n
        for j0 in range(0, end, a.columns):
            j1 = min(end, j0 + a.columns)
            np.testing.assert_allclose(a.tile(0, i0, i1, j0, j1), b.tile(0, i0, i1, j0, j1), rtol=1e-5, atol=1e-6,
                                       err_msg=f"tile at ({i0}, {j0})")
            blocks += 1
    assert blocks >= 4
    _assert_close(compiled, generic, "float32")
