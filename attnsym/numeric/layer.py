"""The bound layer: one :class:`~attnsym.AttentionSpec` plus what a spec cannot hold.

This is the bottom of :mod:`attnsym.numeric`'s attention code. :func:`bind` turns the
arguments of :func:`~attnsym.numeric.attention`, :func:`~attnsym.numeric.attention_vjp` and
:func:`~attnsym.numeric.causal_decode` into a :class:`BoundLayer` — either the spec given as
``spec=`` or the one spec the keywords build (:func:`spec_from_keywords`, the only place
keywords become a spec) — plus the checked arrays. The bind step adds only what a spec cannot
hold: the array namespace, the batch shape, the dtype, the device and a runtime mask (a bool
array, possibly batched). Every pass (plain forward, blockwise forward and backward, decoding)
then uses the same projections, scores and softmax defined here.

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
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import array_api_compat

from .._checks import boolean, positive_int
from ..errors import ShapeError, SpecError
from ..spec import AttentionSpec
from ._inputs import amax, as_array, bool_mask, finite_result, float_array, namespace_of
from .backend import exp_inplace
from .positions import sinusoidal_positions

__all__ = [
    "BLOCK_ELEMENTS",
    "DEFAULT_BLOCK_SIZE",
    "NUMERIC_POSITIONS",
    "BoundLayer",
    "affine",
    "allowed_block",
    "bind",
    "block_scores",
    "block_size_for",
    "d_out",
    "dscores",
    "guard_logits",
    "inplace_ok",
    "merge_heads",
    "output",
    "plain_core",
    "project",
    "projections",
    "safe_divide",
    "shifted_exp",
    "spec_from_keywords",
    "split_heads",
]

#: the default block size (queries and keys) of the blockwise path, for one head and no batch
DEFAULT_BLOCK_SIZE = 2048
#: default blocks are halved until batch·heads·block² scores fit in this many elements (16 MiB in float32)
BLOCK_ELEMENTS = 2**22
#: the position schemes the numeric passes implement (the spec may know more; binding refuses those)
NUMERIC_POSITIONS = (None, "sinusoidal")
_BIASES = ("b_Q", "b_K", "b_V", "b_O")


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
        The allowed pattern besides ``causal`` (the spec's mask, or the runtime ``mask=``).
    """

    spec: AttentionSpec
    xp: ModuleType
    batch_shape: tuple[int, ...]
    dtype: str
    device: Any
    mask: Any = None

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
        if self.spec.positions == "sinusoidal":
            r = int(X.shape[-2])
            pe = sinusoidal_positions(r, self.d_model, self.spec.position_base, xp=self.xp, dtype=X.dtype)  # (r, d)
            return X + array_api_compat.to_device(pe, self.device)
        return X

    def rotate(self, M, p0: int = 0, *, adjoint: bool = False):
        """Hook (b): rotate each head's rows of ``M`` (..., H, r, d_k), at positions ``p0 … p0+r-1``.

        Applied to ``Q`` and ``K`` after the projections; ``adjoint=True`` applies the
        transpose (to ``dQ``, ``dK`` in the backward pass). No scheme implemented today
        rotates, so ``M`` is returned unchanged.
        """
        return M

    def score_bias(self, i0: int, i1: int, j0: int, j1: int):
        """Hook (c): the additive (H, i1-i0, j1-j0) score bias of queries ``i0:i1`` and keys ``j0:j1``, or None.

        No scheme implemented today biases scores, so this is None.
        """
        return None


# ---------------------------------------------------------------------------- binding
def spec_from_keywords(n: int, d_model: int, W_Q, W_K, W_V, W_O, *, heads: Any, causal: Any, scale: Any,
                       positions: Any) -> AttentionSpec:
    """The one spec that keyword arguments and weight shapes describe (no ``spec=`` given).

    ``d_k`` and ``d_v`` are read from ``W_Q`` and ``W_V``; the spec's other fields validate
    ``heads``, ``causal``, ``scale`` and ``positions`` with the spec's own messages. Without a
    spec, ``W_O`` may have any output width and each bias is optional, so ``output_projection``
    and ``bias`` of this spec describe defaults only; the arrays given decide.
    """
    heads = positive_int("heads", heads)
    boolean("causal", causal)
    if W_Q.shape[0] != d_model or W_Q.shape[1] % heads:
        raise ShapeError(f"W_Q must have shape (d_model, heads*d_k) with d_model={d_model}, heads={heads} "
                         f"(got {tuple(W_Q.shape)})")
    if tuple(W_K.shape) != tuple(W_Q.shape):
        raise ShapeError(f"W_K must have shape the shape of W_Q = {tuple(W_Q.shape)} (got {tuple(W_K.shape)})")
    if W_V.shape[0] != d_model or W_V.shape[1] % heads:
        raise ShapeError(f"W_V must have shape (d_model, heads*d_v) with d_model={d_model}, heads={heads} "
                         f"(got {tuple(W_V.shape)})")
    if W_O is not None and W_O.shape[0] != W_V.shape[1]:
        raise ShapeError(f"W_O must have shape (heads*d_v, d_out) with heads*d_v={W_V.shape[1]} (got {tuple(W_O.shape)})")
    return AttentionSpec(n=n, d_model=d_model, heads=heads, d_k=int(W_Q.shape[1]) // heads,
                         d_v=int(W_V.shape[1]) // heads, causal=causal, scale=scale, positions=positions)


def _check_against_spec(spec: AttentionSpec, a: dict) -> None:
    shapes = spec.shapes
    for name in ("W_Q", "W_K", "W_V"):
        what = "(d_model, heads*d_k)" if name != "W_V" else "(d_model, heads*d_v)"
        if tuple(a[name].shape) != shapes[name]:
            raise ShapeError(f"{name} must have shape {what} = {shapes[name]} (got {tuple(a[name].shape)})")
    if spec.output_projection:
        if a["W_O"] is None:
            raise ShapeError(f"W_O is required by the spec (output_projection=True, shape {shapes['W_O']}) (got None)")
        if tuple(a["W_O"].shape) != shapes["W_O"]:
            raise ShapeError(f"W_O must have shape (heads*d_v, d_model) = {shapes['W_O']} (got {tuple(a['W_O'].shape)})")
    elif a["W_O"] is not None:
        raise ShapeError("W_O was given but the spec has output_projection=False; pass spec.replace(output_projection=True)")
    for name in _BIASES:
        wanted = spec.bias and name in shapes
        if wanted and a[name] is None:
            raise ShapeError(f"{name} is required by the spec (bias=True, shape {shapes[name]}) (got None)")
        if not wanted and a[name] is not None:
            raise ShapeError(f"{name} was given but the spec has no such bias (bias={spec.bias})")


def _check_biases(a: dict) -> None:
    widths = {"b_Q": a["W_Q"].shape[1], "b_K": a["W_K"].shape[1], "b_V": a["W_V"].shape[1],
              "b_O": None if a["W_O"] is None else a["W_O"].shape[1]}
    for name, k in widths.items():
        if a[name] is None:
            continue
        if k is None:
            raise ShapeError("b_O was given without W_O; b_O needs an output projection W_O")
        if tuple(a[name].shape) not in ((k,), (1, k)):
            raise ShapeError(f"{name} must have shape (1, {k}) or ({k},) (got {tuple(a[name].shape)})")


def _broadcast_shapes(a: tuple, b: tuple) -> tuple:
    out = []
    for x, y in zip(reversed((1,) * (len(b) - len(a)) + a), reversed((1,) * (len(a) - len(b)) + b), strict=True):
        if x != y and 1 not in (x, y):
            raise ValueError(f"{a} and {b} do not broadcast")
        out.append(max(x, y))
    return tuple(reversed(out))


def _runtime_mask(xp: ModuleType, mask, n: int, batch_shape: tuple, device):
    mask = bool_mask(xp, "mask", mask, device)
    if mask.ndim < 2 or tuple(mask.shape[-2:]) != (n, n):
        raise ShapeError(f"mask must have shape (n, n) = ({n}, {n}) or (..., {n}, {n}) (got {tuple(mask.shape)})")
    try:
        fits = _broadcast_shapes(tuple(mask.shape[:-2]), batch_shape) == batch_shape
    except ValueError:
        fits = False
    if not fits:  # a mask may not add batch dimensions: Y, A and every gradient keep X's batch shape
        raise ShapeError(f"mask batch dimensions {tuple(mask.shape[:-2])} must broadcast to X's batch "
                         f"dimensions {batch_shape}; give X those batch dimensions (e.g. numpy.broadcast_to) "
                         "or one mask per batch element")
    return mask


def bind(X, W_Q, W_K, W_V, W_O, biases: dict, *, spec, heads, causal, mask, scale, positions, backend,
         G=None) -> tuple[BoundLayer, dict]:
    """Check every input against ``spec`` (or the spec the keywords build); the layer and the arrays.

    Returns
    -------
    (BoundLayer, dict)
        The layer and ``{"X", "W_Q", "W_K", "W_V", "W_O", "b_Q", …, ["G"]}`` as arrays of the
        layer's namespace (``None`` for what was not given).
    """
    named = {"X": X, "W_Q": W_Q, "W_K": W_K, "W_V": W_V, "W_O": W_O, **biases}
    xp = namespace_of({**named, "G": G}, backend)  # a mask may be NumPy always
    if G is not None:
        named["G"] = G
    a = {k: as_array(xp, k, v, convert=backend is not None) for k, v in named.items()}
    X = a["X"]
    for name in ("X", "W_Q", "W_K", "W_V"):
        if a[name] is None:
            raise ShapeError(f"{name} is required (got None)")
    if X.ndim < 2:
        raise ShapeError(f"X must have shape (n, d_model) or (..., n, d_model) (got {tuple(X.shape)})")
    if X.shape[-2] == 0:
        raise ShapeError(f"X must hold at least one token, n >= 1 in (..., n, d_model) (got shape {tuple(X.shape)})")
    dtype = float_array(xp, "X", X)
    for name, value in a.items():
        if name != "X" and value is not None:
            float_array(xp, name, value, like=dtype)
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        if a[name] is not None and a[name].ndim != 2:
            raise ShapeError(f"{name} must be a 2-D matrix (got shape {tuple(a[name].shape)})")
    n, d_model = int(X.shape[-2]), int(X.shape[-1])
    batch_shape = tuple(int(s) for s in X.shape[:-2])
    device = array_api_compat.device(X)

    if spec is not None:
        if not isinstance(spec, AttentionSpec):
            raise SpecError(f"spec must be an AttentionSpec (got {type(spec).__name__})")
        defaults = {"heads": (heads, 1), "causal": (causal, False), "mask": (mask, None), "scale": (scale, "sqrt"),
                    "positions": (positions, None)}
        clash = [k for k, (v, default) in defaults.items() if not (v is default or (isinstance(v, str) and v == default))]
        if clash:
            raise SpecError(f"give either spec= or the keyword arguments {clash}, not both (the spec decides them)")
        if (n, d_model) != (spec.n, spec.d_model):
            raise ShapeError(f"X must have shape (..., n, d_model) = (..., {spec.n}, {spec.d_model}) (got {tuple(X.shape)})")
        _check_against_spec(spec, a)
        runtime = None if spec.mask is None else xp.asarray(spec.mask, dtype=xp.bool, device=device)
    else:
        spec = spec_from_keywords(n, d_model, a["W_Q"], a["W_K"], a["W_V"], a["W_O"], heads=heads, causal=causal,
                                  scale=scale, positions=positions)
        runtime = None if mask is None else _runtime_mask(xp, mask, n, batch_shape, device)
    _check_biases(a)
    if spec.positions not in NUMERIC_POSITIONS:
        raise SpecError(f"positions={spec.positions!r} is not implemented by attnsym.numeric yet "
                        f"(it implements {NUMERIC_POSITIONS})")
    layer = BoundLayer(spec=spec, xp=xp, batch_shape=batch_shape, dtype=dtype, device=device, mask=runtime)
    if G is not None:
        expected = (*batch_shape, n, d_out(layer, a))
        if tuple(a["G"].shape) != expected:
            raise ShapeError(f"G must have the shape of the output Y, (..., n, d_out) = {expected} "
                             f"(got {tuple(a['G'].shape)})")
    return layer, a


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


def affine(xp: ModuleType, M, W, b):
    """``M W + b`` (b optional, shape (k,) or (1, k))."""
    out = xp.matmul(M, W)
    return out if b is None else out + xp.reshape(b, (W.shape[1],))


def project(layer: BoundLayer, a: dict, X_in, which: str, p0: int = 0):
    """Per-head ``Q``, ``K`` (rotated, hook (b)) or ``V`` of the rows ``X_in`` at positions ``p0…``: (..., H, r, w)."""
    M = split_heads(layer.xp, affine(layer.xp, X_in, a[f"W_{which}"], a.get(f"b_{which}")), layer.heads)
    return layer.rotate(M, p0) if which in ("Q", "K") else M


def projections(layer: BoundLayer, a: dict):
    """``X_in`` and the per-head ``Q, K, V`` (..., H, n, d_k|d_v) of the whole sequence, overflow-checked."""
    X_in = layer.encode_inputs(a["X"])  # (..., n, d)
    Q, K, V = (project(layer, a, X_in, w) for w in "QKV")
    for name, M in (("Q", Q), ("K", K), ("V", V)):
        finite_result(layer.xp, M, f"the projection {name} = X W_{name}",
                      f"|X| up to {amax(layer.xp, a['X']):.3g}, |W_{name}| up to {amax(layer.xp, a[f'W_{name}']):.3g}")
    guard_logits(layer, a, Q, K)
    return X_in, Q, K, V


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


def block_scores(layer: BoundLayer, Qs, K, i0: int, i1: int, j0: int, j1: int):
    """Scores of queries ``i0:i1`` against keys ``j0:j1``: ``Qs Kᵀ`` + bias (hook (c)), ``-inf`` where masked.

    ``Qs`` (..., H, bi, d_k) holds the queries already multiplied by the scale ``c``.
    """
    xp = layer.xp
    S = xp.matmul(Qs, xp.matrix_transpose(K))  # (..., H, bi, bj)
    bias = layer.score_bias(i0, i1, j0, j1)
    if bias is not None:
        S = S + bias
    allowed = allowed_block(layer, i0, i1, j0, j1)
    return S if allowed is None else xp.where(allowed, S, -xp.inf)


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
    """Z_h = softmax(c Q_h K_hᵀ) V_h for all heads at once; returns Z and (optionally) A."""
    xp = layer.xp
    n = layer.n
    S = block_scores(layer, Q * layer.scale, K, 0, n, 0, n)  # (..., H, n, n)
    P, total, _ = shifted_exp(xp, S)
    if want_weights:
        A = safe_divide(xp, P, total, inplace=True)  # (..., H, n, n), the only n × n array kept
        return xp.matmul(A, V), A
    return safe_divide(xp, xp.matmul(P, V), total), None  # (..., H, n, d_v)


def output(layer: BoundLayer, a: dict, Z_heads):
    """``Y = [Z_1 … Z_H] W_O + b_O`` (or the concatenation without ``W_O``), overflow-checked."""
    xp = layer.xp
    Z = merge_heads(xp, Z_heads)  # (..., n, H·d_v)
    if a.get("W_O") is None:
        return Z
    return finite_result(xp, affine(xp, Z, a["W_O"], a.get("b_O")), "the output Y = Z W_O",
                         f"|Z| up to {amax(xp, Z):.3g}, |W_O| up to {amax(xp, a['W_O']):.3g}")

