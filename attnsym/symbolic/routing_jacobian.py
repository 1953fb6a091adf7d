"""The input Jacobian of attention split by the product rule: the "hypernetwork" term ∂A/∂X.

Attention is ``Y = A(X) V(X)``: the data first generates the mixing weights ``A(X)``, then
those weights mix the values. Differentiating with respect to an input entry ``x``,

.. math::

    \\frac{\\partial Y}{\\partial x} = \\underbrace{\\frac{\\partial A}{\\partial x} V}_{\\text{routing term}}
    + \\underbrace{A \\frac{\\partial V}{\\partial x}}_{\\text{value term}} .

A linear (MLP) layer ``Y = X W`` has only the second kind of term, with a constant matrix: its
Jacobian does not depend on ``X`` at all. :func:`split_input_jacobian` computes the full
Jacobian of the symbolic layer and the value term with ``A`` frozen (replaced by free symbols
``a_{i,j}`` while differentiating, then put back), so the routing term is their difference.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..errors import SpecError
from ..spec import AttentionSpec

__all__ = ["InputJacobian", "mlp_input_jacobian", "split_input_jacobian"]


def _vec(M: sp.MatrixBase) -> sp.Matrix:
    """Row-major vectorisation as a column."""
    return sp.Matrix([e for e in M])


@dataclass(frozen=True)
class InputJacobian:
    """``∂ vec(Y) / ∂ vec(X)`` (row-major) of a single-head layer and its product-rule split.

    Attributes
    ----------
    X : sympy.Matrix
        The symbolic input.
    total : sympy.Matrix
        ``(n·d_out, n·d_model)``: the full Jacobian.
    value_term : sympy.Matrix
        ``A ∂V/∂x`` — what the Jacobian would be if the mixing weights were fixed.
    routing_term : sympy.Matrix
        ``(∂A/∂x) V = total − value_term``: the part that exists because ``A`` depends on ``X``.
    """

    X: sp.Matrix
    total: sp.Matrix
    value_term: sp.Matrix
    routing_term: sp.Matrix

    def depends_on_input(self, which: str = "total") -> bool:
        """Whether the chosen Jacobian (``"total"``, ``"value_term"``, ``"routing_term"``) contains input symbols."""
        J = getattr(self, which)
        return bool(J.free_symbols & set(self.X))


def split_input_jacobian(spec: AttentionSpec) -> InputJacobian:
    """Full input Jacobian of the symbolic single-head layer ``spec`` and its routing/value split.

    Parameters
    ----------
    spec : AttentionSpec
        One head, no output projection (``Y = A V``); kept small (``n·d_model ≤ 9``).

    Returns
    -------
    InputJacobian

    Raises
    ------
    SpecError
        Several heads, an output projection, or a size above ``n·d_model = 9``.

    Examples
    --------
    >>> J = split_input_jacobian(at.AttentionSpec(n=2, d_model=1))
    >>> J.total.shape
    (2, 2)
    >>> J.depends_on_input("total"), J.routing_term == sp.zeros(2, 2)
    (True, False)
    """
    from .matrices import attention

    if not isinstance(spec, AttentionSpec):
        raise SpecError(f"spec must be an AttentionSpec (got {spec!r} of type {type(spec).__name__})")
    if spec.heads != 1 or spec.output_projection:
        raise SpecError(f"split_input_jacobian needs one head and no output projection, Y = A V (got {spec.describe()})")
    if spec.n * spec.d_model > 9:
        raise SpecError(f"split_input_jacobian is symbolic and kept to n·d_model <= 9 (got n={spec.n}, "
                        f"d_model={spec.d_model}); use attnsym.numeric.attention_vjp for numbers at this size")
    sym = attention(spec)
    x = _vec(sym.X)
    total = _vec(sym.Y).jacobian(x)
    n = spec.n
    frozen = sp.Matrix(n, n, lambda i, j: sp.Symbol(f"a_{{{i + 1},{j + 1}}}", real=True))
    value_term = _vec(frozen * sym.V).jacobian(x).xreplace(dict(zip(frozen, sym.A, strict=True)))
    routing_term = total - value_term
    return InputJacobian(sym.X, total, value_term, routing_term)


def mlp_input_jacobian(n: int, d_in: int, d_out: int | None = None) -> tuple[sp.Matrix, sp.Matrix]:
    """``(X, ∂ vec(Y)/∂ vec(X))`` of the linear layer ``Y = X W`` (:func:`attnsym.symbolic.mlp`): constant in ``X``.

    >>> X, J = mlp_input_jacobian(1, 2)
    >>> J
    Matrix([
    [W_{1,1}, W_{2,1}],
    [W_{1,2}, W_{2,2}]])
    >>> bool(J.free_symbols & set(X))
    False
    """
    from .mlp import mlp

    layer = mlp((n, d_in, d_in if d_out is None else d_out))
    return layer.X, _vec(layer.Y).jacobian(_vec(layer.X))
