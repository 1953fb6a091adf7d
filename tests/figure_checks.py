"""Layout checks of a rendered matplotlib figure, from the bounding boxes matplotlib computes.

:func:`layout_problems` draws a figure (Agg) and lists what a reader would see as broken:

* tick labels of one axis that overlap each other, or any other text of the figure
  (titles, axis labels, annotations, legends) that overlaps a tick label;
* a legend through which data runs (a line, its markers, a scatter point or a bar);
* a text of an axes (annotation, label) that straddles the axes frame or leaves the figure;
* a character the font cannot draw, or an emoji (many machines' fonts lack them: a box).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np

PAD = 1.0  # pixels: boxes that merely touch do not overlap


def _overlap(a, b) -> bool:
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > PAD) and (min(a.y1, b.y1) - max(a.y0, b.y0) > PAD)


def _visible_text(t) -> bool:
    return t.get_visible() and bool(t.get_text().strip()) and t.get_alpha() != 0


def _tick_labels(ax, renderer):
    out = []
    for axis in (ax.xaxis, ax.yaxis):
        labels = []
        for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
            for label in (tick.label1, tick.label2):
                if label.get_visible() and label.get_text().strip() and tick.get_visible():
                    labels.append(label)
        boxes = [(lab, lab.get_window_extent(renderer)) for lab in labels]
        # only ticks inside the axes' view interval are drawn
        lo, hi = sorted(axis.get_view_interval())
        kept = []
        for lab, box in boxes:
            pos = lab.get_position()[0 if axis is ax.xaxis else 1]
            if lo - 1e-12 * abs(hi - lo) <= pos <= hi + 1e-12 * abs(hi - lo):
                kept.append((lab, box))
        out.append((axis.axis_name, kept))
    return out


def _data_points(ax, renderer, step: float = 2.0) -> np.ndarray:
    """Display coordinates of everything an axes draws as data, densely sampled along lines."""
    pts = []
    for line in ax.get_lines():
        if not line.get_visible():
            continue
        xy = line.get_transform().transform(np.column_stack(line.get_data()).astype(float))
        xy = xy[np.all(np.isfinite(xy), axis=1)]
        if line.get_linestyle() not in ("None", "", " ") and len(xy) > 1:
            for a, b in itertools.pairwise(xy):
                k = max(2, int(np.hypot(*(b - a)) / step))
                pts.append(a + np.linspace(0, 1, k)[:, None] * (b - a))
        elif len(xy):
            pts.append(xy)
    for coll in ax.collections:
        if not coll.get_visible():
            continue
        offsets = coll.get_offsets()
        if len(offsets) and coll.get_offset_transform() is not None:
            xy = coll.get_offset_transform().transform(np.asarray(offsets, float))
            pts.append(xy[np.all(np.isfinite(xy), axis=1)])
        for path in coll.get_paths():
            verts = coll.get_transform().transform(path.vertices) if len(path.vertices) else path.vertices
            if len(verts) > 1 and not len(offsets):
                for a, b in itertools.pairwise(verts):
                    k = max(2, int(np.hypot(*(b - a)) / step))
                    pts.append(a + np.linspace(0, 1, k)[:, None] * (b - a))
    for patch in ax.patches:
        if patch.get_visible():
            box = patch.get_window_extent(renderer)
            if box.width > 0 and box.height > 0 and box.width * box.height < 0.5 * ax.bbox.width * ax.bbox.height:
                xs = np.linspace(box.x0, box.x1, max(2, int(box.width / step)))
                ys = np.linspace(box.y0, box.y1, max(2, int(box.height / step)))
                pts.append(np.array([(x, y) for x in xs for y in ys]))
    if not pts:
        return np.zeros((0, 2))
    xy = np.concatenate(pts)
    inside = ax.bbox
    keep = (xy[:, 0] >= inside.x0) & (xy[:, 0] <= inside.x1) & (xy[:, 1] >= inside.y0) & (xy[:, 1] <= inside.y1)
    return xy[keep]


def _inside(points: np.ndarray, box) -> np.ndarray:
    return ((points[:, 0] > box.x0 + PAD) & (points[:, 0] < box.x1 - PAD)
            & (points[:, 1] > box.y0 + PAD) & (points[:, 1] < box.y1 - PAD))


def _is_emoji(ch: str) -> bool:
    code = ord(ch)
    return code >= 0x1F000 or code == 0xFE0F or 0x2600 <= code <= 0x27BF or 0x2B00 <= code <= 0x2BFF


def _glyph_problems(fig, name: str) -> list[str]:
    """Characters of the figure's texts that are emoji, or that the text's font has no glyph for."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    problems = []
    fonts: dict[str, FT2Font] = {}
    for t in fig.findobj(lambda a: type(a).__name__ in ("Text", "Annotation")):
        text = t.get_text()
        if not text.strip() or not t.get_visible():
            continue
        plain = text if text.count("$") < 2 else "".join(text.split("$")[0::2])  # mathtext has its own fonts
        path = font_manager.findfont(t.get_fontproperties())
        font = fonts.setdefault(path, FT2Font(path))
        for ch in set(plain):
            if _is_emoji(ch):
                problems.append(f"{name}: emoji {ch!r} (U+{ord(ch):04X}) in {text[:40]!r}: many fonts draw a box")
            elif ch.isprintable() and not ch.isspace() and font.get_char_index(ord(ch)) == 0:
                problems.append(f"{name}: Glyph {ch!r} (U+{ord(ch):04X}) missing from {path.rsplit('/', 1)[-1]}")
    return problems


def layout_problems(fig, name: str = "figure") -> list[str]:
    """Every layout defect found in ``fig`` (an empty list when it reads cleanly)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig) if not isinstance(fig.canvas, FigureCanvasAgg) else fig.canvas
    problems: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        canvas.draw()
    for w in caught:
        if "missing from" in str(w.message) or "Glyph" in str(w.message):
            problems.append(f"{name}: {w.message}")
    problems += _glyph_problems(fig, name)
    renderer = canvas.get_renderer()
    extents: dict[int, object] = {}

    def extent(artist):
        """``artist.get_window_extent(renderer)``, measured once: nothing moves after the draw, and a legend's or a
        text's box is compared with every tick label."""
        if id(artist) not in extents:
            extents[id(artist)] = artist.get_window_extent(renderer)
        return extents[id(artist)]

    fig_box = fig.bbox
    texts = [t for t in fig.findobj(lambda a: type(a).__name__ in ("Text", "Annotation")) if _visible_text(t)]
    every_tick = {id(lab) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
                  for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()] for lab in (tick.label1, tick.label2)}
    texts = [t for t in texts if id(t) not in every_tick]
    drawn_ticks: list = []
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        ticks = _tick_labels(ax, renderer) if ax.axison else []
        drawn_ticks += [lab for _, kept in ticks for lab, _ in kept]
        extents.update((id(lab), box) for _, kept in ticks for lab, box in kept)
        for axis_name, kept in ticks:
            kept.sort(key=lambda lb: (lb[1].x0, lb[1].y0))
            for i, (a, box_a) in enumerate(kept):
                for b, box_b in kept[i + 1:]:
                    if _overlap(box_a, box_b) and a.get_text() != b.get_text():
                        problems.append(f"{name}: {axis_name} tick labels {a.get_text()!r} and {b.get_text()!r} overlap")
            for lab, box in kept:
                for t in texts:
                    if _overlap(box, extent(t)):
                        problems.append(f"{name}: text {t.get_text()[:40]!r} overlaps {axis_name} tick label "
                                        f"{lab.get_text()!r}")
                for leg in legends:
                    if _overlap(box, extent(leg)):
                        problems.append(f"{name}: a legend overlaps {axis_name} tick label {lab.get_text()!r}")
        # texts of this axes (annotations, ax.text) must not straddle its frame
        frame = ax.get_window_extent(renderer)
        for t in ax.texts:
            if not _visible_text(t) or not ax.axison:
                continue
            box = extent(t)
            crosses_x = box.x0 < frame.x0 - PAD < box.x1 or box.x0 < frame.x1 + PAD < box.x1
            crosses_y = box.y0 < frame.y0 - PAD < box.y1 or box.y0 < frame.y1 + PAD < box.y1
            inside_x = box.x1 > frame.x0 and box.x0 < frame.x1
            inside_y = box.y1 > frame.y0 and box.y0 < frame.y1
            if (crosses_x and inside_y) or (crosses_y and inside_x):
                problems.append(f"{name}: text {t.get_text()[:40]!r} straddles the axes frame")
    # legends against data: every legend against the data of every axes (twin axes share a frame)
    for ax in fig.axes:
        points = _data_points(ax, renderer)
        if not len(points):
            continue
        for leg in legends:
            box = extent(leg)
            hits = int(_inside(points, box).sum())
            if hits:
                problems.append(f"{name}: data runs through the legend ({hits} sampled points inside it)")
    for t in [*texts, *drawn_ticks]:
        box = extent(t)
        if box.x0 < fig_box.x0 - PAD or box.x1 > fig_box.x1 + PAD or box.y0 < fig_box.y0 - PAD or box.y1 > fig_box.y1 + PAD:
            problems.append(f"{name}: text {t.get_text()[:40]!r} leaves the figure")
    return sorted(set(problems))
