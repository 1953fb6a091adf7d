"""Audits of real models over long texts and corpora: exact streamed head statistics, written as Parquet.

* :func:`head_stats` — every head's statistics on one text in one blockwise pass (the online
  softmax), never an ``n × n`` map (:mod:`~attnsym.audit.stream`), as a :class:`HeadStats`;
* :func:`revision` — the fingerprint of a model's weights that every audit row carries.
"""

from .headstats import head_stats, revision
from .result import COLUMNS, STATISTICS, ExtraMissing, HeadStats

__all__ = ["COLUMNS", "STATISTICS", "ExtraMissing", "HeadStats", "head_stats", "revision"]
