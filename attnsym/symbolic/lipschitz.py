r"""Kim, Papamakarios & Mnih (2021), Theorem 3.1: dot-product self-attention is not Lipschitz, an exact witness.

For ``f(X) = softmax(c X W_Q W_Kᵀ Xᵀ) X W_V`` (rows are tokens) take two tokens, the first
``x_1 = 0`` and the second ``x_2 = t u``. Row 1 of the scores is ``c x_1 A x_jᵀ = 0`` (``A = W_Q W_Kᵀ``),
so its weights are ``1/2, 1/2``; moving ``x_1`` by ``dx`` changes the score of key 2 by
``c dx A x_2ᵀ`` and that of key 1 by ``c dx (A + Aᵀ) x_1ᵀ = 0``, and ``dP_12 = P_12(1 − P_12) dS_12``.
Hence, with ``J[i, j] = ∂f_{1,j}/∂x_{1,i}``,

.. math::

    J = \tfrac12 W_V + \tfrac{t^2}{4}\, c\, (A u^\top)(u W_V),

a quadratic in ``t`` whose leading matrix is non-zero when ``A uᵀ ≠ 0`` and ``u W_V ≠ 0`` (such a
``u`` exists whenever ``A ≠ 0`` and ``W_V ≠ 0``: two proper subspaces do not cover the space).
A Lipschitz constant bounds every Jacobian's norm, and ``|J_{ij}| → ∞``: there is none.

* :func:`witness_jacobian` — ``J`` differentiated from attnsym's symbolic layer
  (:func:`attnsym.symbolic.matrices.attention`) at ``x_1 = 0, x_2 = t u``;
* :func:`kim_witness_block` — the closed form above, written from the derivation, not from the layer.
"""

from __future__ import annotations

import sympy as sp

from .._exact import exact, exact_matrix
from ..errors import ShapeError, SpecError
from ..spec import AttentionSpec
from .matrices import attention

__all__ = ["kim_witness_block", "witness_jacobian"]


def witness_jacobian(d: int, t, direction=None, weights=None) -> sp.Matrix:
    """``∂Y_1/∂x_1`` (a ``d × d`` matrix, entry ``[i, j] = ∂Y_{1,j}/∂X_{1,i}``) of the two-token layer at ``x_1 = 0, x_2 = t u``.

    The layer is attnsym's symbolic layer for ``AttentionSpec(n=2, d_model=d)`` (scale
    ``1/√d``). ``weights`` maps ``"W_Q"``, ``"W_K"``, ``"W_V"`` to ``d × d`` values (default: the
    layer's own symbols); ``direction`` is ``u`` (default all ones).

    >>> t = sp.Symbol("t", real=True)
    >>> sp.expand(witness_jacobian(1, t, weights={"W_Q": [[1]], "W_K": [[1]], "W_V": [[1]]})[0, 0])
    t**2/4 + 1/2
    """
    layer = attention(AttentionSpec(n=2, d_model=d))
    t = exact("t", t)
    u = [sp.Integer(1)] * d if direction is None else list(exact_matrix("direction", direction).reshape(1, d))
    subs = {layer.X[1, j]: t * u[j] for j in range(d)}
    for name, value in (weights or {}).items():
        if name not in ("W_Q", "W_K", "W_V"):
            raise SpecError(f"weights may name W_Q, W_K, W_V (got {name!r})")
        symbols, values = getattr(layer, name), exact_matrix(name, value)
        if values.shape != (d, d):
            raise ShapeError(f"weights[{name!r}] must be {d} × {d} (got {values.shape})")
        subs.update({symbols[i, j]: values[i, j] for i in range(d) for j in range(d)})
    row = [layer.Y[0, j].xreplace(subs) for j in range(d)]
    at_zero = {layer.X[0, i]: 0 for i in range(d)}
    return sp.Matrix(d, d, lambda i, j: sp.expand(sp.diff(row[j], layer.X[0, i]).xreplace(at_zero)))


def kim_witness_block(t, W_Q, W_K, W_V, scale, direction) -> sp.Matrix:
    """``½ W_V + (t²/4)·c·(W_Q W_Kᵀ uᵀ)(u W_V)``: the witness Jacobian from the derivation of the module docstring.

    >>> sp.expand(kim_witness_block(sp.Symbol("t"), [[1]], [[1]], [[1]], 1, [1])[0, 0])
    t**2/4 + 1/2
    """
    W_Q, W_K, W_V = (exact_matrix(k, v) for k, v in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V)))
    u = exact_matrix("direction", direction).reshape(1, W_Q.shape[0])
    t, c = exact("t", t), exact("scale", scale)
    return (W_V / 2 + t**2 / 4 * c * (W_Q * W_K.T * u.T) * (u * W_V)).applyfunc(sp.expand)
