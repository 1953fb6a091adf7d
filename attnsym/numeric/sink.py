"""Softmax₁ (Miller 2023) in float64/float32, stable for large logits: ``e^{x_i} / (1 + Σ_j e^{x_j})``.

The twin of :func:`attnsym.symbolic.sink.softmax_one`. It shifts by ``m = max(0, max_j x_j)``:
``e^{x_i − m} / (e^{−m} + Σ_j e^{x_j − m})``, so no exponential overflows.
"""

from __future__ import annotations

import numpy as np

__all__ = ["softmax_one"]


def softmax_one(x, axis: int = -1) -> np.ndarray:
    """Softmax₁ along ``axis`` (weights sum to ``1 − sink weight < 1``).

    Examples
    --------
    >>> softmax_one(np.array([0.0, 0.0]))
    array([0.33333333, 0.33333333])
    >>> float(softmax_one(np.array([1000.0, 1000.0])).sum())
    1.0
    """
    x = np.asarray(x)
    m = np.maximum(np.max(x, axis=axis, keepdims=True), 0)
    e = np.exp(x - m)
    return e / (np.exp(-m) + e.sum(axis=axis, keepdims=True))
