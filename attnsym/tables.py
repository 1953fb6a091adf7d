"""Tables for pandas: attnsym's results as long-format records, one row per value.

Every result that is a table gives ``to_records()`` (a list of dicts, plain Python values) and
``to_pandas()`` (the same rows as a :class:`pandas.DataFrame`; pandas is the optional extra
``tables``: ``pip install "attnsym[tables]"``). The columns, the same in both:

* ``Route``: :data:`ROUTE_COLUMNS`, one row per layer, head, query and key;
* ``HeadReport``: :data:`HEAD_COLUMNS`, one row per layer, head and pattern;
* ``TokenContrast``: :data:`CONTRAST_COLUMNS`, one row per layer, head, text and key (the word is the query);
* ``Evidence``: :data:`EVIDENCE_COLUMNS`, one row per claim.

**Numbering.** Tables, like the CLI and the figures, count layers, heads, queries and keys
from 1; arrays count from 0. The row ``(layer, head, query, key)`` of a route is
``r.attention[layer - 1, head - 1, query - 1, key - 1]`` (:data:`NUMBERING`). One head's
attention as an array needs no table: ``r.attention[l, h]`` (indices from 0).

A list of results of one kind (several routes, every claim of ``verify_all``) is one table:
:func:`to_records` and :func:`to_pandas` take a result or such a list.

This module imports nothing of attnsym but its errors: it reads the results' public
attributes, so every layer may call it.

>>> import numpy as np
>>> class Tiny:                                   # any object with the route's attributes
...     text, tokens = "ab", ("a", "b")
...     attention = np.array([[[[1.0, 0.0], [0.25, 0.75]]]])
...     scores = np.array([[[[0.0, -np.inf], [0.0, 1.1]]]])
...     def labels(self): return list(self.tokens)
>>> rows = route_records(Tiny())
>>> rows[2]
{'text': 'ab', 'layer': 1, 'head': 1, 'query': 2, 'key': 1, 'query_token': 'b', 'key_token': 'a', 'weight': 0.25, 'score': 0.0}
>>> rows[2]["weight"] == float(Tiny().attention[0, 0, 1, 0])      # layer - 1, head - 1, query - 1, key - 1
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .errors import AttnsymError

__all__ = ["CONTRAST_COLUMNS", "EVIDENCE_COLUMNS", "HEAD_COLUMNS", "NUMBERING", "ROUTE_COLUMNS", "PandasMissingError",
           "contrast_records", "evidence_records", "head_records", "route_records", "to_pandas", "to_records"]

#: the numbering rule of every table, in one line (also each DataFrame's ``attrs["numbering"]``)
NUMBERING = ("layer, head, query and key count from 1 (as the CLI and figures); arrays count from 0: "
             "r.attention[layer - 1, head - 1, query - 1, key - 1]")

#: :meth:`Route.to_records`: ``weight`` is ``A[i, j]`` (query i reads key j), ``score`` the scaled pre-softmax score
ROUTE_COLUMNS = ("text", "layer", "head", "query", "key", "query_token", "key_token", "weight", "score")
#: :meth:`HeadReport.to_records`: ``class`` is the head's class, ``score`` its score for ``pattern`` (NaN: not defined)
HEAD_COLUMNS = ("layer", "head", "class", "labels", "pattern", "score", "threshold")
#: :meth:`TokenContrast.to_records`: ``weight`` is the word's attention to ``key`` in ``text``; distances are per head
CONTRAST_COLUMNS = ("word", "text", "layer", "head", "key", "key_token", "weight", "entropy", "role_distance",
                    "offset_distance", "content_distance")
#: :meth:`Evidence.to_records`: one row per claim; ``conditions`` joined by "; "
EVIDENCE_COLUMNS = ("claim", "verdict", "expected", "as_expected", "method", "summary", "conditions", "seconds", "source")


class PandasMissingError(AttnsymError, ImportError):
    """``to_pandas()`` was called where pandas is not installed (the extra ``tables`` installs it)."""


def _plain(value: Any) -> Any:
    """A NumPy scalar as the Python value (``np.float64(0.5)`` -> ``0.5``)."""
    return value.item() if isinstance(value, np.generic) else value


def _rows(columns: dict[str, Any], order: Sequence[str]) -> list[dict[str, Any]]:
    """Column arrays (equal lengths) -> one dict per row, keys in ``order``, values plain Python."""
    lists = [np.asarray(columns[c]).tolist() if isinstance(columns[c], np.ndarray) else list(columns[c]) for c in order]
    return [dict(zip(order, values, strict=True)) for values in zip(*lists, strict=True)]


def _route_columns(route: Any) -> dict[str, Any]:
    A = np.asarray(route.attention)  # (layers, heads, n, n)
    layer, head, query, key = (k.ravel() for k in np.indices(A.shape))
    labels = np.asarray(route.labels(), dtype=object)
    return {"text": [route.text] * A.size, "layer": layer + 1, "head": head + 1, "query": query + 1, "key": key + 1,
            "query_token": labels[query], "key_token": labels[key], "weight": A.ravel().astype(np.float64),
            "score": np.asarray(route.scores, dtype=np.float64).ravel()}


def route_records(route: Any) -> list[dict[str, Any]]:
    """A route's attention and scores, one row per layer, head, query and key (:data:`ROUTE_COLUMNS`)."""
    return _rows(_route_columns(route), ROUTE_COLUMNS)


def _head_columns(report: Any) -> dict[str, Any]:
    scores = np.asarray(report.scores, dtype=np.float64)  # (layers, heads, patterns)
    layer, head, pattern = (k.ravel() for k in np.indices(scores.shape))
    patterns = list(report.patterns)
    return {"layer": layer + 1, "head": head + 1, "class": [report.primary[ly][h] for ly, h in zip(layer, head, strict=True)],
            "labels": [" ".join(report.labels[ly][h]) for ly, h in zip(layer, head, strict=True)],
            "pattern": [patterns[p] for p in pattern], "score": scores.ravel(),
            "threshold": [float(report.thresholds.get(patterns[p], math.nan)) for p in pattern]}


def head_records(report: Any) -> list[dict[str, Any]]:
    """A head report's scores, one row per layer, head and pattern (:data:`HEAD_COLUMNS`)."""
    return _rows(_head_columns(report), HEAD_COLUMNS)


def _nan_grid(values: Any, shape: tuple[int, int]) -> np.ndarray:
    return np.full(shape, np.nan) if values is None else np.asarray(values, dtype=np.float64)


def _contrast_columns(c: Any) -> dict[str, Any]:
    shape = tuple(np.asarray(c.role_distance).shape)
    distances = {name: _nan_grid(getattr(c, name), shape) for name in ("role_distance", "offset_distance", "content_distance")}
    columns: dict[str, list[Any]] = {name: [] for name in CONTRAST_COLUMNS}
    for k, (route, rows) in enumerate(zip(c.routes, c.rows, strict=True)):
        rows = np.asarray(rows, dtype=np.float64)  # (layers, heads, n_k)
        layer, head, key = (i.ravel() for i in np.indices(rows.shape))
        labels = route.labels()
        columns["word"] += [c.words[k].text] * rows.size
        columns["text"] += [route.text] * rows.size
        columns["layer"] += (layer + 1).tolist()
        columns["head"] += (head + 1).tolist()
        columns["key"] += (key + 1).tolist()
        columns["key_token"] += [labels[j] for j in key]
        columns["weight"] += rows.ravel().tolist()
        columns["entropy"] += np.asarray(c.entropy[k], dtype=np.float64)[layer, head].tolist()
        for name, grid in distances.items():
            columns[name] += grid[layer, head].tolist()
    return columns


def contrast_records(c: Any) -> list[dict[str, Any]]:
    """A contrast's two rows of the word, one row per layer, head, text and key (:data:`CONTRAST_COLUMNS`)."""
    return _rows(_contrast_columns(c), CONTRAST_COLUMNS)


def _evidence_columns(ev: Any) -> dict[str, Any]:
    return {"claim": [ev.claim], "verdict": [ev.verdict], "expected": [ev.expected], "as_expected": [bool(ev.as_expected)],
            "method": [ev.method], "summary": [ev.summary], "conditions": ["; ".join(ev.conditions)],
            "seconds": [float(ev.seconds)], "source": [ev.source]}


def evidence_records(ev: Any) -> list[dict[str, Any]]:
    """A claim's verdict as one row (:data:`EVIDENCE_COLUMNS`)."""
    return _rows(_evidence_columns(ev), EVIDENCE_COLUMNS)


#: result type name -> (columns of one result, column order)
_KINDS: dict[str, tuple[Callable[[Any], dict[str, Any]], tuple[str, ...]]] = {
    "Route": (_route_columns, ROUTE_COLUMNS),
    "HeadReport": (_head_columns, HEAD_COLUMNS),
    "TokenContrast": (_contrast_columns, CONTRAST_COLUMNS),
    "Evidence": (_evidence_columns, EVIDENCE_COLUMNS),
}


def _kind(results: Any) -> tuple[list[Any], Callable[[Any], dict[str, Any]], tuple[str, ...]]:
    items = list(results) if isinstance(results, list | tuple) else [results]
    names = {type(r).__name__ for r in items}
    if len(names) != 1 or next(iter(names)) not in _KINDS:
        raise AttnsymError(f"results must be a Route, HeadReport, TokenContrast or Evidence, or a non-empty list of one "
                           f"of them (got {', '.join(sorted(names)) or 'an empty list'})")
    columns, order = _KINDS[names.pop()]
    return items, columns, order


def to_records(results: Any) -> list[dict[str, Any]]:
    """The long-format rows of a result, or of a list of results of one kind (concatenated in order)."""
    items, columns, order = _kind(results)
    return [row for item in items for row in _rows(columns(item), order)]


def to_pandas(results: Any) -> Any:
    """The rows of :func:`to_records` as a :class:`pandas.DataFrame` (``attrs["numbering"]`` says how to count).

    Raises
    ------
    PandasMissingError
        pandas is not installed (``pip install "attnsym[tables]"``).
    """
    try:
        import pandas as pd  # optional: only this function needs it
    except ImportError:
        raise PandasMissingError('to_pandas() needs pandas, which is not installed; install the extra "tables": '
                                 'pip install "attnsym[tables]" (or pip install pandas)') from None
    items, columns, order = _kind(results)
    parts = [pd.DataFrame(columns(item), columns=list(order)) for item in items]
    frame = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
    frame.attrs["numbering"] = NUMBERING
    return frame
