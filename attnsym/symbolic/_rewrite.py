"""Rewriting SymPy expression DAGs: substitution that visits each shared subtree once, and the atom rewriter.

:func:`memo_replace` is ``expr.xreplace(mapping)`` as a DAG walk (the gradient programs share
their subtrees heavily; a tree walk would visit them again and again). :class:`AtomRewriter`
turns the equality of two gradient routes into a polynomial identity (used by
:func:`~attnsym.symbolic.check_gradients`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import sympy as sp

__all__ = ["AtomRewriter", "memo_replace"]


def memo_replace(expr: sp.Basic, mapping: Mapping[sp.Basic, sp.Basic], memo: dict,
                  rebuild: Callable[[sp.Basic, tuple], sp.Basic] | None = None) -> sp.Basic:
    """``expr.xreplace(mapping)`` that visits each shared subtree once (a DAG walk, not a tree walk).

    ``rebuild(node, new_args)`` builds a node from its rewritten arguments; by default the
    node's own constructor (and the node itself when nothing changed).
    """
    stack = [expr]
    while stack:
        node = stack[-1]
        if node in memo:
            stack.pop()
            continue
        if node in mapping:
            memo[node] = mapping[node]
            stack.pop()
            continue
        pending = [a for a in node.args if a not in memo]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        new_args = tuple(memo[a] for a in node.args)
        if rebuild is not None:
            memo[node] = rebuild(node, new_args)
        else:
            memo[node] = node.func(*new_args) if new_args != node.args else node
    return memo[expr]


class AtomRewriter:
    """Rewrite an expression so that equality of the two routes becomes a polynomial identity.

    Walks the expression DAG once (memoised), replacing the input symbols found in ``env``
    (a random point, or nothing), and then the transcendental atoms by independent symbols:

    * ``exp(a)`` -> ``e_p ** c`` where ``a = c p`` with ``c`` rational and ``p`` primitive
      (so ``exp(2 S) = exp(S)**2``, which SymPy creates on its own, stays consistent);
    * ``sin(a)``, ``cos(a)`` (positions) -> a symbol keyed by ``a``;
    * ``(row sum)**(-k)`` -> ``u ** k`` with ``u`` keyed by the expanded row sum.

    Neither route uses a relation between these atoms (``sum_j A_ij = 1``, ``exp`` being
    an exponential), so the routes agree as functions of them exactly when they agree at all,
    and ``expand`` of the difference must give 0.
    """

    def __init__(self, env: Mapping[sp.Basic, sp.Basic] | None = None) -> None:
        self.env = dict(env or {})
        self.table: dict[tuple, sp.Symbol] = {}
        self.memo: dict = {}

    def _symbol(self, key: tuple) -> sp.Symbol:
        if key not in self.table:
            self.table[key] = sp.Symbol(f"_e{len(self.table)}")
        return self.table[key]

    def __call__(self, expr: sp.Basic) -> sp.Expr:
        return memo_replace(expr, self.env, self.memo, self._rebuild)

    def _rebuild(self, node: sp.Basic, args: tuple) -> sp.Basic:
        if isinstance(node, sp.exp):
            content, prim = sp.expand(args[0]).as_content_primitive()
            if prim.could_extract_minus_sign():
                content, prim = -content, -prim
            return self._symbol(("exp", prim)) ** content
        if isinstance(node, (sp.sin, sp.cos)):
            return self._symbol((node.func.__name__, sp.expand(args[0])))
        if node.is_Pow and args[1].is_Integer and args[1] < 0 and args[0].is_Add:
            base = sp.expand(args[0])
            if base.free_symbols:
                return self._symbol(("inv", base)) ** (-args[1])
            return sp.radsimp(base ** args[1])
        return node.func(*args) if args != node.args else node
