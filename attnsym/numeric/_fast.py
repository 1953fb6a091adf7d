"""The NumPy fast path of the blockwise core: few passes over each score block, on a thread pool.

Element-wise passes over one ``bi × bj`` block of scores, counted from the code (no mask, no
score bias; a masked or causal-diagonal block adds one ``where`` pass and the pattern, a
score bias one addition):

=========================  ==========================================================  =====
path                       passes per block besides the matrix products                count
=========================  ==========================================================  =====
generic forward            ``max``, ``S -= shift``, ``exp``, ``sum``                    4
(:mod:`.blockwise`)
generic backward           ``S -= L``, ``exp``, ``dA -= D``, ``dA *= A``                4
this forward               ``exp``                                                      1
this backward              ``exp``, ``dS *= A`` (NumPy); one fused loop (Numba)        2 / 1
this backward, kept        ``dS *= P`` (1/ℓ on dZ's rows; no ``c·Q Kᵀ − L`` product)   1
compiled rows (float32)    ``exp(S − t)`` with the row sums, one compiled loop         1
=========================  ==========================================================  =====

**The compiled rows.** A float32 forward with no mask and no score bias (the plain call, causal
or not, and the forward of ``attention_vjp``, which keeps its exponentials) runs each task as one
compiled call when Numba is installed (:func:`attnsym.numeric._kernels.attend_rows`): its two
products per block go to BLAS from the compiled loop (SciPy's ``sgemm``; ``c`` is the product's
``α``, and the sum over key blocks its ``β = 1``), the shift is subtracted inside the exp, and
nothing is padded; a kept block's exponentials are written to its tile. The rest of this
docstring describes NumPy's blocks, which every other forward takes.

With Numba installed (extra ``fast``) and ``ATTNSYM_NUMBA`` not ``0``, float32 blocks run these
passes as the compiled, GIL-free loops of :mod:`attnsym.numeric._kernels` (a float32 ``exp``,
relative error ≤ 2e-7; the backward's ``exp`` and ``dS *= A`` fused in one loop); otherwise,
and always in float64, as NumPy calls (:func:`element_passes`).

The rest moves into the matrix products (below), and query (forward) or key (backward)
blocks run on the worker pool of :mod:`attnsym.numeric._pool`, with BLAS at one thread for
the whole call so that the cores are not oversubscribed:

* **the shift goes into the product.** Each row is shifted by ``t_i``, the maximum of its
  scores in the first key block (computed once, an extra pass over that block alone), and
  ``[c·Q, −t] [K, 1]ᵀ = S − t`` is one product for every later block: no running maximum, no
  rescaling between key blocks. The row's sum is at least 1 (its first-block maximum gives
  ``e^0``), so it never underflows however large the scores are. (Until issue 34 the shift was
  the Cauchy–Schwarz bound ``u_i = c·‖q_i‖·max_j ‖k_j‖``, which exceeds the row maximum by
  more than ``ln(1/MIN_ROW_SUM)`` as soon as the scores spread a little — weights three times the
  benchmark's ``1/√d`` scale already did — and every block was then computed twice.) ``u_i``
  remains the shift of a row masked in its whole first key block.
* **the row sums come out of the product.** ``P [V, 1] = [P V, ℓ]``.
* **the backward folds its shifts too.** ``[c·Q, −L] [K, 1]ᵀ = S − L`` (``L`` the row
  log-sum-exp of the forward) gives ``A = exp(·)`` in one pass, and
  ``[dZ, −D] [V, 1]ᵀ = dA − D`` makes ``dS = A ⊙ (dA − D)`` one in-place product.

When a later score exceeds the first block's maximum by so much that the row's sum passes
:data:`MAX_ROW_SUM` (``e^60`` in float32), or the row's sum falls below :data:`MIN_ROW_SUM` (a
row shifted by its bound), that query block is recomputed with the exact online softmax
(running maximum), so precision never depends on the shift. Fully masked rows get ``Z = 0``
and ``L = +inf``, the policy of :mod:`attnsym.spec`.

Masks, causal blocks and additive score biases (position hook (c)) are applied per block as
in the generic path; blocks entirely above a causal diagonal are skipped.

**A forward + backward may keep the exponentials** (:class:`Kept`, :func:`keeping`): each
score block is then computed in a tile of its own, where ``P = exp(S − t)`` stays, and the
backward uses the tiles on the forward's blocks, the weights being ``A = P / ℓ``, instead of
recomputing ``c·Q Kᵀ − L`` and its ``exp``: five products per block become four, and the
``1/ℓ`` goes onto the rows of ``dZ`` (:func:`backward`), so one pass is left. That holds ``n²``
numbers per head, so :func:`~attnsym.numeric.attention_vjp` asks for it only without a
``block_size`` and within :data:`KEEP_MAX_BYTES`.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import ShapeError
from . import _kernels, _pool
from .backend import backend_name
from .layer import BoundLayer

__all__ = ["BACKWARD_BLOCK", "ENABLED", "FAST_BLOCK", "KEEP_MAX_BYTES", "MAX_ROW_SUM", "MIN_ROW_SUM", "TASK_ROWS", "Kept",
           "backward", "blocks", "forward", "forward_rows", "keeping", "session", "usable"]

#: at most this many query rows per forward task, and key columns per score block (:func:`forward_rows`). An
#: unmasked forward that keeps nothing takes one task per worker (n = 2048: 1024 rows × 256 keys, 1 MiB of
#: float32 scores a block): BLAS packs each key block once per task, so fewer and taller tasks pack less. On the
#: 2-core AMD EPYC of issue 34 (OpenBLAS's Haswell kernel), against 512-row tasks, two per worker, it ran
#: 0.97× / 0.94–0.985× / 0.97–0.99× the time at n = 2048 / 4096 / 8192 in two sessions of alternating rounds
#: in one process; the benchmark's block-shape table, one worker process, read 0.98–1.02× for those tasks
FAST_BLOCK = (2048, 256)
#: at most this many query rows per forward task when its costs differ (causal) or a backward reads its blocks
#: (:class:`Kept`): 512 × 256 float32 scores fill the 512 KiB L2 of the EPYC above
TASK_ROWS = 512
#: key rows per task and query rows of one block in the backward (A and dS, 2 × 512 KiB in float32);
#: measured against (256, 256) in docs/benchmarks.md: forward + backward 0.64-0.97× of it at n = 2048-8192
#: in 8 of 9 runs (the forward's caps gave no consistent difference: the runs' noise is ±30 %); on the EPYC of
#: FAST_BLOCK, (128, 256) to (512, 512) were within ±6 % of it (one thread, CPU time)
BACKWARD_BLOCK = (256, 512)
#: a row whose shifted sum falls below this is recomputed with the exact running maximum
MIN_ROW_SUM = 1e-6
#: a row whose shifted sum exceeds this (a score far above its first key block's maximum) is recomputed with the
#: exact running maximum: below it no shifted score passed e^60 (float32; the exp kernel is exact up to e^88)
MAX_ROW_SUM = {np.dtype(np.float32): math.exp(60.0), np.dtype(np.float64): math.exp(600.0)}
#: take the fast path for NumPy arrays (tests switch it off to run the generic path on NumPy)
ENABLED = True
#: the most memory a forward + backward (:func:`attnsym.numeric.attention_vjp` without ``block_size``) spends to keep
#: the forward's exponentials for the backward (:class:`Kept`): n ≤ 4096 tokens of one float32 head, n ≤ 2896 in float64
KEEP_MAX_BYTES = 64 * 2**20


@dataclass
class Kept:
    """The forward's exponentials ``P = exp(S − t)`` of every score block, kept for the backward (``tiles``).

    ``tiles[lane, a, b]`` holds block (query block ``a`` of ``rows`` rows, key block ``b`` of
    ``columns`` keys), its first ``r·c`` entries a C-contiguous (r, c) array for a shorter last
    block; ``sums`` (lanes, n) the rows' sums ``ℓ``. The backward's weights are then
    ``A = P / ℓ`` — one product (``c·Q Kᵀ − L``) and the ``exp`` fewer per block: measured on one
    core of the machine of issue 34, a (512 × 256) block's ``dS`` took 0.43 ms from the kept
    tile against 0.98 ms for ``A`` and ``dS`` recomputed. ``valid`` is False when a query block
    was redone with the running maximum (its tiles then hold other shifts): the backward recomputes.
    """

    tiles: np.ndarray
    sums: np.ndarray
    rows: int
    columns: int
    valid: bool = True

    def tile(self, lane: int, i0: int, i1: int, j0: int, j1: int) -> np.ndarray:
        """The (i1 − i0, j1 − j0) block at query row ``i0`` and key ``j0``, a C-contiguous view of its tile."""
        flat = self.tiles[lane, i0 // self.rows, j0 // self.columns].reshape(-1)
        return flat[:(i1 - i0) * (j1 - j0)].reshape(i1 - i0, j1 - j0)


def keeping(layer: BoundLayer, Q, block: tuple[int, int] = FAST_BLOCK) -> Kept | None:
    """A :class:`Kept` for the forward of ``Q`` (..., H, n, d_k) to fill, or None.

    None when its tiles would take more than :data:`KEEP_MAX_BYTES`, or off the fast path. The
    tiles are a new array each call, given back with it: nothing ``n × n`` stays in the
    process (NumPy asks for huge pages for it, so its first touch costs little: 2 % of a
    forward + backward at n = 2048 and 4096 against a buffer kept between calls).
    """
    if not usable(layer, Q):
        return None
    lanes, n = math.prod(Q.shape[:-2]), layer.n
    rows = forward_rows(n, lanes, block, causal=layer.causal, keep=True)
    columns = min(n, block[1])
    shape = (lanes, -(-n // rows), -(-n // columns), rows, columns)
    if math.prod(shape) * Q.dtype.itemsize > KEEP_MAX_BYTES:
        return None
    return Kept(np.empty(shape, Q.dtype), np.empty((lanes, n), Q.dtype), rows, columns)


def usable(layer: BoundLayer, *arrays) -> bool:
    """Whether the fast path applies: NumPy arrays of float32/float64."""
    return ENABLED and backend_name(layer.xp) == "numpy" and all(isinstance(a, np.ndarray) for a in arrays)


def session(layer: BoundLayer, lean: bool) -> contextlib.AbstractContextManager:
    """The context a lean (blockwise) call runs in: BLAS at one thread and the worker pool for NumPy, else nothing.

    Entered before the projections, so that no product of the call starts BLAS's own threads
    next to the pool's (:mod:`attnsym.numeric._pool`).
    """
    if not (lean and usable(layer)):
        return contextlib.nullcontext()
    # import Numba (and the SciPy BLAS it loads) before the limit, which limits the BLAS loaded then; the compiled
    # rows of a float32 forward register their BLAS's warming product, which the limit's first entry runs
    if layer.dtype == "float32":
        _kernels.rows_kernel()
    else:
        _kernels.available()
    return _pool.one_blas_thread()


def blocks(rows: int, columns: int, limit: tuple[int, int]) -> tuple[int, int]:
    """The fast path's block shape for a requested one: at most ``limit`` (:data:`FAST_BLOCK`, :data:`BACKWARD_BLOCK`)."""
    return min(rows, limit[0]), min(columns, limit[1])


def forward_rows(n: int, lanes: int, block: tuple[int, int], *, causal: bool = False, keep: bool = False) -> int:
    """Query rows per task of a forward over ``lanes`` lanes of ``n`` tokens with ``block`` (:data:`FAST_BLOCK` or less).

    One task per worker for an unmasked forward that keeps nothing (:data:`FAST_BLOCK`); four
    per worker, at most :data:`TASK_ROWS` rows, for a causal one (the last query blocks see the
    most keys); two, at most :data:`TASK_ROWS`, for one that keeps its exponentials.

    >>> forward_rows(2048, 1, FAST_BLOCK), forward_rows(2048, 1, FAST_BLOCK, keep=True)
    (1024, 512)
    """
    if causal or keep:
        return _rows_per_task(min(block[0], TASK_ROWS), n, lanes, per_worker=4 if causal else 2)
    return _rows_per_task(block[0], n, lanes, per_worker=1)


def _rows_per_task(limit: int, n: int, lanes: int, per_worker: int = 4) -> int:
    """At most ``limit`` rows per task, fewer when that leaves a worker fewer than ``per_worker`` tasks (idle cores at the end).

    Tasks of equal cost (a forward without a causal mask) need fewer per worker to end
    together than tasks of unequal cost (causal blocks, whose cost grows with the row); fewer,
    larger tasks mean fewer NumPy calls, each of which hands the GIL over between threads.
    Measured at n = 2048, two threads, in-process alternation: the unmasked forward with 2
    tasks per worker took 0.94× the time of 4 (1024: 0.83×, 8 per worker: 1.15×); the
    backward was the same with 2 or 4 (1.005×).
    """
    return max(1, min(limit, -(-lanes * n // (per_worker * _pool.THREADS))))


def _padded(name: str, M: np.ndarray, column, scale=None) -> np.ndarray:
    """``[scale·M, column]`` for lanes ``M`` (B, n, d), in the thread's workspace; ``column`` a scalar or (B, n)."""
    out = _pool.workspace(name, (*M.shape[:-1], M.shape[-1] + 1), M.dtype)
    if scale is None:
        out[..., :-1] = M
    else:
        np.multiply(M, scale, out=out[..., :-1])
    out[..., -1] = column
    return out


def _numpy_exp(S: np.ndarray, sums: np.ndarray | None) -> None:  # the row sums come from the product with [V, 1]
    np.exp(S, out=S)


def _numpy_exp_and_dscores(A: np.ndarray, dS: np.ndarray) -> None:
    np.exp(A, out=A)
    dS *= A


def element_passes(dtype) -> tuple[Callable[[np.ndarray, np.ndarray | None], None],
                                   Callable[[np.ndarray, np.ndarray], None], str]:
    """The block's element-wise passes for ``dtype``: the forward's, the backward's, and their name.

    The forward's pass is ``S ← exp(S)``, given the block's row sums to add to: the compiled
    float32 loop :func:`attnsym.numeric._kernels.exp_rowsum` adds them in the same loop (``"numba"``,
    when Numba is installed and ``ATTNSYM_NUMBA`` is not ``0``); NumPy's ``exp`` is given None,
    and the row sums come out of the product with ``[V, 1]`` instead (``"numpy"``; always for
    float64, where NumPy's ``exp`` is the faster). The backward's is ``(A, dS) ← (exp(A),
    exp(A) ⊙ dS)``. Both implementations are tied by the tests.
    """
    if np.dtype(dtype) == np.float32:
        if _kernels.available():
            kernels = _kernels.compiled()
            assert kernels is not None
            exp_rowsum = kernels["exp_rowsum"]  # clamped: NumPy's blocks hold -inf where masked
            return (lambda S, sums: exp_rowsum(S, sums, False)), kernels["exp_and_dscores"], "numba"
    return _numpy_exp, _numpy_exp_and_dscores, "numpy"


def _buffer(buffers: dict, name: str, shape: tuple) -> np.ndarray:
    """A C-contiguous ``shape`` view of the worker's scratch buffer ``name``."""
    return buffers[name][:math.prod(shape)].reshape(shape)


class _Lanes:
    """The batch × head lanes of one call, flattened, with per-lane masks and biases."""

    def __init__(self, layer: BoundLayer, Q, K, V):
        self.layer = layer
        self.H = layer.heads
        self.shape = Q.shape[:-2]  # (..., H)
        self.Q, self.K, self.V = (np.ascontiguousarray(M).reshape(-1, *M.shape[-2:]) for M in (Q, K, V))
        self.n = layer.n
        self.exp, self.exp_and_dscores, implementation = element_passes(self.Q.dtype)
        #: the forward's row sums: from the product with [V, 1] (NumPy), or added up by the exp pass (Numba),
        #: whose product with V alone is then 64 wide, not 65 (12 % faster here for a 512 × 256 block)
        self.sums_in_product = implementation == "numpy"
        mask = layer.mask
        if mask is not None:
            mask = np.broadcast_to(np.asarray(mask), (*layer.batch_shape, layer.n, layer.n)).reshape(-1, layer.n, layer.n)
        self.mask = mask  # (B, n, n) or None

    def allowed(self, lane: int, i0: int, i1: int, j0: int, j1: int):
        """The (bi, bj) allowed pattern of a block of one lane, or None when all may attend."""
        layer = self.layer
        allowed = None
        if layer.causal and j1 - 1 > i0:
            allowed = np.arange(i0, i1)[:, None] >= np.arange(j0, j1)[None, :]
        if self.mask is not None:
            m = self.mask[lane // self.H, i0:i1, j0:j1]
            allowed = m if allowed is None else allowed & m
        return allowed

    def scores_into(self, S, lane, Qx, Kx, i0, i1, j0, j1):
        """``S ← Qx Kxᵀ`` (shift folded in) + bias, ``-inf`` where masked: the block's shifted scores."""
        np.matmul(Qx, Kx.T, out=S)
        bias = self.layer.score_bias(i0, i1, j0, j1)
        if bias is not None:
            S += np.asarray(bias, dtype=S.dtype)[lane % self.H]
        allowed = self.allowed(lane, i0, i1, j0, j1)
        if allowed is not None:
            np.copyto(S, -np.inf, where=~allowed)
        return allowed

    def key_end(self, i1: int) -> int:
        return i1 if self.layer.causal else self.n


def _compiled_rows(lanes: _Lanes) -> Callable | None:
    """The compiled forward rows (:func:`attnsym.numeric._kernels.attend_rows`) where they apply, else None.

    For float32 lanes with no mask and no score bias (causal or not), when the kernels are
    :func:`~attnsym.numeric._kernels.available`; a forward that keeps its exponentials
    (:class:`Kept`) has them write each block to its tile. Each task is then one call: the
    block products go to BLAS from the compiled loop (SciPy's ``sgemm``: ``c`` as its ``α``, the
    sum over key blocks as its ``β = 1``), with no padded ``[K, 1]``, scaled ``Q`` copy, partial
    sum or Python call per block. Measured at n = 2048, d = 64, two threads, the forward's
    blocks alone: 15.6 ms against 16.7 ms for NumPy's products (0.93×), 62.1 against 64.6 ms
    at n = 4096.
    """
    if lanes.mask is not None or lanes.layer.has_score_bias or lanes.Q.dtype != np.float32:
        return None
    return _kernels.rows_kernel()


def _row_has_key(lanes: _Lanes, lane: int, i0: int, i1: int) -> np.ndarray | None:
    """Which rows of a query block may attend to some key (None: all of them)."""
    if lanes.mask is None:
        return None
    m = lanes.mask[lane // lanes.H, i0:i1]
    if lanes.layer.causal:
        m = m & (np.arange(i0, i1)[:, None] >= np.arange(lanes.n)[None, :])
    return m.any(axis=1)


def _forward_block(lanes: _Lanes, lane: int, i0: int, i1: int, Kx, Vx, kmax: Callable[[], float], exact: bool,
                   bj: int, buffers: dict, kept: Kept | None = None):
    """Z (bi, d_v) and L (bi,) of one query block of one lane; ``exact`` uses the running maximum.

    With ``kept`` each score block is computed in its tile, where its exponentials stay.
    """
    layer, dtype = lanes.layer, lanes.Q.dtype
    bi = i1 - i0
    c = layer.scale
    Qb = lanes.Q[lane, i0:i1]  # (bi, d_k)
    Qx = _buffer(buffers, "Qx", (bi, Qb.shape[1] + 1))  # [c·Q, −u]
    np.multiply(Qb, c, out=Qx[:, :-1])
    end = lanes.key_end(i1)
    Qx[:, -1] = 0.0
    first = None
    if exact:
        m = np.full(bi, -np.inf, dtype)
    else:
        first = (_buffer(buffers, "S", (bi, min(end, bj))) if kept is None
                 else kept.tile(lane, i0, i1, 0, min(end, bj)))
        lanes.scores_into(first, lane, Qx, Kx[:first.shape[1]], i0, i1, 0, first.shape[1])  # the first key block
        top = first.max(axis=1)  # the first key block's row maximum: at most the row's, so its sum is at least 1
        has_key = np.isfinite(top)
        if has_key.all():
            shift = top
        else:  # a row masked in the whole first key block: shifted by its bound, u ≥ every score of the row
            u = c * np.sqrt(np.einsum("ij,ij->i", Qb, Qb, dtype=np.float64)) * kmax()
            shift = np.where(has_key, top, u).astype(dtype)  # (bi,)
        first -= shift[:, None]
        Qx[:, -1] = -shift
    acc = _buffer(buffers, "acc", (bi, Vx.shape[1]))  # Σ P [V, 1] = [Σ P V, ℓ], or Σ P V
    acc.fill(0)
    sums = None if lanes.sums_in_product else _buffer(buffers, "sums", (bi,))  # ℓ, added up by the exp pass
    if sums is not None:
        sums.fill(0)
    part = _buffer(buffers, "part", (bi, Vx.shape[1]))
    for j0 in range(0, end, bj):
        j1 = min(end, j0 + bj)
        if j0 == 0 and first is not None:
            S = first  # already shifted
        else:
            S = _buffer(buffers, "S", (bi, j1 - j0)) if kept is None else kept.tile(lane, i0, i1, j0, j1)
            lanes.scores_into(S, lane, Qx, Kx[j0:j1], i0, i1, j0, j1)  # (bi, bj) = S − shift
        if exact:
            m_new = np.maximum(m, S.max(axis=1))
            shift = np.where(np.isfinite(m_new), m_new, 0.0).astype(dtype)
            S -= shift[:, None]
            alpha = np.where(np.isfinite(m), np.exp(np.where(np.isfinite(m), m, 0.0) - shift), 0.0)
            acc *= alpha[:, None].astype(dtype)  # rescale the earlier blocks to the new maximum
            if sums is not None:
                sums *= alpha.astype(dtype)
            m = m_new
        lanes.exp(S, sums)  # the one pass over the block: entries in [0, e^60] unless redone
        np.matmul(S, Vx[j0:j1], out=part)  # [P V, ℓ] (or P V) of this block
        acc += part
    ell = acc[:, -1] if sums is None else sums
    Zsum = acc[:, :-1] if sums is None else acc
    shift = np.where(np.isfinite(m), m, 0.0) if exact else -Qx[:, -1]
    seen = ell > 0
    Z = Zsum / np.where(seen, ell, 1.0)[:, None]
    with np.errstate(divide="ignore"):
        L = np.where(seen, shift + np.log(np.where(seen, ell, 1.0)), np.inf)
    return Z, L, ell


def forward(layer: BoundLayer, Q, K, V, block: tuple[int, int] = FAST_BLOCK, kept: Kept | None = None):
    """``Z`` (..., H, n, d_v) and the row log-sum-exp ``L`` (..., H, n, 1), as :func:`blockwise_core`.

    ``kept`` (from :func:`keeping` with the same ``block``): filled with the exponentials and row sums.
    """
    lanes = _Lanes(layer, Q, K, V)
    n, dtype = lanes.n, lanes.Q.dtype
    Z = np.empty((lanes.Q.shape[0], n, lanes.V.shape[-1]), dtype)
    L = np.empty((lanes.Q.shape[0], n), dtype)
    rows = _compiled_rows(lanes)
    sums = np.empty((lanes.Q.shape[0], n), dtype)  # the compiled rows' ℓ
    Kx = None if rows is not None else _padded("forward:Kx", lanes.K, 1.0)  # [K, 1] per lane
    Vx = _padded("forward:Vx", lanes.V, 1.0) if lanes.sums_in_product else lanes.V  # [V, 1] (or V) per lane
    norms: dict[int, float] = {}  # the largest key norm of a lane, for the rows masked in a whole first key block

    def kmax(lane: int) -> Callable[[], float]:
        def largest() -> float:
            if lane not in norms:
                k = lanes.K[lane]
                norms[lane] = float(np.sqrt(np.einsum("ij,ij->i", k, k, dtype=np.float64).max()))
            return norms[lane]
        return largest

    bi = forward_rows(n, lanes.Q.shape[0], block, causal=layer.causal, keep=kept is not None)
    if kept is not None and (kept.rows, kept.columns) != (bi, min(n, block[1])):
        raise ShapeError(f"kept tiles of {kept.rows} × {kept.columns} do not fit this forward's blocks "
                         f"({bi} × {min(n, block[1])}): make them with keeping() and the same block")

    def keys(lane: int) -> np.ndarray:
        """[K, 1] of a lane: the call's, or (compiled rows) one for the rare block redone with the running maximum."""
        return Kx[lane] if Kx is not None else np.concatenate([lanes.K[lane], np.ones((n, 1), dtype)], axis=1)

    scale, causal = dtype.type(layer.scale), bool(layer.causal)

    def task(lane: int, i0: int):
        def run(buffers):
            i1 = min(n, i0 + bi)
            one = lambda exact: _forward_block(lanes, lane, i0, i1, keys(lane), Vx[lane], kmax(lane), exact=exact,
                                               bj=block[1], buffers=buffers, kept=None if exact else kept)
            if rows is not None:  # the compiled rows write Z, L and the row sums ℓ
                rows(lanes.Q[lane], lanes.K[lane], lanes.V[lane], Z[lane], L[lane], sums[lane], i0, i1, block[1], scale,
                     causal, buffers["S"], _buffer(buffers, "acc", (i1 - i0, Vx.shape[-1])), buffers["shift"],
                     buffers["reach"], _kernels.CLAMP_REACH,
                     _kernels.NO_TILES if kept is None else kept.tiles[lane, i0 // kept.rows])
                ell, has_key = sums[lane, i0:i1], None
            else:
                with np.errstate(over="ignore", invalid="ignore"):  # an overflow sends the block to the exact path
                    Z[lane, i0:i1], L[lane, i0:i1], ell = one(False)
                has_key = _row_has_key(lanes, lane, i0, i1)
            low = ell < MIN_ROW_SUM if has_key is None else (ell < MIN_ROW_SUM) & has_key
            if low.any() or not (ell <= MAX_ROW_SUM[dtype]).all():  # a loose bound (a row masked in the first
                # key block), or a score far above the first block's maximum: redo the block with the running maximum
                Z[lane, i0:i1], L[lane, i0:i1], _ = one(True)
                if kept is not None:
                    kept.valid = False  # this block's tiles hold the first pass's shifts: the backward recomputes
            elif kept is not None:
                kept.sums[lane, i0:i1] = ell
        return run

    width = lanes.K.shape[-1] + 1
    scratch = {"S": (bi * block[1], dtype), "part": (bi * Vx[0].shape[1], dtype), "acc": (bi * Vx[0].shape[1], dtype),
               "Qx": (bi * width, dtype), "sums": (bi, dtype), "shift": (bi, dtype), "reach": (bi, dtype)}
    starts = range(0, n, bi)
    if layer.causal:  # the last query blocks see the most keys: start them first, so no worker finishes long after
        starts = starts[::-1]
    _pool.run([task(lane, i0) for lane in range(lanes.Q.shape[0]) for i0 in starts], scratch)
    return Z.reshape(*lanes.shape, n, -1), L.reshape(*lanes.shape, n, 1)


def backward(layer: BoundLayer, Q, K, V, Z, lse, dZ, block: tuple[int, int] = BACKWARD_BLOCK, kept: Kept | None = None):
    """dQ, dK, dV (shapes of Q, K, V) from dZ, recomputing each block's weights from ``lse``, or from ``kept``.

    With ``kept`` (valid: its forward redid no block) the blocks are the forward's (``block`` is
    then not used) and each one's weights are its tile ``P`` divided by the row sums ``ℓ``; the
    division moves onto the rows of ``dZ``, so that a tile is used as it is:
    ``A_ij dZ_i = P_ij (dZ_i / ℓ_i)`` and ``dS = A ⊙ (dA − D) = P ⊙ ([dZ, −D] / ℓ) [V, 1]ᵀ`` — one
    pass over the block (``dS *= P``) and no product for the scores.
    """
    lanes = _Lanes(layer, Q, K, V)
    n, dtype, c = lanes.n, lanes.Q.dtype, layer.scale
    count = lanes.Q.shape[0]
    Zf, dZf = (np.ascontiguousarray(M).reshape(count, n, -1) for M in (Z, dZ))
    D = np.einsum("lnd,lnd->ln", dZf, Zf)  # rowsum(dA ⊙ A) = rowsum(dZ ⊙ Z)
    Vx = _padded("backward:Vx", lanes.V, 1.0)
    tiles = kept if kept is not None and kept.valid else None  # a forward that redid a block: recompute
    recompute = tiles is None
    if tiles is not None:
        with np.errstate(divide="ignore"):
            inverse = np.where(tiles.sums > 0, 1.0 / tiles.sums, 0.0).astype(dtype)  # a fully masked row: weights 0
        dZf = dZf * inverse[..., None]  # dZ / ℓ
        dZx = _padded("backward:dZx", dZf, -D * inverse)  # [dZ, −D] / ℓ
        weights = lambda lane, i0, i1, j0, j1, buffers: tiles.tile(lane, i0, i1, j0, j1)  # P, the weights times ℓ
        bk, bj = tiles.columns, tiles.rows
    else:
        big = np.finfo(dtype).max / 4  # stands in for +inf (fully masked rows): exp(S − big) = 0, no inf·0 in BLAS
        Lf = np.ascontiguousarray(lse).reshape(count, n)
        Qx = _padded("backward:Qx", lanes.Q, -np.minimum(Lf, big), scale=c)  # [c·Q, −L]
        Kx = _padded("backward:Kx", lanes.K, 1.0)
        dZx = _padded("backward:dZx", dZf, -D)  # [dZ, −D]

        def weights(lane: int, i0: int, i1: int, j0: int, j1: int, buffers: dict) -> np.ndarray:
            A = _buffer(buffers, "A", (i1 - i0, j1 - j0))
            lanes.scores_into(A, lane, Qx[lane][i0:i1], Kx[lane][j0:j1], i0, i1, j0, j1)  # S − L
            return A

        bk, bj = _rows_per_task(block[0], n, count), block[1]  # keys per task: dK, dV of these keys are owned by one task
    dQ = np.empty_like(lanes.Q)
    dK = np.empty_like(lanes.K)
    dV = np.empty_like(lanes.V)
    starts = [(lane, j0) for lane in range(count) for j0 in range(0, n, bk)]
    workers = _pool.workers(len(starts))

    def task(lane: int, j0: int):
        def run(buffers):
            j1 = min(n, j0 + bk)
            dKj = np.zeros((j1 - j0, lanes.K.shape[-1]), dtype)
            dVj = np.zeros((j1 - j0, lanes.V.shape[-1]), dtype)
            own = buffers["dQ"]  # this worker's partial dQ, owned by this call (not by the thread: see _pool.run)
            for i0 in range(0, n, bj):
                i1 = min(n, i0 + bj)
                if layer.causal and i1 - 1 < j0:  # every query of this block precedes every key
                    continue
                k1 = j1 if recompute else min(j1, lanes.key_end(i1))  # a kept tile stops where the forward's block did
                A = weights(lane, i0, i1, j0, k1, buffers)  # S − L, or the kept P
                dS = _buffer(buffers, "dS", (i1 - i0, k1 - j0))
                np.matmul(dZx[lane][i0:i1], Vx[lane][j0:k1].T, out=dS)  # dA − D (kept: divided by ℓ)
                if recompute:
                    lanes.exp_and_dscores(A, dS)  # A ← exp(S − L), dS ← A ⊙ (dA − D): one pass
                else:
                    dS *= A
                dVj[:k1 - j0] += A.T @ dZf[lane, i0:i1]
                dKj[:k1 - j0] += dS.T @ lanes.Q[lane, i0:i1]
                own[lane, i0:i1] += dS @ lanes.K[lane, j0:k1]
            dK[lane, j0:j1] = c * dKj
            dV[lane, j0:j1] = dVj
        return run

    scratch = {"A": (bj * bk, dtype), "dS": (bj * bk, dtype)}
    with _pool.borrowed("backward:dQ", (workers, *dQ.shape), dtype) as parts:
        parts.fill(0)
        _pool.run([task(lane, j0) for lane, j0 in starts], scratch,
                  private=[{"dQ": part} for part in parts])  # causal: costliest first
        np.add.reduce(parts, axis=0, out=dQ)
    dQ *= c
    return tuple(M.reshape(*lanes.shape, n, -1) for M in (dQ, dK, dV))
