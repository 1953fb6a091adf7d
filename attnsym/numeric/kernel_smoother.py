"""Attention as a kernel smoother (Tsai et al. 2019) in float64: the twin of :mod:`attnsym.symbolic.kernel_smoother`.

``K_ij = k(x_i, x_j) = exp(c · x_i W_Q (x_j W_K)ᵀ)`` and ``A_ij = K_ij / Σ_l K_il``; the weights
are formed from ``K`` scaled by ``exp(−max_l log K_il)`` per row, so no exponential overflows.
"""

from __future__ import annotations

import numpy as np

from .._checks import finite_real
from ..errors import ShapeError
from ._inputs import float64_arrays

__all__ = ["kernel_matrix", "kernel_smoother_weights"]


def _log_kernel(X, W_Q, W_K, scale: float) -> np.ndarray:
    X, W_Q, W_K = float64_arrays({"X": X, "W_Q": W_Q, "W_K": W_K}, {"X": (2,), "W_Q": (2,), "W_K": (2,)})
    if W_Q.shape != W_K.shape or W_Q.shape[0] != X.shape[1]:
        raise ShapeError(f"W_Q and W_K must both be (d, d_k) with d = X.shape[1] = {X.shape[1]} "
                         f"(got {W_Q.shape}, {W_K.shape})")
    return finite_real("scale", scale) * (X @ W_Q) @ (X @ W_K).T


def kernel_matrix(X, W_Q, W_K, scale: float) -> np.ndarray:
    """``K_ij = exp(c · x_i W_Q (x_j W_K)ᵀ)``.

    >>> kernel_matrix(np.eye(2), np.eye(2), np.eye(2), 1.0).round(4)
    array([[2.7183, 1.    ],
           [1.    , 2.7183]])
    """
    return np.exp(_log_kernel(X, W_Q, W_K, scale))


def kernel_smoother_weights(X, W_Q, W_K, scale: float) -> np.ndarray:
    """``K_ij / Σ_l K_il``, computed stably.

    >>> kernel_smoother_weights(np.zeros((2, 2)), np.eye(2), np.eye(2), 1.0)
    array([[0.5, 0.5],
           [0.5, 0.5]])
    """
    log_k = _log_kernel(X, W_Q, W_K, scale)
    e = np.exp(log_k - log_k.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
