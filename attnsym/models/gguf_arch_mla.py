"""GGUF metadata of DeepSeek V2/V3 (``deepseek2``) and Qwen3-Next (``qwen3next``) -> their ``config.json`` dicts.

Each function translates llama.cpp's keys into the ``config.json`` dict the family table reads
(:mod:`attnsym.models.families_mla`'s ``deepseek_v3``, :mod:`attnsym.models.families_2026`'s
``qwen3_next``), so a GGUF file and the Hugging Face folder it was converted from give the same
plan. :mod:`attnsym.models.gguf_plan` registers :data:`ARCHITECTURES_MLA` and
:data:`GGUF_NAMES_MLA`; its key check refuses every key of the architecture not listed here.

**deepseek2** (llama.cpp's name for DeepSeek V2 and V3 files). llama.cpp's converter writes
multi-head latent attention in its "MQA form": ``attention.head_count_kv`` 1, ``key_length`` =
``kv_lora_rank + rope`` and ``value_length`` = ``kv_lora_rank`` (one latent "head" of keys and
values), the per-head widths in ``attention.key_length_mla`` (``d_k = nope + rope``) and
``attention.value_length_mla`` (``d_v``); files converted before 2025 state the per-head widths
in ``key_length`` / ``value_length`` with ``head_count_kv`` = ``head_count``. Both read to the
same plan, and a file whose keys contradict each other (an MQA form whose ``key_length`` is not
``kv_lora_rank + rope``) is refused with both keys named. The converter splits ``kv_b_proj``
into ``attn_k_b`` (per head, transposed: ``(H, r, nope)``) and ``attn_v_b`` (``(H, d_v, r)``);
:func:`merge_kv_b` puts them back into the checkpoint's ``(H·(nope + d_v), r)`` rows, exactly (it
moves values). The experts are stacked into one 3-D tensor per projection
(``ffn_{gate,up,down}_exps``); the plan reads expert ``e`` of block ``i`` under the name
``blk.{i}.ffn_exps.{e}.{part}_proj.weight``, which :class:`attnsym.models.gguf_file.GGUFTensors`
resolves to row ``e`` of the stack (both hooks live there). RoPE pairs are interleaved
(llama.cpp's ``NORM`` rotary on rows the converter leaves as they are): ``rope_interleave`` true.

Routing: llama.cpp runs the sigmoid router with a correction bias (``exp_probs_b``) and
group-limited top-k only when ``expert_gating_func`` is 2 (sigmoid); a file without the key is a
DeepSeek V2 file that llama.cpp routes with a softmax, which the ``deepseek_v3`` family does not
run: refused by the key. ``expert_weights_scale`` is ``routed_scaling_factor`` (1 when absent,
as llama.cpp), ``expert_weights_norm`` is ``norm_topk_prob``, ``expert_group_count`` /
``expert_group_used_count`` are ``n_group`` / ``topk_group`` (1 / 1 when absent: no groups).

YaRN (``rope.scaling.type`` ``yarn``) is read here, not by
:func:`attnsym.models.gguf_keys.rope_scaling`: DeepSeek's converter stores
``rope.scaling.yarn_log_multiplier`` = ``0.1 · mscale_all_dim`` and llama.cpp divides it back
(its ``TAG_DEEPSEEK2_YARN_LOG_MUL_FIX``), then scales every score by ``m(factor, mscale_all_dim)²``
and the rotated coordinates by ``m(factor, mscale) / m(factor, mscale_all_dim)`` with ``mscale``
taken equal to ``mscale_all_dim`` (the file has no other), i.e. by 1. The plan therefore gets
``mscale = mscale_all_dim = yarn_log_multiplier / 0.1`` — exactly a checkpoint whose two mscales
agree (DeepSeek V3: both 1; V2-Lite: both 0.707); a checkpoint with different ones cannot be
stated in a GGUF file. A YaRN file without ``yarn_log_multiplier`` (or with 0) is refused by the
key, as are ``yarn_ext_factor`` and ``yarn_attn_factor`` (not read: any key not listed here).

**qwen3next**. llama.cpp makes layer ``i`` linear attention (Gated DeltaNet) unless
``(i + 1) % full_attention_interval == 0`` (the key's default 4). attnsym runs Qwen3-Next's
full-attention layers only, so every file but one with ``full_attention_interval`` 1 is refused
by that key, the message naming the ``linear_attention`` layer type; the other keys are mapped
all the same (the ``ssm.*`` keys size the linear layers a refused file has). A file with
interval 1 loads: every RMSNorm and the QK-norm gains stored as ``1 + w`` (the converter adds
the 1), the output gate beside each head's query in ``attn_q`` (no row permutation: llama.cpp
rotates half-split pairs), a mixture on every layer (llama.cpp creates one per block), the top-k
weights renormalised (llama.cpp's qwen3next always does), a sigmoid-gated shared expert.

>>> from pathlib import Path
>>> meta = {"deepseek2.block_count": 2, "deepseek2.embedding_length": 32, "deepseek2.feed_forward_length": 64,
...         "deepseek2.context_length": 64, "deepseek2.attention.head_count": 4, "deepseek2.attention.head_count_kv": 1,
...         "deepseek2.attention.layer_norm_rms_epsilon": 1e-6, "deepseek2.attention.kv_lora_rank": 16,
...         "deepseek2.attention.key_length": 20, "deepseek2.attention.value_length": 16,
...         "deepseek2.attention.key_length_mla": 12, "deepseek2.attention.value_length_mla": 6,
...         "deepseek2.rope.dimension_count": 4, "deepseek2.leading_dense_block_count": 1,
...         "deepseek2.expert_feed_forward_length": 16, "deepseek2.expert_count": 8, "deepseek2.expert_used_count": 2,
...         "deepseek2.expert_shared_count": 1, "deepseek2.expert_gating_func": 2}
>>> raw = ARCHITECTURES_MLA["deepseek2"][0](meta, Path("m.gguf"), {})
>>> raw["qk_nope_head_dim"], raw["qk_rope_head_dim"], raw["v_head_dim"], raw["q_lora_rank"], raw["n_routed_experts"]
(8, 4, 6, None, 8)
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ModelError
from .gguf_keys import DECODER_NAMES, LM_HEAD, llama_like, read_key, read_number, read_size, refuse

__all__ = ["ARCHITECTURES_MLA", "GGUF_NAMES_MLA", "merge_kv_b"]

#: ``expert_gating_func`` values of llama.cpp (``LLAMA_EXPERT_GATING_FUNC_TYPE_*``)
_SOFTMAX, _SIGMOID = 1, 2

def merge_kv_b(k_b: np.ndarray, v_b: np.ndarray) -> np.ndarray:
    """The checkpoint's ``kv_b_proj`` ``(H·(nope + d_v), r)`` from llama.cpp's ``attn_k_b`` and ``attn_v_b``.

    The converter views ``kv_b_proj`` as ``(H, nope + d_v, r)``, splits each head's rows into its
    non-rotary key rows and its value rows, and transposes the key part: ``k_b`` is ``(H, r, nope)``,
    ``v_b`` is ``(H, d_v, r)``. This undoes both steps (values moved, none rounded).

    >>> kv = np.arange(2 * 5 * 3).reshape(10, 3)          # H = 2, nope = 3, d_v = 2, r = 3
    >>> heads = kv.reshape(2, 5, 3)
    >>> k_b, v_b = heads[:, :3].transpose(0, 2, 1), heads[:, 3:]
    >>> bool((merge_kv_b(k_b, v_b) == kv).all())
    True
    """
    H, r, nope = k_b.shape
    return np.ascontiguousarray(np.concatenate([k_b.transpose(0, 2, 1), v_b], axis=1).reshape(H * (nope + v_b.shape[1]), r))


def _float32_decimal(x: float) -> Decimal:
    """The shortest decimal a float32 key holds (``0.07`` for the float32 nearest 0.07): GGUF stores float32."""
    return Decimal(str(np.float32(x))) if float(np.float32(x)) == x else Decimal(repr(x))


def _yarn(meta: dict[str, Any], a: str, path: Path) -> dict[str, Any] | None:
    """DeepSeek's ``rope_scaling``: none, or YaRN with ``mscale = mscale_all_dim = yarn_log_multiplier / 0.1``
    (module docstring); any other type refused by its key."""
    kind = read_key(meta, f"{a}.rope.scaling.type", str, path, "none")
    if kind == "none":
        return None
    if kind != "yarn":
        refuse(path, f"{a}.rope.scaling.type", kind, f"attnsym runs {a} with unscaled RoPE or YaRN")
    log_mul = read_number(meta, f"{a}.rope.scaling.yarn_log_multiplier", path)
    if not log_mul > 0:
        refuse(path, f"{a}.rope.scaling.yarn_log_multiplier", log_mul, "llama.cpp then scales YaRN's attention by "
               "its own default, which attnsym does not implement; it reads 0.1 · mscale_all_dim > 0")
    mscale = float(_float32_decimal(log_mul) / Decimal("0.1"))
    out = {"rope_type": "yarn", "factor": float(read_number(meta, f"{a}.rope.scaling.factor", path)),
           "original_max_position_embeddings": read_size(meta, f"{a}.rope.scaling.original_context_length", path),
           "mscale": mscale, "mscale_all_dim": mscale}
    for key, name in (("yarn_beta_fast", "beta_fast"), ("yarn_beta_slow", "beta_slow")):
        value = read_number(meta, f"{a}.rope.scaling.{key}", path, None)
        if value is not None:
            out[name] = float(value)
    return out


def _head_widths(meta: dict[str, Any], a: str, path: Path, heads: int, width: int, rank: int,
                 rope: int) -> tuple[int, int]:
    """``(d_k, d_v)`` per head, from the MQA form (``*_length_mla``) or the older per-head form (module docstring)."""
    if f"{a}.attention.key_length_mla" in meta or f"{a}.attention.value_length_mla" in meta:
        d_k = read_size(meta, f"{a}.attention.key_length_mla", path)
        d_v = read_size(meta, f"{a}.attention.value_length_mla", path)
        for key, want in (("attention.head_count_kv", 1), ("attention.key_length", rank + rope),
                          ("attention.value_length", rank)):
            got = read_size(meta, f"{a}.{key}", path, want)
            if got != want:
                raise ModelError(f"{path}: GGUF key {a}.{key} = {got} contradicts {a}.attention.key_length_mla: "
                                 f"llama.cpp's MQA form of latent attention has {want} there (kv_lora_rank {rank}, "
                                 f"{rope} rotary dimensions)")
        return d_k, d_v
    kv_heads = read_size(meta, f"{a}.attention.head_count_kv", path, heads)
    if kv_heads != heads:
        raise ModelError(f"{path}: GGUF key {a}.attention.head_count_kv = {kv_heads} contradicts "
                         f"{a}.attention.head_count = {heads}: without {a}.attention.key_length_mla the file states "
                         "per-head widths, one key and value per query head")
    d_k = read_size(meta, f"{a}.attention.key_length", path, width // heads)
    return d_k, read_size(meta, f"{a}.attention.value_length", path, d_k)


def _stacks_hold(tensors: dict[str, tuple[int, ...]], layers: range, count: int, a: str, path: Path) -> None:
    """Every stacked expert tensor holds ``count`` experts (``expert_count``), or the file contradicts itself."""
    for i in layers:
        for part in ("gate", "up", "down"):
            shape = tensors.get(f"blk.{i}.ffn_{part}_exps.weight")
            if shape is not None and (len(shape) != 3 or shape[0] != count):
                raise ModelError(f"{path}: tensor 'blk.{i}.ffn_{part}_exps.weight' of shape {shape} contradicts "
                                 f"{a}.expert_count = {count} (a stack of one (d_out, d_in) matrix per expert)")


def _deepseek2(meta: dict[str, Any], path: Path, tensors: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """DeepSeek V2/V3 (module docstring): latent attention, dense then mixture-of-experts layers."""
    a = "deepseek2"
    heads, width = read_size(meta, f"{a}.attention.head_count", path), read_size(meta, f"{a}.embedding_length", path)
    rank, rope = read_size(meta, f"{a}.attention.kv_lora_rank", path), read_size(meta, f"{a}.rope.dimension_count", path)
    d_k, d_v = _head_widths(meta, a, path, heads, width, rank, rope)
    if d_k <= rope:
        raise ModelError(f"{path}: the per-head key width {d_k} must exceed {a}.rope.dimension_count = {rope} (the "
                         "non-rotary part of each key comes from the latent)")
    q_rank = read_key(meta, f"{a}.attention.q_lora_rank", int, path, 0)  # 0 or absent: q_proj (V2-Lite)
    layers = read_size(meta, f"{a}.block_count", path)
    dense = read_key(meta, f"{a}.leading_dense_block_count", int, path)
    raw: dict[str, Any] = {
        "model_type": "deepseek_v3", "hidden_size": width, "num_attention_heads": heads, "num_key_value_heads": heads,
        "num_hidden_layers": layers, "intermediate_size": read_size(meta, f"{a}.feed_forward_length", path),
        "max_position_embeddings": read_size(meta, f"{a}.context_length", path),
        "rms_norm_eps": float(read_number(meta, f"{a}.attention.layer_norm_rms_epsilon", path)),
        "rope_theta": float(read_number(meta, f"{a}.rope.freq_base", path, 10000.0)), "rope_scaling": _yarn(meta, a, path),
        "kv_lora_rank": rank, "q_lora_rank": q_rank or None, "qk_rope_head_dim": rope, "qk_nope_head_dim": d_k - rope,
        "v_head_dim": d_v, "rope_interleave": True, "hidden_act": "silu", "attention_bias": False,
        "first_k_dense_replace": dense, "tie_word_embeddings": LM_HEAD not in tensors,
    }
    if dense >= layers:  # dense only: the expert keys size nothing
        return raw | {"moe_intermediate_size": raw["intermediate_size"]}
    gating = read_key(meta, f"{a}.expert_gating_func", int, path, None)
    if gating != _SIGMOID:
        refuse(path, f"{a}.expert_gating_func", gating, "llama.cpp routes with softmax scores then (DeepSeek V2); "
               "attnsym's deepseek_v3 family runs the sigmoid router (2) with its correction bias")
    count = read_size(meta, f"{a}.expert_count", path)
    _stacks_hold(tensors, range(dense, layers), count, a, path)
    shared = read_key(meta, f"{a}.expert_shared_count", int, path)
    if shared < 1:
        refuse(path, f"{a}.expert_shared_count", shared, "attnsym's deepseek_v3 family runs shared experts")
    return raw | {"moe_intermediate_size": read_size(meta, f"{a}.expert_feed_forward_length", path),
                  "n_routed_experts": count, "num_experts_per_tok": read_size(meta, f"{a}.expert_used_count", path),
                  "n_shared_experts": shared, "n_group": read_size(meta, f"{a}.expert_group_count", path, 1),
                  "topk_group": read_size(meta, f"{a}.expert_group_used_count", path, 1),
                  "routed_scaling_factor": float(read_number(meta, f"{a}.expert_weights_scale", path, 1.0)),
                  "norm_topk_prob": read_key(meta, f"{a}.expert_weights_norm", bool, path, False)}


def _qwen3next(meta: dict[str, Any], path: Path, tensors: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """Qwen3-Next with every layer full attention (module docstring); linear-attention layers refused by the key."""
    a = "qwen3next"
    interval = read_size(meta, f"{a}.full_attention_interval", path, 4)  # llama.cpp's default
    if interval != 1:
        refuse(path, f"{a}.full_attention_interval", interval, "every layer i with (i + 1) % interval != 0 is a "
               "linear_attention (Gated DeltaNet) layer, which attnsym does not implement; it runs qwen3next files "
               "whose layers are all full_attention (interval 1)")
    raw = llama_like(meta, a, path, tensors, partial_rotary=True)
    raw.pop("attention_bias")  # the family refuses biases; the weights reader finds none
    rotary = read_size(meta, f"{a}.rope.dimension_count", path, raw.get("head_dim"))
    layers = raw["num_hidden_layers"]
    count = read_size(meta, f"{a}.expert_count", path)
    _stacks_hold(tensors, range(layers), count, a, path)
    return raw | {"model_type": "qwen3_next", "layer_types": ["full_attention"] * layers, "full_attention_interval": 1,
                  "partial_rotary_factor": rotary / raw["head_dim"] if raw.get("head_dim") else 1.0,
                  "hidden_act": "silu", "num_experts": count,
                  "num_experts_per_tok": read_size(meta, f"{a}.expert_used_count", path),
                  "moe_intermediate_size": read_size(meta, f"{a}.expert_feed_forward_length", path),
                  "shared_expert_intermediate_size": read_size(meta, f"{a}.expert_shared_feed_forward_length", path),
                  "norm_topk_prob": True, "decoder_sparse_step": 1, "mlp_only_layers": []}


_ROPE = ("rope.freq_base", "rope.dimension_count", "rope.scaling.type", "rope.scaling.factor")

#: GGUF ``general.architecture`` -> (its ``config.json`` dict builder, the keys under ``<arch>.`` it reads)
ARCHITECTURES_MLA: dict[str, tuple[Callable[..., dict[str, Any]], tuple[str, ...]]] = {
    "deepseek2": (_deepseek2, ("block_count", "embedding_length", "feed_forward_length", "attention.head_count",
                               "attention.head_count_kv", "attention.key_length", "attention.value_length",
                               "attention.key_length_mla", "attention.value_length_mla", "attention.q_lora_rank",
                               "attention.kv_lora_rank", "attention.layer_norm_rms_epsilon", *_ROPE,
                               "rope.scaling.original_context_length", "rope.scaling.yarn_log_multiplier",
                               "rope.scaling.yarn_beta_fast", "rope.scaling.yarn_beta_slow",
                               "leading_dense_block_count", "expert_feed_forward_length", "expert_count",
                               "expert_used_count", "expert_shared_count", "expert_weights_scale",
                               "expert_weights_norm", "expert_gating_func", "expert_group_count",
                               "expert_group_used_count")),
    "qwen3next": (_qwen3next, ("block_count", "embedding_length", "feed_forward_length", "attention.head_count",
                               "attention.head_count_kv", "attention.key_length", "attention.value_length",
                               "attention.layer_norm_rms_epsilon", *_ROPE, "full_attention_interval",
                               "expert_feed_forward_length", "expert_shared_feed_forward_length", "expert_count",
                               "expert_used_count", "ssm.conv_kernel", "ssm.state_size", "ssm.group_count",
                               "ssm.time_step_rank", "ssm.inner_size")),
}


#: family -> role -> GGUF tensor name (read as the plan's ``transposed`` layout: every matrix ``(d_out, d_in)``)
GGUF_NAMES_MLA: dict[str, dict[str, str]] = {
    "deepseek_v3": DECODER_NAMES | {
        "W_Q_down": "blk.{i}.attn_q_a.weight", "g_Q_latent": "blk.{i}.attn_q_a_norm.weight",
        "W_Q_up": "blk.{i}.attn_q_b.weight", "W_KV_down": "blk.{i}.attn_kv_a_mqa.weight",
        "g_KV_latent": "blk.{i}.attn_kv_a_norm.weight", "W_KV_up": "blk.{i}.attn_kv_b.weight",
        "W_router": "blk.{i}.ffn_gate_inp.weight", "b_choice": "blk.{i}.exp_probs_b.bias",
        # a Hugging Face per-expert name under the block ({e}: the expert), read from row e of the stack (gguf_file)
        "W_expert_gate": "blk.{i}.ffn_exps.{{e}}.gate_proj.weight", "W_expert_up": "blk.{i}.ffn_exps.{{e}}.up_proj.weight",
        "W_expert_down": "blk.{i}.ffn_exps.{{e}}.down_proj.weight",
        "W_shared_gate": "blk.{i}.ffn_gate_shexp.weight", "W_shared_up": "blk.{i}.ffn_up_shexp.weight",
        "W_shared_down": "blk.{i}.ffn_down_shexp.weight"},
    "qwen3_next": DECODER_NAMES | {
        "mlp_norm": "blk.{i}.post_attention_norm.weight",  # the converter's name for the norm before the MLP
        "W_router": "blk.{i}.ffn_gate_inp.weight", "W_experts": "blk.{i}.ffn_exps",  # + ".{e}.{part}_proj.weight"
        "W_shared_gate": "blk.{i}.ffn_gate_shexp.weight", "W_shared_up": "blk.{i}.ffn_up_shexp.weight",
        "W_shared_down": "blk.{i}.ffn_down_shexp.weight", "W_shared_router": "blk.{i}.ffn_gate_inp_shexp.weight"},
}
