"""Figures of real-model routes (:mod:`attnsym.models`): the two-sentence contrast, the layer × head grid, rollout and flow.

matplotlib is imported inside the functions, never when :mod:`attnsym.models` is imported.
Every function returns a :class:`matplotlib.figure.Figure` and never calls ``show()``; the
numbers drawn are those of the :class:`~attnsym.models.Route` /
:class:`~attnsym.models.TokenContrast` given (nothing is recomputed but head means).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._checks import check_index
from ._base import new_figure

__all__ = ["attention_grid_figure", "rollout_flow_figure", "token_contrast_figure"]

_ROLE_COLOURS = ("#9e9e9e", "#64b5f6", "#e53935", "#ffb74d", "#616161")


def token_contrast_figure(c: Any, *, layer: int | None = None, head: int | None = None):
    """The word's attention row in both texts (one layer and head), the role shares, and the distance grid.

    Parameters
    ----------
    c : TokenContrast
    layer, head : int, optional
        The head drawn in the top row; default the most different one (largest role distance).
    """
    L, H = c.role_distance.shape
    best = c.most_different()
    layer = best[0] if layer is None else check_index(layer, L, "layer", "layers")
    head = best[1] if head is None else check_index(head, H, "head", "heads")
    fig = new_figure((13, 8.5))
    grid = fig.add_gridspec(2, 2, height_ratios=(1.1, 1.0))
    for k in (0, 1):
        ax = fig.add_subplot(grid[0, k])
        route, word = c.routes[k], c.words[k]
        row = c.rows[k][layer, head]
        labels = route.labels()
        colours = ["#e53935" if j in word.positions else ("#9e9e9e" if route.special[j] else "#4051b5")
                   for j in range(route.n)]
        ax.bar(range(route.n), row, color=colours)
        ax.set_xticks(range(route.n), labels, rotation=45, ha="right")
        ax.set_ylim(0, 1)
        ax.set_ylabel("attention weight")
        ax.set_title(f"text {k + 1}: {route.text!r}\nwhere '{word.text}' reads from (L{layer + 1} H{head + 1}, 1-based); "
                     f"H/ln n = {c.entropy[k][layer, head]:.2f}", fontsize=10)
    ax = fig.add_subplot(grid[1, 0])
    image = ax.imshow(c.role_distance, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.add_patch(_outline(head, layer))
    ax.set_xlabel("head (from 1)")
    ax.set_ylabel("layer (from 1)")
    ax.set_xticks(range(H), [str(h + 1) for h in range(H)])
    ax.set_yticks(range(L), [str(ly + 1) for ly in range(L)])
    ax.set_title("role distance per layer and head (total variation of the role shares, 0..1)", fontsize=10)
    fig.colorbar(image, ax=ax, shrink=0.8)
    ax = fig.add_subplot(grid[1, 1])
    left = np.zeros(2)
    for r, role in enumerate(c.roles):
        values = np.array([c.shares[0][layer, head, r], c.shares[1][layer, head, r]])
        ax.barh([1, 0], values, left=left, color=_ROLE_COLOURS[r], label=role)
        left += values
    ax.set_yticks([1, 0], ["text 1", "text 2"])
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the word's attention")
    ax.legend(ncols=5, loc="upper center", bbox_to_anchor=(0.5, -0.22), fontsize=8, frameon=False)
    ax.set_title(f"role shares at L{layer + 1} H{head + 1} (1-based): distance {c.role_distance[layer, head]:.3f}", fontsize=10)
    same = "identical" if c.weights_identical else "NOT identical"
    fig.suptitle(f"'{c.token}' routed by {c.routes[0].model}: the same weights, two inputs, two routings\n"
                 f"projection and feed-forward weights of all {L} layers: {same} for both texts "
                 "(BLAKE2b fingerprints before and after)", fontsize=11)
    return fig


def _outline(x: int, y: int):
    from matplotlib.patches import Rectangle

    return Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor="#e53935", linewidth=2.5)


def attention_grid_figure(route: Any, *, max_labels: int = 24):
    """A layers × heads grid of heatmaps of ``route.attention`` (rows queries, columns keys, shared 0..1 scale).

    The grid is one mosaic image in one axes (each head's ``n × n`` block framed, a blank gap
    between blocks), not ``layers × heads`` axes: a figure of 72 axes spent seconds laying out
    and drawing tick machinery that shows nothing.
    """
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    L, H, n = route.layers, route.heads, route.n
    gap = max(1.0, 0.12 * n)  # blank cells between blocks
    step = n + gap
    fig = new_figure((1.35 * H + 1.5, 1.35 * L + 1.2))
    ax = fig.add_subplot()
    rows, cols = int(np.ceil(L * step - gap)), int(np.ceil(H * step - gap))
    # the mosaic is drawn as L x H images (one extent each) in one axes, so each block stays exactly n x n
    image = None
    frames = []
    for ly in range(L):
        for h in range(H):
            x0, y0 = h * step - 0.5, ly * step - 0.5
            image = ax.imshow(route.attention[ly, h], vmin=0, vmax=1, cmap="viridis", interpolation="nearest",
                              extent=(x0, x0 + n, y0 + n, y0))
            frames.append(Rectangle((x0, y0), n, n))
    ax.add_collection(PatchCollection(frames, facecolor="none", edgecolor="black", linewidth=0.8))
    ax.set_xlim(-0.5, cols - 0.5)
    ax.set_ylim(rows - 0.5, -0.5)
    ax.set_aspect("equal")
    for side in ax.spines.values():
        side.set_visible(False)
    centre = (n - 1) / 2
    ax.set_xticks([])
    ax.set_yticks([])
    if n <= max_labels:
        labels = route.labels()
        ax.set_xticks([h * step + j for h in range(H) for j in range(n)], labels * H, rotation=90, fontsize=5)
        ax.set_yticks([ly * step + i for ly in range(L) for i in range(n)], labels * L, fontsize=5)
        ax.tick_params(length=2, pad=1)
    for h in range(H):
        ax.text(h * step + centre, -0.5 - 0.06 * step, f"head {h + 1}", ha="center", va="bottom", fontsize=8)
    for ly in range(L):  # outside the token labels (an axes-fraction x would need the labels' width)
        ax.annotate(f"layer {ly + 1}", xy=(0, ly * step + centre), xycoords=("axes fraction", "data"),
                    xytext=(-24 if n <= max_labels else -4, 0), textcoords="offset points",
                    rotation=90, ha="right", va="center", fontsize=8, annotation_clip=False)
    if image is not None:  # always: a route has at least one layer and head
        fig.colorbar(image, ax=ax, shrink=0.6, label="attention weight A[i, j]")
    fig.suptitle(f"{route.model}: attention per layer and head for {route.text!r} (rows: queries i, columns: keys j; "
                 "layers and heads from 1)",
                 fontsize=10)
    return fig


def rollout_flow_figure(route: Any, rollout: np.ndarray, flow: np.ndarray | None, *, head: str = "mean",
                   outputs: tuple[int, ...] = (0,)):
    """Attention rollout (``(n, n)``) beside attention flow (``(len(outputs), n)``) of one route."""
    labels = route.labels()
    panels = 2 if flow is not None else 1
    fig = new_figure((5.5 * panels + 1, 5.2))
    axes = fig.subplots(1, panels, squeeze=False)[0]
    image = axes[0].imshow(rollout, vmin=0, cmap="magma")
    axes[0].set_xticks(range(route.n), labels, rotation=90, fontsize=7)
    axes[0].set_yticks(range(route.n), labels, fontsize=7)
    axes[0].set_xlabel("input token j")
    axes[0].set_ylabel("output position i")
    axes[0].set_title(f"rollout over {route.layers} layers (heads: {head}, residual ½A + ½I)", fontsize=9)
    fig.colorbar(image, ax=axes[0], shrink=0.8)
    if flow is not None:
        ax = axes[1]
        for a, i in enumerate(outputs):
            ax.bar(np.arange(route.n) + 0.8 * a / len(outputs), flow[a], width=0.8 / len(outputs), label=f"to {labels[i]}")
        ax.set_xticks(range(route.n), labels, rotation=90, fontsize=7)
        ax.set_ylabel("share of the flow (rows sum to 1)")
        ax.set_title(f"attention flow (max-flow) into {', '.join(labels[i] for i in outputs)}", fontsize=9)
        ax.legend(fontsize=8)
    fig.suptitle(f"{route.model}: {route.text!r}", fontsize=10)
    return fig
