"""The two-token example, solved exactly: one set of weights, two inputs, two routings.

A static (MLP-style) token mixer ``y_1 = c_1 x_1 + c_2 x_2`` uses the same coefficients, e.g.
``(0.7, 0.3)``, whatever the tokens are. Attention computes them: the first query's routing is
``(a_11, a_12) = softmax(s_11, s_12)``, and since ``a_11 / a_12 = exp(s_11 − s_12)`` a target
routing ``(p, 1 − p)`` is reached exactly when the logit gap is ``s_11 − s_12 = log(p / (1 − p))``.

:func:`solve_two_token` fixes the weights (``W_Q = W_K = W_V = I₂``, scale ``1/√2``), takes the
input family ``x_1 = (1, 0)``, ``x_2 = (t, 1)`` and solves that linear equation for ``t`` with
SymPy, one input per target routing. The routings are then recomputed from the exact inputs
and simplify to the target rationals; the static mixer's coefficients, read off as
``∂y_1/∂x_j``, are the same for every input.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import sympy as sp

from .._exact import exact
from ..errors import SpecError

__all__ = ["TwoTokenExample", "solve_two_token"]


@dataclass(frozen=True)
class TwoTokenExample:
    """Exact inputs and weights that realise given routings of the first token.

    Attributes
    ----------
    weights : dict
        ``"W_Q"``, ``"W_K"``, ``"W_V"`` (exact ``2 × 2``) and ``"scale"``.
    parameter : sympy.Symbol
        The input parameter ``t`` solved for.
    solutions : tuple of sympy.Expr
        The value of ``t`` per target (e.g. ``1 + √2·log 9 = 1 + 2√2·log 3``).
    inputs : tuple of sympy.Matrix
        The ``2 × 2`` inputs ``X`` (rows are tokens), one per target.
    targets : tuple of tuple of sympy.Rational
        The requested routings.
    routings : tuple of sympy.Matrix
        Row 1 of ``A(X)`` recomputed from each input (simplified, exact).
    mlp_mixing : sympy.Matrix
        The static mixer's ``2 × 2`` coefficient matrix.
    mlp_routings : tuple of sympy.Matrix
        ``(∂y_1/∂x_1, ∂y_1/∂x_2)`` of the static mixer evaluated at each input.
    """

    weights: dict
    parameter: sp.Symbol
    solutions: tuple
    inputs: tuple
    targets: tuple
    routings: tuple
    mlp_mixing: sp.Matrix
    mlp_routings: tuple

    @property
    def routings_match(self) -> bool:
        """Every recomputed routing equals its target exactly."""
        return all(
            all(sp.simplify(r[j] - t[j]) == 0 for j in range(2)) for r, t in zip(self.routings, self.targets, strict=True)
        )

    @property
    def routings_differ(self) -> bool:
        """The attention routings of the inputs are not all equal."""
        return len({tuple(r) for r in self.routings}) > 1

    @property
    def mlp_unchanged(self) -> bool:
        """The static mixer uses the same coefficients for every input."""
        return len({tuple(r) for r in self.mlp_routings}) == 1


def _rational(value, name: str) -> sp.Rational:
    r = exact(name, value, floats="rational")
    if not isinstance(r, sp.Rational):
        raise SpecError(f"{name} must be a number (got {value!r} of type {type(value).__name__})")
    return r


def _routing_pair(pair, name: str) -> tuple[sp.Rational, sp.Rational]:
    try:
        a, b = pair
    except (TypeError, ValueError):
        raise SpecError(f"{name} must be a pair of weights (a, b) (got {pair!r})") from None
    a, b = _rational(a, name), _rational(b, name)
    if not (0 < a < 1 and 0 < b < 1) or a + b != 1:
        raise SpecError(f"{name} must be two weights in (0, 1) summing to 1 (got {pair!r})")
    return a, b


def solve_two_token(routings=((Fraction(1, 10), Fraction(9, 10)), (Fraction(19, 20), Fraction(1, 20))),
                    mixing=(Fraction(7, 10), Fraction(3, 10))) -> TwoTokenExample:
    """Construct inputs that give each requested routing of token 1, with one fixed set of weights.

    Parameters
    ----------
    routings : sequence of (a, b), default ((1/10, 9/10), (19/20, 1/20))
        Target weights of token 1 on tokens 1 and 2; each in (0, 1), summing to 1. Floats are
        read as the decimal they print as (``0.1`` is ``1/10``).
    mixing : (c_1, c_2), default (7/10, 3/10)
        The static mixer's coefficients for token 1 (token 2 uses them swapped).

    Returns
    -------
    TwoTokenExample

    Raises
    ------
    SpecError
        A routing that is not a pair of weights in (0, 1) summing to 1.

    Examples
    --------
    >>> ex = solve_two_token()
    >>> ex.solutions
    (1 + 2*sqrt(2)*log(3), -sqrt(2)*log(19) + 1)
    >>> [list(r) for r in ex.routings]
    [[1/10, 9/10], [19/20, 1/20]]
    >>> ex.routings_match, ex.mlp_unchanged, [list(r) for r in ex.mlp_routings]
    (True, True, [[7/10, 3/10], [7/10, 3/10]])
    """
    targets = tuple(_routing_pair(pair, f"routings[{i}]") for i, pair in enumerate(routings))
    if not targets:
        raise SpecError("routings must contain at least one target pair (got none)")
    c1, c2 = _routing_pair(mixing, "mixing")
    t = sp.Symbol("t", real=True)
    W_Q = W_K = W_V = sp.eye(2)
    scale = 1 / sp.sqrt(2)

    def routing(X: sp.Matrix) -> sp.Matrix:
        S = (X * W_Q) * (X * W_K).T * scale
        # softmax written as a_j = 1 / Σ_k e^(s_k − s_j) (the same number): the exponents expand to logarithms of
        # rationals, which SymPy evaluates exactly; simplify only if a weight is not a plain number then
        a = [1 / sp.Add(*(sp.exp(sp.expand(S[0, k] - S[0, j])) for k in range(2))) for j in range(2)]
        return sp.Matrix([[w if w.is_Rational else sp.simplify(w) for w in a]])

    X_of_t = sp.Matrix([[1, 0], [t, 1]])
    S = (X_of_t * W_Q) * (X_of_t * W_K).T * scale
    solutions, inputs, recomputed = [], [], []
    for a, b in targets:
        gap = sp.log(a / b)  # a / b = exp(s_11 - s_12)
        # s_11 − s_12 is linear in t (X = [[1, 0], [t, 1]], identity weights): its one root, exactly
        equation = sp.expand(S[0, 0] - S[0, 1] - gap)
        slope = sp.diff(equation, t)
        if slope == 0 or sp.diff(slope, t) != 0:  # pragma: no cover - fixed by the construction above
            raise AssertionError(f"s_11 - s_12 is not linear in t: {equation}")
        value = sp.expand(-equation.subs(t, 0) / slope)
        X = X_of_t.subs(t, value)
        solutions.append(value)
        inputs.append(X)
        recomputed.append(routing(X))
    C = sp.Matrix([[c1, c2], [c2, c1]])
    Xs = sp.Matrix(2, 2, sp.symbols("x_1:3_1:3", real=True))
    Y = C * Xs
    # dy_1/dx_j: coefficient of token j's first feature in y_1's first feature
    jac_row = sp.Matrix([[sp.diff(Y[0, 0], Xs[j, 0]) for j in range(2)]])
    mlp_rows = tuple(jac_row.subs(dict(zip(Xs, X, strict=True))) for X in inputs)
    return TwoTokenExample(
        weights={"W_Q": W_Q, "W_K": W_K, "W_V": W_V, "scale": scale},
        parameter=t,
        solutions=tuple(solutions),
        inputs=tuple(inputs),
        targets=targets,
        routings=tuple(recomputed),
        mlp_mixing=C,
        mlp_routings=mlp_rows,
    )
