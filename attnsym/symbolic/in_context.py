r"""One linear self-attention layer that is one gradient-descent step (von Oswald et al. 2023, Prop. 1).

Tokens are columns :math:`e_j = (x_j, y_j)` with :math:`x_j \in \mathbb R^{d_x}`, :math:`y_j \in \mathbb R^{d_y}`.
A linear self-attention layer (no softmax) over the ``N`` context tokens updates a token ``e``:

.. math:: e \leftarrow e + P W_V \sum_{i=1}^{N} e_i\, e_i^\top W_K^\top W_Q\, e

* :func:`gd_weights` — the paper's weights for learning rate ``η`` from ``W_0``:
  :math:`W_K = W_Q = \begin{pmatrix} I & 0\\ 0 & 0\end{pmatrix}`,
  :math:`W_V = \begin{pmatrix} 0 & 0\\ W_0 & -I\end{pmatrix}`, :math:`P = \tfrac{\eta}{N} I`;
* :func:`linear_self_attention` — the update above, for SymPy matrices or NumPy arrays alike.

With these weights the target slot of every token becomes :math:`y - \Delta W x` where
:math:`\Delta W = -\eta \nabla_W \tfrac1{2N}\sum_i \|W x_i - y_i\|^2 \big|_{W_0}` is one GD step.

>>> import numpy as np
>>> C = np.array([[1.0, 2.0], [2.0, 4.0]])          # two context tokens (x, y) with y = 2x, as columns
>>> W_K, W_Q, W_V, P = gd_weights(1, 1, eta=0.5, N=2, W0=np.zeros((1, 1)))
>>> float(linear_self_attention(C, np.array([[3.0], [0.0]]), W_K, W_Q, W_V, P)[1, 0])  # −ΔW x_q, ΔW = 0.5·(2 + 8)/2
-7.5
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from .._checks import finite_real, positive_int
from .._exact import exact, exact_matrix
from ..errors import ShapeError

__all__ = ["gd_weights", "linear_self_attention"]


def gd_weights(d_x: int, d_y: int, *, eta: Any, N: int, W0: Any) -> tuple[Any, Any, Any, Any]:
    """``(W_K, W_Q, W_V, P)`` of von Oswald et al., Prop. 1: a SymPy ``W0`` gives SymPy matrices, a NumPy one arrays.

    Raises
    ------
    SpecError
        ``d_x``, ``d_y`` or ``N`` not a positive integer, ``eta`` not a number (or SymPy expression).
    ShapeError
        ``W0`` not a ``(d_y, d_x)`` matrix of numbers.
    """
    d_x, d_y, N = positive_int("d_x", d_x), positive_int("d_y", d_y), positive_int("N", N)
    if isinstance(W0, sp.MatrixBase):
        W0 = exact_matrix("W0", W0)
        zeros, eye, block = sp.zeros, sp.eye, lambda rows: sp.Matrix(sp.BlockMatrix(rows))
        eta = exact("eta", eta)  # a number or a SymPy symbol; a string is refused, never parsed
    else:
        try:
            W0 = np.asarray(W0, dtype=np.float64)
        except (TypeError, ValueError):
            raise ShapeError(f"W0 must be a ({d_y}, {d_x}) matrix of numbers (got {type(W0).__name__})") from None
        eta = finite_real("eta", eta)
        zeros, eye, block = (lambda r, c: np.zeros((r, c))), np.eye, np.block
    if tuple(W0.shape) != (d_y, d_x):
        raise ShapeError(f"W0 must have shape (d_y, d_x) = ({d_y}, {d_x}) (got {tuple(W0.shape)})")
    D = d_x + d_y
    W_KQ = block([[eye(d_x), zeros(d_x, d_y)], [zeros(d_y, d_x), zeros(d_y, d_y)]])
    W_V = block([[zeros(d_x, d_x), zeros(d_x, d_y)], [W0, -eye(d_y)]])
    P = eye(D) * eta / N
    return W_KQ, W_KQ, W_V, P


def linear_self_attention(context: Any, tokens: Any, W_K: Any, W_Q: Any, W_V: Any, P: Any) -> Any:
    r"""``tokens + P W_V C Cᵀ W_Kᵀ W_Q tokens``: keys and values from the context ``C`` (``D × N`` columns).

    ``tokens`` (``D × M`` columns) are the queries: the context itself, a test token ``(x_q, 0)``, or both.
    :math:`\sum_i (W_V e_i)(W_K e_i)^\top (W_Q e) = W_V C (W_K C)^\top W_Q e`.
    """
    return tokens + P @ (W_V @ context) @ (W_K @ context).T @ (W_Q @ tokens)
