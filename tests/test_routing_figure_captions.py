"""The routing figures' captions: whole, inside the figure, and saying the same thing for both panels of a row."""

from __future__ import annotations

import numpy as np
import pytest

from attnsym import AttentionSpec, graphs, plots
from attnsym.plots.files import settle_layout

pytest.importorskip("matplotlib")


def _captions_outside(fig) -> list[str]:
    """Titles, the suptitle, texts and legend texts whose drawn extent leaves the figure (a clipped caption)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    settle_layout(fig)
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    texts = ([fig._suptitle] if fig._suptitle is not None else []) + list(fig.texts)
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
    for legend in [ax.get_legend() for ax in fig.axes] + list(fig.legends):
        if legend is not None:
            texts += [*legend.get_texts(), legend.get_title()]
    box = fig.bbox
    out = []
    for t in texts:
        if t.get_visible() and t.get_text().strip():
            e = t.get_window_extent(renderer)
            if e.x0 < box.x0 - 1 or e.x1 > box.x1 + 1 or e.y0 < box.y0 - 1 or e.y1 > box.y1 + 1:
                out.append(t.get_text())
    return out


@pytest.mark.parametrize("n", [6, 12])
def test_the_contrast_figures_captions_are_whole_and_inside_it(n):
    spec = AttentionSpec(n=n, d_model=8, heads=2)
    rng = np.random.default_rng(0)
    W = {k: rng.standard_normal(spec.shapes[k]) / np.sqrt(spec.d_model) for k in spec.parameter_names}
    c = graphs.contrast(spec, rng.standard_normal((n, 8)), rng.standard_normal((n, 8)), W)
    fig = plots.draw_contrast(c)
    assert _captions_outside(fig) == []
    titles = [ax.get_title() for ax in fig.axes[:4]]
    assert not any("…" in t or "..." in t for t in titles)
    # both panels of a row say how much of their graph is drawn (the left one said nothing while pruned)
    assert titles[0].splitlines()[1] == titles[1].splitlines()[1]
    assert titles[2].splitlines()[1] == titles[3].splitlines()[1]
