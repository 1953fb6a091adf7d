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

from typing import Any

import array_api_compat

from .._checks import boolean, is_int, positive_real
from .._typing import Array
from ..errors import ShapeError, SpecError
from ..spec import AttentionSpec
from . import _fast, blockwise
from ._inputs import amax, bool_mask, dtype_name, float_inputs
from .binding import QK_NORM_VARIANTS, _check_gains, bind, window_band
from .layer import (
    AUTO_BLOCKWISE_N,
    BLOCK_ELEMENTS,
    DEFAULT_BLOCK_SIZE,
    BoundLayer,
    block_size_for,
    expand_kv,
    head_rows,
    merge_heads,
    output,
    plain_core,
    projections,
    safe_divide,
    shifted_exp,
)

__all__ = ["AUTO_BLOCKWISE_N", "BLOCK_ELEMENTS", "DEFAULT_BLOCK_SIZE", "attention", "head_attention", "scores",
           "softmax"]



# ---------------------------------------------------------------------------- scores and softmax
def scores(Q, K, scale: float = 1.0, allowed=None):
    """Scaled scores ``S = scale · Q Kᵀ`` with ``-inf`` where ``allowed`` is False.

    Twin of :func:`attnsym.symbolic.scores`.

    Parameters
    ----------
    Q : (..., n, d_k) array
    K : (..., m, d_k) array
        float32 or float64, finite, one dtype.
    scale : float, default 1.0
        The factor ``c`` (``1/sqrt(d_k)`` in the usual layer), a positive finite number.
    allowed : (..., n, m) bool array, optional
        ``True`` = query ``i`` may attend to key ``j``.

    Returns
    -------
    (..., n, m) array

    Raises
    ------
    ShapeError
        A non-float or non-finite input, a non-boolean ``allowed``, or finite inputs whose
        scores overflow the dtype.
    SpecError
        ``scale`` not a positive finite number.

    Examples
    --------
    >>> scores(np.array([[1.0, 2.0]]), np.array([[3.0, 4.0], [1.0, 0.0]]), 0.5)
    array([[5.5, 0.5]])
    """
    scale = positive_real("scale", scale)
    xp, a, _ = float_inputs({"Q": Q, "K": K})
    S = xp.matmul(a["Q"] * scale, xp.matrix_transpose(a["K"]))  # (..., n, m)
    if allowed is not None:
        allowed = bool_mask(xp, "allowed", allowed, array_api_compat.device(S))
        S = xp.where(allowed, S, -xp.inf)
        ok = xp.logical_or(xp.isfinite(S), xp.logical_not(allowed))
    else:
        ok = xp.isfinite(S)
    if not bool(xp.all(ok)):
        raise ShapeError(f"the scores scale·Q Kᵀ overflow {dtype_name(S)} for these finite inputs (|Q| up to "
                         f"{amax(xp, a['Q']):.3g}, |K| up to {amax(xp, a['K']):.3g}, scale {scale:.3g}); "
                         "scale Q or K down" + (" or compute in float64" if dtype_name(S) == "float32" else ""))
    return S


def softmax(S, allowed=None, axis: int = -1):
    """Numerically stable softmax along ``axis``: subtract the maximum, exponentiate, normalise.

    Masked entries (``allowed`` False, or a score of ``-inf``) get weight exactly 0; a slice
    with no allowed entry gets all zeros (not NaN, not uniform — see :mod:`attnsym.spec`).
    Twin of :func:`attnsym.symbolic.row_softmax`.

    Parameters
    ----------
    S : array
        float32 or float64 scores; ``-inf`` means masked, ``+inf`` and NaN are refused.
    allowed : bool array, optional
        Broadcastable to ``S``; ``True`` = may attend.
    axis : int, default -1

    Raises
    ------
    ShapeError
        A non-float ``S`` (integers, float16, complex), ``+inf``/NaN, a non-boolean ``allowed``.
    SpecError
        ``axis`` not an integer axis of ``S``.

    Examples
    --------
    >>> softmax(np.array([[1000.0, 1000.0], [0.0, -np.inf]]))
    array([[0.5, 0.5],
           [1. , 0. ]])
    >>> softmax(np.zeros((1, 2)), allowed=np.array([[False, False]]))
    array([[0., 0.]])
    """
    xp, a, _ = float_inputs({"S": S}, neg_inf=("S",))
    S = a["S"]
    if not is_int(axis) or not -S.ndim <= axis < max(S.ndim, 1):
        raise SpecError(f"axis must be an integer axis of S, from {-S.ndim} to {S.ndim - 1} (got {axis!r})")
    if allowed is not None:
        S = xp.where(bool_mask(xp, "allowed", allowed, array_api_compat.device(S)), S, -xp.inf)
    else:
        S = S + 0.0  # never modify the input
    moved = axis not in (-1, S.ndim - 1)
    if moved:  # after masking: allowed has the layout of S, not of the moved axes
        S = xp.moveaxis(S, axis, -1)
    P, total, _ = shifted_exp(xp, S)
    A = safe_divide(xp, P, total)
    return xp.moveaxis(A, -1, axis) if moved else A


# ---------------------------------------------------------------------------- the layer
def attention(
    X: Array, W_Q: Array, W_K: Array, W_V: Array, W_O: Array | None = None, *,
    b_Q: Array | None = None, b_K: Array | None = None, b_V: Array | None = None, b_O: Array | None = None,
    spec: AttentionSpec | None = None,
    heads: int = 1, causal: bool = False, mask: Any = None, scale: Any = "sqrt", positions: str | None = None,
    return_weights: bool = True, block_size: int | None = None, backend: str | None = None,
    g_Q: Array | None = None, g_K: Array | None = None, s_sink: Array | None = None, W_G: Array | None = None,
) -> Any:
    """Forward pass of a (multi-head) self-attention layer on NumPy, CuPy or PyTorch arrays.

    Parameters
    ----------
    X : (n, d_model) or (..., n, d_model) array
        Token vectors; leading dimensions are batch dimensions.
    W_Q : (d_model, heads*d_k) array
    W_K : (d_model, kv_heads*d_k) array
    W_V : (d_model, kv_heads*d_v) array
        ``kv_heads = heads`` unless the spec has grouped-query attention (``spec.kv_heads``).
    W_O : (heads*d_v, d_out) array, optional
        Output projection applied to the concatenated heads (required by a spec with
        ``output_projection=True``). Without it ``Y`` is the concatenation ``Z``.
    b_Q, b_K, b_V, b_O : (1, k) or (k,) arrays, optional
        Biases added after each projection.
    spec : AttentionSpec, optional
        Decides heads, mask, scale and positions and checks every shape; then the keyword
        arguments ``heads, causal, mask, scale, positions`` must stay at their defaults. Every
        field is honoured: ``kv_heads`` (query head ``h`` reads key/value head
        ``h // (heads // kv_heads)``), ``window`` (ANDed with the mask), ``softcap``
        (``t·tanh(s/t)`` after scale and ALiBi bias, before the mask), ``qk_norm`` (with ``g_Q``,
        ``g_K``; per head or over the whole projection, ``qk_norm_scope``, with the gain offset
        ``qk_norm_offset``), ``rope_scaling``, ``bias="qkv"``.
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
        ``batch·heads·block² <= BLOCK_ELEMENTS``. A spec with ``softcap`` always takes the
        plain path (the blockwise kernels do not soft-cap): ``block_size`` is then refused.
    backend : {"numpy", "cupy", "torch"}, optional
        Convert the inputs to this library first (CuPy falls back to NumPy with a warning
        when it cannot run here). By default the inputs' own library is used.
    g_Q, g_K : (w,) or (1, w) arrays, optional
        The QK-norm gains, required exactly when ``spec.qk_norm``: ``w = d_k`` per head, or the
        whole projection's ``heads·d_k`` (``g_Q``) and ``kv_heads·d_k`` (``g_K``) with
        ``qk_norm_scope="whole_projection"``; the norm's gain is ``qk_norm_offset + g``.
    s_sink : (heads,) or (1, heads) array, optional
        The sink logits, required exactly when ``spec.sink`` (gpt-oss): each row's softmax
        denominator gains ``exp(s_h)``, and the rows of ``A`` sum to ``1 − π`` (kept, never
        renormalised). Such a spec takes the plain path.
    W_G : (d_model, heads*d_v) array, optional
        The output gate's weights, required exactly when ``spec.output_gate`` (Qwen3-Next): the
        concatenated head outputs are multiplied elementwise by ``σ(X_in W_G)`` before ``W_O``.

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
    biases = {"b_Q": b_Q, "b_K": b_K, "b_V": b_V, "b_O": b_O, "g_Q": g_Q, "g_K": g_K, "s_sink": s_sink, "W_G": W_G}
    layer, a = bind(X, W_Q, W_K, W_V, W_O, biases, spec=spec, heads=heads, causal=causal, mask=mask,
                    scale=scale, positions=positions, backend=backend,
                    implements=("chunk", "sink", "output_gate", *QK_NORM_VARIANTS),
                    caller="attnsym.numeric.attention")
    return_weights = boolean("return_weights", return_weights)
    if return_weights and block_size is not None:
        raise SpecError("block_size selects the blockwise path, which never stores the weights; "
                        "pass return_weights=False with it (got return_weights=True)")
    refuse_blockwise(layer, block_size)
    if not return_weights and plain_only(layer) is None and (
            block_size is not None or layer.n > min(AUTO_BLOCKWISE_N - 1, block_size_for(layer, None))):
        with _fast.session(layer, True):  # NumPy's lean path: BLAS at one thread, the worker pool in its place
            _, Q, K, V = projections(layer, a)
            Z_heads, _ = blockwise.blockwise_core(layer, Q, K, V, block_size_for(layer, block_size))
            return output(layer, a, Z_heads)
    _, Q, K, V = projections(layer, a)
    Z_heads, A = plain_core(layer, Q, K, V, want_weights=return_weights)
    Y = output(layer, a, Z_heads)
    if not return_weights:
        return Y
    return Y, (A[..., 0, :, :] if layer.heads == 1 else A)


def plain_only(layer: BoundLayer) -> str | None:
    """The spec field only the plain path implements (``softcap``, ``sink``), as ``name=value``, or None."""
    if layer.spec.softcap is not None:
        return f"softcap={layer.spec.softcap}"
    return "sink=True" if layer.spec.sink else None


def refuse_blockwise(layer: BoundLayer, block_size: int | None) -> None:
    """A clear SpecError when ``block_size`` asks the blockwise path for a field it does not implement."""
    field = plain_only(layer)
    if block_size is not None and field is not None:
        raise SpecError(f"block_size selects the blockwise path, which does not implement {field.split('=')[0]} "
                        f"(got {field}); leave block_size=None (the plain path implements it)")


def head_attention(Q: Array, K: Array, V: Array, allowed: Array | None = None, *, spec: AttentionSpec,
                   g_Q: Array | None = None, g_K: Array | None = None, positions: Array | None = None,
                   return_weights: bool = True) -> Any:
    """One layer's attention from projected per-head ``Q``, ``K``, ``V``: the spec's steps after the projections.

    In order: QK-norm (``spec.qk_norm``, gains ``g_Q``, ``g_K``), RoPE (``spec.positions="rope"``,
    with ``rope_pairing``, ``rotary_pct``, ``rope_scaling``), scores ``c·Q Kᵀ`` (``c`` the spec's
    scale), the ALiBi bias, soft-capping ``t·tanh(s/t)``, the mask — ``allowed`` AND the spec's
    ``causal``, ``window`` and ``mask`` — and the shared stable softmax (a fully masked row gets
    all-zero weights and output), then ``Z_h = A_h V_{h // (heads // kv_heads)}`` (grouped-query
    sharing). The same code as :func:`attention`'s plain path, so a model that projects its own
    ``Q``, ``K``, ``V`` (fused layouts, per-family names) gets the spec's exact attention.

    Shape legend: ``B…`` batch dimensions (any number, also none), ``H = spec.heads``,
    ``H_kv = spec.kv_heads``, ``n`` tokens (any ``n``; the spec's own ``n`` matters only for an
    explicit ``spec.mask``, which then must be ``(n, n)``).

    Parameters
    ----------
    Q : (B…, H, n, d_k) array
        Projected queries (biases included), before QK-norm and RoPE.
    K : (B…, H_kv, n, d_k) array
        Projected keys, before QK-norm and RoPE.
    V : (B…, H_kv, n, d_v) array
        Projected values.
    allowed : (B…, n, n) or (n, n) bool array, optional
        ``True`` = query ``i`` may attend to key ``j`` (a padding pattern, a causal pattern or
        both); ANDed with the spec's own pattern.
    spec : AttentionSpec
        The layer; its ``d_k``, ``d_v``, ``heads``, ``kv_heads`` must fit the arrays.
    g_Q, g_K : (w,) or (1, w) arrays, optional
        The QK-norm gains, required exactly when ``spec.qk_norm``: ``w = d_k`` per head, or the
        whole projection's ``heads·d_k`` (``g_Q``) and ``kv_heads·d_k`` (``g_K``) with
        ``qk_norm_scope="whole_projection"``; the norm's gain is ``qk_norm_offset + g``.
    positions : (B…, n) or (n,) array of integers, optional
        Token positions for RoPE and ALiBi (ALiBi's bias is ``−m_h |p_i − p_j|``); default
        ``0 … n−1``. A left-padded batch passes its position ids here.
    return_weights : bool, default True
        Also return ``A``.

    Returns
    -------
    Z : (B…, n, H·d_v) array
        The heads' outputs, concatenated (head ``h`` in columns ``h·d_v … (h+1)·d_v − 1``): the
        input of the output projection ``W_O``.
    A : (B…, H, n, n) array
        Only with ``return_weights=True``; rows sum to 1, or to 0 for a fully masked row.

    Raises
    ------
    ShapeError
        Shapes that do not fit the spec, mixed or non-float dtypes, non-finite values, a
        non-boolean ``allowed``.
    SpecError
        ``spec`` not an AttentionSpec.

    See Also
    --------
    attention : the whole layer, from ``X`` and the weights.

    Examples
    --------
    >>> spec = AttentionSpec(n=3, d_model=8, heads=4, kv_heads=2, causal=True, window=2, softcap=5.0,
    ...                      positions="rope", rope_scaling={"rope_type": "linear", "factor": 2.0})
    >>> rng = np.random.default_rng(0)
    >>> Q = rng.standard_normal((1, 4, 3, 2))
    >>> K, V = rng.standard_normal((2, 1, 2, 3, 2))
    >>> Z, A = head_attention(Q, K, V, spec=spec)
    >>> Z.shape, A.shape
    ((1, 3, 8), (1, 4, 3, 3))
    >>> A[0, 0] > 0  # causal, window 2: query 3 sees keys 2 and 3 only
    array([[ True, False, False],
           [ True,  True, False],
           [False,  True,  True]])
    >>> bool(np.allclose(A.sum(axis=-1), 1))
    True
    """
    if not isinstance(spec, AttentionSpec):
        raise SpecError(f"spec must be an AttentionSpec (got {spec!r} of type {type(spec).__name__})")
    spec.refuse_variants("attnsym.numeric.head_attention", implemented=("chunk", *QK_NORM_VARIANTS))
    return_weights = boolean("return_weights", return_weights)
    xp, a, dtype = float_inputs({"Q": Q, "K": K, "V": V, "g_Q": g_Q, "g_K": g_K})
    Q, K, V = a["Q"], a["K"], a["V"]
    if Q.ndim < 3:
        raise ShapeError(f"Q must have shape (..., heads, n, d_k) = (..., {spec.heads}, n, {spec.d_k}) "
                         f"(got {tuple(Q.shape)})")
    *batch, _, n, _ = (int(s) for s in Q.shape)
    batch_shape = tuple(batch)
    for name, M, h, w in (("Q", Q, spec.heads, spec.d_k), ("K", K, spec.kv_heads, spec.d_k),
                          ("V", V, spec.kv_heads, spec.d_v)):
        if tuple(M.shape) != (*batch_shape, h, n, w):
            heads = "heads" if name == "Q" else "kv_heads"
            raise ShapeError(f"{name} must have shape (..., {heads}, n, {'d_v' if name == 'V' else 'd_k'}) = "
                             f"{(*batch_shape, h, n, w)} (got {tuple(M.shape)})")
    if spec.n != n:
        if spec.mask is not None:
            raise ShapeError(f"the spec's explicit mask is ({spec.n}, {spec.n}) but Q holds n={n} tokens")
        spec = spec.replace(n=n)
    _check_gains(spec, a)
    device = array_api_compat.device(Q)
    runtime = None if spec.mask is None else xp.asarray(spec.mask, dtype=xp.bool, device=device)
    band = window_band(spec)
    if band is not None:
        band = xp.asarray(band, device=device)
        runtime = band if runtime is None else xp.logical_and(runtime, band)
    if allowed is not None:
        allowed = bool_mask(xp, "allowed", allowed, device)
        if allowed.ndim < 2 or tuple(allowed.shape[-2:]) != (n, n) or allowed.ndim - 2 > len(batch_shape):
            raise ShapeError(f"allowed must have shape (..., n, n) = (..., {n}, {n}) with at most X's batch "
                             f"dimensions {batch_shape} (got {tuple(allowed.shape)})")
        runtime = allowed if runtime is None else xp.logical_and(runtime, allowed)
    p = None
    if positions is not None:
        p = xp.asarray(positions, device=device)
        if p.ndim < 1 or int(p.shape[-1]) != n:
            raise ShapeError(f"positions must have shape (..., n) = (..., {n}) (got {tuple(p.shape)})")
        p = xp.astype(p, xp.float64)
    layer = BoundLayer(spec=spec, xp=xp, batch_shape=batch_shape, dtype=dtype, device=device, mask=runtime,
                       positions=p)
    Qh = head_rows(layer, a, merge_heads(xp, Q), "Q")  # (..., H, n, d_k)
    Kh = head_rows(layer, a, merge_heads(xp, K), "K")  # (..., H, n, d_k), repeated over each group
    Vh = expand_kv(xp, V, spec.kv_group)  # (..., H, n, d_v)
    Z_heads, A = plain_core(layer, Qh, Kh, Vh, want_weights=return_weights)
    Z = merge_heads(xp, Z_heads)  # (..., n, H·d_v)
    return (Z, A) if return_weights else Z
