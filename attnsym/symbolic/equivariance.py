"""Symmetries of token mixing: attention is permutation-equivariant, convolution shift-equivariant.

For a permutation ``π`` of the tokens with matrix ``P`` (``(P X)_i = X_{π(i)}``), self-attention
without positions and without a mask satisfies

.. math::

    A(PX) = P\\,A(X)\\,P^\\top, \\qquad Y(PX) = P\\,Y(X),

because every score ``s_ij = q_i·k_j`` depends on the two tokens only, never on their indices.
Adding absolute (sinusoidal) positions ``X + PE`` or a causal mask ties the computation to
the indices and breaks the identity. A 1-D convolution is the opposite: it is equivariant to
cyclic shifts (with circular padding; zero padding breaks it at the borders), but not to other
permutations, and its output at ``i`` depends only on a window of tokens around ``i``.

All checks are exact: the left- and right-hand sides are built from the same symbols and their
difference is simplified to 0, or a rational point is exhibited where it is provably non-zero
(evaluated with 30 significant digits, far above the rounding of that evaluation).
The numeric twin of :func:`conv1d` is :func:`attnsym.numeric.conv.conv1d`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import mpmath
import sympy as sp

from .._checks import is_int, non_negative_int, positive_int
from .._exact import exact, exact_matrix
from ..errors import ShapeError, SpecError
from ..spec import AttentionSpec
from .cost import enforce_limit, estimate_cost
from .matrices import attention
from .naming import input_symbols

__all__ = [
    "EquivarianceCheck",
    "check_attention_equivariance",
    "check_conv_equivariance",
    "conv1d",
    "cyclic_shift",
    "dependency_pattern",
    "permutation_matrix",
]


def _check_perm(perm: Sequence[int], n: int) -> tuple[int, ...]:
    if isinstance(perm, str | bytes) or not hasattr(perm, "__iter__") or not all(is_int(p) for p in perm):
        raise SpecError(f"perm must be a permutation of 0..{n - 1} (got {perm!r})")
    perm = tuple(int(p) for p in perm)
    if sorted(perm) != list(range(n)):
        raise SpecError(f"perm must be a permutation of 0..{n - 1} (got {perm!r})")
    return perm


def permutation_matrix(perm: Sequence[int]) -> sp.Matrix:
    """The matrix ``P`` with ``(P X)_i = X_{perm[i]}`` (row ``i`` has a 1 in column ``perm[i]``).

    >>> permutation_matrix([1, 2, 0]) * sp.Matrix([10, 20, 30])
    Matrix([
    [20],
    [30],
    [10]])
    """
    perm = _check_perm(perm, len(perm))
    n = len(perm)
    return sp.Matrix(n, n, lambda i, j: 1 if perm[i] == j else 0)


def cyclic_shift(n: int, s: int = 1) -> tuple[int, ...]:
    """The permutation that shifts a sequence right by ``s`` (cyclically): ``(P X)_i = X_{i−s mod n}``.

    >>> cyclic_shift(4)
    (3, 0, 1, 2)
    """
    n = positive_int("n", n)
    return tuple((i - s) % n for i in range(n))


def conv1d(X, kernel, padding: str = "circular") -> sp.Matrix:
    """1-D convolution (cross-correlation) along the tokens, the same kernel for every feature.

    .. math:: y_{i,c} = \\sum_{r=0}^{k-1} w_r\\, x_{i + r - \\lfloor k/2 \\rfloor,\\, c}

    Parameters
    ----------
    X : sympy.Matrix
        ``(n, c)``: tokens as rows.
    kernel : sequence
        The ``k`` weights ``w_0 … w_{k-1}`` (numbers or symbols), centred on the token.
    padding : {"circular", "zeros"}, default "circular"
        Indices outside ``0..n-1`` wrap around, or read zeros.

    Returns
    -------
    sympy.Matrix
        ``(n, c)``.

    Examples
    --------
    >>> conv1d(sp.Matrix([1, 2, 3]), [1, 0, -1])
    Matrix([
    [ 1],
    [-2],
    [ 1]])
    >>> conv1d(sp.Matrix([1, 2, 3]), [1, 0, -1], padding="zeros")
    Matrix([
    [-2],
    [-2],
    [ 2]])
    """
    X = exact_matrix("X", X)
    if isinstance(kernel, str | bytes) or not hasattr(kernel, "__iter__"):
        raise ShapeError(f"kernel must be a sequence of weights (got {kernel!r})")
    kernel = [exact(f"kernel[{r}]", w, error=ShapeError) for r, w in enumerate(kernel)]
    if not kernel:
        raise ShapeError("kernel must have at least one weight (got an empty kernel)")
    if padding not in ("circular", "zeros"):
        raise SpecError(f"padding must be 'circular' or 'zeros' (got {padding!r})")
    n, c = X.shape
    half = len(kernel) // 2

    def entry(i, col):
        total = sp.Integer(0)
        for r, w in enumerate(kernel):
            j = i + r - half
            if padding == "circular":
                total += w * X[j % n, col]
            elif 0 <= j < n:
                total += w * X[j, col]
        return total

    return sp.Matrix(n, c, entry)


def dependency_pattern(Y: sp.Matrix, X: sp.Matrix) -> sp.Matrix:
    """``D[i, j] = 1`` when some entry of output row ``i`` depends on some entry of input row ``j``.

    This is the token-level sparsity pattern of the Jacobian ``∂Y/∂X``: a band for a
    convolution, full for attention.

    >>> x = input_symbols("X", (3, 1))
    >>> dependency_pattern(conv1d(x, [1, 1], padding="zeros"), x)   # y_i = x_{i-1} + x_i
    Matrix([
    [1, 0, 0],
    [1, 1, 0],
    [0, 1, 1]])
    """
    Y, X = exact_matrix("Y", Y), exact_matrix("X", X)
    rows = [set().union(*(Y[i, c].free_symbols for c in range(Y.cols))) for i in range(Y.rows)]
    tokens = [set(X[j, :]) for j in range(X.rows)]
    return sp.Matrix(Y.rows, X.rows, lambda i, j: 1 if rows[i] & tokens[j] else 0)


@dataclass(frozen=True)
class EquivarianceCheck:
    """Outcome of comparing ``f(T X)`` with ``T f(X)`` for one transformation ``T``.

    Attributes
    ----------
    quantity : str
        What was compared, e.g. ``"A"``, ``"Y"`` or ``"conv"``.
    perm : tuple of int
        The permutation of the tokens (``(P X)_i = X_{perm[i]}``).
    holds : bool
        ``f(T X) − T f(X)`` is exactly zero (every entry).
    failing_entries : tuple of (int, int)
        Entries where the difference is provably non-zero.
    witness : float or None
        ``max |f(T X) − T f(X)|`` at a random rational point, when the identity fails.
    """

    quantity: str
    perm: tuple[int, ...]
    holds: bool
    failing_entries: tuple[tuple[int, int], ...]
    witness: float | None


def _compare(quantity, perm, lhs: sp.Matrix, rhs: sp.Matrix, seed: int) -> EquivarianceCheck:
    diff = sp.Matrix(lhs) - sp.Matrix(rhs)
    nonzero = [(i, j) for i in range(diff.rows) for j in range(diff.cols) if diff[i, j] != 0]
    if not nonzero:
        return EquivarianceCheck(quantity, perm, True, (), None)
    rng = random.Random(seed)
    free = sorted(set().union(*(diff[i, j].free_symbols for i, j in nonzero)), key=str)
    point = {s: sp.Rational(rng.randint(-4, 4), rng.randint(2, 6)) for s in free}
    # every nonzero entry at the point in 40-digit arithmetic, the shared subexpressions (each exponential of
    # a score, each sin/cos of a position) computed once for all entries: evalf of each entry on its own
    # re-evaluated them per entry (~10x slower with sinusoidal positions)
    evaluate = sp.lambdify(free, [diff[i, j] for i, j in nonzero], modules="mpmath", cse=True)
    with mpmath.workdps(40):
        numbers = evaluate(*[mpmath.mpf(point[s].p) / point[s].q for s in free])
        values = {ij: abs(v) for ij, v in zip(nonzero, numbers, strict=True)}
        failing = tuple(ij for ij, v in values.items() if v > mpmath.mpf("1e-20"))
    if not failing:  # not structurally zero, but zero at the point: try harder before deciding
        simplified = [sp.simplify(diff[i, j]) for i, j in nonzero]
        if all(e == 0 for e in simplified):
            return EquivarianceCheck(quantity, perm, True, (), None)
        failing = tuple(ij for ij, e in zip(nonzero, simplified, strict=True) if e != 0)
        return EquivarianceCheck(quantity, perm, False, failing, None)
    return EquivarianceCheck(quantity, perm, False, failing, float(max(values[ij] for ij in failing)))


def check_conv_equivariance(n: int = 5, k: int = 3, perm: Sequence[int] | None = None, *,
                            padding: str = "circular", seed: int = 0) -> EquivarianceCheck:
    """Compare ``conv(P X)`` with ``P conv(X)`` for a symbolic ``(n, 1)`` input and kernel ``w_0 … w_{k−1}``.

    Parameters
    ----------
    n, k : int
        Sequence length and kernel size.
    perm : sequence of int, optional
        The permutation; a cyclic shift by one by default.
    padding : {"circular", "zeros"}
    seed : int
        Seeds the rational point of the failure witness.

    Examples
    --------
    >>> check_conv_equivariance(5, 3).holds                       # shift-equivariant
    True
    >>> check_conv_equivariance(5, 3, padding="zeros").failing_entries   # the borders
    ((0, 0), (1, 0), (4, 0))
    >>> check_conv_equivariance(5, 3, perm=[1, 0, 2, 3, 4]).holds   # not permutation-equivariant
    False
    """
    n, k, seed = positive_int("n", n), positive_int("k", k), non_negative_int("seed", seed)
    enforce_limit(n * k, None, what=f"a symbolic convolution for n={n}, k={k}")
    perm = _check_perm(cyclic_shift(n) if perm is None else perm, n)
    X = input_symbols("X", (n, 1))
    w = sp.symbols(f"w_0:{k}", real=True)
    P = permutation_matrix(perm)
    return _compare("conv", perm, conv1d(P * X, w, padding), P * conv1d(X, w, padding), seed)


def check_attention_equivariance(spec: AttentionSpec, perm: Sequence[int] | None = None, *,
                                 seed: int = 0) -> dict[str, EquivarianceCheck]:
    """Compare ``A(P X)`` with ``P A(X) Pᵀ`` and ``Y(P X)`` with ``P Y(X)`` for the symbolic layer ``spec``.

    The weights stay symbolic; only ``X`` is permuted (its symbols are renamed), so positions
    (``spec.positions``) and masks (``spec.causal``, ``spec.mask``) stay attached to the indices.

    Parameters
    ----------
    spec : AttentionSpec
        A single-head spec compares ``A`` and ``Y``; a multi-head one compares each head's
        ``A`` (keys ``"A_0"``, ``"A_1"``, …) and ``Y``.
    perm : sequence of int, optional
        Defaults to the reversal ``n−1, …, 0``.
    seed : int

    Returns
    -------
    dict
        ``{"A": EquivarianceCheck, "Y": EquivarianceCheck}`` (per-head ``A_h`` for heads > 1).

    Examples
    --------
    >>> checks = check_attention_equivariance(AttentionSpec(n=3, d_model=1))
    >>> checks["A"].holds, checks["Y"].holds
    (True, True)
    >>> check_attention_equivariance(AttentionSpec(n=3, d_model=1, causal=True))["Y"].holds
    False
    """
    if not isinstance(spec, AttentionSpec):
        raise SpecError(f"spec must be an AttentionSpec (got {spec!r} of type {type(spec).__name__})")
    seed = non_negative_int("seed", seed)
    n = spec.n
    estimate_cost(spec).check()  # the size guard first: n may be too large even to list a permutation
    perm = _check_perm(tuple(range(n - 1, -1, -1)) if perm is None else perm, n)
    sym = attention(spec)
    X = sym.X
    renaming = {X[i, j]: X[perm[i], j] for i in range(n) for j in range(X.cols)}
    P = permutation_matrix(perm)
    out = {}
    for h, A in enumerate(sym.A_heads):
        key = "A" if spec.heads == 1 else f"A_{h}"
        out[key] = _compare(key, perm, A.xreplace(renaming), P * A * P.T, seed)
    out["Y"] = _compare("Y", perm, sym.Y.xreplace(renaming), P * sym.Y, seed)
    return out
