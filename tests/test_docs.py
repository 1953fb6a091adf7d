"""The Python shown on the hand-written documentation pages runs as written."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = ["getting-started.md", "how-to/verify.md", "how-to/figures.md", "how-to/backends.md", "how-to/head-classes.md",
         "how-to/tables.md", "how-to/open-a-model-folder.md",
         "how-to/notebook.md", "how-to/next-token.md", "how-to/audit.md"]


def _python_blocks(page: str) -> list[str]:
    text = (DOCS / page).read_text(encoding="utf-8")
    return [block for block in re.findall(r"```python\n(.*?)```", text, re.S) if "--8<--" not in block]


@pytest.mark.parametrize("page", PAGES)
def test_python_blocks_run_in_order(page, tmp_path, monkeypatch):
    from attnsym.claims import CLAIMS

    if page in ("how-to/backends.md", "how-to/open-a-model-folder.md"):
        pytest.importorskip("torch")
    if page == "how-to/open-a-model-folder.md":  # writes a random checkpoint with transformers
        pytest.importorskip("transformers")
    monkeypatch.chdir(tmp_path)  # the snippets save figures into the working folder
    before = set(CLAIMS)
    namespace: dict = {}
    blocks = _python_blocks(page)
    assert blocks
    try:
        for block in blocks:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(block, f"docs/{page}", "exec"), namespace)
    finally:
        for claim_id in set(CLAIMS) - before:  # a page may register an example claim
            del CLAIMS[claim_id]
    if page == "how-to/verify.md":
        assert namespace["evidence"].verdict == "holds"
    if page == "how-to/next-token.md":  # what the page says the model answers
        assert namespace["top"][0][0] == " Paris" and namespace["g"].text == " Paris.\n\nThe"
        assert namespace["lens"].first_top == "layer 30"


def test_how_to_pages_include_the_tested_examples():
    included = set()
    for page in (DOCS / "how-to").glob("*.md"):
        included |= set(re.findall(r'--8<-- "([^"]+)"', page.read_text(encoding="utf-8")))
    examples = {p.name for p in (DOCS.parent / "examples").glob("*.py")}
    assert included == examples


def test_architecture_page_names_every_public_module():
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    package = DOCS.parent / "attnsym"
    public = sorted(p.stem if p.is_file() else p.name for p in package.iterdir()
                    if not p.name.startswith("_") and (p.suffix == ".py" or (p / "__init__.py").is_file()))
    missing = [name for name in public if f"attnsym.{name}" not in text]
    assert not missing, f"docs/architecture.md does not mention {missing}"
