"""One self-contained HTML file: the page's skeleton, KaTeX, the script, the style and the data, inlined.

The page loads nothing: KaTeX's script, stylesheet and woff2 fonts (``vendor/katex``, MIT,
re-created by ``vendor/update_katex.sh``) are inlined, fonts as ``data:`` URIs; figures are
``data:`` PNGs; a Content-Security-Policy forbids every fetch (``connect-src 'none'``, fonts
and images from ``data:`` only), so a browser refuses a network request even if one were
attempted. Opening the file from disk is enough.
"""

from __future__ import annotations

import base64
import html
import os
import re
import warnings
from functools import cache
from importlib import resources
from pathlib import Path

from .. import __version__
from .._io import atomic_write
from ..errors import SizeLimitError, SpecError
from .data import MAX_PAGE_BYTES, TOP_K, PageData

__all__ = ["CSP", "PageSizeWarning", "katex_css", "page_title", "render_page", "write_page"]


class PageSizeWarning(UserWarning):
    """The page stores some inputs bounded (each row's top weights), or is large; the message gives the size."""

#: what the page may load: nothing from a network, fonts and images only from data: URIs
CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; font-src data:; "
       "img-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'")

_FONT = re.compile(r"url\(fonts/(KaTeX_[A-Za-z0-9_-]+)\.woff2\) format\(\"woff2\"\)(?:,url\([^)]*\) format\(\"[a-z]+\"\))*")


def _asset(*parts: str) -> str:
    return resources.files("attnsym.explorer").joinpath(*parts).read_text(encoding="utf-8")


def _asset_bytes(*parts: str) -> bytes:
    return resources.files("attnsym.explorer").joinpath(*parts).read_bytes()


@cache
def katex_css() -> str:
    """KaTeX's stylesheet with every font inlined as a woff2 ``data:`` URI (no other font format kept)."""
    css = _asset("vendor", "katex", "katex.min.css")

    def inline(match: re.Match) -> str:
        font = base64.b64encode(_asset_bytes("vendor", "katex", "fonts", f"{match.group(1)}.woff2")).decode("ascii")
        return f'url(data:font/woff2;base64,{font}) format("woff2")'

    css = _FONT.sub(inline, css)
    left = re.findall(r"url\((?!data:)[^)]*\)", css)
    if left:  # a KaTeX update changed the stylesheet's font list: fail loudly rather than fetch
        raise RuntimeError(f"katex.min.css still references files after inlining: {left[:3]}")
    return css


_SKELETON = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="generator" content="attnsym {version}">
<title>{title}</title>
<style>{katex_css}</style>
<style>{css}</style>
</head>
<body>
<header class="top"><h1>{heading}</h1>
<nav aria-label="sections"><a href="#story">Story</a><a href="#headview">Head view</a>
<a href="#overview">All heads</a>
<a href="#routing">Routing</a><a href="#figures" id="nav-figures" hidden>Figures</a><a href="#claims">Claims</a>
<a href="#derivations">Derivations</a></nav>
</header>
<main>
<section class="part" id="story" aria-labelledby="h-story">
<h2 id="h-story">Attention computes its mixing weights from the input</h2>
<div id="story-lines" class="story-lines"></div>
<div id="story-picture"></div>
<div id="contrast"></div>
<div id="story-sqrt"></div>
<div id="results-strip"></div>
</section>
<section class="part" id="headview" aria-labelledby="h-headview">
<h2 id="h-headview">Head view</h2>
<p>Which token each token reads, one layer at a time: the attending token on the left, the key it reads on the right, one
colour per head. It opens on the head of the contrast above; pick a sentence, a layer and the heads to overlay.</p>
<div id="headview-body"></div>
</section>
<section class="part" id="overview" aria-labelledby="h-overview">
<h2 id="h-overview">All heads</h2>
<p>Every head's attention pattern for <span id="overview-input"></span>, one thumbnail per layer (rows) and head (columns),
each named by the patterns it follows (attnsym.heads). Click (or Enter) a thumbnail to open it in the head view and the routing
views. Query &darr;, key &rarr;.</p>
<div id="overview-grid"></div>
</section>
<section class="part" id="routing" aria-labelledby="h-routing">
<h2 id="h-routing">Routing</h2>
<p>Attention computes its mixing weights from the input, A(X) = softmax(Q K<sup>T</sup>/&radic;d<sub>k</sub>), so each input
has its own routing graph; the feed-forward graph is the same for every input. <span id="routing-source" class="muted"></span></p>
<div class="controls">
<span><label for="pick-input">Input</label> <select id="pick-input"></select></span>
<span><label for="pick-view">View</label> <select id="pick-view"></select></span>
<span><label for="pick-layer">Layer</label> <select id="pick-layer"></select></span>
<span><label for="pick-head">Head</label> <select id="pick-head"></select></span>
<span><label for="pick-threshold">Edges above</label>
<input id="pick-threshold" type="range" min="0" max="0.5" step="0.01" value="0">
<output id="threshold-value" for="pick-threshold">0.00</output></span>
</div>
<p><strong>Showing:</strong> <span id="routing-what"></span>. Tokens: hover to look, click or Enter to pin (a row or column label
or a graph node pins too), Escape unpins; arrows move. Keyboard: Tab into a heatmap or the distance grid, the arrows
move cell by cell, Enter or Space pins the cell's query token (in the grid: chooses the cell).</p>
<div id="routing-next"></div>
<div id="token-strip" role="toolbar" aria-label="tokens"></div>
<div id="token-panel" class="card" aria-live="polite"></div>
<div id="routing-views" class="views"></div>
<p id="mlp-note" class="muted"></p>
<div class="card explain" id="explain-rollout-flow">
<p><strong>Rollout</strong> (Abnar &amp; Zuidema, 2020, <em>Quantifying Attention Flow in Transformers</em>) multiplies
the layers' attention matrices, heads averaged, top layer on the left. Entry (i, j) estimates how much of input token j
reaches position i
if attention mixed linearly through the layers.</p>
<p><strong>Flow</strong> (same paper) treats the layers as a flow network whose capacities are those matrices and computes,
for each output i and input j, the maximum flow from j to i.
As in the authors' code each output's row is normalised to sum to 1.</p>
<p class="muted">Residual convention (both, as in the paper and <code>attnsym.graphs</code>): each layer's matrix is
&Acirc; = &frac12;A + &frac12;I, rows re-normalised to 1, before multiplying or building the network.</p>
</div>
</section>
<section class="part" id="figures" aria-labelledby="h-figures" hidden>
<h2 id="h-figures">Figures</h2>
<p id="figures-note">Drawn beside this page; click a figure to open its file at full size.</p>
<div id="figure-grid" class="figure-grid"></div>
<details id="files-fold"><summary id="files-summary">Every file written beside this page</summary>
<ul id="file-list"></ul></details>
</section>
<section class="part" id="claims" aria-labelledby="h-claims">
<h2 id="h-claims">Claims</h2>
<p>Each claim made about self-attention, checked symbolically, numerically or by Monte Carlo. Open a claim for its
evidence, conditions and figures.</p>
<div id="claim-list"></div>
</section>
<section class="part" id="derivations" aria-labelledby="h-derivations">
<h2 id="h-derivations">Derivations</h2>
<details id="derivations-fold">
<summary>The forward pass and its gradients, derived exactly by SymPy, step by step (open)</summary>
<p>Each step is explicit in the entries of the step before it. Every equation's LaTeX source is one click away.</p>
<div id="derivation-list"></div>
</details>
</section>
<footer id="meta"></footer>
</main>
<script type="application/json" id="attnsym-data">{data}</script>
<script>{katex_js}</script>
<script>{js}</script>
</body>
</html>
"""


def page_title(data: PageData) -> str:
    """The browser tab's title: the first contrast's word and sentences, then the page's title.

    >>> page_title(PageData(title="demo"))
    'demo'
    """
    if not data.contrasts:
        return data.title
    c = data.contrasts[0]
    a, b = (data.inputs[k].name for k in c.inputs)
    return f"“{c.word}” in “{a}” and “{b}” · {data.title}"


def render_page(data: PageData) -> str:
    """The page as one HTML string (everything inlined; see the module docstring).

    >>> page = render_page(PageData(title="demo"))
    >>> page.startswith("<!DOCTYPE html>"), "connect-src 'none'" in page, "http://" in page.split("<script")[0]
    (True, True, False)
    """
    if not isinstance(data, PageData):
        raise SpecError(f"data must be a PageData (got {type(data).__name__})")
    return _SKELETON.format(
        csp=CSP, version=__version__, title=html.escape(page_title(data)), heading=html.escape(data.title),
        katex_css=katex_css(),
        css=_asset("assets", "explorer.css"), data=data.to_json(),
        katex_js=_asset("vendor", "katex", "katex.min.js"), js=_asset("assets", "explorer.js"),
    )


def write_page(data: PageData, path: str | os.PathLike, *, overwrite: bool = False,
               max_bytes: int | None = MAX_PAGE_BYTES) -> Path:
    """Write the page atomically to ``path``; an existing file needs ``overwrite=True``.

    An input too large to store whole is stored bounded (:attr:`PageData.max_weights`, each
    row's top weights); the page says so, and a :class:`PageSizeWarning` gives its size.

    Raises
    ------
    OverwriteError
        ``path`` exists and ``overwrite`` is False.
    SizeLimitError
        The page would be larger than ``max_bytes`` (default :data:`~attnsym.explorer.data.MAX_PAGE_BYTES`);
        ``max_bytes=None`` writes it whatever its size.
    """
    if max_bytes is not None and (isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1):
        raise SpecError(f"max_bytes must be a positive integer or None (got {max_bytes!r})")
    page = render_page(data)
    size = len(page.encode("utf-8"))
    if max_bytes is not None and size > max_bytes:
        raise SizeLimitError(f"the page would be {size / 1e6:.1f} MB, above the {max_bytes / 1e6:.1f} MB cap (a browser may "
                             f"not open it); pass max_bytes=None (attnsym explore: --max-page-mb 0) to write it anyway, "
                             f"or route shorter texts")
    bounded = data.bounded_inputs()
    if bounded:
        warnings.warn(f"the page is {size / 1e6:.1f} MB, bounded: {len(bounded)} input(s) too large to store whole "
                      f"keep each row's top {TOP_K} weights ({', '.join(repr(b[:40]) for b in bounded)})",
                      PageSizeWarning, stacklevel=2)
    return atomic_write(path, page, overwrite=overwrite)
