"""Every figure attnsym draws, rendered and checked from matplotlib's bounding boxes.

No text overlaps an axis' tick labels, no tick labels overlap each other, no legend has data
running through it, no annotation straddles an axes frame, no text leaves the figure and no
character is drawn as a missing-glyph box (see ``tests/figure_checks.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
from figure_checks import layout_problems

from attnsym import AttentionSpec, graphs, plots
from attnsym.claims import verify_all

WORDS = ["the", "cat", "sat", "on", "the", "mat", "and", "purred"]


def _contrast(n, d, heads):
    spec = AttentionSpec(n=n, d_model=d, heads=heads)
    rng = np.random.default_rng(0)
    W = {k: rng.standard_normal(spec.shapes[k]) / np.sqrt(spec.shapes[k][0]) for k in spec.parameter_names}
    return graphs.contrast(spec, rng.standard_normal((n, d)), rng.standard_normal((n, d)), W)


def _heatmap(spec):
    A, tokens = plots.random_attention(spec, seed=0)
    return plots.attention_heatmap(A, tokens, allowed=spec.allowed_array())


BUILDERS = {
    **{f"plot {name}": (lambda name=name: plots.figure(name, quick=True)) for name in plots.FIGURES},
    "contrast 5 tokens": lambda: plots.draw_contrast(_contrast(5, 4, 1), tokens=WORDS[:5]),
    "contrast 8 tokens, 2 heads": lambda: plots.draw_contrast(_contrast(8, 8, 2), tokens=WORDS),
    "routing circle": lambda: plots.draw_routing(np.full((6, 6), 1 / 6), tokens=WORDS[:6], layout="circle"),
    "heatmap 16 tokens causal": lambda: _heatmap(AttentionSpec(n=16, d_model=8, heads=2, causal=True)),
    "heatmap 4 heads": lambda: _heatmap(AttentionSpec(n=6, d_model=8, heads=4)),
    "two-token": lambda: plots.two_token_figure([[0.1, 0.9], [0.95, 0.05]], [0.7, 0.3]),
}


@pytest.mark.parametrize("name", list(BUILDERS))
def test_figure_reads_cleanly(name):
    assert layout_problems(BUILDERS[name](), name) == []


@pytest.mark.slow
def test_every_claim_figure_reads_cleanly(quick_evidence):
    problems = []
    for ev in quick_evidence:  # verify_all(seed=0, quick=True)
        for fig_name, build in sorted(ev.figures.items()):
            problems += layout_problems(build(), f"{ev.claim}: {fig_name}")
    assert problems == [], "\n".join(problems)


def test_the_two_table1_claims_draw_different_figures():
    by_claim = {ev.claim: ev for ev in verify_all(seed=0, quick=True, ids=["global-path-length", "parallelism"])}
    (path,) = by_claim["global-path-length"].figures.values()
    (depth,) = by_claim["parallelism"].figures.values()
    a, b = plots.figure_to_bytes(path(), "png"), plots.figure_to_bytes(depth(), "png")
    assert a != b
    assert [ax.get_ylabel() for ax in path().axes] == ["maximum path length (edges)"]
    assert [ax.get_ylabel() for ax in depth().axes] == ["sequential operations (DAG depth)"]


def test_the_checks_catch_what_they_look_for():
    """A legend over a line, overlapping tick labels and a missing glyph are each reported."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2))
    ax = fig.subplots()
    ax.plot([0, 1], [0.5, 0.5], label="a line through the legend")
    ax.legend(loc="center")
    ax.set_xticks([0, 0.01], ["a long label", "another long label"])
    ax.set_title("emoji \U0001F600")
    found = "\n".join(layout_problems(fig))
    assert "data runs through the legend" in found and "tick labels" in found and "emoji" in found


def test_resampled_png_scales_to_the_asked_resolution_and_leaves_a_small_one_alone():
    import io

    from PIL import Image

    from attnsym.plots.files import figure_to_bytes, resampled_png

    fig = plots.gelu_figure(x=np.linspace(-3, 3, 7), exact=np.zeros(7), approx=np.zeros(7))
    big = figure_to_bytes(fig, "png", dpi=100)
    with Image.open(io.BytesIO(big)) as source:
        width, height = source.size
    small = resampled_png(big, 60)
    with Image.open(io.BytesIO(small)) as image:
        assert image.size == (round(width * 0.6), round(height * 0.6))
        assert round(image.info["dpi"][0]) == 60
        assert image.mode == "P"  # opaque, a 256-colour palette
        pixels = np.asarray(image.convert("RGB"), dtype=float)
    assert pixels.min() < 100 and pixels.max() == 255  # ink on a white page, not a blank image
    assert resampled_png(big, 100) == big and resampled_png(big, 120) == big
    assert resampled_png(small, 60) == small
