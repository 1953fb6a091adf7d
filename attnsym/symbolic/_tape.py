"""A straight-line program of SymPy assignments: the shared subexpressions of a derivation.

Backpropagation through attention reuses every forward quantity many times (each entry of
``A`` appears in ``dV``, ``dA``, ``dS``, ``dQ``, ``dK`` …). Writing each intermediate entry
once as a named assignment, ``t = expr`` with ``expr`` built from earlier names, keeps every
expression small: building it costs a few SymPy constructor calls, and the program *is* the
common-subexpression elimination that ``lambdify`` needs. The explicit expressions (in the
input symbols only) are recovered by substituting the assignments in order; the results share
their subtrees, so this too stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import sympy as sp

__all__ = ["Tape"]


class Tape:
    """An ordered list of assignments ``symbol = expression`` over input symbols.

    Examples
    --------
    >>> x, y = sp.symbols("x y")
    >>> tape = Tape()
    >>> s = tape.emit(x + y)
    >>> p = tape.emit(s * s)
    >>> tape.explicit([p])[0]
    (x + y)**2
    >>> [str(e) for _, e in tape.assignments]
    ['x + y', '_t0**2']
    """

    def __init__(self) -> None:
        self.assignments: list[tuple[sp.Symbol, sp.Expr]] = []
        #: rows of a softmax, ``(scores, exponentials)`` as tape symbols, for a max-shifted compilation
        self.softmax_rows: list[tuple[list[sp.Expr], list[sp.Expr]]] = []
        self._tag = "_t"  # names are local to one program
        self._explicit: dict[sp.Symbol, sp.Expr] = {}
        self._done = 0

    def __len__(self) -> int:
        return len(self.assignments)

    def emit(self, expr: sp.Expr) -> sp.Expr:
        """Record ``expr`` as a new assignment and return its symbol (atoms are returned as they are)."""
        expr = sp.sympify(expr)
        if expr.is_Atom:
            return expr
        symbol = sp.Symbol(f"{self._tag}{len(self.assignments)}", real=True)
        self.assignments.append((symbol, expr))
        return symbol

    def emit_matrix(self, rows: int, cols: int, entry) -> sp.ImmutableMatrix:
        """A matrix whose entry ``(i, j)`` is ``emit(entry(i, j))``."""
        return sp.ImmutableMatrix(rows, cols, [self.emit(entry(i, j)) for i in range(rows) for j in range(cols)])

    def _expand_all(self) -> dict[sp.Symbol, sp.Expr]:
        explicit = self._explicit
        for symbol, expr in self.assignments[self._done :]:
            explicit[symbol] = expr.xreplace(explicit)
        self._done = len(self.assignments)
        return explicit

    def explicit(self, exprs: Iterable[sp.Expr]) -> list[sp.Expr]:
        """The given tape expressions written in the input symbols only (shared subtrees)."""
        explicit = self._expand_all()
        return [sp.sympify(e).xreplace(explicit) for e in exprs]

    def needed(self, outputs: Sequence[sp.Expr]) -> list[tuple[sp.Symbol, sp.Expr]]:
        """The assignments ``outputs`` depend on, in order (dead code removed)."""
        wanted: set[sp.Symbol] = set()
        for out in outputs:
            wanted |= out.free_symbols
        keep = []
        for symbol, expr in reversed(self.assignments):
            if symbol in wanted:
                keep.append((symbol, expr))
                wanted |= expr.free_symbols
        keep.reverse()
        return keep

    def evaluate(self, outputs: Sequence[sp.Expr], values: Mapping[sp.Symbol, sp.Expr]) -> list[sp.Expr]:
        """Exact values of ``outputs`` with the input symbols replaced by ``values``."""
        env = dict(values)
        for symbol, expr in self.needed(outputs):
            env[symbol] = expr.xreplace(env)
        return [sp.sympify(out).xreplace(env) for out in outputs]
