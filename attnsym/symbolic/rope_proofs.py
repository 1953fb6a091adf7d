r"""Exact proofs about relative positions: RoPE scores depend only on ``n − m``.

With rotary embeddings (:mod:`attnsym.spec` conventions) a head's rotated query at position
``m`` and key at position ``n`` have the dot product

.. math::

    \big(R(m\theta) q\big)^\top \big(R(n\theta) k\big) = q^\top R(m\theta)^\top R(n\theta)\, k
    = q^\top R\big((n-m)\theta\big)\, k ,

because every plane rotation satisfies :math:`R(\alpha)^\top R(\beta) = R(\beta - \alpha)`.
:func:`prove_rope_relative` checks this identity for symbolic positions ``m, n`` and a
generic (symbolic) ``q, k`` by expanding the trigonometric functions of sums; the same route
with the absolute sinusoids shows where it fails. :func:`prove_shift_invariance` adds one
symbolic offset ``t`` to every position of a whole layer's scores.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..errors import SpecError
from ..spec import AttentionSpec
from .matrices import attention, softcap_scores
from .naming import input_symbols
from .operations import scores
from .position_hooks import position_hooks
from .positions import rope_rotation

__all__ = ["RelativeProof", "prove_rope_relative", "prove_shift_invariance"]


def _reduce_trig(expr: sp.Expr) -> sp.Expr:
    """``expr`` with sines and cosines of sums expanded and ``sin² + cos² = 1`` applied.

    After ``expand_trig`` the expression is a polynomial in ``sin(u)``, ``cos(u)`` for atomic
    angles ``u``; its remainder modulo ``sin(u)² + cos(u)² − 1`` (one relation per angle, a
    Gröbner basis since the relations share no variables) is 0 exactly when the identity
    follows from the angle-sum formulas and Pythagoras, which is how every rotation identity
    here holds.
    """
    expr = sp.expand(sp.expand_trig(sp.expand(expr)))
    angles = sorted({f.args[0] for f in expr.atoms(sp.sin, sp.cos)}, key=sp.default_sort_key)
    if not angles:
        return expr
    s = sp.symbols(f"_s0:{len(angles)}")
    c = sp.symbols(f"_c0:{len(angles)}")
    poly = expr.xreplace({**{sp.sin(u): si for u, si in zip(angles, s, strict=True)},
                          **{sp.cos(u): ci for u, ci in zip(angles, c, strict=True)}})
    relations = [si**2 + ci**2 - 1 for si, ci in zip(s, c, strict=True)]
    # every other symbol is a generator too, so the coefficients are numbers: with the inputs as
    # coefficients SymPy works in its expression domain and simplifies each one (3x slower here);
    # the relations stay a Gröbner basis (their leading terms s_i² share no variable)
    rest = sorted(poly.free_symbols - {*s, *c}, key=sp.default_sort_key)
    # irrational constants (the scale 1/√d_k) would put the coefficients in SymPy's expression domain,
    # which simplifies every coefficient (~2x slower); as fresh generators they leave integer coefficients.
    # A zero remainder then is zero for every value of them, so for theirs: the identity is proved. A
    # nonzero one may still vanish by a relation among the constants (r² = 2): decided exactly below.
    constants = sorted({a for a in poly.atoms(sp.Pow) if a.is_number and not a.is_Rational}, key=sp.default_sort_key)
    if constants:
        r = sp.symbols(f"_r0:{len(constants)}")
        generic = poly.xreplace(dict(zip(constants, r, strict=True)))
        _, remainder = sp.reduced(generic, relations, *s, *c, *rest, *r, order="lex")
        if remainder == 0:
            return sp.Integer(0)
    _, remainder = sp.reduced(poly, relations, *s, *c, *rest, order="lex")
    back = {**{si: sp.sin(u) for u, si in zip(angles, s, strict=True)},
            **{ci: sp.cos(u) for u, ci in zip(angles, c, strict=True)}}
    return sp.expand(remainder).xreplace(back)


def _is_zero(expr: sp.Expr) -> bool:
    """Exact zero test for sums of products of sin/cos of linear combinations of symbols."""
    return _reduce_trig(expr) == 0


@dataclass(frozen=True)
class RelativeProof:
    """The outcome of :func:`prove_rope_relative` or :func:`prove_shift_invariance`.

    Attributes
    ----------
    spec : AttentionSpec
    lhs, rhs : SymPy expression or Matrix
        The two sides compared (for a layer: scores at shifted and at unshifted positions).
    holds : bool
        ``lhs − rhs`` expands to exactly 0.
    residual : SymPy expression
        ``lhs − rhs`` after expansion (0 when it holds); for a failure, a witness.
    relative : SymPy expression, optional
        For :func:`prove_rope_relative`: the score as a function ``g(q, k, Δ)`` of ``Δ = n − m``.
    """

    spec: AttentionSpec
    lhs: object
    rhs: object
    holds: bool
    residual: object
    relative: object = None

    def equation(self) -> sp.Eq:
        """``lhs = rhs`` as an unevaluated SymPy equation (for reports)."""
        return sp.Eq(self.lhs, self.rhs, evaluate=False)


def prove_rope_relative(spec: AttentionSpec) -> RelativeProof:
    r"""Prove :math:`(R(m\theta)q)\cdot(R(n\theta)k) = q^\top R((n-m)\theta)\,k` for symbolic ``m, n``.

    ``q`` and ``k`` are one head's generic query and key (symbols ``q_{1,j}``, ``k_{1,j}``),
    ``m`` and ``n`` integer symbols. The right side depends on the positions only through
    ``n − m``.

    Parameters
    ----------
    spec : AttentionSpec
        With ``positions="rope"``; its ``d_k``, ``rope_pairing``, ``rotary_pct`` and
        ``position_base`` decide the rotation.

    Returns
    -------
    RelativeProof
        ``lhs`` is the score at positions ``m, n``; ``rhs`` the same as a function of ``n − m``.

    Examples
    --------
    >>> proof = prove_rope_relative(AttentionSpec(n=2, d_model=2, positions="rope"))
    >>> proof.holds
    True
    >>> proof.relative  # g(q, k, Δ) with Δ = n - m
    k_{1,1}*(q_{1,1}*cos(Delta) + q_{1,2}*sin(Delta)) + k_{1,2}*(-q_{1,1}*sin(Delta) + q_{1,2}*cos(Delta))
    """
    if not isinstance(spec, AttentionSpec) or not position_hooks(spec).rotates:
        raise SpecError(f"spec must be an AttentionSpec with positions='rope' (got {spec!r})")
    m, n = sp.symbols("m n", integer=True)
    q = input_symbols("Q", (1, spec.d_k)).T  # (d_k, 1)
    k = input_symbols("K", (1, spec.d_k)).T
    lhs = sp.Add(*(rope_rotation(spec, m) * q).multiply_elementwise(rope_rotation(spec, n) * k))
    delta = sp.Symbol("Delta", integer=True)
    relative = (q.T * rope_rotation(spec, delta) * k)[0, 0]
    rhs = relative.xreplace({delta: n - m})
    residual = _reduce_trig(lhs - rhs)
    return RelativeProof(spec=spec, lhs=lhs, rhs=rhs, holds=residual == 0, residual=residual, relative=relative)


def _shifted_scores(spec: AttentionSpec, offset: sp.Expr) -> tuple[tuple[sp.ImmutableMatrix, ...], tuple]:
    """Every head's scores with position ``p`` replaced by ``p + offset``, and the unshifted ones.

    RoPE and ALiBi act after the projections, so their scores are written in generic per-head
    queries and keys (symbols ``q_{i,j}``, ``k_{i,j}``: a proof for every ``Q``, ``K`` covers
    every ``X W``); the sinusoids enter before the projections and need ``X`` and ``W``.
    """
    n, dk = spec.n, spec.d_k
    scale, allowed = spec.scale_expr, spec.allowed
    hooks = position_hooks(spec)
    shifted, plain = [], []
    if hooks.adds_vectors:  # hook (a): the vectors enter before the projections
        if spec.qk_norm:
            raise SpecError("the sinusoidal shift proof writes the scores in X and W without a QK-norm "
                            "(got qk_norm=True)")
        sym = attention(spec)
        X_t = hooks.encode_inputs(sym.X, offset=offset)
        Q_t, K_t = X_t * sym.W_Q, X_t * sym.W_K
        for hh in range(spec.heads):
            cols, kv = slice(hh * dk, (hh + 1) * dk), spec.kv_head_of(hh)
            S_t = scores(Q_t[:, cols], K_t[:, kv * dk:(kv + 1) * dk], scale, allowed)
            shifted.append(S_t if spec.softcap is None else softcap_scores(S_t, spec.softcap))
            plain.append(sym.S_heads[hh])
        return tuple(shifted), tuple(plain)
    Q, K = input_symbols("Q", (n, dk)), input_symbols("K", (n, dk))
    at_t = [offset + p for p in range(n)]
    for hh in range(spec.heads):  # hooks (b) and (c): rotations and biases at the shifted positions
        S_t = scores(hooks.rotate(Q, at_t), hooks.rotate(K, at_t), scale, allowed)
        S = scores(hooks.rotate(Q), hooks.rotate(K), scale, allowed)
        bias_t, bias = hooks.score_bias(hh, at_t), hooks.score_bias(hh)
        if bias_t is not None and bias is not None:
            S_t, S = sp.ImmutableMatrix(S_t + bias_t), sp.ImmutableMatrix(S + bias)
        shifted.append(S_t)
        plain.append(S)
    return tuple(shifted), tuple(plain)


def prove_shift_invariance(spec: AttentionSpec) -> RelativeProof:
    """Add one symbolic offset ``t`` to every position; are all of the layer's scores unchanged?

    Exactly for RoPE (scores depend on ``n − m`` only) and ALiBi (the bias depends on
    ``i − j``), and trivially without positions; not with absolute sinusoids, whose scores
    then depend on ``t`` (``residual`` is the first score that does). Masks do not move:
    the same tokens at shifted positions.

    Parameters
    ----------
    spec : AttentionSpec
        Small sizes (the scores are written out in ``x``, ``W`` and ``t``), no biases; masked
        scores are skipped (a mask stays tied to the token indices).

    Returns
    -------
    RelativeProof
        ``lhs``: the scores of head 0 at positions ``t, …, t + n − 1``; ``rhs``: at ``0, …, n − 1``.

    Examples
    --------
    >>> prove_shift_invariance(AttentionSpec(n=2, d_model=2, positions="rope")).holds
    True
    >>> prove_shift_invariance(AttentionSpec(n=2, d_model=2, positions="sinusoidal")).holds
    False
    """
    if not isinstance(spec, AttentionSpec):
        raise SpecError(f"spec must be an AttentionSpec (got {spec!r} of type {type(spec).__name__})")
    if spec.bias:
        raise SpecError("prove_shift_invariance takes a spec without biases (got bias=True)")
    t = sp.Symbol("t", integer=True)
    shifted, plain = _shifted_scores(spec, t)
    residual = sp.Integer(0)
    for S_t, S in zip(shifted, plain, strict=True):
        for a, b in zip(S_t, S, strict=True):
            if b == -sp.oo:  # masked: the mask stays with the indices
                continue
            residual = _reduce_trig(a - b)
            if residual != 0:
                break
        if residual != 0:
            break
    return RelativeProof(spec=spec, lhs=shifted[0], rhs=plain[0], holds=residual == 0, residual=residual)
