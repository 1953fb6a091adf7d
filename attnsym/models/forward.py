r"""Forward passes of the two families on attnsym's numeric backend (NumPy, CuPy or torch arrays).

Shape legend: ``B`` batch, ``n`` tokens, ``d`` width, ``H`` heads, ``d_k = d / H``, ``f`` the
feed-forward width, ``L`` layers.

**Self-attention** (one code path for both families; scores and softmax are
:func:`attnsym.numeric.scores` and :func:`attnsym.numeric.softmax`):

.. math::

    Q = X W_Q + b_Q,\quad K = X W_K + b_K,\quad V = X W_V + b_V,\qquad
    S_h = \frac{Q_h K_h^\top}{\sqrt{d_k}},\quad A_h = \operatorname{softmax}_{\text{row}}(S_h),\qquad
    \operatorname{Attn}(X) = [A_1 V_1 \cdots A_H V_H]\, W_O + b_O

with ``S = -inf`` where a query may not attend to a key (a padding key; a later key in a
decoder), so those weights are exactly 0.

**BERT layer** (post-LayerNorm): :math:`X' = \operatorname{LN}(X + \operatorname{Attn}(X))`,
:math:`X'' = \operatorname{LN}(X' + \phi(X' W_1 + b_1) W_2 + b_2)`; the input is
:math:`\operatorname{LN}(E_{\text{word}} + E_{\text{position}} + E_{\text{type}})`.

**GPT-2 block** (pre-LayerNorm, causal): :math:`X' = X + \operatorname{Attn}(\operatorname{LN}_1 X)`,
:math:`X'' = X' + \phi(\operatorname{LN}_2(X') W_1 + b_1) W_2 + b_2`; the input is
:math:`E_{\text{word}} + E_{\text{position}}`, and ``ln_f`` follows the last block.

``hidden_states`` follow Hugging Face: ``L + 1`` entries, the input of layer 0 first, the
output of the last layer last (for GPT-2 after ``ln_f``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import array_api_compat
import numpy as np

from ..numeric import array_namespace, gelu, gelu_tanh, scores, softmax
from .config import ACTIVATIONS, ModelConfig
from .weights import LayerWeights, Weights

__all__ = ["ForwardOutput", "forward", "gelu_float32", "layer_norm"]


@dataclass(frozen=True)
class ForwardOutput:
    """Everything one forward pass computed, as arrays of the weights' library.

    Attributes
    ----------
    hidden_states : (L + 1, B, n, d) array
    attention : (L, B, H, n, n) array
        Softmax weights; 0 where a query may not attend to a key.
    scores : (L, B, H, n, n) array
        The scaled pre-softmax scores ``S``, ``-inf`` where a query may not attend to a key.
    """

    hidden_states: Any
    attention: Any
    scores: Any


def layer_norm(x, weight, bias, eps: float):
    r"""LayerNorm over the last axis: :math:`\gamma \odot (x - \mu) / \sqrt{\sigma^2 + \varepsilon} + \beta`.

    ``σ²`` is the biased variance (divided by ``d``), as in ``torch.nn.LayerNorm``.

    >>> layer_norm(np.array([[1.0, 3.0]]), np.ones(2), np.zeros(2), 0.0)
    array([[-1.,  1.]])
    """
    xp = array_namespace(x, weight, bias)
    centred = x - xp.mean(x, axis=-1, keepdims=True)  # (..., d)
    var = xp.mean(centred * centred, axis=-1, keepdims=True)  # (..., 1)
    centred *= 1.0 / xp.sqrt(var + eps)  # in place: the forward pass never needs gradients
    centred *= weight
    centred += bias
    return centred


def _linear(xp, x, W, b):
    """``x W + b`` as one 2-D matrix product (a stacked product runs one small BLAS call per batch row)."""
    *lead, d_in = x.shape
    out = xp.matmul(xp.reshape(x, (-1, d_in)), W)  # (B·n, d_in) @ (d_in, d_out)
    out += b
    return xp.reshape(out, (*lead, W.shape[1]))


#: float32 rational approximation of erf on [-4, 4] (the form XLA and Eigen use): erf(x) = x·P(x²)/Q(x²)
_ERF_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
          -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
_ERF_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
          -1.42647390514189e-02)


def gelu_float32(x):
    r"""Exact GELU :math:`x\,\Phi(x)` for float32 NumPy arrays, 4–5 times faster than :func:`attnsym.numeric.gelu`.

    ``scipy.special.erf`` evaluates float32 input in double precision (about 4 ms for the
    ``128 × 1536`` feed-forward activations of MiniLM, a quarter of a forward pass); this uses
    the float32 rational approximation :math:`\operatorname{erf}(z) \approx z P(z^2) / Q(z^2)`
    on :math:`z` clipped to :math:`[-4, 4]` (where erf is 1 to float32 precision), a few
    in-place array operations. Its largest error against double-precision erf is below
    ``5e-7`` (the tests check it on a fine grid and tie this function to
    :func:`attnsym.numeric.gelu`); float64 and other libraries use :func:`attnsym.numeric.gelu`.

    >>> x = np.linspace(-5, 5, 11, dtype=np.float32)
    >>> bool(np.abs(gelu_float32(x) - gelu(x.astype(np.float64))).max() < 2e-6)
    True
    """
    z = np.clip(x * np.float32(1 / math.sqrt(2.0)), -4.0, 4.0)  # (..., f)
    z2 = z * z
    p = np.full_like(z, _ERF_P[0])
    for a in _ERF_P[1:]:
        p *= z2
        p += np.float32(a)
    q = np.full_like(z, _ERF_Q[0])
    for c in _ERF_Q[1:]:
        q *= z2
        q += np.float32(c)
    p *= z
    p /= q  # erf(x / √2)
    p += 1.0
    p *= x
    p *= 0.5
    return p


def _activation(xp, name: str, x):
    kind = ACTIVATIONS[name]
    if kind == "gelu":
        if array_api_compat.is_numpy_array(x) and x.dtype == np.float32:
            return gelu_float32(x)
        return gelu(x)
    if kind == "gelu_tanh":
        return gelu_tanh(x)
    return xp.maximum(x, xp.zeros_like(x))


def _split(xp, M, heads: int):
    """(B, n, H·d_k) -> (B, H, n, d_k)."""
    B, n, width = M.shape
    return xp.permute_dims(xp.reshape(M, (B, n, heads, width // heads)), (0, 2, 1, 3))


def self_attention(x, lw: LayerWeights, heads: int, scale: float, allowed):
    """Multi-head self-attention of one layer: output ``(B, n, d)``, scores and weights ``(B, H, n, n)``."""
    xp = array_namespace(x)
    Q = _split(xp, _linear(xp, x, lw.W_Q, lw.b_Q), heads)  # (B, H, n, d_k)
    K = _split(xp, _linear(xp, x, lw.W_K, lw.b_K), heads)  # (B, H, n, d_k)
    V = _split(xp, _linear(xp, x, lw.W_V, lw.b_V), heads)  # (B, H, n, d_k)
    S = scores(Q, K, scale, allowed)  # (B, H, n, n), -inf where not allowed
    A = softmax(S)  # (B, H, n, n)
    Z = xp.matmul(A, V)  # (B, H, n, d_k)
    B, _, n, _ = Z.shape
    Z = xp.reshape(xp.permute_dims(Z, (0, 2, 1, 3)), (B, n, heads * (Z.shape[-1])))  # (B, n, d)
    return _linear(xp, Z, lw.W_O, lw.b_O), S, A


def allowed_pattern(xp, attention_mask, n: int, causal: bool, device=None):
    """The (B, 1, n, n) bool pattern ``True`` = query ``i`` may attend to key ``j``, or None when all may.

    ``attention_mask`` is ``(B, n)`` with 1 for real tokens and 0 for padding (Hugging Face's
    convention); padding keys are masked, and in a decoder every later key too.
    """
    allowed = None
    if attention_mask is not None:
        keys = xp.asarray(attention_mask, device=device) != 0  # (B, n)
        if not bool(xp.all(keys)):
            allowed = keys[:, None, None, :]  # (B, 1, 1, n)
    if causal:
        i = xp.reshape(xp.arange(n, device=device), (n, 1))
        j = xp.reshape(xp.arange(n, device=device), (1, n))
        lower = (i >= j)[None, None]  # (1, 1, n, n)
        allowed = lower if allowed is None else xp.logical_and(allowed, lower)
    return allowed


def embed(config: ModelConfig, weights: Weights, input_ids, token_type_ids=None):
    """The input of layer 0, ``(B, n, d)``, for integer ids ``(B, n)``."""
    xp = array_namespace(weights.word)
    ids = xp.asarray(input_ids, device=_device(weights.word))
    B, n = ids.shape
    x = xp.reshape(xp.take(weights.word, xp.reshape(ids, (-1,)), axis=0), (B, n, config.width))  # (B, n, d)
    x = x + weights.position[:n]  # absolute, learned, from position 0
    if config.model_type == "bert":
        if token_type_ids is None:
            x = x + weights.token_type[0]
        else:
            types = xp.reshape(xp.asarray(token_type_ids, device=_device(weights.word)), (-1,))
            x = x + xp.reshape(xp.take(weights.token_type, types, axis=0), (B, n, config.width))
        x = layer_norm(x, weights.embed_ln_weight, weights.embed_ln_bias, config.eps)
    return x


def _device(x):
    return array_api_compat.device(x)


def forward(config: ModelConfig, weights: Weights, input_ids, attention_mask=None, token_type_ids=None) -> ForwardOutput:
    """Run the model on ``(B, n)`` token ids; see the module docstring for the equations.

    Parameters
    ----------
    config : ModelConfig
    weights : Weights
        NumPy, CuPy or torch arrays (:meth:`Weights.to`); the computation runs in their library.
    input_ids : (B, n) integer array
    attention_mask : (B, n) array of 0/1, optional
        1 for real tokens, 0 for padding (padding keys get weight exactly 0).
    token_type_ids : (B, n) integer array, optional
        BERT segment ids (all 0 by default).

    Returns
    -------
    ForwardOutput
    """
    xp = array_namespace(weights.word)
    x = embed(config, weights, input_ids, token_type_ids)  # (B, n, d)
    n = x.shape[1]
    allowed = allowed_pattern(xp, attention_mask, n, config.causal, device=_device(x))
    hidden, probs, logits = [x], [], []
    for index, lw in enumerate(weights.layers):
        scale = (1.0 / math.sqrt(config.d_k) if config.scale_scores else 1.0) / (index + 1 if config.scale_by_layer else 1)
        if config.model_type == "bert":
            a, S, A = self_attention(x, lw, config.heads, scale, allowed)
            x = layer_norm(x + a, lw.ln1_weight, lw.ln1_bias, config.eps)
            h = _activation(xp, config.activation, _linear(xp, x, lw.W_1, lw.b_1))  # (B, n, f)
            x = layer_norm(x + _linear(xp, h, lw.W_2, lw.b_2), lw.ln2_weight, lw.ln2_bias, config.eps)
        else:
            a, S, A = self_attention(layer_norm(x, lw.ln1_weight, lw.ln1_bias, config.eps), lw, config.heads, scale, allowed)
            x = x + a
            h = _activation(xp, config.activation, _linear(xp, layer_norm(x, lw.ln2_weight, lw.ln2_bias, config.eps),
                                                           lw.W_1, lw.b_1))  # (B, n, f)
            x = x + _linear(xp, h, lw.W_2, lw.b_2)
            if index == config.layers - 1:
                x = layer_norm(x, weights.final_ln_weight, weights.final_ln_bias, config.eps)
        hidden.append(x)
        probs.append(A)
        logits.append(S)
    return ForwardOutput(hidden_states=xp.stack(hidden), attention=xp.stack(probs), scores=xp.stack(logits))
