"""Reading a GGUF file's metadata: typed key readers and the LLaMA-layout keys every decoder shares.

The per-architecture translators (:mod:`attnsym.models.gguf_plan` and the modules it registers)
read llama.cpp's keys through these functions, so a missing key, a key of the wrong type and a
key attnsym refuses are reported the same way for every architecture: one
:class:`~attnsym.models.ModelError` naming the key, or an
:class:`~attnsym.models.UnsupportedModelError` naming the key and its value.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from .._positions import base_frequencies
from ..errors import SpecError
from ..spec import RopeScaling
from .errors import ModelError, UnsupportedModelError
from .keys import MAX_SIZE

__all__ = ["DECODER_NAMES", "HARMLESS_KEYS", "LM_HEAD", "MISSING", "ROPE_FREQS", "ROPE_SCALING_KEYS", "YARN_KEYS",
           "layer_norm_eps", "llama3_scaling", "llama_like", "read_key", "read_number", "read_size", "refuse",
           "rope_scaling"]


#: GGUF tensor names of the LLaMA-style roles (``{i}`` the block)
DECODER_NAMES: dict[str, str] = {
    "embed": "token_embd.weight", "final_norm": "output_norm.weight", "lm_head": "output.weight",
    "attn_norm": "blk.{i}.attn_norm.weight", "mlp_norm": "blk.{i}.ffn_norm.weight",
    "W_Q": "blk.{i}.attn_q.weight", "b_Q": "blk.{i}.attn_q.bias",
    "W_K": "blk.{i}.attn_k.weight", "b_K": "blk.{i}.attn_k.bias",
    "W_V": "blk.{i}.attn_v.weight", "b_V": "blk.{i}.attn_v.bias",
    "W_O": "blk.{i}.attn_output.weight", "b_O": "blk.{i}.attn_output.bias",
    "g_Q": "blk.{i}.attn_q_norm.weight", "g_K": "blk.{i}.attn_k_norm.weight",
    "W_gate": "blk.{i}.ffn_gate.weight", "W_up": "blk.{i}.ffn_up.weight", "b_up": "blk.{i}.ffn_up.bias",
    "W_down": "blk.{i}.ffn_down.weight", "b_down": "blk.{i}.ffn_down.bias",
    "W_QKV": "blk.{i}.attn_qkv.weight", "b_QKV": "blk.{i}.attn_qkv.bias",
    "position": "position_embd.weight", "token_type": "token_types.weight", "embed_norm": "token_embd_norm.weight",
}

#: the LM head (an untied model's ``output.weight``): the plan reads it as ties are decided by its presence
LM_HEAD = DECODER_NAMES["lm_head"]


# ---------------------------------------------------------------------------------------------- reading keys
MISSING = object()


def read_key(meta: dict[str, Any], key: str, kind: type | tuple[type, ...], path: Path, default: Any = MISSING) -> Any:
    """``meta[key]``, checked to be of ``kind`` (a bool is no number); missing -> ``default`` or a ModelError naming it."""
    if key not in meta:
        if default is MISSING:
            raise ModelError(f"{path}: the GGUF metadata has no {key!r}, which this architecture needs")
        return default
    value = meta[key]
    if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ModelError(f"{path}: GGUF key {key!r} must be a {name} (got {shown})")
    return value


def read_size(meta: dict[str, Any], key: str, path: Path, default: Any = MISSING) -> Any:
    """``meta[key]`` as a size: an integer from 1 to ``MAX_SIZE`` (or ``default`` when missing and given).

    >>> read_size({"llama.block_count": 30}, "llama.block_count", Path("m.gguf"))
    30
    >>> read_size({"llama.block_count": 0}, "llama.block_count", Path("m.gguf"))
    Traceback (most recent call last):
    ...
    attnsym.models.errors.ModelError: m.gguf: GGUF key 'llama.block_count' must be a positive integer at most ...
    """
    value = read_key(meta, key, int, path, default)
    if value is not default and not 1 <= value <= MAX_SIZE:
        raise ModelError(f"{path}: GGUF key {key!r} must be a positive integer at most {MAX_SIZE} (got {value})")
    return value


def read_number(meta: dict[str, Any], key: str, path: Path, default: Any = MISSING) -> Any:
    """``meta[key]`` as an int or a float (a bool is refused), or ``default`` when missing and given."""
    return read_key(meta, key, (int, float), path, default)


def refuse(path: Path, key: str, value: Any, why: str) -> None:
    """Raise :class:`~attnsym.models.UnsupportedModelError` naming the GGUF key, its value and why it is refused."""
    raise UnsupportedModelError(f"{path}: GGUF key {key}={value!r} is not supported ({why})")


#: keys of every architecture that describe the file, not the maths (read elsewhere or irrelevant)
HARMLESS_KEYS = ("context_length", "vocab_size", "rope.scaling.finetuned", "pooling_type")


#: GGUF YaRN key (under ``<arch>.rope.scaling.``) -> the ``rope_scaling`` key of ``config.json`` it came from: the
#: inverse of llama.cpp's converter (``original_max_position_embeddings`` -> ``original_context_length``,
#: ``attention_factor`` -> ``yarn_attn_factor`` …)
YARN_KEYS: dict[str, str] = {"original_context_length": "original_max_position_embeddings",
                             "yarn_beta_fast": "beta_fast", "yarn_beta_slow": "beta_slow",
                             "yarn_attn_factor": "attention_factor"}

#: the RoPE scaling keys :func:`rope_scaling` reads (an architecture lists them among its understood keys);
#: ``rope.scaling.yarn_ext_factor`` is read only to check it is 1, the value transformers' YaRN implies
ROPE_SCALING_KEYS: tuple[str, ...] = ("rope.scaling.type", "rope.scaling.factor", "rope.scaling.yarn_ext_factor",
                                      *(f"rope.scaling.{k}" for k in YARN_KEYS))


def rope_scaling(meta: dict[str, Any], a: str, path: Path) -> dict[str, Any] | None:
    """The ``rope_scaling`` dict of ``config.json`` from ``<a>.rope.scaling.*``: None, linear or YaRN.

    YaRN's keys map back as llama.cpp's converter wrote them (:data:`YARN_KEYS`) and are read as
    transformers reads a config's ``yarn`` dict (missing betas: 32 and 1; no attention factor:
    ``0.1 ln factor + 1``); ``original_context_length`` is required. ``yarn_attn_factor`` is the
    checkpoint's ``attention_factor``, used alone as transformers does (ggml's own YaRN multiplies
    it by ``0.1 ln factor + 1`` again, so the two runtimes differ for a file that has it). A YaRN key on a file of another
    type, a ``yarn_ext_factor`` other than 1 (llama.cpp's extrapolation mix, which transformers does
    not have), ``yarn_log_multiplier`` and any other type (LongRoPE's lives in tensors, llama3's in
    ``rope_freqs``: :func:`llama3_scaling`) are refused by name.

    >>> meta = {"qwen2.rope.scaling.type": "yarn", "qwen2.rope.scaling.factor": 4.0,
    ...         "qwen2.rope.scaling.original_context_length": 32768}
    >>> rope_scaling(meta, "qwen2", Path("m.gguf"))
    {'rope_type': 'yarn', 'factor': 4.0, 'original_max_position_embeddings': 32768}
    >>> rope_scaling({**meta, "qwen2.rope.scaling.type": "linear"}, "qwen2", Path("m.gguf"))
    Traceback (most recent call last):
    ...
    attnsym.models.errors.UnsupportedModelError: m.gguf: GGUF key qwen2.rope.scaling.original_context_length=32768 is not
    supported (only a 'yarn' scaling reads it)
    """
    kind = read_key(meta, f"{a}.rope.scaling.type", str, path, "none")
    if kind not in ("none", "linear", "yarn"):
        refuse(path, f"{a}.rope.scaling.type", kind, "attnsym implements GGUF rope scaling 'none', 'linear' and 'yarn'")
    if kind != "yarn":
        for key in ("yarn_ext_factor", *YARN_KEYS):
            if f"{a}.rope.scaling.{key}" in meta:
                refuse(path, f"{a}.rope.scaling.{key}", meta[f"{a}.rope.scaling.{key}"], "only a 'yarn' scaling reads it")
    if kind == "none":
        return None
    factor = float(read_number(meta, f"{a}.rope.scaling.factor", path))
    if kind == "linear":
        return {"rope_type": "linear", "factor": factor}
    ext = read_number(meta, f"{a}.rope.scaling.yarn_ext_factor", path, 1.0)
    if ext != 1:
        refuse(path, f"{a}.rope.scaling.yarn_ext_factor", ext, "transformers' YaRN mixes the ramp fully (1)")
    out: dict[str, Any] = {"rope_type": "yarn", "factor": factor,
                           "original_max_position_embeddings": read_size(meta, f"{a}.rope.scaling.original_context_length",
                                                                         path)}
    for key, name in YARN_KEYS.items():
        if key != "original_context_length" and f"{a}.rope.scaling.{key}" in meta:
            out[name] = float(read_number(meta, f"{a}.rope.scaling.{key}", path))
    return out


#: the tensor of per-frequency RoPE divisors llama.cpp's converter writes for a llama3 ``rope_scaling``
ROPE_FREQS = "rope_freqs.weight"


def llama3_scaling(factors: Any, base: float, rotary: int, path: Path) -> dict[str, Any] | None:
    """The llama3 ``rope_scaling`` dict whose rule gives the divisors ``factors`` of a ``rope_freqs`` tensor.

    llama.cpp's converter turns a llama3 ``rope_scaling`` into one divisor per rotation plane
    (``θ'_i = θ_i / f_i``): ``1`` where ``λ_i = 2π/θ_i < L / high``, ``factor`` where
    ``λ_i > L / low``, ``1 / ((1 − s_i) / factor + s_i)`` between, ``s_i = (L/λ_i − low) / (high − low)``.
    The rule is recovered from them: ``factor`` is the largest divisor, and ``s_i`` is linear in
    ``1/λ_i`` over the smoothed planes, which gives ``L / (high − low)`` and ``low / (high − low)``.
    Only those two ratios act (every ``(k L, k low, k high)`` gives the same frequencies), so
    ``low_freq_factor`` is read as 1, the value of every released llama3 checkpoint. ``L`` is rounded
    to an integer, ``factor`` and ``high`` to six significant digits (the divisors are float32),
    and the recovered rule must give back every divisor within 1e-5, or the tensor is refused: attnsym's RoPE has no
    rule of arbitrary per-plane divisors but LongRoPE's, which would misname the rule. All divisors
    1 is no scaling (None).

    >>> theta = [10000.0 ** (-i / 8) for i in range(8)]               # 16 rotary dims, base 10 000
    >>> rule = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 8.0,
    ...         "original_max_position_embeddings": 256}
    >>> from attnsym.spec import RopeScaling
    >>> divisors = [t / RopeScaling.from_mapping(rule).inverse_frequencies(10000.0, 16, 1)[i]
    ...             for i, t in enumerate(theta)]
    >>> llama3_scaling(divisors, 10000.0, 16, Path("m.gguf")) == rule
    True
    """
    f = np.asarray(factors, dtype=np.float64).reshape(-1)
    if len(f) != rotary // 2:
        raise ModelError(f"{path}: tensor {ROPE_FREQS!r} must hold one divisor per rotation plane ({rotary // 2}) "
                         f"(got {len(f)})")
    if not (np.isfinite(f).all() and (f >= 1).all()):
        refuse(path, ROPE_FREQS, f.tolist()[:4], "llama3 divisors are finite and at least 1")
    if (f == 1).all():
        return None
    theta = np.asarray(base_frequencies(base, rotary))
    largest = f.max()
    medium = (f != 1) & (f != largest)
    why = "its divisors are not those of a llama3 rope_scaling with low_freq_factor 1"
    if medium.sum() < 2:
        refuse(path, ROPE_FREQS, f.tolist()[:4], "fewer than two smoothed planes: the llama3 rule cannot be recovered")
    factor = float(f"{largest:.6g}")  # a float32 divisor: the config's value, to six digits (checked below)
    s = (1 / f[medium] - 1 / factor) / (1 - 1 / factor)
    slope, intercept = np.polyfit(theta[medium] / (2 * math.pi), s, 1)  # s = L/(h−1) · 1/λ − 1/(h−1)
    if not intercept < 0:
        refuse(path, ROPE_FREQS, f.tolist()[:4], why)
    high = float(f"{1 - 1 / intercept:.6g}")
    rule = {"rope_type": "llama3", "factor": factor, "low_freq_factor": 1.0, "high_freq_factor": high,
            "original_max_position_embeddings": round(float(-slope / intercept))}
    try:
        scaling = RopeScaling.from_mapping(rule)
        again = None if scaling is None else scaling.inverse_frequencies(base, rotary, 1)
    except SpecError:
        again = None
    if again is None or not np.allclose(theta / np.asarray(again), f, rtol=1e-5, atol=0):
        refuse(path, ROPE_FREQS, f.tolist()[:4], why)
    return rule


def llama_like(meta: dict[str, Any], a: str, path: Path, tensors: dict[str, tuple[int, ...]],
               partial_rotary: bool = False) -> dict[str, Any]:
    """``llama``, ``qwen2``, ``qwen3``, ``gemma2``, ``phi3``: the LLaMA-layout keys (``partial_rotary``: a
    ``rope.dimension_count`` below the head width is ``partial_rotary_factor``, as Phi-3 reads it)."""
    heads = read_size(meta, f"{a}.attention.head_count", path)
    width = read_size(meta, f"{a}.embedding_length", path)
    head_dim = read_size(meta, f"{a}.attention.key_length", path, None)
    if head_dim is None:
        head_dim = width // heads if width % heads == 0 else None
    value_dim = read_size(meta, f"{a}.attention.value_length", path, head_dim)
    if value_dim != head_dim:
        refuse(path, f"{a}.attention.value_length", value_dim, f"attnsym runs value heads as wide as key heads "
               f"({head_dim})")
    rotary = read_size(meta, f"{a}.rope.dimension_count", path, head_dim)
    if rotary != head_dim and not (partial_rotary and head_dim and rotary < head_dim):
        refuse(path, f"{a}.rope.dimension_count", rotary, f"attnsym runs {a} with rotary on the whole head "
               f"({head_dim} dimensions)")
    raw: dict[str, Any] = {
        "hidden_size": width, "num_attention_heads": heads,
        "num_key_value_heads": read_size(meta, f"{a}.attention.head_count_kv", path, heads),
        "num_hidden_layers": read_size(meta, f"{a}.block_count", path),
        "intermediate_size": read_size(meta, f"{a}.feed_forward_length", path),
        "max_position_embeddings": read_size(meta, f"{a}.context_length", path),
        "rms_norm_eps": float(read_number(meta, f"{a}.attention.layer_norm_rms_epsilon", path)),
        "rope_theta": float(read_number(meta, f"{a}.rope.freq_base", path, 10000.0)),
        "rope_scaling": rope_scaling(meta, a, path),
        "attention_bias": "blk.0.attn_q.bias" in tensors,
        "tie_word_embeddings": LM_HEAD not in tensors,
    }
    if head_dim is not None:
        raw["head_dim"] = head_dim
    if rotary != head_dim and head_dim:
        raw["partial_rotary_factor"] = rotary / head_dim
    return raw


def layer_norm_eps(meta: dict[str, Any], a: str, path: Path) -> float:
    """The LayerNorm epsilon of architecture ``a`` (``<a>.attention.layer_norm_epsilon``, required)."""
    return float(read_number(meta, f"{a}.attention.layer_norm_epsilon", path))
