"""One forward pass that reads a :class:`~attnsym.models.plan.ModelPlan` (LLaMA … BLOOM).

Per block (pre-norm, sequential residual, gated MLP: the LLaMA layout)::

    h = RMSNorm(x) ;  Q, K, V = h W_Q (+ b_Q), h W_K (+ b_K), h W_V (+ b_V)
    Z, A = numeric.head_attention(Q, K, V, padding, spec=block.attention, positions=p)
    x = x + Z W_O (+ b_O)
    h = RMSNorm(x) ;  x = x + (silu(h W_gate) ⊙ h W_up) W_down

then the final RMSNorm. The block's description changes the pieces, not the code path: Gemma 2
norms ``1 + w`` and also norms the attention's and the MLP's outputs (``post_norms``) and scales
the embedding; GPT-NeoX uses LayerNorms, a plain GELU MLP with biases and the parallel residual
``x + Attn(Norm₁(x)) + MLP(Norm₂(x))``; BLOOM norms the embedding and uses ALiBi.
The attention step — QK-norm, RoPE (with its scaling), the scale, the
causal mask and the sliding window, grouped-query sharing, the stable softmax — is exactly the
spec's, through :func:`attnsym.numeric.head_attention`. The pre-softmax scores of a route are
the same primitives' (:func:`attnsym.numeric.layer.block_scores`).
"""

from __future__ import annotations

from ..numeric.backend import array_namespace
from ..numeric.binding import window_band
from ..numeric.forward import head_attention
from ..numeric.layer import BoundLayer, block_scores, head_rows, merge_heads
from .families import DecoderWeights
from .forward import ForwardOutput, _activation, layer_norm
from .plan import ModelPlan

__all__ = ["forward", "rms_norm"]


def rms_norm(x, weight, eps: float, offset: float = 0.0):
    """``x / sqrt(mean(x²) + eps) ⊙ (offset + weight)`` over the last axis (LLaMA's RMSNorm; Gemma's ``1 + w``).

    >>> rms_norm(np.array([[3.0, 4.0]]), np.ones(2), 0.0)
    array([[0.84852814, 1.13137085]])
    """
    xp = array_namespace(x, weight)
    normed = x * (1.0 / xp.sqrt(xp.mean(x * x, axis=-1, keepdims=True) + eps))
    return normed * (weight + offset if offset else weight)


def _silu(xp, x):
    return x * (0.5 * (1.0 + xp.tanh(0.5 * x)))  # x·sigmoid(x), no overflow for large |x|


def _heads(xp, M, heads: int):
    B, n, _ = M.shape
    return xp.permute_dims(xp.reshape(M, (B, n, heads, -1)), (0, 2, 1, 3))  # (B, heads, n, w)


def _scores(xp, spec, Q, K, a: dict, allowed, positions, dtype: str):
    """The masked pre-softmax scores ``S`` (B, H, n, n), ``-inf`` where a query may not attend."""
    B, _, n, _ = Q.shape
    spec = spec.replace(n=n)
    band = window_band(spec)
    mask = None if band is None else xp.asarray(band)
    if allowed is not None:
        mask = allowed if mask is None else xp.logical_and(mask, allowed)
    layer = BoundLayer(spec=spec, xp=xp, batch_shape=(B,), dtype=dtype, device=None, mask=mask,
                       positions=xp.astype(xp.asarray(positions), xp.float64))
    Qh = head_rows(layer, a, merge_heads(xp, Q), "Q")
    Kh = head_rows(layer, a, merge_heads(xp, K), "K")
    return block_scores(layer, Qh * layer.scale, Kh, 0, n, 0, n)


def forward(plan: ModelPlan, weights: DecoderWeights, input_ids, attention_mask=None, *,
            positions=None) -> ForwardOutput:
    """Run a planned decoder on ``(B, n)`` token ids.

    Parameters
    ----------
    plan : ModelPlan
    weights : DecoderWeights
    input_ids : (B, n) integer array
    attention_mask : (B, n) array of 0/1, optional
        1 for real tokens, 0 for padding: padding keys get weight exactly 0.
    positions : (B, n) or (n,) integer array, optional
        Token positions for RoPE. Default ``0 … n−1`` for every row — what transformers uses
        when it is given an attention mask and no ``position_ids`` (so a right-padded batch's
        real tokens sit at ``0 … k−1``); a left-padded batch passes
        ``cumsum(mask) − 1`` here, as ``generate`` does.

    Returns
    -------
    ForwardOutput
        ``hidden_states`` (L + 1, B, n, d): the embeddings, each block's output, the last one
        after the final norm (as transformers' ``hidden_states``); ``attention`` and
        ``scores`` (L, B, H, n, n).
    """
    xp = array_namespace(weights.word)
    ids = xp.asarray(input_ids)
    B, n = ids.shape
    x = xp.reshape(xp.take(weights.word, xp.reshape(ids, (-1,)), axis=0), (B, n, plan.width))
    dtype = "float64" if x.dtype == xp.float64 else "float32"
    if plan.embed_scale is not None:
        x = x * xp.asarray(plan.embed_scale, dtype=x.dtype)  # in the weights' dtype, as transformers rounds it
    if plan.embed_norm is not None:
        x = layer_norm(x + 0.0, weights.embed_norm, weights.embed_norm_bias, plan.embed_norm.eps)
    if positions is None:
        positions = xp.broadcast_to(xp.arange(n), (B, n))
    allowed = None
    if attention_mask is not None:
        keys = xp.asarray(attention_mask) != 0
        if not bool(xp.all(keys)):
            allowed = xp.broadcast_to(keys[:, None, :], (B, n, n))  # (B, n, n): padding keys masked
    hidden, attention, scores = [x], [], []
    for block, lw in zip(plan.blocks, weights.layers, strict=True):
        spec = block.attention
        eps, offset = block.norm.eps, block.norm.offset
        if block.norm.kind == "layer":
            def norm(v, weight, bias, eps=eps):
                return layer_norm(v + 0.0, weight, bias, eps)  # (a copy: layer_norm works in place)
        else:
            def norm(v, weight, bias, eps=eps, offset=offset):
                return rms_norm(v, weight, eps, offset)
        h = norm(x, lw.attn_norm, lw.attn_norm_bias)
        proj = {}
        for name in "QKV":
            P = xp.matmul(h, getattr(lw, f"W_{name}"))
            b = getattr(lw, f"b_{name}")
            proj[name] = _heads(xp, P if b is None else P + b, spec.heads if name == "Q" else spec.kv_heads)
        Z, A = head_attention(proj["Q"], proj["K"], proj["V"], allowed, spec=spec, g_Q=lw.g_Q, g_K=lw.g_K,
                              positions=positions)
        gains = {"g_Q": lw.g_Q, "g_K": lw.g_K}
        scores.append(_scores(xp, spec, proj["Q"], proj["K"], gains, allowed, positions, dtype))
        attention.append(A)
        y = xp.matmul(Z, lw.W_O)
        y = y if lw.b_O is None else y + lw.b_O
        attn = rms_norm(y, lw.post_attn_norm, eps, offset) if block.post_norms else y
        mid = x if block.residual == "parallel" else x + attn
        h = norm(mid, lw.mlp_norm, lw.mlp_norm_bias)
        if block.mlp == "gated":
            gate = xp.matmul(h, lw.W_gate)
            gate = _silu(xp, gate) if block.activation == "silu" else _activation(xp, "gelu_pytorch_tanh", gate)
            y = xp.matmul(gate * xp.matmul(h, lw.W_up), lw.W_down)
        else:
            act = "gelu_pytorch_tanh" if block.activation == "gelu_tanh" else block.activation
            y = xp.matmul(_activation(xp, act, xp.matmul(h, lw.W_up) + lw.b_up), lw.W_down) + lw.b_down
        y = rms_norm(y, lw.post_mlp_norm, eps, offset) if block.post_norms else y
        x = x + attn + y if block.residual == "parallel" else mid + y
        hidden.append(x)
    f = plan.final_norm
    hidden[-1] = (layer_norm(x + 0.0, weights.final_norm, weights.final_norm_bias, f.eps) if f.kind == "layer"
                  else rms_norm(x, weights.final_norm, f.eps, f.offset))
    return ForwardOutput(hidden_states=xp.stack(hidden), attention=xp.stack(attention), scores=xp.stack(scores))

