r"""Position schemes as exact SymPy objects: sinusoids, rotary embeddings (RoPE), ALiBi biases.

The conventions (position ``p`` counted from 0, RoPE's planes and frequencies, ALiBi's slopes)
are those of :mod:`attnsym.spec`; this module only evaluates them exactly:

* :func:`sinusoidal_positions` — the ``(n, d_model)`` matrix ``PE`` added to ``X``;
* :func:`rope_frequencies`, :func:`rope_rotation`, :func:`apply_rope` — ``θ_i = base^{-2i/d}``,
  the rotation :math:`R(p\theta)` and the rotated rows ``R(p θ) q_p`` (``p`` may be a symbol);
* :func:`alibi_slopes`, :func:`alibi_bias` — ``m_h = 2^{-e_h}`` and the bias ``−m_h |i − j|``.

The proofs that use them (scores depend only on ``n − m``) are in
:mod:`attnsym.symbolic.rope_proofs`.
"""

from __future__ import annotations

import numbers

import sympy as sp

from .._checks import integer_at_least, is_int
from .._exact import exact, exact_matrix
from ..errors import ShapeError, SpecError
from ..spec import DEFAULT_POSITION_BASE, AttentionSpec, alibi_slope_exponents, require_rope_spec
from .cost import enforce_limit

__all__ = ["alibi_bias", "alibi_slopes", "apply_rope", "rope_frequencies", "rope_rotation", "sinusoidal_positions"]


_TERMS_PER_PE_ENTRY = 100


def sinusoidal_positions(n: int, d_model: int, base: int = DEFAULT_POSITION_BASE, *, offset=0,
                         max_terms: float | None = None) -> sp.ImmutableMatrix:
    r"""The ``(n, d_model)`` sinusoidal position matrix of Vaswani et al. (2017), exactly.

    .. math::

        PE_{pos, 2i} = \sin\!\left(\frac{pos}{base^{2i/d}}\right), \qquad
        PE_{pos, 2i+1} = \cos\!\left(\frac{pos}{base^{2i/d}}\right),

    with positions ``pos = 0, …, n-1`` (row ``pos``) and ``d = d_model``. For odd
    ``d_model`` the last column is a sine.

    Parameters
    ----------
    n : int
        Number of positions (rows).
    d_model : int
        Width (columns).
    base : int, default DEFAULT_POSITION_BASE (10000)
        Base of the frequencies (``AttentionSpec.position_base``).
    offset : int or SymPy expression, default 0
        Row ``r`` encodes position ``r + offset`` (a symbol ``t`` gives shifted positions).

    Returns
    -------
    sympy.ImmutableMatrix
        Exact entries such as ``sin(1/100)``; every value lies in ``[-1, 1]``.

    See Also
    --------
    attnsym.numeric.sinusoidal_positions : the floating-point twin.

    Examples
    --------
    >>> sinusoidal_positions(2, 4)
    Matrix([
    [     0,      1,          0,          1],
    [sin(1), cos(1), sin(1/100), cos(1/100)]])
    """
    n = integer_at_least("n", n, 1)
    d_model = integer_at_least("d_model", d_model, 1)
    base = integer_at_least("base", base, 2)
    shift = _position(offset, "offset")
    # an exact entry sin(p / base^(2i/d)) costs SymPy about as much as 100 terms of the forward pass
    # (measured: n=10**5, d_model=4, i.e. 400 000 entries, took 559 s): weigh entries accordingly
    enforce_limit(n * d_model * _TERMS_PER_PE_ENTRY, max_terms,
                  what=f"symbolic positional encodings for n={n}, d_model={d_model}")

    def entry(pos: int, col: int):
        i2 = col - col % 2  # 2i
        angle = (pos + shift) / sp.Integer(base) ** sp.Rational(i2, d_model)
        return sp.sin(angle) if col % 2 == 0 else sp.cos(angle)

    return sp.ImmutableMatrix(n, d_model, entry)



def _position(value, name: str = "position") -> sp.Expr:
    """An integer or a SymPy expression (a symbol ``m``); strings are never parsed."""
    if isinstance(value, sp.Basic) or is_int(value):
        value = exact(name, value)
        if not isinstance(value, sp.Expr) or value.is_real is False:
            raise SpecError(f"{name} must be an integer or a real SymPy expression (got {value!r})")
        return value
    raise SpecError(f"{name} must be an integer or a real SymPy expression such as sp.Symbol('m') "
                    f"(got {value!r} of type {type(value).__name__})")


def rope_frequencies(spec: AttentionSpec) -> tuple[sp.Expr, ...]:
    r"""The rotary frequencies :math:`\theta_i = \text{base}^{-2i/d}` exactly, ``d = spec.rotary_dims``.

    Parameters
    ----------
    spec : AttentionSpec
        With ``positions="rope"`` (base ``spec.position_base``).

    Returns
    -------
    tuple of SymPy numbers, one per rotation plane ``i = 0 … d/2 − 1``

    See Also
    --------
    attnsym.numeric.rope_frequencies : the floating-point twin.

    Examples
    --------
    >>> rope_frequencies(AttentionSpec(n=2, d_model=4, positions="rope"))
    (1, 1/100)
    """
    spec = require_rope_spec(spec)
    base = sp.Integer(spec.position_base)
    return tuple(base ** sp.Rational(-e.numerator, e.denominator) for e in spec.rope_frequency_exponents)


def rope_rotation(spec: AttentionSpec, position) -> sp.ImmutableMatrix:
    r"""The ``(d_k, d_k)`` rotation :math:`R(p\theta)` RoPE applies to a head's query or key at ``position``.

    In each plane ``(a, b, i)`` of ``spec.rope_pairs``: ``R[a, a] = R[b, b] = cos(p θ_i)``,
    ``R[b, a] = sin(p θ_i)``, ``R[a, b] = −sin(p θ_i)``; the identity on the coordinates that
    are not rotated (``rotary_pct < 1``). It acts on column vectors, ``q~_p = R(p θ) q_p``.

    Parameters
    ----------
    spec : AttentionSpec
        With ``positions="rope"``.
    position : int or SymPy expression
        ``p``; a symbol gives the rotation for a symbolic position.

    Returns
    -------
    sympy.ImmutableMatrix
        Orthogonal, ``R(mθ)ᵀ R(nθ) = R((n − m)θ)``.

    Examples
    --------
    >>> m = sp.Symbol("m", integer=True)
    >>> rope_rotation(AttentionSpec(n=2, d_model=2, positions="rope"), m)
    Matrix([
    [cos(m), -sin(m)],
    [sin(m),  cos(m)]])
    """
    spec = require_rope_spec(spec)
    p = _position(position)
    theta = rope_frequencies(spec)
    R = sp.eye(spec.d_k)
    for a, b, i in spec.rope_pairs:
        angle = p * theta[i]
        R[a, a], R[a, b], R[b, a], R[b, b] = sp.cos(angle), -sp.sin(angle), sp.sin(angle), sp.cos(angle)
    return sp.ImmutableMatrix(R)


def apply_rope(M: sp.MatrixBase, spec: AttentionSpec, positions=None) -> sp.ImmutableMatrix:
    r"""Rotate row ``r`` of a head's queries or keys ``M`` by its position: row ``r`` becomes :math:`R(p_r\theta)\, m_r`.

    Entrywise, for each plane ``(a, b, i)``: ``m~_a = m_a cos(p θ_i) − m_b sin(p θ_i)`` and
    ``m~_b = m_b cos(p θ_i) + m_a sin(p θ_i)``; the other coordinates are copied.

    Parameters
    ----------
    M : (rows, d_k) SymPy Matrix
        One head's queries or keys, one token per row.
    spec : AttentionSpec
        With ``positions="rope"``.
    positions : sequence of int or SymPy expressions, optional
        The position of each row; default ``0, 1, …, rows − 1``.

    Returns
    -------
    sympy.ImmutableMatrix

    Raises
    ------
    ShapeError
        ``M`` is not a matrix with ``d_k`` columns, or ``positions`` has the wrong length.

    Examples
    --------
    >>> spec = AttentionSpec(n=2, d_model=2, positions="rope")
    >>> apply_rope(sp.Matrix([[1, 0], [1, 0]]), spec)
    Matrix([
    [     1,      0],
    [cos(1), sin(1)]])
    """
    spec = require_rope_spec(spec)
    if not isinstance(M, sp.MatrixBase) or M.shape[1] != spec.d_k:
        got = M.shape if isinstance(M, sp.MatrixBase) else type(M).__name__
        raise ShapeError(f"M must be a SymPy Matrix with d_k = {spec.d_k} columns (got {got})")
    M = exact_matrix("M", M)
    rows = M.shape[0]
    if positions is None:
        positions = range(rows)
    positions = [_position(p, "positions[]") for p in positions]
    if len(positions) != rows:
        raise ShapeError(f"positions must give one position per row of M ({rows}) (got {len(positions)})")
    theta = rope_frequencies(spec)
    out = [list(M.row(r)) for r in range(rows)]
    for r, p in enumerate(positions):
        for a, b, i in spec.rope_pairs:
            c, s = sp.cos(p * theta[i]), sp.sin(p * theta[i])
            out[r][a] = M[r, a] * c - M[r, b] * s
            out[r][b] = M[r, b] * c + M[r, a] * s
    return sp.ImmutableMatrix(out)


def alibi_slopes(heads: int) -> tuple[sp.Expr, ...]:
    """ALiBi's slopes :math:`m_h = 2^{-e_h}` exactly, for ``heads`` heads (the paper's rule, :mod:`attnsym.spec`).

    Examples
    --------
    >>> alibi_slopes(4)
    (1/4, 1/16, 1/64, 1/256)
    >>> alibi_slopes(3)
    (1/16, 1/256, 1/4)
    """
    return tuple(sp.Integer(2) ** sp.Rational(-e.numerator, e.denominator) for e in alibi_slope_exponents(heads))


def alibi_bias(spec: AttentionSpec, head: int, positions=None) -> sp.ImmutableMatrix:
    r"""The ``(n, n)`` ALiBi bias of one head, :math:`B_h[i, j] = -m_h |p_i - p_j|`, added to its scaled scores.

    With the default positions ``p_i = i``; for the causal layers of the paper only ``j ≤ i``
    is used, where it is ``−m_h (i − j)``.

    Parameters
    ----------
    spec : AttentionSpec
        With ``positions="alibi"``.
    head : int
        ``0 … heads − 1``.
    positions : sequence of n ints or SymPy expressions, optional
        The positions of the tokens (default ``0 … n − 1``); shifted positions ``t + i`` give
        the same bias.

    Examples
    --------
    >>> alibi_bias(AttentionSpec(n=3, d_model=2, heads=2, positions="alibi"), 0)
    Matrix([
    [    0, -1/16,  -1/8],
    [-1/16,     0, -1/16],
    [ -1/8, -1/16,     0]])
    """
    if not isinstance(spec, AttentionSpec) or spec.positions != "alibi":
        got = spec.positions if isinstance(spec, AttentionSpec) else type(spec).__name__
        raise SpecError(f"spec must be an AttentionSpec with positions='alibi' (got {got!r})")
    if not isinstance(head, numbers.Integral) or isinstance(head, bool) or not 0 <= head < spec.heads:
        raise SpecError(f"head must be an integer in 0 … {spec.heads - 1} (got {head!r})")
    slope = alibi_slopes(spec.heads)[int(head)]
    enforce_limit(spec.n * spec.n, None, what=f"the symbolic ALiBi bias for n={spec.n}")
    p = [_position(v, "positions[]") for v in (range(spec.n) if positions is None else positions)]
    if len(p) != spec.n:
        raise ShapeError(f"positions must give n = {spec.n} positions (got {len(p)})")
    return sp.ImmutableMatrix(spec.n, spec.n, lambda i, j: -slope * sp.Abs(p[i] - p[j]))
