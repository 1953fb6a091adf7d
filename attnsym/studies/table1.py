"""How do path length and sequential depth grow with n? Table 1 of Vaswani et al. (2017) on real computation graphs.

:func:`study` returns a :class:`Table1Result`: for each architecture of
:func:`attnsym.graphs.architectures.table1` (self-attention, recurrent, convolution, dilated
convolution, restricted self-attention) the maximum path length and the sequential depth of one
layer's computation DAG for every n, and the growth of each column decided by
:func:`attnsym.graphs.growth.decide_growth`. The table is computed once per (sizes, k, r) and
shared by both claims that read it (read-only).

The claims ``global-path-length`` and ``parallelism`` judge it;
:func:`attnsym.plots.path_length_figure` draws it.

>>> [row.architecture for row in study(quick=True).rows][:2]
['self_attention', 'recurrent']
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..graphs.architectures import table1
from ..graphs.growth import GrowthDecision

__all__ = ["ArchitectureRow", "Table1Result", "study"]


@dataclass(frozen=True)
class ArchitectureRow:
    """One architecture: the path lengths and sequential depths for every n, and the growth decided for each."""

    architecture: str
    path_values: tuple[int, ...]
    sequential_values: tuple[int, ...]
    path: GrowthDecision
    sequential: GrowthDecision

    def values(self, column: str) -> tuple[int, ...]:
        """The values of ``column`` (``"path"`` or ``"sequential"``)."""
        return self.path_values if column == "path" else self.sequential_values

    def growth(self, column: str) -> GrowthDecision:
        """The growth decided for ``column`` (``"path"`` or ``"sequential"``)."""
        return self.path if column == "path" else self.sequential


@dataclass(frozen=True)
class Table1Result:
    """What :func:`study` found: the sizes ``ns``, the kernel width ``k``, the restriction ``r``, one row per
    architecture."""

    ns: tuple[int, ...]
    k: int
    r: int
    rows: tuple[ArchitectureRow, ...]

    def row(self, architecture: str) -> ArchitectureRow | None:
        """The row of ``architecture`` (None: not an architecture of the table)."""
        return next((row for row in self.rows if row.architecture == architecture), None)


@functools.lru_cache(maxsize=4)
def _table1(ns: tuple[int, ...], k: int, r: int) -> Table1Result:
    rows = tuple(ArchitectureRow(row["arch"], tuple(row["path_values"]), tuple(row["sequential_values"]), row["path"],
                                 row["sequential"]) for row in table1(list(ns), k=k, r=r))
    return Table1Result(ns, k, r, rows)


def study(*, quick: bool, k: int = 3, r: int = 4) -> Table1Result:
    """n = 2 … 16 (40 in full mode), kernel width ``k``, restriction ``r``; nothing is sampled."""
    return _table1(tuple(range(2, 17) if quick else range(2, 41)), k, r)
