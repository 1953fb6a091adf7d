"""Proof that two gradient routes agree: exact, as a polynomial identity or at random rational points."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import sympy as sp

from .._checks import non_negative_int, one_of, positive_int
from ..spec import AttentionSpec
from ._loss import exact_values
from ._rewrite import AtomRewriter
from .backward import gradients
from .cost import check_gradient_spec

__all__ = ["GradientCheck", "check_gradients"]


@dataclass(frozen=True)
class GradientCheck:
    """Outcome of :func:`check_gradients`.

    Attributes
    ----------
    spec : AttentionSpec
    equal : bool
        Whether every entry of the two routes agreed.
    how : str
        ``"identity"`` (each difference reduced to 0 as a polynomial) or ``"points"``
        (exact arithmetic at random rational points).
    entries : int
        Number of gradient entries compared.
    points : int
        Random points used (0 for ``"identity"``).
    mismatches : tuple
        ``(name, i, j)`` of entries that differ (empty when equal).
    routes : tuple of str
        The two methods compared.
    """

    spec: AttentionSpec
    equal: bool
    how: str
    entries: int
    points: int
    mismatches: tuple[tuple[str, int, int], ...] = ()
    routes: tuple[str, str] = ("closed_form", "elementwise")

    def __bool__(self) -> bool:
        return self.equal


def check_gradients(spec: AttentionSpec, wrt: str | Sequence[str] | None = None, *, loss: Any = None,
                    how: str = "auto", points: int = 3, seed: int = 0, against: str = "elementwise",
                    max_terms: float | None = None) -> GradientCheck:
    r"""Prove that the closed-form and the elementwise gradients are equal.

    Both ways are exact (no floating point anywhere):

    * ``how="identity"``: every ``exp(·)`` (and ``sin``/``cos`` of positions) is replaced by an
      independent symbol, every inverse row sum by another (see below), and the difference of
      the two routes is expanded to the zero polynomial in all symbols.
    * ``how="points"``: the same, after substituting random rationals for every input (``x``,
      ``W``, ``g``, …) — at ``points`` independent points; the difference must expand to 0.

    Replacing ``exp(a)`` by ``e_p ** c`` (``a = c p``, ``c`` rational) and ``1/sum_j e_j`` by ``u``
    turns both routes into polynomials; neither route may use a relation between the new
    symbols (``sum_j A_ij = 1``, or anything about ``exp``), so agreeing as polynomials is a
    stronger statement than the one wanted, and it is what each check establishes.

    ``how="auto"`` uses the identity when the layer is tiny (``n * d_model <= 4``, one head),
    else points. A float ``scale`` is checked as the exact rational number the float stores.

    Parameters
    ----------
    spec : AttentionSpec
    wrt, loss, max_terms
        As for :func:`gradients`.
    how : {"auto", "identity", "points"}
    points : int, default 3
    seed : int, default 0
    against : {"elementwise", "matrix"}, default "elementwise"
        The route the closed form is compared with: SymPy's ``.diff`` (independent of every
        backpropagation rule), or the ``MatrixSymbol`` identities evaluated on explicit matrices
        (cheap; it checks the entry-by-entry program against the matrix-level formulas).

    Returns
    -------
    GradientCheck
        Truthy when the routes agree.

    Examples
    --------
    >>> check_gradients(AttentionSpec(n=2, d_model=2, causal=True)).how
    'identity'
    >>> bool(check_gradients(AttentionSpec(n=2, d_model=2, causal=True)))
    True
    """
    spec = check_gradient_spec(spec)
    one_of("how", how, ("auto", "identity", "points"))
    points, seed = positive_int("points", points), non_negative_int("seed", seed)
    one_of("against", against, ("elementwise", "matrix"))
    if how == "auto":
        how = "identity" if spec.n * spec.d_model <= 4 and spec.heads == 1 else "points"
    if isinstance(spec.scale, float):  # check the formulas exactly: a float scale is the rational it stores
        spec = spec.replace(scale=sp.Rational(spec.scale))
    closed = gradients(spec, wrt, loss=loss, method="closed_form", max_terms=max_terms)
    element = gradients(spec, wrt, loss=loss, method=against, max_terms=max_terms)
    entries = sum(len(closed.inputs[k]) for k in closed.wrt)
    rng = random.Random(seed)
    envs: list[dict[sp.Symbol, sp.Expr]] = [{}] if how == "identity" else []
    for _ in range(points if how == "points" else 0):
        values = {name: [[Fraction(rng.randint(-9, 9), rng.randint(1, 5)) for _ in range(m.shape[1])]
                         for _ in range(m.shape[0])] for name, m in closed.arguments.items()}
        envs.append(exact_values(closed.arguments, values))
    mismatches: list[tuple[str, int, int]] = []
    for env in envs:
        rewrite = AtomRewriter(env)
        for name in closed.wrt:
            a, b = closed[name], element[name]
            for idx in range(len(a)):
                where = (name, *divmod(idx, a.shape[1]))
                if where not in mismatches and sp.expand(rewrite(a[idx]) - rewrite(b[idx])) != 0:
                    mismatches.append(where)
    return GradientCheck(spec, not mismatches, how, entries, len(envs) if how == "points" else 0, tuple(mismatches),
                         ("closed_form", against))
