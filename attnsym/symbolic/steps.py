"""A titled equation, the unit of every derivation (forward steps and backward steps alike).

:class:`Step` is plain data — a title, one SymPy equation or a tuple of them, an explanation
and the general formula — so the SymPy layer can build steps and :mod:`attnsym.derivation`
can assemble and render them, without either importing the other's presentation.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..errors import SpecError

__all__ = ["Step", "latex_expression"]


def latex_expression(expr) -> str:
    r"""LaTeX of one SymPy object (an ``Eq`` of matrices prints as ``lhs = [matrix]``).

    Examples
    --------
    >>> latex_expression(sp.Eq(sp.Symbol("y"), sp.Symbol("x_{1,2}") ** 2))
    'y = x_{1,2}^{2}'
    """
    return sp.latex(expr)


def _check_equation(equation):
    if isinstance(equation, list):
        equation = tuple(equation)
    if isinstance(equation, tuple) and len(equation) == 1:
        equation = equation[0]
    items = equation if isinstance(equation, tuple) else (equation,)
    if not items:
        raise SpecError("equation must be a SymPy object or a non-empty tuple of them (got an empty tuple)")
    for item in items:
        if not isinstance(item, (sp.Basic, sp.MatrixBase)):
            raise SpecError(f"equation must be a SymPy object (an Eq) or a tuple of them (got {item!r} of type "
                            f"{type(item).__name__})")
    return equation


@dataclass(frozen=True)
class Step:
    r"""One titled step of a derivation.

    Parameters
    ----------
    title : str
        Short title, plain text (e.g. ``"Queries"``).
    equation : SymPy object or tuple of SymPy objects
        Usually ``sp.Eq(lhs, rhs)``; a tuple for a system of equations.
    explanation : str
        One line of plain text; ``$...$`` marks inline LaTeX math.
    formula : str, optional
        The general (matrix) formula in LaTeX, shown before the explicit equation,
        e.g. ``r"Q = X W_Q"``.

    Examples
    --------
    >>> x = sp.Symbol("x")
    >>> step = Step("Square", sp.Eq(sp.Symbol("y"), x**2), "The output is the square of the input.")
    >>> step.equations
    (Eq(y, x**2),)
    >>> step.to_latex()
    'y = x^{2}'
    """

    title: str
    equation: sp.Basic | tuple[sp.Basic, ...]
    explanation: str
    formula: str | None = None

    def __post_init__(self) -> None:
        for name in ("title", "explanation"):
            if not isinstance(getattr(self, name), str):
                raise SpecError(f"{name} must be a string (got {getattr(self, name)!r})")
        if self.formula is not None and not isinstance(self.formula, str):
            raise SpecError(f"formula must be a LaTeX string or None (got {self.formula!r})")
        object.__setattr__(self, "equation", _check_equation(self.equation))

    @property
    def equations(self) -> tuple:
        """The equation(s) as a tuple."""
        return self.equation if isinstance(self.equation, tuple) else (self.equation,)

    def to_latex(self) -> str:
        """The equations in LaTeX, one per line (joined by ``\\\\``)."""
        return r" \\ ".join(latex_expression(e) for e in self.equations)
