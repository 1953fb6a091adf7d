"""Routing graphs drawn: two columns or a circle, the MLP/attention contrast, the two-token example.

matplotlib is imported inside the functions, never at import time.

Every function returns a :class:`matplotlib.figure.Figure` and never calls ``show()``.
Edge line width is proportional to ``|weight|`` (the largest drawn at ``max_width`` points);
negative MLP weights are drawn dashed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx
import numpy as np

from .._checks import check_index, check_tokens
from ..errors import ShapeError
from ..graphs.routing import attention_matrix, routing_graph

__all__ = ["draw_contrast", "draw_routing", "two_token_figure"]


def _bipartite(G: nx.DiGraph) -> tuple[list[str], list[str], np.ndarray, str, str]:
    """Left labels, right labels, weights W[right, left], column titles."""
    if G.graph.get("kind") == "mlp":
        d_in, d_out = G.graph["d_in"], G.graph["d_out"]
        left = [G.nodes[j]["token"] for j in range(d_in)]
        right = [G.nodes[d_in + k]["token"] for k in range(d_out)]
        W = np.zeros((d_out, d_in))
        for u, v, w in G.edges(data="weight"):
            W[v - d_in, u] = w
        return left, right, W, "input features", "output features"
    A = attention_matrix(G)
    order = sorted(G.nodes, key=lambda node: G.nodes[node].get("index", node))
    labels = [str(G.nodes[node].get("token", node)) for node in order]
    return labels, labels, A, "key tokens j", "query tokens i"


def _as_graph(G_or_A: Any, tokens) -> nx.DiGraph:
    if isinstance(G_or_A, nx.DiGraph):
        if tokens is not None:
            raise ShapeError("tokens= applies to a matrix; a graph carries its own 'token' attributes")
        return G_or_A
    return routing_graph(G_or_A, tokens=tokens)


def _draw_columns(ax, G: nx.DiGraph, *, color: str, max_width: float, scale: float | None) -> None:
    from matplotlib.collections import LineCollection

    left, right, W, left_title, right_title = _bipartite(G)
    ys_left = -np.arange(len(left), dtype=float)
    ys_right = -np.arange(len(right), dtype=float)
    top = max(abs(W).max(), 1e-300) if scale is None else scale
    rows, cols = np.nonzero(W)
    segments = [((0.0, ys_left[j]), (1.0, ys_right[i])) for i, j in zip(rows, cols, strict=True)]
    widths = [max_width * abs(W[i, j]) / top for i, j in zip(rows, cols, strict=True)]
    styles = ["dashed" if W[i, j] < 0 else "solid" for i, j in zip(rows, cols, strict=True)]
    ax.add_collection(LineCollection(segments, linewidths=widths, colors=color, linestyles=styles, alpha=0.8))
    ax.scatter(np.zeros(len(left)), ys_left, s=60, color="white", edgecolors="black", zorder=3)
    ax.scatter(np.ones(len(right)), ys_right, s=60, color="white", edgecolors="black", zorder=3)
    for y, label in zip(ys_left, left, strict=True):
        ax.text(-0.08, y, label, ha="right", va="center")
    for y, label in zip(ys_right, right, strict=True):
        ax.text(1.08, y, label, ha="left", va="center")
    low = min(ys_left.min(initial=0), ys_right.min(initial=0))
    ax.text(0.0, 0.9, left_title, ha="center", fontsize="small")
    ax.text(1.0, 0.9, right_title, ha="center", fontsize="small")
    ax.set_xlim(-0.6, 1.6)
    ax.set_ylim(low - 0.7, 1.3)
    ax.set_axis_off()


def _draw_circle(ax, G: nx.DiGraph, *, color: str, max_width: float, scale: float | None) -> None:
    from matplotlib.patches import Circle, FancyArrowPatch

    nodes = list(G.nodes)
    angles = np.pi / 2 - 2 * np.pi * np.arange(len(nodes)) / max(len(nodes), 1)
    pos = {node: (np.cos(a), np.sin(a)) for node, a in zip(nodes, angles, strict=True)}
    weights = [abs(w) for _, _, w in G.edges(data="weight", default=0.0)]
    top = (max(weights) if weights else 1.0) if scale is None else scale
    for u, v, w in G.edges(data="weight", default=0.0):
        width = max_width * abs(w) / top
        if u == v:
            x, y = pos[u]
            ax.add_patch(Circle((1.12 * x, 1.12 * y), 0.1, fill=False, linewidth=width, edgecolor=color, alpha=0.8))
            continue
        ax.add_patch(FancyArrowPatch(pos[u], pos[v], arrowstyle="-|>", mutation_scale=8 + width,
                                     linewidth=width, color=color, alpha=0.8, shrinkA=9, shrinkB=9,
                                     connectionstyle="arc3,rad=0.12",
                                     linestyle="--" if w < 0 else "-"))
    xs, ys = zip(*(pos[node] for node in nodes), strict=True) if nodes else ((), ())
    ax.scatter(xs, ys, s=180, color="white", edgecolors="black", zorder=3)
    for node in nodes:
        x, y = pos[node]
        ax.text(1.32 * x, 1.32 * y, str(G.nodes[node].get("token", node)), ha="center", va="center")
    ax.set_xlim(-1.6, 1.6)
    ax.set_ylim(-1.6, 1.6)
    ax.set_aspect("equal")
    ax.set_axis_off()


def draw_routing(
    G_or_A: Any,
    *,
    tokens=None,
    layout: str = "columns",
    ax=None,
    title: str | None = None,
    color: str = "C0",
    max_width: float = 6.0,
    scale: float | None = None,
):
    """Draw a routing graph (or an MLP graph): two columns or a circle, edge width ∝ weight.

    Parameters
    ----------
    G_or_A : networkx.DiGraph or array-like
        A graph from :func:`routing_graph` / :func:`mlp_graph`, or an attention matrix.
    tokens : sequence of str, optional
        Labels when a matrix is given.
    layout : {"columns", "circle"}, default "columns"
        ``"columns"``: keys on the left, queries on the right (inputs/outputs for an MLP
        graph), one line per edge. ``"circle"``: positions on a circle, arrows ``key -> query``.
    ax : matplotlib Axes, optional
        Draw into these axes (the figure returned is theirs).
    title : str, optional
    color : str, default "C0"
    max_width : float, default 6.0
        Line width, in points, of the largest ``|weight|``.
    scale : float, optional
        The weight drawn at ``max_width`` (default: the largest in the graph); give the same
        value to several panels to compare them.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = draw_routing(np.array([[0.9, 0.1], [0.3, 0.7]]), tokens=["a", "b"])
    >>> len(fig.axes[0].collections[0].get_segments())
    4
    """
    if layout not in ("columns", "circle"):
        raise ShapeError(f"layout must be 'columns' or 'circle' (got {layout!r})")
    G = _as_graph(G_or_A, tokens)
    if ax is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(4.5, max(3.0, 0.45 * G.number_of_nodes() + 1)) if layout == "columns" else (5, 5))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    (_draw_columns if layout == "columns" else _draw_circle)(ax, G, color=color, max_width=max_width, scale=scale)
    if title:
        ax.set_title(title)
    return fig


#: Beyond this many nodes a side, :func:`draw_contrast` draws only the largest weights of each row.
DISPLAY_NODES = 6
#: How many weights per query (per output feature) are drawn once a graph is pruned for display.
DISPLAY_TOP_K = 3


def _width_legend(fig, max_width: float, mlp_scale: float) -> None:
    """A figure legend under the panels: what line width and a dashed line mean."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color="C0", lw=max_width * w, label=f"A[i, j] = {w:g}") for w in (1.0, 0.5, 0.1)]
    handles += [Line2D([], [], color="C2", lw=max_width, label=f"|W[j, k]| = {mlp_scale:.2g} (the largest)"),
                Line2D([], [], color="C2", lw=max_width / 2, ls="--", label="dashed: a negative weight")]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=9, frameon=False,
               title="line width ∝ |weight|", title_fontsize=9)


def draw_contrast(c, *, head: int = 0, tokens=None, layout: str = "columns", top_k: int | None = None):
    """The side-by-side figure: the MLP graph and the attention graph, for two inputs.

    Top row: the dense layer's graph (nodes: the features of one token, ``y = x W``; the same
    for input 1 and input 2). Bottom row: the attention routing graph of head ``head + 1``
    (nodes: the tokens; edge key ``j`` → query ``i`` weighted ``A[i, j]``) for input 1 and
    input 2, with the routing distance in the title. A legend explains line widths and dashes.

    Parameters
    ----------
    c : Contrast
        The result of :func:`~attnsym.graphs.contrast`.
    head : int, default 0
        The head's index (from 0); the titles say "head 1" for index 0.
    tokens : sequence of str, optional
    layout : {"columns", "circle"}
    top_k : int, optional
        Draw only the ``top_k`` largest weights of each query row (each output feature).
        Default: all of them up to :data:`DISPLAY_NODES` nodes a side, else :data:`DISPLAY_TOP_K`;
        the titles say when a graph is pruned (the graphs themselves keep every edge).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from attnsym import AttentionSpec, graphs
    >>> spec = AttentionSpec(n=8, d_model=4)
    >>> rng = np.random.default_rng(0)
    >>> W = {k: rng.standard_normal(spec.shapes[k]) for k in spec.parameter_names}
    >>> c = graphs.contrast(spec, rng.standard_normal((8, 4)), rng.standard_normal((8, 4)), W)
    >>> fig = draw_contrast(c)
    >>> print(fig.axes[3].get_title())
    attention input 2 (distance 0.614)
    the 3 largest weights per query drawn
    """
    from matplotlib.figure import Figure

    n = c.A1.shape[-1]
    labels = check_tokens(tokens, n)
    heads = 1 if c.A1.ndim == 2 else c.A1.shape[0]
    head = check_index(head, heads, "head", "heads")
    A1 = c.A1 if c.A1.ndim == 2 else c.A1[head]
    A2 = c.A2 if c.A2.ndim == 2 else c.A2[head]
    d_in, d_out = c.mlp1.graph["d_in"], c.mlp1.graph["d_out"]
    k_att = top_k if top_k is not None else (DISPLAY_TOP_K if n > DISPLAY_NODES else None)
    k_mlp = top_k if top_k is not None else (DISPLAY_TOP_K if max(d_in, d_out) > DISPLAY_NODES else None)

    def pruned(k, what):
        return "all weights drawn" if k is None or k >= (n if what == "query" else d_in) else \
            f"the {k} largest weights per {what} drawn"

    fig = Figure(figsize=(9.5, 2 * max(3.0, 0.45 * max(n, d_in, d_out) + 1) + 1.2), layout="constrained")
    axes = fig.subplots(2, 2)
    mlp_scale = max(abs(w) for _, _, w in c.mlp1.edges(data="weight")) if c.mlp1.number_of_edges() else 1.0
    mlp1 = c.mlp1 if k_mlp is None else _pruned_mlp(c.mlp1, k_mlp)
    mlp2 = c.mlp2 if k_mlp is None else _pruned_mlp(c.mlp2, k_mlp)
    # both panels of a row say what they draw: the left one names the nodes and says what was pruned as the right one does
    draw_routing(mlp1, ax=axes[0, 0], title=f"MLP, input 1 (y = x W; nodes: the {d_in} features of a token)\n"
                 + pruned(k_mlp, "output"), color="C2", layout=layout, scale=mlp_scale)
    draw_routing(mlp2, ax=axes[0, 1], title=("MLP, input 2: the same graph" if c.mlp_identical else "MLP, input 2")
                 + "\n" + pruned(k_mlp, "output"), color="C2", layout=layout, scale=mlp_scale)
    head_name = f" head {head + 1}," if heads > 1 else ""
    draw_routing(routing_graph(A1, tokens=labels, top_k=k_att), ax=axes[1, 0],
                 title=f"attention{head_name} input 1 (nodes: the {n} tokens, weights A(X))\n" + pruned(k_att, "query"),
                 layout=layout, scale=1.0)
    distance = c.head_distances[head] if len(c.head_distances) > 1 else c.attention_distance
    draw_routing(routing_graph(A2, tokens=labels, top_k=k_att), ax=axes[1, 1],
                 title=f"attention{head_name} input 2 (distance {distance:.3f})\n" + pruned(k_att, "query"),
                 layout=layout, scale=1.0)
    for ax in axes.ravel():
        ax.title.set_fontsize(10)
    _width_legend(fig, 6.0, mlp_scale)
    fig.suptitle("Same weights, two inputs: the MLP graph is fixed, the attention graph is computed from X")
    return fig


def _pruned_mlp(G: nx.DiGraph, k: int) -> nx.DiGraph:
    """A copy of an MLP graph keeping the ``k`` largest ``|weight|`` feeding each output node."""
    H = G.copy()
    for v in [v for v, layer in G.nodes(data="layer") if layer == 1]:
        incoming = sorted(G.in_edges(v, data="weight"), key=lambda e: -abs(e[2]))
        H.remove_edges_from((u, v) for u, v, _ in incoming[k:])
    return H


def two_token_figure(routings: Sequence[Sequence[float]], static: Sequence[float]):
    """Token 1's mixing weights for each input: attention (computed) against a static mixer (fixed).

    Examples
    --------
    >>> fig = two_token_figure([[0.1, 0.9], [0.95, 0.05]], [0.7, 0.3])
    >>> len(fig.axes)
    2
    """
    from matplotlib.figure import Figure

    rows = np.asarray(routings, dtype=float)
    fig = Figure(figsize=(9.0, 3.8), layout="constrained")
    ax_att, ax_mlp = fig.subplots(1, 2, sharey=True)
    x = np.arange(2)
    width = 0.8 / len(rows)
    for k, row in enumerate(rows):
        ax_att.bar(x + k * width, row, width, label=f"input {k + 1}")
        ax_mlp.bar(x + k * width, static, width, label=f"input {k + 1}")
    for ax, title in ((ax_att, "attention: weights computed from the input"),
                      (ax_mlp, "static mixer: the same weights for every input")):
        ax.set_xticks(x + width * (len(rows) - 1) / 2, ["token 1", "token 2"])
        ax.set_ylim(0, 1)
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=9)
    ax_att.set_ylabel("weight of each token in output 1")
    return fig
