"""Audits of real models over long texts and corpora: exact streamed head statistics, written as Parquet.

* :func:`head_stats` — every head's statistics on one text in one blockwise pass (the online
  softmax), never an ``n × n`` map (:mod:`~attnsym.audits.stream`), as a :class:`HeadStats`;
* :func:`audit` (also ``attnsym.audit``) — every text × layer × head of a corpus to ``heads.parquet``, on any
  :class:`concurrent.futures.Executor` (a process pool by default, Dask for a cluster),
  resumable after a kill (:mod:`~attnsym.audits.run`, :mod:`~attnsym.audits.store`), with a
  Markdown report and figures (:mod:`~attnsym.audits.summary`);
* :func:`read_corpus`, :func:`stdlib_corpus` — corpora: a file, or the standard library's prose;
* :func:`revision` — the fingerprint of a model's weights that every audit row carries.
"""

from .corpus import Corpus, CorpusError, read_corpus, stdlib_corpus
from .errors import AuditError
from .headstats import head_stats, revision
from .result import COLUMNS, STATISTICS, ExtraMissing, HeadStats
from .run import AuditResult, audit
from .summary import AuditSummary, summarise

__all__ = ["COLUMNS", "STATISTICS", "AuditError", "AuditResult", "AuditSummary", "Corpus", "CorpusError",
           "ExtraMissing", "HeadStats", "audit", "head_stats", "read_corpus", "revision", "stdlib_corpus", "summarise"]
