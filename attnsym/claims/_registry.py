"""The claim registry: a plain dict of :class:`Claim` built from the built-in claim modules, plus user claims.

A claim check is a plain function ``check(ctx: CheckContext) -> Evidence``. The built-in ones
are listed explicitly (each module of :mod:`attnsym.claims.builtin` ends with a tuple
``CLAIMS``, :data:`attnsym.claims.builtin.BUILTIN` joins them); nothing registers itself by
being imported. Users add their own claims with :func:`register` or the :func:`claim` decorator.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from .._checks import non_negative_int
from ..errors import SpecError, SpecTypeError
from ._evidence import VERDICTS, CheckContext, Claim, ClaimFailed, Evidence, UnknownClaimError, Verdict
from .builtin import BUILTIN
from .catalogue import catalogue

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
    "register",
    "verify",
    "verify_all",
]

#: The ids of the shipped claims list (``claims.toml``) in its order; :func:`verify_all` reports the
#: built-in claims in this order, then user-registered claims in registration order.
CLAIM_ORDER: tuple[str, ...] = tuple(e.id for e in catalogue())

#: id -> Claim: the built-in claims (in the order of the claims list), then user claims in registration order
CLAIMS: dict[str, Claim] = {c.id: c for c in sorted(BUILTIN, key=lambda c: CLAIM_ORDER.index(c.id))}


def register(entry: Claim, *, replace_existing: bool = False) -> Claim:
    """Add a :class:`Claim` to the registry (what :func:`claim` does for a decorated function).

    Raises
    ------
    ValueError
        ``entry.id`` is already registered and ``replace_existing`` is false.
    """
    if not isinstance(entry, Claim):
        raise SpecTypeError(f"entry must be a Claim (got {type(entry).__name__})")
    if entry.id in CLAIMS and not replace_existing:
        raise SpecError(f"claim {entry.id!r} is already registered; pass replace_existing=True to replace it")
    CLAIMS[entry.id] = entry
    return entry


def claim(claim_id: str, statement: str, *, expected: Verdict = "holds", source: str = "",
          replace_existing: bool = False):
    """Register a check function under ``claim_id`` (a decorator; see :func:`register`).

    Examples
    --------
    >>> @claim("doc-example", "One plus one is two.")
    ... def _check(ctx):
    ...     return Evidence("doc-example", "One plus one is two.", "holds" if 1 + 1 == 2 else "fails",
    ...                     method="arithmetic", summary="1 + 1 = 2")
    >>> verify("doc-example").verdict
    'holds'
    >>> del CLAIMS["doc-example"]
    """
    if not isinstance(claim_id, str) or not claim_id:
        raise SpecError(f"claim_id must be a non-empty string (got {claim_id!r})")
    if expected not in VERDICTS:
        raise SpecError(f"expected must be one of {VERDICTS} (got {expected!r})")

    def decorate(check: Callable[[CheckContext], Evidence]) -> Callable[[CheckContext], Evidence]:
        register(Claim(claim_id, statement, check, expected, source), replace_existing=replace_existing)
        return check

    return decorate


def verify(claim_id: str, *, seed: int = 0, quick: bool = False, strict: bool = False,
           progress: Callable[[int, int], None] | None = None) -> Evidence:
    """Check one claim and return its :class:`Evidence`.

    Parameters
    ----------
    claim_id : str
        A registered id (``list(attnsym.claims.CLAIMS)`` lists them).
    seed : int, default 0
        All randomness of the check derives from it; the same seed gives the same evidence.
    quick : bool, default False
        Smallest meaningful sizes and sample counts.
    strict : bool, default False
        Raise :class:`ClaimFailed` when the verdict is not the expected one.
    progress : callable ``(done, total) -> None``, optional
        Called by long checks as they advance.

    Raises
    ------
    UnknownClaimError
        ``claim_id`` is not registered (also a ``KeyError``).
    ClaimFailed
        ``strict=True`` and the verdict is not the expected one.

    Examples
    --------
    >>> ev = verify("variance-scaling", quick=True)
    >>> ev.verdict, ev.as_expected
    ('holds-under-conditions', True)
    """
    seed = non_negative_int("seed", seed)
    if claim_id not in CLAIMS:
        raise UnknownClaimError(f"unknown claim {claim_id!r}; known claims: {', '.join(ordered_ids())}")
    entry = CLAIMS[claim_id]
    start = time.perf_counter()
    evidence = entry.check(CheckContext(seed=seed, quick=bool(quick), progress=progress))
    if not isinstance(evidence, Evidence):
        raise SpecTypeError(f"the check of claim {claim_id!r} must return an Evidence (got {type(evidence).__name__})")
    evidence = replace(evidence, claim=claim_id, statement=evidence.statement or entry.statement,
                       expected=entry.expected, source=evidence.source or entry.source,
                       seconds=time.perf_counter() - start)
    if strict and not evidence.as_expected:
        raise ClaimFailed(f"claim {claim_id!r}: expected {entry.expected}, got {evidence.verdict}: {evidence.summary}")
    return evidence


def ordered_ids() -> list[str]:
    """Every registered claim id: those of the claims list in its order, then user claims in registration order."""
    builtin = [cid for cid in CLAIM_ORDER if cid in CLAIMS]
    return builtin + [cid for cid in CLAIMS if cid not in CLAIM_ORDER]


def verify_all(*, seed: int = 0, quick: bool = False, ids: list[str] | None = None,
               progress: Callable[[str], None] | None = None) -> list[Evidence]:
    """Check every registered claim (or those in ``ids``), CLAIMS.md order first (see :func:`ordered_ids`).

    ``progress(claim_id)`` is called before each check starts.
    """
    chosen = ordered_ids() if ids is None else list(ids)
    unknown = [cid for cid in chosen if cid not in CLAIMS]
    if unknown:
        raise UnknownClaimError(f"unknown claim(s) {', '.join(map(repr, unknown))}; known claims: {', '.join(ordered_ids())}")
    results = []
    for claim_id in chosen:
        if progress is not None:
            progress(claim_id)
        results.append(verify(claim_id, seed=seed, quick=quick))
    return results
