"""Figures of the 2026 variants (:mod:`attnsym.studies.variants`): a learned sink, multi-head latent attention,
a layer without positions.

Each function draws the result object its study returned (:mod:`attnsym.claims.builtin.variants_2026`);
none runs an experiment of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._base import as_numpy, legend_below, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..studies.variants import MlaResult, NopeResult, SinkResult

__all__ = ["mla_figure", "nope_figure", "sink_figure"]


def _heat(fig, ax, M, title: str) -> None:
    image = ax.imshow(as_numpy(M, title), cmap="viridis", vmin=0.0)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("key j", fontsize=8)
    ax.set_ylabel("query i", fontsize=8)
    fig.colorbar(image, ax=ax, shrink=0.8)


def sink_figure(result: SinkResult) -> Figure:
    """Left: one head's weights ``A``; right: per query, ``Σ_j A_ij`` and the sink's mass ``π_i`` stacked to 1."""
    fig = new_figure((8.4, 3.8))
    left, right = fig.subplots(1, 2)
    _heat(fig, left, result.weights, "weights A of head 1")
    rows = as_numpy(result.weights, "weights").sum(-1)
    mass = as_numpy(result.mass, "mass")
    queries = np.arange(rows.size)
    right.bar(queries, rows, color="tab:blue", label="Σⱼ Aᵢⱼ = 1 − πᵢ")
    right.bar(queries, mass, bottom=rows, color="tab:orange", label="sink mass πᵢ")
    right.set_ylim(0.0, 1.05)
    right.set_xlabel("query i", fontsize=8)
    right.set_ylabel("share of the row", fontsize=8)
    right.set_title("each row: keys + sink = 1", fontsize=9)
    legend_below(right, fontsize=8)
    return fig


def mla_figure(result: MlaResult) -> Figure:
    """|effective W_QK| of each head (scaled to its largest entry), titled with its rank and the bound."""
    heads = len(result.effective)
    fig = new_figure((3.6 * heads, 3.8))
    axes = np.atleast_1d(fig.subplots(1, heads))
    for h, (ax, rank, M) in enumerate(zip(axes, result.ranks, result.effective, strict=True)):
        image = ax.imshow(as_numpy(M, f"effective[{h}]"), cmap="Greys", vmin=0.0, vmax=1.0)
        ax.set_title(f"head {h + 1}: rank {rank} ≤ {result.bound}", fontsize=9)
        ax.set_xlabel("key feature", fontsize=8)
        ax.set_ylabel("query feature", fontsize=8)
        fig.colorbar(image, ax=ax, shrink=0.8)
    fig.suptitle(f"|W_QK| per head (d_c + d_rope = {result.d_c} + {result.d_rope})", fontsize=9)
    return fig


def nope_figure(result: NopeResult) -> Figure:
    """|ΔY| of every query after swapping tokens 1 and 2: without positions (only the last query is blind) and
    with RoPE."""
    shifts = as_numpy(result.shifts, "shifts")
    fig = new_figure((6.0, 3.8))
    ax = fig.subplots()
    queries = np.arange(1, shifts.shape[1] + 1)
    ax.bar(queries - 0.2, shifts[0], width=0.4, label="no positions (NoPE)")
    ax.bar(queries + 0.2, shifts[1], width=0.4, label="RoPE")
    ax.set_xticks(queries)
    ax.set_xlabel("query i", fontsize=8)
    ax.set_ylabel("max |ΔY_i|", fontsize=8)
    ax.set_title("swap tokens 1 and 2: change of each output", fontsize=9)
    legend_below(ax, fontsize=8)
    return fig
