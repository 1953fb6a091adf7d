"""The claim registry and the :class:`Evidence` a claim check returns.

A claim check is a plain function ``check(ctx: CheckContext) -> Evidence`` registered under a
stable id with :func:`claim`. It composes the symbolic, numeric and graph layers and owns no
mathematics of its own. Users register their own claims with the same decorator.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from ..errors import AttnsymError

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

Verdict = Literal["holds", "fails", "holds-under-conditions"]
VERDICTS: tuple[str, ...] = ("holds", "fails", "holds-under-conditions")


class ClaimFailed(AttnsymError, AssertionError):
    """Raised by :func:`verify` with ``strict=True`` when a claim expected to hold does not."""


class UnknownClaimError(AttnsymError, KeyError):
    """A claim id that is not registered (the message lists the known ids)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


#: The ids of CLAIMS.md in the order of that document; :func:`verify_all` reports the built-in
#: claims in this order, then user-registered claims in registration order.
CLAIM_ORDER: tuple[str, ...] = (
    "variance-scaling",
    "softmax-saturation",
    "dynamic-routing",
    "hypernetwork-view",
    "two-token-example",
    "global-path-length",
    "parallelism",
    "quadratic-cost",
    "qk-asymmetry",
    "permutation-equivariance",
    "sinusoidal-positions",
    "multi-head",
    "weights-not-preset",
    "softmax-jacobian",
    "kv-cache",
    "blockwise-exact",
    "no-locality-bias",
    "gelu",
)


@dataclass(frozen=True)
class CheckContext:
    """What a check may depend on: a seed (all randomness derives from it) and the effort level.

    ``quick=True`` asks for the smallest sizes and sample counts that still make the check
    meaningful (used by ``attnsym verify --quick`` and CI).
    """

    seed: int = 0
    quick: bool = False
    progress: Callable[[int, int], None] | None = field(default=None, compare=False, repr=False)

    def advance(self, done: int, total: int) -> None:
        """Report that ``done`` of ``total`` steps of a long check are finished (drives the CLI's progress bar)."""
        if self.progress is not None:
            self.progress(done, total)

    def seed_sequence(self, *key: int | str) -> np.random.SeedSequence:
        """An independent seed for one part of a check, reproducible from the seed and ``key``.

        Different keys give statistically independent streams (``SeedSequence`` hashes them).
        """
        words = [self.seed] + [int.from_bytes(hashlib.sha256(str(k).encode()).digest()[:4], "little") for k in key]
        return np.random.SeedSequence(words)

    def rng(self, *key: int | str) -> np.random.Generator:
        """An independent generator for one part of a check, reproducible from the seed and ``key``."""
        return np.random.default_rng(self.seed_sequence(*key))


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


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer (got {seed!r})")
    return int(seed)


def verify(claim_id: str, *, seed: int = 0, quick: bool = False, strict: bool = False,
           progress: Callable[[int, int], None] | None = None) -> Evidence:
    """Check one claim and return its :class:`Evidence`.

    Parameters
    ----------
    claim_id : str
        A registered id (``list(attnsym.claims.CLAIMS)`` lists them, after the first call).
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
    _load_builtin_claims()
    seed = _check_seed(seed)
    if claim_id not in CLAIMS:
        raise UnknownClaimError(f"unknown claim {claim_id!r}; known claims: {', '.join(ordered_ids())}")
    entry = CLAIMS[claim_id]
    start = time.perf_counter()
    evidence = entry.check(CheckContext(seed=seed, quick=bool(quick), progress=progress))
    if not isinstance(evidence, Evidence):
        raise TypeError(f"the check of claim {claim_id!r} must return an Evidence (got {type(evidence).__name__})")
    evidence = replace(evidence, claim=claim_id, statement=evidence.statement or entry.statement,
                       expected=entry.expected, seconds=time.perf_counter() - start)
    if strict and not evidence.as_expected:
        raise ClaimFailed(f"claim {claim_id!r}: expected {entry.expected}, got {evidence.verdict}: {evidence.summary}")
    return evidence


def ordered_ids() -> list[str]:
    """Every registered claim id: those of CLAIMS.md in its order, then user claims in registration order."""
    _load_builtin_claims()
    builtin = [cid for cid in CLAIM_ORDER if cid in CLAIMS]
    return builtin + [cid for cid in CLAIMS if cid not in CLAIM_ORDER]


def verify_all(*, seed: int = 0, quick: bool = False, ids: list[str] | None = None,
               progress: Callable[[str], None] | None = None) -> list[Evidence]:
    """Check every registered claim (or those in ``ids``), CLAIMS.md order first (see :func:`ordered_ids`).

    ``progress(claim_id)`` is called before each check starts.
    """
    _load_builtin_claims()
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
