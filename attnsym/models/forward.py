r"""Forward passes of the two families on attnsym's numeric backend (NumPy, CuPy or torch arrays).

Shape legend: ``B`` batch, ``n`` tokens, ``d`` width, ``H`` heads, ``d_k = d / H``, ``f`` the
feed-forward width, ``L`` layers.

**Self-attention** (one code path for both families; the softmax is the stable one of
:func:`attnsym.numeric.softmax`, its kernels ``shifted_exp`` and ``safe_divide``):

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

**How it runs.** Each layer is two steps written once on the array API: the *row step*
(everything row-wise: the end of the previous layer — output projection, residuals, LayerNorms,
feed-forward — and this layer's ``[Q | K | V] = X W_QKV + b_QKV``, one product with the packed
weight of :class:`~attnsym.models.LayerWeights`), and the *attention step* (scores, softmax
and ``A V`` per head, heads taken as strided views of the packed ``Q | K | V``, never copied).
They write straight into the output arrays. Each step is one slice on the calling thread, the
matrix products parallelised by BLAS (or by CuPy and PyTorch inside each operation); ``threads=k``
cuts NumPy's steps into ``k`` slices run side by side instead (:mod:`attnsym.models._parallel`).
For float32 NumPy arrays of at least :data:`FUSED_MIN_TOKENS` tokens with Numba installed
(``attnsym[fast]``) the element-wise chains
between the products — bias and GELU, bias, residual and LayerNorm, the softmax — run as the
compiled one-pass kernels of :mod:`attnsym.models._fused`, the same equations (the tests tie
the two paths to each other and to PyTorch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import array_api_compat
import numpy as np

from ..errors import ShapeError
from ..numeric import array_namespace, gelu, gelu_tanh
from ..numeric._inputs import dtype_name
from ..numeric.layer import safe_divide, shifted_exp
from . import _fused
from ._erf import ERF_P as _ERF_P
from ._erf import ERF_Q as _ERF_Q
from ._parallel import blas_limited, plan
from ._parallel import run as parallel_run
from .config import ACTIVATIONS, ModelConfig
from .weights import Weights

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


def _affine(xp, x, W, b):
    """``x W + b`` for 2-D ``x`` ``(rows, d_in)``: one matrix product, the bias added in place."""
    out = xp.matmul(x, W)  # (rows, d_in) @ (d_in, d_out)
    out += b
    return out


#: elements of one block of :func:`gelu_float32` (256 KiB of float32 per temporary: they stay in a core's L2 cache)
GELU_BLOCK = 1 << 16


def gelu_float32(x):
    r"""Exact GELU :math:`x\,\Phi(x)` for float32 NumPy arrays, several times faster than :func:`attnsym.numeric.gelu`.

    ``scipy.special.erf`` evaluates float32 input in double precision (about 4 ms for the
    ``128 × 1536`` feed-forward activations of MiniLM, a quarter of a forward pass); this uses
    the float32 rational approximation :math:`\operatorname{erf}(z) \approx z P(z^2) / Q(z^2)`
    on :math:`z` clipped to :math:`[-4, 4]` (where erf is 1 to float32 precision), a few
    in-place array operations on blocks of :data:`GELU_BLOCK` elements (so their temporaries stay
    in cache). Its largest error against double-precision erf is below ``5e-7`` (the tests check
    it on a fine grid and tie this function to :func:`attnsym.numeric.gelu`); float64 and other
    libraries use :func:`attnsym.numeric.gelu`.

    >>> x = np.linspace(-5, 5, 11, dtype=np.float32)
    >>> bool(np.abs(gelu_float32(x) - gelu(x.astype(np.float64))).max() < 2e-6)
    True
    """
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    flat, out_flat = x.reshape(-1), out.reshape(-1)
    size = max(1, min(GELU_BLOCK, flat.size))
    z, z2, q = (np.empty(size, np.float32) for _ in range(3))
    for start in range(0, flat.size, size):
        xb, p = flat[start:start + size], out_flat[start:start + size]  # (k,)
        k = xb.size
        zb, z2b, qb = z[:k], z2[:k], q[:k]
        np.multiply(xb, np.float32(1 / math.sqrt(2.0)), out=zb)
        np.clip(zb, -4.0, 4.0, out=zb)
        np.multiply(zb, zb, out=z2b)
        np.multiply(z2b, np.float32(_ERF_P[0]), out=p)
        p += np.float32(_ERF_P[1])
        for a in _ERF_P[2:]:
            p *= z2b
            p += np.float32(a)
        np.multiply(z2b, np.float32(_ERF_Q[0]), out=qb)
        qb += np.float32(_ERF_Q[1])
        for c in _ERF_Q[2:]:
            qb *= z2b
            qb += np.float32(c)
        p *= zb
        p /= qb  # erf(x / √2)
        p += 1.0
        p *= xb
        p *= 0.5
    return out


def _activation(xp, name: str, x):
    kind = ACTIVATIONS[name]
    if kind == "gelu":
        if array_api_compat.is_numpy_array(x) and x.dtype == np.float32:
            return gelu_float32(x)
        return gelu(x)
    if kind == "gelu_tanh":
        return gelu_tanh(x)
    return xp.maximum(x, xp.zeros_like(x))


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
        x = _normalise(x, weights.embed_ln_weight, weights.embed_ln_bias, config.eps, fused=_fusable(x))
    return x


def _normalise(x, weight, bias, eps: float, *, fused: bool):
    """:func:`layer_norm` of ``x`` into a new array: by the compiled kernel when ``fused``, else by array operations."""
    if not fused:
        return layer_norm(x, weight, bias, eps)
    out = np.empty_like(x)
    _fused.residual_layernorm(x.reshape(-1, x.shape[-1]), None, None, weight, bias, eps, out.reshape(-1, x.shape[-1]))
    return out


#: a float32 NumPy pass over at least this many tokens (all texts together) takes the compiled kernels
FUSED_MIN_TOKENS = 64


def _fusable(x) -> bool:
    """Whether the pass over ``x`` ``(B, n, d)`` takes the compiled kernels of :mod:`attnsym.models._fused`.

    float32 NumPy arrays, Numba present, and at least :data:`FUSED_MIN_TOKENS` tokens: loading
    the kernels costs a process about half a second once (Numba's import and its cache), which a
    short text would not win back — a sentence of ten tokens takes about 5 ms either way.
    """
    return (isinstance(x, np.ndarray) and x.dtype == np.float32 and x.shape[0] * x.shape[1] >= FUSED_MIN_TOKENS
            and _fused.available())


def _device(x):
    return array_api_compat.device(x)


def _matmul_into(xp, out, a, b) -> None:
    """``out[...] = a @ b`` (NumPy writes the product in place, without a temporary)."""
    if isinstance(out, np.ndarray):
        np.matmul(a, b, out=out)
    else:
        out[...] = xp.matmul(a, b)


class _Pass:
    """One forward pass: the output arrays it writes into and its two steps per layer (module docstring).

    ``hidden`` is ``(L + 1, B·n, d)``: rows are the batch's tokens, flattened; ``qkv`` ``(B·n, 3d)``
    and ``z`` ``(B·n, d)`` hold the current layer's packed projections and merged heads.
    """

    def __init__(self, config: ModelConfig, weights: Weights, x, allowed) -> None:
        self.c, self.w, self.allowed = config, weights, allowed
        self.xp = xp = array_namespace(x)
        B, n, d = x.shape
        H, L, dev = config.heads, config.layers, _device(x)
        self.hidden = xp.empty((L + 1, B * n, d), dtype=x.dtype, device=dev)
        self.attention = xp.empty((L, B, H, n, n), dtype=x.dtype, device=dev)
        self.scores = xp.empty((L, B, H, n, n), dtype=x.dtype, device=dev)
        self.qkv = xp.empty((B * n, 3 * d), dtype=x.dtype, device=dev)
        self.z = xp.empty((B * n, d), dtype=x.dtype, device=dev)
        self.hidden[0, ...] = xp.reshape(x, (B * n, d))
        self.fused = _fusable(x)
        # heads as strided views: (3, B, H, n, d_k) of the packed rows, (B, H, n, d_k) of the merged output
        self.qkv_heads = xp.permute_dims(xp.reshape(self.qkv, (B, n, 3, H, config.d_k)), (2, 0, 3, 1, 4))
        self.z_heads = xp.permute_dims(xp.reshape(self.z, (B, n, H, config.d_k)), (0, 2, 1, 3))

    def _ln(self, x, weight, bias):
        return _normalise(x, weight, bias, self.c.eps, fused=self.fused)

    def rows(self, layer: int, r0: int, r1: int) -> None:
        """Rows ``r0:r1``: finish layer ``layer - 1`` (output ``hidden[layer]``), then project ``Q | K | V`` of ``layer``."""
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported once, by outputs()
            self._rows(layer, r0, r1)

    def _rows(self, layer: int, r0: int, r1: int) -> None:
        if layer > 0:
            (self._finish_fused if self.fused else self._finish)(layer, r0, r1)
        if layer < self.c.layers:
            lw = self.w.layers[layer]
            x = self.hidden[layer, r0:r1]
            if self.c.model_type != "bert":
                x = self._ln(x, lw.ln1_weight, lw.ln1_bias)
            _matmul_into(self.xp, self.qkv[r0:r1], x, lw.W_QKV)  # (r, 3d), one product for Q, K and V
            self.qkv[r0:r1] += lw.b_QKV

    def _finish(self, layer: int, r0: int, r1: int) -> None:
        """Rows ``r0:r1`` of layer ``layer - 1`` after attention: output projection, residuals, LayerNorms, feed-forward."""
        xp, c = self.xp, self.c
        lw = self.w.layers[layer - 1]
        x = self.hidden[layer - 1, r0:r1]  # (r, d), the layer's input
        a = _affine(xp, self.z[r0:r1], lw.W_O, lw.b_O)  # (r, d), attention output
        a += x
        if c.model_type == "bert":  # post-LayerNorm
            y = self._ln(a, lw.ln1_weight, lw.ln1_bias)
            h = _activation(xp, c.activation, _affine(xp, y, lw.W_1, lw.b_1))  # (r, f)
            out = _affine(xp, h, lw.W_2, lw.b_2)
            out += y
            out = self._ln(out, lw.ln2_weight, lw.ln2_bias)
        else:  # pre-LayerNorm; ln_f after the last block
            h = _activation(xp, c.activation, _affine(xp, self._ln(a, lw.ln2_weight, lw.ln2_bias), lw.W_1, lw.b_1))
            out = _affine(xp, h, lw.W_2, lw.b_2)
            out += a
            if layer == c.layers:
                out = self._ln(out, self.w.final_ln_weight, self.w.final_ln_bias)
        self.hidden[layer, r0:r1] = out

    def _finish_fused(self, layer: int, r0: int, r1: int) -> None:
        """:meth:`_finish` with the compiled kernels: the same equations, each element-wise chain one pass."""
        c, eps = self.c, self.c.eps
        lw = self.w.layers[layer - 1]
        x = self.hidden[layer - 1, r0:r1]  # (r, d), the layer's input
        a = np.matmul(self.z[r0:r1], lw.W_O)  # (r, d), attention output before its bias
        h_in = np.empty_like(a) if c.model_type != "bert" else a
        # BERT: a ← LN₁(a + b_O + x) in place; GPT-2: a ← a + b_O + x (the residual stream), h_in ← LN₂(a)
        ln_w, ln_b = (lw.ln1_weight, lw.ln1_bias) if c.model_type == "bert" else (lw.ln2_weight, lw.ln2_bias)
        _fused.residual_layernorm(a, lw.b_O, x, ln_w, ln_b, eps, h_in)
        h = np.matmul(h_in, lw.W_1)  # (r, f)
        if ACTIVATIONS[c.activation] == "gelu":
            _fused.bias_gelu(h, lw.b_1)
        else:
            h += lw.b_1
            h = _activation(np, c.activation, h)
        out = np.matmul(h, lw.W_2)
        target = self.hidden[layer, r0:r1]
        if c.model_type == "bert":  # LN₂(out + b₂ + y), y = a
            _fused.residual_layernorm(out, lw.b_2, a, lw.ln2_weight, lw.ln2_bias, eps, target)
        elif layer == c.layers:  # ln_f after the last block
            _fused.residual_layernorm(out, lw.b_2, a, self.w.final_ln_weight, self.w.final_ln_bias, eps, target)
        else:
            np.add(out, lw.b_2, out=out)
            np.add(out, a, out=target)

    def heads(self, layer: int, b0: int, b1: int, h0: int, h1: int, block: int | None = None) -> None:
        """Texts ``b0:b1``, heads ``h0:h1`` of ``layer``: ``S = c Q Kᵀ`` (masked ``-inf``), ``A = softmax(S)``, ``Z = A V``.

        ``block`` heads at a time (all by default), so that NumPy's passes over ``S`` stay in cache.
        """
        block = block or h1 - h0
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported once, by outputs()
            for g0 in range(h0, h1, block):
                self._heads(layer, b0, b1, g0, min(g0 + block, h1))

    def _heads(self, layer: int, b0: int, b1: int, h0: int, h1: int) -> None:
        xp, c = self.xp, self.c
        scale = (1.0 / math.sqrt(c.d_k) if c.scale_scores else 1.0) / (layer + 1 if c.scale_by_layer else 1)
        Q, K, V = (self.qkv_heads[k, b0:b1, h0:h1] for k in range(3))  # (b, h, n, d_k) views
        S = self.scores[layer, b0:b1, h0:h1]  # (b, h, n, n), written in place
        _matmul_into(xp, S, Q * scale, xp.matrix_transpose(K))
        if self.allowed is not None:
            allowed = self.allowed if self.allowed.shape[0] == 1 else self.allowed[b0:b1]
            S[...] = xp.where(allowed, S, -xp.inf)
        A = self.attention[layer, b0:b1, h0:h1]
        if self.fused:
            _fused.softmax_rows(S, A)
        else:
            A[...] = S
            P, total, _ = shifted_exp(xp, A)  # in place: exp(S - rowmax), the row sums
            A = safe_divide(xp, P, total, inplace=True)  # rows sum to 1; a row with no allowed key stays 0
        _matmul_into(xp, self.z_heads[b0:b1, h0:h1], A, V)  # (b, h, n, d_k) into the merged (B·n, d) rows

    def outputs(self) -> ForwardOutput:
        """The outputs, after checking that the finite weights gave finite results (else :class:`ShapeError`)."""
        xp = self.xp
        L, B, _, n, _ = self.attention.shape
        where = None
        scores_ok = xp.isfinite(self.scores)  # (L, B, H, n, n); -inf only where a key is not allowed
        if self.allowed is not None:
            scores_ok = xp.logical_or(scores_ok, xp.logical_not(self.allowed)[None])
        # in the order computed: hidden[0], scores[0], hidden[1], scores[1], ...; name the first that is not finite
        if not (bool(xp.all(scores_ok)) and bool(xp.all(xp.isfinite(self.hidden)))):
            for k in range(L + 1):
                if not bool(xp.all(xp.isfinite(self.hidden[k]))):
                    where = "the embeddings" if k == 0 else f"layer {k - 1}"
                    break
                if k < L and not bool(xp.all(scores_ok[k])):
                    where = f"the scores of layer {k}"
                    break
        if where is not None:
            raise ShapeError(f"the forward pass overflows {dtype_name(self.hidden)} in {where} for these finite "
                             "weights; load the model with dtype='float64'")
        hidden = xp.reshape(self.hidden, (L + 1, B, n, self.hidden.shape[-1]))
        return ForwardOutput(hidden_states=hidden, attention=self.attention, scores=self.scores)


def forward(config: ModelConfig, weights: Weights, input_ids, attention_mask=None, token_type_ids=None, *,
            threads: int | None = None) -> ForwardOutput:
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
    threads : int, optional
        NumPy only: how many slices each step is cut into and run side by side, BLAS at one
        thread (at most one slice per :data:`~attnsym.models._parallel.MIN_ROWS_PER_THREAD`
        rows). By default one slice, BLAS parallelising each product over its threads (so
        ``threadpoolctl.threadpool_limits(1)`` runs the pass on one core).

    Returns
    -------
    ForwardOutput

    Raises
    ------
    ShapeError
        The computation overflowed the dtype (a score or a hidden state is not finite).

    Examples
    --------
    >>> m = at.models.packaged_model()
    >>> out = forward(m.config, m.weights, np.array([[101, 1045, 2066, 102]]))
    >>> out.hidden_states.shape, out.attention.shape
    ((7, 1, 4, 384), (6, 1, 12, 4, 4))
    >>> bool(np.allclose(out.attention.sum(-1), 1.0))
    True
    """
    xp = array_namespace(weights.word)
    x = embed(config, weights, input_ids, token_type_ids)  # (B, n, d)
    B, n, _ = x.shape
    allowed = allowed_pattern(xp, attention_mask, n, config.causal, device=_device(x))
    run = _Pass(config, weights, x, allowed)
    p = plan(B, n, config.heads, numpy=isinstance(x, np.ndarray), threads=threads)
    with blas_limited(p):
        for layer in range(config.layers + 1):
            parallel_run(run.rows, [(layer, *s) for s in p.rows])
            if layer < config.layers:
                parallel_run(run.heads, [(layer, *s, p.head_block) for s in p.heads])
    return run.outputs()
