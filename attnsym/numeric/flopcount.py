"""Operation counts by brute force: a reference that attnsym's own counters did not write.

:func:`contraction_multiplications` performs the contraction with NumPy on object arrays whose
entries count every scalar multiplication NumPy asks of them — no formula, the multiplications
that actually happen. :func:`decode_step_multiplications` adds up the contractions of one causal
decoding step, with and without a key/value cache, so that the counts that
:mod:`attnsym.numeric.kvcache` records and the closed form of :mod:`attnsym.symbolic.opcount`
can both be checked against it. Cost: one Python call per multiplication (keep sizes small).

>>> contraction_multiplications("ik,jk->ij", (5, 3), (5, 3))  # Q Kᵀ: n² d
75
"""

from __future__ import annotations

import numpy as np

from .._checks import boolean, positive_int

__all__ = ["contraction_multiplications", "decode_step_multiplications"]


class _Counted:
    """A scalar that counts the multiplications it takes part in (sums are free)."""

    __slots__ = ()
    count = 0

    def __mul__(self, other):
        _Counted.count += 1
        return self

    __rmul__ = __mul__

    def __add__(self, other):
        return self

    __radd__ = __add__


def contraction_multiplications(subscripts: str, *shapes: tuple[int, ...]) -> int:
    """Scalar multiplications NumPy performs for the contraction ``subscripts`` of operands of ``shapes``."""
    operands = [np.full(tuple(s), _Counted(), dtype=object) for s in shapes]
    before = _Counted.count
    np.einsum(subscripts, *operands, optimize=False)
    return _Counted.count - before


def decode_step_multiplications(t: int, d_model: int, heads: int, d_k: int, *, cached: bool,
                                output_projection: bool = True) -> int:
    """Multiplications of decoding step ``t`` (1-based) of one causal attention layer, counted by NumPy.

    With the cache: project the new token (``x_t W_Q``, ``x_t W_K``, ``x_t W_V``), score it against
    ``t`` cached keys and mix ``t`` cached values per head, then ``W_O``. Without: the same for all
    ``t`` query rows of the prefix (``t × t`` scores per head). ``d_v = d_k``.

    >>> decode_step_multiplications(3, 4, 2, 2, cached=True)  # 3·4·4 + 2·(3·2 + 3·2) + 4·4
    88
    """
    t, d, h, dk = (positive_int(name, v) for name, v in (("t", t), ("d_model", d_model), ("heads", heads), ("d_k", d_k)))
    cached = boolean("cached", cached)
    rows = 1 if cached else t
    hd = h * dk
    total = 3 * contraction_multiplications("id,dk->ik", (rows, d), (d, hd))  # W_Q, W_K, W_V
    total += h * contraction_multiplications("ik,jk->ij", (rows, dk), (t, dk))  # scores, per head
    total += h * contraction_multiplications("ij,jk->ik", (rows, t), (t, dk))  # mixing, per head
    if output_projection:
        total += contraction_multiplications("ik,kd->id", (rows, hd), (hd, d))
    return total
