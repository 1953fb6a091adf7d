"""The family table: ``model_type`` -> how to build a :class:`~attnsym.models.plan.ModelPlan` and read its weights.

Each family of :data:`FAMILIES` is a function from the parsed ``config.json`` to a plan (one
:class:`~attnsym.models.plan.Block` per layer, each with its :class:`~attnsym.AttentionSpec`)
plus the tensor names of its checkpoint (:data:`TENSOR_NAMES`). Options a family does not
implement are refused by name (:class:`~attnsym.models.UnsupportedModelError`).

Both ways configs write RoPE are read: ``rope_theta`` + ``rope_scaling`` (checkpoints written
by transformers 4) and ``rope_parameters`` (transformers 5, which holds ``rope_theta`` and
``rope_type`` together).

>>> sorted(FAMILIES)
['bloom', 'gemma2', 'gpt_neox', 'llama', 'mistral', 'qwen2', 'qwen3']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ..errors import SpecError
from ..numeric.backend import asarray_in
from ..spec import AttentionSpec
from .config import PLANNERS, ModelConfig, _get, _positive, _refuse
from .errors import ModelError
from .plan import Block, ModelPlan, Norm
from .weights import _digest, _Tensors

__all__ = ["FAMILIES", "NAME_MAPS", "OPTIONS", "TENSOR_NAMES", "DecoderLayer", "DecoderWeights", "describe_model",
           "families_table", "layer_spec", "read_family_weights", "read_plan"]


def _rope(raw: dict[str, Any], path: Path) -> tuple[int | float, dict[str, Any] | None]:
    """``(rope_theta, rope_scaling or None)`` from either spelling of the config."""
    params = raw.get("rope_parameters")
    scaling = raw.get("rope_scaling")
    theta = raw.get("rope_theta")
    if isinstance(params, dict):
        theta = params.get("rope_theta", theta)
        scaling = {k: v for k, v in params.items() if k != "rope_theta"}
    if theta is None:
        theta = 10000.0
    if isinstance(theta, bool) or not isinstance(theta, (int, float)):
        raise ModelError(f"{path}: 'rope_theta' must be a number (got {theta!r})")
    if scaling is not None:
        if not isinstance(scaling, dict):
            raise ModelError(f"{path}: 'rope_scaling' must be a JSON object (got {scaling!r})")
        kind = scaling.get("rope_type", scaling.get("type", "default"))
        if kind == "default":
            scaling = None
        elif kind not in ("linear", "llama3"):
            _refuse(path, "rope_scaling.rope_type", kind, "attnsym implements 'default', 'linear' and 'llama3'")
        else:
            scaling = {k: v for k, v in scaling.items() if k in ("rope_type", "type", "factor", "low_freq_factor",
                                                                   "high_freq_factor", "original_max_position_embeddings")}
    return theta, scaling


def _windows(raw: dict[str, Any], path: Path, layers: int, family: str) -> list[int | None]:
    """The sliding window of each layer (None: full attention)."""
    window = raw.get("sliding_window")
    if family == "mistral":
        return [None if window is None else _positive(raw, "sliding_window", path)] * layers
    layer_types = raw.get("layer_types")
    if family in ("qwen2", "qwen3") and not raw.get("use_sliding_window", False):
        return [None] * layers  # the window is only used with use_sliding_window (transformers does the same)
    if layer_types is not None:
        if not isinstance(layer_types, list) or len(layer_types) != layers:
            raise ModelError(f"{path}: 'layer_types' must list one type per layer ({layers}) (got {layer_types!r})")
        for t in layer_types:
            if t not in ("full_attention", "sliding_attention"):
                _refuse(path, "layer_types", t, "attnsym implements 'full_attention' and 'sliding_attention'")
        if "sliding_attention" in layer_types:
            window = _positive(raw, "sliding_window", path)
        return [window if t == "sliding_attention" else None for t in layer_types]
    if window is None:
        return [None] * layers
    window = _positive(raw, "sliding_window", path)
    first = _get(raw, "max_window_layers", int, path, 0)  # transformers 4: layers from max_window_layers on slide
    return [window if i >= first else None for i in range(layers)]


def _llama_like(raw: dict[str, Any], path: Path, family: str) -> ModelPlan:
    act = raw.get("hidden_act", "silu")
    if act != "silu":
        _refuse(path, "hidden_act", act, f"attnsym runs {family} with the SwiGLU MLP, activation 'silu'")
    if raw.get("mlp_bias"):
        _refuse(path, "mlp_bias", raw["mlp_bias"], "attnsym runs the MLP without biases")
    width = _positive(raw, "hidden_size", path)
    heads = _positive(raw, "num_attention_heads", path)
    kv_heads = _positive(raw, "num_key_value_heads", path, heads)
    layers = _positive(raw, "num_hidden_layers", path)
    if "head_dim" in raw and raw["head_dim"] is not None:
        head_dim = _positive(raw, "head_dim", path)
    else:
        if width % heads:
            raise ModelError(f"{path}: the heads ({heads}) must divide the width ({width}) when head_dim is not given")
        head_dim = width // heads
    eps = float(_get(raw, "rms_norm_eps", (int, float), path, 1e-6))
    max_positions = _positive(raw, "max_position_embeddings", path)
    theta, scaling = _rope(raw, path)
    bias: bool | str = "qkv" if family == "qwen2" else bool(raw.get("attention_bias", False))
    windows = _windows(raw, path, layers, family)
    norm = Norm("rms", eps)
    blocks = []
    for window in windows:
        try:
            spec = AttentionSpec(n=max_positions, d_model=width, heads=heads, d_k=head_dim, d_v=head_dim,
                                 kv_heads=kv_heads, causal=True, bias=bias, positions="rope", position_base=theta,
                                 output_projection=True, window=window, qk_norm=family == "qwen3",
                                 qk_norm_eps=eps if family == "qwen3" else 1e-6, rope_scaling=scaling)
        except SpecError as error:
            raise ModelError(f"{path}: the attention of config.json is not a valid layer ({error})") from None
        blocks.append(Block(attention=spec, norm=norm, ffn_width=_positive(raw, "intermediate_size", path)))
    return ModelPlan(model_type=family, width=width, vocab_size=_positive(raw, "vocab_size", path),
                     max_positions=max_positions, blocks=tuple(blocks), final_norm=norm,
                     tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
                     pad_token_id=_get(raw, "pad_token_id", int, path, None))


def _gemma2(raw: dict[str, Any], path: Path) -> ModelPlan:
    """Gemma 2: the LLaMA layout with ``1 + w`` RMSNorms before and after attention and MLP, soft-capped
    logits, the scale ``query_pre_attn_scalar ** -0.5``, alternating sliding / global layers, a
    GeGLU MLP (tanh GELU) and the embedding times ``sqrt(hidden_size)``."""
    act = raw.get("hidden_activation", raw.get("hidden_act", "gelu_pytorch_tanh"))
    if act != "gelu_pytorch_tanh":
        _refuse(path, "hidden_activation", act, "attnsym runs gemma2 with the tanh-GELU gated MLP")
    layers = _positive(raw, "num_hidden_layers", path)
    if raw.get("layer_types") is None:  # transformers 4: even layers slide
        raw = {**raw, "layer_types": ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)]}
    plan = _llama_like({**raw, "hidden_act": "silu", "model_type": "llama"}, path, "gemma2")
    scalar = _get(raw, "query_pre_attn_scalar", (int, float), path, plan.blocks[0].attention.d_k)
    cap = _get(raw, "attn_logit_softcapping", (int, float), path, None)
    norm = Norm("rms", plan.final_norm.eps, offset=1.0)
    try:
        blocks = tuple(Block(attention=b.attention.with_(scale=float(scalar) ** -0.5,
                                                          softcap=None if cap is None else float(cap)),
                             norm=norm, ffn_width=b.ffn_width, activation="gelu_tanh", post_norms=True)
                       for b in plan.blocks)
    except SpecError as error:
        raise ModelError(f"{path}: the attention of config.json is not a valid layer ({error})") from None
    return ModelPlan(model_type="gemma2", width=plan.width, vocab_size=plan.vocab_size,
                     max_positions=plan.max_positions, blocks=blocks, final_norm=norm,
                     tie_word_embeddings=bool(raw.get("tie_word_embeddings", True)), pad_token_id=plan.pad_token_id,
                     embed_scale=float(plan.width) ** 0.5)


def _gpt_neox(raw: dict[str, Any], path: Path) -> ModelPlan:
    """GPT-NeoX (Pythia): LayerNorms, partial rotary, fused per-head q|k|v, GELU MLP, parallel residual."""
    act = raw.get("hidden_act", "gelu")
    if act != "gelu":
        _refuse(path, "hidden_act", act, "attnsym runs gpt_neox with the exact 'gelu'")
    if raw.get("attention_bias", True) is not True:
        _refuse(path, "attention_bias", raw["attention_bias"], "attnsym runs gpt_neox with its q/k/v/output biases")
    width = _positive(raw, "hidden_size", path)
    heads = _positive(raw, "num_attention_heads", path)
    if width % heads:
        raise ModelError(f"{path}: the heads ({heads}) must divide the width ({width})")
    params = raw.get("rope_parameters") if isinstance(raw.get("rope_parameters"), dict) else {}
    pct = params.get("partial_rotary_factor", raw.get("rotary_pct", 1.0))
    theta, scaling = _rope({**raw, "rope_theta": raw.get("rope_theta", raw.get("rotary_emb_base"))}, path)
    if scaling is not None:
        scaling = {k: v for k, v in scaling.items() if k != "partial_rotary_factor"}
    max_positions = _positive(raw, "max_position_embeddings", path)
    norm = Norm("layer", float(_get(raw, "layer_norm_eps", (int, float), path, 1e-5)))
    try:
        spec = AttentionSpec(n=max_positions, d_model=width, heads=heads, causal=True, bias=True, positions="rope",
                             position_base=theta, rotary_pct=float(pct), output_projection=True, rope_scaling=scaling)
    except SpecError as error:
        raise ModelError(f"{path}: the attention of config.json is not a valid layer ({error})") from None
    residual = "parallel" if raw.get("use_parallel_residual", True) else "sequential"
    block = Block(attention=spec, norm=norm, ffn_width=_positive(raw, "intermediate_size", path), mlp="plain",
                  activation="gelu", residual=residual)
    return ModelPlan(model_type="gpt_neox", width=width, vocab_size=_positive(raw, "vocab_size", path),
                     max_positions=max_positions, blocks=(block,) * _positive(raw, "num_hidden_layers", path),
                     final_norm=norm, tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
                     pad_token_id=_get(raw, "pad_token_id", int, path, None))


def _bloom(raw: dict[str, Any], path: Path) -> ModelPlan:
    """BLOOM: ALiBi, a LayerNorm on the embedding, fused per-head q|k|v, tanh-GELU MLP, pre-LayerNorm."""
    if raw.get("apply_residual_connection_post_layernorm"):
        _refuse(path, "apply_residual_connection_post_layernorm", True, "attnsym runs bloom's default residual")
    width = _positive(raw, "hidden_size", path, raw.get("n_embed", ...))
    heads = _positive(raw, "n_head", path, raw.get("num_attention_heads", ...))
    if width % heads:
        raise ModelError(f"{path}: the heads ({heads}) must divide the width ({width})")
    max_positions = _positive(raw, "seq_length", path, 2048)  # ALiBi has no position table; the text limit
    norm = Norm("layer", float(_get(raw, "layer_norm_epsilon", (int, float), path, 1e-5)))
    try:
        spec = AttentionSpec(n=max_positions, d_model=width, heads=heads, causal=True, bias=True, positions="alibi",
                             output_projection=True)
    except SpecError as error:
        raise ModelError(f"{path}: the attention of config.json is not a valid layer ({error})") from None
    block = Block(attention=spec, norm=norm, ffn_width=4 * width, mlp="plain", activation="gelu_tanh")
    layers = _positive(raw, "n_layer", path, raw.get("num_hidden_layers", ...))
    return ModelPlan(model_type="bloom", width=width, vocab_size=_positive(raw, "vocab_size", path),
                     max_positions=max_positions, blocks=(block,) * layers, final_norm=norm,
                     tie_word_embeddings=bool(raw.get("tie_word_embeddings", True)),
                     pad_token_id=_get(raw, "pad_token_id", int, path, None), embed_norm=norm)


#: ``model_type`` -> the function building its plan from ``config.json``
FAMILIES: dict[str, Callable[[dict[str, Any], Path], ModelPlan]] = {
    "llama": lambda raw, path: _llama_like(raw, path, "llama"),
    "mistral": lambda raw, path: _llama_like(raw, path, "mistral"),
    "qwen2": lambda raw, path: _llama_like(raw, path, "qwen2"),
    "qwen3": lambda raw, path: _llama_like(raw, path, "qwen3"),
    "gemma2": _gemma2,
    "gpt_neox": _gpt_neox,
    "bloom": _bloom,
}
PLANNERS.update(FAMILIES)  # read_config dispatches these model_types here

#: ``model_type`` -> what the family is and the options read from ``config.json`` (the docs' table)
OPTIONS: dict[str, tuple[str, str]] = {
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
}

#: tensor names of one block (``{i}`` the layer) and of the model, after the prefix ``model.``
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


#: per family, the tensor names that differ from :data:`TENSOR_NAMES`
NAME_MAPS: dict[str, dict[str, str]] = {
    "gemma2": {"mlp_norm": "layers.{i}.pre_feedforward_layernorm.weight",
               "post_attn_norm": "layers.{i}.post_attention_layernorm.weight",
               "post_mlp_norm": "layers.{i}.post_feedforward_layernorm.weight"},
}


def families_table() -> str:
    """The Markdown table of every ``model_type`` attnsym loads (the docs page "Routing in a real model").

    >>> print(families_table().splitlines()[0])
    | `model_type` | architecture | options read from `config.json` |
    """
    from .config import SUPPORTED

    rows = ["| `model_type` | architecture | options read from `config.json` |", "|---|---|---|"]
    rows += [f"| `{k}` | {v} | sizes, `layer_norm_eps` / `layer_norm_epsilon`, activation |" for k, v in SUPPORTED.items()]
    rows += [f"| `{k}` | {OPTIONS[k][0]} | {OPTIONS[k][1]} |" for k in FAMILIES]
    return "\n".join(rows)


def read_plan(raw: dict[str, Any], path: Path) -> ModelPlan:
    """The plan of a ``config.json`` whose ``model_type`` is in :data:`FAMILIES`."""
    return FAMILIES[raw["model_type"]](raw, path)


@dataclass(frozen=True)
class DecoderLayer:
    """The parameters of one block in ``(d_in, d_out)`` layout; absent biases / gains are None."""

    attn_norm: Any
    W_Q: Any
    W_K: Any
    W_V: Any
    W_O: Any
    mlp_norm: Any
    W_up: Any
    W_down: Any
    b_Q: Any = None
    b_K: Any = None
    b_V: Any = None
    b_O: Any = None
    g_Q: Any = None
    g_K: Any = None
    post_attn_norm: Any = None
    post_mlp_norm: Any = None
    attn_norm_bias: Any = None
    mlp_norm_bias: Any = None
    b_up: Any = None
    b_down: Any = None
    W_gate: Any = None

    def arrays(self) -> dict[str, Any]:
        """Name -> array of every parameter present."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    def digest(self) -> dict[str, str]:
        """A BLAKE2b fingerprint of every parameter (equal digests, equal weights)."""
        return {name: _digest(value) for name, value in self.arrays().items()}


@dataclass(frozen=True)
class DecoderWeights:
    """Token embedding ``(vocab, d)``, the blocks, the final norm's gain."""

    word: Any
    layers: tuple[DecoderLayer, ...]
    final_norm: Any
    final_norm_bias: Any = None
    embed_norm: Any = None
    embed_norm_bias: Any = None

    def to(self, xp: ModuleType) -> DecoderWeights:
        """The same weights as arrays of the namespace ``xp``."""
        layers = tuple(DecoderLayer(**{k: asarray_in(xp, v) for k, v in lw.arrays().items()}) for lw in self.layers)
        rest = {k: None if getattr(self, k) is None else asarray_in(xp, getattr(self, k))
                for k in ("final_norm", "final_norm_bias", "embed_norm", "embed_norm_bias")}
        return DecoderWeights(word=asarray_in(xp, self.word), layers=layers, **rest)

    @property
    def parameter_count(self) -> int:
        """Number of scalars held (an untied LM head is not loaded)."""
        total = int(np.prod(self.word.shape)) + 2 * int(np.prod(self.final_norm.shape))
        return total + sum(int(np.prod(v.shape)) for lw in self.layers for v in lw.arrays().values())


def read_family_weights(path: str | Path, plan: ModelPlan, dtype: Any = np.float32) -> DecoderWeights:
    """Read ``model.safetensors`` for ``plan`` (names of :data:`TENSOR_NAMES`, every shape checked).

    Read by :mod:`attnsym.models.weights`' reader: memory-mapped, sharded checkpoints
    (``model.safetensors.index.json``) included, only the tensors the plan uses, each checked for
    dtype and shape first; float16 and bfloat16 tensors are widened exactly; ``lm_head`` is not read.

    Raises
    ------
    CorruptWeightsError
        An unreadable file, or a tensor missing, misshapen, not float or not finite.
    """
    path = Path(path)
    if plan.model_type in FUSED_QKV_LAYOUTS:  # GPT-NeoX and BLOOM: per-head fused q|k|v
        prefix, names = FUSED_QKV_LAYOUTS[plan.model_type]
        return _read_gpt_neox(_Tensors(path, (prefix,), np.dtype(dtype)), plan, names)
    t = _Tensors(path, ("model.",), np.dtype(dtype))
    d = plan.width
    layers = []
    for i, block in enumerate(plan.blocks):
        s = block.attention
        q, kv, f = s.heads * s.d_k, s.kv_heads * s.d_k, block.ffn_width
        name = {k: v.format(i=i) for k, v in (TENSOR_NAMES | NAME_MAPS.get(plan.model_type, {})).items()}
        parts: dict[str, Any] = dict(
            attn_norm=t(name["attn_norm"], (d,)), mlp_norm=t(name["mlp_norm"], (d,)),
            W_Q=t(name["W_Q"], (d, q), transpose=True), W_K=t(name["W_K"], (d, kv), transpose=True),
            W_V=t(name["W_V"], (d, kv), transpose=True), W_O=t(name["W_O"], (q, d), transpose=True),
            W_gate=t(name["W_gate"], (d, f), transpose=True), W_up=t(name["W_up"], (d, f), transpose=True),
            W_down=t(name["W_down"], (f, d), transpose=True))
        if s.bias:
            parts.update(b_Q=t(name["b_Q"], (q,)), b_K=t(name["b_K"], (kv,)), b_V=t(name["b_V"], (kv,)))
            if s.bias is True:
                parts["b_O"] = t(name["b_O"], (d,))
        if s.qk_norm:
            parts.update(g_Q=t(name["g_Q"], (s.d_k,)), g_K=t(name["g_K"], (s.d_k,)))
        if block.post_norms:
            parts.update(post_attn_norm=t(name["post_attn_norm"], (d,)), post_mlp_norm=t(name["post_mlp_norm"], (d,)))
        layers.append(DecoderLayer(**parts))
    return DecoderWeights(word=t(TENSOR_NAMES["embed"], (plan.vocab_size, d)), layers=tuple(layers),
                          final_norm=t(TENSOR_NAMES["final_norm"], (d,)))


_NEOX = {"layer": "layers.{i}.", "qkv": "attention.query_key_value", "dense": "attention.dense",
         "embed": "embed_in", "final": "final_layer_norm"}
_BLOOM = {"layer": "h.{i}.", "qkv": "self_attention.query_key_value", "dense": "self_attention.dense",
          "embed": "word_embeddings", "final": "ln_f"}

#: the families whose checkpoints fuse q|k|v per head: their tensor prefix and name map
FUSED_QKV_LAYOUTS: dict[str, tuple[str, dict[str, str]]] = {"gpt_neox": ("gpt_neox.", _NEOX),
                                                            "bloom": ("transformer.", _BLOOM)}


def _read_gpt_neox(t: Any, plan: ModelPlan, names: dict[str, str]) -> DecoderWeights:
    """GPT-NeoX and BLOOM names; ``query_key_value`` holds, per head, its q, k and v rows side by side."""
    d, H = plan.width, plan.heads
    w = d // H
    layers = []
    for i, block in enumerate(plan.blocks):
        p, f = names["layer"].format(i=i), block.ffn_width
        W = t(p + names["qkv"] + ".weight", (d, 3 * d), transpose=True).reshape(d, H, 3, w)
        b = t(p + names["qkv"] + ".bias", (3 * d,)).reshape(H, 3, w)
        split = {name: (np.ascontiguousarray(W[:, :, k].reshape(d, d)), np.ascontiguousarray(b[:, k].reshape(d)))
                 for k, name in enumerate("QKV")}
        layers.append(DecoderLayer(
            attn_norm=t(p + "input_layernorm.weight", (d,)), attn_norm_bias=t(p + "input_layernorm.bias", (d,)),
            mlp_norm=t(p + "post_attention_layernorm.weight", (d,)),
            mlp_norm_bias=t(p + "post_attention_layernorm.bias", (d,)),
            W_Q=split["Q"][0], b_Q=split["Q"][1], W_K=split["K"][0], b_K=split["K"][1], W_V=split["V"][0],
            b_V=split["V"][1], W_O=t(p + names["dense"] + ".weight", (d, d), transpose=True),
            b_O=t(p + names["dense"] + ".bias", (d,)),
            W_up=t(p + "mlp.dense_h_to_4h.weight", (d, f), transpose=True), b_up=t(p + "mlp.dense_h_to_4h.bias", (f,)),
            W_down=t(p + "mlp.dense_4h_to_h.weight", (f, d), transpose=True), b_down=t(p + "mlp.dense_4h_to_h.bias", (d,))))
    embed = {} if plan.embed_norm is None else {"embed_norm": t("word_embeddings_layernorm.weight", (d,)),
                                                 "embed_norm_bias": t("word_embeddings_layernorm.bias", (d,))}
    return DecoderWeights(word=t(names["embed"] + ".weight", (plan.vocab_size, d)), layers=tuple(layers),
                          final_norm=t(names["final"] + ".weight", (d,)), final_norm_bias=t(names["final"] + ".bias", (d,)),
                          **embed)


def layer_spec(config: ModelConfig | ModelPlan, layer: int) -> AttentionSpec:
    """The :class:`~attnsym.AttentionSpec` of layer ``layer`` (from 0) of any loaded model.

    For BERT and GPT-2 (learned absolute positions, added to the embeddings before layer 0, so
    the spec has ``positions=None``): biases on q, k, v and the output; GPT-2 is causal and its
    ``scale_attn_by_inverse_layer_idx`` gives layer ``l`` the scale ``1 / (sqrt(d_k) (l + 1))``.
    """
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= layer < config.layers:
        raise ModelError(f"layer must be an integer in 0 … {config.layers - 1} (got {layer!r})")
    layer = int(layer)
    if isinstance(config, ModelPlan):
        return config.blocks[layer].attention
    scale: Any = "sqrt"  # BERT's configs leave scale_scores True and scale_by_layer False
    if config.scale_scores is False or config.scale_by_layer:
        if not config.scale_scores:
            scale = "none" if not config.scale_by_layer else 1.0 / (layer + 1)
        elif config.scale_by_layer:
            scale = 1.0 / (float(np.sqrt(config.d_k)) * (layer + 1))
    return AttentionSpec(n=config.max_positions, d_model=config.width, heads=config.heads, causal=config.causal,
                         bias=True, scale=scale, output_projection=True)


def describe_model(config: ModelConfig | ModelPlan) -> str:
    """One line per block (and the embedding and final norm): what runs."""
    if isinstance(config, ModelPlan):
        return "\n".join(config.lines())
    norm = "post-LayerNorm" if config.model_type == "bert" else "pre-LayerNorm"
    lines = [f"embedding: {config.vocab_size} tokens × {config.width} + learned positions ({config.max_positions})"]
    lines += [f"block {i}: {norm}(eps={config.eps:g}) · attention {layer_spec(config, i).describe()} · "
              f"MLP {config.activation} {config.ffn_width} · sequential residual" for i in range(config.layers)]
    if config.model_type == "gpt2":
        lines.append(f"final norm: LayerNorm(eps={config.eps:g})")
    return "\n".join(lines)

