"""The families of 2026: each a short function from ``config.json`` to a plan whose blocks carry the layer schedule.

Every per-layer fact is data in the block's :class:`~attnsym.AttentionSpec` (its window, its
RoPE base and scaling or no positions at all, its QK-norm, its sink); the config keys that set
them are read by :mod:`attnsym.models.schedule` (``layer_types``, the reversed ``no_rope_layers``,
per-type ``rope_parameters``). The family table of :mod:`attnsym.models.families` registers
them (:data:`FAMILIES_2026`, :data:`OPTIONS_2026`, :data:`NAME_MAPS_2026`, :data:`QKV_2026`).

* ``gemma3_text`` — Gemma 3: Gemma 2's block (``1 + w`` norms before and after both sublayers,
  GeGLU, embedding × √width) with QK-norm per head (``1 + w`` gains), five local layers to one
  global by default, each layer type with its own RoPE (local 10 000, global 1 000 000 and its
  scaling).
* ``olmo2`` — OLMo 2: norms only on the sublayers' outputs, QK-norm over the whole projection.
* ``smollm3`` — SmolLM3: LLaMA's block, every fourth layer without positions (``no_rope_layers``).
* ``phi3`` — Phi-3: fused ``qkv_proj`` and ``gate_up_proj``, partial rotary, a window on every
  layer when ``sliding_window`` is set.
* ``gpt_oss`` — gpt-oss: a learned sink logit per head, alternating sliding / full layers, biases
  everywhere, a mixture of experts (clamped GLU) as the MLP.
* ``llama4_text`` — Llama 4: three chunked RoPE layers to one full NoPE layer by default
  (``no_rope_layers``, read backwards), a weightless QK-norm on the RoPE layers (the spec's gain
  offset 1 over zero gains), a query temperature on the NoPE layers, mixture-of-experts layers.

Every RoPE scaling of :data:`~attnsym.spec.ROPE_SCALING_TYPES` is read (linear, dynamic, llama3,
YaRN, Phi-3's LongRoPE); any other is refused by name, as is any layer type attnsym cannot run
exactly: a plan is whole or not made.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..spec import AttentionSpec
from .errors import ModelError
from .keys import flag as _flag
from .keys import norm_eps as _eps
from .keys import positive_size as _positive
from .keys import read_key as _get
from .keys import refuse as _refuse
from .keys import token_id as _token_id
from .plan import Block, Experts, ModelPlan, Norm
from .schedule import layer_types, rope_of_type, uses_rope, window_notes
from .schedule import rope_base_and_scaling as _rope

__all__ = ["FAMILIES_2026", "NAME_MAPS_2026", "OPTIONS_2026", "QKV_2026", "decoder_plan", "decoder_sizes", "decoder_spec",
           "require_activation"]


def decoder_spec(path: Path, **fields: Any) -> AttentionSpec:
    """A causal layer's :class:`~attnsym.spec.AttentionSpec` with its output projection; an invalid one is a
    :class:`~attnsym.models.errors.ModelError` naming the file."""
    try:
        return AttentionSpec(causal=True, output_projection=True, **fields)
    except SpecError as error:
        raise ModelError(f"{path}: the attention of config.json is not a valid layer ({error})") from None


def decoder_sizes(raw: dict[str, Any], path: Path) -> dict[str, Any]:
    """The sizes every decoder of this module reads, each by its own key."""
    width = _positive(raw, "hidden_size", path)
    heads = _positive(raw, "num_attention_heads", path)
    if raw.get("head_dim") is None and width % heads:
        raise ModelError(f"{path}: the heads ({heads}) must divide the width ({width}) when head_dim is not given")
    vocab = _positive(raw, "vocab_size", path)
    return {"width": width, "heads": heads, "kv_heads": _positive(raw, "num_key_value_heads", path, heads),
            "layers": _positive(raw, "num_hidden_layers", path),
            "head_dim": _positive(raw, "head_dim", path, width // heads),
            "max_positions": _positive(raw, "max_position_embeddings", path),
            "ffn": _positive(raw, "intermediate_size", path), "vocab": vocab,
            "eps": _eps(raw, "rms_norm_eps", path, 1e-6), "pad": _token_id(raw, "pad_token_id", path, vocab, None)}


def require_activation(raw: dict[str, Any], path: Path, keys: tuple[str, ...], wanted: str, family: str) -> None:
    """Refuse a config whose activation (the first of ``keys`` it sets) is not the family's ``wanted`` one."""
    act = next((raw[k] for k in keys if raw.get(k) is not None), wanted)
    if act != wanted:
        _refuse(path, keys[0], act, f"attnsym runs {family} with the activation {wanted!r}")


def decoder_plan(family: str, raw: dict[str, Any], path: Path, z: dict[str, Any], blocks: list[Block],
                 notes: list[str], **extra: Any) -> ModelPlan:
    """The :class:`~attnsym.models.plan.ModelPlan` of a decoder from its sizes ``z`` and ``blocks`` (``extra``:
    ``final_norm``, ``tie`` and the plan's other fields)."""
    return ModelPlan(model_type=family, width=z["width"], vocab_size=z["vocab"], max_positions=z["max_positions"],
                     blocks=tuple(blocks), final_norm=extra.pop("final_norm", Norm("rms", z["eps"])),
                     tie_word_embeddings=_flag(raw, "tie_word_embeddings", path, extra.pop("tie", False)),
                     pad_token_id=z["pad"], notes=tuple(notes), **extra)


def _window(raw: dict[str, Any], path: Path, types: list[str]) -> int | None:
    return _positive(raw, "sliding_window", path) if "sliding_attention" in types else None


def _gemma3(raw: dict[str, Any], path: Path) -> ModelPlan:
    """Gemma 3 (text): five sliding layers to one global by default, each type with its own RoPE, QK-norm (1 + w)."""
    z = decoder_sizes(raw, path)
    require_activation(raw, path, ("hidden_activation", "hidden_act"), "gelu_pytorch_tanh", "gemma3")
    if _flag(raw, "use_bidirectional_attention", path, False):
        _refuse(path, "use_bidirectional_attention", True, "attnsym runs gemma3 text as a causal decoder")
    pattern = _positive(raw, "sliding_window_pattern", path, 6)
    types = layer_types(raw, path, z["layers"], ["sliding_attention" if (i + 1) % pattern else "full_attention"
                                                  for i in range(z["layers"])])
    if "chunked_attention" in types:
        _refuse(path, "layer_types", "chunked_attention", "gemma3 has sliding and full layers")
    window = _window(raw, path, types)
    scalar = _get(raw, "query_pre_attn_scalar", (int, float), path, z["head_dim"])
    cap = _get(raw, "attn_logit_softcapping", (int, float), path, None)
    ropes = {t: rope_of_type({"rope_theta": 1_000_000.0, **raw}, path, t, "rope_local_base_freq") for t in set(types)}
    norm = Norm("rms", z["eps"], offset=1.0)
    blocks = [Block(attention=decoder_spec(path, n=z["max_positions"], d_model=z["width"], heads=z["heads"],
                                    d_k=z["head_dim"], kv_heads=z["kv_heads"], positions="rope",
                                    position_base=ropes[t][0], rope_scaling=ropes[t][1],
                                    window=window if t == "sliding_attention" else None,
                                    scale=float(scalar) ** -0.5, softcap=None if cap is None else float(cap),
                                    bias=_flag(raw, "attention_bias", path, False), qk_norm=True,
                                    qk_norm_eps=z["eps"], qk_norm_offset=1.0),
                    norm=norm, ffn_width=z["ffn"], activation="gelu_tanh", post_norms=True) for t in types]
    return decoder_plan("gemma3_text", raw, path, z, blocks, window_notes(raw, path, types, z["max_positions"], None),
                 final_norm=norm, tie=True, embed_scale=float(z["width"]) ** 0.5)


def _olmo2(raw: dict[str, Any], path: Path) -> ModelPlan:
    """OLMo 2: ``x + N(Attn(x))``, ``x' + N(MLP(x'))`` (no norm before a sublayer), QK-norm over the whole projection."""
    z = decoder_sizes(raw, path)
    require_activation(raw, path, ("hidden_act",), "silu", "olmo2")
    theta, scaling = _rope(raw, path)
    spec = decoder_spec(path, n=z["max_positions"], d_model=z["width"], heads=z["heads"], d_k=z["head_dim"],
                 kv_heads=z["kv_heads"], positions="rope", position_base=theta, rope_scaling=scaling,
                 bias=_flag(raw, "attention_bias", path, False), qk_norm=True, qk_norm_eps=z["eps"],
                 qk_norm_scope="whole_projection")
    block = Block(attention=spec, norm=Norm("rms", z["eps"]), ffn_width=z["ffn"], placement="output", post_norms=True)
    return decoder_plan("olmo2", raw, path, z, [block] * z["layers"], [])


def _smollm3(raw: dict[str, Any], path: Path) -> ModelPlan:
    """SmolLM3: LLaMA's block; ``no_rope_layers[i] = 1`` means layer ``i`` USES RoPE (default: every 4th has none)."""
    z = decoder_sizes(raw, path)
    require_activation(raw, path, ("hidden_act",), "silu", "smollm3")
    if _flag(raw, "mlp_bias", path, False):
        _refuse(path, "mlp_bias", True, "attnsym runs the MLP without biases")
    interval = _positive(raw, "no_rope_layer_interval", path, 4)
    rope = uses_rope(raw, path, z["layers"], [(i + 1) % interval != 0 for i in range(z["layers"])])
    slides = _flag(raw, "use_sliding_window", path, False) and raw.get("sliding_window") is not None
    types = layer_types(raw, path, z["layers"], ["sliding_attention" if slides and not r else "full_attention"
                                                  for r in rope])
    if "chunked_attention" in types:
        _refuse(path, "layer_types", "chunked_attention", "smollm3 has sliding and full layers")
    window = _window(raw, path, types)  # transformers' mask slides every 'sliding_attention' layer
    theta, scaling = _rope(raw, path)
    blocks = [Block(attention=decoder_spec(path, n=z["max_positions"], d_model=z["width"], heads=z["heads"],
                                    d_k=z["head_dim"], kv_heads=z["kv_heads"], positions="rope" if r else None,
                                    position_base=theta if r else 10000, rope_scaling=scaling if r else None,
                                    window=window if t == "sliding_attention" else None,
                                    bias=_flag(raw, "attention_bias", path, False)),
                    norm=Norm("rms", z["eps"]), ffn_width=z["ffn"]) for r, t in zip(rope, types, strict=True)]
    return decoder_plan("smollm3", raw, path, z, blocks, window_notes(raw, path, types, z["max_positions"]), tie=True)


def _phi3(raw: dict[str, Any], path: Path) -> ModelPlan:
    """Phi-3: fused ``qkv_proj`` / ``gate_up_proj``, partial rotary, ``sliding_window`` on every layer when set."""
    z = decoder_sizes(raw, path)
    require_activation(raw, path, ("hidden_act",), "silu", "phi3")
    params: dict[str, Any] = raw["rope_parameters"] if isinstance(raw.get("rope_parameters"), dict) else {}
    pct = params.get("partial_rotary_factor", _get(raw, "partial_rotary_factor", (int, float), path, 1.0))
    theta, scaling = _rope(raw, path)
    if scaling is not None:
        scaling = {k: v for k, v in scaling.items() if k != "partial_rotary_factor"}
    window = None if raw.get("sliding_window") is None else _positive(raw, "sliding_window", path)
    spec = decoder_spec(path, n=z["max_positions"], d_model=z["width"], heads=z["heads"], d_k=z["head_dim"],
                 kv_heads=z["kv_heads"], positions="rope", position_base=theta, rope_scaling=scaling,
                 rotary_pct=float(pct), window=window)
    notes = window_notes(raw, path, ["sliding_attention"] * z["layers"] if window else [], z["max_positions"], None)
    block = Block(attention=spec, norm=Norm("rms", z["eps"]), ffn_width=z["ffn"])
    return decoder_plan("phi3", raw, path, z, [block] * z["layers"], notes)


def _gpt_oss(raw: dict[str, Any], path: Path) -> ModelPlan:
    """gpt-oss: a sink logit per head, alternating sliding / full layers, biases, a mixture of clamped-GLU experts."""
    z = decoder_sizes(raw, path)
    types = layer_types(raw, path, z["layers"], ["sliding_attention" if i % 2 == 0 else "full_attention"
                                                  for i in range(z["layers"])])
    if "chunked_attention" in types:
        _refuse(path, "layer_types", "chunked_attention", "gpt_oss has sliding and full layers")
    window = _window(raw, path, types)
    theta, scaling = _rope(raw, path)
    count = _positive(raw, "num_local_experts", path)
    top_k = _positive(raw, "num_experts_per_tok", path)
    if top_k > count:
        raise ModelError(f"{path}: 'num_experts_per_tok' = {top_k} must be at most 'num_local_experts' = {count}")
    alpha = float(_get(raw, "swiglu_alpha", (int, float), path, 1.702))
    limit = float(_get(raw, "swiglu_limit", (int, float), path, 7.0))
    experts = Experts(count=count, top_k=top_k, routing="softmax_output", alpha=alpha, limit=limit)
    bias = _flag(raw, "attention_bias", path, True)
    blocks = [Block(attention=decoder_spec(path, n=z["max_positions"], d_model=z["width"], heads=z["heads"],
                                    d_k=z["head_dim"], kv_heads=z["kv_heads"], positions="rope", position_base=theta,
                                    rope_scaling=scaling, window=window if t == "sliding_attention" else None,
                                    bias=bias, sink=True),
                    norm=Norm("rms", z["eps"]), ffn_width=z["ffn"], experts=experts) for t in types]
    return decoder_plan("gpt_oss", raw, path, z, blocks, window_notes(raw, path, types, z["max_positions"], None))


def _llama4(raw: dict[str, Any], path: Path) -> ModelPlan:
    """Llama 4 (text): chunked RoPE layers (interleaved pairs, weightless QK-norm after the rotation) and full NoPE
    layers (query temperature); ``no_rope_layers[i] = 1`` means layer ``i`` USES RoPE; mixture-of-experts layers."""
    z = decoder_sizes(raw, path)
    require_activation(raw, path, ("hidden_act",), "silu", "llama4")
    L = z["layers"]
    interval = _positive(raw, "no_rope_layer_interval", path, 4)
    rope = uses_rope(raw, path, L, [(i + 1) % interval != 0 for i in range(L)])
    types = layer_types(raw, path, L, ["chunked_attention" if r else "full_attention" for r in rope])
    if "sliding_attention" in types:
        _refuse(path, "layer_types", "sliding_attention", "llama4 has chunked and full layers")
    chunk = _positive(raw, "attention_chunk_size", path) if "chunked_attention" in types else None
    theta, scaling = _rope(raw, path)
    qk_norm = _flag(raw, "use_qk_norm", path, True)
    tuning = _flag(raw, "attn_temperature_tuning", path, True)
    temperature = (float(_get(raw, "floor_scale", (int, float), path, 8192)),
                   float(_get(raw, "attn_scale", (int, float), path, 0.1))) if tuning else None
    step = _positive(raw, "interleave_moe_layer_step", path, 1)
    moe = raw.get("moe_layers")
    moe = list(range(step - 1, L, step)) if moe is None else moe
    if not isinstance(moe, list) or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < L for i in moe):
        raise ModelError(f"{path}: 'moe_layers' must list layer indices in 0 … {L - 1} (got {str(moe)[:60]})")
    count = _positive(raw, "num_local_experts", path)
    top_k = _positive(raw, "num_experts_per_tok", path, 1)
    if top_k > count:
        raise ModelError(f"{path}: 'num_experts_per_tok' = {top_k} must be at most 'num_local_experts' = {count}")
    experts = Experts(count=count, top_k=top_k, routing="sigmoid_input", shared=True)
    dense = _positive(raw, "intermediate_size_mlp", path, z["ffn"])
    blocks = []
    for i, (r, t) in enumerate(zip(rope, types, strict=True)):
        spec = decoder_spec(path, n=z["max_positions"], d_model=z["width"], heads=z["heads"], d_k=z["head_dim"],
                     kv_heads=z["kv_heads"], positions="rope" if r else None, position_base=theta if r else 10000,
                     rope_scaling=scaling if r else None, rope_pairing="interleaved" if r else "rotate_half",
                     chunk=chunk if t == "chunked_attention" else None, bias=_flag(raw, "attention_bias", path, False),
                     qk_norm=qk_norm and r, qk_norm_eps=z["eps"] if qk_norm and r else 1e-6,
                     qk_norm_offset=1.0 if qk_norm and r else 0.0, query_temperature=None if r else temperature)
        blocks.append(Block(attention=spec, norm=Norm("rms", z["eps"]), ffn_width=z["ffn"] if i in moe else dense,
                            experts=experts if i in moe else None))
    return decoder_plan("llama4_text", raw, path, z, blocks, [])


def _qwen3_next(raw: dict[str, Any], path: Path) -> ModelPlan:
    """Qwen3-Next with every layer full attention: an output gate made by ``q_proj`` beside each head's query,
    per-head QK-norm and every RMSNorm with ``1 + w`` gains, partial rotary, mixture-of-experts layers (softmax
    over every expert, a sigmoid-gated shared expert). Its linear-attention (Gated DeltaNet) layers are refused."""
    z = decoder_sizes(raw, path)
    require_activation(raw, path, ("hidden_act",), "silu", "qwen3_next")
    L = z["layers"]
    interval = _positive(raw, "full_attention_interval", path, 4)
    types = raw.get("layer_types")
    if (isinstance(types, list) and "linear_attention" in types) or (types is None and interval > 1):
        _refuse(path, "layer_types", "linear_attention", "attnsym runs qwen3_next whose layers are all "
                "full_attention; its Gated DeltaNet layers are not implemented")
    types = layer_types(raw, path, L, ["full_attention"] * L)
    if set(types) != {"full_attention"}:
        _refuse(path, "layer_types", next(t for t in types if t != "full_attention"),
                "qwen3_next has linear_attention and full_attention layers")
    if _flag(raw, "attention_bias", path, False):
        _refuse(path, "attention_bias", True, "attnsym runs qwen3_next without attention biases")
    given = raw.get("rope_parameters")
    params: dict[str, Any] = given if isinstance(given, dict) else {}
    pct = params.get("partial_rotary_factor", _get(raw, "partial_rotary_factor", (int, float), path, 0.25))
    theta, scaling = _rope(raw, path)
    count = _positive(raw, "num_experts", path, 512) if raw.get("num_experts", 512) != 0 else 0
    step = _positive(raw, "decoder_sparse_step", path, 1)
    dense_only = raw.get("mlp_only_layers") or []
    if not isinstance(dense_only, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in dense_only):
        raise ModelError(f"{path}: 'mlp_only_layers' must list layer indices (got {str(dense_only)[:60]})")
    experts = None
    if count:
        top_k = _positive(raw, "num_experts_per_tok", path, 10)
        if top_k > count:
            raise ModelError(f"{path}: 'num_experts_per_tok' = {top_k} must be at most 'num_experts' = {count}")
        experts = Experts(count=count, top_k=top_k, routing="softmax", shared=True, shared_gate=True,
                          normalize=_flag(raw, "norm_topk_prob", path, True),
                          shared_width=_positive(raw, "shared_expert_intermediate_size", path, 512))
    moe_width = _positive(raw, "moe_intermediate_size", path, 512)
    spec = decoder_spec(path, n=z["max_positions"], d_model=z["width"], heads=z["heads"], d_k=z["head_dim"],
                 kv_heads=z["kv_heads"], positions="rope", position_base=theta, rope_scaling=scaling,
                 rotary_pct=float(pct), qk_norm=True, qk_norm_eps=z["eps"], qk_norm_offset=1.0, output_gate=True)
    norm = Norm("rms", z["eps"], offset=1.0)
    blocks = []
    for i in range(L):
        moe = experts is not None and i not in dense_only and (i + 1) % step == 0
        blocks.append(Block(attention=spec, norm=norm, ffn_width=moe_width if moe else z["ffn"],
                            experts=experts if moe else None))
    return decoder_plan("qwen3_next", raw, path, z, blocks, [], final_norm=norm)


#: ``model_type`` -> the function building its plan (registered in :data:`attnsym.models.families.FAMILIES`)
FAMILIES_2026: dict[str, Callable[[dict[str, Any], Path], ModelPlan]] = {
    "gemma3_text": _gemma3,
    "olmo2": _olmo2,
    "smollm3": _smollm3,
    "phi3": _phi3,
    "gpt_oss": _gpt_oss,
    "llama4_text": _llama4,
    "qwen3_next": _qwen3_next,
}

#: what each family is and the keys it reads (the docs' table)
OPTIONS_2026: dict[str, tuple[str, str]] = {
    "gemma3_text": ("Gemma 3 (text): Gemma 2's block, QK-norm per head with 1 + w gains, sliding / global layers "
                    "(default 5:1) each type with its own RoPE",
                    "layer_types (or sliding_window_pattern), sliding_window, rope_parameters per layer type (or "
                    "rope_theta + rope_local_base_freq + rope_scaling for the global layers), query_pre_attn_scalar, "
                    "attn_logit_softcapping"),
    "olmo2": ("OLMo 2: norms on the sublayers' outputs only, QK-norm over the whole q / k projection",
              "as llama, with q_norm / k_norm of width heads·head_dim / kv_heads·head_dim"),
    "smollm3": ("SmolLM3: LLaMA's block with NoPE layers (no positions)",
                "no_rope_layers (1 = the layer USES RoPE) or no_rope_layer_interval, use_sliding_window, "
                "sliding_window, layer_types"),
    "phi3": ("Phi-3: fused qkv_proj and gate_up_proj, partial rotary, a window on every layer when set",
             "rope_parameters.partial_rotary_factor, sliding_window (every layer), rope_scaling / rope_parameters "
             "with LongRoPE (short / long factors by length vs original_max_position_embeddings)"),
    "gpt_oss": ("gpt-oss: a learned sink logit per head (rows of A sum to 1 − π), alternating sliding / full "
                "layers, biases, a mixture of clamped-GLU experts",
                "layer_types, sliding_window, num_local_experts, num_experts_per_tok, swiglu_alpha, swiglu_limit, "
                "attention_bias, rope_parameters (YaRN as gpt-oss ships it)"),
    "llama4_text": ("Llama 4 (text): chunked RoPE layers (interleaved pairs, weightless QK-norm) and full NoPE layers "
                    "with a query temperature, mixture-of-experts layers (sigmoid-scaled inputs, a shared expert)",
                    "no_rope_layers (1 = the layer USES RoPE) or no_rope_layer_interval, layer_types, "
                    "attention_chunk_size, use_qk_norm, attn_temperature_tuning, floor_scale, attn_scale, moe_layers or "
                    "interleave_moe_layer_step, num_local_experts, num_experts_per_tok, intermediate_size_mlp"),
    "qwen3_next": ("Qwen3-Next with full-attention layers only: a sigmoid output gate (q_proj makes each head's query and gate), "
                   "QK-norm per head and every RMSNorm with 1 + w gains, partial rotary, mixture-of-experts layers (softmax over "
                   "every expert, top k, a sigmoid-gated shared expert); linear_attention layers are refused",
                   "layer_types (all full_attention) or full_attention_interval 1, partial_rotary_factor, num_experts, "
                   "num_experts_per_tok, norm_topk_prob, moe_intermediate_size, shared_expert_intermediate_size, "
                   "decoder_sparse_step, mlp_only_layers"),
}

#: tensor names that differ from the LLaMA layout (:data:`attnsym.models.families.TENSOR_NAMES`); None: no such tensor
NAME_MAPS_2026: dict[str, dict[str, str | None]] = {
    "gemma3_text": {"mlp_norm": "layers.{i}.pre_feedforward_layernorm.weight",
                    "post_attn_norm": "layers.{i}.post_attention_layernorm.weight",
                    "post_mlp_norm": "layers.{i}.post_feedforward_layernorm.weight"},
    "olmo2": {"post_attn_norm": "layers.{i}.post_attention_layernorm.weight",
              "post_mlp_norm": "layers.{i}.post_feedforward_layernorm.weight"},
    "smollm3": {},
    "phi3": {"W_QKV": "layers.{i}.self_attn.qkv_proj.weight", "W_gate_up": "layers.{i}.mlp.gate_up_proj.weight"},
    "gpt_oss": {"s_sink": "layers.{i}.self_attn.sinks", "W_router": "layers.{i}.mlp.router.weight",
                "b_router": "layers.{i}.mlp.router.bias", "W_experts_gate_up": "layers.{i}.mlp.experts.gate_up_proj",
                "b_experts_gate_up": "layers.{i}.mlp.experts.gate_up_proj_bias",
                "W_experts_down": "layers.{i}.mlp.experts.down_proj",
                "b_experts_down": "layers.{i}.mlp.experts.down_proj_bias"},
    "llama4_text": {"g_Q": None, "g_K": None,  # its QK-norm has no weights
                    "W_gate": "layers.{i}.feed_forward.gate_proj.weight", "W_up": "layers.{i}.feed_forward.up_proj.weight",
                    "W_down": "layers.{i}.feed_forward.down_proj.weight",
                    "W_router": "layers.{i}.feed_forward.router.weight",
                    "W_experts_gate_up": "layers.{i}.feed_forward.experts.gate_up_proj",
                    "W_experts_down": "layers.{i}.feed_forward.experts.down_proj",
                    "W_shared_gate": "layers.{i}.feed_forward.shared_expert.gate_proj.weight",
                    "W_shared_up": "layers.{i}.feed_forward.shared_expert.up_proj.weight",
                    "W_shared_down": "layers.{i}.feed_forward.shared_expert.down_proj.weight"},
    "qwen3_next": {"W_router": "layers.{i}.mlp.gate.weight", "W_experts": "layers.{i}.mlp.experts",  # a prefix
                   "W_shared_gate": "layers.{i}.mlp.shared_expert.gate_proj.weight",
                   "W_shared_up": "layers.{i}.mlp.shared_expert.up_proj.weight",
                   "W_shared_down": "layers.{i}.mlp.shared_expert.down_proj.weight",
                   "W_shared_router": "layers.{i}.mlp.shared_expert_gate.weight"},
}

#: how each family stores q|k|v (:attr:`attnsym.models.plan.Layout.qkv`)
QKV_2026: dict[str, str] = {"phi3": "columns"}
