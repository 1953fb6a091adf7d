"""The bound layer: one :class:`~attnsym.AttentionSpec` plus what a spec cannot hold.

This is the bottom of :mod:`attnsym.numeric`'s attention code.
:func:`attnsym.numeric.binding.bind` turns the arguments of :func:`~attnsym.numeric.attention`,
:func:`~attnsym.numeric.attention_vjp` and :func:`~attnsym.numeric.causal_decode` into a
:class:`BoundLayer` — the spec given as ``spec=``, or the one spec the keywords build — plus
the checked arrays. The layer adds only what a spec cannot hold: the array namespace, the
batch shape, the dtype, the device and a runtime mask (a bool array, possibly batched). Every
pass (plain forward, blockwise forward and backward, decoding) then uses the same
projections, scores and softmax defined here.

Position hooks
--------------
A position scheme plugs in at exactly one of three places, each a method of
:class:`BoundLayer` that dispatches on ``self.spec.positions`` (add a branch there — the
arrays themselves belong in :mod:`attnsym.numeric.positions` — and the scheme's name to
:data:`NUMERIC_POSITIONS`; nothing else changes):

(a) :meth:`BoundLayer.encode_inputs` — an additive input encoding, ``X_in = X + PE`` before the
    projections (``"sinusoidal"``). Its backward is the identity (gradients flow to ``X``
    unchanged; weight gradients use ``X_in``).
(b) :meth:`BoundLayer.rotate` — a per-head rotation of the ``Q`` and ``K`` rows at absolute positions
    ``p0, p0+1, …`` right after the projections (RoPE). ``adjoint=True`` applies the
    transpose, which the backward pass applies to ``dQ``, ``dK`` before the weight and input
    gradients. Rotated ``Q``, ``K`` are what the score code and the backward cores see.
(c) :meth:`BoundLayer.score_bias` — an additive per-head score bias for the block of queries ``i0:i1``
    and keys ``j0:j1`` (ALiBi), evaluated inside :func:`block_scores`, the one function that
    forms scores for the plain path (one block ``0:n × 0:n``), the blockwise forward and
    backward, and decoding. It carries no gradient (the bias is a constant).

Shape legend: ``...`` batch, ``H`` heads, ``n`` tokens, ``d`` = ``d_model``, ``d_k``/``d_v``
per-head widths, ``bi``/``bj`` rows of a query/key block.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import array_api_compat
import numpy as np

from .._checks import positive_int
from ..errors import ShapeError, SpecError
from ..spec import AttentionSpec
from . import _pool
from ._inputs import amax, finite_result
from .backend import exp_inplace, matmul, matmuls
from .norms import rms_norm
from .positions import alibi_bias_block, alibi_slopes, apply_rope, sinusoidal_positions

__all__ = [
    "AUTO_BLOCKWISE_N",
    "BLOCK_ELEMENTS",
    "DEFAULT_BLOCK_SIZE",
    "NUMERIC_POSITIONS",
    "BoundLayer",
    "affine",
    "allowed_block",
    "block_scores",
    "block_size_for",
    "broadcasts_into",
    "d_out",
    "dscores",
    "expand_kv",
    "finite_by_bounds",
    "grouped_matmul",
    "guard_logits",
    "head_rows",
    "inplace_ok",
    "merge_heads",
    "output",
    "output_gate",
    "plain_core",
    "project",
    "projections",
    "query_temperature",
    "reduce_kv",
    "safe_divide",
    "shifted_exp",
    "sigmoid",
    "sink_softmax",
    "split_heads",
]

#: from this sequence length on, ``return_weights=False`` (and, for NumPy arrays, ``attention_vjp``) takes the
#: blockwise path
AUTO_BLOCKWISE_N = 1024
#: the default block size (queries and keys) of the blockwise path, for one head and no batch
DEFAULT_BLOCK_SIZE = 2048
#: default blocks are halved until batch·heads·block² scores fit in this many elements (16 MiB in float32)
BLOCK_ELEMENTS = 2**22
#: the position schemes the numeric passes implement (the spec may know more; binding refuses those)
NUMERIC_POSITIONS = (None, "sinusoidal", "rope", "alibi")


@dataclass(frozen=True)
class BoundLayer:
    """One spec bound to arrays: everything the numeric passes need, checked once per call.

    Attributes
    ----------
    spec : AttentionSpec
        Sizes, causal flag, spec mask, scale and positions.
    xp : module
        The array namespace running the call.
    batch_shape : tuple of int
        Leading dimensions of ``X``.
    dtype : {"float32", "float64"}
    device : object
        The device of ``X``.
    mask : (..., n, n) bool array or None
        The allowed pattern besides ``causal``: the spec's ``mask`` and ``window`` band, the
        runtime ``mask=`` (all ANDed).
    positions : (..., n) float64 array or None
        Explicit token positions for RoPE and ALiBi (default ``0 … n−1``), e.g. from a padded
        batch; set by :func:`attnsym.numeric.head_attention`.
    sinks : (H,) or (1, H) array or None
        The sink logits of a spec with ``sink=True`` (:func:`sink_softmax`).
    rope : (cos, sin) arrays or None
        RoPE's tables (:func:`~attnsym.numeric.positions.rope_tables`) of every position the layer
        rotates, ``(..., 1, n, d/2)`` or ``(n, d/2)`` in the layer's dtype, made once by a caller
        that runs many layers with one RoPE setting (a model's forward pass); :meth:`rotate` slices
        them instead of computing angles.
    """

    spec: AttentionSpec
    xp: ModuleType
    batch_shape: tuple[int, ...]
    dtype: str
    device: Any
    mask: Any = None
    positions: Any = None
    sinks: Any = None
    rope: Any = None

    @property
    def n(self) -> int:
        return self.spec.n

    @property
    def d_model(self) -> int:
        return self.spec.d_model

    @property
    def heads(self) -> int:
        return self.spec.heads

    @property
    def d_k(self) -> int:
        return self.spec.d_k

    @property
    def d_v(self) -> int:
        return self.spec.d_v

    @property
    def causal(self) -> bool:
        return self.spec.causal

    @property
    def scale(self) -> float:
        """The score scale ``c`` as a float (``spec.scale_float``)."""
        return self.spec.scale_float

    # ------------------------------------------------------------------ position hooks
    def encode_inputs(self, X):
        """Hook (a): the projections' input ``X_in`` from ``X`` (..., r, d), rows at positions 0, 1, ….

        ``"sinusoidal"`` adds ``PE`` (:func:`~attnsym.numeric.sinusoidal_positions` with the
        spec's ``position_base``); other schemes return ``X``.
        """
        if self.spec.adds_position_vectors:
            r = int(X.shape[-2])
            pe = sinusoidal_positions(r, self.d_model, int(self.spec.position_base), xp=self.xp, dtype=X.dtype)  # (r, d)
            return X + array_api_compat.to_device(pe, self.device)
        return X

    def rotate(self, M, p0: int = 0, *, adjoint: bool = False):
        """Hook (b): rotate each head's rows of ``M`` (..., H, r, d_k), at positions ``p0 … p0+r-1``.

        Applied to ``Q`` and ``K`` after the projections; ``adjoint=True`` applies the
        transpose (to ``dQ``, ``dK`` in the backward pass). ``"rope"`` rotates row ``p`` by
        ``R(p θ)`` (:func:`~attnsym.numeric.apply_rope`, the spec's pairing and ``rotary_pct``);
        other schemes return ``M`` unchanged.
        """
        if self.spec.positions != "rope":
            return M
        r = int(M.shape[-2])
        if self.rope is not None:  # the caller's tables of every position: this call's rows
            cos, sin = self.rope
            return apply_rope(M, self.spec, inverse=adjoint, tables=(cos[..., p0:p0 + r, :], sin[..., p0:p0 + r, :]))
        if self.positions is not None:
            positions = self.xp.expand_dims(self.positions[..., p0:p0 + r], axis=-2)  # (..., 1, r): every head
        else:
            positions = None if p0 == 0 else self.xp.arange(p0, p0 + r, dtype=self.xp.float64, device=self.device)
        return apply_rope(M, self.spec, positions, inverse=adjoint)

    @property
    def has_score_bias(self) -> bool:
        """Whether :meth:`score_bias` gives a bias (ALiBi) rather than None."""
        return self.spec.positions == "alibi"

    def score_bias(self, i0: int, i1: int, j0: int, j1: int):
        """Hook (c): the additive (H, i1-i0, j1-j0) score bias of queries ``i0:i1`` and keys ``j0:j1``, or None.

        ``"alibi"``: ``−m_h |i − j|`` (:func:`~attnsym.numeric.positions.alibi_bias_block`);
        other schemes: None.
        """
        if not self.has_score_bias:
            return None
        if self.positions is not None:  # explicit positions: −m_h |p_i − p_j|, (..., H, bi, bj)
            xp = self.xp
            slopes = xp.reshape(xp.asarray(alibi_slopes(self.heads, xp=xp), device=self.device), (self.heads, 1, 1))
            p_i = xp.expand_dims(xp.expand_dims(self.positions[..., i0:i1], axis=-1), axis=-3)  # (..., 1, bi, 1)
            p_j = xp.expand_dims(xp.expand_dims(self.positions[..., j0:j1], axis=-2), axis=-3)  # (..., 1, 1, bj)
            return xp.astype(0.0 - slopes * xp.abs(p_i - p_j), getattr(xp, self.dtype))
        return alibi_bias_block(self.spec, i0, i1, j0, j1, xp=self.xp, dtype=getattr(self.xp, self.dtype),
                                device=self.device)


def d_out(layer: BoundLayer, a: dict) -> int:
    """Width of ``Y``: the output projection's, or ``heads·d_v`` without one."""
    return int(a["W_O"].shape[1]) if a.get("W_O") is not None else layer.heads * layer.d_v


def block_size_for(layer: BoundLayer, block_size) -> int:
    """The block size asked for, or the default: large blocks (few, big matrix products) within a fixed budget."""
    if block_size is None:
        lanes = math.prod(layer.batch_shape) * layer.heads
        size = DEFAULT_BLOCK_SIZE
        while size > 64 and lanes * size * size > BLOCK_ELEMENTS:
            size //= 2
        return size
    return positive_int("block_size", block_size, error=SpecError)


# ---------------------------------------------------------------------------- shared kernels
def split_heads(xp: ModuleType, M, heads: int):
    """(..., n, H·w) -> (..., H, n, w)."""
    *batch, n, width = M.shape
    b = len(batch)
    M = xp.reshape(M, (*batch, n, heads, width // heads))
    return xp.permute_dims(M, (*range(b), b + 1, b, b + 2))


def merge_heads(xp: ModuleType, M):
    """(..., H, n, w) -> (..., n, H·w)."""
    *batch, heads, n, width = M.shape
    b = len(batch)
    M = xp.permute_dims(M, (*range(b), b + 1, b, b + 2))
    return xp.reshape(M, (*batch, n, heads * width))


def affine(xp: ModuleType, M, W, b, scratch: str | None = None):
    """``M W + b`` (b optional, shape (k,) or (1, k)); ``scratch``: a workspace name, as for :func:`matmul`."""
    return affines(xp, M, [(W, b)], [scratch])[0]


def affines(xp: ModuleType, M, weights: list[tuple[Any, Any]], scratch: Sequence[str | None] | None = None) -> list:
    """``[M W + b for W, b in weights]``, the products in one call of :func:`~attnsym.numeric.backend.matmuls`."""
    products = matmuls(xp, [(M, W) for W, _ in weights], scratch)
    out = []
    for (W, b), P, name in zip(weights, products, scratch or [None] * len(weights), strict=True):
        if b is None:
            out.append(P)
        elif name is not None and _pool.active() and isinstance(P, np.ndarray):
            P += b.reshape(W.shape[1])  # the workspace's own array: in place
            out.append(P)
        else:
            out.append(P + xp.reshape(b, (W.shape[1],)))
    return out


def expand_kv(xp: ModuleType, M, group: int):
    """(..., H_kv, r, w) -> (..., H_kv·group, r, w): key/value head ``h // group`` serves query head ``h``.

    Hugging Face's ``repeat_kv``; the identity for ``group == 1``.
    """
    if group == 1:
        return M
    *batch, h_kv, r, w = M.shape
    M = xp.broadcast_to(xp.expand_dims(M, axis=-3), (*batch, h_kv, group, r, w))
    return xp.reshape(M, (*batch, h_kv * group, r, w))


def reduce_kv(xp: ModuleType, dM, group: int):
    """The adjoint of :func:`expand_kv`: (..., H, r, w) -> (..., H/group, r, w), summing each group's heads."""
    if group == 1:
        return dM
    *batch, h, r, w = dM.shape
    return xp.sum(xp.reshape(dM, (*batch, h // group, group, r, w)), axis=-3)


def query_temperature(layer: BoundLayer, r: int, p0: int = 0):
    """``1 + a·log(1 + ⌊(p + 1)/f⌋)`` of ``spec.query_temperature = (f, a)`` at positions ``p0 … p0+r-1`` (or the
    layer's explicit positions), shaped (..., 1, r, 1) to multiply per-head query rows (Llama 4)."""
    xp = layer.xp
    temperature = layer.spec.query_temperature
    if temperature is None:
        raise SpecError("query_temperature needs a spec with query_temperature=(floor_scale, attn_scale) (got None)")
    floor, scale = temperature
    if layer.positions is not None:
        p = xp.expand_dims(layer.positions[..., p0:p0 + r], axis=-2)  # (..., 1, r)
    else:
        p = xp.arange(p0, p0 + r, dtype=xp.float64, device=layer.device)
    t = xp.log1p(xp.floor((p + 1.0) / floor)) * scale + 1.0
    return xp.astype(xp.expand_dims(t, axis=-1), getattr(xp, layer.dtype))


def head_rows(layer: BoundLayer, a: dict, M, which: str, p0: int = 0, *, expand: bool = True):
    """Per-head rows of one projection ``M`` (..., r, heads·w or kv_heads·w), ready for the scores.

    Split into heads (``kv_heads`` of them for ``K`` and ``V``), QK-norm (``Q``, ``K`` with the gains
    ``a["g_Q"]``, ``a["g_K"]``), RoPE at positions ``p0 …`` (hook (b)), then each key/value head
    repeated for the query heads it serves (``expand``). The order of Qwen3: norm, then rotate;
    ``qk_norm_scope="whole_projection"`` (OLMo 2) norms the whole row before the split.
    """
    xp, spec = layer.xp, layer.spec
    whole = spec.qk_norm and spec.qk_norm_scope == "whole_projection" and which in ("Q", "K")
    if whole:  # (..., r, H·w): one RMSNorm over every head's coordinates
        M = rms_norm(M, a[f"g_{which}"], spec.qk_norm_eps, spec.qk_norm_offset)
    M = split_heads(xp, M, spec.heads if which == "Q" else spec.kv_heads)  # (..., H or H_kv, r, w)
    if which in ("Q", "K"):
        if spec.qk_norm and not whole:
            M = rms_norm(M, a[f"g_{which}"], spec.qk_norm_eps, spec.qk_norm_offset)
        M = layer.rotate(M, p0)
    if which == "Q" and spec.query_temperature is not None:
        M = M * query_temperature(layer, int(M.shape[-2]), p0)
    if which in ("K", "V") and expand:
        M = expand_kv(xp, M, spec.kv_group)
    return M


def project(layer: BoundLayer, a: dict, X_in, which: str, p0: int = 0):
    """Per-head ``Q``, ``K`` (normed and rotated, :func:`head_rows`) or ``V`` of the rows ``X_in`` at positions
    ``p0…``: (..., H, r, w), keys and values repeated over their query heads."""
    return head_rows(layer, a, affine(layer.xp, X_in, a[f"W_{which}"], a.get(f"b_{which}")), which, p0)


def projections(layer: BoundLayer, a: dict):
    """``X_in`` and the per-head ``Q, K, V`` (..., H, n, d_k|d_v) of the whole sequence, overflow-checked.

    The check is by the inputs' sizes when they prove ``Q, K, V`` and the scores finite
    (:func:`finite_by_bounds`: one pass over ``X_in``), else by a pass over each projection
    and the score bound of :func:`guard_logits`. At n = 2048, d = 64, float32, that is
    0.12 ms against 0.33 ms, 1.2 % of a lean forward.

    In a NumPy fast-path call (:func:`attnsym.numeric._pool.one_blas_thread`) ``Q, K, V`` are
    views of the thread's workspace, valid until the thread's next call: the lean forward and
    backward use them inside the call only. The three products share one wait for the pool.
    """
    X_in = layer.encode_inputs(a["X"])  # (..., n, d)
    scratch = [f"projections:{w}" for w in "QKV"]
    products = affines(layer.xp, X_in, [(a[f"W_{w}"], a.get(f"b_{w}")) for w in "QKV"], scratch)
    Q, K, V = (head_rows(layer, a, M, w) for M, w in zip(products, "QKV", strict=True))

    if finite_by_bounds(layer, a, X_in):
        return X_in, Q, K, V

    def sizes(name: str) -> Callable[[], str]:
        return lambda: f"|X| up to {amax(layer.xp, a['X']):.3g}, |W_{name}| up to {amax(layer.xp, a[f'W_{name}']):.3g}"

    for name, M in (("Q", Q), ("K", K), ("V", V)):
        finite_result(layer.xp, M, f"the projection {name} = X W_{name}", sizes(name))
    guard_logits(layer, a, Q, K)
    return X_in, Q, K, V


def finite_by_bounds(layer: BoundLayer, a: dict, X_in) -> bool:
    """Whether ``Q, K, V`` and the scores ``c·QKᵀ`` are finite by the inputs' bounds alone, with no pass over them.

    Each entry of ``X_in W + b`` is at most ``β = d·max|X_in|·max|W| + max|b|`` in size, and its
    float value at most ``2β`` (rounding adds a relative ``d·ε`` at most); each score at most
    ``|c|·d_k·(2β_Q)(2β_K)``. When these fit the dtype, the passes that would check ``Q``, ``K``,
    ``V`` (:func:`~attnsym.numeric._inputs.finite_result`) and bound the scores
    (:func:`guard_logits`) can find nothing: one pass over ``X_in`` replaces five over the
    projections. Only for plain projections: QK-norm, RoPE and a query temperature change
    ``Q`` and ``K`` after the product (those specs take the passes). False when a bound does
    not fit, and then the passes decide.

    >>> from attnsym.numeric.binding import bind
    >>> X, W = np.ones((4, 2)), np.eye(2)
    >>> layer, a = bind(X, W, W, W, None, dict.fromkeys(("b_Q", "b_K", "b_V", "b_O")), spec=None, heads=1,
    ...                 causal=False, mask=None, scale="sqrt", positions=None, backend=None)
    >>> finite_by_bounds(layer, a, X), finite_by_bounds(layer, {**a, "W_Q": W * 1e154, "W_K": W * 1e154}, X)
    (True, False)
    """
    xp, spec = layer.xp, layer.spec
    if spec.qk_norm or spec.positions == "rope" or spec.query_temperature is not None:
        return False
    largest = float(xp.finfo(X_in.dtype).max)
    x = amax(xp, X_in)
    d = int(X_in.shape[-1])
    bound = {w: 2.0 * (d * x * amax(xp, a[f"W_{w}"]) + (0.0 if a.get(f"b_{w}") is None else amax(xp, a[f"b_{w}"])))
             for w in "QKV"}
    return max(bound.values()) <= largest and abs(layer.scale) * layer.d_k * bound["Q"] * bound["K"] <= largest


def guard_logits(layer: BoundLayer, a: dict, Q, K) -> None:
    """Refuse finite inputs whose scores ``c·QKᵀ`` overflow the dtype (softmax would give NaN or 0 rows).

    The bound ``|S_ij| <= c·d_k·max|Q|·max|K|`` costs one pass over ``Q`` and ``K``; only
    when it exceeds the dtype's largest value are the scores formed, block by block, to see
    whether an allowed one really is not finite.
    """
    xp = layer.xp
    qmax, kmax = amax(xp, Q), amax(xp, K)
    if layer.scale * layer.d_k * qmax * kmax <= float(xp.finfo(Q.dtype).max):
        return
    n, b = layer.n, block_size_for(layer, None)
    with warnings.catch_warnings():  # NumPy warns on the overflow this loop looks for
        warnings.simplefilter("ignore", RuntimeWarning)
        _exact_overflow_check(layer, a, Q, K, n, b, qmax, kmax)


def _exact_overflow_check(layer: BoundLayer, a: dict, Q, K, n: int, b: int, qmax: float, kmax: float) -> None:
    xp = layer.xp
    for i0 in range(0, n, b):
        Qs = Q[..., i0:i0 + b, :] * layer.scale  # (..., H, bi, d_k)
        for j0 in range(0, n, b):
            i1, j1 = min(n, i0 + b), min(n, j0 + b)
            bad = ~xp.isfinite(xp.matmul(Qs, xp.matrix_transpose(K[..., j0:j1, :])))  # (..., H, bi, bj)
            allowed = allowed_block(layer, i0, i1, j0, j1)
            if bool(xp.any(bad if allowed is None else xp.logical_and(bad, allowed))):
                raise ShapeError(
                    f"the attention scores c·QKᵀ overflow {layer.dtype} for these finite inputs (|X| up to "
                    f"{amax(xp, a['X']):.3g}, |Q| up to {qmax:.3g}, |K| up to {kmax:.3g}, scale {layer.scale:.3g}); "
                    "scale X or W_Q, W_K down" + (" or compute in float64" if layer.dtype == "float32" else ""))


def allowed_block(layer: BoundLayer, i0: int, i1: int, j0: int, j1: int):
    """The (…, 1, i1-i0, j1-j0) allowed pattern of one block, or None when all may attend."""
    xp = layer.xp
    allowed = None
    if layer.causal and j1 - 1 > i0:  # some key after some query in this block
        i = xp.reshape(xp.arange(i0, i1, device=layer.device), (i1 - i0, 1))
        j = xp.reshape(xp.arange(j0, j1, device=layer.device), (1, j1 - j0))
        allowed = i >= j  # (bi, bj)
    if layer.mask is not None:
        m = xp.expand_dims(layer.mask[..., i0:i1, j0:j1], axis=-3)  # (..., 1, bi, bj)
        allowed = m if allowed is None else xp.logical_and(allowed, m)
    return allowed


def grouped_matmul(xp: ModuleType, A, B, out=None):
    """``A_h B_{h // g}`` for every head: ``A`` (..., H, r, k), ``B`` (..., H_kv, k, m) with ``H = g·H_kv`` -> (..., H, r, m).

    Grouped-query attention without repeating ``B`` (:func:`expand_kv`'s pairing of heads): the
    ``g`` query heads a key/value head serves are one ``(g·r, k)`` matrix, so each key/value head
    takes one product. ``out`` (NumPy, C-contiguous, (..., H, r, m)) receives the result.
    """
    h, h_kv = int(A.shape[-3]), int(B.shape[-3])
    numpy_out = out is not None and isinstance(out, np.ndarray) and out.flags.c_contiguous
    if h == h_kv:
        if numpy_out:
            return np.matmul(A, B, out=out)
        C = xp.matmul(A, B)
    else:
        *batch, _, r, k = A.shape
        m, g = int(B.shape[-1]), h // h_kv
        A = xp.reshape(A, (*batch, h_kv, g * r, k))  # (..., H_kv, g·r, k): a view of contiguous heads
        if numpy_out:
            np.matmul(A, B, out=out.reshape(*batch, h_kv, g * r, m))  # a view of out: contiguous
            return out
        C = xp.reshape(xp.matmul(A, B), (*batch, h, r, m))
    if out is None:
        return C
    out[...] = C
    return out


def broadcasts_into(other, S) -> bool:
    """Whether the array ``other`` broadcasts into ``S``'s shape (so ``S op= other`` keeps ``S``'s shape).

    >>> broadcasts_into(np.zeros((1, 3)), np.zeros((2, 3))), broadcasts_into(np.zeros((2, 3)), np.zeros(3))
    (True, False)
    """
    big, small = tuple(S.shape), tuple(other.shape)
    return len(small) <= len(big) and all(b in (1, a) for a, b in zip(big[::-1], small[::-1], strict=False))


def block_scores(layer: BoundLayer, Qs, K, i0: int, i1: int, j0: int, j1: int, *, out=None, blocked=None):
    """Scores of queries ``i0:i1`` against keys ``j0:j1``: ``Qs Kᵀ`` + bias (hook (c)), soft-capped, ``-inf`` where masked.

    ``Qs`` (..., H, bi, d_k) holds the queries already multiplied by the scale ``c``; with
    ``spec.softcap = t`` a score ``s`` becomes ``t·tanh(s/t)`` (after the bias, before the mask).
    ``K`` (..., H or H_kv, bj, d_k): key heads not yet repeated serve their groups of query heads
    (:func:`grouped_matmul`). ``out`` (NumPy): the array to write the scores into; ``blocked``: the
    complement of :func:`allowed_block` when the caller has it already (a forward pass makes it once).
    """
    S = _masked_scores(layer, grouped_matmul(layer.xp, Qs, layer.xp.matrix_transpose(K), out), i0, i1, j0, j1,
                       blocked)  # (..., H, bi, bj)
    if out is not None and S is not out:
        out[...] = S
        return out
    return S


def _masked_scores(layer: BoundLayer, S, i0: int, i1: int, j0: int, j1: int, blocked):
    """:func:`block_scores` after the product ``S``: the bias, the soft-cap, the mask (in place on NumPy arrays)."""
    xp = layer.xp
    own = isinstance(S, np.ndarray)  # a new NumPy array (or out): the steps below run in place
    bias = layer.score_bias(i0, i1, j0, j1)
    if bias is not None:
        if own and broadcasts_into(bias, S):
            S += bias
        else:
            S = S + bias
    cap = layer.spec.softcap
    if cap is not None:
        if own:
            np.divide(S, cap, out=S)
            np.tanh(S, out=S)
            S *= cap
        else:
            S = cap * xp.tanh(S / cap)
    if blocked is None:
        allowed = allowed_block(layer, i0, i1, j0, j1)
        if allowed is None:
            return S
        if not (own and broadcasts_into(allowed, S)):
            return xp.where(allowed, S, -xp.inf)
        blocked = xp.logical_not(allowed)
    if own and broadcasts_into(blocked, S):
        np.copyto(S, -np.inf, where=blocked)
        return S
    return xp.where(xp.logical_not(blocked), S, -xp.inf)


def inplace_ok(x) -> bool:
    """Whether ``x`` may be overwritten (not a PyTorch tensor that records gradients)."""
    return not getattr(x, "requires_grad", False)


def shifted_exp(xp: ModuleType, S):
    """``exp(S - rowmax)`` (in place when possible), the row sums and the finite row shift.

    The shift is the row maximum, or 0 for a row that is all ``-inf`` (fully masked), whose
    exponentials are then exactly 0 and whose sum is 0.
    """
    m = xp.max(S, axis=-1, keepdims=True)  # (..., n, 1)
    m = xp.where(xp.isfinite(m), m, 0.0)
    if inplace_ok(S):
        S -= m
    else:
        S = S - m
    P = exp_inplace(xp, S)  # (..., n, m), entries in [0, 1]
    return P, xp.sum(P, axis=-1, keepdims=True), m


def safe_divide(xp: ModuleType, P, total, *, inplace: bool = False):
    """``P / total`` with rows whose total is 0 (fully masked) left at 0 (``P`` overwritten if ``inplace``)."""
    total = xp.where(total > 0, total, 1.0)
    if inplace and inplace_ok(P):
        P /= total
        return P
    return P / total


def sink_softmax(xp: ModuleType, S, sinks):
    """Softmax of the rows of ``S`` (..., H, n, m) with a sink logit per head in the denominator: ``(A, π)``.

    ``A_ij = exp(S_ij − m_i) / (exp(s_h − m_i) + Σ_k exp(S_ik − m_i))`` with the shift
    ``m_i = max(s_h, max_k S_ik)`` (the sink inside the max, as gpt-oss's eager code: no overflow
    either way), and ``π_i = exp(s_h − m_i) / (…)`` the sink's own mass, so that every row of ``A``
    sums to ``1 − π_i`` — kept, never renormalised. ``-inf`` scores (masked keys) get weight 0; a
    fully masked row gives all its mass to the sink (``π = 1``). ``sinks`` has shape (H,) or (1, H).

    >>> A, pi = sink_softmax(np, np.zeros((1, 1, 2)), np.zeros(1))
    >>> A.round(4).tolist(), pi.round(4).tolist()
    ([[[0.3333, 0.3333]]], [[[0.3333]]])
    """
    heads = int(S.shape[-3])
    s = xp.reshape(xp.astype(sinks, S.dtype), (heads, 1, 1))  # (H, 1, 1)
    m = xp.maximum(xp.max(S, axis=-1, keepdims=True), s)  # (..., H, n, 1), finite: s is
    P = xp.exp(S - m)  # (..., H, n, m)
    sink = xp.exp(s - m)  # (..., H, n, 1)
    total = xp.sum(P, axis=-1, keepdims=True) + sink
    return P / total, sink / total


def dscores(A, dA, rowsum):
    """``dS = A ⊙ (dA − rowsum)``: the softmax VJP, with ``rowsum = Σ_j dA_ij A_ij`` per row.

    The plain path computes ``rowsum`` from ``dA`` and ``A``; the blockwise path from the
    equal quantity ``Σ_c dZ_ic Z_ic`` (since ``Z = A V`` and ``dA = dZ Vᵀ``). ``dA`` is
    overwritten with the result where the array library allows it.
    """
    if inplace_ok(dA):
        dA -= rowsum
        dA *= A
        return dA
    return A * (dA - rowsum)


def plain_core(layer: BoundLayer, Q, K, V, *, want_weights: bool):
    """Z_h = softmax(c Q_h K_hᵀ) V_h for all heads at once (with the sink of ``spec.sink`` in the denominator);
    returns Z and (optionally) A."""
    xp = layer.xp
    n = layer.n
    S = block_scores(layer, Q * layer.scale, K, 0, n, 0, n)  # (..., H, n, n)
    if layer.spec.sink:  # the sink in the denominator; rows of A sum to 1 − π
        A = sink_softmax(xp, S, layer.sinks)[0]
        return xp.matmul(A, V), (A if want_weights else None)
    P, total, _ = shifted_exp(xp, S)
    if want_weights:
        A = safe_divide(xp, P, total, inplace=True)  # (..., H, n, n), the only n × n array kept
        return xp.matmul(A, V), A
    return safe_divide(xp, xp.matmul(P, V), total), None  # (..., H, n, d_v)


def sigmoid(xp: ModuleType, x):
    """``σ(x) = 1 / (1 + e^{−x})`` without overflow: ``e^{−|x|}`` only (finite for every finite ``x``).

    >>> sigmoid(np, np.array([-1000.0, 0.0, 1000.0]))
    array([0. , 0.5, 1. ])
    """
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def output_gate(layer: BoundLayer, a: dict, X_in=None):
    """The output gate ``σ(X_in W_G)`` (..., n, H·d_v) of a spec with ``output_gate=True``, else None."""
    if not layer.spec.output_gate:
        return None
    X_in = layer.encode_inputs(a["X"]) if X_in is None else X_in
    return sigmoid(layer.xp, matmul(layer.xp, X_in, a["W_G"]))


def output(layer: BoundLayer, a: dict, Z_heads):
    """``Y = ([Z_1 … Z_H] ⊙ gate) W_O + b_O`` (or without ``W_O``; the gate only with ``output_gate``), overflow-checked."""
    xp = layer.xp
    Z = merge_heads(xp, Z_heads)  # (..., n, H·d_v)
    gate = output_gate(layer, a)
    if gate is not None:
        Z = Z * gate  # (..., n, H·d_v)
    if a.get("W_O") is None:
        return Z
    return finite_result(xp, affine(xp, Z, a["W_O"], a.get("b_O")), "the output Y = Z W_O",
                         lambda: f"|Z| up to {amax(xp, Z):.3g}, |W_O| up to {amax(xp, a['W_O']):.3g}")

