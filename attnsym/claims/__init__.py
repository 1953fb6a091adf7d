"""Claims engine: each claim of CLAIMS.md as a function returning :class:`Evidence`.

>>> import attnsym as at
>>> ev = at.verify("softmax-jacobian", quick=True)   # doctest: +SKIP
>>> ev.verdict                                        # doctest: +SKIP
'holds'
"""

from ._registry import CLAIMS, VERDICTS, CheckContext, Claim, ClaimFailed, Evidence, claim, verify, verify_all

__all__ = ["CLAIMS", "VERDICTS", "CheckContext", "Claim", "ClaimFailed", "Evidence", "claim", "verify", "verify_all"]
