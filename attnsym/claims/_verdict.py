"""A verdict from named facts, and the summary clause that names the facts that failed.

A check collects its falsifiable conditions as ``{name: bool}`` (the names say what was
measured: ``"unscaled entropy ≤ ¼ log n at d = 4096"``); :func:`verdict` turns them into a
verdict and :func:`failed_clause` into the clause a failed summary ends with, so a summary never
reads as a pass when the verdict is "fails".

>>> facts = {"limit 0": True, "degree 2": False}
>>> verdict(facts), failed_clause(facts)
('fails', '; FAILED: degree 2')
"""

from __future__ import annotations

from collections.abc import Mapping

from ._evidence import Verdict

__all__ = ["failed", "failed_clause", "verdict"]


def failed(facts: Mapping[str, bool]) -> list[str]:
    """The names of the facts that do not hold, in order."""
    return [name for name, ok in facts.items() if not ok]


def verdict(facts: Mapping[str, bool], *, passing: Verdict = "holds") -> Verdict:
    """``passing`` when every fact holds, else ``"fails"``."""
    return "fails" if failed(facts) else passing


def failed_clause(facts: Mapping[str, bool]) -> str:
    """``"; FAILED: a, b"`` naming the facts that do not hold, or ``""`` when all hold."""
    names = failed(facts)
    return f"; FAILED: {', '.join(names)}" if names else ""
