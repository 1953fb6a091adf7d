"""HTML for Jupyter's ``_repr_html_``: interactive views of routes, head reports and contrasts; small tables.

A leaf module (NumPy and the standard library only), so every layer may use it for its own
result types. The heatmap is the page's heatmap: the same colour scale (:data:`BLUES`, the
page's ``sequential``), the same cell layout and ``data-i`` / ``data-j`` / ``data-w``
attributes; a browser test checks that the page and this module colour a matrix alike.
Math is written as ``$…$`` / ``$$…$$`` for the notebook's MathJax.

**Notebook views.** A :class:`~attnsym.models.Route`, a :class:`~attnsym.heads.HeadReport` and a
:class:`~attnsym.models.contrast.TokenContrast` show themselves in Jupyter as the explorer
shows them: a route as a heatmap of one layer and head and the head view of its layer (both
chosen with selectors), a head report as the layer × head grid of classes coloured by a chosen
score, a contrast as the distance grid whose cells open the word's two attention rows. Each view
is one ``<iframe srcdoc>`` holding the data (JSON) and a small script (``_notebook.js``): it
runs offline, with no server and no kernel round trip, and a Content-Security-Policy forbids
every request. Layers and heads are labelled from 1, and each view says so.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

__all__ = ["BLUES", "VIEW_CSP", "contrast_html", "evidence_html", "head_report_html", "heatmap_svg", "notebook_view",
           "route_html", "sequential", "table_html", "token_contrast_html"]

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


#: what a notebook view may load: nothing (its script and style are inline, its data in the page)
VIEW_CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
            "connect-src 'none'; form-action 'none'; base-uri 'none'")

_VIEW_STYLE = """body{font:13px system-ui,sans-serif;color:#1b1b1b;margin:6px}
.controls{display:flex;flex-wrap:wrap;gap:12px;align-items:center;margin:4px 0 8px}
.views{display:flex;flex-direction:column;gap:8px}figure{margin:0}figcaption,.muted{color:#5f6368;font-size:12px}
button.head-toggle{border:2px solid;border-radius:4px;margin:1px;padding:0 6px;background:#fff;cursor:pointer}
.pair{display:flex;flex-wrap:wrap;gap:24px}.bar{display:flex;gap:6px;align-items:center;height:20px}
.bar .tok{width:110px;overflow:hidden;white-space:nowrap;text-overflow:ellipsis}.bar.word .tok{font-weight:bold}
.bar .fill{display:inline-block;height:12px;border:1px solid #c6dbef}"""

_VIEW_DOC = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}"><title>{title}</title><style>{style}</style></head>
<body><div id="view"></div><script type="application/json" id="attnsym-view">{data}</script><script>{js}</script></body></html>"""


@cache
def _view_script() -> str:
    return resources.files("attnsym").joinpath("_notebook.js").read_text(encoding="utf-8")


def _json_in_script(data: Mapping[str, Any]) -> str:
    """JSON that cannot close its ``<script>`` element, whatever the texts hold (``</script>`` in a sentence).

    >>> _json_in_script({"text": "</script>"})
    '{"text":"\\\\u003c/script\\\\u003e"}'
    """
    text = json.dumps(data, allow_nan=False, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _grid(values: Any, decimals: int = 4) -> Any:
    """An array as nested lists rounded to ``decimals`` (NaN as None, JSON's null).

    >>> _grid([[0.123456, float("nan")]])
    [[0.1235, None]]
    """
    a = np.round(np.asarray(values, dtype=np.float64), decimals)
    out = a.astype(object)
    out[np.isnan(a)] = None
    return out.tolist()


def notebook_view(data: Mapping[str, Any], *, title: str, summary: str, height: int) -> str:
    """One interactive view: ``summary`` as a line of text, then an ``<iframe srcdoc>`` drawing ``data``.

    ``data["kind"]`` is ``"route"``, ``"heads"`` or ``"contrast"`` (what ``_notebook.js`` draws);
    the view loads nothing (:data:`VIEW_CSP`) and needs no server.

    >>> view = notebook_view({"kind": "heads", "layers": 1, "heads": 1, "patterns": ["self"], "scores": [[[1.0]]],
    ...                       "top": [[1.0]], "labels": [["self"]], "short": {"self": "self"}}, title="t",
    ...                      summary="one head", height=200)
    >>> view.startswith("<div") and "<iframe srcdoc=" in view and 'sandbox="allow-scripts"' in view
    True
    """
    doc = _VIEW_DOC.format(csp=VIEW_CSP, title=html.escape(title), style=_VIEW_STYLE,
                           data=_json_in_script({**data, "blues": [list(c) for c in BLUES]}), js=_view_script())
    return (f'<div class="attnsym-view"><p>{html.escape(summary)}</p>'
            f'<iframe srcdoc="{html.escape(doc, quote=True)}" sandbox="allow-scripts" title="{html.escape(title)}" '
            f'style="width:100%;height:{int(height)}px;border:1px solid #e0e0e0;resize:vertical"></iframe></div>')


def _heatmap_height(rows: int, cols: int, labels: Sequence[str]) -> int:
    """The height of :func:`heatmap_svg` (and of the script's heatmap) for these sizes and labels."""
    longest = max([len(str(t)) for t in labels] + [1])
    return min(120, 12 + 7 * longest) + rows * max(12, min(34, 440 // max(rows, cols))) + 8


def route_html(route: Any) -> str:
    """A route's interactive view: the heatmap of a chosen layer and head, and the head view of its layer."""
    labels = route.labels()
    n = route.n
    head_view = n * max(14, min(26, 440 // n)) + 70
    data = {"kind": "route", "model": route.model, "text": route.text, "tokens": labels, "layers": route.layers,
            "heads": route.heads, "attention_milli": np.rint(np.asarray(route.attention, dtype=np.float64) * 1000)
            .astype(np.int64).tolist()}  # thousandths: "123", not "0.1234" (the view shows 3 decimals)
    summary = (f"{route.model}: {route.text!r}, {n} tokens, {route.layers} layers × {route.heads} heads "
               "(layers and heads from 1; rows: query i, columns: key j)")
    return notebook_view(data, title=f"route of {route.text[:40]!r}", summary=summary,
                         height=150 + _heatmap_height(n, n, labels) + head_view)


def head_report_html(report: Any, short: Mapping[str, str]) -> str:
    """A head report's interactive view: the layer × head grid of classes, coloured by a chosen score."""
    data = {"kind": "heads", "layers": report.layers, "heads": report.heads, "patterns": list(report.patterns),
            "scores": _grid(report.scores), "top": _grid(report.top), "labels": [list(r) for r in report.primary],
            "short": dict(short)}
    summary = (f"head classes of {report.layers} layers × {report.heads} heads over {len(report.texts)} text(s) "
               "(L = layer, H = head, from 1)")
    rows = [f"L{k + 1}" for k in range(report.layers)]
    return notebook_view(data, title="head classes", summary=summary,
                         height=100 + _heatmap_height(report.layers, report.heads, rows))


def token_contrast_html(c: Any) -> str:
    """A word in two texts: the summary, the distance grid per layer and head, and the word's two rows at a cell."""
    layer, head = c.most_different()
    tokens = [r.labels() for r in c.routes]
    L, H = (int(k) for k in c.role_distance.shape)
    data = {"kind": "contrast", "words": [w.text for w in c.words], "texts": list(c.texts), "tokens": tokens,
            "positions": [list(w.positions) for w in c.words], "rows": [_grid(r) for r in c.rows],
            "distance": _grid(c.role_distance), "metric": "role distance", "layers": L, "heads": H,
            "cell": [layer, head]}
    reads = 60 + 20 * max(len(t) for t in tokens)
    return notebook_view(data, title=f"contrast of {c.token!r}", summary=c.summary(),
                         height=80 + _heatmap_height(L, H, [f"layer {L}"]) + reads)


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
