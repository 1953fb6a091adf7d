r"""Exact per-head statistics of one layer in one blockwise pass: the online softmax, no ``n × n`` kept.

Shape legend: ``B`` batch, ``H`` heads, ``n`` tokens, ``d`` head width, ``bi`` / ``bj`` rows of a
query / key block.

Queries are taken in blocks of ``bi`` rows; for each, the key blocks arrive one at a time. Each
row is shifted by ``m``, the maximum of its scores in the first key block, and every block
needs one element-wise pass (:func:`element_pass`: the compiled float32 loop
:func:`attnsym.numeric._kernels.exp_rowsum_moment`, or NumPy) and one product with
``[V, j − j0]``, adding up

.. math::

    \ell = \textstyle\sum_j p_j,\quad T = \sum_j p_j\,(s_j - m),\quad
    D = \sum_j p_j\,|i - j|,\quad acc = \sum_j p_j\,v_j,\qquad p_j = e^{s_j - m},

and the row's largest shifted score ``t``. A row whose sum passes
:data:`MAX_ROW_SUM` (a score far above the first block's maximum), or
with no allowed key in its first block (a sliding window), runs the exact online softmax instead
(the ``blockwise-exact`` claim; the recurrence of
:func:`attnsym.numeric.blockwise.blockwise_core`): a running maximum ``m'`` with the sums
rescaled by :math:`\alpha = e^{m - m'}` (``T' = α (T + ℓ (m − m')) + …``). At the end of a row
(:math:`L = m + \log \ell` its log-sum-exp):

* ``entropy`` :math:`= -\sum_j a_j \ln a_j = L - \mathrm{E}_a[s] = \log \ell - T / \ell` (nats);
* ``max_weight`` :math:`= e^{m + t - L} = e^t / \ell`;
* ``self_mass``, ``prev_token_mass``, ``first_token_mass`` :math:`= e^{s_{i,j} - L}` for
  ``j = i``, ``i - 1``, ``0`` (the scores are picked from their block as it passes);
* ``mean_distance`` :math:`= \sum_j a_j |i - j| = D / \ell`;
* ``Z = acc / ℓ``, the attention output the next layer needs.

Masked keys (``-inf``: causal, sliding window) weigh 0. A row counts for the means when it
may attend to at least two keys (:mod:`attnsym.heads`' rule: in a decoder query 0 sees only
itself); previous- and first-token rows also need ``i ≥ 1`` and their key allowed.

Memory: a few ``B × H × bi × bj`` blocks and ``O(B·H·n)`` per-row sums, never ``n × n``.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ..numeric import _kernels
from ..numeric.layer import BoundLayer, block_scores

__all__ = ["DEFAULT_BLOCK", "MAX_ROW_SUM", "ROW_STATISTICS", "LayerRows", "element_pass", "stream_layer"]

#: query rows and key columns of one block (9 heads × 256 × 256 float32 = 2.4 MB per block)
DEFAULT_BLOCK = 256
#: a row whose shifted sum passes this (a score far above its first key block's maximum: e^60 in float32, within the
#: compiled exp's exact range up to e^88) is recomputed with the exact running maximum, as in the numeric fast path
MAX_ROW_SUM = {np.dtype(np.float32): float(np.exp(60.0)), np.dtype(np.float64): float(np.exp(600.0))}
#: the per-row statistics of one layer, in column order
ROW_STATISTICS = ("entropy", "max_weight", "first_token_mass", "self_mass", "prev_token_mass", "mean_distance")


@dataclass(frozen=True)
class LayerRows:
    """Per-row statistics of one layer, each ``(B, H, n)`` float64, NaN where a row does not count.

    Attributes
    ----------
    values : dict
        :data:`ROW_STATISTICS` name -> ``(B, H, n)`` array.
    """

    values: dict[str, np.ndarray]

    def means(self) -> dict[str, np.ndarray]:
        """Name -> ``(B, H)`` mean over the rows that count (NaN when none does)."""
        out = {}
        for name, v in self.values.items():
            ok = ~np.isnan(v)
            count = ok.sum(axis=-1)
            total = np.where(ok, v, 0.0).sum(axis=-1)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[name] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        return out


class _Accumulator:
    """The running sums of one query block (all lanes at once)."""

    def __init__(self, lead: tuple[int, ...], bi: int, dv: int, dtype) -> None:
        self.m = np.full((*lead, bi), -np.inf, dtype)  # running maximum
        self.ell = np.zeros((*lead, bi), dtype)  # Σ e^{s - m}
        self.T = np.zeros((*lead, bi), dtype)  # Σ e^{s - m} (s - m)
        self.D = np.zeros((*lead, bi), dtype)  # Σ e^{s - m} |i - j|
        self.acc = np.zeros((*lead, bi, dv), dtype)  # Σ e^{s - m} v
        self.count = np.zeros((*lead, bi), np.int64)  # allowed keys
        self.top = np.zeros((*lead, bi), dtype)  # the row's largest score minus its shift m (0 when m is the maximum)
        self.picks = {name: np.full((*lead, bi), -np.inf, dtype) for name in ("self", "prev", "first")}


#: a finite stand-in for -inf scores after the exponential, so that 0 · s stays 0
_LOW = {np.dtype(np.float32): np.float32(-1e30), np.dtype(np.float64): -1e300}


def _add_block(layer: BoundLayer, acc: _Accumulator, Qb, Kb, Vb, i0: int, i1: int, j0: int, j1: int,
               distance: Callable[[int, int, int, int], np.ndarray]) -> None:
    """Fold keys ``j0:j1`` into the running sums of queries ``i0:i1``."""
    S = np.asarray(block_scores(layer, Qb, Kb, i0, i1, j0, j1))  # (B, H, bi, bj), -inf where masked
    if not S.flags.writeable:
        S = S.copy()
    _pick(acc, S, i0, i1, j0, j1)
    masked = (layer.causal and j1 - 1 > i0) or layer.mask is not None
    if masked:
        acc.count += np.isfinite(S).sum(axis=-1)
    else:
        acc.count += j1 - j0
    m_old = acc.m
    m_new = np.maximum(m_old, S.max(axis=-1))  # (B, H, bi)
    shift = np.where(np.isfinite(m_new), m_new, 0.0).astype(S.dtype)
    S -= shift[..., None]
    P = np.exp(S)  # (B, H, bi, bj), in [0, 1]
    if masked:
        np.maximum(S, _LOW[S.dtype], out=S)
    seen = np.isfinite(m_old)
    alpha = np.where(seen, np.exp(np.where(seen, m_old, 0.0) - shift), 0.0).astype(S.dtype)
    acc.T = alpha * (acc.T + acc.ell * np.where(seen, m_old - shift, 0.0)) + np.einsum("...ij,...ij->...i", P, S)
    acc.ell = alpha * acc.ell + P.sum(axis=-1)
    acc.D = alpha * acc.D + np.einsum("...ij,ij->...i", P, distance(i0, i1, j0, j1))
    acc.acc = alpha[..., None] * acc.acc + P @ Vb
    acc.m = m_new


def _moments_numpy(S: np.ndarray, sums: np.ndarray, moments: np.ndarray, maxima: np.ndarray) -> None:
    """``S ← exp(S)``, ``sums += Σ exp(S)``, ``moments += Σ exp(S) S``, ``maxima`` the row maxima (NumPy; -inf adds 0)."""
    np.maximum(maxima, S.max(axis=-1), out=maxima)
    P = np.exp(S)
    np.maximum(S, _LOW[S.dtype], out=S)
    moments += np.einsum("ij,ij->i", P, S)
    sums += P.sum(axis=-1)
    S[...] = P


def element_pass(dtype) -> Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], None]:
    """The block's one element-wise pass for ``dtype``: the compiled float32 loop
    (:func:`attnsym.numeric._kernels.exp_rowsum_moment`, Numba) or NumPy's (float64, or without Numba)."""
    if np.dtype(dtype) == np.float32 and _kernels.available():
        kernels = _kernels.compiled()
        assert kernels is not None
        return kernels["exp_rowsum_moment"]
    return _moments_numpy


def _add_block_shifted(layer: BoundLayer, acc: _Accumulator, S, shift, Vx, i0: int, i1: int, j0: int, j1: int,
                       distance: Callable[[int, int, int, int], np.ndarray], passes) -> None:
    """Fold keys ``j0:j1`` (raw scores ``S``, overwritten) into the sums of queries ``i0:i1``, shifted by the fixed ``shift``.

    ``Vx`` ``(B, H, bj, d_v + 1)`` holds the block's values and ``j − j0``: one product gives
    ``Σ p v`` and ``Σ p (j − j0)``, from which ``Σ p |i − j|`` follows for a block wholly left or
    right of the diagonal; a block across it multiplies by ``|i − j|`` element-wise.
    """
    _pick(acc, S, i0, i1, j0, j1)
    if (layer.causal and j1 - 1 > i0) or layer.mask is not None:
        acc.count += np.isfinite(S).sum(axis=-1)
    else:
        acc.count += j1 - j0
    S -= shift[..., None]
    rows = S.reshape(-1, S.shape[-1])
    ell = np.zeros(rows.shape[0], S.dtype)
    T = np.zeros(rows.shape[0], S.dtype)
    top = np.ascontiguousarray(acc.top.reshape(-1))
    passes(rows, ell, T, top)  # S ← p = e^{s − shift}: the one pass over the block
    ell, T = ell.reshape(acc.ell.shape), T.reshape(acc.T.shape)
    acc.top = top.reshape(acc.ell.shape)
    PV = S @ Vx  # (B, H, bi, d_v + 1)
    acc.ell += ell
    acc.T += T
    acc.acc += PV[..., :-1]
    i = np.arange(i0, i1, dtype=S.dtype)
    if j1 - 1 <= i0:  # every key at or before every query: |i − j| = (i − j0) − (j − j0)
        acc.D += (i - j0) * ell - PV[..., -1]
    elif j0 >= i1 - 1:  # every key at or after every query: |i − j| = (j − j0) + (j0 − i)
        acc.D += PV[..., -1] + (j0 - i) * ell
    else:
        acc.D += np.einsum("...ij,ij->...i", S, distance(i0, i1, j0, j1))


def _pick(acc: _Accumulator, S, i0: int, i1: int, j0: int, j1: int) -> None:
    """Keep the raw scores of the self, previous and first keys of queries ``i0:i1`` found in keys ``j0:j1``."""
    rows = np.arange(i0, i1)
    for name, target in (("self", rows), ("prev", rows - 1), ("first", np.zeros_like(rows))):
        inside = np.nonzero((target >= j0) & (target < j1))[0]
        if inside.size:
            acc.picks[name][..., inside] = S[..., inside, target[inside] - j0]


def stream_layer(layer: BoundLayer, Q, K, V, *, block: int = DEFAULT_BLOCK, threads: int = 1,
                 on_block: Callable[[], None] | None = None,
                 head_map: tuple[int, np.ndarray] | None = None) -> tuple[np.ndarray, LayerRows]:
    """``Z = softmax(S) V`` of one layer and its per-row statistics, never holding an ``n × n`` array.

    Parameters
    ----------
    layer : BoundLayer
        The layer bound at ``n`` tokens (scale, mask, window, ALiBi, soft-cap: :func:`block_scores`).
    Q, K : (B, H, n, d_k) NumPy arrays
        Per-head rows, QK-normed and rotated, key heads repeated for their query heads.
    V : (B, H, n, d_v) NumPy array
    block : int
        Query rows and key columns per block.
    threads : int
        Query blocks run on this many threads (NumPy releases the GIL in its products and loops).
    on_block : callable, optional
        Called after each query block (a progress bar).
    head_map : (h, (n, n) array), optional
        Also write head ``h``'s weights (batch element 0) into this array, block by block (a
        ``.npy`` memory map for long texts).

    Returns
    -------
    Z : (B, H, n, d_v) array
    rows : LayerRows

    Examples
    --------
    >>> from attnsym.numeric.layer import BoundLayer
    >>> spec = at.AttentionSpec(n=5, d_model=4, heads=1, causal=True)
    >>> layer = BoundLayer(spec=spec, xp=np, batch_shape=(1,), dtype="float64", device="cpu")
    >>> Q, K, V = np.random.default_rng(0).standard_normal((3, 1, 1, 5, 4))
    >>> Z, rows = stream_layer(layer, Q, K, V, block=2)
    >>> A = at.numeric.softmax(at.numeric.scores(Q, K, 0.5, np.tril(np.ones((5, 5), bool))))
    >>> bool(np.allclose(Z, A @ V)), bool(np.allclose(rows.values["max_weight"][0, 0, 1:], A[0, 0, 1:].max(-1)))
    (True, True)
    """
    Q, K, V = (np.asarray(M) for M in (Q, K, V))
    lead, n, dv = Q.shape[:-2], Q.shape[-2], V.shape[-1]
    dtype = Q.dtype
    Qs = Q * dtype.type(layer.scale)
    Z = np.empty((*lead, n, dv), dtype)
    rows = {name: np.full((*lead, n), np.nan) for name in ROW_STATISTICS}
    cache: dict[tuple[int, int, int, int], np.ndarray] = {}

    def distance(i0: int, i1: int, j0: int, j1: int) -> np.ndarray:  # |i - j| of a block, by shape and offset
        key = (i1 - i0, j1 - j0, j0 - i0, 0)
        if key not in cache:
            cache[key] = np.abs(np.arange(i0, i1)[:, None] - np.arange(j0, j1)[None, :]).astype(dtype)
        return cache[key]

    passes = element_pass(dtype)
    Vx = np.concatenate([V, np.broadcast_to((np.arange(n) % block).astype(dtype)[:, None], (*lead, n, 1))],
                        axis=-1)  # [V, j − j0]: the distance's column (blocks start at multiples of block)

    def shifted(i0: int, i1: int, end: int, Qb) -> _Accumulator | None:
        """The query block with each row shifted by its first key block's maximum; None where that cannot hold."""
        acc = _Accumulator(lead, i1 - i0, dv, dtype)
        j1 = min(end, block)
        S = np.asarray(block_scores(layer, Qb, K[..., :j1, :], i0, i1, 0, j1))
        top = S.max(axis=-1)  # (B, H, bi)
        if not np.isfinite(top).all():  # a row with no allowed key in the first block (a sliding window)
            return None
        acc.m = top
        acc.top = np.full_like(top, -np.inf)
        for j0 in range(0, end, block):
            j1 = min(end, j0 + block)
            if j0:
                S = np.asarray(block_scores(layer, Qb, K[..., j0:j1, :], i0, i1, j0, j1))
            S = np.ascontiguousarray(S) if S.flags.writeable else S.copy()  # the pass works on its rows in place
            with np.errstate(over="ignore", invalid="ignore"):
                _add_block_shifted(layer, acc, S, top, Vx[..., j0:j1, :], i0, i1, j0, j1, distance, passes)
        if not (acc.ell <= MAX_ROW_SUM[np.dtype(dtype)]).all():  # a score far above the first block's maximum
            return None
        return acc

    def run(i0: int) -> None:
        i1 = min(n, i0 + block)
        end = i1 if layer.causal else n
        Qb = Qs[..., i0:i1, :]
        acc = shifted(i0, i1, end, Qb)
        if acc is None:  # the exact online softmax, its running maximum rescaling the sums
            acc = _Accumulator(lead, i1 - i0, dv, dtype)
            for j0 in range(0, end, block):
                j1 = min(end, j0 + block)
                _add_block(layer, acc, Qb, K[..., j0:j1, :], V[..., j0:j1, :], i0, i1, j0, j1, distance)
        ell = acc.ell.astype(np.float64)
        seen = ell > 0
        safe = np.where(seen, ell, 1.0)
        Z[..., i0:i1, :] = acc.acc / safe[..., None].astype(dtype)
        lse = np.where(seen, acc.m + np.log(safe), np.inf)  # float64
        counts = acc.count >= 2
        i = np.arange(i0, i1)
        out = {"entropy": np.log(safe) - acc.T / safe, "max_weight": np.exp(acc.top.astype(np.float64)) / safe,
               "mean_distance": acc.D / safe}
        for name, pick, ok in (("self_mass", "self", counts), ("prev_token_mass", "prev", counts & (i >= 1)),
                               ("first_token_mass", "first", counts & (i >= 1))):
            s = acc.picks[pick].astype(np.float64)
            out[name] = np.where(ok & np.isfinite(s), np.exp(np.minimum(s - lse, 0.0)), np.nan)
        for name in ("entropy", "max_weight", "mean_distance"):
            out[name] = np.where(counts, out[name], np.nan)
        for name, v in out.items():
            rows[name][..., i0:i1] = v
        if head_map is not None:
            _write_map(layer, head_map, Qb, K, lse, i0, i1, end, block)
        if on_block is not None:
            on_block()

    starts = list(range(0, n, block))
    if layer.causal:
        starts.reverse()  # the last query blocks see the most keys: start them first
    if threads <= 1 or len(starts) == 1:
        for i0 in starts:
            run(i0)
    else:
        with ThreadPoolExecutor(threads) as pool:
            for future in [pool.submit(run, i0) for i0 in starts]:
                future.result()
    return Z, LayerRows(values=rows)


def _write_map(layer: BoundLayer, head_map: tuple[int, np.ndarray], Qb, K, lse, i0: int, i1: int, end: int,
               block: int) -> None:
    """Head ``h``'s weights of queries ``i0:i1`` (batch element 0) into ``out``, recomputed from the row log-sum-exp."""
    h, out = head_map
    for j0 in range(0, out.shape[1], block):
        j1 = min(out.shape[1], j0 + block)
        if j0 >= end:
            out[i0:i1, j0:j1] = 0.0
            continue
        S = np.asarray(block_scores(layer, Qb, K[..., j0:j1, :], i0, i1, j0, j1))[0, h].astype(np.float64)
        with np.errstate(invalid="ignore"):
            out[i0:i1, j0:j1] = np.where(np.isfinite(S), np.exp(S - lse[0, h][:, None]), 0.0)
