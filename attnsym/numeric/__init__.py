"""Numeric backend: attention on NumPy, CuPy or PyTorch arrays, written once (array API).

An implementation independent of SymPy, used as the reference the symbolic results are
validated against (:func:`attnsym.validate`) and as the engine for long sequences.

* :func:`attention` — forward pass, ``(Y, A)`` or ``Y``; memory-lean blockwise path for long
  sequences when the weights are not asked for.
* :func:`attention_vjp` — analytic backward pass (gradients for ``X`` and every parameter).
* twins of the symbolic layer: :func:`scores`, :func:`softmax`, :func:`softmax_jacobian`,
  :func:`sinusoidal_positions`, :func:`gelu`, :func:`gelu_tanh`.
* :func:`array_namespace` — which library runs a call (see :mod:`attnsym.numeric.backend`).
* :func:`causal_decode` — token-by-token causal decoding with or without a K/V cache
  (:mod:`attnsym.numeric.kvcache`); :func:`conv1d` — the convolution twin used to contrast
  locality (:mod:`attnsym.numeric.conv`).
"""

from .backend import array_namespace, cupy_usable
from .backward import attention_vjp
from .conv import conv1d, shift_tokens
from .forward import (
    AUTO_BLOCKWISE_N,
    BLOCK_ELEMENTS,
    DEFAULT_BLOCK_SIZE,
    attention,
    gelu,
    gelu_tanh,
    scores,
    sinusoidal_positions,
    softmax,
    softmax_jacobian,
)
from .kvcache import DecodeResult, causal_decode

__all__ = [
    "AUTO_BLOCKWISE_N",
    "BLOCK_ELEMENTS",
    "DEFAULT_BLOCK_SIZE",
    "DecodeResult",
    "array_namespace",
    "attention",
    "attention_vjp",
    "causal_decode",
    "conv1d",
    "cupy_usable",
    "gelu",
    "gelu_tanh",
    "scores",
    "shift_tokens",
    "sinusoidal_positions",
    "softmax",
    "softmax_jacobian",
]
