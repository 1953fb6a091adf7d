"""Memory-lean attention: blockwise forward and backward with an online softmax.

The plain path stores ``S`` and ``A`` (``n × n`` per head). Here queries and keys are taken in
blocks of ``b`` rows, and the softmax of a query row is accumulated over key blocks with a
running maximum ``m``, running sum ``ℓ`` and running output ``acc`` (Milakov & Gimelshein 2018;
the idea of FlashAttention, Dao et al. 2022). When a key block ``j`` arrives,

.. math::

    m' = \\max(m, \\max_j S_{ij}),\\quad
    \\ell' = e^{m - m'}\\,\\ell + \\textstyle\\sum_j e^{S_{ij} - m'},\\quad
    acc' = e^{m - m'}\\,acc + e^{S_{ij} - m'} V_j ,

and at the end ``Z_i = acc / ℓ``. The result equals the plain softmax exactly in exact
arithmetic (the factors ``e^{m - m'}`` rescale earlier blocks to the new maximum), so the two
paths agree within float rounding. The forward keeps only ``L_i = m + log ℓ`` (the row's
log-sum-exp) for the backward pass, which recomputes each block's weights
``A_ij = exp(S_ij − L_i)`` and uses ``rowsum(dA ⊙ A) = rowsum(dZ ⊙ Z)``.

Extra memory: ``O(b² + n·d)`` per head and batch element beyond the inputs and outputs —
never ``O(n²)`` unless the caller asks the NumPy fast path to keep its exponentials for the
backward (:func:`keeping`: what :func:`~attnsym.numeric.attention_vjp` does without a
``block_size`` when they fit 64 MiB). With causal masks, blocks entirely above the diagonal are skipped (about half
the work). A fully masked row keeps ``ℓ = 0``; it gets ``Z = 0`` and ``L = +inf`` so that its
recomputed weights are exactly 0, matching the plain path's policy.
"""

from __future__ import annotations

from . import _fast
from .backend import exp_inplace
from .layer import BoundLayer, block_scores, dscores, inplace_ok

__all__ = ["blockwise_core", "blockwise_core_vjp", "keeping"]


def _key_end(layer: BoundLayer, i1: int) -> int:
    """Keys beyond this index are masked for every query < i1 (causal); others all count."""
    return i1 if layer.causal else layer.n


def keeping(layer: BoundLayer, Q, block_size: int) -> _fast.Kept | None:
    """Room for :func:`blockwise_core` to keep its exponentials for :func:`blockwise_core_vjp`, or None.

    Only NumPy's fast path keeps them, and only within :data:`attnsym.numeric._fast.KEEP_MAX_BYTES`;
    then the two calls hold ``n × n`` numbers per head — the memory-lean promise of this module
    is for calls that pass None.
    """
    return _fast.keeping(layer, Q, _fast.blocks(block_size, block_size, _fast.FAST_BLOCK))


def blockwise_core(layer: BoundLayer, Q, K, V, block_size: int, key_block_size: int | None = None,
                   kept: _fast.Kept | None = None):
    """``Z_h = softmax(c Q_h K_hᵀ) V_h`` without an ``n × n`` array, and the row log-sum-exp.

    Parameters
    ----------
    layer : the resolved layer (scale, causal, mask, namespace)
    Q, K : (..., H, n, d_k) arrays
    V : (..., H, n, d_v) array
    block_size : int
        Rows of queries and of keys per block.

    kept : from :func:`keeping` (with the same ``block_size``, no ``key_block_size``), optional
        Filled with every block's exponentials, for :func:`blockwise_core_vjp`.

    Returns
    -------
    Z : (..., H, n, d_v) array
    lse : (..., H, n, 1) array
        ``log Σ_j exp(S_ij)``, ``+inf`` for fully masked rows.
    """
    if _fast.usable(layer, Q, K, V):
        return _fast.forward(layer, Q, K, V, block=_fast.blocks(block_size, key_block_size or block_size, _fast.FAST_BLOCK),
                             kept=kept)
    xp = layer.xp
    n, b = layer.n, block_size
    bk = b if key_block_size is None else key_block_size
    Z_blocks, lse_blocks = [], []
    for i0 in range(0, n, b):
        i1 = min(n, i0 + b)
        Qi = Q[..., i0:i1, :] * layer.scale  # (..., H, bi, d_k)
        m = ell = acc = None
        for j0 in range(0, _key_end(layer, i1), bk):
            j1 = min(_key_end(layer, i1), j0 + bk)
            S = block_scores(layer, Qi, K[..., j0:j1, :], i0, i1, j0, j1)  # (..., H, bi, bj)
            block_max = xp.max(S, axis=-1, keepdims=True)  # (..., H, bi, 1)
            m_new = block_max if m is None else xp.maximum(m, block_max)
            shift = xp.where(xp.isfinite(m_new), m_new, 0.0)  # rows masked so far: shift 0
            if inplace_ok(S):
                S -= shift
            else:
                S = S - shift
            P = exp_inplace(xp, S)  # (..., H, bi, bj)
            PV = xp.matmul(P, V[..., j0:j1, :])  # (..., H, bi, d_v)
            if m is None:
                ell, acc = xp.sum(P, axis=-1, keepdims=True), PV
            else:
                alpha = xp.exp(m - shift)  # rescale earlier blocks; exp(-inf) = 0
                ell = alpha * ell + xp.sum(P, axis=-1, keepdims=True)
                acc = alpha * acc + PV
            m = m_new
        assert m is not None and ell is not None  # every query block sees at least one key block (n >= 1)
        shift = xp.where(xp.isfinite(m), m, 0.0)
        seen = ell > 0
        Z_blocks.append(acc / xp.where(seen, ell, 1.0))
        lse_blocks.append(xp.where(seen, shift + xp.log(xp.where(seen, ell, 1.0)), xp.inf))
    return xp.concat(Z_blocks, axis=-2), xp.concat(lse_blocks, axis=-2)


def blockwise_core_vjp(layer: BoundLayer, Q, K, V, Z, lse, dZ, block_size: int, kept: _fast.Kept | None = None):
    """dQ, dK, dV of the blockwise core from dZ, recomputing each block's weights (or reading them from ``kept``).

    Memory beyond the inputs and the three gradients: a few ``block × block`` arrays.
    """
    if _fast.usable(layer, Q, K, V, Z, dZ):
        return _fast.backward(layer, Q, K, V, Z, lse, dZ, block=_fast.blocks(block_size, block_size, _fast.BACKWARD_BLOCK),
                              kept=kept)
    xp = layer.xp
    n, b = layer.n, block_size
    D = xp.sum(dZ * Z, axis=-1, keepdims=True)  # (..., H, n, 1) = rowsum(dA ⊙ A)
    Qs = Q * layer.scale  # (..., H, n, d_k)
    dQ = xp.zeros_like(Q)
    dK_blocks, dV_blocks = [], []
    for j0 in range(0, n, b):
        j1 = min(n, j0 + b)
        Kj, Vj = K[..., j0:j1, :], V[..., j0:j1, :]
        dKj = dVj = None
        first_i = (j0 // b) * b if layer.causal else 0  # earlier query blocks see none of these keys
        for i0 in range(first_i, n, b):
            i1 = min(n, i0 + b)
            S = block_scores(layer, Qs[..., i0:i1, :], Kj, i0, i1, j0, j1)  # (..., H, bi, bj)
            if inplace_ok(S):
                S -= lse[..., i0:i1, :]
            else:
                S = S - lse[..., i0:i1, :]
            A = exp_inplace(xp, S)  # (..., H, bi, bj): the weights A_ij of this block
            dZi = dZ[..., i0:i1, :]
            dA = xp.matmul(dZi, xp.matrix_transpose(Vj))  # (..., H, bi, bj)
            dS = dscores(A, dA, D[..., i0:i1, :])  # (..., H, bi, bj)
            dV_part = xp.matmul(xp.matrix_transpose(A), dZi)  # (..., H, bj, d_v)
            dK_part = xp.matmul(xp.matrix_transpose(dS), Qs[..., i0:i1, :])  # (..., H, bj, d_k)
            if dVj is None:
                dVj, dKj = dV_part, dK_part
            elif inplace_ok(dVj):
                dVj += dV_part
                dKj += dK_part
            else:
                dVj, dKj = dVj + dV_part, dKj + dK_part
            dQ[..., i0:i1, :] += layer.scale * xp.matmul(dS, Kj)  # (..., H, bi, d_k)
        dK_blocks.append(dKj)
        dV_blocks.append(dVj)
    return dQ, xp.concat(dK_blocks, axis=-2), xp.concat(dV_blocks, axis=-2)
