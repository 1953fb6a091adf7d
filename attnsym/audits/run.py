"""``audit(model, texts, out)``: every text × layer × head of a corpus to Parquet, on any executor, resumable.

Work goes to a :class:`concurrent.futures.Executor` — by default a process per core (each
loads the model once and runs BLAS at one thread, :mod:`attnsym.audits.work`), or any other:
``dask.distributed``'s ``Client(...).get_executor()`` for a cluster. At most a few texts per
worker are in flight, and each finished text is written at once as its own part
(:mod:`attnsym.audits.store`), so a killed audit resumes where it stopped. A worker process
lost mid-text (killed, out of memory) breaks a process pool: the pool is made again and the
texts that were in flight are measured again — once; a text lost twice stops the audit.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

from .._checks import positive_int
from ..errors import SpecError
from ..models import available
from .corpus import MAX_LINE_BYTES, Corpus, corpus_of
from .errors import AuditError
from .headstats import revision
from .result import STATISTICS
from .store import FORMAT, Store
from .stream import DEFAULT_BLOCK
from .work import ModelSource, TextResult, measure, pin_blas

__all__ = ["AuditResult", "audit", "model_source"]


@dataclass(frozen=True)
class AuditResult:
    """What an audit wrote and counted.

    Attributes
    ----------
    out : Path
        The output folder.
    table : Path
        ``out/heads.parquet``: one row per text × layer × head.
    texts : int
        Texts in the corpus (blank ones not counted).
    measured, refused, truncated, skipped, resumed : int
        Texts measured, refused (past the context with ``too_long="refuse"``, or no real token),
        cut to the context (``"truncate"``), blank lines skipped, and texts found done from an
        earlier run.
    """

    out: Path
    table: Path
    texts: int
    measured: int
    refused: int
    truncated: int
    skipped: int
    resumed: int


def model_source(model) -> ModelSource:
    """How workers load ``model``: its packaged name, else its path; its dtype and revision."""
    name = model.name if model.name in available() else str(model.folder)
    return ModelSource(source=name, dtype=str(model.weights.word.dtype), revision=revision(model))


def _default_pool(jobs: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"), initializer=pin_blas)


def _bar(show: bool | None):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    show = sys.stderr.isatty() if show is None else show
    return Progress(TextColumn("audit"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"),
                    TimeRemainingColumn(), disable=not show, transient=True)


def audit(model, texts_or_path: Sequence[str] | str | os.PathLike, out: str | os.PathLike = "results", *,
          executor: Executor | str | None = None, jobs: int | None = None, too_long: str = "refuse",
          block: int = DEFAULT_BLOCK, progress: bool | None = None, report: bool = True,
          max_line_bytes: int = MAX_LINE_BYTES, id_field: str | None = None) -> AuditResult:
    """Measure every head of ``model`` on every text of a corpus; write the rows to ``out/heads.parquet``.

    Parameters
    ----------
    model : Model
        A loaded model (:func:`attnsym.models.load`); workers load it again by name or path.
    texts_or_path : list of str, or path
        Texts, or a file: a text per line, or JSON Lines (``.jsonl``: ``{"text": ..., "id": ...}``).
    out : path, default "results"
        A new or empty folder, or one holding this same audit (it resumes).
    executor : Executor, "serial" or "process", optional
        Where texts are measured: any :class:`concurrent.futures.Executor` (a Dask client's
        ``get_executor()``), ``"serial"`` (this process), or ``"process"`` / None (a process
        pool of ``jobs`` processes, one per core by default).
    jobs : int, optional
        Processes of the default pool; texts in flight at a time are at most twice this.
    too_long : {"refuse", "truncate"}
        A text past the model's context: counted as refused, or cut to its first tokens.
    block : int
        Query rows and key columns per block of the streamed pass.
    progress : bool, optional
        A progress bar with an ETA on standard error (default: when it is a terminal).
    report : bool, default True
        Also write ``report.md`` and the summary figures (:func:`attnsym.audits.summary.write_report`).

    Returns
    -------
    AuditResult

    Raises
    ------
    CorpusError
        An unreadable corpus (:func:`attnsym.audits.corpus.read_corpus`).
    AuditError
        ``out`` holds another audit or other files; a text lost with its worker twice.
    """
    if too_long not in ("refuse", "truncate"):
        raise SpecError(f"too_long must be 'refuse' or 'truncate' (got {too_long!r})")
    block = positive_int("block", block)
    corpus = corpus_of(texts_or_path, max_line_bytes=max_line_bytes, id_field=id_field)
    src = model_source(model)
    manifest = {"format": FORMAT, "model": model.name, "revision": src.revision, "corpus": corpus.fingerprint(),
                "texts": len(corpus), "too_long": too_long, "block": block, "statistics": list(STATISTICS)}
    store = Store(out, manifest)
    done = store.open()
    todo = [k for k in range(len(corpus)) if k not in done]
    with _bar(progress) as bar:
        task = bar.add_task("audit", total=len(corpus), completed=len(done))

        def write(r: TextResult) -> None:
            store.write(r, corpus.ids[r.index])
            bar.advance(task)

        if executor == "serial":
            for k in todo:
                write(measure(src, k, corpus.texts[k], too_long, block))
        else:
            _run(executor, jobs, src, corpus, todo, too_long, block, write)
    table = store.finish(len(corpus))
    statuses = store.statuses()
    result = AuditResult(out=Path(out), table=table, texts=len(corpus),
                         measured=sum(s["status"] == "ok" for s in statuses),
                         refused=sum(s["status"] == "refused" for s in statuses),
                         truncated=sum(s.get("truncated") == "true" for s in statuses), skipped=corpus.skipped,
                         resumed=len(done))
    if report:
        from .summary import write_report  # matplotlib is imported only when figures are drawn

        write_report(result, statuses)
    return result


def _run(executor, jobs, src: ModelSource, corpus: Corpus, todo: list[int], too_long: str, block: int, write) -> None:
    """Measure the texts ``todo`` on ``executor``, writing each as it finishes (see the module docstring)."""
    if executor is not None and executor != "process" and not isinstance(executor, Executor):
        raise SpecError(f"executor must be a concurrent.futures.Executor, 'serial' or 'process' (got {executor!r})")
    own = executor is None or executor == "process"
    if jobs is None:
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    jobs = positive_int("jobs", jobs)
    pool: Executor = _default_pool(jobs) if own else executor
    lost: dict[int, int] = {}
    queue = list(reversed(todo))
    running: dict[Future, int] = {}
    try:
        while queue or running:
            while queue and len(running) < 2 * jobs:
                k = queue.pop()
                running[pool.submit(measure, src, k, corpus.texts[k], too_long, block)] = k
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            broken = []
            for future in finished:
                k = running.pop(future)
                try:
                    result: TextResult = future.result()
                except BrokenProcessPool:
                    broken.append(k)
                    continue
                write(result)
            if broken:
                if not own:
                    raise AuditError(f"a worker of the executor died while measuring text {corpus.ids[broken[0]]!r}; "
                                     "run the audit again to resume")
                broken += [running.pop(f) for f in list(running)]  # the pool is gone: everything in flight is lost
                for k in broken:
                    lost[k] = lost.get(k, 0) + 1
                    if lost[k] > 1:
                        raise AuditError(f"text {corpus.ids[k]!r} was lost with its worker twice (killed, or out of "
                                         "memory); the audit stops here and resumes when run again")
                pool.shutdown(wait=True, cancel_futures=True)
                pool = _default_pool(jobs)
                queue.extend(sorted(broken, reverse=True))
    finally:
        if own:
            pool.shutdown(wait=True, cancel_futures=True)
