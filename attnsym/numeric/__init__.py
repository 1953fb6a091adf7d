"""Numeric backend: attention on NumPy, CuPy or PyTorch arrays, written once (array API).

An implementation independent of SymPy, used as the reference the symbolic results are
validated against (:func:`attnsym.validate`) and as the engine for long sequences.

* :func:`attention` — forward pass, ``(Y, A)`` or ``Y``; memory-lean blockwise path for long
  sequences when the weights are not asked for.
* :func:`head_attention` — one layer's attention from projected per-head ``Q``, ``K``, ``V`` and an
  ``allowed`` pattern (QK-norm, RoPE, scores, ALiBi, soft-cap, mask, softmax, grouped-query ``A V``):
  the entry point of :mod:`attnsym.models`.
* :func:`attention_vjp` — analytic backward pass (gradients for ``X`` and every parameter).
* twins of the symbolic layer, in modules named as there: :func:`scores`, :func:`softmax`
  (``symbolic.scores``, ``symbolic.row_softmax``); :func:`softmax_jacobian`
  (:mod:`~attnsym.numeric.jacobians`); :func:`sinusoidal_positions`, :func:`rope_frequencies`,
  :func:`rope_rotation`, :func:`apply_rope` (its cos/sin made once per pass by :func:`rope_tables`),
  :func:`alibi_slopes`, :func:`alibi_bias` (:mod:`~attnsym.numeric.positions`); :func:`gelu`, :func:`gelu_tanh`, :func:`silu`
  (:mod:`~attnsym.numeric.activations`).
* the pieces of a real model's block (:mod:`attnsym.models`): :func:`layer_norm`, :func:`rms_norm`
  (:mod:`~attnsym.numeric.norms`; the one RMSNorm of the block norms and of QK-norm) and
  :func:`gelu_float32`, the exact GELU of float32 NumPy arrays; :func:`gelu_tanh_unchecked`, the tanh
  approximation as a forward pass computes it.
* :func:`random_inputs` — random ``X``, weights, biases and ``G`` for a spec, the one sampling rule
  (:mod:`~attnsym.numeric.sampling`).
* :func:`array_namespace` — which library runs a call (see :mod:`attnsym.numeric.backend`).
* :func:`causal_decode` — token-by-token causal decoding with or without a K/V cache
  (:mod:`attnsym.numeric.kvcache`); :func:`conv1d` — the convolution twin used to contrast
  locality (:mod:`attnsym.numeric.conv`).
"""

from .activations import gelu, gelu_float32, gelu_tanh, gelu_tanh_unchecked, silu
from .backend import array_namespace, cupy_usable
from .backward import attention_vjp
from .conv import conv1d, shift_tokens
from .forward import AUTO_BLOCKWISE_N, BLOCK_ELEMENTS, DEFAULT_BLOCK_SIZE, attention, head_attention, scores, softmax
from .jacobians import softmax_jacobian
from .kvcache import DecodeResult, causal_decode
from .norms import layer_norm, rms_norm
from .positions import (
    alibi_bias,
    alibi_slopes,
    apply_rope,
    rope_frequencies,
    rope_rotation,
    rope_tables,
    sinusoidal_positions,
    sinusoidal_shift,
)
from .sampling import random_inputs

__all__ = [
    "AUTO_BLOCKWISE_N",
    "BLOCK_ELEMENTS",
    "DEFAULT_BLOCK_SIZE",
    "DecodeResult",
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "array_namespace",
    "attention",
    "attention_vjp",
    "causal_decode",
    "conv1d",
    "cupy_usable",
    "gelu",
    "gelu_float32",
    "gelu_tanh",
    "gelu_tanh_unchecked",
    "head_attention",
    "layer_norm",
    "random_inputs",
    "rms_norm",
    "rope_frequencies",
    "rope_rotation",
    "rope_tables",
    "scores",
    "shift_tokens",
    "silu",
    "sinusoidal_positions",
    "sinusoidal_shift",
    "softmax",
    "softmax_jacobian",
]
