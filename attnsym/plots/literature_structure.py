"""Figures of the structural literature claims: non-identifiable weights, the low-rank bottleneck, QK-norm,
in-context gradient descent, and the variant certificates (grouped-query heads, RoPE pairings, sliding windows).

Each function draws data its claim computed (:mod:`attnsym.claims.builtin.literature_structure`); none runs
an experiment of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ._base import as_numpy, legend_below, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["bottleneck_figure", "icl_gd_figure", "identifiability_figure", "kv_groups_figure", "patterns_figure",
           "qk_norm_figure", "rope_pairing_figure"]


def _heat(fig, ax, M, title: str, *, cmap: str = "viridis", symmetric: bool = False):
    M = as_numpy(M, title)
    if symmetric:
        top = float(max(abs(M.min()), abs(M.max()), 1e-12))
        image = ax.imshow(M, cmap="RdBu_r", vmin=-top, vmax=top)
    else:
        image = ax.imshow(M, cmap=cmap)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("key j", fontsize=8)
    ax.set_ylabel("query i", fontsize=8)
    fig.colorbar(image, ax=ax, shrink=0.75)


def identifiability_figure(A: Sequence, alternative: Sequence, effective: Sequence, *, output_gap: float) -> Figure:
    """Three heatmaps: the weights ``A``, another row-stochastic ``A′`` with ``A′V = AV``, and the effective attention."""
    fig = new_figure((11.0, 3.6))
    axes = fig.subplots(1, 3)
    _heat(fig, axes[0], A, "attention A (softmax)")
    _heat(fig, axes[1], alternative, f"A′ ≠ A, row-stochastic, max|A′V − AV| = {output_gap:.0e}")
    _heat(fig, axes[2], effective, "effective attention A·P_V (Brunner et al.)", symmetric=True)
    return fig


def bottleneck_figure(pattern: Sequence, singular: Mapping[str, Sequence[float]], *, d_k: int) -> Figure:
    """Left: a target pattern; right: the singular values of its scores with and without the best row shift."""
    fig = new_figure((9.0, 3.6))
    left, right = fig.subplots(1, 2)
    _heat(fig, left, pattern, f"softmax(3·I): unreachable with d_k = {d_k}")
    width = 0.8 / max(len(singular), 1)
    for k, (label, values) in enumerate(singular.items()):
        v = as_numpy(values, label)
        right.bar([i + k * width for i in range(v.size)], v, width=width, label=label)
    right.set_xlabel("singular value index")
    right.set_ylabel("singular value of S + c·1ᵀ")
    right.set_title("a row shift c removes one rank, never two", fontsize=9)
    legend_below(right, fontsize=8)
    return fig


def qk_norm_figure(weight_scales: Sequence[float], largest: Mapping[str, Sequence[float]], *, gain: float,
                   lengths: Sequence[int], top_measured: Sequence[float], top_bound: Sequence[float]) -> Figure:
    """Left: half the largest logit range of a row against the weight scale, with and without QK-norm; right: the top
    weight and its bound against the number of keys."""
    fig = new_figure((9.0, 3.6))
    left, right = fig.subplots(1, 2)
    x = as_numpy(weight_scales, "weight_scales")
    for label, ys in largest.items():
        left.loglog(x, as_numpy(ys, label), marker="o", lw=1.5, label=label)
    left.axhline(gain, color="tab:red", ls="--", lw=1, label=f"g = {gain:g}")
    left.set_xlabel("scale of the weights")
    left.set_ylabel("half the largest logit range of a row")
    left.set_title("QK-norm: every logit in [−g, g], whatever the weights", fontsize=9)
    left.legend(fontsize=8)
    n = as_numpy(lengths, "lengths")
    right.loglog(n, as_numpy(top_bound, "top_bound"), lw=2, label="1/(1 + (n − 1)e^(−2g))")
    right.loglog(n, as_numpy(top_measured, "top_measured"), "o", label="largest weight measured")
    right.set_xlabel("number of keys n")
    right.set_title("so the top weight disperses at every length", fontsize=9)
    right.legend(fontsize=8)
    return fig


def icl_gd_figure(gd: Sequence[float], lsa: Sequence[float]) -> Figure:
    """The prediction of one GD step against the negated output of the linear self-attention layer."""
    fig = new_figure((5.0, 4.2))
    ax = fig.subplots()
    g, s = as_numpy(gd, "gd"), as_numpy(lsa, "lsa")
    ax.plot(g, s, "o", ms=3)
    lo, hi = float(min(g.min(), s.min())), float(max(g.max(), s.max()))
    ax.plot([lo, hi], [lo, hi], color="grey", ls=":", lw=1)
    ax.set_xlabel("ŷ after one GD step on the context")
    ax.set_ylabel("− (query's y-slot after the LSA layer)")
    ax.set_title("one linear self-attention layer = one GD step", fontsize=9)
    return fig


def kv_groups_figure(assignment: Sequence, gaps: Sequence[float]) -> Figure:
    """Left: which key/value head each query head reads; right: the output gap GQA vs MHA with repeated K/V, per head."""
    fig = new_figure((9.0, 3.4))
    left, right = fig.subplots(1, 2)
    M = as_numpy(assignment, "assignment")
    left.imshow(M, cmap="Greys", aspect="auto")
    left.set_xlabel("key/value head")
    left.set_ylabel("query head")
    left.set_title("query head h reads K/V head h // (H/H_kv)", fontsize=9)
    g = as_numpy(gaps, "gaps")
    right.bar(range(1, g.size + 1), g + 1e-18)
    right.set_yscale("log")
    right.set_xlabel("query head")
    right.set_ylabel("max |Z_GQA − Z_MHA|")
    right.set_title("equal to rounding", fontsize=9)
    return fig


def rope_pairing_figure(permutation: Sequence, difference: Sequence) -> Figure:
    """Left: the coordinate permutation between the pairings; right: the score difference for the same weights."""
    fig = new_figure((9.0, 3.6))
    left, right = fig.subplots(1, 2)
    P = as_numpy(permutation, "permutation")
    left.imshow(P, cmap="Greys")
    left.set_xlabel("interleaved coordinate")
    left.set_ylabel("half-split coordinate")
    left.set_title("the fixed permutation (2i, 2i+1) → (i, i + r/2)", fontsize=9)
    _heat(fig, right, difference, "scores: half-split − interleaved, same weights", symmetric=True)
    return fig


def patterns_figure(patterns: Mapping[str, Sequence]) -> Figure:
    """Boolean patterns side by side (True = may attend), the two cell colours named above them."""
    fig = new_figure((3.3 * len(patterns), 3.4))
    axes = fig.subplots(1, len(patterns))
    for ax, (title, M) in zip(axes if len(patterns) > 1 else [axes], patterns.items(), strict=True):
        ax.imshow(as_numpy(M, title), cmap="Greys", vmin=0, vmax=1)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("key j", fontsize=8)
        ax.set_ylabel("query i", fontsize=8)
    fig.suptitle("■ black: may attend (True)    □ white: masked (False)", fontsize=9)  # the legend of every panel
    return fig
