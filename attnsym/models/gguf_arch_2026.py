"""GGUF metadata of the 2026 families -> their ``config.json``: ``olmo2``, ``smollm3``, ``llama4``, ``gpt-oss``.

One translator per GGUF architecture (llama.cpp's names), registered in
:data:`attnsym.models.gguf_plan.ARCHITECTURES` through :data:`ARCHITECTURES_2026`, with the GGUF
tensor names of each family's roles (:data:`GGUF_NAMES_2026`). Each builds the ``config.json`` dict
of the family of :mod:`attnsym.models.families_2026`, so a GGUF file and the Hugging Face folder it
was converted from give the same plan.

What llama.cpp's converter and loader do, family by family (the schedule a file cannot state is
the one llama.cpp runs, written here as the config keys that give it):

* ``olmo2`` — OLMo 2, converted as written (no q/k row permutation: llama.cpp rotates it with
  half-split pairs). Norms only on the sublayers' outputs (``post_attention_norm``,
  ``post_ffw_norm``), QK-norm gains over the whole projection (``attn_q_norm`` of width
  heads·head_dim). OLMo 3 files share the architecture name and carry
  ``attention.sliding_window_pattern`` (one flag per layer): a pattern with a sliding layer is
  refused (attnsym's ``olmo2`` has none), an all-false one is read; ``attention.sliding_window``
  without a pattern is refused.
* ``smollm3`` — SmolLM3, converted by llama.cpp's LLaMA converter, so ``attn_q`` / ``attn_k`` rows
  are permuted as LLaMA's (:data:`PERMUTED_QK_2026`; undone exactly, see
  :mod:`attnsym.models.gguf_plan`). No key states the NoPE layers: llama.cpp's loader fixes
  ``n_no_rope_layer_step = 4`` (every fourth layer without positions), SmolLM3's default
  ``no_rope_layer_interval``; a checkpoint with another ``no_rope_layers`` cannot be told apart.
* ``llama4`` — Llama 4 (text), converted without the permutation (its checkpoint already uses
  interleaved pairs). llama.cpp's loader fixes the schedule: chunks of 8 192 tokens on three RoPE
  layers to one full NoPE layer, the NoPE layers' query temperature with floor 8 192 and scale 0.1,
  QK-norm unless the model has 128 experts (Maverick); ``attention.sliding_window = 0`` (MobileLLM)
  means every layer full, rotated, without temperature, and any other value is refused (llama.cpp
  would run chunks of 8 192 whatever it says). ``feed_forward_length`` is the dense layers' width
  (``intermediate_size_mlp``), ``expert_feed_forward_length`` the experts' (``intermediate_size``),
  ``interleave_moe_layer_step`` which layers are mixtures.
* ``gpt-oss`` — gpt-oss, converted without the permutation; ``attn_sinks``, biases everywhere,
  ``post_attention_norm`` as the MLP's norm, a sliding window (required) on every even layer
  (llama.cpp's pattern 2, the checkpoint's default), the experts' gate and up projections stored
  apart (``ffn_gate_exps``, ``ffn_up_exps``: llama.cpp's converter split gpt-oss's interleaved
  ``gate_up_proj``), the clamped GLU's constants (α 1.702, limit 7) llama.cpp's own. Its YaRN runs
  ``truncate = false`` as the checkpoint's ``rope_parameters`` say and transformers runs it (a GGUF
  has no key for it; ggml's own YaRN floors and ceils the ramp's planes).

``smollm3`` and ``llama4`` files may hold a ``rope_freqs.weight`` tensor (a llama3 scaling baked
into per-plane divisors by the LLaMA converter, :data:`ROPE_FREQS_2026`), read back as the rule
(:func:`attnsym.models.gguf_keys.llama3_scaling`).

The experts of ``llama4`` and ``gpt-oss`` are stored as one ``(E, f, d)`` tensor per projection,
where the family reads one ``(E, d, 2f)`` gate|up tensor and an ``(E, f, d)`` down one: the plan's
layout names a tensor assembled from the stored ones (:data:`ASSEMBLED_2026`, a name no GGUF file
holds), read through the file's tensor source, so every stored tensor is still checked, dequantized
and counted as read. A file that stores the fused ``ffn_gate_up_exps`` (the converter's
``--fuse-gate-up-exps``) is refused by name.

A key the family needs and the file lacks is a :class:`~attnsym.models.ModelError` naming it; a key
of the architecture outside its understood keys is refused by :func:`~attnsym.models.gguf_plan.plan_from_metadata`.

Examples
--------
>>> from attnsym.models.gguf_plan import plan_from_metadata
>>> meta = {"general.architecture": "smollm3", "smollm3.block_count": 4, "smollm3.embedding_length": 64,
...         "smollm3.feed_forward_length": 128, "smollm3.attention.head_count": 4,
...         "smollm3.attention.head_count_kv": 2, "smollm3.context_length": 256,
...         "smollm3.attention.layer_norm_rms_epsilon": 1e-6}
>>> g = plan_from_metadata(meta, {"token_embd.weight": (300, 64)}, Path("m.gguf"))
>>> [b.attention.positions for b in g.plan.blocks], g.permuted["blk.0.attn_q.weight"]
(['rope', 'rope', 'rope', None], 4)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ModelError, UnsupportedModelError
from .gguf_keys import DECODER_NAMES, ROPE_SCALING_KEYS, llama_like, read_key, read_size, refuse

__all__ = ["ARCHITECTURES_2026", "ASSEMBLED_2026", "GGUF_NAMES_2026", "PERMUTED_QK_2026", "ROPE_FREQS_2026"]

#: ``read(source, shape, i)``: the array of ``shape`` the family reads for block ``i``, assembled from stored tensors
Assembly = Callable[..., np.ndarray]

#: the LLaMA-layout keys every translator of this module reads (with the RoPE scaling keys)
_DECODER_KEYS = ("block_count", "embedding_length", "feed_forward_length", "attention.head_count",
                 "attention.head_count_kv", "attention.key_length", "attention.value_length",
                 "attention.layer_norm_rms_epsilon", "rope.freq_base", "rope.dimension_count", *ROPE_SCALING_KEYS)

#: llama.cpp's loader constants (``llama-model.cpp``): SmolLM3's and Llama 4's NoPE step, Llama 4's chunk size
#: and query temperature (floor, scale), and the expert count of the Llama 4 without QK-norm (Maverick)
_NO_ROPE_STEP, _LLAMA4_CHUNK, _LLAMA4_FLOOR, _LLAMA4_SCALE, _LLAMA4_NO_QK_NORM_EXPERTS = 4, 8192, 8192, 0.1, 128


def _olmo2(meta: dict[str, Any], path: Path, tensors: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """OLMo 2: the LLaMA-layout keys; an OLMo 3 sliding pattern with a sliding layer is refused."""
    raw = llama_like(meta, "olmo2", path, tensors) | {"model_type": "olmo2"}
    key = "olmo2.attention.sliding_window_pattern"
    pattern = read_key(meta, key, list, path, None)
    if pattern is not None:
        layers = raw["num_hidden_layers"]
        if len(pattern) != layers or not all(isinstance(p, bool) for p in pattern):
            raise ModelError(f"{path}: GGUF key {key!r} must list one true/false per layer ({layers}) "
                             f"(got {str(pattern)[:60]})")
        if any(pattern):
            refuse(path, key, pattern, "attnsym's olmo2 has no sliding-window layers (an OLMo 3 file)")
    elif "olmo2.attention.sliding_window" in meta:  # llama.cpp would slide OLMo 3's default layers
        refuse(path, "olmo2.attention.sliding_window", meta["olmo2.attention.sliding_window"],
               "attnsym's olmo2 has no sliding-window layers, and no pattern says none slides")
    return raw


def _smollm3(meta: dict[str, Any], path: Path, tensors: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """SmolLM3: the LLaMA-layout keys, every fourth layer NoPE (llama.cpp's constant), no window."""
    return llama_like(meta, "smollm3", path, tensors) | {"model_type": "smollm3", "use_sliding_window": False,
                                                         "no_rope_layer_interval": _NO_ROPE_STEP}


def _llama4(meta: dict[str, Any], path: Path, tensors: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """Llama 4 (text): llama.cpp's fixed schedule (module docstring), the dense and expert widths, the mixtures."""
    a = "llama4"
    raw = llama_like(meta, a, path, tensors)
    experts = read_size(meta, f"{a}.expert_count", path)
    lead = read_key(meta, f"{a}.leading_dense_block_count", int, path, 0)
    if lead != 0:
        refuse(path, f"{a}.leading_dense_block_count", lead, "attnsym runs llama4 with interleave_moe_layer_step alone")
    raw |= {"model_type": "llama4_text", "intermediate_size_mlp": raw["intermediate_size"],
            "intermediate_size": read_size(meta, f"{a}.expert_feed_forward_length", path),
            "num_local_experts": experts, "num_experts_per_tok": read_size(meta, f"{a}.expert_used_count", path, 1),
            "interleave_moe_layer_step": read_size(meta, f"{a}.interleave_moe_layer_step", path),
            "use_qk_norm": experts != _LLAMA4_NO_QK_NORM_EXPERTS}
    window = read_key(meta, f"{a}.attention.sliding_window", int, path, None)
    if window == 0:  # MobileLLM: every layer full and rotated, no temperature
        layers = raw["num_hidden_layers"]
        return raw | {"no_rope_layers": [1] * layers, "layer_types": ["full_attention"] * layers,
                      "attn_temperature_tuning": False}
    if window is not None and window != _LLAMA4_CHUNK:
        refuse(path, f"{a}.attention.sliding_window", window, f"llama.cpp runs llama4 with chunks of {_LLAMA4_CHUNK} "
               "tokens whatever it says (0: no chunks)")
    return raw | {"no_rope_layer_interval": _NO_ROPE_STEP, "attention_chunk_size": _LLAMA4_CHUNK,
                  "attn_temperature_tuning": True, "floor_scale": _LLAMA4_FLOOR, "attn_scale": _LLAMA4_SCALE}


def _gpt_oss(meta: dict[str, Any], path: Path, tensors: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """gpt-oss: the LLaMA-layout keys, experts, a window on the even layers, YaRN without truncation."""
    a = "gpt-oss"
    raw = llama_like(meta, a, path, tensors)
    width = read_size(meta, f"{a}.expert_feed_forward_length", path)
    if width != raw["intermediate_size"]:
        refuse(path, f"{a}.feed_forward_length", raw["intermediate_size"], f"gpt-oss has experts only, of width "
               f"{a}.expert_feed_forward_length = {width}")
    count = read_size(meta, f"{a}.expert_count", path)
    scaling = raw["rope_scaling"]
    if scaling is not None and scaling["rope_type"] == "yarn":
        scaling = scaling | {"truncate": False}
    return raw | {"model_type": "gpt_oss", "num_local_experts": count, "rope_scaling": scaling,
                  "num_experts_per_tok": read_size(meta, f"{a}.expert_used_count", path),
                  "sliding_window": read_size(meta, f"{a}.attention.sliding_window", path)}


#: GGUF ``general.architecture`` -> (its ``config.json`` builder, the keys under ``<arch>.`` it reads)
ARCHITECTURES_2026: dict[str, tuple[Callable[..., dict[str, Any]], tuple[str, ...]]] = {
    "olmo2": (_olmo2, (*_DECODER_KEYS, "attention.sliding_window", "attention.sliding_window_pattern")),
    "smollm3": (_smollm3, _DECODER_KEYS),
    "llama4": (_llama4, (*_DECODER_KEYS, "expert_count", "expert_used_count", "expert_feed_forward_length",
                         "interleave_moe_layer_step", "leading_dense_block_count", "attention.sliding_window")),
    "gpt-oss": (_gpt_oss, (*_DECODER_KEYS, "expert_count", "expert_used_count", "expert_feed_forward_length",
                           "attention.sliding_window")),
}

#: GGUF architectures whose ``attn_q`` / ``attn_k`` rows llama.cpp's converter permuted (LLaMA's converter)
PERMUTED_QK_2026 = ("smollm3",)

#: GGUF architectures whose ``rope_freqs.weight`` (a llama3 ``rope_scaling``, LLaMA's converter) is read
ROPE_FREQS_2026 = ("smollm3", "llama4")


# ---------------------------------------------------------------------------------------------- the experts
def _fused(t: Any, i: int) -> None:
    fused = f"blk.{i}.ffn_gate_up_exps.weight"
    if fused in t:
        raise UnsupportedModelError(f"{t.path}: the GGUF file stores the experts' gate and up projections fused "
                                    f"({fused!r}), which attnsym does not read; convert without --fuse-gate-up-exps")


def _gate_up(part: str, interleaved: bool) -> Assembly:
    """The experts' ``(E, d, 2f)`` gate|up weights (``part`` "weight") or ``(E, 2f)`` biases (``part`` "bias") from
    ``ffn_gate_exps`` and ``ffn_up_exps`` (``(E, f, d)`` / ``(E, f)``): gate then up halves (Llama 4), or their
    columns interleaved, gate first (gpt-oss)."""
    def read(t: Any, shape: tuple[int, ...], i: int) -> np.ndarray:
        _fused(t, i)
        f = shape[-1] // 2
        stored = (*shape[:-2], f, shape[-2]) if part == "weight" else (*shape[:-1], f)
        gate, up = (t(f"blk.{i}.ffn_{name}_exps.{part}", stored) for name in ("gate", "up"))
        if part == "weight":
            gate, up = gate.swapaxes(-1, -2), up.swapaxes(-1, -2)  # (E, d, f)
        out = np.empty(shape, gate.dtype)
        halves = (slice(0, None, 2), slice(1, None, 2)) if interleaved else (slice(0, f), slice(f, None))
        out[..., halves[0]], out[..., halves[1]] = gate, up
        return out
    return read


def _down(t: Any, shape: tuple[int, ...], i: int) -> np.ndarray:
    """The experts' ``(E, f, d)`` down weights from ``ffn_down_exps`` (stored ``(E, d, f)``: each expert's nn.Linear)."""
    E, f, d = shape
    return np.ascontiguousarray(t(f"blk.{i}.ffn_down_exps.weight", (E, d, f)).swapaxes(-1, -2))


#: names of the assembled tensors (no GGUF file holds a name with "+" or "^T")
_GATE_UP, _GATE_UP_BIAS, _DOWN = ("blk.{i}.ffn_gate_exps+ffn_up_exps.weight", "blk.{i}.ffn_gate_exps+ffn_up_exps.bias",
                                  "blk.{i}.ffn_down_exps.weight^T")

#: family -> assembled tensor name (``{i}`` the block) -> how it is assembled (module docstring)
ASSEMBLED_2026: dict[str, dict[str, Assembly]] = {
    "llama4_text": {_GATE_UP: _gate_up("weight", interleaved=False), _DOWN: _down},
    "gpt_oss": {_GATE_UP: _gate_up("weight", interleaved=True), _GATE_UP_BIAS: _gate_up("bias", interleaved=True),
                _DOWN: _down},
}

#: family -> role -> GGUF tensor name (``{i}`` the block), as :data:`attnsym.models.gguf_plan.GGUF_NAMES`
GGUF_NAMES_2026: dict[str, dict[str, str]] = {
    "olmo2": DECODER_NAMES | {"post_attn_norm": "blk.{i}.post_attention_norm.weight",
                              "post_mlp_norm": "blk.{i}.post_ffw_norm.weight"},
    "smollm3": DECODER_NAMES,
    "llama4_text": {k: v for k, v in DECODER_NAMES.items() if k not in ("g_Q", "g_K")} | {  # a weightless QK-norm
        "W_router": "blk.{i}.ffn_gate_inp.weight", "W_experts_gate_up": _GATE_UP, "W_experts_down": _DOWN,
        "W_shared_gate": "blk.{i}.ffn_gate_shexp.weight", "W_shared_up": "blk.{i}.ffn_up_shexp.weight",
        "W_shared_down": "blk.{i}.ffn_down_shexp.weight"},
    "gpt_oss": DECODER_NAMES | {"mlp_norm": "blk.{i}.post_attention_norm.weight", "s_sink": "blk.{i}.attn_sinks.weight",
                                "W_router": "blk.{i}.ffn_gate_inp.weight", "b_router": "blk.{i}.ffn_gate_inp.bias",
                                "W_experts_gate_up": _GATE_UP, "b_experts_gate_up": _GATE_UP_BIAS,
                                "W_experts_down": _DOWN, "b_experts_down": "blk.{i}.ffn_down_exps.bias"},
}
