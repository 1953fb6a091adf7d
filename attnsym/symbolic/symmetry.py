"""When is the score matrix symmetric? ``X Xᵀ`` always; ``Q Kᵀ`` exactly when ``W_Q W_Kᵀ`` is.

With ``Q = X W_Q`` and ``K = X W_K`` the scores are ``S = Q Kᵀ = X M Xᵀ`` with
``M = W_Q W_Kᵀ`` (``d_model × d_model``), so

.. math::

    S - S^\\top = X (M - M^\\top) X^\\top .

If ``M`` is symmetric this is 0 for every ``X``. Conversely, entry ``(i, j)`` of
``X (M − Mᵀ) Xᵀ`` is the bilinear form ``x_i (M − Mᵀ) x_jᵀ`` in the rows ``x_i, x_j``; its
coefficient of ``x_{i,a} x_{j,b}`` is ``(M − Mᵀ)_{ab}``. So ``S`` is symmetric for all ``X``
exactly when every entry of ``M − Mᵀ`` vanishes. :func:`prove_qk_symmetry_condition` checks
both directions on generic symbolic matrices by reading those coefficients off the polynomial.
Raw dot-product attention (``W_Q = W_K = I``, so ``S = X Xᵀ``) is the symmetric special case.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .._checks import positive_int
from .._exact import exact_matrix
from ..errors import SpecError
from .cost import enforce_limit
from .naming import input_symbols

__all__ = ["QKSymmetryProof", "is_symmetric", "prove_gram_symmetric", "prove_qk_symmetry_condition"]


def is_symmetric(S: sp.Matrix) -> bool:
    """Whether ``S − Sᵀ`` expands to exactly zero.

    >>> x = sp.Matrix(2, 2, sp.symbols("a b c d"))
    >>> is_symmetric(x * x.T), is_symmetric(x * x)
    (True, False)
    """
    S = exact_matrix("S", S)
    if S.rows != S.cols:
        return False
    return all(sp.expand(S[i, j] - S[j, i]) == 0 for i in range(S.rows) for j in range(i + 1, S.cols))


def prove_gram_symmetric(n: int = 3, d: int | None = None) -> bool:
    """``X Xᵀ`` is symmetric, both for a symbolic ``n × d`` matrix and as a matrix-expression identity.

    Returns True when the entrywise check on a generic ``X`` (symbols ``x_{i,j}``) and the
    identity ``(X Xᵀ)ᵀ = X Xᵀ`` for a :class:`sympy.MatrixSymbol` of symbolic size both hold.

    >>> prove_gram_symmetric(3, 2)
    True
    """
    n = positive_int("n", n)
    d = n if d is None else positive_int("d", d)
    enforce_limit(n * n * d, None, what=f"the symbolic Gram matrix X Xᵀ for n={n}, d={d}")
    X = input_symbols("X", (n, d))
    entrywise = is_symmetric(X * X.T)
    rows, cols = sp.symbols("n d", positive=True, integer=True)
    Xs = sp.MatrixSymbol("X", rows, cols)
    expression = (Xs * Xs.T).T.doit() == Xs * Xs.T
    return bool(entrywise and expression)


@dataclass(frozen=True)
class QKSymmetryProof:
    """Evidence for "``Q Kᵀ`` symmetric for all ``X`` ⇔ ``W_Q W_Kᵀ`` symmetric".

    Attributes
    ----------
    M : sympy.Matrix
        ``W_Q W_Kᵀ`` for the given (symbolic or concrete) weights.
    antisymmetric_part : sympy.Matrix
        ``M − Mᵀ``.
    coefficients : dict
        ``(a, b) -> coefficient of x_{1,a+1} x_{2,b+1}`` in ``S_12 − S_21`` (a generic ``X``
        with two rows); equal to ``(M − Mᵀ)_{ab}``.
    coefficients_match : bool
        Every coefficient equals the corresponding entry of ``M − Mᵀ`` (the "only if" part).
    scores_symmetric : bool
        ``Q Kᵀ`` is symmetric for a generic symbolic ``X``.
    M_symmetric : bool
        ``M − Mᵀ`` is exactly zero.
    """

    M: sp.Matrix
    antisymmetric_part: sp.Matrix
    coefficients: dict
    coefficients_match: bool
    scores_symmetric: bool
    M_symmetric: bool

    @property
    def equivalence_holds(self) -> bool:
        """Both directions agree: scores symmetric exactly when ``M`` is, with matching coefficients."""
        return self.coefficients_match and self.scores_symmetric == self.M_symmetric


def prove_qk_symmetry_condition(W_Q=None, W_K=None, *, d_model: int = 2, d_k: int = 2, n: int = 2) -> QKSymmetryProof:
    """Check ``Q Kᵀ`` symmetric for all ``X`` ⇔ ``W_Q W_Kᵀ`` symmetric, for given or symbolic weights.

    Parameters
    ----------
    W_Q, W_K : array-like or sympy.Matrix, optional
        ``(d_model, d_k)`` weights; generic symbols ``W^{Q}_{i,j}``, ``W^{K}_{i,j}`` when omitted.
    d_model, d_k : int, default 2
        Sizes of the symbolic weights (ignored for given weights).
    n : int, default 2
        Rows of the generic symbolic ``X`` (at least 2).

    Returns
    -------
    QKSymmetryProof

    Examples
    --------
    >>> proof = prove_qk_symmetry_condition()            # generic weights: not symmetric
    >>> proof.scores_symmetric, proof.M_symmetric, proof.equivalence_holds
    (False, False, True)
    >>> W = sp.Matrix([[1, 2], [3, 4]])
    >>> prove_qk_symmetry_condition(W, W).scores_symmetric   # W_Q = W_K gives M = W Wᵀ
    True
    """
    if not isinstance(n, int) or n < 2:
        raise SpecError(f"n must be an integer >= 2 to compare two different rows (got {n!r})")
    if (W_Q is None) != (W_K is None):
        raise SpecError("give both W_Q and W_K, or neither (for generic symbolic weights)")
    if W_Q is None:
        W_Q, W_K = input_symbols("W_Q", (d_model, d_k)), input_symbols("W_K", (d_model, d_k))
    W_Q, W_K = exact_matrix("W_Q", W_Q, error=SpecError), exact_matrix("W_K", W_K, error=SpecError)
    if W_Q.shape != W_K.shape:
        raise SpecError(f"W_Q and W_K must have the same shape (got {W_Q.shape} and {W_K.shape})")
    d_model = W_Q.rows
    enforce_limit(n * n * d_model * d_model * W_Q.cols, None,
                  what=f"the symbolic scores X W_Q W_Kᵀ Xᵀ for n={n}, d_model={d_model}, d_k={W_Q.cols}")
    X = input_symbols("X", (n, d_model))
    M = W_Q * W_K.T
    antisym = (M - M.T).applyfunc(sp.expand)
    S = (X * W_Q) * (X * W_K).T
    diff = sp.expand(S[0, 1] - S[1, 0])
    x1, x2 = X[0, :], X[1, :]
    poly = sp.Poly(diff, *x1, *x2)
    coefficients = {}
    for a in range(d_model):
        for b in range(d_model):
            coefficients[(a, b)] = sp.expand(poly.coeff_monomial(x1[a] * x2[b]))
    match = all(sp.expand(coefficients[(a, b)] - antisym[a, b]) == 0 for (a, b) in coefficients)
    # and no other monomials: diff is exactly the bilinear form x1 (M - M^T) x2^T
    bilinear = sp.expand((x1 * antisym * x2.T)[0, 0])
    match = match and sp.expand(diff - bilinear) == 0
    return QKSymmetryProof(M, antisym, coefficients, bool(match), is_symmetric(S), all(e == 0 for e in antisym))
