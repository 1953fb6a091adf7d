"""The picture of docs/architecture.md: the layers and the arrows between their parts, drawn from the import graph.

The graph comes from ``tests/layers.py`` (every import statement of the package, the same data
``tests/test_layers.py`` checks for cycles and upward arrows); this script only lays it out and
draws it as SVG (matplotlib, offline). Layers are rows, bottom to top as in ``LAYERS``; within
a row the parts are ordered to keep arrows short (barycentre sweeps); an arrow ``a → b`` means
``a`` imports ``b``, and arrows implied by others are left out (``picture_edges``).
"""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path

import mkdocs_gen_files
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

ROOT = Path(__file__).resolve().parents[2]


def _layers():
    spec = importlib.util.spec_from_file_location("attnsym_layers", ROOT / "tests" / "layers.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def _order(rows: list[list[str]], edges: dict[str, set[str]], sweeps: int = 4) -> list[list[str]]:
    """Parts of each row sorted by the mean position of their neighbours in the rows above and below."""
    neighbours: dict[str, set[str]] = {p: set() for row in rows for p in row}
    for a, bs in edges.items():
        for b in bs:
            neighbours[a].add(b)
            neighbours[b].add(a)
    rows = [list(row) for row in rows]
    for _ in range(sweeps):
        x = {p: (k + 0.5) / len(row) for row in rows for k, p in enumerate(row)}
        for row in rows:
            keyed = [(sum(x[q] for q in neighbours[p]) / len(neighbours[p]) if neighbours[p] else x[p], k, p)
                     for k, p in enumerate(row)]
            row[:] = [p for _, _, p in sorted(keyed)]
    return rows


def import_graph_figure() -> Figure:
    layers = _layers()
    edges = layers.picture_edges(layers.import_graph())
    rows = _order([list(layer.parts) for layer in layers.LAYERS], edges)
    row_gap, box_h, char_w, left = 1.0, 0.46, 0.105, 2.3  # data units: one unit is one inch of the figure
    widths = {p: char_w * len(layers.label_of(p)) + 0.4 for row in rows for p in row}
    width = left + max(sum(widths[p] for p in row) + 0.3 * (len(row) + 1) for row in rows)
    height = row_gap * len(rows)
    fig = Figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(-row_gap / 2, height - row_gap / 2)
    ax.axis("off")
    centre: dict[str, tuple[float, float]] = {}
    half: dict[str, float] = {}
    for r, (layer, row) in enumerate(zip(layers.LAYERS, rows, strict=True)):
        y = r * row_gap
        ax.add_patch(FancyBboxPatch((0.05, y - 0.4), width - 0.1, 0.8, boxstyle="round,pad=0,rounding_size=0.08",
                                    facecolor="#f3f5f9" if r % 2 else "#e8ecf3", edgecolor="none", zorder=0))
        ax.text(0.2, y, layer.name, ha="left", va="center", fontsize=10, fontweight="bold", color="#34405a")
        gap = (width - left - sum(widths[p] for p in row)) / (len(row) + 1)  # spread the row over the band
        x = left + gap
        for part in row:
            w = widths[part]
            centre[part], half[part] = (x + w / 2, y), w / 2
            ax.add_patch(FancyBboxPatch((x, y - box_h / 2), w, box_h, boxstyle="round,pad=0,rounding_size=0.1",
                                        facecolor="white", edgecolor="#4c6ef5", linewidth=1.2, zorder=3))
            ax.text(x + w / 2, y, layers.label_of(part), ha="center", va="center", fontsize=9.5, family="monospace",
                    zorder=4)
            x += w + gap
    pairs = [(a, b) for a in sorted(edges) for b in sorted(edges[a])]
    down = [(a, b) for a, b in pairs if centre[a][1] != centre[b][1]]
    ports: dict[tuple[str, str, str], float] = {}  # arrows leave a box's bottom and enter a top side by side
    for part in centre:
        out = sorted((b for a, b in down if a == part), key=lambda b: centre[b][0])
        into = sorted((a for a, b in down if b == part), key=lambda a: centre[a][0])
        for side, others in (("out", out), ("in", into)):
            for k, other in enumerate(others):
                ports[(side, part, other)] = centre[part][0] + 1.6 * half[part] * ((k + 0.5) / len(others) - 0.5)
    for a, b in pairs:
        (xa, ya), (xb, yb) = centre[a], centre[b]
        if ya == yb:  # within a row: from bottom to bottom, dipping under the boxes between
            start, end = (xa, ya - box_h / 2), (xb, yb - box_h / 2)
            bend = 0.28 / abs(xb - xa) * (1 if xb > xa else -1)  # arc3: the control point rad·|ab| off the line
        else:
            start, end = (ports[("out", a, b)], ya - box_h / 2), (ports[("in", b, a)], yb + box_h / 2)
            skip = round((ya - yb) / row_gap)  # an arrow over several rows bows a little, past the boxes between
            bend = (0.2 if skip > 1 else 0.0) * (1 if end[0] >= start[0] else -1)
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=11, linewidth=1.0,
                                     color="#5c677d", alpha=0.75, connectionstyle=f"arc3,rad={bend}", zorder=2,
                                     shrinkA=0, shrinkB=1))
    return fig


figure = import_graph_figure()
buffer = io.BytesIO()
figure.savefig(buffer, format="svg", metadata={"Date": None})
with mkdocs_gen_files.open(_layers().PICTURE, "wb") as handle:
    handle.write(buffer.getvalue())
