"""Positional information as floating-point arrays: the numeric twin of :mod:`attnsym.symbolic.positions`.

Written once against the array API (NumPy by default; CuPy and PyTorch through ``xp=`` or
the input's own library). The conventions (positions counted from 0, the base, RoPE's planes
``spec.rope_pairs`` and frequency exponents, ALiBi's slope exponents) are those of
:mod:`attnsym.spec`; this module only evaluates them in floating point:

* :func:`sinusoidal_positions` — the encodings added to ``X``; :func:`sinusoidal_shift` — the
  block rotation ``R_k`` with ``PE(p + k) = R_k PE(p)``;
* :func:`rope_frequencies`, :func:`rope_rotation`, :func:`apply_rope` — RoPE's ``θ_i``, the
  rotation ``R(p θ)`` and the rotated rows (``inverse=True``: ``R(p θ)ᵀ``, the adjoint the
  backward pass needs);
* :func:`alibi_slopes`, :func:`alibi_bias` — ALiBi's slopes and per-head bias ``−m_h |i − j|``.

Angles and slopes are computed in float64 and cast to the requested dtype at the end.
"""

from __future__ import annotations

import functools
import math
import numbers
from types import ModuleType
from typing import Any

import array_api_compat
import numpy as np

from .._checks import positive_int
from .._positions import base_frequencies
from ..errors import ShapeError, SpecError
from ..spec import DEFAULT_POSITION_BASE, AttentionSpec, alibi_slope_exponents, require_rope_spec
from .backend import array_namespace

__all__ = [
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "rope_frequencies",
    "rope_rotation",
    "rope_tables",
    "sinusoidal_positions",
    "sinusoidal_shift",
]


def sinusoidal_positions(n: int, d_model: int, base: int = DEFAULT_POSITION_BASE, *,
                         xp: ModuleType | None = None, dtype: Any = None):
    """Sinusoidal positional encodings ``PE`` of shape ``(n, d_model)``, positions from 0.

    .. math::

        PE_{p, 2i} = \\sin\\!\\big(p / \\text{base}^{2i/d}\\big),\\qquad
        PE_{p, 2i+1} = \\cos\\!\\big(p / \\text{base}^{2i/d}\\big)

    For odd ``d_model`` the last column is an unpaired sine. Twin of
    :func:`attnsym.symbolic.sinusoidal_positions` (exact SymPy), with the same positional
    arguments.

    Parameters
    ----------
    n, d_model : int
        Number of positions and width.
    base : int, default DEFAULT_POSITION_BASE (10000)
        Base of the geometric frequency progression (``AttentionSpec.position_base``), >= 2.
    xp : namespace, optional
        Array namespace to build in (NumPy by default).
    dtype : dtype, optional
        Result dtype (float64 by default); computed in float64 and then cast.

    Returns
    -------
    (n, d_model) array
        Every entry lies in ``[-1, 1]``.

    Raises
    ------
    SpecError
        ``n``, ``d_model`` not positive integers, or ``base`` not an integer >= 2.

    Examples
    --------
    >>> pe = sinusoidal_positions(3, 4)
    >>> pe.shape
    (3, 4)
    >>> np.allclose(pe[1], [np.sin(1), np.cos(1), np.sin(1 / 100), np.cos(1 / 100)])
    True
    """
    n = positive_int("n", n)
    d_model = positive_int("d_model", d_model)
    if not positive_int("base", base) >= 2:
        raise SpecError(f"base must be an integer >= 2 (got {base!r})")
    base = int(base)
    xp = array_namespace() if xp is None else xp
    half = (d_model + 1) // 2
    pos = xp.reshape(xp.arange(n, dtype=xp.float64), (n, 1))  # (n, 1)
    two_i = xp.arange(0, 2 * half, 2, dtype=xp.float64)  # (half,)
    angle = pos * xp.exp(-(two_i / d_model) * math.log(base))  # (n, half)
    pe = xp.reshape(xp.stack([xp.sin(angle), xp.cos(angle)], axis=-1), (n, 2 * half))[:, :d_model]
    return pe if dtype is None else xp.astype(pe, dtype)


def sinusoidal_shift(shift, d_model: int, base: int = DEFAULT_POSITION_BASE, *,
                     xp: ModuleType | None = None, dtype: Any = None):
    """The ``(d_model, d_model)`` block rotation ``R_k`` with ``PE(p + k) = R_k PE(p)`` for every ``p``.

    For the rows of :func:`sinusoidal_positions`: ``PE[p + k] = PE[p] @ R_k.T``. One 2 × 2 block
    ``[[cos ω_i k, sin ω_i k], [−sin ω_i k, cos ω_i k]]`` per ``(sin, cos)`` pair, ``ω_i = base^(-2i/d)``.
    Twin of :func:`attnsym.symbolic.sinusoidal_shift` (exact SymPy, where
    :func:`attnsym.symbolic.prove_sinusoidal_shift` proves the identity).

    Parameters
    ----------
    shift : int or float
        ``k``, the number of positions to shift by (any real number).
    d_model : int
        Width; must be even (an odd width ends in an unpaired sine that no fixed map shifts).
    base : int, default DEFAULT_POSITION_BASE (10000)
        Base of the frequencies, >= 2.
    xp : namespace, optional
        Array namespace to build in (NumPy by default).
    dtype : dtype, optional
        Result dtype (float64 by default); computed in float64 and then cast.

    Raises
    ------
    SpecError
        ``d_model`` odd or not a positive integer, ``base`` not an integer >= 2, ``shift`` not a
        finite real number.

    Examples
    --------
    >>> pe = sinusoidal_positions(10, 4)
    >>> bool(np.allclose(pe[:-3] @ sinusoidal_shift(3, 4).T, pe[3:]))
    True
    """
    if isinstance(shift, bool) or not isinstance(shift, numbers.Real) or not math.isfinite(shift):
        raise SpecError(f"shift must be a finite real number (got {shift!r})")
    d_model = positive_int("d_model", d_model)
    if d_model % 2:
        raise SpecError(f"d_model must be even for a shift matrix: the last column of an odd width is an unpaired "
                        f"sine (got d_model={d_model})")
    if not positive_int("base", base) >= 2:
        raise SpecError(f"base must be an integer >= 2 (got {base!r})")
    xp = array_namespace() if xp is None else xp
    two_i = xp.arange(0, d_model, 2, dtype=xp.float64)  # (d/2,)
    angle = float(shift) * xp.exp(-(two_i / d_model) * math.log(int(base)))  # (d/2,)
    c, s = xp.cos(angle), xp.sin(angle)  # (d/2,)
    blocks = xp.stack([xp.stack([c, s], axis=-1), xp.stack([-s, c], axis=-1)], axis=-2)  # (d/2, 2, 2)
    eye = xp.eye(d_model // 2, dtype=xp.float64)  # (d/2, d/2)
    R = xp.reshape(xp.permute_dims(eye[:, :, None, None] * blocks[:, None, :, :], (0, 2, 1, 3)),
                   (d_model, d_model))  # block (i, i) = blocks[i]
    return R if dtype is None else xp.astype(R, dtype)


def _cast(xp: ModuleType, x, dtype):
    return x if dtype is None else xp.astype(x, dtype)


def rope_frequencies(spec: AttentionSpec, *, xp: ModuleType | None = None, dtype: Any = None):
    """RoPE's frequencies ``θ_i = base^(-2i/d)``, ``d = spec.rotary_dims``, as a ``(d/2,)`` array.

    With ``spec.rope_scaling`` the scaled frequencies of a sequence of ``spec.n`` tokens
    (:class:`~attnsym.spec.RopeScaling`: ``"linear"`` divides every ``θ_i`` by the factor,
    ``"llama3"`` and ``"yarn"`` mix ``θ_i`` and ``θ_i / factor`` by band, ``"longrope"`` divides
    by its short or (beyond ``original_max_position_embeddings`` tokens) long factors,
    ``"dynamic"`` raises the base beyond it). Computed in float64. Twin of
    :func:`attnsym.symbolic.rope_frequencies` (exact).

    Examples
    --------
    >>> rope_frequencies(AttentionSpec(n=2, d_model=4, positions="rope"))
    array([1.  , 0.01])
    >>> rope_frequencies(AttentionSpec(n=2, d_model=4, positions="rope",
    ...                                rope_scaling={"rope_type": "linear", "factor": 4.0}))
    array([0.25  , 0.0025])
    """
    spec = require_rope_spec(spec)
    xp = array_namespace() if xp is None else xp
    scaling = spec.rope_scaling
    n = spec.n if scaling is not None and scaling.rope_type in ("dynamic", "longrope") else 0  # else: one cache entry
    theta = _frequencies(float(spec.position_base), spec.rotary_dims, scaling, n)
    return _cast(xp, xp.asarray(theta, dtype=xp.float64), dtype)


@functools.lru_cache(maxsize=256)
def _frequencies(base: float, rotary_dims: int, scaling, n: int) -> tuple[float, ...]:
    """``θ_i = base^(-2i/rotary_dims)``, scaled for ``n`` tokens: computed once per setting (a model's layers share one).

    The exponents are exact fractions (as :attr:`AttentionSpec.rope_frequency_exponents`); making
    them and the powers for every call was about 5 % of a LLaMA-shaped route.
    """
    if scaling is None:
        return tuple(base_frequencies(base, rotary_dims))
    return tuple(scaling.inverse_frequencies(base, rotary_dims, n))


def _angles(xp: ModuleType, spec: AttentionSpec, positions, device=None):
    """``(..., rows, d/2)`` angles ``p θ_i`` in float64 for positions of shape ``(..., rows)``."""
    theta = rope_frequencies(spec, xp=xp)
    if device is not None:
        theta = array_api_compat.to_device(theta, device)
    return xp.expand_dims(positions, axis=-1) * theta


def _positions_array(xp: ModuleType, positions, rows: int, device):
    if positions is None:
        return xp.arange(rows, dtype=xp.float64, device=device)
    if isinstance(positions, str):
        raise SpecError(f"positions must be integers, one per row (got the string {positions!r})")
    p = xp.asarray(positions, device=device) if array_api_compat.is_array_api_obj(positions) else \
        xp.asarray(list(positions), device=device)
    if p.ndim == 0 or p.shape[-1] != rows:
        raise ShapeError(f"positions must give one position per row of M ({rows}) (got shape {tuple(p.shape)})")
    return xp.astype(p, xp.float64)


def rope_rotation(spec: AttentionSpec, position, *, xp: ModuleType | None = None, dtype: Any = None):
    """The ``(d_k, d_k)`` rotation ``R(p θ)`` of RoPE at one position (column-vector convention).

    Twin of :func:`attnsym.symbolic.rope_rotation`: in each plane ``(a, b, i)`` of
    ``spec.rope_pairs``, ``R[a, a] = R[b, b] = cos(p θ_i)``, ``R[b, a] = −R[a, b] = sin(p θ_i)``.

    Examples
    --------
    >>> R = rope_rotation(AttentionSpec(n=2, d_model=2, positions="rope"), 1)
    >>> bool(np.allclose(R, [[np.cos(1), -np.sin(1)], [np.sin(1), np.cos(1)]]))
    True
    """
    spec = require_rope_spec(spec)
    if isinstance(position, bool) or not isinstance(position, numbers.Real):
        raise SpecError(f"position must be a real number (got {position!r} of type {type(position).__name__})")
    xp = array_namespace() if xp is None else xp
    theta = [float(t) for t in rope_frequencies(spec)]
    rows = [[1.0 if r == c else 0.0 for c in range(spec.d_k)] for r in range(spec.d_k)]
    for a, b, i in spec.rope_pairs:
        c, s_ = math.cos(float(position) * theta[i]), math.sin(float(position) * theta[i])
        rows[a][a], rows[a][b], rows[b][a], rows[b][b] = c, -s_, s_, c
    return _cast(xp, xp.asarray(rows, dtype=xp.float64), dtype)


def rope_tables(spec: AttentionSpec, positions=None, *, rows: int, xp: ModuleType, dtype: Any, device: Any = None):
    """RoPE's ``(cos, sin)`` of the angles ``p θ_i`` at ``rows`` positions, each ``(..., rows, d/2)`` in ``dtype``.

    What :func:`apply_rope` multiplies the rows by: the angles in float64, times the scaling's
    attention factor ``a`` (YaRN, LongRoPE; 1 otherwise), then cast. A forward pass makes them once
    per RoPE setting and hands them to every layer that shares it (``tables=`` of
    :func:`apply_rope`).

    Parameters
    ----------
    spec : AttentionSpec
        With ``positions="rope"``.
    positions : (rows,) or (..., rows) array-like, optional
        The positions; default ``0 … rows − 1``.
    rows : int
        The number of positions.
    xp : module
        The array namespace of the result.
    dtype : dtype
        Of the result (the rows' dtype).

    Examples
    --------
    >>> cos, sin = rope_tables(AttentionSpec(n=2, d_model=2, positions="rope"), rows=2, xp=np, dtype=np.float64)
    >>> cos.shape, bool(np.allclose(sin[:, 0], [0.0, np.sin(1.0)]))
    ((2, 1), True)
    """
    spec = require_rope_spec(spec)
    p = _positions_array(xp, positions, rows, device)
    angles = _angles(xp, spec, p, device)  # (..., rows, d/2), float64
    cos, sin = xp.cos(angles), xp.sin(angles)
    factor = 1.0 if spec.rope_scaling is None else spec.rope_scaling.attention_scale
    if factor != 1.0:  # YaRN's and LongRoPE's attention factor, on cos and sin as transformers applies it
        cos, sin = cos * factor, sin * factor
    return xp.astype(cos, dtype), xp.astype(sin, dtype)


def apply_rope(M, spec: AttentionSpec, positions=None, *, inverse: bool = False, tables=None):
    """Rotate each row of queries or keys by its position: row ``r`` becomes ``R(p_r θ) m_r``.

    Twin of :func:`attnsym.symbolic.apply_rope`. For each plane ``(a, b, i)`` of
    ``spec.rope_pairs``: ``m~_a = m_a cos − m_b sin``, ``m~_b = m_b cos + m_a sin`` with the
    angle ``p θ_i``; coordinates beyond ``spec.rotary_dims`` are copied. With a ``"yarn"`` or
    ``"longrope"`` ``rope_scaling`` the rotated coordinates are also multiplied by its
    attention factor ``a`` (:attr:`~attnsym.spec.RopeScaling.attention_scale`; ``a = 1``
    otherwise). Runs in the library and dtype of ``M`` (angles in float64, then cast). The planes'
    coordinates are read as slices (``rotate_half``: the two halves; ``interleaved``: even and
    odd coordinates), and a NumPy result is written in place into one new array.

    Parameters
    ----------
    M : (..., rows, d_k) array
        Queries or keys of one or several heads (any leading axes, e.g. ``(batch, H, n, d_k)``).
    spec : AttentionSpec
        With ``positions="rope"``.
    positions : (rows,) or (..., rows) array-like, optional
        The position of each row; default ``0 … rows − 1``.
    inverse : bool, default False
        Rotate by ``−p θ`` instead: ``a R(p θ)ᵀ m``, the adjoint of the map (its inverse when
        ``a = 1``), which carries gradients of the rotated rows back to the unrotated ones.
    tables : (cos, sin) arrays, optional
        :func:`rope_tables` of these rows' positions (in ``M``'s dtype, broadcasting against
        ``(..., rows, d/2)``), made once by the caller; ``positions`` is then not read.

    Returns
    -------
    array of the shape, library and dtype of ``M``

    Examples
    --------
    >>> spec = AttentionSpec(n=2, d_model=2, positions="rope")
    >>> out = apply_rope(np.array([[1.0, 0.0], [1.0, 0.0]]), spec)
    >>> bool(np.allclose(out, [[1, 0], [np.cos(1), np.sin(1)]]))
    True
    >>> bool(np.allclose(apply_rope(out, spec, inverse=True), [[1, 0], [1, 0]]))
    True
    """
    spec = require_rope_spec(spec)
    xp = np if isinstance(M, np.ndarray) else array_namespace(M)  # NumPy: no namespace lookup (40 µs a call)
    M = xp.asarray(M)
    if M.ndim < 2 or M.shape[-1] != spec.d_k:
        raise ShapeError(f"M must have shape (..., rows, d_k) with d_k = {spec.d_k} (got {tuple(M.shape)})")
    if tables is None:
        tables = rope_tables(spec, positions, rows=int(M.shape[-2]), xp=xp, dtype=M.dtype,
                             device=array_api_compat.device(M))
    cos, sin = tables
    if inverse:
        sin = -sin
    half, rotary = spec.rotary_dims // 2, spec.rotary_dims
    if spec.rope_pairing == "interleaved":  # planes (2i, 2i+1)
        first, second = slice(0, rotary, 2), slice(1, rotary, 2)
    else:  # rotate_half: planes (i, i + d/2)
        first, second = slice(0, half), slice(half, rotary)
    x_a, x_b = M[..., first], M[..., second]  # (..., rows, d/2)
    if isinstance(M, np.ndarray):
        lead, table = M.shape[:-1], cos.shape[:-1]
        if len(table) > len(lead) or any(t not in (1, m) for m, t in zip(lead[::-1], table[::-1], strict=False)):
            lead = np.broadcast_shapes(lead, table)  # positions with more rows or batch axes than M
        out = np.empty((*lead, spec.d_k), M.dtype)
        o_a, o_b = out[..., first], out[..., second]
        np.multiply(x_a, cos, out=o_a)
        t = x_b * sin
        o_a -= t  # m_a cos − m_b sin
        np.multiply(x_b, cos, out=o_b)
        np.multiply(x_a, sin, out=t)
        o_b += t  # m_b cos + m_a sin
        if rotary < spec.d_k:  # partial rotary: the rest passes through
            out[..., rotary:] = M[..., rotary:]
        return out
    o_a, o_b = x_a * cos - x_b * sin, x_b * cos + x_a * sin
    if spec.rope_pairing == "interleaved":
        rotated = xp.reshape(xp.stack([o_a, o_b], axis=-1), (*o_a.shape[:-1], rotary))
    else:
        rotated = xp.concat([o_a, o_b], axis=-1)
    if rotary < spec.d_k:
        rest = M[..., rotary:]
        rotated = xp.concat([rotated, xp.broadcast_to(rest, (*rotated.shape[:-1], spec.d_k - rotary))], axis=-1)
    return rotated


def alibi_slopes(heads: int, *, xp: ModuleType | None = None, dtype: Any = None):
    """ALiBi's slopes ``m_h = 2^(-e_h)`` for ``heads`` heads (the paper's rule, :func:`attnsym.spec.alibi_slope_exponents`).

    Twin of :func:`attnsym.symbolic.alibi_slopes`.

    Examples
    --------
    >>> alibi_slopes(3)
    array([0.0625    , 0.00390625, 0.25      ])
    """
    xp = array_namespace() if xp is None else xp
    slopes = xp.asarray([2.0 ** -float(e) for e in alibi_slope_exponents(heads)], dtype=xp.float64)
    return _cast(xp, slopes, dtype)


def alibi_bias(spec: AttentionSpec, head: int, positions=None, *, xp: ModuleType | None = None, dtype: Any = None):
    """The ``(n, n)`` ALiBi bias ``−m_h |p_i − p_j|`` of one head (``p_i = i`` by default).

    Twin of :func:`attnsym.symbolic.alibi_bias`.

    Examples
    --------
    >>> alibi_bias(AttentionSpec(n=3, d_model=1, positions="alibi"), 0)
    array([[ 0.        , -0.00390625, -0.0078125 ],
           [-0.00390625,  0.        , -0.00390625],
           [-0.0078125 , -0.00390625,  0.        ]])
    """
    if not isinstance(spec, AttentionSpec) or spec.positions != "alibi":
        got = spec.positions if isinstance(spec, AttentionSpec) else type(spec).__name__
        raise SpecError(f"spec must be an AttentionSpec with positions='alibi' (got {got!r})")
    if not isinstance(head, numbers.Integral) or isinstance(head, bool) or not 0 <= head < spec.heads:
        raise SpecError(f"head must be an integer in 0 … {spec.heads - 1} (got {head!r})")
    xp = array_namespace() if xp is None else xp
    p = _positions_array(xp, positions, spec.n, None)
    slope = 2.0 ** -float(spec.alibi_slope_exponents[int(head)])
    bias = 0.0 - slope * xp.abs(xp.expand_dims(p, axis=-1) - xp.expand_dims(p, axis=-2))  # (n, n), no -0.0
    return _cast(xp, bias, dtype)


def alibi_bias_block(spec: AttentionSpec, i0: int, i1: int, j0: int, j1: int, *, xp: ModuleType, dtype: Any,
                     device: Any = None):
    """Every head's ALiBi bias for queries ``i0:i1`` and keys ``j0:j1``: a ``(H, i1−i0, j1−j0)`` array.

    The block form of :func:`alibi_bias` for the plain (one block) and blockwise paths.

    Examples
    --------
    >>> B = alibi_bias_block(AttentionSpec(n=4, d_model=2, heads=2, positions="alibi"), 2, 4, 0, 4,
    ...                      xp=array_namespace(), dtype=None)
    >>> B.shape, float(B[0, 1, 0])  # head 0, query 3, key 0: -2^-4 * 3
    ((2, 2, 4), -0.1875)
    """
    slopes = alibi_slopes(spec.heads, xp=xp)
    i = xp.reshape(xp.arange(i0, i1, dtype=xp.float64, device=device), (i1 - i0, 1))
    j = xp.reshape(xp.arange(j0, j1, dtype=xp.float64, device=device), (1, j1 - j0))
    if device is not None:
        slopes = array_api_compat.to_device(slopes, device)
    bias = 0.0 - xp.reshape(slopes, (spec.heads, 1, 1)) * xp.abs(i - j)  # (H, bi, bj), no -0.0
    return _cast(xp, bias, dtype)
