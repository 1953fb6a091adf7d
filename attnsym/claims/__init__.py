"""Claims engine: each claim of CLAIMS.md as a function returning :class:`Evidence`.

>>> import attnsym as at
>>> ev = at.verify("variance-scaling", quick=True)
>>> ev.verdict
'holds-under-conditions'
"""

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
    ordered_ids,
    verify,
    verify_all,
)

__all__ = [
    "CLAIMS",
    "CLAIM_ORDER",
    "VERDICTS",
    "CheckContext",
    "Claim",
    "ClaimFailed",
    "Evidence",
    "UnknownClaimError",
    "claim",
    "ordered_ids",
    "verify",
    "verify_all",
]
