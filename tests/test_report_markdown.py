"""The claims report reads right in a real Markdown engine: no stray emphasis, no Python reprs.

Two engines: markdown-it-py (CommonMark, as GitHub and most viewers parse it) with the math
spans protected as a math-aware viewer protects them, and Python-Markdown with the MkDocs
site's own extensions (arithmatex, tables), which is how the docs' claims page is built.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import markdown
import numpy as np
import pytest
import sympy as sp
from markdown_it import MarkdownIt

from attnsym.claims import Evidence
from attnsym.claims._markdown import NOT_APPLICABLE, text_markdown, value_markdown
from attnsym.claims.report import to_markdown

# what a Python repr looks like once it leaks into prose
REPR_PATTERNS = {
    "None": re.compile(r"\bNone\b"),
    "True/False": re.compile(r"\b(True|False)\b(?! by construction)"),
    "Matrix(": re.compile(r"\b(Immutable|Mutable)?(Dense)?Matrix\("),
    "list of strings": re.compile(r"\[\s*'"),
    "nested list": re.compile(r"\[\s*\["),
    # one number, or three and more, in brackets (two are an interval, [-1, 1])
    "list of numbers": re.compile(r"\[\s*-?\d[\d.e+-]*\s*(\]|(,\s*-?\d[\d.e+-]*\s*){2,}\])"),
    "Python power": re.compile(r"\w\*\*\d"),
    "dict": re.compile(r"\{\s*'"),
}
# the bold labels the report writes on purpose; any other <strong>/<em> came from the data
LABELS = {"Verdict:", "Method:", "Key evidence:", "Conditions:", "Source:", "True by construction"}


class _Prose(HTMLParser):
    """Collect the text outside code and math, and every emphasis element."""

    def __init__(self):
        super().__init__()
        self.text: list[str] = []
        self.emphasis: list[tuple[str, str]] = []
        self._skip = 0
        self._open: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag, attrs):
        classes = dict(attrs).get("class") or ""
        if tag in ("code", "pre", "script") or "arithmatex" in classes or "math" in classes:
            self._skip += 1
            self._open.append(("skip", []))
        elif tag in ("em", "strong"):
            self._open.append((tag, []))
        else:
            self._open.append(("", []))

    def handle_endtag(self, tag):
        if not self._open:
            return
        kind, words = self._open.pop()
        if kind == "skip":
            self._skip -= 1
        elif kind in ("em", "strong"):
            self.emphasis.append((kind, "".join(words).strip()))

    def handle_data(self, data):
        for kind, words in self._open:
            if kind in ("em", "strong"):
                words.append(data)
        if not self._skip:
            self.text.append(data)


_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)


def _commonmark_html(md: str) -> str:
    """markdown-it with math protected: each ``$…$`` / ``$$…$$`` becomes an opaque math element."""
    spans: list[str] = []

    def stash(m):
        spans.append(m.group(0))
        return f"MATHSPAN{len(spans) - 1}X"

    html = MarkdownIt("commonmark").enable("table").render(_MATH.sub(stash, md))
    return re.sub(r"MATHSPAN(\d+)X", lambda m: '<span class="math">m</span>', html)


def _mkdocs_html(md: str) -> str:
    return markdown.markdown(md, extensions=["tables", "pymdownx.arithmatex", "pymdownx.superfences"],
                             extension_configs={"pymdownx.arithmatex": {"generic": True}})


def _problems(md: str) -> list[str]:
    problems = []
    for engine, html in (("commonmark", _commonmark_html(md)), ("mkdocs", _mkdocs_html(md))):
        prose = _Prose()
        prose.feed(html)
        for kind, words in prose.emphasis:
            if not (kind == "strong" and words in LABELS):
                problems.append(f"{engine}: stray <{kind}> around {words[:60]!r}")
        text = "".join(prose.text)
        for name, pattern in REPR_PATTERNS.items():
            for m in pattern.finditer(text):
                problems.append(f"{engine}: Python repr ({name}) in {text[max(0, m.start() - 40):m.end() + 20]!r}")
        if "$" in text.replace("\\$", ""):
            problems.append(f"{engine}: unrendered math delimiter in the prose")
    return problems


def _tricky_evidence() -> Evidence:
    n, d, t = sp.symbols("n d t", positive=True)
    return Evidence(
        "tricky", "Cost is `n*(4*d*n - d + 2*n)` and _not_ emphasis.", "holds-under-conditions",
        method="symbolic proof (h = 1e-05) + numeric check", summary="ops = $2 d n^2 + n^2$; `32*t**2` per step",
        conditions=("d_model = h d_k", "|x| < 1"), by_construction=("the count `h*(d/h)*d` is an identity",),
        source="Vaswani et al. 2017, §3.2.1 *Scaled* Dot-Product",
        equations=(("cost", sp.Eq(sp.Symbol("C"), 2 * d * n**2 + n**2)), ("as text", "a*b*c")),
        details={
            "claimed": None,
            "MLP Jacobian": sp.Matrix([[sp.Symbol("W_{1,1}"), 0], [0, sp.Symbol("W_{1,1}")]]),
            "solutions t": [1 + 2 * sp.sqrt(2) * sp.log(3), 1 - sp.sqrt(2) * sp.log(19)],
            "names": ["self_attention", "recurrent"],
            "parameters for h = 1, 2, 4, 8": [1024],
            "routings": [[0.1, 0.9], [0.95, 0.05]],
            "exact": True,
            "shape": np.array([2, 8, 2]),
            "table": [{"layer": "self_attention", "claimed": None, "growth": 32 * t**2, "fit": [1, 2, 3]},
                      {"layer": "recurrent", "claimed": "O(n)", "growth": sp.Abs(t), "fit": (2.0, 9.5)}],
            "by kind": {"mul": n * d, "exp": n**2},
        },
    )


def test_tricky_values_render_as_math_code_or_words():
    md = to_markdown([_tricky_evidence()], seed=0, quick=True)
    assert _problems(md) == []
    assert r"$C = 2 d n^{2} + n^{2}$" not in md and "$$\nC = 2 d n^{2} + n^{2}\n$$" in md
    assert "| symbolic proof (h = 1e-05) + numeric check † |" in md and "**Source:** Vaswani" in md
    assert "- the count `h*(d/h)*d` is an identity" in md
    assert "`32*t**2`" in md and "- claimed: " + NOT_APPLICABLE in md
    assert "- routings: (0.1, 0.9), (0.95, 0.05)" in md
    assert r"\left[\begin{matrix}" in md  # the matrix is math, not Matrix([[...]])


def test_a_product_in_prose_is_never_emphasis():
    md = to_markdown([Evidence("p", "s", "holds", method="m", summary="n*(4*d*n - d + 2*n), 2*d*n**2 + n**2")],
                     seed=0, quick=True)
    assert [p for p in _problems(md) if "stray" in p] == []
    assert "Python power" in "\n".join(_problems(md))  # still caught: an expression belongs in math or code


def test_the_check_itself_sees_what_a_naive_report_leaks():
    """The detector is not vacuous: raw reprs and unescaped products are caught."""
    naive = "# r\n\n- claimed: None\n- t: ['1 + 2*sqrt(2)*log(3)']\n- ops: n*(4*d*n - d + 2*n)\n- M: Matrix([[1]])\n"
    found = "\n".join(_problems(naive))
    for what in ("None", "list of strings", "stray <em>", "Matrix("):
        assert what in found


@pytest.mark.parametrize(("value", "expected"), [
    (None, NOT_APPLICABLE), (False, "no"), (np.float64(1 / 3), "0.333333"), (float("inf"), "∞"),
    ([1, 2, 4], "1, 2, 4"), ((), ""), ({"a_b": 1}, r"a\_b: 1"), (sp.Rational(1, 10), r"$\frac{1}{10}$"),
])
def test_value_markdown(value, expected):
    assert value_markdown(value) == expected


def test_text_markdown_escapes_everything_but_code_and_math():
    assert text_markdown("a*b_c [x](y) <b> $x_1*y$ `p*q`") == r"a\*b\_c \[x\](y) \<b\> $x_1*y$ `p*q`"
    assert text_markdown("|a| `x|y` $|z|$", table=True) == r"\|a\| `x\|y` $\vert z\vert $"


@pytest.mark.slow
def test_every_builtin_claim_report_renders_cleanly(quick_evidence):
    md = to_markdown(quick_evidence, seed=0, quick=True)  # verify_all(seed=0, quick=True)
    problems = _problems(md)
    assert problems == [], "\n".join(problems[:30])
