"""The online (running max / running sum) softmax of blockwise attention, proved exact.

Memory-efficient attention ("Flash Attention") never stores a full row of weights. It walks
over the keys in blocks; for each block ``b`` of scores ``s`` and values ``v`` it keeps three
running statistics,

.. math::

    m_b = \\max_j s_j, \\qquad \\ell_b = \\sum_j e^{s_j - m_b}, \\qquad
    o_b = \\sum_j e^{s_j - m_b} v_j ,

and merges two blocks with

.. math::

    m = \\max(m_1, m_2), \\quad \\ell = e^{m_1 - m}\\ell_1 + e^{m_2 - m}\\ell_2, \\quad
    o = e^{m_1 - m} o_1 + e^{m_2 - m} o_2 ,

returning ``o / ℓ``. This module builds both sides in SymPy and proves that ``o / ℓ`` equals
``softmax(s) · v`` over the union of the blocks — for *any* shifts ``m_1, m_2, m`` (the maxima
matter for floating-point range only, not for the algebra), hence in particular for the maxima.
The numeric twin is the blockwise path of :func:`attnsym.numeric.attention` (``block_size=``).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .._checks import boolean
from .._exact import exact, exact_matrix
from ..errors import SpecError

__all__ = ["OnlineSoftmaxProof", "block_statistics", "merge_blocks", "prove_online_softmax"]


@dataclass(frozen=True)
class OnlineSoftmaxProof:
    """Both sides of the online-softmax identity and the verdict.

    Attributes
    ----------
    scores : tuple of sympy.Symbol
        The scores ``s_1 … s_{m+k}`` of one query row (first block, then second block).
    values : sympy.Matrix
        The ``(m+k, d_v)`` values.
    merged : sympy.Matrix
        ``o / ℓ`` after merging the two blocks' running statistics (a ``1 × d_v`` row).
    direct : sympy.Matrix
        ``softmax(s) V`` computed over the union in one go.
    difference : sympy.Matrix
        ``merged − direct`` after simplification (all zeros when the identity holds).
    holds : bool
        Whether every entry of ``difference`` simplified to exactly 0.
    shifts : tuple of sympy.Symbol
        The free shifts ``m_1, m_2, m`` used by the merge (the proof holds for all values).
    """

    scores: tuple[sp.Symbol, ...]
    values: sp.Matrix
    merged: sp.Matrix
    direct: sp.Matrix
    difference: sp.Matrix
    holds: bool
    shifts: tuple[sp.Symbol, ...]


def block_statistics(scores, values, shift):
    """Running statistics ``(m, ℓ, o)`` of one block, relative to the shift ``m``.

    Parameters
    ----------
    scores : sequence of sympy.Expr
        The block's scores ``s_j``.
    values : sympy.Matrix
        ``(len(scores), d_v)``: the block's value rows ``v_j``.
    shift : sympy.Expr
        The shift ``m`` (the block maximum in an implementation; any expression here).

    Returns
    -------
    tuple
        ``(shift, ℓ, o)`` with ``ℓ = Σ exp(s_j − m)`` and ``o = Σ exp(s_j − m) v_j`` (a row).

    Examples
    --------
    >>> s1, s2, m = sp.symbols("s_1 s_2 m")
    >>> _, l, o = block_statistics([s1, s2], sp.Matrix([[1], [2]]), m)
    >>> l
    exp(-m + s_1) + exp(-m + s_2)
    """
    values = exact_matrix("values", values)
    if isinstance(scores, str | bytes) or not hasattr(scores, "__iter__"):
        raise SpecError(f"scores must be a sequence of expressions (got {scores!r})")
    scores = [exact(f"scores[{j}]", s_j, finite=False, error=SpecError) for j, s_j in enumerate(scores)]
    shift = exact("shift", shift)
    if values.rows != len(scores):
        raise SpecError(f"values must have one row per score (got {values.rows} rows for {len(scores)} scores)")
    weights = [sp.exp(s - shift) for s in scores]
    ell = sp.Add(*weights)
    out = sp.zeros(1, values.cols)
    for w, j in zip(weights, range(values.rows), strict=True):
        out += w * values[j, :]
    return shift, ell, out


def merge_blocks(first, second, shift, *, rescale: bool = True):
    """Merge two blocks' ``(m, ℓ, o)`` statistics to a common shift (the online-softmax step).

    ``ℓ = e^{m_1 − m} ℓ_1 + e^{m_2 − m} ℓ_2`` and ``o = e^{m_1 − m} o_1 + e^{m_2 − m} o_2``;
    an implementation uses ``m = max(m_1, m_2)``. ``rescale=False`` drops the factors
    ``e^{m_b − m}`` (a classic bug); the identity then fails unless all shifts are equal.

    Returns
    -------
    tuple
        ``(m, ℓ, o)`` of the union.
    """
    blocks = []
    for label, block in (("first", first), ("second", second)):
        if isinstance(block, str | bytes) or not isinstance(block, tuple | list) or len(block) != 3:
            raise SpecError(f"{label} must be a block's statistics (m, l, o) from block_statistics (got {block!r})")
        m, ell, o = block
        blocks.append((exact(f"{label}[0]", m, finite=False), exact(f"{label}[1]", ell),
                       o if isinstance(o, sp.MatrixBase) else exact_matrix(f"{label}[2]", o).T))
    (m1, l1, o1), (m2, l2, o2) = blocks
    shift = exact("shift", shift, finite=False)
    rescale = boolean("rescale", rescale)
    c1, c2 = (sp.exp(m1 - shift), sp.exp(m2 - shift)) if rescale else (sp.Integer(1), sp.Integer(1))
    return shift, c1 * l1 + c2 * l2, c1 * o1 + c2 * o2


def _exp_normal(expr: sp.Expr) -> sp.Expr:
    """Combine products of exponentials and cancel: the normal form the proof compares."""
    return sp.cancel(sp.powsimp(sp.expand(expr), combine="exp"))


def prove_online_softmax(first: int = 2, second: int = 2, d_v: int = 1, *, rescale: bool = True) -> OnlineSoftmaxProof:
    """Prove that merging two blocks' running statistics gives the softmax over their union.

    Parameters
    ----------
    first, second : int, default 2
        Number of keys in the first and second block.
    d_v : int, default 1
        Width of the values.
    rescale : bool, default True
        Passed to :func:`merge_blocks`; ``False`` checks the buggy merge (which fails).

    Returns
    -------
    OnlineSoftmaxProof
        ``holds`` is True when ``o / ℓ − softmax(s) V`` simplifies to exactly 0 for symbolic
        scores, values and shifts.

    Raises
    ------
    SpecError
        For block sizes or widths that are not positive integers, or too large to expand (> 8).

    Examples
    --------
    >>> proof = prove_online_softmax(2, 1)
    >>> proof.holds
    True
    >>> proof.difference
    Matrix([[0]])
    >>> prove_online_softmax(2, 1, rescale=False).holds
    False
    """
    for name, value in (("first", first), ("second", second), ("d_v", d_v)):
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 8:
            raise SpecError(f"{name} must be an integer between 1 and 8 (got {value!r})")
    total = first + second
    s = sp.symbols(f"s_1:{total + 1}", real=True)
    V = sp.Matrix(total, d_v, lambda i, j: sp.Symbol(f"v_{{{i + 1},{j + 1}}}", real=True))
    m1, m2, m = sp.symbols("m_1 m_2 m", real=True)
    stats1 = block_statistics(s[:first], V[:first, :], m1)
    stats2 = block_statistics(s[first:], V[first:, :], m2)
    _, ell, out = merge_blocks(stats1, stats2, m, rescale=rescale)
    merged = out / ell
    denominator = sp.Add(*[sp.exp(si) for si in s])
    direct = sp.zeros(1, d_v)
    for i in range(total):
        direct += sp.exp(s[i]) / denominator * V[i, :]
    difference = (merged - direct).applyfunc(_exp_normal)
    holds = all(entry == 0 for entry in difference)
    return OnlineSoftmaxProof(tuple(s), V, merged, direct, difference, holds, (m1, m2, m))
