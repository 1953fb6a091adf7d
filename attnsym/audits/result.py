"""The typed result of :func:`attnsym.audits.head_stats`: one record per (layer, head), as text, rows or a table.

Columns (:data:`COLUMNS`): ``layer`` and ``head`` (from 0, as :meth:`Model.spec`), then the
statistics of :data:`STATISTICS`, each a mean over the query rows that count (see
:mod:`attnsym.audits.stream`); ``sink_mass`` is a learned sink's weight ``π`` where the family
has one (gpt-oss; 0 elsewhere), the other weights then summing to ``1 − π`` per row, ``induction_mass`` and ``duplicate_mass`` the
induction and duplicate-token scores of :func:`attnsym.heads.induction_scores` on its
repeated random probe (NaN for a bidirectional model).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import AttnsymError
from .stream import ROW_STATISTICS

__all__ = ["COLUMNS", "STATISTICS", "ExtraMissing", "HeadStats", "require"]

#: the statistics of every head, in column order
STATISTICS = ("entropy", "max_weight", "first_token_mass", "sink_mass", "self_mass", "prev_token_mass",
              "mean_distance", "induction_mass", "duplicate_mass")
#: the columns of :meth:`HeadStats.records`
COLUMNS = ("layer", "head", *STATISTICS)
assert set(ROW_STATISTICS) <= set(STATISTICS)


class ExtraMissing(AttnsymError, ImportError):
    """An optional dependency (an extra of attnsym) is not installed."""


def require(module: str, extra: str, what: str) -> Any:
    """Import ``module`` or raise :class:`ExtraMissing` naming the extra that installs it."""
    if importlib.util.find_spec(module) is None:
        raise ExtraMissing(f"{what} needs {module}, which is not installed: pip install 'attnsym[{extra}]'")
    return importlib.import_module(module)


@dataclass(frozen=True)
class HeadStats:
    """Exact streamed statistics of every head of a model on one text.

    Attributes
    ----------
    model : str
        The model's name.
    revision : str
        A fingerprint of its weights (:func:`attnsym.audits.revision`).
    tokens : int
        Tokens of the text.
    means : dict
        Statistic name (:data:`STATISTICS`) -> ``(layers, heads)`` float64 array.
    rows : dict or None
        With ``per_row=True``: name -> ``(layers, heads, tokens)`` float64 array, NaN where a
        query row does not count (:data:`attnsym.audits.stream.ROW_STATISTICS`, and with
        ``spread=True`` :data:`~attnsym.audits.stream.SPREAD_STATISTICS`).
    """

    model: str
    revision: str
    tokens: int
    means: dict[str, np.ndarray]
    rows: dict[str, np.ndarray] | None = None

    @property
    def layers(self) -> int:
        return int(self.means["entropy"].shape[0])

    @property
    def heads(self) -> int:
        return int(self.means["entropy"].shape[1])

    def records(self) -> list[dict[str, Any]]:
        """One dict per (layer, head), keys :data:`COLUMNS`, values Python ints and floats (NaN kept)."""
        return [{"layer": k, "head": h, **{name: float(self.means[name][k, h]) for name in STATISTICS}}
                for k in range(self.layers) for h in range(self.heads)]

    def table(self) -> str:
        """A plain-text table, one line per (layer, head)."""
        names = ("layer", "head", *STATISTICS)
        lines = [" ".join(f"{name:>16}" if i > 1 else f"{name:>5}" for i, name in enumerate(names))]
        for r in self.records():
            cells = [f"{r['layer']:>5}", f"{r['head']:>5}"] + [f"{r[name]:>16.6g}" for name in STATISTICS]
            lines.append(" ".join(cells))
        return "\n".join(lines)

    def to_arrow(self):
        """A ``pyarrow.Table`` of :meth:`records` (extra ``audit``)."""
        pa = require("pyarrow", "audit", "HeadStats.to_arrow")
        return pa.Table.from_pylist(self.records())

    def to_pandas(self):
        """A ``pandas.DataFrame`` of :meth:`records` (extra ``tables``)."""
        pd = require("pandas", "tables", "HeadStats.to_pandas")
        return pd.DataFrame.from_records(self.records(), columns=list(COLUMNS))
