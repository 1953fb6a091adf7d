r"""The MLP counterpart of attention: a fixed matrix applied to every token, ``Y = X W (+ b)``.

An MLP layer mixes each token's *features* with the same learned ``W``; it never mixes
tokens. Written for one token as a column vector, ``y = Wᵀ x``: the weights do not depend on
the input. Attention, by contrast, mixes tokens with ``A(X)``, a matrix computed from the
input — the ``y = W(x) x`` view (see :func:`attnsym.derive`).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import sympy as sp

from .._checks import boolean
from ..errors import SpecError
from ..spec import AttentionSpec
from .cost import enforce_limit
from .naming import input_symbols
from .operations import matmul

__all__ = ["SymbolicMLP", "mlp"]


@dataclass(frozen=True, eq=False)
class SymbolicMLP:
    """``Y = X W + 1 b`` with symbol matrices ``X`` (``x_{i,j}``), ``W`` (``W_{i,j}``), ``b`` (``b_{j}``) or None."""

    X: sp.ImmutableMatrix
    W: sp.ImmutableMatrix
    b: sp.ImmutableMatrix | None
    Y: sp.ImmutableMatrix


def _sizes(spec_or_sizes) -> tuple[int, int, int]:
    if isinstance(spec_or_sizes, AttentionSpec):
        return spec_or_sizes.n, spec_or_sizes.d_model, spec_or_sizes.d_model
    try:
        sizes = tuple(spec_or_sizes)
    except TypeError:
        sizes = ()
    ok = len(sizes) in (2, 3) and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) and int(v) >= 1
                                      for v in sizes)
    if not ok:
        raise SpecError(
            "spec_or_sizes must be an AttentionSpec or a tuple of positive integers (n, d_in) or "
            f"(n, d_in, d_out) (got {spec_or_sizes!r})"
        )
    n, d_in, *rest = (int(v) for v in sizes)
    return n, d_in, rest[0] if rest else d_in


def mlp(spec_or_sizes, *, bias: bool = False, max_terms: float | None = None) -> SymbolicMLP:
    """Build the linear (MLP) layer ``Y = X W + 1 b`` symbolically.

    Parameters
    ----------
    spec_or_sizes : AttentionSpec or tuple
        An AttentionSpec (``n`` tokens, ``d_model -> d_model``) or ``(n, d_in[, d_out])``.
    bias : bool, default False
        Add a bias row ``b`` to every token.

    Returns
    -------
    SymbolicMLP

    Raises
    ------
    SpecError
        Sizes that are not positive integers.

    Examples
    --------
    >>> layer = mlp((1, 2))
    >>> layer.Y
    Matrix([[W_{1,1}*x_{1,1} + W_{2,1}*x_{1,2}, W_{1,2}*x_{1,1} + W_{2,2}*x_{1,2}]])
    >>> mlp((2, 1), bias=True).Y
    Matrix([
    [W_{1,1}*x_{1,1} + b_{1}],
    [W_{1,1}*x_{2,1} + b_{1}]])
    """
    bias = boolean("bias", bias)
    n, d_in, d_out = _sizes(spec_or_sizes)
    enforce_limit(n * d_out * (d_in + (1 if bias else 0)), max_terms, what=f"a symbolic MLP for n={n}, d_in={d_in}, "
                  f"d_out={d_out}")
    X = input_symbols("X", (n, d_in))
    W = input_symbols("W", (d_in, d_out))
    b = input_symbols("b", (1, d_out)) if bias else None
    Y = matmul(X, W)
    if b is not None:
        Y = sp.ImmutableMatrix(n, d_out, lambda i, j: Y[i, j] + b[0, j])
    return SymbolicMLP(X=X, W=W, b=b, Y=Y)
