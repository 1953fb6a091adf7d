"""FAVOR+ positive random features (Choromanski et al. 2021) in float64: the twin of :mod:`attnsym.symbolic.performer`.

``φ(x) = exp(Ωx − ‖x‖²/2)/√m`` for ``m`` rows ``ω_i`` of ``Ω``; ``φ(x)ᵀφ(y)`` estimates
``exp(xᵀy)`` without bias, and the Performer's row-normalised output
``φ(q)ᵀ Σ_j φ(k_j) v_jᵀ / φ(q)ᵀ Σ_j φ(k_j)`` is a ratio of such estimates.
"""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ._inputs import float64_arrays

__all__ = ["favor_attention", "kernel_estimate", "positive_random_features"]


def positive_random_features(X, omega) -> np.ndarray:
    """``exp(X Ωᵀ − ‖x‖²/2)/√m``: X (..., n, d), Ω (..., m, d) → (..., n, m).

    >>> positive_random_features(np.array([[1.0, 0.0]]), np.array([[1.0, 0.0]])).round(4)
    array([[1.6487]])
    """
    X, omega = float64_arrays({"X": X, "omega": omega}, {"X": (2, 3), "omega": (2, 3)})
    if X.shape[-1] != omega.shape[-1]:
        raise ShapeError(f"X and omega must share their last dimension (got {X.shape}, {omega.shape})")
    half_norm = 0.5 * np.sum(X * X, axis=-1, keepdims=True)  # (..., n, 1)
    return np.exp(X @ np.swapaxes(omega, -1, -2) - half_norm) / np.sqrt(omega.shape[-2])


def kernel_estimate(x, y, omega) -> np.ndarray:
    """``φ(x)ᵀφ(y)`` for vectors ``x``, ``y`` (d,) and features Ω (..., m, d) → (...,).

    >>> round(float(kernel_estimate(np.zeros(2), np.zeros(2), np.ones((3, 2)))), 12)
    1.0
    """
    fx = positive_random_features(np.asarray(x, dtype=np.float64)[None, :], omega)[..., 0, :]
    fy = positive_random_features(np.asarray(y, dtype=np.float64)[None, :], omega)[..., 0, :]
    return np.sum(fx * fy, axis=-1)


def favor_attention(Q, K, V, omega) -> np.ndarray:
    """The row-normalised FAVOR+ output ``φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1)``: Q (n, d), K (n_k, d), V (n_k, d_v) → (..., n, d_v).

    >>> favor_attention(np.zeros((1, 2)), np.zeros((2, 2)), np.array([[1.0], [3.0]]), np.ones((4, 2)))
    array([[2.]])
    """
    fq, fk = positive_random_features(Q, omega), positive_random_features(K, omega)
    numerator = fq @ (np.swapaxes(fk, -1, -2) @ np.asarray(V, dtype=np.float64))
    return numerator / (fq @ np.sum(fk, axis=-2)[..., None])
