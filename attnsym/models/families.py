"""The family table: ``model_type`` -> how to build a :class:`~attnsym.models.plan.ModelPlan` and read its weights.

Each family of :data:`FAMILIES` is a function from the parsed ``config.json`` to a plan (one
:class:`~attnsym.models.plan.Block` per layer, each with its :class:`~attnsym.AttentionSpec`)
plus how its checkpoint stores the tensors (:data:`LAYOUTS`: prefixes, the name map :data:`NAME_MAPS`,
matrix storage, q|k|v fusion), read by the one reader :func:`attnsym.models.weights.read_weights`. Options a family does not
implement are refused by name (:class:`~attnsym.models.UnsupportedModelError`).

Both ways configs write RoPE are read: ``rope_theta`` + ``rope_scaling`` (checkpoints written
by transformers 4) and ``rope_parameters`` (transformers 5, which holds ``rope_theta`` and
``rope_type`` together).

>>> sorted(FAMILIES)  # doctest: +NORMALIZE_WHITESPACE
['bert', 'bloom', 'deepseek_v3', 'gemma2', 'gemma3_text', 'gpt2', 'gpt_neox', 'gpt_oss', 'llama', 'llama4_text',
 'mistral', 'olmo2', 'phi3', 'qwen2', 'qwen3', 'qwen3_next', 'smollm3']
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import SpecError
from ..spec import AttentionSpec, RopeScaling
from .errors import ModelError, UnsupportedModelError
from .families_2026 import FAMILIES_2026, NAME_MAPS_2026, OPTIONS_2026, QKV_2026
from .families_mla import FAMILIES_MLA, NAME_MAPS_MLA, OPTIONS_MLA
from .keys import (
    ACTIVATIONS,
    activation_name,
    config_name,
    finite_number,
    flag,
    norm_eps,
    positive_size,
    read_key,
    refuse,
    short_repr,
    token_id,
)
from .plan import Block, Layout, ModelPlan, Norm
from .schedule import rope_base_and_scaling

__all__ = ["FAMILIES", "LAYOUTS", "NAME_MAPS", "OPTIONS", "TENSOR_NAMES", "describe_model", "families_table",
           "family_names", "family_of", "gpt2_scale", "layer_spec", "read_plan"]


def _windows(raw: dict[str, Any], path: Path, layers: int, family: str) -> list[int | None]:
    """The sliding window of each layer (None: full attention)."""
    window = raw.get("sliding_window")
    if family == "mistral":
        return [None if window is None else positive_size(raw, "sliding_window", path)] * layers
    layer_types = raw.get("layer_types")
    if family in ("qwen2", "qwen3") and not flag(raw, "use_sliding_window", path, False):
        return [None] * layers  # the window is only used with use_sliding_window (transformers does the same)
    if layer_types is not None:
        if not isinstance(layer_types, list) or len(layer_types) != layers:
            raise ModelError(f"{path}: 'layer_types' must list one type per layer ({layers}) (got {layer_types!r})")
        for t in layer_types:
            if t not in ("full_attention", "sliding_attention"):
                refuse(path, "layer_types", t, "attnsym implements 'full_attention' and 'sliding_attention'")
        if "sliding_attention" in layer_types:
            window = positive_size(raw, "sliding_window", path)
        return [window if t == "sliding_attention" else None for t in layer_types]
    if window is None:
        return [None] * layers
    window = positive_size(raw, "sliding_window", path)
    first = read_key(raw, "max_window_layers", int, path, 0)  # transformers 4: layers from max_window_layers on slide
    return [window if i >= first else None for i in range(layers)]


def _llama_like(raw: dict[str, Any], path: Path, family: str) -> ModelPlan:
    act = raw.get("hidden_act", "silu")
    if act != "silu":
        refuse(path, "hidden_act", act, f"attnsym runs {family} with the SwiGLU MLP, activation 'silu'")
    if flag(raw, "mlp_bias", path, False):
        refuse(path, "mlp_bias", raw["mlp_bias"], "attnsym runs the MLP without biases")
    width = positive_size(raw, "hidden_size", path)
    heads = positive_size(raw, "num_attention_heads", path)
    kv_heads = positive_size(raw, "num_key_value_heads", path, heads)
    layers = positive_size(raw, "num_hidden_layers", path)
    if "head_dim" in raw and raw["head_dim"] is not None:
        head_dim = positive_size(raw, "head_dim", path)
    else:
        if width % heads:
            raise ModelError(f"{path}: the heads ({heads}) must divide the width ({width}) when head_dim is not given")
        head_dim = width // heads
    eps = norm_eps(raw, "rms_norm_eps", path, 1e-6)
    max_positions = positive_size(raw, "max_position_embeddings", path)
    theta, scaling = rope_base_and_scaling(raw, path)
    bias: bool | str = "qkv" if family == "qwen2" else flag(raw, "attention_bias", path, False)
    windows = _windows(raw, path, layers, family)
    norm = Norm("rms", eps)
    blocks: list[Block] = []
    made: dict[int | None, Block] = {}  # identical layers (the same window) share one block, built once
    ffn_width = positive_size(raw, "intermediate_size", path)
    for window in windows:
        if window in made:
            blocks.append(made[window])
            continue
        try:
            spec = AttentionSpec(n=max_positions, d_model=width, heads=heads, d_k=head_dim, d_v=head_dim,
                                 kv_heads=kv_heads, causal=True, bias=bias, positions="rope", position_base=theta,
                                 output_projection=True, window=window, qk_norm=family == "qwen3",
                                 qk_norm_eps=eps if family == "qwen3" else 1e-6,
                                 rope_scaling=None if scaling is None else RopeScaling.from_mapping(scaling))
        except SpecError as error:
            raise ModelError(f"{path}: the attention of {config_name(raw)} is not a valid layer ({error})") from None
        blocks.append(made.setdefault(window, Block(attention=spec, norm=norm, ffn_width=ffn_width)))
    vocab = positive_size(raw, "vocab_size", path)
    return ModelPlan(model_type=family, width=width, vocab_size=vocab,
                     max_positions=max_positions, blocks=tuple(blocks), final_norm=norm,
                     tie_word_embeddings=flag(raw, "tie_word_embeddings", path, False),
                     pad_token_id=token_id(raw, "pad_token_id", path, vocab, None))


def _gemma2(raw: dict[str, Any], path: Path) -> ModelPlan:
    """Gemma 2: the LLaMA layout with ``1 + w`` RMSNorms before and after attention and MLP, soft-capped
    logits, the scale ``query_pre_attn_scalar ** -0.5``, alternating sliding / global layers, a
    GeGLU MLP (tanh GELU) and the embedding times ``sqrt(hidden_size)``."""
    act = raw.get("hidden_activation", raw.get("hidden_act", "gelu_pytorch_tanh"))
    if act != "gelu_pytorch_tanh":
        refuse(path, "hidden_activation", act, "attnsym runs gemma2 with the tanh-GELU gated MLP")
    layers = positive_size(raw, "num_hidden_layers", path)
    if raw.get("layer_types") is None:  # transformers 4: even layers slide
        raw = {**raw, "layer_types": ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)]}
    plan = _llama_like({**raw, "hidden_act": "silu"}, path, "gemma2")  # its own name in every message
    scalar = finite_number(raw, "query_pre_attn_scalar", path, plan.blocks[0].attention.d_k, positive=True)
    cap = finite_number(raw, "attn_logit_softcapping", path, None, positive=True)
    norm = Norm("rms", plan.blocks[0].norm.eps, offset=1.0)  # _llama_like's one norm
    try:
        blocks = tuple(Block(attention=b.attention.with_(scale=float(scalar) ** -0.5,
                                                          softcap=None if cap is None else float(cap)),
                             norm=norm, ffn_width=b.ffn_width, activation="gelu_tanh", post_norms=True)
                       for b in plan.blocks)
    except SpecError as error:
        raise ModelError(f"{path}: the attention of {config_name(raw)} is not a valid layer ({error})") from None
    return ModelPlan(model_type="gemma2", width=plan.width, vocab_size=plan.vocab_size,
                     max_positions=plan.max_positions, blocks=blocks, final_norm=norm,
                     tie_word_embeddings=flag(raw, "tie_word_embeddings", path, True), pad_token_id=plan.pad_token_id,
                     embed_scale=float(plan.width) ** 0.5, final_softcap=_softcap(raw, path))


def _softcap(raw: dict[str, Any], path: Path) -> float | None:
    """Gemma 2's ``final_logit_softcapping`` (the logits' ``c·tanh(z / c)``), None when absent."""
    cap = read_key(raw, "final_logit_softcapping", (int, float), path, None)
    if cap is not None and not (math.isfinite(cap) and cap > 0):
        raise ModelError(f"{path}: 'final_logit_softcapping' must be a positive number (got {cap!r})")
    return None if cap is None else float(cap)


def _gpt_neox(raw: dict[str, Any], path: Path) -> ModelPlan:
    """GPT-NeoX (Pythia): LayerNorms, partial rotary, fused per-head q|k|v, GELU MLP, parallel residual."""
    act = raw.get("hidden_act", "gelu")
    if act != "gelu":
        refuse(path, "hidden_act", act, "attnsym runs gpt_neox with the exact 'gelu'")
    if not flag(raw, "attention_bias", path, True):
        refuse(path, "attention_bias", raw["attention_bias"], "attnsym runs gpt_neox with its q/k/v/output biases")
    width = positive_size(raw, "hidden_size", path)
    heads = positive_size(raw, "num_attention_heads", path)
    if width % heads:
        raise ModelError(f"{path}: the heads ({heads}) must divide the width ({width})")
    params: dict[str, Any] = raw["rope_parameters"] if isinstance(raw.get("rope_parameters"), dict) else {}
    key, source = ("partial_rotary_factor", params) if "partial_rotary_factor" in params else ("rotary_pct", raw)
    pct = finite_number({**source, "model_type": "gpt_neox"}, key, path, 1.0, positive=True, at_most=1.0)
    theta_key = "rope_theta" if raw.get("rope_theta") is not None else "rotary_emb_base"
    theta, scaling = rope_base_and_scaling({**raw, "rope_theta": raw.get(theta_key)}, path, theta_key)
    if scaling is not None:
        scaling = {k: v for k, v in scaling.items() if k != "partial_rotary_factor"}
    max_positions = positive_size(raw, "max_position_embeddings", path)
    norm = Norm("layer", norm_eps(raw, "layer_norm_eps", path, 1e-5))
    try:
        spec = AttentionSpec(n=max_positions, d_model=width, heads=heads, causal=True, bias=True, positions="rope",
                             position_base=theta, rotary_pct=pct, output_projection=True,
                             rope_scaling=None if scaling is None else RopeScaling.from_mapping(scaling))
    except SpecError as error:
        raise ModelError(f"{path}: the attention of {config_name(raw)} is not a valid layer ({error})") from None
    residual = "parallel" if flag(raw, "use_parallel_residual", path, True) else "sequential"
    block = Block(attention=spec, norm=norm, ffn_width=positive_size(raw, "intermediate_size", path), mlp="plain",
                  activation="gelu", residual=residual)
    vocab = positive_size(raw, "vocab_size", path)
    return ModelPlan(model_type="gpt_neox", width=width, vocab_size=vocab,
                     max_positions=max_positions, blocks=(block,) * positive_size(raw, "num_hidden_layers", path),
                     final_norm=norm, tie_word_embeddings=flag(raw, "tie_word_embeddings", path, False),
                     pad_token_id=token_id(raw, "pad_token_id", path, vocab, None))


def _alias(raw: dict[str, Any], *keys: str) -> str:
    """The first of ``keys`` the config gives (BLOOM's ``n_embed`` for ``hidden_size``), else the first (named if missing)."""
    return next((key for key in keys if raw.get(key) is not None), keys[0])


def _plain_spec(path: Path, **fields: Any) -> AttentionSpec:
    try:
        return AttentionSpec(bias=True, output_projection=True, **fields)
    except SpecError as error:
        raise ModelError(f"{path}: the attention of config.json is not a valid layer ({error})") from None


def _bert(raw: dict[str, Any], path: Path) -> ModelPlan:
    """BERT: learned absolute positions + token types + an embedding LayerNorm, post-LayerNorm blocks, exact GELU."""
    if raw.get("position_embedding_type") not in (None, "absolute"):
        refuse(path, "position_embedding_type", raw["position_embedding_type"], "only learned 'absolute' positions")
    for key in ("is_decoder", "add_cross_attention"):
        if flag(raw, key, path, False):
            refuse(path, key, raw[key], "attnsym runs BERT as an encoder")
    layers = positive_size(raw, "num_hidden_layers", path)
    heads = positive_size(raw, "num_attention_heads", path)
    width = positive_size(raw, "hidden_size", path)
    ffn = positive_size(raw, "intermediate_size", path)
    max_positions = positive_size(raw, "max_position_embeddings", path)
    vocab = positive_size(raw, "vocab_size", path)
    types = positive_size(raw, "type_vocab_size", path, 2)
    act = activation_name(raw, "hidden_act", path, "gelu")
    norm = Norm("layer", norm_eps(raw, "layer_norm_eps", path, 1e-12))
    pad = token_id(raw, "pad_token_id", path, vocab, 0)
    if width % heads:
        raise ModelError(f"{path}: the heads ({heads}) must divide the width ({width})")
    spec = _plain_spec(path, n=max_positions, d_model=width, heads=heads, causal=False)
    block = Block(attention=spec, norm=norm, ffn_width=ffn, placement="post", mlp="plain", activation=ACTIVATIONS[act])
    return ModelPlan(model_type="bert", width=width, vocab_size=vocab, max_positions=max_positions,
                     blocks=(block,) * layers, final_norm=None, pad_token_id=pad, embed_norm=norm, causal=False,
                     learned_positions=True, type_vocab_size=types)


def gpt2_scale(d_k: int, layer: int, scale_scores: bool, by_layer: bool) -> Any:
    """GPT-2's score scale of layer ``layer`` (from 0): ``1/sqrt(d_k)`` if ``scale_attn_weights``, times
    ``1/(layer + 1)`` if ``scale_attn_by_inverse_layer_idx`` (the spec's ``scale``: ``"sqrt"``, ``"none"`` or a number).

    >>> gpt2_scale(4, 1, True, True), gpt2_scale(4, 1, True, False), gpt2_scale(4, 2, False, True)
    (0.25, 'sqrt', 0.3333333333333333)
    """
    if not by_layer:
        return "sqrt" if scale_scores else "none"
    return 1.0 / ((float(np.sqrt(d_k)) if scale_scores else 1.0) * (layer + 1))


def _gpt2(raw: dict[str, Any], path: Path) -> ModelPlan:
    """GPT-2: learned positions, pre-LayerNorm, Conv1D weights with a fused ``c_attn``, ``gelu_new``, its scale flags."""
    if flag(raw, "add_cross_attention", path, False):
        refuse(path, "add_cross_attention", raw["add_cross_attention"], "attnsym runs GPT-2 as a decoder-only model")
    width = positive_size(raw, "n_embd", path)
    layers = positive_size(raw, "n_layer", path)
    heads = positive_size(raw, "n_head", path)
    ffn = positive_size(raw, "n_inner", path, 4 * width)
    max_positions = positive_size(raw, "n_positions", path)
    vocab = positive_size(raw, "vocab_size", path)
    act = activation_name(raw, "activation_function", path, "gelu_new")
    norm = Norm("layer", norm_eps(raw, "layer_norm_epsilon", path, 1e-5))
    by_layer = flag(raw, "scale_attn_by_inverse_layer_idx", path, False)
    scale_scores = flag(raw, "scale_attn_weights", path, True)
    pad = token_id(raw, "pad_token_id", path, vocab, None)
    if width % heads:
        raise ModelError(f"{path}: the heads ({heads}) must divide the width ({width})")
    blocks = tuple(Block(attention=_plain_spec(path, n=max_positions, d_model=width, heads=heads, causal=True,
                                               scale=gpt2_scale(width // heads, i, scale_scores, by_layer)),
                         norm=norm, ffn_width=ffn, mlp="plain", activation=ACTIVATIONS[act])
                   for i in range(layers))
    return ModelPlan(model_type="gpt2", width=width, vocab_size=vocab, max_positions=max_positions, blocks=blocks,
                     final_norm=norm, tie_word_embeddings=True, pad_token_id=pad, learned_positions=True)


def _bloom(raw: dict[str, Any], path: Path) -> ModelPlan:
    """BLOOM: ALiBi, a LayerNorm on the embedding, fused per-head q|k|v, tanh-GELU MLP, pre-LayerNorm."""
    if flag(raw, "apply_residual_connection_post_layernorm", path, False):
        refuse(path, "apply_residual_connection_post_layernorm", True, "attnsym runs bloom's default residual")
    width = positive_size(raw, _alias(raw, "hidden_size", "n_embed"), path)  # each read and checked under its own name
    heads = positive_size(raw, _alias(raw, "n_head", "num_attention_heads"), path)
    if width % heads:
        raise ModelError(f"{path}: the heads ({heads}) must divide the width ({width})")
    max_positions = positive_size(raw, "seq_length", path, 2048)  # ALiBi has no position table; the text limit
    norm = Norm("layer", norm_eps(raw, "layer_norm_epsilon", path, 1e-5))
    try:
        spec = AttentionSpec(n=max_positions, d_model=width, heads=heads, causal=True, bias=True, positions="alibi",
                             output_projection=True)
    except SpecError as error:
        raise ModelError(f"{path}: the attention of {config_name(raw)} is not a valid layer ({error})") from None
    block = Block(attention=spec, norm=norm, ffn_width=4 * width, mlp="plain", activation="gelu_tanh_bloom")
    layers = positive_size(raw, _alias(raw, "n_layer", "num_hidden_layers"), path)
    vocab = positive_size(raw, "vocab_size", path)
    return ModelPlan(model_type="bloom", width=width, vocab_size=vocab,
                     max_positions=max_positions, blocks=(block,) * layers, final_norm=norm,
                     tie_word_embeddings=flag(raw, "tie_word_embeddings", path, True),
                     pad_token_id=token_id(raw, "pad_token_id", path, vocab, None), embed_norm=norm)


#: ``model_type`` -> the function building its plan from ``config.json``
FAMILIES: dict[str, Callable[[dict[str, Any], Path], ModelPlan]] = {
    "bert": _bert,
    "gpt2": _gpt2,
    "llama": lambda raw, path: _llama_like(raw, path, "llama"),
    "mistral": lambda raw, path: _llama_like(raw, path, "mistral"),
    "qwen2": lambda raw, path: _llama_like(raw, path, "qwen2"),
    "qwen3": lambda raw, path: _llama_like(raw, path, "qwen3"),
    "gemma2": _gemma2,
    "gpt_neox": _gpt_neox,
    "bloom": _bloom,
    **FAMILIES_2026,
    **FAMILIES_MLA,
}
#: ``model_type`` -> what the family is and the options read from ``config.json`` (the docs' table)
OPTIONS: dict[str, tuple[str, str]] = {
    "bert": ("BERT encoder: learned positions + token types + embedding LayerNorm, post-LayerNorm, bidirectional, "
             "GELU MLP (MiniLM, BERT, ...)",
             "hidden_size, num_attention_heads, intermediate_size, max_position_embeddings, type_vocab_size, "
             "hidden_act, layer_norm_eps, pad_token_id"),
    "gpt2": ("GPT-2 decoder: learned positions, pre-LayerNorm, Conv1D weights with a fused c_attn q|k|v, "
             "gelu_new MLP, ln_f",
             "n_embd, n_head, n_layer, n_inner, n_positions, activation_function, layer_norm_epsilon, "
             "scale_attn_weights, scale_attn_by_inverse_layer_idx (the spec's scale per layer)"),
    "llama": ("LLaMA decoder: pre-RMSNorm, RoPE (rotate_half), grouped-query attention, SwiGLU MLP",
              "num_key_value_heads, head_dim, rope_theta, rope_scaling (linear, llama3), attention_bias, "
              "tie_word_embeddings"),
    "mistral": ("LLaMA layout with a sliding window in every layer",
                "as llama, plus sliding_window (the spec's window)"),
    "qwen2": ("LLaMA layout with biases on q, k, v only",
              "as llama, plus sliding_window / max_window_layers / layer_types when use_sliding_window is true"),
    "qwen3": ("LLaMA layout with QK-norm (RMSNorm of each head's q and k, before RoPE)",
              "as qwen2, plus q_norm / k_norm gains (eps rms_norm_eps); head_dim need not be hidden / heads"),
    "gemma2": ("Gemma 2: 1 + w RMSNorms before and after attention and MLP, soft-capped scores, alternating "
               "sliding / global layers, GeGLU MLP, embedding × sqrt(hidden_size)",
               "as llama, plus query_pre_attn_scalar (the scale), attn_logit_softcapping (the spec's softcap), "
               "sliding_window with layer_types (default: even layers slide), hidden_activation"),
    "gpt_neox": ("GPT-NeoX (Pythia): pre-LayerNorm, partial rotary, fused per-head q|k|v, GELU MLP, parallel residual",
                 "rotary_pct / partial_rotary_factor, rotary_emb_base / rope_theta, use_parallel_residual, "
                 "layer_norm_eps"),
    "bloom": ("BLOOM: ALiBi (the spec's slopes), LayerNorm on the embedding, fused per-head q|k|v, tanh-GELU MLP",
              "n_embed / hidden_size, n_layer, n_head, layer_norm_epsilon, seq_length (the longest text)"),
    **OPTIONS_2026,
    **OPTIONS_MLA,
}

#: tensor names of a LLaMA-layout block (``{i}`` the layer) and of the model, after the prefix ``model.``
TENSOR_NAMES: dict[str, str] = {
    "embed": "embed_tokens.weight",
    "final_norm": "norm.weight",
    "attn_norm": "layers.{i}.input_layernorm.weight",
    "mlp_norm": "layers.{i}.post_attention_layernorm.weight",
    "W_Q": "layers.{i}.self_attn.q_proj.weight", "b_Q": "layers.{i}.self_attn.q_proj.bias",
    "W_K": "layers.{i}.self_attn.k_proj.weight", "b_K": "layers.{i}.self_attn.k_proj.bias",
    "W_V": "layers.{i}.self_attn.v_proj.weight", "b_V": "layers.{i}.self_attn.v_proj.bias",
    "W_O": "layers.{i}.self_attn.o_proj.weight", "b_O": "layers.{i}.self_attn.o_proj.bias",
    "g_Q": "layers.{i}.self_attn.q_norm.weight", "g_K": "layers.{i}.self_attn.k_norm.weight",
    "W_gate": "layers.{i}.mlp.gate_proj.weight", "W_up": "layers.{i}.mlp.up_proj.weight",
    "W_down": "layers.{i}.mlp.down_proj.weight",
}


def _fused_names(layer: str, qkv: str, dense: str, embed: str, final: str) -> dict[str, str]:
    """GPT-NeoX's and BLOOM's names: one ``query_key_value`` per layer, ``dense_h_to_4h`` / ``dense_4h_to_h`` MLP."""
    return {"embed": f"{embed}.weight", "final_norm": f"{final}.weight",
            "embed_norm": "word_embeddings_layernorm.weight",
            "attn_norm": f"{layer}input_layernorm.weight", "mlp_norm": f"{layer}post_attention_layernorm.weight",
            "W_QKV": f"{layer}{qkv}.weight", "b_QKV": f"{layer}{qkv}.bias",
            "W_O": f"{layer}{dense}.weight", "b_O": f"{layer}{dense}.bias",
            "W_up": f"{layer}mlp.dense_h_to_4h.weight", "b_up": f"{layer}mlp.dense_h_to_4h.bias",
            "W_down": f"{layer}mlp.dense_4h_to_h.weight", "b_down": f"{layer}mlp.dense_4h_to_h.bias"}


_BERT_LAYER = "encoder.layer.{i}."

#: per family, the tensor names that differ from :data:`TENSOR_NAMES` (bert, gpt2, gpt_neox and bloom: all of them)
NAME_MAPS: dict[str, dict[str, str]] = {
    "bert": {"embed": "embeddings.word_embeddings.weight", "position": "embeddings.position_embeddings.weight",
             "token_type": "embeddings.token_type_embeddings.weight", "embed_norm": "embeddings.LayerNorm.weight",
             "W_Q": _BERT_LAYER + "attention.self.query.weight", "b_Q": _BERT_LAYER + "attention.self.query.bias",
             "W_K": _BERT_LAYER + "attention.self.key.weight", "b_K": _BERT_LAYER + "attention.self.key.bias",
             "W_V": _BERT_LAYER + "attention.self.value.weight", "b_V": _BERT_LAYER + "attention.self.value.bias",
             "W_O": _BERT_LAYER + "attention.output.dense.weight", "b_O": _BERT_LAYER + "attention.output.dense.bias",
             "attn_norm": _BERT_LAYER + "attention.output.LayerNorm.weight",
             "W_up": _BERT_LAYER + "intermediate.dense.weight", "b_up": _BERT_LAYER + "intermediate.dense.bias",
             "W_down": _BERT_LAYER + "output.dense.weight", "b_down": _BERT_LAYER + "output.dense.bias",
             "mlp_norm": _BERT_LAYER + "output.LayerNorm.weight"},
    "gpt2": {"embed": "wte.weight", "position": "wpe.weight", "final_norm": "ln_f.weight",
             "attn_norm": "h.{i}.ln_1.weight", "mlp_norm": "h.{i}.ln_2.weight",
             "W_QKV": "h.{i}.attn.c_attn.weight", "b_QKV": "h.{i}.attn.c_attn.bias",
             "W_O": "h.{i}.attn.c_proj.weight", "b_O": "h.{i}.attn.c_proj.bias",
             "W_up": "h.{i}.mlp.c_fc.weight", "b_up": "h.{i}.mlp.c_fc.bias",
             "W_down": "h.{i}.mlp.c_proj.weight", "b_down": "h.{i}.mlp.c_proj.bias"},
    "gemma2": {"mlp_norm": "layers.{i}.pre_feedforward_layernorm.weight",
               "post_attn_norm": "layers.{i}.post_attention_layernorm.weight",
               "post_mlp_norm": "layers.{i}.post_feedforward_layernorm.weight"},
    "gpt_neox": _fused_names("layers.{i}.", "attention.query_key_value", "attention.dense", "embed_in",
                             "final_layer_norm") | {"lm_head": "embed_out.weight"},
    "bloom": _fused_names("h.{i}.", "self_attention.query_key_value", "self_attention.dense", "word_embeddings",
                          "ln_f"),
}

#: ``model_type`` -> how its checkpoint stores the tensors: prefixes tried, names, matrix storage, q|k|v fusion
LAYOUTS: dict[str, Layout] = {
    "bert": Layout(("bert.",), NAME_MAPS["bert"]),
    "gpt2": Layout(("transformer.",), NAME_MAPS["gpt2"], transposed=False, qkv="columns"),  # Conv1D: (d_in, d_out)
    **{k: Layout(("model.",), TENSOR_NAMES | NAME_MAPS.get(k, {})) for k in ("llama", "mistral", "qwen2", "qwen3",
                                                                            "gemma2")},
    "gpt_neox": Layout(("gpt_neox.",), NAME_MAPS["gpt_neox"], qkv="per_head"),
    "bloom": Layout(("transformer.",), NAME_MAPS["bloom"], qkv="per_head"),
    **{k: Layout(("model.",), {r: v for r, v in (TENSOR_NAMES | names).items() if v is not None},
                 qkv=QKV_2026.get(k, "separate")) for k, names in (NAME_MAPS_2026 | NAME_MAPS_MLA).items()},
}


def families_table() -> str:
    """The Markdown table of every ``model_type`` attnsym loads (the docs page "Routing in a real model").

    >>> print(families_table().splitlines()[0])
    | `model_type` | architecture | options read from `config.json` |
    """
    def cell(text: str) -> str:
        return text.replace("|", "\\|")  # "q|k|v" stays in its cell

    rows = ["| `model_type` | architecture | options read from `config.json` |", "|---|---|---|"]
    rows += [f"| `{k}` | {cell(OPTIONS[k][0])} | {cell(OPTIONS[k][1])} |" for k in FAMILIES]
    return "\n".join(rows)


def family_names() -> str:
    """Every ``model_type`` attnsym loads, in the table's order, as one line (help texts and docs quote it).

    >>> family_names().split(", ")[:2]
    ['bert', 'gpt2']
    """
    return ", ".join(FAMILIES)


def family_of(raw: dict[str, Any], path: Path) -> str:
    """The ``model_type`` of a parsed ``config.json``, once it is a family of :data:`FAMILIES`.

    >>> family_of({"model_type": "t5"}, Path("config.json"))
    Traceback (most recent call last):
    ...
    attnsym.models.errors.UnsupportedModelError: config.json: model_type 't5' is not supported; attnsym runs 'bert', ...
    """
    model_type = raw.get("model_type")
    if not isinstance(model_type, str) or model_type not in FAMILIES:
        raise UnsupportedModelError(f"{path}: model_type {short_repr(model_type)} is not supported; attnsym runs "
                                    f"{', '.join(map(repr, FAMILIES))}")
    return model_type


def read_plan(raw: dict[str, Any], path: Path) -> ModelPlan:
    """The plan of a ``config.json`` whose ``model_type`` is in :data:`FAMILIES`, with its :data:`LAYOUTS` entry.

    The one dispatch on ``model_type``: :func:`attnsym.models.config.read_config` (a model folder)
    and :mod:`attnsym.models.gguf_plan` (a GGUF file's metadata) both build their plan here.
    """
    model_type = family_of(raw, path)
    return replace(FAMILIES[model_type](raw, path), layout=LAYOUTS[model_type])


def layer_spec(config: ModelPlan, layer: int) -> AttentionSpec:
    """The :class:`~attnsym.AttentionSpec` of layer ``layer`` (from 0) of any loaded model.

    For BERT and GPT-2 (learned absolute positions, added to the embeddings before layer 0, so
    the spec has ``positions=None``): biases on q, k, v and the output; GPT-2 is causal and its
    ``scale_attn_by_inverse_layer_idx`` gives layer ``l`` the scale ``1 / (sqrt(d_k) (l + 1))``
    (:func:`gpt2_scale`).
    """
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= layer < config.layers:
        raise ModelError(f"layer must be an integer in 0 … {config.layers - 1} (got {layer!r})")
    return config.blocks[int(layer)].attention


def describe_model(config: ModelPlan) -> str:
    """One line per block (and the embedding and final norm): what runs."""
    return "\n".join(config.lines())
