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
rescaled by :math:`\alpha = e^{m - m'}` (``T' = α (T + ℓ (m − m')) + …``).

**A learned sink** (gpt-oss: ``spec.sink``, its logit :math:`s_h` per head in
``layer.sinks``) joins each row's normaliser only, as in
:func:`attnsym.numeric.layer.sink_softmax`: the row's log-sum-exp is
:math:`L = \operatorname{logaddexp}(m + \log\ell,\ s_h)`, the sink's mass
:math:`\pi = e^{s_h - L}`, and the keys share :math:`w = 1 - \pi = e^{m + \log\ell - L}`. The
weights :math:`a_j = e^{s_j - L}` sum to ``w`` — kept so, never renormalised. Without a sink,
:math:`L = m + \log \ell`, ``w = 1``, ``π = 0``. At the end of a row:

* ``entropy`` :math:`= -\sum_j a_j \ln a_j` over the **keys only** (the sink's column left
  out), what the dense route's weights give (``Route.attention`` sums to ``1 − π``; the head
  classes and the explorer take :func:`attnsym.numeric.entropy.row_entropy` of it). With
  :math:`a_j = w\,q_j` and :math:`q = p / \ell` it is :math:`w(\log\ell - T/\ell) - w \ln w`;
  without a sink :math:`L - \mathrm{E}_a[s] = \log \ell - T / \ell` (nats);
* ``max_weight`` :math:`= e^{m + t - L} = w\,e^t / \ell` (the largest key's weight; the sink is
  no key);
* ``self_mass``, ``prev_token_mass``, ``first_token_mass`` :math:`= e^{s_{i,j} - L}` for
  ``j = i``, ``i - 1``, ``0`` (the scores are picked from their block as it passes);
* ``sink_mass`` :math:`= \pi` (0 without a sink);
* ``mean_distance`` :math:`= \sum_j a_j |i - j| = w\,D / \ell`;
* ``Z = w · acc / ℓ``, the attention output the next layer needs.

With ``spread=True`` three more per-row statistics describe the allowed scores themselves, what
the entropy and dispersion bounds take (:mod:`attnsym.studies.real_text`): ``keys`` (how many),
``logit_norm`` :math:`= \lVert s - \bar s\rVert_2` (the scores centred on their mean: softmax
ignores a shift, so this is the least ℓ2 norm of logits giving the row's weights; merged block by
block with Chan's update of count, mean and centred sum of squares) and ``logit_range``
:math:`= \max_j s_j - \min_j s_j`.

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

from ..errors import SpecError
from ..numeric import _kernels
from ..numeric.layer import BoundLayer, block_scores

__all__ = ["DEFAULT_BLOCK", "MAX_ROW_SUM", "ROW_STATISTICS", "SPREAD_STATISTICS", "LayerRows", "element_pass",
           "stream_layer"]

#: query rows and key columns of one block (9 heads × 256 × 256 float32 = 2.4 MB per block)
DEFAULT_BLOCK = 256
#: a row whose shifted sum passes this (a score far above its first key block's maximum: e^60 in float32, within the
#: compiled exp's exact range up to e^88) is recomputed with the exact running maximum, as in the numeric fast path
MAX_ROW_SUM = {np.dtype(np.float32): float(np.exp(60.0)), np.dtype(np.float64): float(np.exp(600.0))}
#: the per-row statistics of one layer, in column order
ROW_STATISTICS = ("entropy", "max_weight", "first_token_mass", "sink_mass", "self_mass", "prev_token_mass",
                  "mean_distance")
#: the per-row statistics of the scores themselves (``spread=True``): allowed keys, centred ℓ2 norm, range
SPREAD_STATISTICS = ("keys", "logit_norm", "logit_range")


@dataclass(frozen=True)
class LayerRows:
    """Per-row statistics of one layer, each ``(B, H, n)`` float64, NaN where a row does not count.

    Attributes
    ----------
    values : dict
        :data:`ROW_STATISTICS` (and with ``spread=True`` :data:`SPREAD_STATISTICS`) name ->
        ``(B, H, n)`` array.
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


class _Spread:
    """Count, mean, centred sum of squares, least and largest of the allowed scores of a query block's rows (float64).

    Blocks merge with Chan, Golub & LeVeque's pairwise update, so no large shared offset cancels.
    """

    def __init__(self, lead: tuple[int, ...], bi: int) -> None:
        self.count = np.zeros((*lead, bi))
        self.mean = np.zeros((*lead, bi))
        self.M2 = np.zeros((*lead, bi))
        self.low = np.full((*lead, bi), np.inf)
        self.high = np.full((*lead, bi), -np.inf)

    def add(self, S) -> None:
        """Merge the allowed (finite) scores of the block ``S`` (..., bi, bj)."""
        ok = np.isfinite(S)
        X = np.where(ok, S, 0.0).astype(np.float64)  # (..., bi, bj)
        k = ok.sum(axis=-1)
        mean = X.sum(axis=-1) / np.maximum(k, 1)
        X -= mean[..., None]
        X[~ok] = 0.0
        M2 = np.einsum("...j,...j->...", X, X)
        total = self.count + k
        delta = mean - self.mean
        self.mean += delta * (k / np.maximum(total, 1))
        self.M2 += M2 + delta**2 * self.count * k / np.maximum(total, 1)
        self.count = total
        self.low = np.minimum(self.low, np.where(ok, S, np.inf).min(axis=-1))
        self.high = np.maximum(self.high, np.where(ok, S, -np.inf).max(axis=-1))


class _Accumulator:
    """The running sums of one query block (all lanes at once)."""

    def __init__(self, lead: tuple[int, ...], bi: int, dv: int, dtype, spread: bool) -> None:
        self.m = np.full((*lead, bi), -np.inf, dtype)  # running maximum
        self.ell = np.zeros((*lead, bi), dtype)  # Σ e^{s - m}
        self.T = np.zeros((*lead, bi), dtype)  # Σ e^{s - m} (s - m)
        self.D = np.zeros((*lead, bi), dtype)  # Σ e^{s - m} |i - j|
        self.acc = np.zeros((*lead, bi, dv), dtype)  # Σ e^{s - m} v
        self.count = np.zeros((*lead, bi), np.int64)  # allowed keys
        self.top = np.zeros((*lead, bi), dtype)  # the row's largest score minus its shift m (0 when m is the maximum)
        self.picks = {name: np.full((*lead, bi), -np.inf, dtype) for name in ("self", "prev", "first")}
        self.spread = _Spread(lead, bi) if spread else None


#: a finite stand-in for -inf scores after the exponential, so that 0 · s stays 0
_LOW: dict[np.dtype, np.floating] = {np.dtype(np.float32): np.float32(-1e30), np.dtype(np.float64): np.float64(-1e300)}


class _Distances:
    """``|i − j|`` of a block ``(bi, bj)`` in ``dtype``, cached by shape and offset."""

    def __init__(self, dtype) -> None:
        self.dtype = dtype
        self.cache: dict[tuple[int, int, int], np.ndarray] = {}

    def __call__(self, i0: int, i1: int, j0: int, j1: int) -> np.ndarray:
        key = (i1 - i0, j1 - j0, j0 - i0)
        if key not in self.cache:
            self.cache[key] = np.abs(np.arange(i0, i1)[:, None] - np.arange(j0, j1)[None, :]).astype(self.dtype)
        return self.cache[key]


def _observe(layer: BoundLayer, acc: _Accumulator, S, i0: int, i1: int, j0: int, j1: int) -> bool:
    """Record what the raw scores ``S`` of keys ``j0:j1`` say before they are exponentiated: the picked scores,
    the allowed keys, the spread. Returns whether the block has masked keys."""
    _pick(acc, S, i0, i1, j0, j1)
    masked = (layer.causal and j1 - 1 > i0) or layer.mask is not None
    if masked:
        acc.count += np.isfinite(S).sum(axis=-1)
    else:
        acc.count += j1 - j0
    if acc.spread is not None:
        acc.spread.add(S)
    return masked


def _add_block(layer: BoundLayer, acc: _Accumulator, Qb, Kb, Vb, i0: int, i1: int, j0: int, j1: int,
               distance: _Distances) -> None:
    """Fold keys ``j0:j1`` into the running sums of queries ``i0:i1`` (the running maximum rescales them)."""
    S = np.asarray(block_scores(layer, Qb, Kb, i0, i1, j0, j1))  # (B, H, bi, bj), -inf where masked
    if not S.flags.writeable:
        S = S.copy()
    masked = _observe(layer, acc, S, i0, i1, j0, j1)
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
                       distance: _Distances, passes) -> None:
    """Fold keys ``j0:j1`` (raw scores ``S``, overwritten) into the sums of queries ``i0:i1``, shifted by the fixed ``shift``.

    ``Vx`` ``(B, H, bj, d_v + 1)`` holds the block's values and ``j − j0``: one product gives
    ``Σ p v`` and ``Σ p (j − j0)``, from which ``Σ p |i − j|`` follows for a block wholly left or
    right of the diagonal; a block across it multiplies by ``|i − j|`` element-wise.
    """
    _observe(layer, acc, S, i0, i1, j0, j1)
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


@dataclass(frozen=True)
class _LayerPass:
    """One layer's streamed pass: the arrays and choices every query block shares."""

    layer: BoundLayer
    Qs: np.ndarray  # (B, H, n, d_k), already multiplied by the scale
    K: np.ndarray  # (B, H, n, d_k)
    V: np.ndarray  # (B, H, n, d_v)
    Vx: np.ndarray  # (B, H, n, d_v + 1): [V, j mod block]
    block: int
    sinks: np.ndarray | None  # (H, 1) float64 sink logits, or None
    spread: bool
    distance: _Distances
    passes: Callable

    def new_accumulator(self, i0: int, i1: int) -> _Accumulator:
        return _Accumulator(self.Qs.shape[:-2], i1 - i0, int(self.V.shape[-1]), self.Qs.dtype, self.spread)

    def accumulate(self, i0: int, i1: int, end: int) -> _Accumulator:
        """The sums of queries ``i0:i1`` over keys ``0:end``: shifted by the first key block's maximum where that
        holds, else the exact online softmax with its running maximum."""
        acc = self.shifted(i0, i1, end)
        if acc is None:
            acc = self.new_accumulator(i0, i1)
            Qb = self.Qs[..., i0:i1, :]
            for j0 in range(0, end, self.block):
                j1 = min(end, j0 + self.block)
                _add_block(self.layer, acc, Qb, self.K[..., j0:j1, :], self.V[..., j0:j1, :], i0, i1, j0, j1,
                           self.distance)
        return acc

    def scores(self, i0: int, i1: int, j0: int, j1: int) -> np.ndarray:
        return np.asarray(block_scores(self.layer, self.Qs[..., i0:i1, :], self.K[..., j0:j1, :], i0, i1, j0, j1))

    def shifted(self, i0: int, i1: int, end: int) -> _Accumulator | None:
        """The query block with each row shifted by its first key block's maximum; None where that cannot hold."""
        S = self.scores(i0, i1, 0, min(end, self.block))
        top = S.max(axis=-1)  # (B, H, bi)
        if not np.isfinite(top).all():  # a row with no allowed key in the first block (a sliding window)
            return None
        acc = self.new_accumulator(i0, i1)
        acc.m = top
        acc.top = np.full_like(top, -np.inf)
        for j0 in range(0, end, self.block):
            j1 = min(end, j0 + self.block)
            if j0:
                S = self.scores(i0, i1, j0, j1)
            S = np.ascontiguousarray(S) if S.flags.writeable else S.copy()  # the pass works on its rows in place
            with np.errstate(over="ignore", invalid="ignore"):
                _add_block_shifted(self.layer, acc, S, top, self.Vx[..., j0:j1, :], i0, i1, j0, j1, self.distance,
                                   self.passes)
        if not (acc.ell <= MAX_ROW_SUM[np.dtype(self.Qs.dtype)]).all():  # a score far above the first block's maximum
            return None
        return acc


def _xlogx(x: np.ndarray) -> np.ndarray:
    """``x ln x`` with ``0 ln 0 = 0``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0)), 0.0)


def _normaliser(acc: _Accumulator, sinks: np.ndarray | None):
    """``(ℓ safe, L, w, π)`` per row (float64): ``ℓ`` (1 where no key is allowed), the log-sum-exp ``L`` of the keys
    and the sink, the keys' share ``w`` and the sink's ``π`` (module docstring). A row with neither a sink nor an
    allowed key has ``L = +inf`` (every weight 0)."""
    ell = acc.ell.astype(np.float64)
    seen = ell > 0
    safe = np.where(seen, ell, 1.0)
    keys = np.where(seen, acc.m + np.log(safe), -np.inf)  # the keys' own log-sum-exp
    if sinks is None:
        return safe, np.where(seen, keys, np.inf), seen.astype(np.float64), np.zeros_like(ell)
    lse = np.logaddexp(keys, sinks)  # (B, H, bi): finite, the sink's logit is
    return safe, lse, np.exp(keys - lse), np.exp(sinks - lse)


def _row_statistics(acc: _Accumulator, sinks: np.ndarray | None, i0: int, i1: int):
    """``(statistics, L, ℓ, w)`` of queries ``i0:i1`` from their sums (module docstring: the formulas)."""
    safe, lse, w, pi = _normaliser(acc, sinks)
    counts = acc.count >= 2
    i = np.arange(i0, i1)
    out = {"entropy": w * (np.log(safe) - acc.T / safe) - _xlogx(w),
           "max_weight": w * np.exp(acc.top.astype(np.float64)) / safe,
           "mean_distance": w * acc.D / safe, "sink_mass": pi}
    for name in ("entropy", "max_weight", "mean_distance", "sink_mass"):
        out[name] = np.where(counts, out[name], np.nan)
    for name, pick, ok in (("self_mass", "self", counts), ("prev_token_mass", "prev", counts & (i >= 1)),
                           ("first_token_mass", "first", counts & (i >= 1))):
        s = acc.picks[pick].astype(np.float64)
        with np.errstate(invalid="ignore"):
            out[name] = np.where(ok & np.isfinite(s), np.exp(np.minimum(s - lse, 0.0)), np.nan)
    if acc.spread is not None:
        spread = acc.spread
        out["keys"] = np.where(counts, acc.count, np.nan)
        out["logit_norm"] = np.where(counts, np.sqrt(np.maximum(spread.M2, 0.0)), np.nan)
        out["logit_range"] = np.where(counts, spread.high - spread.low, np.nan)
    return out, lse, safe, w


def _sink_logits(layer: BoundLayer) -> np.ndarray | None:
    """The layer's sink logits as ``(H, 1)`` float64 (None without a sink)."""
    if not layer.spec.sink:
        return None
    if layer.sinks is None:
        raise SpecError("a layer with a learned sink (spec.sink) needs its logits in layer.sinks (got None)")
    s = np.asarray(layer.sinks, dtype=np.float64).reshape(-1)
    if s.shape != (layer.heads,):
        raise SpecError(f"layer.sinks must hold one logit per head ({layer.heads}) (got shape {s.shape})")
    return s[:, None]


def _each(starts: list[int], run: Callable[[int], None], threads: int) -> None:
    """``run(i0)`` for every query block, on ``threads`` threads (the order of ``starts`` first)."""
    if threads <= 1 or len(starts) == 1:
        for i0 in starts:
            run(i0)
        return
    with ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(run, i0) for i0 in starts]:
            future.result()


def _layer_pass(layer: BoundLayer, Q, K, V, block: int, spread: bool) -> _LayerPass:
    Q, K, V = (np.asarray(M) for M in (Q, K, V))
    lead, n, dtype = Q.shape[:-2], Q.shape[-2], Q.dtype
    Vx = np.concatenate([V, np.broadcast_to((np.arange(n) % block).astype(dtype)[:, None], (*lead, n, 1))],
                        axis=-1)  # [V, j − j0]: the distance's column (blocks start at multiples of block)
    return _LayerPass(layer=layer, Qs=Q * dtype.type(layer.scale), K=K, V=V, Vx=Vx, block=block,
                      sinks=_sink_logits(layer), spread=spread, distance=_Distances(dtype),
                      passes=element_pass(dtype))


def stream_layer(layer: BoundLayer, Q, K, V, *, block: int = DEFAULT_BLOCK, threads: int = 1,
                 on_block: Callable[[], None] | None = None, head_map: tuple[int, np.ndarray] | None = None,
                 spread: bool = False) -> tuple[np.ndarray, LayerRows]:
    """``Z = softmax(S) V`` of one layer and its per-row statistics, never holding an ``n × n`` array.

    Parameters
    ----------
    layer : BoundLayer
        The layer bound at ``n`` tokens (scale, mask, window, ALiBi, soft-cap: :func:`block_scores`;
        with ``spec.sink`` its sink logits in ``layer.sinks``).
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
    spread : bool, default False
        Also the scores' own per-row statistics :data:`SPREAD_STATISTICS`.

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
    p = _layer_pass(layer, Q, K, V, block, spread)
    lead, n, dtype = p.Qs.shape[:-2], int(p.Qs.shape[-2]), p.Qs.dtype
    Z = np.empty((*lead, n, p.V.shape[-1]), dtype)
    rows = {name: np.full((*lead, n), np.nan) for name in ROW_STATISTICS + (SPREAD_STATISTICS if spread else ())}

    def run(i0: int) -> None:
        i1 = min(n, i0 + block)
        end = i1 if layer.causal else n
        acc = p.accumulate(i0, i1, end)
        out, lse, ell, w = _row_statistics(acc, p.sinks, i0, i1)
        Z[..., i0:i1, :] = acc.acc / ell[..., None].astype(dtype)
        if p.sinks is not None:  # the keys' share 1 − π of the output: the sink's value is zero
            Z[..., i0:i1, :] *= w[..., None].astype(dtype)
        for name, v in out.items():
            rows[name][..., i0:i1] = v
        if head_map is not None:
            _write_map(p, head_map, lse, i0, i1, end)
        if on_block is not None:
            on_block()

    starts = list(range(0, n, block))
    if layer.causal:
        starts.reverse()  # the last query blocks see the most keys: start them first
    _each(starts, run, threads)
    return Z, LayerRows(values=rows)


def _write_map(p: _LayerPass, head_map: tuple[int, np.ndarray], lse, i0: int, i1: int, end: int) -> None:
    """Head ``h``'s weights of queries ``i0:i1`` (batch element 0) into ``out``, recomputed from the row log-sum-exp
    (with a sink, rows sum to ``1 − π`` as in the dense route)."""
    h, out = head_map
    for j0 in range(0, out.shape[1], p.block):
        j1 = min(out.shape[1], j0 + p.block)
        if j0 >= end:
            out[i0:i1, j0:j1] = 0.0
            continue
        S = p.scores(i0, i1, j0, j1)[0, h].astype(np.float64)
        with np.errstate(invalid="ignore"):
            out[i0:i1, j0:j1] = np.where(np.isfinite(S), np.exp(S - lse[0, h][:, None]), 0.0)
