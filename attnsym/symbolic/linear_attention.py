r"""Causal linear attention and its recurrent form (Katharopoulos et al. 2020, §3.2 and §3.4), exactly.

With feature rows ``φ_i = φ(q_i)``, ``ψ_j = φ(k_j)`` (any feature map with positive values) the
causal output is

.. math::

    y_i = \frac{\sum_{j \le i} (\varphi_i \cdot \psi_j)\, v_j}{\sum_{j \le i} \varphi_i \cdot \psi_j}
        = \frac{\varphi_i S_i}{\varphi_i z_i},\qquad S_i = S_{i-1} + \psi_i^\top v_i,\quad z_i = z_{i-1} + \psi_i^\top,

the second form an RNN whose state ``(S_i, z_i)`` has a fixed size.

* :func:`causal_linear_attention` — the parallel form, ``diag(W1)⁻¹ W V`` with ``W = (Φ Ψᵀ) ⊙ causal mask``;
* :func:`recurrent_linear_attention` — the recurrence, one token at a time.
"""

from __future__ import annotations

import sympy as sp

from .._exact import exact_matrix
from ..errors import ShapeError

__all__ = ["causal_linear_attention", "recurrent_linear_attention"]


def _inputs(Phi_Q, Phi_K, V):
    Phi_Q, Phi_K, V = exact_matrix("Phi_Q", Phi_Q), exact_matrix("Phi_K", Phi_K), exact_matrix("V", V)
    if Phi_Q.shape != Phi_K.shape or V.shape[0] != Phi_Q.shape[0]:
        raise ShapeError(f"Phi_Q, Phi_K must be (n, r) and V (n, d_v) (got {Phi_Q.shape}, {Phi_K.shape}, {V.shape})")
    return Phi_Q, Phi_K, V


def causal_linear_attention(Phi_Q, Phi_K, V) -> sp.Matrix:
    """``diag(W1)⁻¹ W V`` with ``W_ij = φ_i·ψ_j`` for ``j ≤ i``, else 0.

    >>> causal_linear_attention([[1], [1]], [[1], [3]], [[4], [0]])
    Matrix([
    [4],
    [1]])
    """
    Phi_Q, Phi_K, V = _inputs(Phi_Q, Phi_K, V)
    n = Phi_Q.shape[0]
    G = Phi_Q * Phi_K.T
    W = sp.Matrix(n, n, lambda i, j: G[i, j] if j <= i else 0)
    out = W * V
    return sp.Matrix(n, V.shape[1], lambda i, c: out[i, c] / sum(W[i, :]))


def recurrent_linear_attention(Phi_Q, Phi_K, V) -> sp.Matrix:
    """``y_i = φ_i S_i / φ_i z_i`` with ``S_i = S_{i−1} + ψ_iᵀ v_i``, ``z_i = z_{i−1} + ψ_iᵀ`` (``S_0 = 0``, ``z_0 = 0``).

    >>> recurrent_linear_attention([[1], [1]], [[1], [3]], [[4], [0]])
    Matrix([
    [4],
    [1]])
    """
    Phi_Q, Phi_K, V = _inputs(Phi_Q, Phi_K, V)
    n, r = Phi_Q.shape
    S, z = sp.zeros(r, V.shape[1]), sp.zeros(r, 1)
    rows = []
    for i in range(n):
        S = S + Phi_K[i, :].T * V[i, :]
        z = z + Phi_K[i, :].T
        rows.append((Phi_Q[i, :] * S) / (Phi_Q[i, :] * z)[0, 0])
    return sp.Matrix.vstack(*rows)
