"""Claims engine: each claim of the shipped claims list as a function returning :class:`Evidence`.

A claim is a verdict. To add one (``softmax-saturation`` is the model: ``studies/saturation.py``,
``claims/builtin/saturation.py``, ``plots/scaling.py``):

1. the experiment or proof goes into :mod:`attnsym.studies` — ``study(spec or sizes, rng, *,
   quick)`` returning a frozen, typed result;
2. the check, in the subject's module of ``claims/builtin/`` (and a ``[[claim]]`` table in
   ``claims.toml``), runs the study once, names its falsifiable facts and returns
   ``Evidence(verdict=verdict(facts), summary=... + failed_clause(facts), ...)``
   (``claims/_verdict.py``) — about 40 lines, none over 60;
3. its figures are ``functools.partial(plots.<figure>, result)``: they draw the result judged.

``docs/architecture.md`` ("Where a new piece goes") has the details.

>>> import attnsym as at
>>> ev = at.verify("variance-scaling", quick=True)
>>> ev.verdict
'holds-under-conditions'
"""

from ._evidence import BY_CONSTRUCTION, RenderedFigure
from ._registry import (
    CLAIM_ORDER,
    CLAIMS,
    VERDICTS,
    CheckContext,
    Claim,
    ClaimFailed,
    Evidence,
    UnknownClaimError,
    claim,
    default_jobs,
    ordered_ids,
    register,
    verify,
    verify_all,
)
from .catalogue import ClaimEntry, catalogue

__all__ = [
    "BY_CONSTRUCTION",
    "CLAIMS",
    "CLAIM_ORDER",
    "VERDICTS",
    "CheckContext",
    "Claim",
    "ClaimEntry",
    "ClaimFailed",
    "Evidence",
    "RenderedFigure",
    "UnknownClaimError",
    "catalogue",
    "claim",
    "default_jobs",
    "ordered_ids",
    "register",
    "verify",
    "verify_all",
]
