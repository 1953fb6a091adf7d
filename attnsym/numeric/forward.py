"""Numeric forward pass of (multi-head) self-attention, written once against the array API.

Shape legend (the spec's conventions, :mod:`attnsym.spec`):

* ``...`` — any batch dimensions of ``X``; ``n`` — tokens; ``d`` — ``d_model``;
* ``H`` — heads; ``d_k``, ``d_v`` — per-head widths of queries/keys and values.

.. math::

    Q = X W_Q + b_Q,\\quad K = X W_K + b_K,\\quad V = X W_V + b_V,\\qquad
    S_h = c\\, Q_h K_h^\\top,\\quad A_h = \\operatorname{softmax}_{\\text{row}}(S_h),\\quad
    Z_h = A_h V_h,\\qquad Y = [Z_1 \\cdots Z_H]\\, W_O + b_O

with ``c`` the scale (``1/sqrt(d_k)`` by default) and masked scores ``-inf``. A query that
may attend to no key gets an all-zero row of weights and an all-zero ``Z`` row (the spec's
fully-masked-row policy), so every value and gradient stays finite.

This module is independent of SymPy on purpose: it is the reference the symbolic results are
checked against (``attnsym.validate``).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import array_api_compat

from ..errors import BackendError, ShapeError, SpecError
from ..spec import DEFAULT_POSITION_BASE, AttentionSpec, _check_scale
from .backend import array_namespace, asarray_in, exp_inplace
from .positions import sinusoidal_positions

__all__ = ["attention", "scores", "softmax"]

#: from this sequence length on, ``return_weights=False`` takes the blockwise path
AUTO_BLOCKWISE_N = 1024
#: the default block size (queries and keys) of the blockwise path, for one head and no batch
DEFAULT_BLOCK_SIZE = 2048
#: default blocks are halved until batch·heads·block² scores fit in this many elements (16 MiB in float32)
BLOCK_ELEMENTS = 2**22


# ---------------------------------------------------------------------------- scores and softmax
def scores(Q, K, scale: float = 1.0, allowed=None):
    """Scaled scores ``S = scale · Q Kᵀ`` with ``-inf`` where ``allowed`` is False.

    Parameters
    ----------
    Q : (..., n, d_k) array
    K : (..., m, d_k) array
    scale : float, default 1.0
        The factor ``c`` (``1/sqrt(d_k)`` in the usual layer).
    allowed : (..., n, m) bool array, optional
        ``True`` = query ``i`` may attend to key ``j``.

    Returns
    -------
    (..., n, m) array

    Examples
    --------
    >>> scores(np.array([[1.0, 2.0]]), np.array([[3.0, 4.0], [1.0, 0.0]]), 0.5)
    array([[5.5, 0.5]])
    """
    xp = array_namespace(Q, K, allowed)
    S = xp.matmul(Q * scale, xp.matrix_transpose(K))  # (..., n, m)
    if allowed is not None:
        S = xp.where(xp.asarray(allowed), S, -xp.inf)
    return S


def _shifted_exp(xp: ModuleType, S):
    """``exp(S - rowmax)`` (in place when possible), the row sums and the finite row shift.

    The shift is the row maximum, or 0 for a row that is all ``-inf`` (fully masked), whose
    exponentials are then exactly 0 and whose sum is 0.
    """
    m = xp.max(S, axis=-1, keepdims=True)  # (..., n, 1)
    m = xp.where(xp.isfinite(m), m, 0.0)
    if _inplace_ok(S):
        S -= m
    else:
        S = S - m
    P = exp_inplace(xp, S)  # (..., n, m), entries in [0, 1]
    return P, xp.sum(P, axis=-1, keepdims=True), m


def _safe_divide(xp: ModuleType, P, total, *, inplace: bool = False):
    """``P / total`` with rows whose total is 0 (fully masked) left at 0 (``P`` overwritten if ``inplace``)."""
    total = xp.where(total > 0, total, 1.0)
    if inplace and _inplace_ok(P):
        P /= total
        return P
    return P / total


def _inplace_ok(x) -> bool:
    return not getattr(x, "requires_grad", False)


def softmax(S, allowed=None, axis: int = -1):
    """Numerically stable softmax along ``axis``: subtract the maximum, exponentiate, normalise.

    Masked entries (``allowed`` False, or a score of ``-inf``) get weight exactly 0; a slice
    with no allowed entry gets all zeros (not NaN, not uniform — see :mod:`attnsym.spec`).
    Twin of :func:`attnsym.symbolic.row_softmax`.

    Examples
    --------
    >>> softmax(np.array([[1000.0, 1000.0], [0.0, -np.inf]]))
    array([[0.5, 0.5],
           [1. , 0. ]])
    >>> softmax(np.zeros((1, 2)), allowed=np.array([[False, False]]))
    array([[0., 0.]])
    """
    xp = array_namespace(S, allowed)
    S = xp.asarray(S)
    if S.dtype not in (xp.float32, xp.float64):
        S = xp.astype(S, xp.float64)
    S = xp.where(xp.asarray(allowed), S, -xp.inf) if allowed is not None else S + 0.0  # never modify the input
    moved = axis not in (-1, S.ndim - 1)
    if moved:  # after masking: allowed has the layout of S, not of the moved axes
        S = xp.moveaxis(S, axis, -1)
    P, total, _ = _shifted_exp(xp, S)
    A = _safe_divide(xp, P, total)
    return xp.moveaxis(A, -1, axis) if moved else A


# ---------------------------------------------------------------------------- the layer
@dataclass(frozen=True)
class _Layer:
    """Everything the numeric passes need, resolved and checked once per call."""

    xp: ModuleType
    n: int
    d_model: int
    heads: int
    d_k: int
    d_v: int
    scale: float
    causal: bool
    mask: Any  # (..., n, n) bool array of xp, True = may attend, or None
    positions: str | None
    base: int
    batch_shape: tuple[int, ...]
    device: Any = None


_FLOATS = ("float32", "float64")


def _dtype_name(xp: ModuleType, x) -> str:
    return str(x.dtype).removeprefix("torch.")


def _as_input(xp: ModuleType, name: str, value, backend: str | None):
    if value is None:
        return None
    if backend is not None:
        value = asarray_in(xp, value)
    elif not hasattr(value, "shape") or not hasattr(value, "dtype"):
        value = xp.asarray(value)
    if not hasattr(value, "ndim"):
        raise ShapeError(f"{name} must be an array (got {type(value).__name__})")
    return value


def _check_float(xp: ModuleType, name: str, value, dtype_name: str | None) -> str:
    got = _dtype_name(xp, value)
    if got not in _FLOATS:
        raise ShapeError(
            f"{name} must have dtype float32 or float64 (got {got}); convert it first, "
            f"e.g. {name}.astype('float64') for NumPy or {name}.double() for PyTorch"
        )
    if dtype_name is not None and got != dtype_name:
        raise ShapeError(f"{name} has dtype {got} but X has dtype {dtype_name}; give every array one dtype")
    if not bool(xp.all(xp.isfinite(value))):
        raise ShapeError(f"{name} contains non-finite values (inf or nan); attention needs finite inputs")
    return got


def _check_shape(name: str, value, expected: tuple, what: str) -> None:
    if tuple(value.shape) != tuple(expected):
        raise ShapeError(f"{name} must have shape {what} = {tuple(expected)} (got {tuple(value.shape)})")


def _bias_shape_ok(value, k: int) -> bool:
    return tuple(value.shape) in ((k,), (1, k))


def _resolve(
    X, W_Q, W_K, W_V, W_O, biases: dict, *, spec, heads, causal, mask, scale, positions, backend, G=None
) -> tuple[_Layer, dict]:
    """Check every input against the spec (or the keyword arguments) and return the layer and arrays."""
    named = {"X": X, "W_Q": W_Q, "W_K": W_K, "W_V": W_V, "W_O": W_O, **biases}
    try:
        xp = array_namespace(X, W_Q, W_K, W_V, W_O, G, *biases.values(), backend=backend)  # a mask may be NumPy always
    except BackendError:
        kinds = {k: f"{type(v).__module__}.{type(v).__name__}" for k, v in {**named, "G": G}.items()
                 if v is not None and array_api_compat.is_array_api_obj(v)}
        if len(set(kinds.values())) < 2:
            raise
        got = ", ".join(f"{k} is {t}" for k, t in kinds.items())
        raise BackendError(f"all arrays of one call must come from one array library (got {got}); convert them first, "
                           "e.g. numpy.asarray(t.cpu()) or torch.asarray(a), or pass backend='numpy' or 'torch'") from None
    if G is not None:
        named["G"] = G
    arrays = {k: _as_input(xp, k, v, backend) for k, v in named.items()}
    X = arrays["X"]
    for name in ("X", "W_Q", "W_K", "W_V"):
        if arrays[name] is None:
            raise ShapeError(f"{name} is required (got None)")
    if X.ndim < 2:
        raise ShapeError(f"X must have shape (n, d_model) or (..., n, d_model) (got {tuple(X.shape)})")
    if X.shape[-2] == 0:
        raise ShapeError(f"X must hold at least one token, n >= 1 in (..., n, d_model) (got shape {tuple(X.shape)})")
    dtype_name = _check_float(xp, "X", X, None)
    for name, value in arrays.items():
        if name != "X" and value is not None:
            _check_float(xp, name, value, dtype_name)
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        if arrays[name] is not None and arrays[name].ndim != 2:
            raise ShapeError(f"{name} must be a 2-D matrix (got shape {tuple(arrays[name].shape)})")
    n, d_model = int(X.shape[-2]), int(X.shape[-1])
    batch_shape = tuple(int(s) for s in X.shape[:-2])

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
        shapes = spec.shapes
        for name in ("W_Q", "W_K", "W_V"):
            _check_shape(name, arrays[name], shapes[name], "(d_model, heads*d_k)" if name != "W_V" else "(d_model, heads*d_v)")
        if spec.output_projection:
            if arrays["W_O"] is None:
                raise ShapeError(f"W_O is required by the spec (output_projection=True, shape {shapes['W_O']}) (got None)")
            _check_shape("W_O", arrays["W_O"], shapes["W_O"], "(heads*d_v, d_model)")
        elif arrays["W_O"] is not None:
            raise ShapeError("W_O was given but the spec has output_projection=False; pass spec.replace(output_projection=True)")
        for name in ("b_Q", "b_K", "b_V", "b_O"):
            wanted = spec.bias and name in shapes
            if wanted and arrays[name] is None:
                raise ShapeError(f"{name} is required by the spec (bias=True, shape {shapes[name]}) (got None)")
            if not wanted and arrays[name] is not None:
                raise ShapeError(f"{name} was given but the spec has no such bias (bias={spec.bias})")
            if wanted and not _bias_shape_ok(arrays[name], shapes[name][1]):
                k = shapes[name][1]
                raise ShapeError(f"{name} must have shape (1, {k}) or ({k},) (got {tuple(arrays[name].shape)})")
        heads, d_k, d_v, scale_value = spec.heads, spec.d_k, spec.d_v, spec.scale_float
        causal, positions, base = spec.causal, spec.positions, spec.position_base
        if positions in ("rope", "alibi"):  # until the position hooks of the numeric layer are wired
            raise SpecError(f"the numeric backend does not support positions={positions!r} yet")
        mask_arr = None if spec.mask is None else xp.asarray(spec.mask, dtype=xp.bool, device=array_api_compat.device(X))
    else:
        if not isinstance(heads, numbers.Integral) or isinstance(heads, bool) or heads < 1:
            raise SpecError(f"heads must be a positive integer (got {heads!r})")
        if not isinstance(causal, bool):
            raise SpecError(f"causal must be True or False (got {causal!r})")
        if positions not in (None, "sinusoidal"):
            raise SpecError(f"positions must be None or 'sinusoidal' (got {positions!r})")
        W_Q, W_K, W_V, W_O = (arrays[k] for k in ("W_Q", "W_K", "W_V", "W_O"))
        if W_Q.shape[0] != d_model or W_Q.shape[1] % heads:
            raise ShapeError(f"W_Q must have shape (d_model, heads*d_k) with d_model={d_model}, heads={heads} "
                             f"(got {tuple(W_Q.shape)})")
        _check_shape("W_K", W_K, W_Q.shape, "the shape of W_Q")
        if W_V.shape[0] != d_model or W_V.shape[1] % heads:
            raise ShapeError(f"W_V must have shape (d_model, heads*d_v) with d_model={d_model}, heads={heads} "
                             f"(got {tuple(W_V.shape)})")
        if W_O is not None and W_O.shape[0] != W_V.shape[1]:
            raise ShapeError(f"W_O must have shape (heads*d_v, d_out) with heads*d_v={W_V.shape[1]} (got {tuple(W_O.shape)})")
        widths = {"b_Q": W_Q.shape[1], "b_K": W_K.shape[1], "b_V": W_V.shape[1], "b_O": None if W_O is None else W_O.shape[1]}
        for name, k in widths.items():
            if arrays[name] is None:
                continue
            if k is None:
                raise ShapeError("b_O was given without W_O; an output bias needs an output projection")
            if not _bias_shape_ok(arrays[name], k):
                raise ShapeError(f"{name} must have shape (1, {k}) or ({k},) (got {tuple(arrays[name].shape)})")
        d_k, d_v = int(W_Q.shape[1]) // heads, int(W_V.shape[1]) // heads
        scale_value = AttentionSpec(n=1, d_model=1, d_k=d_k, scale=_check_scale(scale)).scale_float
        base = DEFAULT_POSITION_BASE
        mask_arr = None
        if mask is not None:
            mask = array_api_compat.to_device(asarray_in(xp, mask), array_api_compat.device(X))  # numpy masks ok
            if _dtype_name(xp, mask) != "bool":
                raise ShapeError(f"mask must be a boolean array with True = may attend (got dtype {_dtype_name(xp, mask)}); "
                                 "an additive float mask (0 / -inf) converts with mask = (m == 0)")
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
            mask_arr = mask
    if G is not None:
        d_out = arrays["W_O"].shape[1] if arrays["W_O"] is not None else heads * d_v
        expected = (*batch_shape, n, d_out)
        if tuple(arrays["G"].shape) != expected:
            got = tuple(arrays["G"].shape)
            raise ShapeError(f"G must have the shape of the output Y, (..., n, d_out) = {expected} (got {got})")
    layer = _Layer(xp=xp, n=n, d_model=d_model, heads=int(heads), d_k=int(d_k), d_v=int(d_v), scale=float(scale_value),
                   causal=bool(causal), mask=mask_arr, positions=positions, base=int(base), batch_shape=batch_shape,
                   device=array_api_compat.device(X))
    return layer, arrays


def _broadcast_shapes(a: tuple, b: tuple) -> tuple:
    out = []
    for x, y in zip(reversed((1,) * (len(b) - len(a)) + a), reversed((1,) * (len(a) - len(b)) + b), strict=True):
        if x != y and 1 not in (x, y):
            raise ValueError(f"{a} and {b} do not broadcast")
        out.append(max(x, y))
    return tuple(reversed(out))


def _split_heads(xp: ModuleType, M, heads: int):
    """(..., n, H·w) -> (..., H, n, w)."""
    *batch, n, width = M.shape
    b = len(batch)
    M = xp.reshape(M, (*batch, n, heads, width // heads))
    return xp.permute_dims(M, (*range(b), b + 1, b, b + 2))


def _merge_heads(xp: ModuleType, M):
    """(..., H, n, w) -> (..., n, H·w)."""
    *batch, heads, n, width = M.shape
    b = len(batch)
    M = xp.permute_dims(M, (*range(b), b + 1, b, b + 2))
    return xp.reshape(M, (*batch, n, heads * width))


def _affine(xp: ModuleType, M, W, b):
    out = xp.matmul(M, W)
    return out if b is None else out + xp.reshape(b, (W.shape[1],))


def _inputs_with_positions(layer: _Layer, X):
    if layer.positions != "sinusoidal":
        return X
    xp = layer.xp
    pe = sinusoidal_positions(layer.n, layer.d_model, layer.base, xp=xp, dtype=X.dtype)  # (n, d)
    return X + array_api_compat.to_device(pe, layer.device)


def _projections(layer: _Layer, a: dict):
    """``X_in`` and the per-head ``Q, K, V`` of shape (..., H, n, d_k|d_v)."""
    xp = layer.xp
    X_in = _inputs_with_positions(layer, a["X"])  # (..., n, d)
    Q = _split_heads(xp, _affine(xp, X_in, a["W_Q"], a.get("b_Q")), layer.heads)  # (..., H, n, d_k)
    K = _split_heads(xp, _affine(xp, X_in, a["W_K"], a.get("b_K")), layer.heads)  # (..., H, n, d_k)
    V = _split_heads(xp, _affine(xp, X_in, a["W_V"], a.get("b_V")), layer.heads)  # (..., H, n, d_v)
    return X_in, Q, K, V


def _allowed_block(layer: _Layer, i0: int, i1: int, j0: int, j1: int):
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


def _plain_core(layer: _Layer, Q, K, V, *, want_weights: bool):
    """Z_h = softmax(c Q_h K_hᵀ) V_h for all heads at once; returns Z and (optionally) A."""
    xp = layer.xp
    n = layer.n
    S = scores(Q, K, layer.scale, _allowed_block(layer, 0, n, 0, n))  # (..., H, n, n)
    P, total, _ = _shifted_exp(xp, S)
    if want_weights:
        A = _safe_divide(xp, P, total, inplace=True)  # (..., H, n, n), the only n × n array kept
        return xp.matmul(A, V), A
    return _safe_divide(xp, xp.matmul(P, V), total), None  # (..., H, n, d_v)


def _output(layer: _Layer, a: dict, Z_heads):
    xp = layer.xp
    Z = _merge_heads(xp, Z_heads)  # (..., n, H·d_v)
    return Z if a.get("W_O") is None else _affine(xp, Z, a["W_O"], a.get("b_O"))


def _block_size(layer: _Layer, block_size) -> int:
    """The block size asked for, or the default: large blocks (few, big matrix products) within a fixed budget."""
    if block_size is None:
        lanes = math.prod(layer.batch_shape) * layer.heads
        size = DEFAULT_BLOCK_SIZE
        while size > 64 and lanes * size * size > BLOCK_ELEMENTS:
            size //= 2
        return size
    if not isinstance(block_size, numbers.Integral) or isinstance(block_size, bool) or block_size < 1:
        raise SpecError(f"block_size must be a positive integer or None (got {block_size!r})")
    return int(block_size)


def attention(
    X, W_Q, W_K, W_V, W_O=None, *,
    b_Q=None, b_K=None, b_V=None, b_O=None,
    spec: AttentionSpec | None = None,
    heads: int = 1, causal: bool = False, mask=None, scale: Any = "sqrt", positions: str | None = None,
    return_weights: bool = True, block_size: int | None = None, backend: str | None = None,
):
    """Forward pass of a (multi-head) self-attention layer on NumPy, CuPy or PyTorch arrays.

    Parameters
    ----------
    X : (n, d_model) or (..., n, d_model) array
        Token vectors; leading dimensions are batch dimensions.
    W_Q, W_K : (d_model, heads*d_k) arrays
    W_V : (d_model, heads*d_v) array
    W_O : (heads*d_v, d_out) array, optional
        Output projection applied to the concatenated heads (required by a spec with
        ``output_projection=True``). Without it ``Y`` is the concatenation ``Z``.
    b_Q, b_K, b_V, b_O : (1, k) or (k,) arrays, optional
        Biases added after each projection.
    spec : AttentionSpec, optional
        Decides heads, mask, scale and positions and checks every shape; then the keyword
        arguments ``heads, causal, mask, scale, positions`` must stay at their defaults.
    heads, causal, mask, scale, positions
        Used without a spec, with the meanings of :class:`~attnsym.AttentionSpec`. ``mask``
        is a bool array of shape (n, n) or (..., n, n), ``True`` = may attend.
    return_weights : bool, default True
        Also return the attention weights ``A``.
    block_size : int, optional
        Use the memory-lean blockwise path with this block size (queries and keys); needs
        ``return_weights=False``. Without it, the blockwise path is taken automatically when
        ``return_weights=False`` and ``n >= AUTO_BLOCKWISE_N`` (or ``n`` exceeds one default
        block), with blocks of ``DEFAULT_BLOCK_SIZE`` halved until
        ``batch·heads·block² <= BLOCK_ELEMENTS``.
    backend : {"numpy", "cupy", "torch"}, optional
        Convert the inputs to this library first (CuPy falls back to NumPy with a warning
        when it cannot run here). By default the inputs' own library is used.

    Returns
    -------
    Y : (..., n, d_out) array
        The output, in the input's array type and dtype.
    A : (..., n, n) array, or (..., heads, n, n) when heads > 1
        Only with ``return_weights=True``. Rows sum to 1, or are all 0 for a query that may
        attend to no key.

    Raises
    ------
    ShapeError
        A shape that does not fit the spec / the other arrays, a non-float dtype, mixed
        dtypes, or non-finite values.
    SpecError
        Invalid heads, scale, positions, block_size, or a spec combined with the keywords.
    BackendError
        Arrays from different libraries.

    See Also
    --------
    attention_vjp : the analytic backward pass.
    attnsym.symbolic.attention : the same layer as exact SymPy matrices.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((3, 4))
    >>> W = np.eye(4)
    >>> Y, A = attention(X, W, W, W, causal=True)
    >>> Y.shape, A.shape
    ((3, 4), (3, 3))
    >>> A.sum(axis=-1).round(12), bool(A[0, 1] == 0)
    (array([1., 1., 1.]), True)
    >>> Y2 = attention(X, W, W, W, causal=True, return_weights=False, block_size=2)
    >>> bool(np.allclose(Y, Y2, rtol=1e-12, atol=1e-12))
    True
    """
    biases = {"b_Q": b_Q, "b_K": b_K, "b_V": b_V, "b_O": b_O}
    layer, a = _resolve(X, W_Q, W_K, W_V, W_O, biases, spec=spec, heads=heads, causal=causal, mask=mask,
                        scale=scale, positions=positions, backend=backend)
    if not isinstance(return_weights, bool):
        raise SpecError(f"return_weights must be True or False (got {return_weights!r})")
    if return_weights and block_size is not None:
        raise SpecError("block_size selects the blockwise path, which never stores the weights; "
                        "pass return_weights=False with it (got return_weights=True)")
    _, Q, K, V = _projections(layer, a)
    if not return_weights and (block_size is not None or layer.n > min(AUTO_BLOCKWISE_N - 1, _block_size(layer, None))):
        from .blockwise import blockwise_core

        Z_heads, _ = blockwise_core(layer, Q, K, V, _block_size(layer, block_size))
        return _output(layer, a, Z_heads)
    Z_heads, A = _plain_core(layer, Q, K, V, want_weights=return_weights)
    Y = _output(layer, a, Z_heads)
    if not return_weights:
        return Y
    return Y, (A[..., 0, :, :] if layer.heads == 1 else A)
