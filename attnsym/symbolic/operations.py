r"""The building blocks of the symbolic forward pass: matrix product, scaled scores, row softmax.

Each builds its result entry by entry as flat SymPy expressions (no expansion, no simplify),
so the layer in :mod:`attnsym.symbolic.matrices` and the derivations show the formulas as
written. :func:`scores` and :func:`row_softmax` are the twins of :func:`attnsym.numeric.scores`
and :func:`attnsym.numeric.softmax`; masked scores are ``-oo`` and their weights exactly 0.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from .._exact import exact
from ..errors import ShapeError

__all__ = ["allowed_pattern", "matmul", "ones_times", "row_softmax", "scores", "sink_softmax"]

Matrix = sp.ImmutableMatrix


def matmul(A: sp.MatrixBase, B: sp.MatrixBase) -> sp.ImmutableMatrix:
    """Matrix product with each entry built as one flat ``sp.Add`` (no expansion, no simplify).

    Examples
    --------
    >>> a, b = sp.symbols("a b")
    >>> matmul(sp.Matrix([[a, b]]), sp.Matrix([[b], [a]]))
    Matrix([[2*a*b]])
    """
    if A.shape[1] != B.shape[0]:
        raise ShapeError(f"cannot multiply a {A.shape} matrix by a {B.shape} matrix")
    rows, inner, cols = A.shape[0], A.shape[1], B.shape[1]
    return Matrix(rows, cols, lambda i, j: sp.Add(*[A[i, k] * B[k, j] for k in range(inner)]))


def ones_times(b: sp.MatrixBase, n: int) -> sp.ImmutableMatrix:
    """Broadcast a ``1 x k`` row to ``n`` rows (``1 b`` in the formulas).

    >>> ones_times(sp.Matrix([[1, 2]]), 2)
    Matrix([
    [1, 2],
    [1, 2]])
    """
    return Matrix(n, b.shape[1], lambda i, j: b[0, j])


def allowed_pattern(allowed: Any, n: int) -> tuple[tuple[bool, ...], ...] | None:
    """``allowed`` (nested lists or an array of booleans, ``True`` = may attend) as an ``(n, n)`` tuple pattern.

    >>> allowed_pattern([[True, False], [True, True]], 2)
    ((True, False), (True, True))
    """
    if allowed is None:
        return None
    if hasattr(allowed, "tolist"):
        allowed = allowed.tolist()
    try:
        rows = tuple(tuple(bool(v) if isinstance(v, bool) or type(v).__name__ == "bool_" else v for v in r) for r in allowed)
    except TypeError:
        raise ShapeError(f"allowed must be an (n, n) boolean pattern, True = may attend (got {allowed!r})") from None
    if len(rows) != n or any(len(r) != n for r in rows):
        raise ShapeError(f"allowed must have shape ({n}, {n}) like the scores (got {len(rows)} rows of lengths "
                         f"{sorted({len(r) for r in rows})})")
    for r in rows:
        for v in r:
            if not isinstance(v, bool):
                raise ShapeError(f"allowed must contain booleans, True = may attend (got {v!r})")
    return rows


def row_softmax(S: sp.MatrixBase, allowed: Any = None) -> sp.ImmutableMatrix:
    r"""Softmax of each row of ``S``, built from ``exp`` entry by entry.

    :math:`A_{ij} = e^{S_{ij}} / \sum_{k \text{ allowed}} e^{S_{ik}}` for allowed ``(i, j)``;
    masked entries (``allowed[i][j]`` False, or ``S_ij = -oo``) are exactly 0, and a row with
    nothing allowed is all zeros. The matrix exponential is never used.

    Parameters
    ----------
    S : SymPy Matrix
        Square or rectangular scores.
    allowed : boolean pattern of S's shape, optional
        ``True`` = may attend. ``None`` allows every finite score.

    Returns
    -------
    sympy.ImmutableMatrix

    Examples
    --------
    >>> s = sp.Matrix(2, 2, sp.symbols("s_1:3(1:3)"))
    >>> row_softmax(s, allowed=[[True, False], [True, True]])
    Matrix([
    [                              1,                               0],
    [exp(s_21)/(exp(s_21) + exp(s_22)), exp(s_22)/(exp(s_21) + exp(s_22))]])
    >>> row_softmax(sp.Matrix([[0, 0]]))
    Matrix([[1/2, 1/2]])
    """
    if not isinstance(S, sp.MatrixBase):
        raise ShapeError(f"S must be a SymPy Matrix (got {type(S).__name__})")
    rows, cols = S.shape
    if allowed is not None and rows != cols:
        raise ShapeError(f"S must be square to take an allowed pattern (got shape {S.shape})")
    pattern = allowed_pattern(allowed, rows)
    out = [[sp.Integer(0)] * cols for _ in range(rows)]
    for i in range(rows):
        keep = [j for j in range(cols) if (pattern is None or pattern[i][j]) and S[i, j] != -sp.oo]
        if not keep:
            continue
        exps = {j: sp.exp(S[i, j]) for j in keep}
        denominator = sp.Add(*exps.values())
        for j in keep:
            out[i][j] = exps[j] / denominator
    return Matrix(out)


def sink_softmax(S: sp.MatrixBase, sink: Any, allowed: Any = None) -> tuple[sp.ImmutableMatrix, sp.ImmutableMatrix]:
    r"""Softmax of each row of ``S`` with a sink logit ``sink`` in the denominator: ``(A, π)``.

    :math:`A_{ij} = e^{S_{ij}} / (e^{s} + \sum_{k \text{ allowed}} e^{S_{ik}})` and the sink's own
    mass :math:`\pi_i = e^{s} / (e^{s} + \sum_k e^{S_{ik}})` (an ``n × 1`` column), so each row
    of ``A`` sums to ``1 − π_i`` (gpt-oss; :class:`~attnsym.AttentionSpec` ``sink=True``). The
    symbolic twin of :func:`attnsym.numeric.layer.sink_softmax`.

    >>> s, t = sp.symbols("s t")
    >>> A, pi = sink_softmax(sp.Matrix([[t]]), s)
    >>> A[0, 0], pi[0, 0]
    (exp(t)/(exp(s) + exp(t)), exp(s)/(exp(s) + exp(t)))
    """
    if not isinstance(S, sp.MatrixBase):
        raise ShapeError(f"S must be a SymPy Matrix (got {type(S).__name__})")
    sink = exact("sink", sink, error=ShapeError)
    rows, cols = S.shape
    pattern = allowed_pattern(allowed, rows)
    out = [[sp.Integer(0)] * cols for _ in range(rows)]
    mass = []
    for i in range(rows):
        keep = [j for j in range(cols) if (pattern is None or pattern[i][j]) and S[i, j] != -sp.oo]
        exps = {j: sp.exp(S[i, j]) for j in keep}
        denominator = sp.exp(sink) + sp.Add(*exps.values())
        for j in keep:
            out[i][j] = exps[j] / denominator
        mass.append([sp.exp(sink) / denominator])
    return Matrix(out), Matrix(mass)


def scores(Q: sp.MatrixBase, K: sp.MatrixBase, scale: Any = 1, allowed: Any = None) -> sp.ImmutableMatrix:
    r"""Scaled scores :math:`S_{ij} = c \sum_k Q_{ik} K_{jk}`, with ``-oo`` where attention is masked.

    The symbolic twin of :func:`attnsym.numeric.scores`.

    Parameters
    ----------
    Q : (n, d_k) SymPy Matrix
    K : (m, d_k) SymPy Matrix
    scale : number or SymPy expression, default 1
        The factor ``c`` (``spec.scale_expr`` in a layer).
    allowed : (n, m) boolean pattern, optional
        ``True`` = query ``i`` may attend to key ``j``.

    Returns
    -------
    sympy.ImmutableMatrix

    Raises
    ------
    ShapeError
        ``Q`` and ``K`` are not matrices with the same number of columns, or ``allowed``
        has the wrong shape.

    Examples
    --------
    >>> q, k = sp.symbols("q k")
    >>> scores(sp.Matrix([[q], [1]]), sp.Matrix([[k], [2]]), scale=sp.Rational(1, 2), allowed=[[True, False], [True, True]])
    Matrix([
    [k*q/2, -oo],
    [  k/2,   1]])
    """
    for name, value in (("Q", Q), ("K", K)):
        if not isinstance(value, sp.MatrixBase):
            raise ShapeError(f"{name} must be a SymPy Matrix (got {type(value).__name__})")
    if Q.shape[1] != K.shape[1]:
        raise ShapeError(f"Q and K must have the same number of columns d_k (got Q {Q.shape}, K {K.shape})")
    n, m, d = Q.shape[0], K.shape[0], Q.shape[1]
    pattern = None
    if allowed is not None:
        if n != m:
            raise ShapeError(f"an allowed pattern needs as many queries as keys (got Q {Q.shape}, K {K.shape})")
        pattern = allowed_pattern(allowed, n)
    scale = exact("scale", scale, error=ShapeError)

    def entry(i, j):
        if pattern is not None and not pattern[i][j]:
            return -sp.oo
        return scale * sp.Add(*[Q[i, k] * K[j, k] for k in range(d)])

    return Matrix(n, m, entry)
