"""Rank collapse in deep attention stacks (Dong, Cordonnier & Loukas 2021), measured.

A stack of self-attention layers without skip connections drives its output towards a rank-1
matrix ``1 xᵀ`` (every token the same vector). The distance is measured as in the paper, by the
residual ``res(X) = X − 1 xᵀ`` in the composite norm ``‖M‖_{1,∞} = √(‖M‖₁ ‖M‖_∞)``
(``‖·‖₁`` the largest absolute column sum, ``‖·‖_∞`` the largest absolute row sum).

The paper takes the ``x`` that minimises the residual; :func:`residual` uses the column-wise
median, which minimises the ``‖·‖₁`` factor exactly, so the value reported is an upper bound on
the minimal residual (and 0 exactly when ``X`` has rank-1 form ``1 xᵀ``).

>>> import numpy as np
>>> X = np.ones((4, 1)) @ np.array([[1.0, -2.0]])
>>> residual_norm(X)
0.0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SpecError
from .forward import attention

__all__ = ["ARCHITECTURES", "CollapseRun", "collapse_run", "composite_norm", "residual", "residual_norm"]

#: the stacks compared: pure attention, attention with a skip connection, attention followed by an MLP (no skip)
ARCHITECTURES = ("attention", "attention+skip", "attention+mlp")


def composite_norm(M) -> float:
    """``√(‖M‖₁ ‖M‖_∞)``: geometric mean of the largest absolute column sum and the largest absolute row sum."""
    A = np.abs(np.asarray(M, dtype=float))
    return float(np.sqrt(A.sum(axis=0).max() * A.sum(axis=1).max()))


def residual(X) -> np.ndarray:
    """``X − 1 xᵀ`` with ``x`` the column-wise median of the rows of ``X`` (shape of ``X``)."""
    X = np.asarray(X, dtype=float)
    return X - np.median(X, axis=0, keepdims=True)


def residual_norm(X, *, relative: bool = False) -> float:
    """``‖res(X)‖_{1,∞}``, or divided by ``‖X‖_{1,∞}`` with ``relative=True`` (scale-free)."""
    r = composite_norm(residual(X))
    if not relative:
        return r
    total = composite_norm(X)
    return r / total if total > 0 else 0.0


@dataclass(frozen=True)
class CollapseRun:
    """Relative residual after each layer (index 0: the input) of one stack, and its per-layer ``β``.

    ``beta[l]`` is ``‖W_Q W_Kᵀ‖₁ ‖W_V‖_{1,∞}`` of layer ``l`` (the weight term of the paper's bound).
    """

    architecture: str
    relative_residual: np.ndarray
    beta: np.ndarray


def collapse_run(architecture: str, X, depth: int, rng: np.random.Generator, *, weight_scale: float = 1.0) -> CollapseRun:
    """Push ``X`` (n, d) through ``depth`` fresh single-head layers of ``architecture``; record the residuals.

    Weights are drawn ``N(0, weight_scale²/d)`` (LeCun for scale 1), new for every layer; the
    MLP is ``relu(Z W₁) W₂`` with hidden width ``4d``. Scores are scaled by ``1/√d``.
    """
    if architecture not in ARCHITECTURES:
        raise SpecError(f"architecture must be one of {ARCHITECTURES} (got {architecture!r})")
    X = np.asarray(X, dtype=float)
    d = X.shape[1]
    res, betas = [residual_norm(X, relative=True)], []
    for _ in range(depth):
        W_Q, W_K, W_V = (rng.standard_normal((d, d)) * weight_scale / np.sqrt(d) for _ in range(3))
        betas.append(np.abs(W_Q @ W_K.T).sum(axis=0).max() * composite_norm(W_V))
        Z = np.asarray(attention(X, W_Q, W_K, W_V, return_weights=False))  # (n, d)
        if architecture == "attention+skip":
            Z = X + Z
        elif architecture == "attention+mlp":
            W1 = rng.standard_normal((d, 4 * d)) * np.sqrt(2.0 / d)  # He: keeps the scale through relu
            W2 = rng.standard_normal((4 * d, d)) / np.sqrt(4 * d)
            Z = np.maximum(Z @ W1, 0.0) @ W2
        X = Z
        res.append(residual_norm(X, relative=True))
    return CollapseRun(architecture, np.array(res), np.array(betas))
