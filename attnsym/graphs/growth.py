r"""Which growth of Table 1 explains measured path lengths or depths: a decision over the full candidate set.

Table 1 of Vaswani et al. (2017) states growths with their constants: ``O(1)``, ``O(n)``,
``O(n/k)``, ``O(n/r)``, ``O(log_k n)``. Over a short range of ``n`` a least-squares choice
between "constant, logarithmic, linear" is unreliable (``⌈log_5 n⌉`` for ``n ≤ 40`` takes the
values 1, 2, 3 and a line fits it as well as a logarithm). The decision here compares each
candidate *with its constant*:

.. math::

    f_{O(1)} = 0,\quad f_{O(\log_k n)} = \log n / \log k,\quad f_{O(n/k)} = n/(k-1),\quad
    f_{O(n/r)} = n/r,\quad f_{O(n)} = n

(a contiguous kernel of width ``k`` advances ``k − 1`` positions per layer, so the constant of
``O(n/k)`` is ``1/(k − 1)``). The measured values are integers obtained by rounding up a
real-valued count, ``y(n) = ⌈f(n) + c⌉``, so a candidate *explains* the values when some offset
``c`` puts every residual ``y(n) − f(n) − c`` in ``[0, 1)``: when the spread
``max(y − f) − min(y − f)`` is below 1. The decision is the growth class (constant,
logarithmic, linear) shared by every explaining candidate; no explaining candidate, or
explaining candidates of different classes, give ``"undecided"`` — a visible failure, never a
silent guess.

>>> ns = range(2, 41)
>>> import math
>>> decide_growth(ns, [math.ceil(math.log(n, 5) - 1e-12) for n in ns], k=5, r=8).growth
'O(log n)'
>>> decide_growth(ns, [1] * 39, k=5, r=8).explained_by
('O(1)',)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .._checks import positive_int
from ..errors import ShapeError

__all__ = ["CANDIDATES", "GROWTH_CLASS", "GrowthDecision", "decide_growth"]

#: the candidates of Table 1, in the order they are reported
CANDIDATES = ("O(1)", "O(log_k n)", "O(n/k)", "O(n/r)", "O(n)")
#: candidate -> growth class (the class a claim like "O(log_k n)" asserts)
GROWTH_CLASS = {"O(1)": "O(1)", "O(log_k n)": "O(log n)", "O(log n)": "O(log n)", "O(n/k)": "O(n)", "O(n/r)": "O(n)",
                "O(n)": "O(n)"}

_RULE = ("a candidate f explains the values y when max(y − f) − min(y − f) < 1 (y = ⌈f + c⌉ for one offset c); "
         "the growth is the class shared by every explaining candidate, 'undecided' when none explains y or "
         "explaining candidates disagree")


@dataclass(frozen=True)
class GrowthDecision:
    """The outcome of :func:`decide_growth`.

    Attributes
    ----------
    growth : str
        ``"O(1)"``, ``"O(log n)"``, ``"O(n)"`` or ``"undecided"``.
    explained_by : tuple of str
        The candidates of :data:`CANDIDATES` that explain the values.
    spread : dict
        Candidate -> ``max(y − f) − min(y − f)`` (below 1 means it explains the values).
    rule : str
        The decision rule, in words.
    """

    growth: str
    explained_by: tuple[str, ...]
    spread: dict[str, float]
    rule: str = _RULE

    @property
    def decided(self) -> bool:
        """True unless the values are unexplained or explained by candidates of different classes."""
        return self.growth != "undecided"


def _basis(name: str, n: np.ndarray, k: int, r: int) -> np.ndarray:
    return {"O(1)": np.zeros_like(n), "O(log_k n)": np.log(n) / math.log(k), "O(n/k)": n / (k - 1),
            "O(n/r)": n / r, "O(n)": n}[name]


def decide_growth(ns: Iterable[int], values: Iterable[float], *, k: int, r: int) -> GrowthDecision:
    """Decide which candidate growth of Table 1 (with its constant, for kernel ``k`` and window ``r``) explains ``values``.

    Parameters
    ----------
    ns, values : iterables of the same length (at least 3)
        Sequence lengths and the measured integer values (path lengths or depths).
    k : int
        Kernel width of the convolutions (``k ≥ 2``).
    r : int
        Window of restricted self-attention (``r ≥ 1``).

    Examples
    --------
    A contiguous convolution (``k = 3``): ``⌈(n − 1)/2⌉`` is linear, and no other class explains it:

    >>> ns = range(2, 41)
    >>> d = decide_growth(ns, [math.ceil((n - 1) / 2) for n in ns], k=3, r=4)
    >>> d.growth, d.explained_by
    ('O(n)', ('O(n/k)',))

    Too short a range leaves a logarithm and a constant both possible, and says so:

    >>> decide_growth([2, 3, 4], [1, 1, 2], k=3, r=4).growth
    'undecided'
    """
    k = positive_int("k", k)
    r = positive_int("r", r)
    if k < 2:
        raise ShapeError(f"k must be at least 2 (got {k})")
    x = np.asarray(list(ns), dtype=float)
    y = np.asarray(list(values), dtype=float)
    if x.shape != y.shape or x.size < 3:
        raise ShapeError(f"ns and values must have the same length >= 3 (got {x.size} and {y.size})")
    spread = {}
    for name in CANDIDATES:
        residual = y - _basis(name, x, k, r)
        spread[name] = float(residual.max() - residual.min())
    explained = tuple(name for name in CANDIDATES if spread[name] < 1 - 1e-9)
    classes = {GROWTH_CLASS[name] for name in explained}
    growth = classes.pop() if len(classes) == 1 else "undecided"
    return GrowthDecision(growth, explained, spread)
