"""The data a claim check works with: :class:`CheckContext` in, :class:`Evidence` out.

This module is the bottom of the claims package: the built-in checks (``claims.builtin``), the
registry (``claims._registry``) and the report import it; it imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import sympy as sp

from .._html import evidence_html
from ..errors import AttnsymError, SpecError, SpecTypeError
from ..studies._streams import seed_sequence

__all__ = [
    "BY_CONSTRUCTION",
    "VERDICTS",
    "CheckContext",
    "Claim",
    "ClaimFailed",
    "Evidence",
    "RenderedFigure",
    "UnknownClaimError",
    "tex",
]

Verdict = Literal["holds", "fails", "holds-under-conditions"]
VERDICTS: tuple[str, ...] = ("holds", "fails", "holds-under-conditions")

#: The method label of a check that is true by construction: it compares attnsym with itself (or a
#: quantity with the formula it was built from), so it cannot fail and carries no information
#: about the claim. :attr:`Evidence.by_construction` lists such parts of a check; the report
#: shows them under this label, apart from the checks that could have failed.
BY_CONSTRUCTION = "true by construction"


class ClaimFailed(AttnsymError, AssertionError):
    """Raised by :func:`verify` with ``strict=True`` when a claim expected to hold does not."""


class UnknownClaimError(AttnsymError, KeyError):
    """A claim id that is not registered (the message lists the known ids)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


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

        Different keys give statistically independent streams (``SeedSequence`` hashes them;
        :func:`attnsym.studies.seed_sequence`, the one construction the studies use too).
        """
        return seed_sequence(self.seed, *key)

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
    by_construction : tuple of str
        Parts of the check that are :data:`BY_CONSTRUCTION` (each a sentence saying what and
        why: "the parameter count h·(d/h)·d = d² is an identity"). They are reported apart from
        ``method``, which names only what could have failed. Empty when every part of the check
        is falsifiable.
    source : str
        Where the claim comes from (an article, a paper and theorem); filled from the shipped
        claims list (:func:`attnsym.claims.catalogue`) when the check leaves it empty.
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
    by_construction: tuple[str, ...] = ()
    source: str = ""
    #: the JSON form of ``details`` and ``equations``, rendered by the worker process that ran the check
    #: (``verify_all(jobs > 1, render_json=True)``: printing SymPy objects is then done in parallel), or None.
    #: Not an init argument: :func:`dataclasses.replace` leaves it None, so changed evidence is rendered anew.
    rendered: dict[str, Any] | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise SpecError(f"verdict must be one of {VERDICTS} (got {self.verdict!r})")
        if isinstance(self.by_construction, str) or not all(isinstance(t, str) and t for t in self.by_construction):
            raise SpecTypeError(f"by_construction must be a tuple of non-empty strings (got {self.by_construction!r})")

    @property
    def as_expected(self) -> bool:
        """True when the verdict is the expected one ("holds-under-conditions" satisfies "holds")."""
        if self.verdict == self.expected:
            return True
        return self.expected == "holds" and self.verdict == "holds-under-conditions"

    def _repr_html_(self) -> str:
        return evidence_html(self, sp.latex)


@dataclass(frozen=True)
class RenderedFigure:
    """A figure of a claim already rendered, standing where :attr:`Evidence.figures` holds a callable.

    Claims checked in worker processes (``attnsym verify --jobs N``) come back with these: the
    figure callables are closures over the check's data that cannot leave the worker, so the
    worker renders the formats asked for and sends the bytes (``files``: format -> bytes),
    and, when asked, the PNG resampled to other resolutions (``previews``: dpi -> PNG bytes,
    :func:`attnsym.plots.files.resampled_png`; the explorer page's figures). The report writes
    them as they are. Calling it raises: the matplotlib figure stayed in
    the worker (check the claim with ``jobs=1`` to get it).
    """

    claim: str
    name: str
    files: dict[str, bytes] = field(default_factory=dict)
    previews: dict[int, bytes] = field(default_factory=dict)

    def __call__(self):
        raise SpecError(f"figure {self.name!r} of claim {self.claim!r} was rendered in a worker process "
                        f"(formats: {', '.join(sorted(self.files)) or 'none'}); check the claim with jobs=1 "
                        "for the matplotlib figure")


@dataclass(frozen=True)
class Claim:
    """A registered claim: id, one-sentence statement, expected verdict, its check and its source."""

    id: str
    statement: str
    check: Callable[[CheckContext], Evidence]
    expected: Verdict = "holds"
    source: str = ""


def tex(latex: str):
    """A SymPy symbol printed as the given LaTeX verbatim, for the left-hand sides of evidence equations.

    SymPy splits symbol names at ``_`` and ``^``; this one is printed as given.

    >>> import sympy as sp
    >>> print(sp.latex(sp.Eq(tex(r"\\operatorname{Var}[s_{ij}]"), 1)))
    \\operatorname{Var}[s_{ij}] = 1
    """
    if not isinstance(latex, str) or not latex:
        raise SpecTypeError(f"latex must be a non-empty string (got {latex!r})")
    return _TexSymbol(latex)


class _TexSymbol(sp.Symbol):
    """A symbol whose LaTeX is its name, verbatim."""

    def _latex(self, printer):
        return self.name


