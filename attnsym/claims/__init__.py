"""Claims engine: each claim of the shipped claims list as a function returning :class:`Evidence`.

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
