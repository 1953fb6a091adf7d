"""Multi-head latent attention's family: DeepSeek V3 (``deepseek_v3``), a function from ``config.json`` to a plan.

Every fact of the layer is data in its :class:`~attnsym.AttentionSpec`: the latent widths
(``kv_latent_rank`` = ``kv_lora_rank``, ``q_latent_rank`` = ``q_lora_rank`` or None), the head
widths (``d_k = qk_nope_head_dim + qk_rope_head_dim``, ``d_v = v_head_dim``), the rotary width
(``rotary_pct`` so that exactly ``qk_rope_head_dim`` coordinates rotate, in interleaved pairs when
``rope_interleave``; YaRN as DeepSeek ships it) and the scale ``d_k^(-1/2)`` (times YaRN's
``m(factor, mscale_all_dim)²``, :attr:`~attnsym.spec.RopeScaling.latent_score_scale`); the block
adds the latents' RMSNorm (epsilon 1e-6 whatever ``rms_norm_eps`` says: transformers builds
``q_a_layernorm`` and ``kv_a_layernorm`` with the default) and, from layer ``first_k_dense_replace`` on, the mixture of experts
(:class:`~attnsym.models.plan.Experts` ``"sigmoid_group"``: sigmoid scores, a score correction
bias for the choice, group-limited top-k, shared experts). The forward pass expands the latents
(:func:`attnsym.models.forward.projections`).

RoPE scalings other than YaRN are refused by name, as are attention biases and grouped key/value
heads: a plan is whole or not made.

>>> from pathlib import Path
>>> raw = {"model_type": "deepseek_v3", "hidden_size": 32, "num_attention_heads": 4, "intermediate_size": 64,
...        "moe_intermediate_size": 16, "num_hidden_layers": 2, "vocab_size": 100, "max_position_embeddings": 64,
...        "kv_lora_rank": 16, "q_lora_rank": None, "qk_rope_head_dim": 4, "qk_nope_head_dim": 8,
...        "v_head_dim": 6, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_group": 2, "topk_group": 1,
...        "first_k_dense_replace": 1}
>>> plan = FAMILIES_MLA["deepseek_v3"](raw, Path("config.json"))
>>> s = plan.blocks[0].attention
>>> s.d_k, s.d_v, s.rotary_dims, s.kv_latent_rank, s.q_latent_rank, s.rope_pairing
(12, 6, 4, 16, None, 'interleaved')
>>> [b.experts is not None for b in plan.blocks]
[False, True]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import ModelError
from .families_2026 import decoder_plan, decoder_sizes, decoder_spec, require_activation
from .keys import flag as _flag
from .keys import positive_size as _positive
from .keys import read_key as _get
from .keys import refuse as _refuse
from .plan import Block, Experts, ModelPlan, Norm
from .schedule import rope_base_and_scaling as _rope

__all__ = ["FAMILIES_MLA", "NAME_MAPS_MLA", "OPTIONS_MLA"]

def rotary_fraction(rotary: int, d_k: int) -> float:
    """The ``rotary_pct`` whose ``int(d_k · rotary_pct)`` is exactly ``rotary`` (``rotary / d_k`` may round below).

    >>> p = rotary_fraction(64, 192)
    >>> int(192 * p), p <= 64 / 192 + 1e-15
    (64, True)
    """
    pct = rotary / d_k
    while int(d_k * pct) < rotary:
        pct = math.nextafter(pct, 1.0)
    return pct


def _rope_of_mla(raw: dict[str, Any], path: Path) -> tuple[int | float, dict[str, Any] | None]:
    """``(rope_theta, rope_scaling)``: unscaled RoPE or YaRN (what DeepSeek ships), any other scaling refused by the
    key that sets it (transformers would also put YaRN's ``mscale_all_dim`` on its softmax scale)."""
    for key in ("rope_parameters", "rope_scaling"):
        value = raw.get(key)
        if isinstance(value, dict):
            kind = value.get("rope_type", value.get("type", "default"))
            if kind not in ("default", "yarn"):
                _refuse(path, f"{key}.rope_type", kind, "attnsym runs deepseek_v3 with unscaled RoPE or YaRN")
    return _rope(raw, path)


def _experts(raw: dict[str, Any], path: Path, ffn: int) -> Experts:
    """DeepSeek's router: sigmoid scores, a correction bias for the choice, the best ``topk_group`` of ``n_group``."""
    count = _positive(raw, "n_routed_experts", path)
    top_k = _positive(raw, "num_experts_per_tok", path)
    groups = _positive(raw, "n_group", path, 1)
    top_groups = _positive(raw, "topk_group", path, 1)
    if count % groups or count // groups < 2:
        raise ModelError(f"{path}: 'n_group' = {groups} must split 'n_routed_experts' = {count} into equal groups of "
                         "at least 2 experts (a group is scored by its two best)")
    if top_groups > groups or top_k > top_groups * (count // groups):
        raise ModelError(f"{path}: 'topk_group' = {top_groups} must be at most 'n_group' = {groups}, and "
                         f"'num_experts_per_tok' = {top_k} at most the {top_groups * (count // groups)} experts of "
                         "the groups kept")
    scaling = float(_get(raw, "routed_scaling_factor", (int, float), path, 1.0))
    return Experts(count=count, top_k=top_k, routing="sigmoid_group", shared=True, groups=groups,
                   top_groups=top_groups, scaling=scaling, normalize=_flag(raw, "norm_topk_prob", path, False),
                   shared_width=ffn * _positive(raw, "n_shared_experts", path, 1))


def _deepseek_v3(raw: dict[str, Any], path: Path) -> ModelPlan:
    """DeepSeek V3: multi-head latent attention (module docstring), dense layers then mixture-of-experts ones."""
    z = decoder_sizes(raw, path)
    require_activation(raw, path, ("hidden_act",), "silu", "deepseek_v3")
    if _flag(raw, "attention_bias", path, False):
        _refuse(path, "attention_bias", True, "attnsym runs deepseek_v3's attention without biases")
    if z["kv_heads"] != z["heads"]:
        _refuse(path, "num_key_value_heads", z["kv_heads"], f"multi-head latent attention expands one key and value "
                f"per query head: it must equal 'num_attention_heads' = {z['heads']}")
    rope, nope = _positive(raw, "qk_rope_head_dim", path), _positive(raw, "qk_nope_head_dim", path)
    if rope % 2:
        raise ModelError(f"{path}: 'qk_rope_head_dim' = {rope} must be even (RoPE rotates pairs)")
    if raw.get("head_dim") is not None and raw["head_dim"] != rope:  # transformers' rotary reads head_dim
        raise ModelError(f"{path}: 'head_dim' = {raw['head_dim']!r} must equal 'qk_rope_head_dim' = {rope} in "
                         "deepseek_v3 (the width of the rotary key)")
    d_k = rope + nope
    q_rank = None if raw.get("q_lora_rank") is None else _positive(raw, "q_lora_rank", path)
    theta, scaling = _rope_of_mla(raw, path)
    spec = decoder_spec(path, n=z["max_positions"], d_model=z["width"], heads=z["heads"], d_k=d_k,
                 d_v=_positive(raw, "v_head_dim", path), positions="rope", position_base=theta, rope_scaling=scaling,
                 rotary_pct=rotary_fraction(rope, d_k),
                 rope_pairing="interleaved" if _flag(raw, "rope_interleave", path, True) else "rotate_half",
                 scale=float(d_k) ** -0.5, kv_latent_rank=_positive(raw, "kv_lora_rank", path), q_latent_rank=q_rank)
    if spec.rope_scaling is not None:  # YaRN's mscale_all_dim scales every coordinate's score (yarn_apply_mscale)
        spec = spec.replace(scale=spec.scale * spec.rope_scaling.latent_score_scale)
    dense = _get(raw, "first_k_dense_replace", int, path, 3)  # transformers' default: three dense layers
    if dense < 0:
        raise ModelError(f"{path}: 'first_k_dense_replace' must be a non-negative integer (got {dense})")
    dense = min(dense, z["layers"])
    moe_width = _positive(raw, "moe_intermediate_size", path)
    experts = _experts(raw, path, moe_width) if dense < z["layers"] else None
    norm, latent = Norm("rms", z["eps"]), Norm("rms", spec.latent_norm_eps)
    blocks = [Block(attention=spec, norm=norm, ffn_width=z["ffn"], latent_norm=latent)] * dense
    blocks += [Block(attention=spec, norm=norm, ffn_width=moe_width, experts=experts,
                     latent_norm=latent)] * (z["layers"] - dense)
    return decoder_plan("deepseek_v3", raw, path, z, blocks, [])


#: ``model_type`` -> the function building its plan (registered in :data:`attnsym.models.families.FAMILIES`)
FAMILIES_MLA: dict[str, Callable[[dict[str, Any], Path], ModelPlan]] = {"deepseek_v3": _deepseek_v3}

#: what the family is and the keys it reads (the docs' table)
OPTIONS_MLA: dict[str, tuple[str, str]] = {
    "deepseek_v3": ("DeepSeek V3: multi-head latent attention (keys and values expanded from one normed latent per "
                    "token, one rotary key shared by all heads, d_k ≠ d_v), dense layers then a mixture of experts "
                    "(sigmoid router with a correction bias and group-limited top-k, shared experts)",
                    "kv_lora_rank, q_lora_rank (or null: q_proj), qk_nope_head_dim, qk_rope_head_dim, v_head_dim, "
                    "rope_interleave, first_k_dense_replace, moe_intermediate_size, n_routed_experts, "
                    "num_experts_per_tok, n_group, topk_group, routed_scaling_factor, norm_topk_prob, "
                    "n_shared_experts, rope_parameters (YaRN, its mscale_all_dim also on the softmax scale); other "
                    "RoPE scalings and attention_bias are refused"),
}

_ATTN, _MLP = "layers.{i}.self_attn.", "layers.{i}.mlp."

#: the tensor names of DeepSeek V3 that differ from the LLaMA layout (:data:`attnsym.models.families.TENSOR_NAMES`)
NAME_MAPS_MLA: dict[str, dict[str, str | None]] = {
    "deepseek_v3": {"W_Q_down": _ATTN + "q_a_proj.weight", "g_Q_latent": _ATTN + "q_a_layernorm.weight",
                    "W_Q_up": _ATTN + "q_b_proj.weight", "W_KV_down": _ATTN + "kv_a_proj_with_mqa.weight",
                    "g_KV_latent": _ATTN + "kv_a_layernorm.weight", "W_KV_up": _ATTN + "kv_b_proj.weight",
                    "W_K": None, "W_V": None, "g_Q": None, "g_K": None,
                    "W_router": _MLP + "gate.weight", "b_choice": _MLP + "gate.e_score_correction_bias",
                    "W_expert_gate": _MLP + "experts.{{e}}.gate_proj.weight",  # {e}: the expert, as stored
                    "W_expert_up": _MLP + "experts.{{e}}.up_proj.weight",
                    "W_expert_down": _MLP + "experts.{{e}}.down_proj.weight",
                    "W_shared_gate": _MLP + "shared_experts.gate_proj.weight",
                    "W_shared_up": _MLP + "shared_experts.up_proj.weight",
                    "W_shared_down": _MLP + "shared_experts.down_proj.weight"},
}
