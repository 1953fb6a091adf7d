"""Which attention patterns can a width ``d_k`` reach? Bhojanapalli et al.'s low-rank bottleneck, exactly and in float64.

Softmax ignores a constant added to a row, so a pattern ``A`` is reachable with width ``d_k`` iff
some row constants ``c`` give ``rank(log A + c 1ᵀ) ≤ d_k``. :func:`study` returns a
:class:`BottleneckResult`:

* for ``softmax(3·I_n)`` (``n = 3``, and 4 in full mode): whether the Gröbner basis of the
  ``(d_k + 1)``-minors of ``3I + c 1ᵀ`` is {1} (no ``c`` reaches rank ``d_k``) at the claimed
  ``d_k = n − below``, and the row shift of
  :func:`attnsym.symbolic.identifiability.singular_row_shift` that reaches rank ``n − 1``;
* the rank of :func:`attnsym.symbolic.scores` of integer ``Q, K`` (n = 5) and of
  :func:`attnsym.numeric.scores` of Gaussian ones (n = 32) for each ``d_k``;
* the pattern for ``n = 6`` rebuilt through the numeric scores and softmax with ``d_k = n − 1``,
  and the singular values the figure draws.

The claim ``low-rank-bottleneck`` judges it; :func:`attnsym.plots.literature_structure.bottleneck_figure`
draws it.

>>> no_shift_reaches(3 * sp.eye(3), 1), no_shift_reaches(3 * sp.eye(3), 2)
(True, False)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import sympy as sp

from ..numeric import scores as numeric_scores
from ..numeric import softmax as numeric_softmax
from ..symbolic import identifiability as exact_id
from ..symbolic.operations import scores as symbolic_scores
from ._streams import Streams

__all__ = ["FIGURE_N", "BottleneckResult", "RankRow", "Reach", "no_shift_reaches", "study"]

#: the size of the rebuilt pattern and of the figure
FIGURE_N = 6
#: the sizes of the exact and the float64 rank tables
EXACT_RANK_N, NUMERIC_RANK_N = 5, 32


@dataclass(frozen=True)
class Reach:
    """``softmax(3·I_n)``: out of reach for every ``d_k ≤ claimed`` (Gröbner basis {1}); the row shift ``shift`` that
    brings its scores to rank ``n − 1``, and whether it does (``reachable_n1``)."""

    n: int
    claimed: int
    unreachable: bool
    shift: tuple[sp.Expr, ...]
    reachable_n1: bool


@dataclass(frozen=True)
class RankRow:
    """The rank of ``c·QKᵀ`` for ``n`` tokens and width ``d_k``, exact (integer Q, K) or float64 (Gaussian)."""

    n: int
    d_k: int
    rank: int
    exact: bool

    @property
    def full(self) -> bool:
        """The rank is ``min(d_k, n)``."""
        return self.rank == min(self.d_k, self.n)


@dataclass(frozen=True)
class BottleneckResult:
    """What :func:`study` found: a :class:`Reach` per ``n``, the rank tables, the ``n = 6`` pattern rebuilt with
    ``d_k = n − 1`` (``rebuild_gap`` its largest gap from ``softmax(3I)``) and the singular values of ``3I`` and of
    ``3I + c 1ᵀ`` with the best ``c``."""

    reach: tuple[Reach, ...]
    ranks: tuple[RankRow, ...]
    target: np.ndarray
    rebuild_gap: float
    singular_plain: tuple[float, ...]
    singular_shifted: tuple[float, ...]


def no_shift_reaches(S0: sp.Matrix, rank: int) -> bool:
    """True when no row constants ``c`` give ``rank(S0 + c 1ᵀ) ≤ rank``: the (rank+1)-minors' Gröbner basis is {1}."""
    n = S0.shape[0]
    c = sp.symbols(f"c_1:{n + 1}")
    Sc = S0 + sp.Matrix(c) * sp.ones(1, n)
    minors = [Sc.extract(list(r), list(k)).det() for r in combinations(range(n), rank + 1)
              for k in combinations(range(n), rank + 1)]
    return list(sp.groebner(minors, *c, order="grevlex").exprs) == [1]


def _reach(n: int, below: int) -> Reach:
    S0 = 3 * sp.eye(n)
    claimed = n - below
    c = exact_id.singular_row_shift(S0)
    return Reach(n, claimed, no_shift_reaches(S0, claimed) if claimed < n else False, tuple(c),
                 (S0 + c * sp.ones(1, n)).det() == 0)


def _ranks(rng: np.random.Generator, quick: bool) -> tuple[RankRow, ...]:
    rows = []
    for d_k in range(1, EXACT_RANK_N + 1):
        Q, K = (sp.Matrix(rng.integers(-4, 5, size=(EXACT_RANK_N, d_k)).tolist()) for _ in range(2))
        rows.append(RankRow(EXACT_RANK_N, d_k, symbolic_scores(Q, K, 1 / sp.sqrt(d_k)).rank(), True))
    for d_k in (1, 2, 4, 8, 16, 31) if quick else (1, 2, 4, 8, 16, 24, 31, 32):
        Qn, Kn = rng.standard_normal((2, NUMERIC_RANK_N, d_k))
        S = np.asarray(numeric_scores(Qn, Kn, 1 / math.sqrt(d_k)))  # (n, n)
        rows.append(RankRow(NUMERIC_RANK_N, d_k, int(np.linalg.matrix_rank(S)), False))
    return tuple(rows)


def study(rng: Streams, *, quick: bool, below: int = 2) -> BottleneckResult:
    """``softmax(3I)`` against the claimed ``d_k ≤ n − below``, the rank tables, and the pattern rebuilt at ``n − 1``.

    ``rng()`` draws the integer and Gaussian ``Q, K`` of the rank tables.
    """
    reach = tuple(_reach(n, below) for n in ((3,) if quick else (3, 4)))
    S6 = 3 * sp.eye(FIGURE_N)
    c6 = exact_id.singular_row_shift(S6)
    shifted = np.array((S6 + c6 * sp.ones(1, FIGURE_N)).evalf(), dtype=np.float64)  # (n, n), rank n − 1
    U, s, Vt = np.linalg.svd(shifted)
    r = FIGURE_N - 1
    scale = 1 / math.sqrt(r)
    Qr, Kr = U[:, :r] * s[:r] / scale, Vt[:r].T  # (n, n − 1) each
    rebuilt = np.asarray(numeric_softmax(numeric_scores(Qr, Kr, scale)))
    target = np.asarray(numeric_softmax(3 * np.eye(FIGURE_N)))
    return BottleneckResult(reach, _ranks(rng(), quick), target, float(np.max(np.abs(rebuilt - target))),
                            tuple(np.linalg.svd(3 * np.eye(FIGURE_N), compute_uv=False).tolist()), tuple(s.tolist()))
