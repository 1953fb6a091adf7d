"""GGUF metadata -> the same :class:`~attnsym.models.plan.ModelPlan` as a ``config.json``.

A GGUF file carries no ``config.json``: its metadata is the configuration, under llama.cpp's key
names (``llama.block_count``, ``llama.attention.head_count_kv``, ``llama.rope.freq_base`` …).
One small function per GGUF architecture (:data:`ARCHITECTURES`) translates those keys into the
``config.json`` dict of the matching family, and the family table
(:func:`attnsym.models.families.read_plan`) builds the plan from it, so a GGUF file and a
Hugging Face folder of the same model give the same plan: the sizes, RoPE, windows and soft-caps
are read by the very same code. Beside it, :data:`GGUF_NAMES` maps each role of the plan's
:class:`~attnsym.models.plan.Layout` to a GGUF tensor name (``blk.{i}.attn_q.weight`` …).

A key the family needs and the file lacks is one :class:`~attnsym.models.ModelError` naming
the key; a key of the architecture that attnsym does not read (a RoPE scaling type it does not
implement, experts, ALiBi bias limits …) and an unknown architecture are refused
(:class:`~attnsym.models.UnsupportedModelError`), never ignored.

**The q/k row permutation.** llama.cpp runs the LLaMA architecture with *interleaved* rotary
pairs ``(2i, 2i + 1)``, while the Hugging Face checkpoint it converts was trained with the
*half-split* pairs ``(i, i + r/2)`` of ``rotate_half``. Its converter therefore reorders the rows
of ``attn_q`` and ``attn_k`` within every head: GGUF row ``2i + t`` holds original row
``i + t·r/2``. That is the permutation ``P`` of the claim ``rope-pairing-permutation``
(``RoPE_half(P q) = P · RoPE_interleaved(q)`` at every position): interleaved rotary on the
permuted rows computes exactly the scores of half-split rotary on the original rows.
:func:`unpermute_qk_rows` undoes it (``(Pq)_i = q_{2i}``, ``(Pq)_{i + r/2} = q_{2i+1}``), so the
plan keeps the half-split pairing of the family and the arrays are the original ones, exactly
(a permutation moves values, it rounds nothing). SmolLM3 goes through the same LLaMA converter
and is permuted too; Qwen 2/3, Gemma 2, GPT-NeoX, OLMo 2 and gpt-oss are converted without it
(llama.cpp runs them with half-split "NEOX" rotary), and so is Llama 4, whose checkpoint already
pairs interleaved.

The 2026 families' translators (``olmo2``, ``smollm3``, ``llama4``, ``gpt-oss``) live in
:mod:`attnsym.models.gguf_arch_2026` and are registered here, with the experts' tensors their
files store apart and the family reads as one (:data:`ASSEMBLED`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ModelError, UnsupportedModelError
from .families import read_plan
from .gguf_arch_2026 import ARCHITECTURES_2026, ASSEMBLED_2026, GGUF_NAMES_2026, PERMUTED_QK_2026, ROPE_FREQS_2026
from .gguf_arch_mla import ARCHITECTURES_MLA, GGUF_NAMES_MLA
from .gguf_keys import (
    DECODER_NAMES,
    HARMLESS_KEYS,
    LM_HEAD,
    ROPE_FREQS,
    ROPE_SCALING_KEYS,
    layer_norm_eps,
    llama3_scaling,
    llama_like,
    read_key,
    read_number,
    read_size,
    refuse,
)
from .plan import Layout, ModelPlan, Norm

__all__ = ["ARCHITECTURES", "GGUF_NAMES", "GGUFPlan", "plan_from_metadata", "unpermute_qk_rows"]


#: family -> role -> GGUF tensor name; GGUF stores every matrix ``(d_out, d_in)`` (GPT-2's Conv1D
#: weights are transposed by the converter) and fused q|k|v as rows ``[Q; K; V]`` (the converter
#: regroups GPT-NeoX's and BLOOM's per-head rows), so all read as ``transposed`` with ``columns`` q|k|v
GGUF_NAMES: dict[str, dict[str, str]] = {
    **{family: DECODER_NAMES for family in ("llama", "mistral", "qwen2", "qwen3", "gpt2", "gpt_neox", "bloom")},
    "gemma2": DECODER_NAMES | {"post_attn_norm": "blk.{i}.post_attention_norm.weight",
                                "post_mlp_norm": "blk.{i}.post_ffw_norm.weight"},
    "phi3": DECODER_NAMES | {"W_gate_up": "blk.{i}.ffn_up.weight"},
    "gemma3_text": DECODER_NAMES | {"post_attn_norm": "blk.{i}.post_attention_norm.weight",
                                     "post_mlp_norm": "blk.{i}.post_ffw_norm.weight"},
    "bert": DECODER_NAMES | {"attn_norm": "blk.{i}.attn_output_norm.weight",
                              "mlp_norm": "blk.{i}.layer_output_norm.weight"},
    **GGUF_NAMES_MLA,
    **GGUF_NAMES_2026,
}
_FUSED = ("gpt2", "gpt_neox", "bloom", "phi3")



@dataclass(frozen=True)
class GGUFPlan:
    """What the metadata says: the plan (with its GGUF layout) and the converter's q/k permutation.

    Attributes
    ----------
    plan : ModelPlan
    architecture : str
        ``general.architecture``.
    permuted : dict of str to int
        GGUF tensor name -> the number of heads whose rows :func:`unpermute_qk_rows` must restore
        (``attn_q`` / ``attn_k`` weights and biases of the LLaMA architecture; empty otherwise).
    assembled : dict of str to callable
        Tensor name of the layout that no file holds -> ``read(source, shape)`` returning it, assembled
        from stored tensors read through ``source`` (:data:`ASSEMBLED`; empty for most families).
    """

    plan: ModelPlan
    architecture: str
    permuted: dict[str, int]
    assembled: dict[str, Callable[..., np.ndarray]] = field(default_factory=dict)


def unpermute_qk_rows(W: np.ndarray, heads: int) -> np.ndarray:
    """The rows of a GGUF ``attn_q`` / ``attn_k`` tensor in the order of the original checkpoint.

    Within each head of ``d = rows / heads`` rows, original row ``c`` is GGUF row ``order[c]`` with
    ``order = (0, 2, …, d − 2, 1, 3, …, d − 1)``: the permutation ``P`` of ``rope-pairing-permutation``,
    ``(Pq)_i = q_{2i}``, ``(Pq)_{i + d/2} = q_{2i+1}``. It turns the interleaved rotary pairs llama.cpp
    uses into the half-split pairs of the checkpoint (module docstring). Works on a weight
    ``(rows, d_in)`` and on a bias ``(rows,)``.

    >>> unpermute_qk_rows(np.arange(8), heads=2)       # head 0 rows 0..3, head 1 rows 4..7
    array([0, 2, 1, 3, 4, 6, 5, 7])
    """
    rows = W.shape[0]
    d = rows // heads
    order = [*range(0, d, 2), *range(1, d, 2)]
    return np.ascontiguousarray(W.reshape(heads, d, *W.shape[1:])[:, order].reshape(W.shape))


def _llama(meta: dict[str, Any], path: Path, tensors: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """LLaMA; with ``llama.attention.sliding_window`` a Mistral-style file (its window in every layer)."""
    raw = llama_like(meta, "llama", path, tensors)
    window = read_size(meta, "llama.attention.sliding_window", path, None)
    if window is not None:
        return raw | {"model_type": "mistral", "sliding_window": window}
    return raw | {"model_type": "llama"}


def _qwen(a: str) -> Callable[[dict[str, Any], Path, dict[str, tuple[int, ...]]], dict[str, Any]]:
    def build(meta: dict[str, Any], path: Path, tensors: dict[str, tuple[int, ...]]) -> dict[str, Any]:
        raw = llama_like(meta, a, path, tensors) | {"model_type": a}
        raw.pop("attention_bias")  # Qwen 2 always has q/k/v biases, Qwen 3 none: the family decides
        return raw
    return build


def _gemma2(meta: dict[str, Any], path: Path, tensors: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """Gemma 2: llama.cpp scales queries by ``1/sqrt(head_dim)``, or ``1/sqrt(width/heads)`` for the 46-layer 27B."""
    raw = llama_like(meta, "gemma2", path, tensors)
    layers, heads, width = raw["num_hidden_layers"], raw["num_attention_heads"], raw["hidden_size"]
    raw.pop("attention_bias")
    return raw | {"model_type": "gemma2", "hidden_activation": "gelu_pytorch_tanh",
                  "query_pre_attn_scalar": width // heads if layers == 46 else raw["head_dim"],
                  "sliding_window": read_size(meta, "gemma2.attention.sliding_window", path),
                  "attn_logit_softcapping": read_number(meta, "gemma2.attn_logit_softcapping", path, None),
                  "final_logit_softcapping": read_number(meta, "gemma2.final_logit_softcapping", path, None)}


def _gemma3(meta: dict[str, Any], path: Path, tensors: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """Gemma 3 (text): five sliding layers to one global (llama.cpp's rule, ``sliding_window_pattern`` 6), the
    global layers with ``rope.freq_base`` and its scaling, the local ones with base 10 000 (llama.cpp's constant);
    queries scaled as Gemma 2's (``1/sqrt(width/heads)`` for the 62-layer 27B)."""
    raw = llama_like(meta, "gemma3", path, tensors)
    layers, heads, width = raw["num_hidden_layers"], raw["num_attention_heads"], raw["hidden_size"]
    raw.pop("attention_bias")
    return raw | {"model_type": "gemma3_text", "hidden_activation": "gelu_pytorch_tanh",
                  "query_pre_attn_scalar": width // heads if layers == 62 else raw["head_dim"],
                  "sliding_window": read_size(meta, "gemma3.attention.sliding_window", path),
                  "rope_local_base_freq": 10000.0}


def _phi3(meta: dict[str, Any], path: Path, tensors: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """Phi-3: fused ``attn_qkv`` and ``ffn_up`` (gate, then up), partial rotary, a window on every layer when set.

    LongRoPE's per-frequency factors (``rope_factors_long`` / ``rope_factors_short`` tensors) are refused.
    """
    for name in ("rope_factors_long.weight", "rope_factors_short.weight"):
        if name in tensors:
            raise UnsupportedModelError(f"{path}: the GGUF file holds a {name!r} tensor (Phi-3's LongRoPE factors), "
                                        "which attnsym does not read from GGUF files; load the Hugging Face folder")
    raw = llama_like(meta, "phi3", path, tensors, partial_rotary=True) | {"model_type": "phi3"}
    raw.pop("attention_bias")
    window = read_size(meta, "phi3.attention.sliding_window", path, None)
    return raw | ({} if window is None else {"sliding_window": window})


def _gpt2(meta: dict[str, Any], path: Path, tensors: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    return {"model_type": "gpt2", "n_embd": read_size(meta, "gpt2.embedding_length", path),
            "n_layer": read_size(meta, "gpt2.block_count", path), "n_head": read_size(meta, "gpt2.attention.head_count", path),
            "n_inner": read_size(meta, "gpt2.feed_forward_length", path),
            "n_positions": read_size(meta, "gpt2.context_length", path),
            "layer_norm_epsilon": layer_norm_eps(meta, "gpt2", path), "activation_function": "gelu_new"}


def _gptneox(meta: dict[str, Any], path: Path, tensors: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    a = "gptneox"
    width, heads = read_size(meta, f"{a}.embedding_length", path), read_size(meta, f"{a}.attention.head_count", path)
    rotary = read_size(meta, f"{a}.rope.dimension_count", path)
    return {"model_type": "gpt_neox", "hidden_size": width, "num_attention_heads": heads,
            "num_hidden_layers": read_size(meta, f"{a}.block_count", path),
            "intermediate_size": read_size(meta, f"{a}.feed_forward_length", path),
            "max_position_embeddings": read_size(meta, f"{a}.context_length", path),
            "rotary_pct": rotary / (width // heads) if width % heads == 0 else 1.0,
            "rotary_emb_base": float(read_number(meta, f"{a}.rope.freq_base", path, 10000.0)),
            "use_parallel_residual": read_key(meta, f"{a}.use_parallel_residual", bool, path, True),
            "layer_norm_eps": layer_norm_eps(meta, a, path), "tie_word_embeddings": LM_HEAD not in tensors}


def _bloom(meta: dict[str, Any], path: Path, tensors: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    return {"model_type": "bloom", "hidden_size": read_size(meta, "bloom.embedding_length", path),
            "n_head": read_size(meta, "bloom.attention.head_count", path), "n_layer": read_size(meta, "bloom.block_count", path),
            "seq_length": read_size(meta, "bloom.context_length", path, 2048),
            "layer_norm_epsilon": layer_norm_eps(meta, "bloom", path)}


def _bert(meta: dict[str, Any], path: Path, tensors: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    if read_key(meta, "bert.attention.causal", bool, path, False):
        refuse(path, "bert.attention.causal", True, "attnsym runs BERT as a bidirectional encoder")
    types = tensors.get("token_types.weight", (2,))
    return {"model_type": "bert", "hidden_size": read_size(meta, "bert.embedding_length", path),
            "num_attention_heads": read_size(meta, "bert.attention.head_count", path),
            "num_hidden_layers": read_size(meta, "bert.block_count", path),
            "intermediate_size": read_size(meta, "bert.feed_forward_length", path),
            "max_position_embeddings": read_size(meta, "bert.context_length", path),
            "type_vocab_size": int(types[0]) if types else 2, "hidden_act": "gelu",
            "layer_norm_eps": layer_norm_eps(meta, "bert", path)}


#: GGUF ``general.architecture`` -> (its ``config.json`` dict builder, the keys under ``<arch>.`` it reads)
ARCHITECTURES: dict[str, tuple[Callable[..., dict[str, Any]], tuple[str, ...]]] = {
    "llama": (_llama, ("block_count", "embedding_length", "feed_forward_length", "attention.head_count",
                       "attention.head_count_kv", "attention.key_length", "attention.value_length",
                       "attention.layer_norm_rms_epsilon", "rope.freq_base", "rope.dimension_count",
                       *ROPE_SCALING_KEYS, "attention.sliding_window")),
    "qwen2": (_qwen("qwen2"), ("block_count", "embedding_length", "feed_forward_length", "attention.head_count",
                               "attention.head_count_kv", "attention.key_length", "attention.value_length",
                               "attention.layer_norm_rms_epsilon", "rope.freq_base", "rope.dimension_count",
                               *ROPE_SCALING_KEYS)),
    "qwen3": (_qwen("qwen3"), ("block_count", "embedding_length", "feed_forward_length", "attention.head_count",
                               "attention.head_count_kv", "attention.key_length", "attention.value_length",
                               "attention.layer_norm_rms_epsilon", "rope.freq_base", "rope.dimension_count",
                               *ROPE_SCALING_KEYS)),
    "gemma2": (_gemma2, ("block_count", "embedding_length", "feed_forward_length", "attention.head_count",
                         "attention.head_count_kv", "attention.key_length", "attention.value_length",
                         "attention.layer_norm_rms_epsilon", "rope.freq_base", "rope.dimension_count",
                         *ROPE_SCALING_KEYS, "attention.sliding_window",
                         "attn_logit_softcapping", "final_logit_softcapping")),
    "gemma3": (_gemma3, ("block_count", "embedding_length", "feed_forward_length", "attention.head_count",
                         "attention.head_count_kv", "attention.key_length", "attention.value_length",
                         "attention.layer_norm_rms_epsilon", "rope.freq_base", "rope.dimension_count",
                         *ROPE_SCALING_KEYS, "attention.sliding_window")),
    "phi3": (_phi3, ("block_count", "embedding_length", "feed_forward_length", "attention.head_count",
                     "attention.head_count_kv", "attention.layer_norm_rms_epsilon", "rope.freq_base",
                     "rope.dimension_count", *ROPE_SCALING_KEYS, "attention.sliding_window")),
    "gpt2": (_gpt2, ("block_count", "embedding_length", "feed_forward_length", "attention.head_count",
                     "attention.layer_norm_epsilon")),
    "gptneox": (_gptneox, ("block_count", "embedding_length", "feed_forward_length", "attention.head_count",
                           "attention.layer_norm_epsilon", "rope.freq_base", "rope.dimension_count",
                           "use_parallel_residual")),
    "bloom": (_bloom, ("block_count", "embedding_length", "feed_forward_length", "attention.head_count",
                       "attention.layer_norm_epsilon")),
    "bert": (_bert, ("block_count", "embedding_length", "feed_forward_length", "attention.head_count",
                     "attention.layer_norm_epsilon", "attention.causal")),
    **ARCHITECTURES_MLA,
    **ARCHITECTURES_2026,
}

#: GGUF architectures whose ``attn_q`` / ``attn_k`` rows the converter permuted (module docstring)
PERMUTED_QK = ("llama", *PERMUTED_QK_2026)

#: GGUF architectures whose ``rope_freqs.weight`` (llama3 scaling, written by llama.cpp's LLaMA converter) is read
ROPE_FREQS_ARCHITECTURES = ("llama", *ROPE_FREQS_2026)

#: family -> tensor name of its layout that no file holds (``{i}`` the block) -> how it is assembled from stored
#: tensors, ``(tensor source, shape, block) -> array`` (the experts of :mod:`attnsym.models.gguf_arch_2026`)
ASSEMBLED: dict[str, dict[str, Callable[..., np.ndarray]]] = {**ASSEMBLED_2026}


def _stored_qk_gains(spec: Any) -> Any:
    """The spec with a QK-norm gain offset of 0: the converter stored ``1 + w`` in ``attn_q_norm`` / ``attn_k_norm``
    as in every other ``norm.weight`` (Gemma 3)."""
    return spec.replace(qk_norm_offset=0.0) if spec.qk_norm and spec.qk_norm_offset else spec


def _rope_freqs_scaling(raw: dict[str, Any], rope_freqs: Any, arch: str, path: Path) -> dict[str, Any] | None:
    """The llama3 ``rope_scaling`` a ``rope_freqs`` tensor's divisors say (refused beside a scaling of the keys)."""
    if raw.get("rope_scaling") is not None:
        refuse(path, f"{arch}.rope.scaling.type", raw["rope_scaling"]["rope_type"], f"the {ROPE_FREQS!r} tensor "
               "scales the frequencies already")
    rotary = raw.get("head_dim") or raw["hidden_size"] // raw["num_attention_heads"]
    return llama3_scaling(rope_freqs, raw["rope_theta"], rotary, path)


def _permuted_qk(plan: ModelPlan) -> dict[str, int]:
    """GGUF tensor name -> heads, for every block's ``attn_q`` / ``attn_k`` weight and bias (module docstring)."""
    return {f"blk.{i}.attn_{letter}.{part}": heads
            for i, block in enumerate(plan.blocks)
            for letter, heads in (("q", block.attention.heads), ("k", block.attention.kv_heads))
            for part in ("weight", "bias")}


def plan_from_metadata(meta: dict[str, Any], tensors: dict[str, tuple[int, ...]], path: Path,
                       rope_freqs: Any = None) -> GGUFPlan:
    """The plan of a GGUF file from its metadata (``meta``: key -> value) and tensor shapes (NumPy order).

    ``rope_freqs``: the values of the file's ``rope_freqs.weight`` tensor when it holds one (a few
    floats, read before the plan), turned back into the llama3 ``rope_scaling`` that produced them
    (:func:`~attnsym.models.gguf_keys.llama3_scaling`) for the architectures of
    :data:`ROPE_FREQS_ARCHITECTURES`.

    Raises
    ------
    UnsupportedModelError
        An architecture not in :data:`ARCHITECTURES`, a key of the architecture that attnsym does
        not read, a RoPE scaling type other than none / linear / YaRN, or a ``rope_freqs`` tensor
        that is not a llama3 rule's divisors or belongs to another architecture.
    ModelError
        A key the architecture needs is missing or of the wrong type (named).

    Examples
    --------
    >>> meta = {"general.architecture": "llama", "llama.block_count": 2, "llama.embedding_length": 64,
    ...         "llama.feed_forward_length": 128, "llama.attention.head_count": 4, "llama.attention.head_count_kv": 2,
    ...         "llama.context_length": 256, "llama.attention.layer_norm_rms_epsilon": 1e-5}
    >>> g = plan_from_metadata(meta, {"token_embd.weight": (300, 64)}, Path("m.gguf"))
    >>> g.plan.describe()
    'llama: 2 layers, 4 heads of width 16 (2 key/value heads), d_model 64, feed-forward 128, up to 256 tokens'
    >>> g.permuted["blk.1.attn_k.weight"]
    2
    >>> plan_from_metadata({**meta, "llama.expert_count": 8}, {}, Path("m.gguf"))
    Traceback (most recent call last):
    ...
    attnsym.models.errors.UnsupportedModelError: m.gguf: GGUF key llama.expert_count=8 is not supported (attnsym
    does not read it, and it may change the model)
    """
    arch = read_key(meta, "general.architecture", str, path)
    if arch not in ARCHITECTURES:
        raise UnsupportedModelError(f"{path}: GGUF architecture {arch!r} is not supported; attnsym reads "
                                    f"{', '.join(map(repr, ARCHITECTURES))}")
    build, understood = ARCHITECTURES[arch]
    known = set(understood) | set(HARMLESS_KEYS)
    for key in sorted(meta):
        if key.startswith(arch + ".") and key[len(arch) + 1:] not in known:
            refuse(path, key, meta[key], "attnsym does not read it, and it may change the model")
    if ROPE_FREQS in tensors and (arch not in ROPE_FREQS_ARCHITECTURES or rope_freqs is None):
        raise UnsupportedModelError(f"{path}: the GGUF file holds a {ROPE_FREQS!r} tensor (per-frequency RoPE "
                                    f"divisors), which attnsym reads for {', '.join(ROPE_FREQS_ARCHITECTURES)} files "
                                    "as llama3 scaling")
    raw = build(meta, path, tensors)
    if ROPE_FREQS in tensors:
        raw["rope_scaling"] = _rope_freqs_scaling(raw, rope_freqs, arch, path)
    embed = tensors.get("token_embd.weight")
    vocab = read_size(meta, f"{arch}.vocab_size", path, None)
    if vocab is None:
        if embed is None or len(embed) != 2:
            raise ModelError(f"{path}: the GGUF file has no 2-D 'token_embd.weight' tensor and no {arch}.vocab_size")
        vocab = int(embed[0])
    raw["vocab_size"] = vocab
    pad = meta.get("tokenizer.ggml.padding_token_id")
    if type(pad) is int and 0 <= pad < vocab:
        raw["pad_token_id"] = pad
    plan = read_plan(raw, path)
    layout = Layout((), GGUF_NAMES[plan.model_type], transposed=True,
                    qkv="columns" if plan.model_type in _FUSED else "separate")
    if any(b.norm.offset for b in plan.blocks):  # llama.cpp's converter stores 1 + w gains (Gemma): no offset left
        norm = Norm("rms", plan.final_norm.eps if plan.final_norm else 1e-6)
        plan = replace(plan, blocks=tuple(replace(b, norm=norm, attention=_stored_qk_gains(b.attention))
                                          for b in plan.blocks), final_norm=norm)
    plan = replace(plan, layout=layout)
    permuted = _permuted_qk(plan) if arch in PERMUTED_QK else {}
    recipes = ASSEMBLED.get(plan.model_type, {})
    assembled: dict[str, Callable[..., np.ndarray]] = {template.format(i=i): partial(read, i=i)
                                                       for template, read in recipes.items() for i in range(plan.layers)}
    return GGUFPlan(plan=plan, architecture=arch, permuted=permuted, assembled=assembled)
