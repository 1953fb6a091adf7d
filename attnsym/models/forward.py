r"""The one forward pass of every family: it reads a :class:`~attnsym.models.plan.ModelPlan` (NumPy, CuPy or torch arrays).

Shape legend: ``B`` batch, ``n`` tokens, ``d`` width, ``H`` heads, ``L`` layers.

**Embedding**: ``x = E_word[ids]`` (× ``embed_scale``, Gemma 2), ``+ E_position[p]`` (learned
positions: BERT, GPT-2), ``+ E_type[t]`` (BERT's token types), then the embedding norm (BERT,
BLOOM).

**A block** (:class:`~attnsym.models.plan.Block`), with ``Q, K, V = h W_{Q,K,V} (+ b)`` and the
attention step ``Z, A = Attn(Q, K, V)`` of the block's :class:`~attnsym.AttentionSpec`:

.. math::

    \text{pre (LLaMA, GPT-2, ...)}:\quad x' = x + \operatorname{Attn}(\operatorname{N}_1 x) W_O,\quad
    x'' = x' + \operatorname{MLP}(\operatorname{N}_2 x')

    \text{post (BERT)}:\quad x' = \operatorname{N}_1(x + \operatorname{Attn}(x) W_O),\quad
    x'' = \operatorname{N}_2(x' + \operatorname{MLP}(x'))

    \text{parallel (GPT-NeoX)}:\quad x'' = x + \operatorname{Attn}(\operatorname{N}_1 x) W_O
    + \operatorname{MLP}(\operatorname{N}_2 x)

with ``N`` a LayerNorm or an RMSNorm (Gemma's ``1 + w``; Gemma 2 also norms the attention's and
the MLP's outputs; OLMo 2 norms only those, ``x + N(Attn(x))``), the MLP plain ``act(h W_up + b_up) W_down + b_down`` or gated
``(act(h W_gate) ⊙ h W_up) W_down`` or a mixture of experts (gpt-oss, Llama 4: NumPy gathers of the
rows that chose each expert, :class:`~attnsym.models.plan.Experts`). Then the final norm (all but BERT). ``hidden_states``
follow Hugging Face: ``L + 1`` entries, the embedding first, the last block's output (after the
final norm) last.

**The attention step** is the numeric layer's, driven by the spec (the primitives of
:func:`attnsym.numeric.head_attention`): per-head rows with QK-norm and RoPE
(:func:`~attnsym.numeric.layer.head_rows`; RoPE's cos and sin made once per pass for the layers
sharing them), the scaled scores with
ALiBi, soft-capping and the mask — the spec's causal pattern and window AND the padding keys —
(:func:`~attnsym.numeric.layer.block_scores`, ``-inf`` where a query may not attend), the
stable softmax (a fully masked row all 0) — with a sink (gpt-oss) the sink's logit joins each
row's denominator and its mass is kept (rows of ``A`` sum to ``1 − π``) —, ``Z = A V``; a
key/value head serves its group of query heads without being repeated
(:func:`~attnsym.numeric.layer.grouped_matmul`). Each block's spec carries its own window, chunk,
RoPE (or none), QK-norm and query temperature. The scores and weights are kept for the route: a
NumPy pass writes every layer's into one ``(L, B, H, n, n)`` array each (nothing stacked afterwards).

**Two implementations of the element-wise primitives**, chosen once per pass
(:func:`primitives`): the array operations (any library, float32 and float64), and for float32
NumPy passes of at least :data:`FUSED_MIN_TOKENS` tokens with Numba installed (``attnsym[fast]``,
``ATTNSYM_NUMBA`` not ``0``) the compiled one-pass kernels of :mod:`attnsym.numeric._kernels` —
bias + residual + LayerNorm, bias + exact GELU, the softmax, SiLU's exponential — the same equations (the tests tie
the two, and both to transformers). Every family's plan runs this one code path.

**The logits** of a decoder (:func:`final_logits`): ``z = N_f(x) U`` with ``U`` the checkpoint's
LM head (:attr:`~attnsym.models.weights.Weights.lm_head`) or, with tied embeddings,
``E_wordᵀ``; Gemma 2 soft-caps them, ``c·tanh(z / c)``. An encoder has no LM head here
(:class:`~attnsym.models.errors.NoLMHeadError`).

**Decoding with a key/value cache** (:func:`forward_cached`, :class:`KVCache`): the same blocks run
on the new tokens only, at positions ``p0 …`` after the ``p0`` cached ones; each layer's rotated
keys and its values join the cache, and the new queries score against every cached key (the
spec's causal pattern and window at those absolute positions). Row for row it is the full pass.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import array_api_compat
import numpy as np

from ..errors import ShapeError
from ..numeric import _kernels, array_namespace
from ..numeric._inputs import dtype_name
from ..numeric.activations import GELU_TANH_CUBIC, gelu, gelu_float32, gelu_tanh_unchecked, silu
from ..numeric.binding import window_band
from ..numeric.layer import (
    BoundLayer,
    allowed_block,
    block_scores,
    broadcasts_into,
    expand_kv,
    grouped_matmul,
    head_rows,
    merge_heads,
    safe_divide,
    shifted_exp,
    sigmoid,
    sink_softmax,
)
from ..numeric.norms import layer_norm, rms_norm
from ..numeric.positions import rope_tables
from .errors import ModelError, NoLMHeadError
from .plan import ModelPlan, Norm
from .weights import Weights

__all__ = ["FUSED_MIN_TOKENS", "ArrayPrimitives", "ForwardOutput", "FusedPrimitives", "KVCache", "LayerCache", "embed",
           "final_logits", "final_norm", "forward", "forward_cached", "forward_streamed", "gelu_float32", "layer_norm",
           "primitives", "projections", "rms_norm", "unembedding"]


@dataclass(frozen=True)
class ForwardOutput:
    """Everything one forward pass computed, as arrays of the weights' library.

    Attributes
    ----------
    hidden_states : (L + 1, B, n, d) array
    attention : (L, B, H, n, n) array
        Softmax weights; 0 where a query may not attend to a key.
    scores : (L, B, H, n, n) array
        The scaled pre-softmax scores ``S``, ``-inf`` where a query may not attend to a key.
    """

    hidden_states: Any
    attention: Any
    scores: Any


#: √(2/π) as BLOOM writes it (``0.79788456``, transformers' ``bloom_gelu_forward``, as its checkpoints were trained)
BLOOM_GELU_COEFFICIENT = 0.79788456


def _activation(xp, kind: str, x):
    """The activation ``kind`` of a :class:`~attnsym.models.plan.Block` (``silu``, ``gelu``, ``gelu_tanh``,
    ``gelu_tanh_bloom``, ``relu``)."""
    if kind == "gelu":
        if array_api_compat.is_numpy_array(x) and x.dtype == np.float32:
            return gelu_float32(x)
        return gelu(x)
    if kind == "gelu_tanh":
        return gelu_tanh_unchecked(x)
    if kind == "gelu_tanh_bloom":  # GELU_TANH's formula with √(2/π) rounded to 8 digits (2.6e-10 apart on [-4, 4])
        u = xp.clip(x, -10.0, 10.0)  # tanh is ±1 there already: the cubic cannot overflow
        return 0.5 * x * (1.0 + xp.tanh(BLOOM_GELU_COEFFICIENT * u * (1.0 + GELU_TANH_CUBIC * u * u)))
    if kind == "silu":
        return silu(x)
    return xp.maximum(x, xp.zeros_like(x))


class ArrayPrimitives:
    """The element-wise primitives of a pass as array operations (any library, float32 and float64)."""

    name = "array"

    def norm(self, xp, x, norm: Norm, weight, bias):
        """``N(x)`` into a new array (LayerNorm or RMSNorm as ``norm`` says)."""
        if norm.kind == "layer":
            return layer_norm(x, weight, bias, norm.eps)
        return rms_norm(x, weight, norm.eps, norm.offset)

    def add_norm(self, xp, a, bias, residual, norm: Norm, weight, beta):
        """``(s, N(s))`` with ``s = a + bias + residual`` (each term optional; ``a`` may be overwritten)."""
        for term in (bias, residual):
            if term is None:
                continue
            if isinstance(a, np.ndarray) and broadcasts_into(term, a):
                a += term  # NumPy: in place on the caller's new array
            else:
                a = a + term
        return a, self.norm(xp, a, norm, weight, beta)

    def bias_act(self, xp, h, bias, kind: str):
        """``act(h + bias)`` (``h`` may be overwritten)."""
        return _activation(xp, kind, h if bias is None else h + bias)

    def gated(self, xp, gate, up, kind: str):
        """``act(gate) ⊙ up``, the gated MLP's hidden layer (``gate`` may be overwritten)."""
        a = _activation(xp, kind, gate)  # a new array: multiplied in place
        if isinstance(a, np.ndarray):
            a *= up
            return a
        return a * up

    def softmax(self, xp, S, out=None):
        """``softmax(S)`` per row into a new array (or ``out``, NumPy), ``S`` kept: 0 for ``-inf``, a fully masked row
        all 0."""
        if out is None:
            P = S + 0.0
        else:
            P = out
            np.copyto(P, S)
        P, total, _ = shifted_exp(xp, P)  # exp(S − rowmax) in place on the copy, the row sums
        return safe_divide(xp, P, total, inplace=True)


def _rows(a: np.ndarray) -> np.ndarray:
    """``a`` as C-contiguous 2-D rows ``(…, w) → (rows, w)`` (a view when it already is)."""
    return np.ascontiguousarray(a).reshape(-1, a.shape[-1])


class FusedPrimitives(ArrayPrimitives):
    """The same primitives by the compiled float32 kernels of :mod:`attnsym.numeric._kernels` (RMSNorm and tanh-GELU
    stay array operations; SiLU's exponential is the kernels' float32 ``exp``, about twice NumPy's speed)."""

    name = "fused"

    def norm(self, xp, x, norm: Norm, weight, bias):
        if norm.kind != "layer":
            return super().norm(xp, x, norm, weight, bias)
        out = np.empty(x.shape, np.float32)
        _kernels.residual_layernorm(_rows(x), None, None, weight, bias, norm.eps, out.reshape(-1, x.shape[-1]))
        return out

    def add_norm(self, xp, a, bias, residual, norm: Norm, weight, beta):
        if norm.kind != "layer":
            return super().add_norm(xp, a, bias, residual, norm, weight, beta)
        a = np.ascontiguousarray(a)
        out = np.empty(a.shape, np.float32)
        res = None if residual is None else _rows(residual)
        _kernels.residual_layernorm(a.reshape(-1, a.shape[-1]), bias, res, weight, beta, norm.eps,
                                  out.reshape(-1, a.shape[-1]))
        return a, out

    def bias_act(self, xp, h, bias, kind: str):
        if kind != "gelu" or bias is None:
            return super().bias_act(xp, h, bias, kind)
        h = np.ascontiguousarray(h)
        _kernels.bias_gelu(h.reshape(-1, h.shape[-1]), bias)
        return h

    def gated(self, xp, gate, up, kind: str):
        if kind != "silu" or not gate.flags.c_contiguous:
            return super().gated(xp, gate, up, kind)
        t = np.negative(gate)  # (..., f), a new array
        rows = _rows(t)
        _kernels.exp_rowsum(rows, np.zeros(rows.shape[0], np.float32))  # e^(−g) by the kernels' float32 exp
        t += 1.0
        np.divide(gate, t, out=t)  # silu(g) = g / (1 + e^(−g)), as the array primitive
        t *= up
        return t

    def softmax(self, xp, S, out=None):
        return _kernels.softmax_rows(np.ascontiguousarray(S), np.empty(S.shape, np.float32) if out is None else out)


#: a float32 NumPy pass over at least this many tokens (all texts together) takes the compiled kernels
FUSED_MIN_TOKENS = 64

ARRAY, FUSED = ArrayPrimitives(), FusedPrimitives()


def _fusable(x) -> bool:
    """Whether the pass over ``x`` ``(B, n, d)`` takes the compiled kernels of :mod:`attnsym.numeric._kernels`.

    float32 NumPy arrays, Numba present, and at least :data:`FUSED_MIN_TOKENS` tokens: loading
    the kernels costs a process about half a second once (Numba's import and its cache), which a
    short text would not win back — a sentence of ten tokens takes about 5 ms either way.
    """
    return _fused_for(x, x.shape[0] * x.shape[1])


def _fused_for(array, tokens: int) -> bool:
    return (isinstance(array, np.ndarray) and array.dtype == np.float32 and tokens >= FUSED_MIN_TOKENS
            and _kernels.available())


def primitives(x) -> ArrayPrimitives:
    """The implementation of the element-wise primitives a pass over ``x`` ``(B, n, d)`` takes (chosen once per pass)."""
    return FUSED if _fusable(x) else ARRAY


def _device(x):
    return array_api_compat.device(x)


def embed(plan: ModelPlan, weights: Weights, input_ids, token_type_ids=None, positions=None, ops=None):
    """The input of block 0, ``(B, n, d)``, for integer ids ``(B, n)`` (module docstring: the embedding)."""
    xp = array_namespace(weights.word)
    dev = _device(weights.word)
    ids = xp.asarray(input_ids, device=dev)
    B, n = ids.shape
    x = xp.reshape(xp.take(weights.word, xp.reshape(ids, (-1,)), axis=0), (B, n, plan.width))  # (B, n, d)
    if plan.embed_scale is not None:
        x = x * xp.asarray(plan.embed_scale, dtype=x.dtype)  # in the weights' dtype, as transformers rounds it
    if plan.learned_positions:
        if positions is None:
            x = x + weights.position[:n]  # absolute, learned, from position 0
        else:
            p = xp.reshape(xp.asarray(positions, device=dev), (-1,))
            x = x + xp.reshape(xp.take(weights.position, p, axis=0), (-1, n, plan.width))
    if plan.type_vocab_size:
        if token_type_ids is None:
            x = x + weights.token_type[0]
        else:
            types = xp.reshape(xp.asarray(token_type_ids, device=dev), (-1,))
            x = x + xp.reshape(xp.take(weights.token_type, types, axis=0), (B, n, plan.width))
    if plan.embed_norm is not None:
        x = (ops or primitives(x)).norm(xp, x, plan.embed_norm, weights.embed_norm, weights.embed_norm_bias)
    return x


def _linear(xp, h, W, b):
    """``h W + b`` (``b`` optional)."""
    return _plus(xp.matmul(h, W), b)


def _plus(y, b):
    """``y + b`` (``b`` optional)."""
    return y if b is None else y + b


def _bound(xp, spec, n: int, allowed, cache: dict[Any, tuple], device):
    """The spec at ``n`` tokens and its mask (window AND ``allowed``), made once per pass for blocks with equal specs
    (a family with a per-layer schedule has a few distinct specs, each block its own object)."""
    key = spec if spec.mask is None else id(spec)  # equal specs share (hashing a spec without a mask is cheap)
    if key not in cache:
        spec_n = _at_length(spec, n) if spec.mask is None else spec.replace(n=n)
        band = window_band(spec_n)
        mask = None if band is None else xp.asarray(band, device=device)
        if allowed is not None:
            mask = allowed if mask is None else xp.logical_and(mask, allowed)
        cache[key] = (spec, spec_n, mask, {})  # the spec itself kept, so its id is not reused during the pass
    return cache[key][1:]


@functools.lru_cache(maxsize=256)
def _at_length(spec, n: int):
    """``spec.replace(n=n)``, kept across passes (a spec is validated on construction: 0.3 ms, per distinct spec
    of every pass otherwise)."""
    return spec.replace(n=n)


def _rope_tables(xp, spec, positions, dtype: str, cache: dict[Any, tuple], device):
    """RoPE's tables of every position, ``(B, 1, n, d/2)``, made once per pass for the layers sharing a RoPE setting
    (:func:`~attnsym.numeric.positions.rope_tables`), or None for a layer without RoPE."""
    if spec.positions != "rope":
        return None
    key = ("rope", spec.position_base, spec.rotary_dims, spec.rope_scaling, spec.n)
    if key not in cache:
        p = xp.expand_dims(positions, axis=-2)  # (B, 1, n): every head
        cache[key] = rope_tables(spec, p, rows=int(p.shape[-1]), xp=xp, dtype=getattr(xp, dtype), device=device)
    return cache[key]


def _attention(xp, ops, spec, Q, K, V, gains: dict, allowed, positions, dtype: str, cache: dict,
               past: LayerCache | None = None, core=None, out: tuple | None = None):
    """``S, A, Z`` of one layer from the projections ``(B, r, H·d_k)`` (module docstring: the attention step).

    With ``past`` (:func:`forward_cached`) the ``r`` rows are the tokens at positions ``p0 … p0+r−1`` after the
    ``p0`` cached ones: their keys and values join the cache, and ``S``, ``A`` are ``(B, H, r, p0 + r)``.
    ``core(layer, Q_h, K_h, V_h) -> Z_h`` (:func:`forward_streamed`) replaces the scores, softmax and ``A V``
    (``S``, ``A`` are then None). ``out``: NumPy arrays ``(S, A)`` of that shape to write the scores and
    weights into (:func:`forward` keeps every layer's in one array). Grouped key/value heads serve their
    query heads without being repeated (:func:`~attnsym.numeric.layer.grouped_matmul`).
    """
    B, r, _ = Q.shape
    p0 = 0 if past is None else past.length
    n = p0 + r
    device = _device(Q)
    spec, mask, made = _bound(xp, spec, n, allowed, cache, device)
    if "positions" not in cache:  # float64 positions, shared by every layer of the pass
        cache["positions"] = xp.astype(xp.asarray(positions), xp.float64)
    layer = BoundLayer(spec=spec, xp=xp, batch_shape=(B,), dtype=dtype, device=device, mask=mask,
                       positions=None if spec.positions is None and spec.query_temperature is None
                       else cache["positions"],
                       sinks=gains["s_sink"] if spec.sink else None,  # a streamed core puts them in its normaliser
                       rope=_rope_tables(xp, spec, cache["positions"], dtype, cache, device))
    Qh = head_rows(layer, gains, Q, "Q", p0)  # (B, H, r, d_k), QK-normed and rotated
    Kh = head_rows(layer, gains, K, "K", p0, expand=False)  # (B, H_kv, r, d_k)
    Vh = xp.permute_dims(xp.reshape(V, (B, r, spec.kv_heads, spec.d_v)), (0, 2, 1, 3))  # (B, H_kv, r, d_v)
    if past is not None:
        Kh, Vh = past.extend(xp, Kh, Vh)  # (B, H_kv, n, ·): every key and value so far
    if core is not None:
        Kh, Vh = expand_kv(xp, Kh, spec.kv_group), expand_kv(xp, Vh, spec.kv_group)
        return None, None, merge_heads(xp, core(layer, Qh, Kh, Vh))
    if ("blocked", p0) not in made:  # where a query may not attend: once per pass and spec
        allowed_here = allowed_block(layer, p0, n, 0, n)
        made["blocked", p0] = None if allowed_here is None else xp.logical_not(allowed_here)
    S_out, A_out = (None, None) if out is None else out
    S = block_scores(layer, Qh * layer.scale, Kh, p0, n, 0, n, out=S_out,
                     blocked=made["blocked", p0])  # (B, H, r, n), -inf where not allowed
    if spec.sink:  # the sink's logit in each row's denominator: rows of A sum to 1 − π, kept so
        A = sink_softmax(xp, S, gains["s_sink"])[0]
        if A_out is not None:
            A_out[...] = A
            A = A_out
    else:
        A = ops.softmax(xp, S, A_out)
    return S, A, merge_heads(xp, grouped_matmul(xp, A, Vh))  # Z: (B, r, H·d_v)


def projections(xp, block, lw, h):
    r"""``Q, K, V`` ``(B, n, H·d_k)``, ``(B, n, H_kv·d_k)``, ``(B, n, H_kv·d_v)`` of a block's normed input ``h``.

    One product ``h [W_Q | W_K | W_V]`` (+ biases). Multi-head latent attention (the spec's
    ``kv_latent_rank``, DeepSeek V3) expands its latents: with the latent norm ``N`` (the block's
    ``latent_norm``), ``r`` the latent's width and ``ρ`` the rotary width,

    .. math::

        q = N(h W_{DQ})\,W_{UQ}\ (\text{or } h W_Q),\qquad [c \mid k^{\rho}] = h W_{DKV},\qquad
        [k^{\text{nope}}_h \mid v_h] = N(c)\,W_{UKV,h},\qquad k_h = [k^{\rho} \mid k^{\text{nope}}_h]

    and each head's query is reordered ``[q^ρ_h | q^nope_h]`` (the checkpoint stores the rotary part
    last; the spec rotates the first ``ρ`` coordinates, and a permutation of both q and k leaves
    every score unchanged), so one rotary key ``k^ρ`` serves every head.
    """
    P = _linear(xp, h, lw.W_QKV, lw.b_QKV)  # (B, n, q + 2 kv): one product for Q, K and V
    q, kv = int(lw.W_Q.shape[1]), int(lw.W_K.shape[1])
    Q, K, V = P[..., :q], P[..., q:q + kv], P[..., q + kv:]
    s = block.attention
    if s.kv_latent_rank is None:
        return Q, K, V
    B, n, _ = Q.shape
    H, r, rho, eps = s.heads, s.kv_latent_rank, s.rotary_dims, block.latent_norm.eps
    nope = s.d_k - rho
    if lw.W_Q_up is not None:
        Q = xp.matmul(rms_norm(Q, lw.g_Q_latent, eps), lw.W_Q_up)  # (B, n, H·d_k)
    Q = xp.reshape(Q, (B, n, H, s.d_k))
    Q = xp.concat([Q[..., nope:], Q[..., :nope]], axis=-1)  # (B, n, H, d_k): the rotary part first
    up = xp.reshape(xp.matmul(rms_norm(K[..., :r], lw.g_KV_latent, eps), lw.W_KV_up), (B, n, H, nope + s.d_v))
    shared = xp.broadcast_to(xp.reshape(K[..., r:], (B, n, 1, rho)), (B, n, H, rho))  # one rotary key for all heads
    K = xp.concat([shared, up[..., :nope]], axis=-1)  # (B, n, H, d_k)
    return (xp.reshape(Q, (B, n, H * s.d_k)), xp.reshape(K, (B, n, H * s.d_k)),
            xp.reshape(up[..., nope:], (B, n, H * s.d_v)))


def _choose(e, lw, logits):
    """``(chosen (T, k), weights (T, k))``: each token's experts and the weights of their outputs or inputs."""
    if e.routing != "sigmoid_group":
        chosen = np.argsort(-logits, axis=-1, kind="stable")[:, :e.top_k]  # (T, k), largest first
        top = np.take_along_axis(logits, chosen, axis=-1)  # (T, k)
        if e.routing == "sigmoid_input":
            return chosen, 1.0 / (1.0 + np.exp(-top))
        if e.routing == "softmax":  # Qwen3-Next: the softmax over every expert, the chosen probabilities
            peak = logits.max(axis=-1, keepdims=True)
            weights = np.exp(top - peak) / np.exp(logits - peak).sum(axis=-1, keepdims=True)
            return chosen, weights / weights.sum(axis=-1, keepdims=True) if e.normalize else weights
        weights = np.exp(top - top[:, :1])  # gpt-oss: softmax over the chosen logits
        return chosen, weights / weights.sum(axis=-1, keepdims=True)
    scores = 1.0 / (1.0 + np.exp(-logits))  # (T, E)
    choice = scores + lw.b_choice  # the correction bias steers the choice only
    T = choice.shape[0]
    grouped = np.sort(choice.reshape(T, e.groups, -1), axis=-1)  # (T, G, E/G)
    best = np.argsort(-(grouped[..., -1] + grouped[..., -2]), axis=-1, kind="stable")[:, :e.top_groups]  # (T, g)
    kept = np.zeros((T, e.groups), dtype=bool)
    np.put_along_axis(kept, best, True, axis=-1)
    choice = np.where(np.repeat(kept, e.count // e.groups, axis=-1), choice, -np.inf)
    chosen = np.argsort(-choice, axis=-1, kind="stable")[:, :e.top_k]
    weights = np.take_along_axis(scores, chosen, axis=-1)
    if e.normalize:
        weights = weights / (weights.sum(axis=-1, keepdims=True) + 1e-20)
    return chosen, weights * e.scaling


def _experts(xp, block, lw, h):
    """A mixture of experts on ``h`` (B, n, d) (:class:`~attnsym.models.plan.Experts`, NumPy): each token's
    ``top_k`` experts by router logit, each expert run on the rows that chose it (a gather), its output added back."""
    e = block.experts
    rows = xp.reshape(h, (-1, int(h.shape[-1])))  # (T, d)
    logits = xp.matmul(rows, lw.W_router)  # (T, E)
    if lw.b_router is not None:
        logits = logits + lw.b_router
    chosen, weights = _choose(e, lw, logits)
    if e.routing == "softmax_output":  # gpt-oss: softmax over the chosen logits weights the outputs
        out = xp.zeros_like(rows)
    else:  # Llama 4, DeepSeek V3, Qwen3-Next: the shared expert sees every token
        out = xp.matmul(silu(xp.matmul(rows, lw.W_gate)) * xp.matmul(rows, lw.W_up), lw.W_down)
        if e.shared_gate:  # Qwen3-Next: scaled by σ(x w_s)
            out = out * sigmoid(xp, xp.matmul(rows, lw.W_shared_router))
    for expert in np.unique(chosen):
        token, slot = np.nonzero(chosen == expert)
        w = weights[token, slot][:, None]  # (t, 1)
        if e.routing == "softmax_output":  # in place on the expert's own (t, f) arrays
            x = rows[token]  # (t, d)
            gate = x @ lw.W_experts_gate[expert]
            gate += lw.b_experts_gate[expert]
            np.minimum(gate, e.limit, out=gate)
            up = x @ lw.W_experts_up[expert]
            up += lw.b_experts_up[expert]
            np.clip(up, -e.limit, e.limit, out=up)
            up += 1.0
            sig = np.multiply(gate, -e.alpha)
            np.exp(sig, out=sig)
            sig += 1.0
            gate /= sig  # g σ(alpha g)
            gate *= up
            y = gate @ lw.W_experts_down[expert]
            y += lw.b_experts_down[expert]
            y *= w
        else:  # Llama 4: σ(logit) scales the chosen expert's input; DeepSeek V3, Qwen3-Next: the weight scales the output
            x = rows[token] * w if e.routing == "sigmoid_input" else rows[token]
            y = xp.matmul(silu(xp.matmul(x, lw.W_experts_gate[expert])) * xp.matmul(x, lw.W_experts_up[expert]),
                          lw.W_experts_down[expert])
            if e.routing != "sigmoid_input":
                y = y * w
        out[token] += y  # a token chooses an expert once: no index repeats
    return xp.reshape(out, h.shape)


def _mlp(xp, ops, block, lw, h):
    """The MLP of ``block`` on ``h`` without its last bias (``b_down``, added with the residual)."""
    if block.experts is not None:
        return _experts(xp, block, lw, h)
    if block.mlp == "gated":
        return xp.matmul(ops.gated(xp, xp.matmul(h, lw.W_gate), xp.matmul(h, lw.W_up), block.activation), lw.W_down)
    return xp.matmul(ops.bias_act(xp, xp.matmul(h, lw.W_up), lw.b_up, block.activation), lw.W_down)


def _block(xp, ops, block, lw, x, allowed, positions, dtype: str, cache: dict, past: LayerCache | None = None,
           core=None, out: tuple | None = None):
    """One block on ``x`` ``(B, n, d)``: its output and the attention's ``S``, ``A`` (``past``, ``core``, ``out``: see
    :func:`_attention`)."""
    pre = block.placement == "pre"
    if block.placement == "output":  # OLMo 2: x + N(Attn(x)), then x' + N(MLP(x'))
        return _output_normed_block(xp, ops, block, lw, x, allowed, positions, dtype, cache, past, core, out)
    h = ops.norm(xp, x, block.norm, lw.attn_norm, lw.attn_norm_bias) if pre else x
    Q, K, V = projections(xp, block, lw, h)
    S, A, Z = _attention(xp, ops, block.attention, Q, K, V, {"g_Q": lw.g_Q, "g_K": lw.g_K, "s_sink": lw.s_sink},
                         allowed, positions, dtype, cache, past, core, out)
    if block.attention.output_gate:  # Qwen3-Next: Z ⊙ σ(h W_G) before W_O
        Z = Z * sigmoid(xp, xp.matmul(h, lw.W_G))
    y, b_O = xp.matmul(Z, lw.W_O), lw.b_O
    if block.post_norms:  # Gemma 2: the attention's output normed before its residual sum
        y, b_O = rms_norm(_plus(y, b_O), lw.post_attn_norm, block.norm.eps, block.norm.offset), None
    if not pre:  # BERT: x' = N₁(x + Attn), x'' = N₂(x' + MLP(x'))
        _, mid = ops.add_norm(xp, y, b_O, x, block.norm, lw.attn_norm, lw.attn_norm_bias)
        return ops.add_norm(xp, _mlp(xp, ops, block, lw, mid), lw.b_down, mid, block.norm, lw.mlp_norm,
                            lw.mlp_norm_bias)[1], S, A
    if block.residual == "parallel":  # GPT-NeoX: x + Attn(N₁ x) + MLP(N₂ x)
        f = _plus(_mlp(xp, ops, block, lw, ops.norm(xp, x, block.norm, lw.mlp_norm, lw.mlp_norm_bias)), lw.b_down)
        return x + _plus(y, b_O) + f, S, A
    mid, h = ops.add_norm(xp, y, b_O, x, block.norm, lw.mlp_norm, lw.mlp_norm_bias)  # mid = x + Attn
    f = _plus(_mlp(xp, ops, block, lw, h), lw.b_down)
    if block.post_norms:
        f = rms_norm(f, lw.post_mlp_norm, block.norm.eps, block.norm.offset)
    return f + mid, S, A


def _output_normed_block(xp, ops, block, lw, x, allowed, positions, dtype: str, cache: dict,
                         past: LayerCache | None = None, core=None, out: tuple | None = None):
    """A block with norms on the sublayers' outputs only (OLMo 2): ``x' = x + N₁(Attn(x))``, ``x' + N₂(MLP(x'))``."""
    Q, K, V = projections(xp, block, lw, x)
    S, A, Z = _attention(xp, ops, block.attention, Q, K, V, {"g_Q": lw.g_Q, "g_K": lw.g_K, "s_sink": lw.s_sink},
                         allowed, positions, dtype, cache, past, core, out)
    if block.attention.output_gate:
        Z = Z * sigmoid(xp, xp.matmul(x, lw.W_G))
    mid = x + ops.norm(xp, _plus(xp.matmul(Z, lw.W_O), lw.b_O), block.norm, lw.post_attn_norm, None)
    return mid + ops.norm(xp, _mlp(xp, ops, block, lw, mid), block.norm, lw.post_mlp_norm, None), S, A


def forward_streamed(plan: ModelPlan, weights: Weights, input_ids, core) -> None:
    """Run the blocks on ``(B, n)`` ids (no padding) with each layer's attention core handed to ``core``.

    ``core(k, layer, Q_h, K_h, V_h) -> Z_h`` gets layer ``k``'s bound layer and per-head rows
    ``(B, H, n, d)`` (QK-normed, rotated, key/value heads repeated) and returns ``A V`` without
    keeping ``A`` (:mod:`attnsym.audits` streams it); a layer with a learned sink carries its logits
    in ``layer.sinks``, for the core's normaliser. Embedding, norms, MLPs and residuals are
    this module's; nothing is returned (the caller's ``core`` keeps what it measures).
    """
    xp = array_namespace(weights.word)
    ids = xp.asarray(input_ids, device=_device(weights.word))
    B, n = ids.shape
    ops = FUSED if _fused_for(weights.word, B * n) else ARRAY
    with np.errstate(over="ignore", invalid="ignore"):
        x = embed(plan, weights, ids, None, None, ops)
        positions, dtype = xp.broadcast_to(xp.arange(n, device=_device(x)), (B, n)), dtype_name(x)
        cache: dict[Any, tuple] = {}
        for k, (block, lw) in enumerate(zip(plan.blocks, weights.layers, strict=True)):
            x = _block(xp, ops, block, lw, x, None, positions, dtype, cache, core=lambda *a, k=k: core(k, *a))[0]
            if not bool(xp.all(xp.isfinite(x))):
                raise ShapeError(f"the forward pass overflows {dtype} in layer {k} for these finite weights; load "
                                 "the model with dtype='float64'")


def _check_finite(xp, hidden, scores, dtype: str) -> None:
    """Refuse a pass whose finite weights gave a non-finite hidden state or score (``-inf``: a masked score).

    ``hidden`` and ``scores`` are sequences of per-layer arrays (or arrays with the layers first).
    A NumPy array's check is one reduction: ``max`` (and ``min`` for hidden states) propagate NaN,
    so ``max < inf`` holds exactly when no entry is NaN or ``+inf``.
    """
    for k in range(len(hidden)):
        if not _finite(xp, hidden[k]):
            where = "the embeddings" if k == 0 else f"layer {k - 1}"
            break
        if k < len(scores) and not _below_inf(xp, scores[k]):
            where = f"the scores of layer {k}"
            break
    else:
        return
    advice = ("load the model with dtype='float64'" if dtype != "float64" else  # float64 already: no wider dtype helps
              "no wider dtype helps: check config.json's values (norm epsilons, scales) and the weights' magnitudes")
    raise ShapeError(f"the forward pass overflows {dtype} in {where} for these finite weights; {advice}")


def _finite(xp, x) -> bool:
    """Whether every entry of ``x`` is finite."""
    if isinstance(x, np.ndarray):
        return bool(x.size == 0 or (x.max() < np.inf and x.min() > -np.inf))
    return bool(xp.all(xp.isfinite(x)))


def _below_inf(xp, S) -> bool:
    """Whether no entry of ``S`` is NaN or ``+inf`` (``-inf`` allowed: a masked score)."""
    if S is None:
        return True
    if isinstance(S, np.ndarray):
        return bool(S.size == 0 or S.max() < np.inf)
    return not bool(xp.any(xp.logical_or(xp.isnan(S), S == xp.inf)))


def forward(plan: ModelPlan, weights: Weights, input_ids, attention_mask=None, token_type_ids=None, *,
            positions=None, threads: int | None = None) -> ForwardOutput:
    """Run the model of ``plan`` on ``(B, n)`` token ids; see the module docstring for the equations.

    Parameters
    ----------
    plan : ModelPlan
        Any family of the table (:func:`attnsym.models.config.read_config`).
    weights : Weights
        NumPy, CuPy or torch arrays (:meth:`Weights.to`); the computation runs in their library.
    input_ids : (B, n) integer array
    attention_mask : (B, n) array of 0/1, optional
        1 for real tokens, 0 for padding: padding keys get weight exactly 0.
    token_type_ids : (B, n) integer array, optional
        BERT segment ids (all 0 by default).
    positions : (B, n) or (n,) integer array, optional
        Token positions (RoPE, ALiBi, learned tables). Default ``0 … n−1`` for every row — what
        transformers uses when it is given an attention mask and no ``position_ids`` (so a
        right-padded batch's real tokens sit at ``0 … k−1``); a left-padded batch passes
        ``cumsum(mask) − 1`` here, as ``generate`` does.
    threads : int, optional
        NumPy: the BLAS threads of the pass's matrix products (by default BLAS's own setting).

    Returns
    -------
    ForwardOutput

    Raises
    ------
    ShapeError
        The computation overflowed the dtype (a score or a hidden state is not finite).

    Examples
    --------
    >>> m = at.models.packaged_model()
    >>> out = forward(m.config, m.weights, np.array([[101, 1045, 2066, 102]]))
    >>> out.hidden_states.shape, out.attention.shape
    ((7, 1, 4, 384), (6, 1, 12, 4, 4))
    >>> bool(np.allclose(out.attention.sum(-1), 1.0))
    True
    """
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ModelError(f"threads must be a positive integer or None (got {threads!r})")
    if threads is None:
        return _forward(plan, weights, input_ids, attention_mask, token_type_ids, positions)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads, user_api="blas"):
        return _forward(plan, weights, input_ids, attention_mask, token_type_ids, positions)


def _forward(plan, weights, input_ids, attention_mask, token_type_ids, positions) -> ForwardOutput:
    xp = array_namespace(weights.word)
    ids = xp.asarray(input_ids, device=_device(weights.word))
    B, n = ids.shape
    ops = FUSED if _fused_for(weights.word, B * n) else ARRAY  # chosen once: the whole pass takes one implementation
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported once, by _check_finite
        x = embed(plan, weights, ids, token_type_ids, positions, ops)
        dtype = dtype_name(x)
        if positions is None:
            positions = xp.broadcast_to(xp.arange(n, device=_device(x)), (B, n))
        allowed = None
        if attention_mask is not None:
            keys = xp.asarray(attention_mask, device=_device(x)) != 0
            if not bool(xp.all(keys)):
                allowed = xp.broadcast_to(keys[:, None, :], (B, n, n))  # (B, n, n): padding keys masked
        kept = _outputs(plan, x)  # NumPy: every layer writes into one array each, nothing is stacked afterwards
        hidden, attention, scores = ([x], [], []) if kept is None else kept
        if kept is not None:
            hidden[0] = x
        cache: dict[Any, tuple] = {}
        for k, (block, lw) in enumerate(zip(plan.blocks, weights.layers, strict=True)):
            out = None if kept is None else (scores[k], attention[k])
            x, S, A = _block(xp, ops, block, lw, x, allowed, positions, dtype, cache, out=out)
            if kept is None:
                hidden.append(x)
                scores.append(S)
                attention.append(A)
            else:
                for kept_k, made in ((scores[k], S), (attention[k], A)):
                    if made is not kept_k:  # a step that could not write in place (none does today)
                        kept_k[...] = made
                hidden[k + 1] = x
                x = hidden[k + 1]
        f = plan.final_norm
        if f is not None:
            hidden[-1] = ops.norm(xp, x, f, weights.final_norm, weights.final_norm_bias)
    _check_finite(xp, hidden, scores, dtype)
    if kept is not None:
        return ForwardOutput(hidden_states=hidden, attention=attention, scores=scores)
    return ForwardOutput(hidden_states=xp.stack(hidden), attention=xp.stack(attention), scores=xp.stack(scores))


def _outputs(plan: ModelPlan, x) -> tuple[Any, Any, Any] | None:
    """The arrays a NumPy pass over ``x`` ``(B, n, d)`` writes into: hidden states ``(L + 1, B, n, d)``, weights and
    scores ``(L, B, H, n, n)``; None for another library or a plan whose layers differ in heads."""
    heads = {block.attention.heads for block in plan.blocks}
    if not isinstance(x, np.ndarray) or len(heads) != 1:
        return None
    (H,), (B, n, d), L = heads, x.shape, len(plan.blocks)
    return np.empty((L + 1, B, n, d), x.dtype), np.empty((L, B, H, n, n), x.dtype), np.empty((L, B, H, n, n), x.dtype)


# ---------------------------------------------------------------------------------------------- logits
def final_norm(plan: ModelPlan, weights: Weights, x):
    """The final norm of hidden states ``x`` ``(..., d)`` (a copy of ``x`` when the plan has none)."""
    xp = array_namespace(weights.word)
    if plan.final_norm is None:
        return x + 0.0
    return ARRAY.norm(xp, x, plan.final_norm, weights.final_norm, weights.final_norm_bias)


def unembedding(plan: ModelPlan, weights: Weights):
    """The ``(d, vocab)`` matrix ``U`` of the logits ``z = h U``: the checkpoint's LM head, or ``E_wordᵀ`` when tied.

    Raises
    ------
    NoLMHeadError
        An encoder (attnsym runs it without an LM head), or a decoder whose checkpoint holds no
        LM head and does not tie it to the embedding (a base model saved without its head).
    """
    if not plan.causal:
        raise NoLMHeadError(f"{plan.model_type} is an encoder (bidirectional attention): attnsym runs it without a "
                            "language-model head, so it has no next-token logits; load a decoder (causal) model")
    if weights.lm_head is not None:
        return weights.lm_head
    if plan.tie_word_embeddings:
        return array_namespace(weights.word).matrix_transpose(weights.word)  # (d, vocab): a view
    raise NoLMHeadError(f"this {plan.model_type} checkpoint holds no LM head ('lm_head.weight') and does not tie it to "
                        "the embedding (tie_word_embeddings false): a base model saved without its head has no "
                        "next-token logits")


def final_logits(plan: ModelPlan, weights: Weights, h):
    r"""The logits ``(..., vocab)`` of final-normed hidden states ``h`` ``(..., d)``: ``h U`` (soft-capped, Gemma 2).

    .. math::  z = h\,U, \qquad z \leftarrow c \tanh(z / c) \text{ with the plan's } c = \texttt{final\_softcap}

    Raises
    ------
    NoLMHeadError
        See :func:`unembedding`.

    Examples
    --------
    >>> m = at.models.packaged_model()
    >>> final_logits(m.config, m.weights, np.zeros(384, np.float32))
    Traceback (most recent call last):
    ...
    attnsym.models.errors.NoLMHeadError: bert is an encoder (bidirectional attention): attnsym runs it without a
    language-model head, so it has no next-token logits; load a decoder (causal) model
    """
    xp = array_namespace(weights.word)
    z = xp.matmul(h, unembedding(plan, weights))  # (..., vocab)
    cap = plan.final_softcap
    return z if cap is None else cap * xp.tanh(z / cap)


# ---------------------------------------------------------------------------------------------- key/value cache
class LayerCache:
    """One layer's cached keys ``(B, H_kv, t, d_k)`` (QK-normed, rotated) and values ``(B, H_kv, t, d_v)``."""

    def __init__(self) -> None:
        self.keys: Any = None
        self.values: Any = None

    @property
    def length(self) -> int:
        """Tokens cached."""
        return 0 if self.keys is None else int(self.keys.shape[-2])

    def extend(self, xp, K, V) -> tuple[Any, Any]:
        """Append the new tokens' ``K``, ``V`` ``(B, H_kv, r, ·)``; return every key and value so far."""
        if self.keys is None:
            self.keys, self.values = K, V
        else:
            self.keys, self.values = xp.concat([self.keys, K], axis=-2), xp.concat([self.values, V], axis=-2)
        return self.keys, self.values


@dataclass(frozen=True)
class KVCache:
    """The keys and values of the tokens decoded so far, one :class:`LayerCache` per block (:func:`forward_cached`)."""

    layers: tuple[LayerCache, ...]

    @classmethod
    def empty(cls, plan: ModelPlan) -> KVCache:
        """A cache holding no token, for the blocks of ``plan``."""
        return cls(tuple(LayerCache() for _ in plan.blocks))

    @property
    def length(self) -> int:
        """Tokens cached (the position of the next token)."""
        return self.layers[0].length if self.layers else 0


def forward_cached(plan: ModelPlan, weights: Weights, input_ids, cache: KVCache):
    """The final-normed hidden states ``(B, r, d)`` of ``r`` new tokens after the ``cache.length`` cached ones.

    Runs every block on the new tokens only, at positions ``p0 … p0+r−1`` (``p0 = cache.length``),
    against the cached keys and values, which it extends (module docstring). Row for row the
    same as :func:`forward` over all ``p0 + r`` tokens (no padding: one unpadded row per batch entry).

    Raises
    ------
    ShapeError
        The computation overflowed the dtype.

    Examples
    --------
    >>> m = at.models.packaged_model()
    >>> ids, cache = np.array([[101, 1045, 2066, 102]]), KVCache.empty(m.config)
    >>> h = forward_cached(m.config, m.weights, ids, cache)     # no token cached yet: the whole pass
    >>> h.shape, cache.length
    ((1, 4, 384), 4)
    >>> bool(np.allclose(h, forward(m.config, m.weights, ids).hidden_states[-1], atol=1e-5))
    True
    """
    xp = array_namespace(weights.word)
    ids = xp.asarray(input_ids, device=_device(weights.word))
    B, r = ids.shape
    p0 = cache.length
    ops = FUSED if _fused_for(weights.word, B * r) else ARRAY
    positions = xp.broadcast_to(xp.arange(p0 + r, device=_device(weights.word)), (B, p0 + r))  # every token so far
    with np.errstate(over="ignore", invalid="ignore"):
        x = embed(plan, weights, ids, None, positions[:, p0:], ops)
        dtype = dtype_name(x)
        hidden, scores = [x], []
        bound: dict[Any, tuple] = {}
        for block, lw, past in zip(plan.blocks, weights.layers, cache.layers, strict=True):
            x, S, _ = _block(xp, ops, block, lw, x, None, positions, dtype, bound, past)
            hidden.append(x)
            scores.append(S)
        if plan.final_norm is not None:
            x = hidden[-1] = ops.norm(xp, x, plan.final_norm, weights.final_norm, weights.final_norm_bias)
    _check_finite(xp, hidden, scores, dtype)
    return x
