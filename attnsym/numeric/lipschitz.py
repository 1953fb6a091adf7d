"""The local Lipschitz constant of a self-attention layer, searched numerically (Kim et al. 2021, §3).

``L(r) = sup_{‖X‖_F ≤ r} ‖J_f(X)‖₂`` for the layer ``f`` of :func:`attnsym.numeric.forward.attention`;
:func:`largest_jacobian_norm` evaluates ``‖J_f(X)‖₂`` at random points of the ball of radius ``r``
(central differences, float64), searches around the best one and keeps the largest: a lower bound
of ``L(r)`` from real inputs.
"""

from __future__ import annotations

import numpy as np

from .._checks import positive_int, positive_real
from .forward import attention

__all__ = ["input_jacobians", "largest_jacobian_norm"]


def input_jacobians(X, W_Q, W_K, W_V, *, step: float = 1e-6) -> np.ndarray:
    """``J[b, p, q] = ∂vec(f(X_b))_q / ∂vec(X_b)_p`` by central differences, for a batch ``X`` of shape (B, n, d).

    >>> import numpy as np
    >>> J = input_jacobians(np.zeros((1, 2, 1)), np.eye(1), np.eye(1), np.eye(1))
    >>> np.round(J[0], 6)  # at X = 0 every weight is 1/2
    array([[0.5, 0.5],
           [0.5, 0.5]])
    """
    X = np.asarray(X, dtype=np.float64)
    step = positive_real("step", step)
    batch, n, d = X.shape
    p = n * d
    E = np.eye(p).reshape(p, n, d)
    h = step * np.maximum(1.0, np.abs(X).max(axis=(1, 2)))[:, None, None, None]  # (B, 1, 1, 1)
    plus = np.asarray(attention((X[:, None] + h * E).reshape(-1, n, d), W_Q, W_K, W_V, return_weights=False))
    minus = np.asarray(attention((X[:, None] - h * E).reshape(-1, n, d), W_Q, W_K, W_V, return_weights=False))
    return (plus - minus).reshape(batch, p, -1) / (2 * h[:, :, :, 0])


def largest_jacobian_norm(rng: np.random.Generator, radius: float, samples: int, W_Q, W_K, W_V, *, n: int,
                          d: int, rounds: int = 4) -> tuple[float, float]:
    """``(max, median)`` of ``‖J_f(X)‖₂``: ``samples`` points uniform in the Frobenius ball of ``radius``, then a search.

    The median is over the uniform points; the max also over ``rounds`` of a random local search
    from the best point so far (``samples`` perturbations of relative size 0.3, 0.1, 0.03, …,
    pulled back into the ball). Every point evaluated lies in the ball, so the max is a lower
    bound of the local Lipschitz constant there.
    """
    radius, samples = positive_real("radius", radius), positive_int("samples", samples)
    n, d = positive_int("n", n), positive_int("d", d)
    Z = rng.standard_normal((samples, n, d))
    Z /= np.linalg.norm(Z, axis=(1, 2), keepdims=True)
    X = radius * Z * rng.random((samples, 1, 1)) ** (1 / (n * d))
    norms = np.linalg.norm(input_jacobians(X, W_Q, W_K, W_V), ord=2, axis=(1, 2))
    median = float(np.median(norms))
    best, best_norm = X[int(np.argmax(norms))], float(norms.max())
    for k in range(rounds):
        step = 0.3 * radius / 3.0**k
        trial = best[None] + step * rng.standard_normal((samples, n, d))
        size = np.linalg.norm(trial, axis=(1, 2), keepdims=True)
        trial = np.where(size > radius, trial * (radius / size), trial)
        trial_norms = np.linalg.norm(input_jacobians(trial, W_Q, W_K, W_V), ord=2, axis=(1, 2))
        if trial_norms.max() > best_norm:
            best, best_norm = trial[int(np.argmax(trial_norms))], float(trial_norms.max())
    return best_norm, median
