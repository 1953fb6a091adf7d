r"""Attention as a kernel smoother (Tsai et al. 2019), exactly.

With ``k(a, b) = exp(c · a W_Q (b W_K)ᵀ)`` (row vectors ``a``, ``b``; ``c = 1/√d_k``) the
attention weights are those of a Nadaraya–Watson smoother, ``A_ij = k(x_i, x_j) / Σ_l k(x_i, x_l)``.
``log k(a, b) − log k(b, a) = c · a (M − Mᵀ) bᵀ`` with ``M = W_Q W_Kᵀ``: a bilinear form that
vanishes for all ``a, b`` iff its matrix does, so ``k`` is symmetric iff ``M`` is (for example
``W_K = W_Q``, or ``W_K = W_Q S`` with ``S`` symmetric).

* :func:`log_kernel_matrix`, :func:`attention_kernel` — ``log k(x_i, x_j)`` for tokens ``X`` and ``k(a, b)``;
* :func:`kernel_smoother_weights` — ``K_ij / Σ_l K_il`` for the tokens ``X``;
* :func:`log_asymmetry_matrix` — the matrix ``B`` of ``log k(a, b) − log k(b, a) = a B bᵀ``,
  read off ``k`` by differentiation (``B_ij = ∂² / ∂a_i ∂b_j``);
* :func:`same_softmax_form` — two matrices of exponential ratios agree once each ``exp(u)`` is
  named by its expanded argument ``u`` (a sufficient, exact test).
"""

from __future__ import annotations

import sympy as sp

from .._exact import exact, exact_matrix

__all__ = ["attention_kernel", "kernel_smoother_weights", "log_asymmetry_matrix", "log_kernel_matrix", "same_softmax_form"]


def log_kernel_matrix(X, W_Q, W_K, scale) -> sp.Matrix:
    """``log K_ij = log k(x_i, x_j) = c · x_i W_Q (x_j W_K)ᵀ`` for the rows of ``X``, each expanded.

    >>> log_kernel_matrix([[1, 0], [0, 1]], [[1, 2], [0, 1]], [[1, 0], [0, 1]], 1)
    Matrix([
    [1, 2],
    [0, 1]])
    """
    X = exact_matrix("X", X)
    W_Q, W_K, c = exact_matrix("W_Q", W_Q), exact_matrix("W_K", W_K), exact("scale", scale)
    return (c * ((X * W_Q) * (X * W_K).T).applyfunc(sp.expand)).applyfunc(sp.expand)


def attention_kernel(a, b, W_Q, W_K, scale):
    """``k(a, b) = exp(c · a W_Q (b W_K)ᵀ)`` for row vectors ``a``, ``b`` (entry (1, 2) of :func:`log_kernel_matrix`).

    >>> attention_kernel([[1, 0]], [[0, 1]], [[1, 2], [0, 1]], [[1, 0], [0, 1]], 1)
    exp(2)
    """
    return sp.exp(log_kernel_matrix(sp.Matrix.vstack(exact_matrix("a", a), exact_matrix("b", b)), W_Q, W_K, scale)[0, 1])


def kernel_smoother_weights(X, W_Q, W_K, scale) -> sp.Matrix:
    """``A_ij = k(x_i, x_j) / Σ_l k(x_i, x_l)`` for the rows ``x_i`` of ``X``.

    >>> kernel_smoother_weights([[0, 0], [1, 1]], [[1, 0], [0, 1]], [[1, 0], [0, 1]], 1)[1, :]
    Matrix([[1/(1 + exp(2)), exp(2)/(1 + exp(2))]])
    """
    K = log_kernel_matrix(X, W_Q, W_K, scale).applyfunc(sp.exp)
    n = K.shape[0]
    return sp.Matrix(n, n, lambda i, j: K[i, j] / sum(K[i, :]))


def log_asymmetry_matrix(W_Q, W_K, scale) -> tuple[sp.Matrix, bool]:
    """``(B, bilinear)``: ``B_ij`` the coefficient of ``a_i b_j`` in ``log k(a, b) − log k(b, a)`` (:func:`log_kernel_matrix`).

    ``bilinear`` is True when the difference equals ``a B bᵀ`` (no other terms); by the module
    docstring ``B = c(M − Mᵀ)``, ``M = W_Q W_Kᵀ``.

    >>> log_asymmetry_matrix([[1, 2], [0, 1]], [[1, 0], [0, 1]], 1)
    (Matrix([
    [ 0, 2],
    [-2, 0]]), True)
    """
    d = exact_matrix("W_Q", W_Q).shape[0]
    a = sp.Matrix(1, d, sp.symbols(f"a_1:{d + 1}", real=True))
    b = sp.Matrix(1, d, sp.symbols(f"b_1:{d + 1}", real=True))
    L = log_kernel_matrix(sp.Matrix.vstack(a, b), W_Q, W_K, scale)
    ratio = sp.expand(L[0, 1] - L[1, 0])
    B = sp.Matrix(d, d, lambda i, j: ratio.coeff(a[i]).coeff(b[j]))
    return B, sp.expand(ratio - (a * B * b.T)[0, 0]) == 0


def same_softmax_form(first: sp.MatrixBase, second: sp.MatrixBase) -> bool:
    """True when the entries agree as rational functions of the exponentials, each ``exp(u)`` named by ``expand(u)``.

    >>> x = sp.Symbol("x", real=True)
    >>> same_softmax_form(sp.Matrix([sp.exp(x * (x + 1))]), sp.Matrix([sp.exp(x**2 + x)]))
    True
    """
    names: dict[sp.Expr, sp.Symbol] = {}

    def rename(expr):
        def one(e):
            key = sp.expand(e.args[0])
            return names.setdefault(key, sp.Dummy(f"E{len(names)}", positive=True))
        return expr.replace(lambda e: isinstance(e, sp.exp), one)

    first, second = exact_matrix("first", first, finite=False), exact_matrix("second", second, finite=False)
    if first.shape != second.shape:
        return False
    return all(sp.cancel(rename(p) - rename(q)) == 0 for p, q in zip(first, second, strict=True))
