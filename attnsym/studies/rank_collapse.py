"""Does pure self-attention lose rank with depth? Dong, Cordonnier & Loukas (2021), measured on seeded stacks.

:func:`study` returns a :class:`RankCollapseResult`: for each stack of
:data:`attnsym.numeric.rank_collapse.ARCHITECTURES` (pure attention, with skips, with an MLP) the
relative residual ``‖res(X_l)‖_{1,∞}/‖X_l‖_{1,∞}`` over layers for every seed
(:func:`attnsym.numeric.rank_collapse.collapse_run`), the contraction rate ``log r_{l+1}/log r_l``
where the residual is small, the per-layer β; and, exactly, whether ``X = 1 xᵀ`` is a fixed point of
attnsym's symbolic layer (``A 1 = 1``).

The claim ``rank-collapse`` judges it; :func:`attnsym.plots.rank_collapse_figure` draws
:attr:`RankCollapseResult.curves`.

>>> spread([1.0, 2.0, 3.0], level=0.5)
(1.5, 2.5)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike

from ..numeric.rank_collapse import ARCHITECTURES, collapse_run
from ..spec import AttentionSpec
from ..symbolic.matrices import attention as sym_attention
from ._streams import Streams

__all__ = ["COLLAPSED", "RankCollapseResult", "StackRow", "spread", "study"]

#: a stack "collapses" when its median relative residual after the last layer is below this
COLLAPSED = 1e-8


def spread(values: ArrayLike, level: float = 0.95) -> tuple[float, float]:
    """Equal-tailed empirical interval of ``values`` (the spread over seeds, not a CI of the mean)."""
    lo, hi = np.quantile(np.asarray(values, dtype=float), [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


@dataclass(frozen=True)
class StackRow:
    """One architecture: the median final relative residual and its 95 % range over seeds, the median contraction
    rate ``log r_{l+1}/log r_l`` where ``r_l < 0.1`` (None: never that small), the median per-layer
    ``β = ‖W_QW_Kᵀ‖₁‖W_V‖_{1,∞}``."""

    architecture: str
    final: float
    final_range: tuple[float, float]
    rate: float | None
    beta: float

    @property
    def collapses(self) -> bool:
        """The median final relative residual is below :data:`COLLAPSED`."""
        return self.final < COLLAPSED


@dataclass(frozen=True)
class RankCollapseResult:
    """What :func:`study` found: sizes, one :class:`StackRow` per architecture, the residual curves (seeds × layers + 1
    per architecture) and whether a rank-1 input is a fixed point of the exact layer."""

    depth: int
    seeds: int
    n: int
    d: int
    rows: tuple[StackRow, ...]
    curves: dict[str, np.ndarray]
    fixed_point: bool

    def row(self, architecture: str) -> StackRow:
        """The row of ``architecture``."""
        return next(r for r in self.rows if r.architecture == architecture)


def _fixed_point() -> bool:
    """A rank-1 input stays rank-1 (rows of A sum to 1), for symbolic weights (n = 3, d = 2)."""
    sym = sym_attention(AttentionSpec(n=3, d_model=2))
    x = sp.symbols("x_0:2", real=True)
    Y = sym.Y.xreplace({sym.X[i, j]: x[j] for i in range(3) for j in range(2)})
    return all(sp.expand(Y[i, j] - Y[0, j]) == 0 for i in range(3) for j in range(2))


def study(rng: Streams, *, quick: bool) -> RankCollapseResult:
    """5 seeds of 8 layers (20 of 12 in full mode), n = 16, d = 8. ``rng("X", s)`` draws seed s's input,
    ``rng(architecture, s)`` its layers."""
    seeds, depth, n, d = (5, 8, 16, 8) if quick else (20, 12, 16, 8)
    runs: dict[str, list] = {arch: [] for arch in ARCHITECTURES}
    for s in range(seeds):
        X0 = rng("X", s).standard_normal((n, d))
        for arch in ARCHITECTURES:
            runs[arch].append(collapse_run(arch, X0, depth, rng(arch, s)))
    rows, curves = [], {}
    for arch, rs in runs.items():
        R = curves[arch] = np.array([r.relative_residual for r in rs])  # (seeds, depth + 1)
        rate = [float(np.log(r[k + 1]) / np.log(r[k])) for r in R for k in range(depth) if 1e-13 < r[k + 1] and r[k] < 0.1]
        rows.append(StackRow(arch, float(np.median(R[:, -1])), spread(R[:, -1]), float(np.median(rate)) if rate else None,
                             float(np.median([r.beta for r in rs]))))
    return RankCollapseResult(depth, seeds, n, d, tuple(rows), curves, _fixed_point())
