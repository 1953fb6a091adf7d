"""Formulas transcribed from the papers, written apart from attnsym's own implementation, for claims to compare with.

Each function here is a direct transcription of a published formula or reference code, written
without calling the spec or the numeric layer it is compared with, so that a change there (a
slope rule, a scale) shows up as a disagreement instead of being checked against itself.

* :func:`alibi_paper_slopes`: ``get_slopes`` of Press, Smith & Lewis (2022), the ALiBi
  reference code (a geometric sequence starting at ``2^(−8/P)``; for ``H`` not a power of two
  the ``P`` slopes of the largest power of two ``P < H`` followed by every other slope of ``2P``).
* :func:`multihead_attention_formula`: Vaswani et al. (2017), eq. (1) and §3.2.2:
  ``Concat(head_1 … head_h) W_O`` with ``head_i = softmax(Q_i K_iᵀ/√d_k) V_i``, ``d_k`` read
  from the shapes of the weights.
"""

from __future__ import annotations

import math

import numpy as np

from .._checks import positive_int
from ..errors import ShapeError

__all__ = ["alibi_paper_slopes", "multihead_attention_formula"]


def alibi_paper_slopes(heads: int) -> list[float]:
    """The ALiBi slopes of ``heads`` heads as the paper's code computes them (float, head 0 first).

    Examples
    --------
    >>> [round(math.log2(m), 6) for m in alibi_paper_slopes(6)]
    [-2.0, -4.0, -6.0, -8.0, -1.0, -3.0]
    >>> alibi_paper_slopes(8)[0], alibi_paper_slopes(8)[-1]
    (0.5, 0.00390625)
    """
    heads = positive_int("heads", heads)

    def power_of_two(n: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(heads).is_integer():
        return power_of_two(heads)
    closest = 2 ** math.floor(math.log2(heads))
    return power_of_two(closest) + alibi_paper_slopes(2 * closest)[0::2][: heads - closest]


def multihead_attention_formula(X, W_Q, W_K, W_V, W_O, *, heads: int, causal: bool = False) -> np.ndarray:
    """``MultiHead(X) = Concat(head_1 … head_h) W_O``, ``head_i = softmax(X W_Q^i (X W_K^i)ᵀ / √d_k) X W_V^i``.

    ``W_Q, W_K, W_V`` are (d_model, heads·d_k), split into ``heads`` blocks of columns in order;
    ``W_O`` is (heads·d_v, d_model). Plain float64 NumPy, max-shifted softmax.

    Examples
    --------
    >>> X = np.eye(2)
    >>> W = np.eye(2)
    >>> np.round(multihead_attention_formula(X, W, W, W, W, heads=1), 4)
    array([[0.6698, 0.3302],
           [0.3302, 0.6698]])
    """
    heads = positive_int("heads", heads)
    X = np.asarray(X, dtype=np.float64)  # (n, d_model)
    W_Q, W_K, W_V, W_O = (np.asarray(w, dtype=np.float64) for w in (W_Q, W_K, W_V, W_O))
    if W_Q.shape[1] % heads or W_V.shape[1] % heads:
        raise ShapeError(f"heads must divide the projection widths (got W_Q {W_Q.shape}, W_V {W_V.shape}, "
                         f"heads={heads})")
    d_k, d_v = W_Q.shape[1] // heads, W_V.shape[1] // heads
    n = X.shape[0]
    outputs = []
    for i in range(heads):
        Q = X @ W_Q[:, i * d_k:(i + 1) * d_k]  # (n, d_k)
        K = X @ W_K[:, i * d_k:(i + 1) * d_k]  # (n, d_k)
        V = X @ W_V[:, i * d_v:(i + 1) * d_v]  # (n, d_v)
        S = Q @ K.T / math.sqrt(d_k)  # (n, n)
        if causal:
            S = np.where(np.tril(np.ones((n, n), dtype=bool)), S, -np.inf)
        E = np.exp(S - S.max(axis=1, keepdims=True))
        outputs.append(E / E.sum(axis=1, keepdims=True) @ V)
    return np.hstack(outputs) @ W_O  # (n, d_model)
