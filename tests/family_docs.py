"""The model families the hand-written docs name, filled from the family table (used by test_family_docs.py).

A page names the families between markers, never by hand:

* ``<!-- families:begin ... -->`` … ``<!-- families:end -->``: the table
  :func:`attnsym.models.families.families_table`;
* ``<!-- family-names:begin -->`` … ``<!-- family-names:end -->``: the inline list
  :func:`attnsym.models.families.family_names`.

``python tests/family_docs.py`` lists the pages whose blocks are stale; ``--write`` rewrites them.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

TABLE = re.compile(r"(<!-- families:begin[^>]*-->\n)(.*?)(\n<!-- families:end -->)", re.S)
NAMES = re.compile(r"(<!-- family-names:begin -->)(.*?)(<!-- family-names:end -->)", re.S)


def pages() -> list[Path]:
    """The README and the hand-written pages (docs/gen writes the generated ones from the table at build time)."""
    return [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md") if "gen" not in p.relative_to(DOCS).parts)]


def filled(text: str) -> str:
    """``text`` with every family block replaced by what the family table says now."""
    from attnsym.models.families import families_table, family_names

    text = TABLE.sub(lambda m: m.group(1) + families_table() + m.group(3), text)
    return NAMES.sub(lambda m: m.group(1) + family_names() + m.group(3), text)


def blocks(text: str) -> int:
    """How many family blocks a page has."""
    return len(TABLE.findall(text)) + len(NAMES.findall(text))


def stale() -> list[Path]:
    """The pages whose family blocks differ from the table."""
    return [p for p in pages() if filled(p.read_text(encoding="utf-8")) != p.read_text(encoding="utf-8")]


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    for page in stale():
        if "--write" in sys.argv[1:]:
            page.write_text(filled(page.read_text(encoding="utf-8")), encoding="utf-8")
            print(f"wrote {page.relative_to(ROOT)}")
        else:
            print(f"stale: {page.relative_to(ROOT)}")
