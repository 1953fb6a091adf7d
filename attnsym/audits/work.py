"""The worker's side of an audit: load the model once per process, measure one text, return plain data.

Runs in whatever process the executor picks (this one, a process of a pool, a Dask worker):
:func:`measure` is a module-level function of picklable arguments, and :func:`model_for`
keeps one loaded model per process. BLAS runs at one thread in the streamed pass
(:func:`attnsym.audits.head_stats`), so a process per core never oversubscribes the cores.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from ..models.errors import TextError
from ..models.model import load
from .errors import AuditError
from .headstats import head_stats, induction_probe, revision, text_ids
from .result import STATISTICS

__all__ = ["ModelSource", "TextResult", "measure", "model_for", "pin_blas"]

_MODELS: dict = {}


@dataclass(frozen=True)
class ModelSource:
    """How a worker loads the audited model: a packaged name or a path, a dtype, and the revision it must have."""

    source: str
    dtype: str
    revision: str


@dataclass(frozen=True)
class TextResult:
    """One text measured: ``status`` ``"ok"`` (``means`` holds ``(layers, heads)`` arrays) or ``"refused"`` (``reason``)."""

    index: int
    status: str
    tokens: int
    truncated: bool
    means: dict[str, np.ndarray] | None = None
    reason: str = ""


def pin_blas() -> None:
    """A process pool's initializer: BLAS at one thread in this process (a process per core)."""
    threadpool_limits(limits=1, user_api="blas")


def model_for(src: ModelSource):
    """The model of ``src``, loaded once per process (with its induction probe), checked against its revision."""
    key = (src.source, src.dtype)
    if key not in _MODELS:
        model = load(src.source, dtype=src.dtype)
        if revision(model) != src.revision:
            raise AuditError(f"the model {src.source!r} loaded by this worker has revision {revision(model)}, not "
                             f"{src.revision}: every worker must see the same weights")
        _MODELS[key] = (model, induction_probe(model))
    return _MODELS[key]


def measure(src: ModelSource, index: int, text: str, too_long: str, block: int) -> TextResult:
    """The statistics of every head on one text (``too_long``: ``"refuse"`` or ``"truncate"``)."""
    model, probe = model_for(src)
    try:
        ids, truncated = text_ids(model, text, too_long=too_long)
    except TextError as error:
        return TextResult(index=index, status="refused", tokens=0, truncated=False, reason=str(error))
    s = head_stats(model, ids, induction=probe if probe is not None else False, block=block, threads=1,
                   progress=False)
    return TextResult(index=index, status="ok", tokens=s.tokens, truncated=truncated,
                      means={name: np.asarray(s.means[name]) for name in STATISTICS})
