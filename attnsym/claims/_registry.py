"""The claim registry and the :class:`Evidence` a claim check returns.

A claim check is a plain function ``check(ctx: CheckContext) -> Evidence`` registered under a
stable id with :func:`claim`. It composes the symbolic, numeric and graph layers and owns no
mathematics of its own. Users register their own claims with the same decorator.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from ..errors import AttnsymError

__all__ = [
    "CLAIMS",
    "VERDICTS",
    "CheckContext",
    "Claim",
    "ClaimFailed",
    "Evidence",
    "claim",
    "verify",
    "verify_all",
]

Verdict = Literal["holds", "fails", "holds-under-conditions"]
VERDICTS: tuple[str, ...] = ("holds", "fails", "holds-under-conditions")


class ClaimFailed(AttnsymError, AssertionError):
    """Raised by :func:`verify` with ``strict=True`` when a claim expected to hold does not."""


@dataclass(frozen=True)
class CheckContext:
    """What a check may depend on: a seed (all randomness derives from it) and the effort level.

    ``quick=True`` asks for the smallest sizes and sample counts that still make the check
    meaningful (used by ``attnsym verify --quick`` and CI).
    """

    seed: int = 0
    quick: bool = False

    def rng(self, *key: int | str) -> np.random.Generator:
        """An independent generator for one part of a check, reproducible from the seed and ``key``."""
        words = [self.seed] + [int.from_bytes(str(k).encode(), "little") % (2**32) for k in key]
        return np.random.default_rng(np.random.SeedSequence(words))


@dataclass(frozen=True)
class Evidence:
    """The outcome of checking one claim.

    Attributes
    ----------
    claim : str
        The claim id, e.g. ``"variance-scaling"``.
    statement : str
        The claim in one sentence.
    verdict : {"holds", "fails", "holds-under-conditions"}
    method : str
        How it was checked: "symbolic proof", "numeric check (rtol=…)", "Monte Carlo (95% CI)",
        "graph computation", or several joined by " + ".
    conditions : tuple of str
        The conditions under which the verdict was reached (and where it stops holding).
    summary : str
        The key evidence in one line (for tables).
    details : dict
        Named pieces of evidence: SymPy expressions, numbers, small tables (lists of dicts).
    equations : tuple of (str, sympy object)
        Titled equations to render in a report.
    figures : dict
        Name -> zero-argument callable returning a matplotlib Figure (built only when a report
        asks for it, so checks stay fast and headless).
    expected : str
        The verdict the source material leads one to expect; a different verdict is a failure
        of the claim as stated.
    seconds : float
        Wall time of the check.
    """

    claim: str
    statement: str
    verdict: Verdict
    method: str
    summary: str
    conditions: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)
    equations: tuple[tuple[str, Any], ...] = ()
    figures: dict[str, Callable[[], Any]] = field(default_factory=dict)
    expected: Verdict = "holds"
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS} (got {self.verdict!r})")

    @property
    def as_expected(self) -> bool:
        """True when the verdict is the expected one ("holds-under-conditions" satisfies "holds")."""
        if self.verdict == self.expected:
            return True
        return self.expected == "holds" and self.verdict == "holds-under-conditions"


@dataclass(frozen=True)
class Claim:
    """A registered claim: id, one-sentence statement, expected verdict and its check."""

    id: str
    statement: str
    check: Callable[[CheckContext], Evidence]
    expected: Verdict = "holds"


#: id -> Claim, in registration order
CLAIMS: dict[str, Claim] = {}


def claim(claim_id: str, statement: str, *, expected: Verdict = "holds", replace_existing: bool = False):
    """Register a check function under ``claim_id``.

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
        raise ValueError(f"claim_id must be a non-empty string (got {claim_id!r})")
    if expected not in VERDICTS:
        raise ValueError(f"expected must be one of {VERDICTS} (got {expected!r})")

    def register(check: Callable[[CheckContext], Evidence]) -> Callable[[CheckContext], Evidence]:
        if claim_id in CLAIMS and not replace_existing:
            raise ValueError(f"claim {claim_id!r} is already registered; pass replace_existing=True to replace it")
        CLAIMS[claim_id] = Claim(claim_id, statement, check, expected)
        return check

    return register


def _load_builtin_claims() -> None:
    from . import builtin  # noqa: F401  (registers the claims of CLAIMS.md)


def verify(claim_id: str, *, seed: int = 0, quick: bool = False, strict: bool = False) -> Evidence:
    """Check one claim and return its :class:`Evidence`.

    Parameters
    ----------
    claim_id : str
        A registered id (``sorted(attnsym.claims.CLAIMS)`` lists them).
    seed : int, default 0
        All randomness of the check derives from it; the same seed gives the same evidence.
    quick : bool, default False
        Smallest meaningful sizes and sample counts.
    strict : bool, default False
        Raise :class:`ClaimFailed` when the verdict is not the expected one.
    """
    _load_builtin_claims()
    if claim_id not in CLAIMS:
        raise KeyError(f"unknown claim {claim_id!r}; known claims: {', '.join(CLAIMS)}")
    entry = CLAIMS[claim_id]
    start = time.perf_counter()
    evidence = entry.check(CheckContext(seed=seed, quick=quick))
    evidence = replace(evidence, expected=entry.expected, seconds=time.perf_counter() - start)
    if strict and not evidence.as_expected:
        raise ClaimFailed(f"claim {claim_id!r}: expected {entry.expected}, got {evidence.verdict}: {evidence.summary}")
    return evidence


def verify_all(*, seed: int = 0, quick: bool = False, ids: list[str] | None = None,
               progress: Callable[[str], None] | None = None) -> list[Evidence]:
    """Check every registered claim (or those in ``ids``), in registration order."""
    _load_builtin_claims()
    results = []
    for claim_id in ids or list(CLAIMS):
        if progress is not None:
            progress(claim_id)
        results.append(verify(claim_id, seed=seed, quick=quick))
    return results
