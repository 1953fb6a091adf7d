r"""Position schemes as exact SymPy objects: sinusoids, rotary embeddings (RoPE), ALiBi biases.

The conventions (position ``p`` counted from 0, RoPE's planes and frequencies, ALiBi's slopes)
are those of :mod:`attnsym.spec`; this module only evaluates them exactly:

* :func:`sinusoidal_positions` — the ``(n, d_model)`` matrix ``PE`` added to ``X``;
  :func:`sinusoidal_shift` — the fixed block rotation ``R_k`` with ``PE(p + k) = R_k PE(p)``,
  and :func:`prove_sinusoidal_shift`, the proof for symbolic ``p``, ``k`` and frequency;
* :func:`rope_frequencies`, :func:`rope_rotation`, :func:`apply_rope` — ``θ_i = base^{-2i/d}``,
  the rotation :math:`R(p\theta)` and the rotated rows ``R(p θ) q_p`` (``p`` may be a symbol);
* :func:`alibi_slopes`, :func:`alibi_bias` — ``m_h = 2^{-e_h}`` and the bias ``−m_h |i − j|``.

The proofs that use them (scores depend only on ``n − m``) are in
:mod:`attnsym.symbolic.rope_proofs`.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import sympy as sp

from .._checks import integer_at_least, is_int, positive_int
from .._exact import exact, exact_matrix
from ..errors import ShapeError, SpecError
from ..spec import DEFAULT_POSITION_BASE, AttentionSpec, alibi_slope_exponents, require_rope_spec
from ._guard import enforce_limit

__all__ = [
    "SinusoidalShiftProof",
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "prove_sinusoidal_shift",
    "rope_attention_factor",
    "rope_frequencies",
    "rope_rotation",
    "sinusoidal_positions",
    "sinusoidal_shift",
]


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


def _pair_rotation(angle: sp.Expr) -> sp.Matrix:
    """The 2 × 2 map of one ``(sin, cos)`` pair under a shift by ``angle = ω k``."""
    return sp.Matrix([[sp.cos(angle), sp.sin(angle)], [-sp.sin(angle), sp.cos(angle)]])


def sinusoidal_shift(shift, d_model: int, base: int = DEFAULT_POSITION_BASE) -> sp.ImmutableMatrix:
    r"""The ``(d_model, d_model)`` matrix ``R_k`` that shifts sinusoidal encodings by ``k`` positions.

    ``PE(p + k) = R_k PE(p)`` for every position ``p`` (column vectors; for the rows of
    :func:`sinusoidal_positions`, ``PE[p + k] = PE[p] R_kᵀ``). ``R_k`` is block diagonal, one
    rotation per ``(sin, cos)`` pair of frequency :math:`\omega_i = base^{-2i/d}`:

    .. math::

        R_k^{(i)} = \begin{pmatrix} \cos \omega_i k & \sin \omega_i k \\
                                    -\sin \omega_i k & \cos \omega_i k \end{pmatrix},

    so it depends on ``k`` only, never on ``p`` (:func:`prove_sinusoidal_shift` proves it).

    Parameters
    ----------
    shift : int or SymPy expression
        ``k``; a symbol gives the matrix for a symbolic shift.
    d_model : int
        Width of the encodings; must be even (for odd ``d_model`` the last column is an unpaired
        sine, and no fixed linear map of ``PE(p)`` gives ``sin(ω (p + k))``).
    base : int, default DEFAULT_POSITION_BASE (10000)
        Base of the frequencies (``AttentionSpec.position_base``).

    Returns
    -------
    sympy.ImmutableMatrix
        Orthogonal: ``R_kᵀ R_k = I``.

    Raises
    ------
    SpecError
        ``d_model`` odd or not a positive integer, ``base`` not an integer >= 2, ``shift`` not an
        integer or a real SymPy expression.

    See Also
    --------
    attnsym.numeric.sinusoidal_shift : the floating-point twin.

    Examples
    --------
    >>> sinusoidal_shift(1, 2)
    Matrix([
    [ cos(1), sin(1)],
    [-sin(1), cos(1)]])
    >>> p, k = sp.symbols("p k", real=True)
    >>> shifted = sinusoidal_shift(k, 4) * sinusoidal_positions(1, 4, offset=p).T  # R_k PE(p), symbolic p and k
    >>> [sp.expand(v, trig=True) for v in shifted - sinusoidal_positions(1, 4, offset=p + k).T]
    [0, 0, 0, 0]
    """
    k = _position(shift, "shift")
    d_model = positive_int("d_model", d_model)
    if d_model % 2:
        raise SpecError(f"d_model must be even for a shift matrix: the last column of an odd width is an unpaired "
                        f"sine (got d_model={d_model})")
    base = positive_int("base", base)
    if base < 2:
        raise SpecError(f"base must be an integer >= 2 (got {base!r})")
    R = sp.zeros(d_model, d_model)
    for i in range(d_model // 2):
        R[2 * i:2 * i + 2, 2 * i:2 * i + 2] = _pair_rotation(k / sp.Integer(base) ** sp.Rational(2 * i, d_model))
    return sp.ImmutableMatrix(R)


@dataclass(frozen=True)
class SinusoidalShiftProof:
    """The proof that shifting a sinusoidal encoding is a fixed rotation of each ``(sin, cos)`` pair.

    Attributes
    ----------
    position, shift, frequency : sympy.Symbol
        ``p`` and ``k`` (real) and ``ω`` (positive), all symbolic.
    pair : sympy.ImmutableMatrix
        ``pe_ω(p) = (sin ωp, cos ωp)ᵀ``.
    rotation : sympy.ImmutableMatrix
        ``R_k(ω)``, the block of :func:`sinusoidal_shift` for frequency ``ω``.
    shifted : sympy.ImmutableMatrix
        ``pe_ω(p + k)``.
    holds : bool
        ``R_k pe_ω(p) − pe_ω(p + k)`` expands (trigonometric addition formulas) to exactly 0.
    independent_of_p : bool
        ``p`` is not a free symbol of ``R_k``: the same matrix for every position.
    orthogonal : bool
        ``R_kᵀ R_k = I`` exactly.
    similarity : sympy.Expr
        ``pe_ω(p) · pe_ω(p + k)``, simplified: ``cos(ω k)``, a function of the distance only.
    """

    position: sp.Symbol
    shift: sp.Symbol
    frequency: sp.Symbol
    pair: sp.ImmutableMatrix
    rotation: sp.ImmutableMatrix
    shifted: sp.ImmutableMatrix
    holds: bool
    independent_of_p: bool
    orthogonal: bool
    similarity: sp.Expr


def _trig_zero(expr: sp.Expr) -> bool:
    """Exactly whether a polynomial in sines and cosines of linear forms is 0: as exponentials it is a Laurent
    polynomial in ``exp(i·a)`` for the atoms ``a``, zero exactly when it expands to 0 (simplify reaches the same
    answers through trigsimp's heuristics, about 8x slower here)."""
    return sp.expand(sp.expand(expr).rewrite(sp.exp)) == 0


def prove_sinusoidal_shift() -> SinusoidalShiftProof:
    r"""Prove ``pe_ω(p + k) = R_k(ω) pe_ω(p)`` for symbolic ``p``, ``k`` and ``ω``, with ``R_k`` free of ``p``.

    The property Vaswani et al. (2017) chose sinusoids for ("for any fixed offset k, PE_{pos+k}
    can be represented as a linear function of PE_{pos}"), proved exactly per frequency pair;
    :func:`sinusoidal_shift` stacks the pairs of one width.

    Returns
    -------
    SinusoidalShiftProof
        ``holds``, ``independent_of_p`` and ``orthogonal`` are all True.

    Examples
    --------
    >>> proof = prove_sinusoidal_shift()
    >>> proof.holds, proof.independent_of_p, proof.orthogonal
    (True, True, True)
    >>> proof.rotation
    Matrix([
    [ cos(k*omega), sin(k*omega)],
    [-sin(k*omega), cos(k*omega)]])
    >>> proof.similarity
    cos(k*omega)
    """
    p, k = sp.symbols("p k", real=True)
    w = sp.Symbol("omega", positive=True)
    pair = sp.Matrix([sp.sin(w * p), sp.cos(w * p)])
    R = _pair_rotation(w * k)
    shifted = sp.Matrix([sp.sin(w * (p + k)), sp.cos(w * (p + k))])
    holds = all(_trig_zero(v) for v in (R * pair - shifted))
    orthogonal = all(_trig_zero(v) for v in (R.T * R - sp.eye(2)))
    similarity = (pair.T * shifted)[0]
    if _trig_zero(similarity - sp.cos(w * k)):  # the closed form, proved; else the product as it stands
        similarity = sp.cos(w * k)
    return SinusoidalShiftProof(position=p, shift=k, frequency=w, pair=sp.ImmutableMatrix(pair),
                                rotation=sp.ImmutableMatrix(R), shifted=sp.ImmutableMatrix(shifted), holds=bool(holds),
                                independent_of_p=p not in R.free_symbols, orthogonal=bool(orthogonal),
                                similarity=similarity)


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

    With ``spec.rope_scaling`` the scaled frequencies (:class:`~attnsym.spec.RopeScaling`); the
    ``"llama3"`` rule's smoothed band holds ``π`` exactly (its bands are decided in float64, as
    the numeric twin and transformers decide them). A non-integral ``position_base`` is a SymPy
    ``Float``.

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
    >>> rope_frequencies(AttentionSpec(n=2, d_model=4, positions="rope", rope_scaling={"type": "linear", "factor": 4.0}))
    (1/4, 1/400)
    """
    spec = require_rope_spec(spec)
    base = sp.Integer(spec.position_base) if is_int(spec.position_base) else sp.Float(spec.position_base)
    scaling = spec.rope_scaling
    if scaling is not None and scaling.rope_type == "dynamic" and spec.n > int(scaling.original_max_position_embeddings or 0):
        f, L, d = _spec_number(scaling.factor), sp.Integer(scaling.original_max_position_embeddings or 0), spec.rotary_dims
        base = base * (f * spec.n / L - (f - 1)) ** sp.Rational(d, d - 2)
    theta = [base ** sp.Rational(-e.numerator, e.denominator) for e in spec.rope_frequency_exponents]
    if scaling is None or scaling.rope_type == "dynamic":
        return tuple(theta)
    factor = _spec_number(scaling.factor)
    if scaling.rope_type == "linear":
        return tuple(t / factor for t in theta)
    if scaling.rope_type == "longrope":
        ext = scaling.long_factor if scaling.uses_long_factors(spec.n) else scaling.short_factor
        return tuple(t / _spec_number(e) for t, e in zip(theta, ext or (), strict=True))
    if scaling.rope_type == "yarn":  # the ramp's bounds come from logarithms: decided in float64, as the numeric twin
        lo, hi = (_spec_number(b) for b in scaling.yarn_bounds(float(spec.position_base), spec.rotary_dims))
        ramp = [sp.Min(sp.Max((i - lo) / (hi - lo), 0), 1) for i in range(len(theta))]
        return tuple(t / factor * r + t * (1 - r) for t, r in zip(theta, ramp, strict=True))
    low, high = _spec_number(scaling.low_freq_factor), _spec_number(scaling.high_freq_factor)
    L = sp.Integer(scaling.original_max_position_embeddings or 0)
    out = []
    for t in theta:  # the band is decided in float64, as the numeric twin and transformers decide it
        band = scaling.llama3_band(float(t))
        if band == "low":
            out.append(t / factor)
        elif band == "high":
            out.append(t)
        else:
            smooth = (L * t / (2 * sp.pi) - low) / (high - low)
            out.append((1 - smooth) * t / factor + smooth * t)
    return tuple(out)


def rope_attention_factor(spec: AttentionSpec) -> sp.Expr:
    r"""The factor on the rotated coordinates of queries and keys: 1 but for YaRN and LongRoPE.

    YaRN's default :math:`0.1 \ln(\text{factor}) + 1` (or the ratio of two such with ``mscale`` and
    ``mscale_all_dim``) and LongRoPE's :math:`\sqrt{1 + \ln \text{factor} / \ln L}` exactly; a
    given ``attention_factor`` as the spec's number. Twin of
    :attr:`attnsym.spec.RopeScaling.attention_scale`.

    Examples
    --------
    >>> rope_attention_factor(AttentionSpec(n=2, d_model=4, positions="rope", rope_scaling={
    ...     "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}))
    log(4)/10 + 1
    """
    scaling = require_rope_spec(spec).rope_scaling
    if scaling is None or scaling.rope_type not in ("yarn", "longrope"):
        return sp.Integer(1)
    if scaling.attention_factor is not None:
        return _spec_number(scaling.attention_factor)
    f = _spec_number(scaling.factor)
    if scaling.rope_type == "yarn":
        def m(s) -> sp.Expr:
            return sp.Integer(1) if scaling.factor <= 1 else sp.Rational(1, 10) * s * sp.log(f) + 1
        if scaling.mscale and scaling.mscale_all_dim:
            return m(_spec_number(scaling.mscale)) / m(_spec_number(scaling.mscale_all_dim))
        return m(sp.Integer(1))
    if scaling.factor <= 1:
        return sp.Integer(1)
    return sp.sqrt(1 + sp.log(f) / sp.log(sp.Integer(scaling.original_max_position_embeddings or 0)))


def _spec_number(value) -> sp.Expr:
    """An integral float as an ``Integer``, another float as a ``Float`` (the spec's numbers, not user text)."""
    return sp.Integer(int(value)) if float(value).is_integer() else sp.Float(float(value))


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
    factor = rope_attention_factor(spec)
    out = [list(M.row(r)) for r in range(rows)]
    for r, p in enumerate(positions):
        for a, b, i in spec.rope_pairs:
            c, s = factor * sp.cos(p * theta[i]), factor * sp.sin(p * theta[i])
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
    if not isinstance(spec, AttentionSpec) or not spec.alibi_slope_exponents:  # empty unless positions='alibi'
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
