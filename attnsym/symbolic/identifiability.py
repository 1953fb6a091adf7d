r"""Non-identifiable attention (Brunner et al. 2020) and the low-rank bottleneck (Bhojanapalli et al. 2020), exactly.

* :func:`null_directions` — a basis of :math:`\{d : V^\top d = 0,\ \mathbf 1^\top d = 0\}`: the
  directions a row of ``A`` can move in without changing ``A V`` or its row sum (dimension
  :math:`\ge T - d_v - 1`);
* :func:`alternative_attention` — :math:`A' = A + t\,\mathbf 1 d^\top \ne A`, row-stochastic, with
  :math:`A' V = A V`;
* :func:`effective_attention` — Brunner's effective attention :math:`A P_V`, each row projected onto
  the column space of ``V`` (:math:`P_V = V (V^\top V)^{-1} V^\top`);
* :func:`singular_row_shift` — the row constants ``c`` with :math:`\det(S + c\,\mathbf 1^\top) = 0`
  (matrix determinant lemma), which make a full-rank score pattern reachable with ``d_k = n − 1``.

>>> V = sp.Matrix([[1], [2], [3]])
>>> [list(d) for d in null_directions(V)]
[[1, -2, 1]]
"""

from __future__ import annotations

import sympy as sp

from .._exact import exact_matrix

__all__ = ["alternative_attention", "effective_attention", "null_directions", "singular_row_shift"]


def null_directions(V: sp.MatrixBase) -> list[sp.Matrix]:
    r"""A basis of the null space of :math:`[V\ \mathbf 1]^\top` (``T`` × 1 columns).

    A row ``a`` of the weights may become ``a + d`` for any such ``d``: :math:`(a + d)V = aV` and
    the row sum stays 1.
    """
    V = exact_matrix("V", V)
    M = sp.Matrix.hstack(V, sp.ones(V.shape[0], 1)).T  # (d_v + 1, T)
    return M.nullspace()


def alternative_attention(A: sp.MatrixBase, V: sp.MatrixBase) -> sp.Matrix | None:
    r""":math:`A' = A + t\,\mathbf 1 d^\top` with ``d`` the first of :func:`null_directions` and ``t`` half the
    largest step that keeps every entry :math:`\ge 0`; ``None`` when no direction exists (``A`` identifiable).

    Needs every entry of ``A`` positive where ``d`` is negative (true of softmax weights).

    >>> A = sp.ones(3, 3) / 3
    >>> alternative_attention(A, sp.Matrix([[1], [2], [3]]))
    Matrix([
    [5/12, 1/6, 5/12],
    [5/12, 1/6, 5/12],
    [5/12, 1/6, 5/12]])
    """
    A = exact_matrix("A", A)
    directions = null_directions(V)
    if not directions:
        return None
    d = directions[0]
    steps = [A[i, j] / -d[j] for i in range(A.shape[0]) for j in range(A.shape[1]) if d[j] < 0]
    t = min(steps) / 2 if steps else sp.Integer(1)
    return A + t * sp.ones(A.shape[0], 1) * d.T


def effective_attention(A: sp.MatrixBase, V: sp.MatrixBase) -> sp.Matrix:
    r"""Brunner et al.'s effective attention :math:`A V (V^\top V)^{-1} V^\top` (``V`` of full column rank).

    The part of ``A`` that reaches the output: :math:`A_{\mathrm{eff}} V = A V`; its rows need not be
    non-negative or sum to 1.
    """
    A, V = exact_matrix("A", A), exact_matrix("V", V)
    return A * V * (V.T * V).inv() * V.T


def singular_row_shift(S: sp.MatrixBase) -> sp.Matrix:
    r"""Row constants ``c`` with :math:`\det(S + c\,\mathbf 1^\top) = 0` for an invertible ``S``.

    By the matrix determinant lemma :math:`\det(S + c\,\mathbf 1^\top) = \det S + \mathbf 1^\top
    \operatorname{adj}(S)\, c`, linear in ``c``: :math:`c = -\det S\, w / (w^\top w)` with
    :math:`w = \operatorname{adj}(S)^\top \mathbf 1` (non-zero since ``S`` is invertible). Softmax
    ignores row constants, so ``softmax(S)`` is also the softmax of a rank-``n − 1`` score matrix.

    >>> c = singular_row_shift(3 * sp.eye(3))
    >>> (3 * sp.eye(3) + c * sp.ones(1, 3)).det()
    0
    """
    S = exact_matrix("S", S)
    w = S.adjugate().T * sp.ones(S.shape[0], 1)
    return -S.det() * w / (w.T * w)[0]
