r"""The entropy of an attention row, in one place: from its weights or from its logits.

:func:`row_entropy` takes weights (rows summing to 1, or all-zero masked rows) and returns
:math:`H_i = -\sum_j A_{ij} \ln A_{ij}` in nats with :math:`0 \ln 0 = 0`;
:func:`softmax_entropy` takes logits and returns the entropy of their softmax, computed stably
as :math:`\log\sum_j e^{z_j} - \sum_j a_j z_j` (no logarithm of a tiny weight). Every row entropy
of attnsym (the routing metrics of :mod:`attnsym.graphs`, the head classes of
:mod:`attnsym.heads`, the studies and claims) is one of these two; the exact twin is
:func:`attnsym.symbolic.softmax_limits.entropy`.

>>> row_entropy(np.array([[1.0, 0.0], [0.5, 0.5]])).round(6).tolist()
[0.0, 0.693147]
>>> bool(np.isclose(softmax_entropy(np.zeros(4)), np.log(4)))
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["row_entropy", "softmax_entropy"]


def row_entropy(A: np.ndarray) -> np.ndarray:
    r"""Entropy :math:`-\sum_j A_{ij}\ln A_{ij}` of every row of weights ``A``, in nats (``0 ln 0 = 0``).

    Parameters
    ----------
    A : numpy.ndarray
        Weights, shape ``(..., n)``; an all-zero (fully masked) row has entropy 0.

    Returns
    -------
    numpy.ndarray
        Shape ``A.shape[:-1]``.

    Examples
    --------
    >>> row_entropy(np.full((2, 4), 0.25)).round(6).tolist()
    [1.386294, 1.386294]
    """
    M = np.asarray(A, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(M > 0, -M * np.log(np.where(M > 0, M, 1.0)), 0.0)
    return terms.sum(axis=-1)


def softmax_entropy(z: np.ndarray) -> np.ndarray:
    """Entropy (nats) of ``softmax(z)`` along the last axis, computed stably from the logits.

    ``H = log Σ e^{z} − Σ a z`` (no ``log`` of a tiny weight); the same number as
    ``row_entropy(softmax(z))`` where the weights do not underflow.

    >>> round(float(softmax_entropy(np.zeros(4))), 12) == round(float(np.log(4)), 12)
    True
    """
    z = np.asarray(z, dtype=float)
    m = z.max(axis=-1, keepdims=True)
    e = np.exp(z - m)
    total = e.sum(axis=-1, keepdims=True)
    a = e / total  # softmax(z), from the shifted exponentials already at hand (a test ties it to numeric.softmax)
    return (np.log(total) + m)[..., 0] - (a * z).sum(axis=-1)
