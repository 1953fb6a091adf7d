"""The claims list shipped with attnsym (``claims.toml``): ids, statements, sources, expected verdicts.

One file is the source of every statement a built-in check reports, of ``attnsym verify --list``
and of the generated docs page: the checks read their statement from here, so the list a user
reads and the claim that is checked cannot drift apart (a test ties the registry to this list).

>>> from attnsym.claims.catalogue import catalogue, entry
>>> entry("gelu").source
'Hendrycks & Gimpel 2016, Gaussian Error Linear Units (GELUs)'
>>> [e.id for e in catalogue()][:3]
['variance-scaling', 'softmax-saturation', 'dynamic-routing']
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

from ..errors import SpecError
from ._evidence import VERDICTS, CheckContext, Claim, Evidence, UnknownClaimError

__all__ = ["GROUPS", "ClaimEntry", "builtin_claim", "catalogue", "catalogue_markdown", "entry", "statement"]

#: The groups of the claims list, in report order.
GROUPS: dict[str, str] = {
    "source": "Claims of the source material",
    "literature": "Beyond the source material: the limits of attention",
    "positions": "Positions as used today",
}

_FIELDS = ("id", "group", "statement", "check", "expected", "source")


@dataclass(frozen=True)
class ClaimEntry:
    """One claim of the shipped list.

    Attributes
    ----------
    id : str
        Stable id, e.g. ``"variance-scaling"``.
    group : {"source", "literature", "positions"}
        See :data:`GROUPS`.
    statement : str
        The claim, as the check understands it.
    check : str
        What a check looks like (and what would make it fail).
    expected : {"holds", "fails", "holds-under-conditions"}
        The verdict the statement leads one to expect.
    source : str
        Where the claim comes from.
    """

    id: str
    group: str
    statement: str
    check: str
    expected: str
    source: str


@functools.cache
def catalogue() -> tuple[ClaimEntry, ...]:
    """Every claim of the shipped list, in report order (read once from ``attnsym/claims/claims.toml``)."""
    text = resources.files(__package__).joinpath("claims.toml").read_text(encoding="utf-8")
    entries = []
    for raw in tomllib.loads(text)["claim"]:
        missing = [f for f in _FIELDS if not isinstance(raw.get(f), str) or not raw[f]]
        extra = sorted(set(raw) - set(_FIELDS))
        if missing or extra:  # the file ships with the package: a malformed entry is a packaging bug
            raise SpecError(f"claims.toml entry {raw.get('id')!r}: missing or empty {missing}, unknown fields {extra}")
        if raw["group"] not in GROUPS or raw["expected"] not in VERDICTS:
            raise SpecError(f"claims.toml entry {raw['id']!r}: group must be one of {tuple(GROUPS)} and expected one "
                             f"of {VERDICTS} (got {raw['group']!r}, {raw['expected']!r})")
        entries.append(ClaimEntry(**{f: raw[f] for f in _FIELDS}))
    ids = [e.id for e in entries]
    if len(set(ids)) != len(ids):
        raise SpecError(f"claims.toml has duplicate ids: {sorted({i for i in ids if ids.count(i) > 1})}")
    return tuple(entries)


def entry(claim_id: str) -> ClaimEntry:
    """The entry of ``claim_id`` in the shipped list.

    Raises
    ------
    UnknownClaimError
        ``claim_id`` is not in the list (the message lists the known ids).
    """
    for e in catalogue():
        if e.id == claim_id:
            return e
    raise UnknownClaimError(f"unknown claim {claim_id!r}; the claims list has: {', '.join(e.id for e in catalogue())}")


def statement(claim_id: str) -> str:
    """The statement of ``claim_id`` as shipped (what the built-in check reports).

    >>> statement("softmax-jacobian")
    'The softmax Jacobian is diag(a) − a aᵀ.'
    """
    return entry(claim_id).statement


def builtin_claim(claim_id: str, check: Callable[[CheckContext], Evidence]) -> Claim:
    """A :class:`~attnsym.claims.Claim` for ``check`` with the statement, expected verdict and source of the list.

    Each built-in claim module ends with a plain tuple of these, ``CLAIMS = (builtin_claim(...), ...)``;
    :mod:`attnsym.claims.builtin` lists the modules and the registry is built from them, explicitly.
    """
    e = entry(claim_id)
    return Claim(e.id, e.statement, check, e.expected, e.source)  # type: ignore[arg-type]


def _cell(text: str) -> str:
    return text.replace("|", r"\|").replace("\n", " ")


def catalogue_markdown() -> str:
    """The claims list as a Markdown page: one table per group (id, statement, what a check looks like, source).

    >>> page = catalogue_markdown()
    >>> page.splitlines()[0]
    '# The claims'
    >>> "`softmax-jacobian`" in page
    True
    """
    lines = ["# The claims", "",
             "Every claim attnsym checks, as shipped with the package (`attnsym/claims/claims.toml`, also printed by "
             "`attnsym verify --list`). `attnsym verify ID` checks one; the verdicts with their evidence are in the "
             "[claims report](claims.md).", ""]
    for group, title in GROUPS.items():
        entries = [e for e in catalogue() if e.group == group]
        if not entries:
            continue
        lines += [f"## {title}", "", "| id | claim | what a check looks like | expected | source |",
                  "|---|---|---|---|---|"]
        lines += [f"| `{e.id}` | {_cell(e.statement)} | {_cell(e.check)} | {e.expected} | {_cell(e.source)} |"
                  for e in entries]
        lines.append("")
    return "\n".join(lines)
