"""Exact invariances of a spec's attention layer: the key bias, and inputs whose tokens are all equal.

* :func:`bias_score_derivatives` — ``∂S_ij/∂b`` for every entry ``b`` of the query or key bias.
  For the key bias each row of it is constant over the attended keys, so ``∂A/∂b_K =
  J_softmax · (row-constant) = 0`` (the softmax Jacobian annihilates ``1``) and ``A``, ``Y`` and
  every loss are free of ``b_K``; for the query bias the rows vary with the keys.
* :func:`equal_token_gradients` — ``∂⟨G, Y⟩/∂W`` for symbolic weights and a symbolic upstream
  gradient ``G`` at an input whose rows are all one symbolic vector ``x``: all scores of a row
  are equal, the routing is uniform and the gradients of ``W_Q``, ``W_K`` vanish exactly.

>>> from attnsym.spec import AttentionSpec
>>> grads = equal_token_gradients(AttentionSpec(n=2, d_model=1))
>>> grads["W_Q"], grads["W_K"]
(Matrix([[0]]), Matrix([[0]]))
"""

from __future__ import annotations

import sympy as sp

from .._checks import one_of
from ..errors import SpecError
from ..spec import AttentionSpec
from .matrices import attention

__all__ = ["bias_score_derivatives", "equal_token_gradients", "rows_constant"]


def bias_score_derivatives(spec: AttentionSpec, which: str = "b_K") -> list[list[sp.ImmutableMatrix]]:
    """``∂S^{(h)}/∂b`` for each head ``h`` and each entry ``b`` of ``which`` (``"b_K"`` or ``"b_Q"``).

    ``spec.bias`` must be true. Masked score entries (``-oo``) are reported as 0 (they do not
    depend on anything). Returns ``[[dS_h/db_1, dS_h/db_2, ...] for h in heads]``.

    >>> spec = AttentionSpec(n=2, d_model=1, bias=True)
    >>> [rows_constant(D) for D in bias_score_derivatives(spec, "b_K")[0]]
    [True]
    >>> [rows_constant(D) for D in bias_score_derivatives(spec, "b_Q")[0]]
    [False]
    """
    one_of("which", which, ("b_K", "b_Q"))
    if not isinstance(spec, AttentionSpec):
        raise SpecError(f"spec must be an AttentionSpec (got {type(spec).__name__})")
    if not spec.bias:
        raise SpecError(f"the spec has no biases (got bias={spec.bias}); pass AttentionSpec(..., bias=True)")
    sym = attention(spec)
    bias = getattr(sym, which)
    out = []
    for S in sym.S_heads:
        finite = S.applyfunc(lambda e: sp.Integer(0) if e in (sp.oo, -sp.oo) else e)
        out.append([finite.diff(b).applyfunc(sp.expand) for b in bias])
    return out


def rows_constant(D: sp.MatrixBase, allowed=None) -> bool:
    """True when every row of ``D`` has one value over its allowed entries (exactly, after expansion).

    ``allowed[i][j]`` false skips an entry (a masked key); by default every entry counts.
    """
    for i in range(D.rows):
        values = {sp.expand(D[i, j]) for j in range(D.cols) if allowed is None or allowed[i][j]}
        if len(values) > 1:
            return False
    return True


def equal_token_gradients(spec: AttentionSpec) -> dict[str, sp.ImmutableMatrix]:
    """Exact ``∂⟨G, Y⟩/∂W`` for every weight, at ``X = 1 xᵀ`` (every token the same vector ``x``).

    Weights and ``G`` are symbolic; ``x`` is the symbolic vector ``(x_0, …)``. The weights are
    independent of ``X``, so substituting ``X = 1 xᵀ`` before differentiating is exact.
    Returns name -> gradient matrix (the shape of the weight).
    """
    if not isinstance(spec, AttentionSpec):
        raise SpecError(f"spec must be an AttentionSpec (got {type(spec).__name__})")
    sym = attention(spec)
    x = sp.symbols(f"x_0:{spec.d_model}", real=True)
    same = {sym.X[i, j]: x[j] for i in range(spec.n) for j in range(spec.d_model)}
    Y = sym.Y.xreplace(same)
    G = sp.Matrix(Y.rows, Y.cols, lambda i, j: sp.Symbol(f"g_{{{i},{j}}}", real=True))
    loss = sum(G[i, j] * Y[i, j] for i in range(Y.rows) for j in range(Y.cols))
    weights = {"W_Q": sym.W_Q, "W_K": sym.W_K, "W_V": sym.W_V, "W_O": sym.W_O, "b_Q": sym.b_Q, "b_K": sym.b_K}
    return {name: sp.ImmutableMatrix(W.rows, W.cols, [sp.expand(sp.diff(loss, w)) for w in W])
            for name, W in weights.items() if W is not None}
