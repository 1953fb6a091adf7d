"""Scalable softmax (SSMax, Nakanishi 2025): ``softmax(s·log n · z)`` over the last axis of ``n`` logits.

The numeric twin of :func:`attnsym.symbolic.length_scaling.scaled_top_weight`.
"""

from __future__ import annotations

import math

import numpy as np

from .._checks import positive_real
from .forward import softmax

__all__ = ["scalable_softmax"]


def scalable_softmax(z, s: float) -> np.ndarray:
    """``softmax(s · log(n) · z)`` along the last axis, ``n`` its length.

    Examples
    --------
    >>> w = scalable_softmax(np.array([1.0, 0.0, 0.0, 0.0]), 1.0)
    >>> round(float(w[0]), 6)  # 1/(1 + 3·4^(−1))
    0.571429
    """
    s = positive_real("s", s)
    z = np.asarray(z, dtype=np.float64)
    return np.asarray(softmax(s * math.log(z.shape[-1]) * z))
