"""Audits of real models over long texts and corpora: exact streamed head statistics, written as Parquet.

* :func:`head_stats` — every head's statistics on one text in one blockwise pass (the online
  softmax), never an ``n × n`` map (:mod:`~attnsym.audit.stream`), as a :class:`HeadStats`;
* :func:`audit` — every text × layer × head of a corpus to ``heads.parquet``, on any
  :class:`concurrent.futures.Executor` (a process pool by default, Dask for a cluster),
  resumable after a kill (:mod:`~attnsym.audit.run`, :mod:`~attnsym.audit.store`), with a
  Markdown report and figures (:mod:`~attnsym.audit.summary`);
* :func:`read_corpus`, :func:`stdlib_corpus` — corpora: a file, or the standard library's prose;
* :func:`revision` — the fingerprint of a model's weights that every audit row carries.
"""

import sys
import types

from .corpus import Corpus, CorpusError, read_corpus, stdlib_corpus
from .errors import AuditError
from .headstats import head_stats, revision
from .result import COLUMNS, STATISTICS, ExtraMissing, HeadStats
from .run import AuditResult, audit
from .summary import AuditSummary, summarise

__all__ = ["COLUMNS", "STATISTICS", "AuditError", "AuditResult", "AuditSummary", "Corpus", "CorpusError",
           "ExtraMissing", "HeadStats", "audit", "head_stats", "read_corpus", "revision", "stdlib_corpus", "summarise"]


class _CallableModule(types.ModuleType):
    """``attnsym.audit`` is this package and, called, :func:`audit` (the API the issue names: ``at.audit(m, texts)``).

    A package and a function of one name cannot both be the attribute ``attnsym.audit``: the import
    system sets the package there whenever it is first imported. Python supports giving a module a
    subclass of :class:`types.ModuleType` (``module.__class__``), so the package answers the call.
    """

    def __call__(self, model, texts_or_path, out="results", **options) -> AuditResult:
        return audit(model, texts_or_path, out, **options)


sys.modules[__name__].__class__ = _CallableModule
