"""Small HTML pieces for Jupyter's ``_repr_html_``: the explorer page's heatmap and tables, drawn in Python.

A leaf module (NumPy and the standard library only), so every layer may use it for its own
result types. The heatmap is the page's heatmap: the same colour scale (:data:`BLUES`, the
page's ``sequential``), the same cell layout and ``data-i`` / ``data-j`` / ``data-w``
attributes; a browser test checks that the page and this module colour a matrix alike.
Math is written as ``$…$`` / ``$$…$$`` for the notebook's MathJax.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = ["BLUES", "contrast_html", "evidence_html", "heatmap_svg", "route_html", "sequential", "table_html",
           "token_contrast_html"]

#: the page's sequential colour scale, from 0 (white) to 1 (dark blue)
BLUES: tuple[tuple[int, int, int], ...] = ((247, 251, 255), (198, 219, 239), (107, 174, 214), (33, 113, 181), (8, 48, 107))


def _round_half_up(x: float) -> int:
    """JavaScript's ``Math.round`` (halves round up), so the page and this module agree to the unit."""
    return int(np.floor(x + 0.5))


def sequential(t: float) -> str:
    """The colour of weight ``t`` (clipped to [0, 1]) as ``rgb(r,g,b)``, exactly as the page computes it.

    >>> sequential(0.0), sequential(1.0), sequential(0.5)
    ('rgb(247,251,255)', 'rgb(8,48,107)', 'rgb(107,174,214)')
    """
    t = min(1.0, max(0.0, float(t)))
    x = t * (len(BLUES) - 1)
    k = min(len(BLUES) - 2, int(np.floor(x)))
    f = x - k
    return "rgb(" + ",".join(str(_round_half_up(a + f * (b - a))) for a, b in zip(BLUES[k], BLUES[k + 1], strict=True)) + ")"


def heatmap_svg(M: Any, rows: Sequence[str], cols: Sequence[str] | None = None, *, title: str = "",
                decimals: int = 3) -> str:
    """An SVG heatmap of ``M`` (rows × columns), coloured by :func:`sequential`, a tooltip per cell.

    >>> svg = heatmap_svg(np.array([[1.0, 0.0], [0.25, 0.75]]), ["the", "cat"], title="A")
    >>> svg.startswith("<svg") and svg.count("<rect") == 4 and 'data-w="0.25"' in svg
    True
    """
    M = np.asarray(M, dtype=np.float64)
    cols = list(rows) if cols is None else list(cols)
    rows = list(rows)
    n, m = M.shape
    longest = max([len(str(t)) for t in rows + cols] + [1])
    cell = max(12, min(34, 440 // max(n, m)))
    pad, font = min(120, 12 + 7 * longest), max(9, min(13, cell - 4))
    width, height = pad + m * cell + 8, pad + n * cell + 8
    esc = html.escape
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             f'role="img" aria-label="{esc(title)}" style="font-family:system-ui,sans-serif">', f"<title>{esc(title)}</title>"]
    for j, t in enumerate(cols):
        x, y = pad + (j + 0.5) * cell, pad - 6
        parts.append(f'<text x="{x:g}" y="{y}" font-size="{font}" transform="rotate(-55 {x:g} {y})">{esc(str(t))}</text>')
    for i, t in enumerate(rows):
        parts.append(f'<text x="{pad - 6}" y="{pad + (i + 0.5) * cell + font / 3:g}" font-size="{font}" '
                     f'text-anchor="end">{esc(str(t))}</text>')
    for i in range(n):
        for j in range(m):
            w = float(M[i, j])
            parts.append(f'<rect x="{pad + j * cell}" y="{pad + i * cell}" width="{cell}" height="{cell}" fill="{sequential(w)}" '
                         f'stroke="#ffffff" stroke-width="0.5" data-i="{i}" data-j="{j}" data-w="{w!r}">'
                         f"<title>{esc(str(rows[i]))} ← {esc(str(cols[j]))}: {w:.{decimals}f}</title></rect>")
    parts.append("</svg>")
    return "".join(parts)


def table_html(columns: Sequence[str], rows: Iterable[Sequence[Any]], *, decimals: int = 3) -> str:
    """A plain HTML table; floats printed with ``decimals`` decimals, everything escaped.

    >>> table_html(["a", "b"], [[1, 0.5], ["<x>", 2.0]])
    '<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>0.500</td></tr><tr><td>&lt;x&gt;</td><td>2.000</td></tr></table>'
    """
    def cell(v: Any) -> str:
        if isinstance(v, float | np.floating):
            return f"{float(v):.{decimals}f}"
        return html.escape(str(v))

    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


_VERDICT_COLOUR = {"holds": "#1a7f37", "holds-under-conditions": "#9a6700", "fails": "#b3261e"}


def evidence_html(ev: Any, latex: Any) -> str:
    """A claim's Evidence as HTML: verdict, method, key evidence, conditions and equations (``$$`` math).

    ``latex`` turns a SymPy object into LaTeX (``sympy.latex``); plain text is escaped.
    """
    esc = html.escape
    colour = _VERDICT_COLOUR.get(ev.verdict, "#1b1b1b") if ev.as_expected else "#b3261e"
    expected = "" if ev.as_expected else f" (expected {esc(ev.expected)})"
    parts = [f"<div><p><code>{esc(ev.claim)}</code>: <strong style=\"color:{colour}\">{esc(ev.verdict)}</strong>{expected}"
             f" — {esc(ev.method)}</p>", f"<p>{esc(ev.statement)}</p>", f"<p><em>Key evidence:</em> {esc(ev.summary)}</p>"]
    if ev.conditions:
        parts.append("<p><em>Conditions:</em></p><ul>" + "".join(f"<li>{esc(c)}</li>" for c in ev.conditions) + "</ul>")
    if getattr(ev, "by_construction", ()):
        parts.append("<p><em>True by construction:</em></p><ul>"
                     + "".join(f"<li>{esc(c)}</li>" for c in ev.by_construction) + "</ul>")
    for title, eq in ev.equations:
        parts.append(f"<p>{esc(title)}</p><p>$${esc(latex(eq))}$$</p>")
    if getattr(ev, "source", ""):
        parts.append(f"<p><em>Source:</em> {esc(ev.source)}</p>")
    parts.append("</div>")
    return "".join(parts)


def route_html(route: Any) -> str:
    """A model's route: the text, its tokens, and each layer's attention (mean over heads) as heatmaps."""
    esc = html.escape
    labels = route.labels()
    maps = "".join(
        '<figure style="display:inline-block;margin:4px">'
        + heatmap_svg(route.attention[layer].mean(axis=0), labels, title=f"layer {layer + 1}, mean over heads")
        + f"<figcaption>layer {layer + 1}, mean over {route.heads} heads</figcaption></figure>"
        for layer in range(route.layers))
    return (f"<div><p><strong>{esc(route.model)}</strong>: {esc(repr(route.text))}, {route.n} tokens, "
            f"{route.layers} layers × {route.heads} heads (rows: query i, columns: key j)</p>"
            f"<p><code>{esc(' '.join(labels))}</code></p>{maps}</div>")


def token_contrast_html(c: Any) -> str:
    """A word in two texts: the summary sentence and the role distance per layer and head."""
    L, H = c.role_distance.shape
    grid = heatmap_svg(c.role_distance, [f"layer {layer + 1}" for layer in range(L)], [f"head {h + 1}" for h in range(H)],
                       title="role distance per layer and head")
    return f"<div><p>{html.escape(c.summary())}</p>{grid}</div>"


def contrast_html(c: Any) -> str:
    """Same weights, two inputs: the verdict in numbers and each head's attention for both inputs."""
    heads1 = c.A1[None] if c.A1.ndim == 2 else c.A1
    heads2 = c.A2[None] if c.A2.ndim == 2 else c.A2
    n = heads1.shape[-1]
    tokens = [str(c.attention1[0].nodes[i].get("token", i + 1)) for i in range(n)]
    figures = "".join(
        f'<figure style="display:inline-block;margin:4px">{heatmap_svg(A, tokens, title=f"input {k}, head {h + 1}")}'
        f"<figcaption>input {k}, head {h + 1}</figcaption></figure>"
        for h in range(heads1.shape[0]) for k, A in ((1, heads1[h]), (2, heads2[h])))
    facts = table_html(["MLP graphs identical", "attention graphs identical", "routing distance (mean over heads)"],
                       [[str(c.mlp_identical), str(c.attention_identical), float(c.attention_distance)]])
    return f"<div>{facts}{figures}</div>"
