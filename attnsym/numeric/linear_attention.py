"""Causal linear attention (Katharopoulos et al. 2020) in float64: parallel and recurrent, the twins of
:mod:`attnsym.symbolic.linear_attention`, with the paper's feature map ``φ(x) = elu(x) + 1``.
"""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ._inputs import float64_arrays

__all__ = ["causal_linear_attention", "elu_feature_map", "recurrent_linear_attention"]


def _forms_inputs(Phi_Q, Phi_K, V):
    Phi_Q, Phi_K, V = float64_arrays({"Phi_Q": Phi_Q, "Phi_K": Phi_K, "V": V}, {"Phi_Q": (2,), "Phi_K": (2,), "V": (2,)})
    if Phi_Q.shape != Phi_K.shape or V.shape[0] != Phi_Q.shape[0]:
        raise ShapeError(f"Phi_Q, Phi_K must be (n, r) and V (n, d_v) (got {Phi_Q.shape}, {Phi_K.shape}, {V.shape})")
    return Phi_Q, Phi_K, V


def elu_feature_map(x) -> np.ndarray:
    """``elu(x) + 1``: ``x + 1`` for ``x > 0``, ``eˣ`` otherwise (always positive).

    >>> elu_feature_map(np.array([-1.0, 0.0, 2.0])).round(4)
    array([0.3679, 1.    , 3.    ])
    """
    x = np.asarray(x, dtype=np.float64)
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def causal_linear_attention(Phi_Q, Phi_K, V) -> np.ndarray:
    """The parallel form ``diag(W1)⁻¹ W V``, ``W = tril(Φ_Q Φ_Kᵀ)``.

    >>> causal_linear_attention(np.ones((2, 1)), np.array([[1.0], [3.0]]), np.array([[4.0], [0.0]]))
    array([[4.],
           [1.]])
    """
    Phi_Q, Phi_K, V = _forms_inputs(Phi_Q, Phi_K, V)
    W = np.tril(Phi_Q @ Phi_K.T)
    return (W @ V) / W.sum(axis=1, keepdims=True)


def recurrent_linear_attention(Phi_Q, Phi_K, V) -> np.ndarray:
    """The recurrence ``S_i = S_{i−1} + ψ_iᵀv_i``, ``z_i = z_{i−1} + ψ_i``, ``y_i = φ_i S_i / φ_i·z_i``.

    >>> recurrent_linear_attention(np.ones((2, 1)), np.array([[1.0], [3.0]]), np.array([[4.0], [0.0]]))
    array([[4.],
           [1.]])
    """
    Phi_Q, Phi_K, V = _forms_inputs(Phi_Q, Phi_K, V)
    S = np.zeros((Phi_K.shape[1], V.shape[1]))
    z = np.zeros(Phi_K.shape[1])
    out = np.empty((Phi_Q.shape[0], V.shape[1]))
    for i in range(Phi_Q.shape[0]):
        S += np.outer(Phi_K[i], V[i])
        z += Phi_K[i]
        out[i] = Phi_Q[i] @ S / (Phi_Q[i] @ z)
    return out
