"""Analytic backward pass (vector-Jacobian product) of self-attention, on the array API.

Given the upstream gradient ``G = ∂L/∂Y`` the chain rule, read backwards through the forward
pass of :mod:`attnsym.numeric.forward`, gives (per head ``h``, scale ``c``)

.. math::

    dW_O = Z^\\top G,\\quad db_O = \\mathbf 1^\\top G,\\quad dZ = G W_O^\\top,\\qquad
    dV_h = A_h^\\top dZ_h,\\quad dA_h = dZ_h V_h^\\top,\\\\
    dS_h = A_h \\odot \\big(dA_h - \\operatorname{rowsum}(dA_h \\odot A_h)\\big),\\quad
    dQ_h = c\\, dS_h K_h,\\quad dK_h = c\\, dS_h^\\top Q_h,\\\\
    dW_\\bullet = X_{in}^\\top d\\bullet,\\quad db_\\bullet = \\mathbf 1^\\top d\\bullet,\\quad
    dX = dQ\\, W_Q^\\top + dK\\, W_K^\\top + dV\\, W_V^\\top .

``dS`` is the softmax Jacobian ``diag(a) − a aᵀ`` applied to each row of ``dA`` without ever
forming it; the same identities are derived symbolically by ``attnsym.gradients``. Weight and
bias gradients are summed over batch dimensions (one set of parameters serves every batch
element). Fully masked rows have ``A = 0`` and so contribute zero, finite gradients.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from .._typing import Array
from ..errors import ShapeError
from ..spec import AttentionSpec
from . import _fast
from ._inputs import amax, finite_result
from .backend import matmul, matmuls
from .binding import QK_NORM_VARIANTS, bind
from .blockwise import blockwise_core, blockwise_core_vjp, keeping
from .forward import plain_only, refuse_blockwise
from .layer import (
    AUTO_BLOCKWISE_N,
    BoundLayer,
    affine,
    block_scores,
    block_size_for,
    dscores,
    merge_heads,
    output_gate,
    plain_core,
    projections,
    reduce_kv,
    sink_softmax,
    split_heads,
)
from .norms import rms_norm_vjp

__all__ = ["attention_vjp"]


def _plain_core_vjp(layer: BoundLayer, Q, K, V, A, dZ, grads: dict):
    """dQ, dK, dV per head from dZ (all (..., H, n, ·)), through the stored weights A (..., H, n, n).

    With ``softcap = t`` the capped score is ``t·tanh(s/t)``, whose derivative ``1 − tanh²(s/t)``
    multiplies ``dS`` (recomputed from the capped scores; 0 where masked). With a sink the same
    ``dS = A ⊙ (dA − rowsum)`` holds (``A``'s rows sum to ``1 − π``), and the sink logit gets
    ``ds_h = −Σ π_i rowsum_i`` over its head's rows (written to ``grads["s_sink"]``).
    """
    xp = layer.xp
    dV = xp.matmul(xp.matrix_transpose(A), dZ)  # (..., H, n, d_v)
    dA = xp.matmul(dZ, xp.matrix_transpose(V))  # (..., H, n, n)
    rowsum = xp.sum(dA * A, axis=-1, keepdims=True)  # (..., H, n, 1)
    if layer.spec.sink:
        pi = sink_softmax(xp, block_scores(layer, Q * layer.scale, K, 0, layer.n, 0, layer.n), layer.sinks)[1]
        ds = -xp.sum(xp.reshape(pi * rowsum, (-1, layer.heads, layer.n)), axis=(0, 2))  # (H,)
        grads["s_sink"] = xp.reshape(ds, tuple(layer.sinks.shape))
    dS = dscores(A, dA, rowsum)  # (..., H, n, n)
    cap = layer.spec.softcap
    if cap is not None:
        T = block_scores(layer, Q * layer.scale, K, 0, layer.n, 0, layer.n) / cap  # tanh(s/t), -inf where masked
        dS = dS * xp.where(xp.isfinite(T), 1.0 - T * T, 0.0)
    dQ = layer.scale * xp.matmul(dS, K)  # (..., H, n, d_k)
    dK = layer.scale * xp.matmul(xp.matrix_transpose(dS), Q)  # (..., H, n, d_k)
    return dQ, dK, dV


def _rms_norm_vjp(layer: BoundLayer, a: dict, X_in, which: str, dY):
    """``dX`` and ``dg`` of the QK-norm of the projection ``which``: :func:`~attnsym.numeric.norms.rms_norm_vjp`
    of each head's rows before the norm, or of each whole projection row (``qk_norm_scope="whole_projection"``),
    as :func:`~attnsym.numeric.layer.head_rows` normed them; ``dY`` and ``dX`` are per head (..., h, n, d_k)."""
    xp, spec = layer.xp, layer.spec
    heads = spec.heads if which == "Q" else spec.kv_heads
    M = affine(xp, X_in, a[f"W_{which}"], a.get(f"b_{which}"))  # (..., n, h·d_k) before the norm
    if spec.qk_norm_scope == "whole_projection":
        dM, dg = rms_norm_vjp(M, a[f"g_{which}"], spec.qk_norm_eps, merge_heads(xp, dY), spec.qk_norm_offset)
        return split_heads(xp, dM, heads), dg
    return rms_norm_vjp(split_heads(xp, M, heads), a[f"g_{which}"], spec.qk_norm_eps, dY, spec.qk_norm_offset)


def _weight_grad_operands(xp: ModuleType, M, dM) -> tuple[Any, Any]:
    """The product whose value is Σ over batch of Mᵀ dM, for M (..., n, p) and dM (..., n, q): (p, n·…), (n·…, q)."""
    return xp.matrix_transpose(xp.reshape(M, (-1, M.shape[-1]))), xp.reshape(dM, (-1, dM.shape[-1]))


def _weight_grad(xp: ModuleType, M, dM):
    """Σ over batch of Mᵀ dM, for M (..., n, p) and dM (..., n, q) -> (p, q)."""
    return matmul(xp, *_weight_grad_operands(xp, M, dM))


def _bias_grad(xp: ModuleType, dM, like):
    """Σ over batch and tokens of dM, shaped like the bias that was given."""
    return xp.reshape(xp.sum(xp.reshape(dM, (-1, dM.shape[-1])), axis=0), tuple(like.shape))


def attention_vjp(
    X: Array, W_Q: Array, W_K: Array, W_V: Array, G: Array, W_O: Array | None = None, *,
    b_Q: Array | None = None, b_K: Array | None = None, b_V: Array | None = None, b_O: Array | None = None,
    spec: AttentionSpec | None = None,
    heads: int = 1, causal: bool = False, mask: Any = None, scale: Any = "sqrt", positions: str | None = None,
    block_size: int | None = None, backend: str | None = None,
    g_Q: Array | None = None, g_K: Array | None = None, s_sink: Array | None = None, W_G: Array | None = None,
) -> dict[str, Any]:
    """Gradients of ``⟨G, Y⟩`` with respect to ``X`` and every weight and bias.

    That is the vector-Jacobian product of :func:`~attnsym.numeric.attention` with the
    upstream gradient ``G = ∂L/∂Y``: each entry is ``∂L/∂(name)`` for a loss with that ``G``.

    Parameters
    ----------
    X, W_Q, W_K, W_V, W_O, b_Q, b_K, b_V, b_O, spec, heads, causal, mask, scale, positions, backend, g_Q, g_K, s_sink, W_G
        As in :func:`~attnsym.numeric.attention`. Every spec field is differentiated through:
        grouped-query heads (a key/value head's gradient sums over the query heads it serves),
        the window and the chunk (masks), soft-capping (``1 − tanh²``), the QK-norm per head or over
        the whole projection, with its gain offset (gradients for ``g_Q``, ``g_K`` too), scaled RoPE
        (a rotation and YaRN's / LongRoPE's attention factor), a sink (a gradient for ``s_sink``)
        and an output gate ``Z ⊙ σ(X_in W_G)`` (a gradient for ``W_G``:
        ``dW_G = X_inᵀ (dZ ⊙ Z ⊙ σ (1 − σ))``, and ``dZ ⊙ σ`` flows on to the heads).
    G : (..., n, d_out) array
        Upstream gradient, the shape of ``Y``.
    block_size : int, optional
        Use the memory-lean blockwise backward with this block size. By default it is used
        when ``n`` exceeds one default block (see :func:`~attnsym.numeric.attention`), and for
        NumPy arrays from ``n >= AUTO_BLOCKWISE_N`` (their blockwise code,
        :mod:`attnsym.numeric._fast`, is then faster); below that the plain path, which keeps
        the weights from the forward pass, is faster. Without ``block_size`` NumPy's blockwise forward
        keeps its exponentials for the backward within ``attnsym.numeric._fast.KEEP_MAX_BYTES`` (64 MiB:
        ``n ≤ 4096``, one float32 head; 13 % faster at 4096); with it nothing ``n × n`` is held. A spec
        with ``softcap`` always takes the plain path (``block_size`` is then refused).

    Returns
    -------
    dict
        ``{"X": dX, "W_Q": ..., "W_K": ..., "W_V": ..., ["W_O", "b_Q", "b_K", "b_V", "b_O", "g_Q", "g_K"]}``:
        one entry per array that was given, each of that array's shape, type and dtype.
        Parameter gradients are summed over batch dimensions.

    Raises
    ------
    ShapeError, SpecError, BackendError
        As :func:`~attnsym.numeric.attention`; ``G`` must have the shape of ``Y``.

    Examples
    --------
    The gradient agrees with a central finite difference of ``⟨G, Y⟩``:

    >>> rng = np.random.default_rng(1)
    >>> X, G = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    >>> W_Q, W_K, W_V = (rng.standard_normal((2, 2)) for _ in range(3))
    >>> grads = attention_vjp(X, W_Q, W_K, W_V, G)
    >>> sorted(grads)
    ['W_K', 'W_Q', 'W_V', 'X']
    >>> from attnsym.numeric import attention
    >>> E = np.zeros_like(W_Q); E[0, 1] = 1e-6
    >>> f = lambda W: np.sum(G * attention(X, W, W_K, W_V, return_weights=False))
    >>> bool(abs((f(W_Q + E) - f(W_Q - E)) / 2e-6 - grads["W_Q"][0, 1]) < 1e-8)
    True
    """
    if G is None:
        raise ShapeError("G (the upstream gradient dL/dY, shape of Y) is required (got None)")
    biases = {"b_Q": b_Q, "b_K": b_K, "b_V": b_V, "b_O": b_O, "g_Q": g_Q, "g_K": g_K, "s_sink": s_sink, "W_G": W_G}
    layer, a = bind(X, W_Q, W_K, W_V, W_O, biases, spec=spec, heads=heads, causal=causal, mask=mask,
                    scale=scale, positions=positions, backend=backend, G=G,
                    implements=("chunk", "sink", "output_gate", *QK_NORM_VARIANTS),
                    caller="attnsym.numeric.attention_vjp")
    refuse_blockwise(layer, block_size)
    size = block_size_for(layer, block_size)
    lean = plain_only(layer) is None and (
        block_size is not None or layer.n > size or (layer.n >= AUTO_BLOCKWISE_N and _fast.usable(layer)))
    with _fast.session(layer, lean):  # NumPy's lean path: BLAS at one thread, the worker pool in its place
        grads = _gradients(layer, a, size, lean, keep=block_size is None)
    order = ["X", "W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O", "g_Q", "g_K", "s_sink", "W_G"]
    xp, G = layer.xp, a["G"]
    cause = lambda: f"|G| up to {amax(xp, G):.3g}, |X| up to {amax(xp, a['X']):.3g}"
    return {k: finite_result(xp, grads[k], f"the gradient d{k}", cause) for k in order if k in grads}


def _gradients(layer: BoundLayer, a: dict, size: int, lean: bool, keep: bool = False) -> dict[str, Any]:
    """Every gradient of ``⟨G, Y⟩`` (unchecked): the blockwise core when ``lean``, else the stored weights.

    ``keep``: a lean core may keep its exponentials for its backward (:func:`~attnsym.numeric.blockwise.keeping`).
    """
    xp = layer.xp
    X_in, Q, K, V = projections(layer, a)
    G = a["G"]
    grads: dict[str, Any] = {}
    if lean:
        kept = keeping(layer, Q, size) if keep else None
        Z_heads, lse = blockwise_core(layer, Q, K, V, size, kept=kept)
        core_vjp = lambda dZ_heads: blockwise_core_vjp(layer, Q, K, V, Z_heads, lse, dZ_heads, size, kept=kept)
    else:
        Z_heads, A = plain_core(layer, Q, K, V, want_weights=True)  # A: (..., H, n, n)
        core_vjp = lambda dZ_heads: _plain_core_vjp(layer, Q, K, V, A, dZ_heads, grads)
    gate = output_gate(layer, a, X_in)  # (..., n, H·d_v) or None
    if a.get("W_O") is not None:
        Z = merge_heads(xp, Z_heads)  # (..., n, H·d_v)
        grads["W_O"] = _weight_grad(xp, Z if gate is None else Z * gate, G)  # (H·d_v, d_out)
        if a.get("b_O") is not None:
            grads["b_O"] = _bias_grad(xp, G, a["b_O"])
        dZ = matmul(xp, G, xp.matrix_transpose(a["W_O"]))  # (..., n, H·d_v)
    else:
        dZ = G
    dX_gate = None
    if gate is not None:  # Z' = Z ⊙ σ(X_in W_G): the gate's pre-activation gets dZ' ⊙ Z ⊙ σ(1 − σ)
        d_pre = dZ * merge_heads(xp, Z_heads) * gate * (1.0 - gate)  # (..., n, H·d_v)
        grads["W_G"] = _weight_grad(xp, X_in, d_pre)  # (d_model, H·d_v)
        dX_gate = matmul(xp, d_pre, xp.matrix_transpose(a["W_G"]))  # (..., n, d_model)
        dZ = dZ * gate
    dQ, dK, dV = core_vjp(split_heads(xp, dZ, layer.heads))  # (..., H, n, ·), w.r.t. the rotated Q, K
    group = layer.spec.kv_group
    dK, dV = reduce_kv(xp, dK, group), reduce_kv(xp, dV, group)  # (..., H_kv, n, ·): sum over the query heads served
    dQ, dK = layer.rotate(dQ, adjoint=True), layer.rotate(dK, adjoint=True)  # hook (b): back through the rotation
    if layer.spec.qk_norm:  # back through the RMSNorm of each head's rows (or of each whole projection row)
        dQ, grads["g_Q"] = _rms_norm_vjp(layer, a, X_in, "Q", dQ)
        dK, grads["g_K"] = _rms_norm_vjp(layer, a, X_in, "K", dK)
    d_proj = {name: merge_heads(xp, g) for name, g in zip("QKV", (dQ, dK, dV), strict=True)}  # (..., n, H·w) each
    for name, d in d_proj.items():
        if a.get(f"b_{name}") is not None:
            grads[f"b_{name}"] = _bias_grad(xp, d, a[f"b_{name}"])
    # the three projections read one X_in: their gradients side by side make two products instead of six,
    # [dW_Q dW_K dW_V] = X_inᵀ [dQ dK dV] and dX = [dQ dK dV] [W_Q W_K W_V]ᵀ (one wait for the pool, in a lean call)
    D = xp.concat(list(d_proj.values()), axis=-1)  # (..., n, Σ H·w)
    W = xp.concat([a[f"W_{name}"] for name in d_proj], axis=-1)  # (d_model, Σ H·w)
    dW, dX = matmuls(xp, [_weight_grad_operands(xp, X_in, D), (D, xp.matrix_transpose(W))])
    start = 0
    for name, d in d_proj.items():
        grads[f"W_{name}"] = dW[:, start:start + d.shape[-1]]  # (d_model, H·w)
        start += d.shape[-1]
    # dX (..., n, d_model) = Σ d· W_·ᵀ
    grads["X"] = dX if dX_gate is None else dX + dX_gate
    return grads
