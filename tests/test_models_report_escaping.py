"""route's report.md shows a user's text literally: no live HTML, no Markdown emphasis (issue 26, item 6)."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from attnsym.models.report import _code, _plain, route_markdown

HOSTILE = "<img src=x onerror=alert(1)> -2*p*(p - 1) __bold__ `tick` a|b [link](http://x)"


def _rendered(markdown: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(markdown)


def test_plain_text_renders_as_the_same_characters():
    html = _rendered(_plain(HOSTILE))
    assert "<img" not in html and "<em>" not in html and "<strong>" not in html and "<a " not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "-2*p*(p - 1)" in html


@pytest.mark.parametrize("text", ["a`b", "`starts", "ends`", "``double``", "pipe | inside", ""])
def test_a_code_span_cannot_be_closed_by_the_text(text):
    html = _rendered(f"| cell |\n|---|\n| {_code(text)} |\n")
    assert html.count("<code>") == 1
    assert " ".join(text.split()) in html.replace("&quot;", '"') or not text.strip()


def test_route_report_escapes_the_text():
    at = pytest.importorskip("attnsym")
    try:
        model = at.models.load("all-MiniLM-L6-v2")
    except at.AttnsymError as exc:  # the packaged model is not installed
        pytest.skip(str(exc))
    html = _rendered(route_markdown(model.route(HOSTILE)))
    assert "<img" not in html and "<em>" not in html and "<strong>" not in html
    assert "onerror=alert(1)&gt;" in html
