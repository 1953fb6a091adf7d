"""Figures of the relative position schemes: RoPE's frequencies and long-range decay, ALiBi's biases.

The data come from :mod:`attnsym.numeric.positions` and :mod:`attnsym.numeric.position_experiments`
(the functions the claims ``rope-long-range-decay`` and ``alibi-recency`` check); this module draws.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._checks import non_negative_int, positive_int
from ..errors import ShapeError
from ..numeric import alibi_slopes, rope_frequencies
from ..numeric.position_experiments import alibi_weights, rope_decay_bound, rope_relative_scores, weight_by_distance
from ..spec import DEFAULT_POSITION_BASE, AttentionSpec
from ._base import as_numpy, legend_below, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..studies.positions import DecayResult

__all__ = ["alibi_bias_figure", "decay_result_figure", "rope_decay_figure", "rope_frequencies_figure", "shift_figure"]


def _rope_spec(d_k: int, base: int, pairing: str = "rotate_half") -> AttentionSpec:
    return AttentionSpec(n=1, d_model=d_k, positions="rope", position_base=base, rope_pairing=pairing)


def rope_frequencies_figure(*, d_k: int = 64, base: int = DEFAULT_POSITION_BASE, n: int = 128) -> Figure:
    r"""RoPE's frequencies :math:`\theta_i = \text{base}^{-2i/d_k}` and the angles :math:`p\theta_i` they give.

    Parameters
    ----------
    d_k : int, default 64
        Width of a head (all of it rotated).
    base : int, default 10000
    n : int, default 128
        Positions shown on the right.

    Returns
    -------
    matplotlib.figure.Figure
        Left: ``θ_i`` (log scale) and the wavelength ``2π/θ_i`` in tokens against the plane
        ``i``. Right: ``cos(p θ_i)`` for positions ``p`` (rows) and planes ``i`` (columns):
        the first planes turn fast, the last barely move.

    Examples
    --------
    >>> fig = rope_frequencies_figure(d_k=8, n=4)
    >>> np.round(fig.axes[0].get_lines()[0].get_ydata(), 4).tolist()
    [1.0, 0.1, 0.01, 0.001]
    """
    spec = _rope_spec(d_k, base)
    theta = np.asarray(rope_frequencies(spec))
    planes = np.arange(theta.size)
    fig = new_figure((11.0, 4.6))
    ax, ax_map = fig.subplots(1, 2, width_ratios=[1, 1.1])
    ax.semilogy(planes, theta, marker="o", ms=3, label=rf"$\theta_i = {base}^{{-2i/{d_k}}}$")
    ax.semilogy(planes, 2 * np.pi / theta, marker="s", ms=3, label=r"wavelength $2\pi/\theta_i$ (tokens)")
    ax.set_xlabel("rotation plane i")
    ax.set_title("RoPE frequencies fall geometrically")
    ax.legend(fontsize=8)
    angles = np.arange(n)[:, None] * theta[None, :]
    image = ax_map.imshow(np.cos(angles), aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    ax_map.set_xlabel("rotation plane i")
    ax_map.set_ylabel("position p")
    ax_map.set_title(r"$\cos(p\,\theta_i)$: the angle each plane has turned")
    fig.colorbar(image, ax=ax_map, shrink=0.85)
    return fig


def alibi_bias_figure(*, heads: int = 8, n: int = 16, show_heads: int = 4, weights=None) -> Figure:
    """ALiBi's per-head bias ``−m_h (i − j)`` and the recency it gives the attention weights.

    Parameters
    ----------
    heads : int, default 8
        Number of heads (the slopes follow the paper's rule, also for non-powers of two).
    n : int, default 16
        Tokens (causal).
    show_heads : int, default 4
        Bias matrices drawn: those of the steepest heads, steepest first.
    weights : (heads, n) array, optional
        Mean attention weight at each distance per head (by default the weights of all-zero
        scores, ``∝ exp(−m_h k)``, the pure effect of the bias; the claim passes its measured ones).

    Returns
    -------
    matplotlib.figure.Figure
        Top row: the causal bias matrix of the ``show_heads`` steepest heads. Bottom left: bias
        against distance per head (slope ``−m_h``). Bottom right: mean weight against distance.

    Examples
    --------
    >>> fig = alibi_bias_figure(heads=3, n=4, show_heads=3)
    >>> fig.axes[0].get_title()  # 3 heads: slopes 2^-4, 2^-8, 2^-2, the steepest first
    'head 3: $m = 2^{-2}$'
    """
    spec = AttentionSpec(n=n, d_model=heads, heads=heads, positions="alibi", causal=True)
    slopes = np.asarray(alibi_slopes(heads))
    show = max(1, min(show_heads, heads))
    given = weights is not None
    if weights is None:
        zeros = np.zeros((heads, n, 1))
        weights = weight_by_distance(alibi_weights(zeros, zeros, spec))
    weights = np.asarray(weights, dtype=float)
    if weights.shape != (heads, n):
        raise ShapeError(f"weights must have shape (heads, n) = ({heads}, {n}) (got {weights.shape})")
    from matplotlib.ticker import MaxNLocator

    fig = new_figure((11.0, 7.0))
    grid = fig.add_gridspec(2, show)
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    exponents = spec.alibi_slope_exponents
    steepest = sorted(range(heads), key=lambda h: -slopes[h])[:show]  # (for 2^k heads: heads 1, 2, …)
    for col, h in enumerate(steepest):
        ax = fig.add_subplot(grid[0, col])
        bias = np.where(j <= i, -slopes[h] * (i - j), np.nan)
        image = ax.imshow(bias, cmap="viridis", interpolation="nearest", vmin=-slopes.max() * (n - 1), vmax=0)
        ax.set_title(rf"head {h + 1}: $m = 2^{{-{exponents[h]}}}$")
        for axis in (ax.xaxis, ax.yaxis):
            locator = axis.get_major_locator()
            if isinstance(locator, MaxNLocator):  # imshow's default AutoLocator is one
                locator.set_params(integer=True)
        ax.set_xlabel("key j")
        if col == 0:
            ax.set_ylabel("query i")
    fig.colorbar(image, ax=fig.axes[:show], shrink=0.8, label="bias (masked above the diagonal)")
    ax_bias = fig.add_subplot(grid[1, : max(1, show // 2)])
    ax_w = fig.add_subplot(grid[1, max(1, show // 2):]) if show > 1 else None
    distance = np.arange(n)
    for h in range(heads):
        ax_bias.plot(distance, -slopes[h] * distance, label=f"head {h + 1}")
        if ax_w is not None:
            ax_w.semilogy(distance, np.maximum(weights[h], 1e-300), label=f"head {h + 1}")
    ax_bias.set_xlabel("distance i − j")
    ax_bias.set_ylabel("bias")
    ax_bias.set_title("bias = −m_h (i − j)")
    ax_bias.legend(fontsize=7, ncols=2)
    if ax_w is not None:
        ax_w.set_xlabel("distance i − j")
        ax_w.set_ylabel("mean weight A[i, i − k]")
        ax_w.set_title("weights decay with distance (never to 0)" if given else
                       "weights of zero scores: the bias alone, ∝ exp(−m_h k)")
    return fig


def rope_decay_figure(*, d_k: int = 128, base: int = DEFAULT_POSITION_BASE, max_distance: int = 256,
                      seed: int = 0, samples: int = 2000) -> Figure:
    r"""RoFormer's long-range decay: the relative upper bound against distance, and actual scores.

    Parameters
    ----------
    d_k : int, default 128
    base : int, default 10000
    max_distance : int, default 256
    seed : int, default 0
        For the random queries and keys of the right panel.
    samples : int, default 2000
        Random ``(q, k)`` pairs.

    Returns
    -------
    matplotlib.figure.Figure
        Left: :math:`\frac{1}{d/2}\sum_j |S_j|` (the curve of RoFormer's Figure 2) against the
        relative distance. Right: what scores do: ``q·R(Δθ)q`` for a key equal to the query
        (decays on average, with ripples) and the spread of ``q·R(Δθ)k`` for independent
        random ``q, k`` (flat: the bound does not make typical scores decay).

    Examples
    --------
    >>> fig = rope_decay_figure(d_k=16, max_distance=20, samples=50)
    >>> float(fig.axes[0].get_lines()[0].get_ydata()[0])  # (d/2 + 1) / 2 at distance 0
    4.5
    """
    max_distance, samples = positive_int("max_distance", max_distance), positive_int("samples", samples)
    seed = non_negative_int("seed", seed)
    spec = _rope_spec(d_k, base)
    distance = np.arange(max_distance + 1)
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, samples, d_k))
    same = rope_relative_scores(q, q, spec, distance).mean(axis=0) / d_k
    spread = rope_relative_scores(q, k, spec, distance).std(axis=0) / np.sqrt(d_k)
    return _decay_panels(rope_decay_bound(spec, distance), same, spread, d_k, base, samples)


def decay_result_figure(result: DecayResult) -> Figure:
    """:func:`rope_decay_figure` of the ``rope-long-range-decay`` claim's own study: the bound, the mean score of a
    key equal to its query and the spread of random scores that the claim judged.

    Examples
    --------
    >>> from attnsym.studies.positions import decay_study
    >>> r = decay_study(lambda: np.random.default_rng(0), quick=True)
    >>> float(decay_result_figure(r).axes[0].get_lines()[0].get_ydata()[0])  # (d/2 + 1) / 2 at distance 0, d = 128
    32.5
    """
    return _decay_panels(result.bound, result.same_key, result.spread, result.spec.d_k,
                         result.spec.position_base, result.samples)


def _decay_panels(bound, same, spread, d_k: int, base, samples: int) -> Figure:
    """The two panels of :func:`rope_decay_figure` from the bound, the mean ``q·R q / d`` and the std of
    ``q·R k / √d`` per distance (0, 1, …)."""
    distance = np.arange(len(bound))
    fig = new_figure((11.0, 4.6))
    ax, ax_s = fig.subplots(1, 2)
    ax.plot(distance, bound, color="C0")
    ax.set_xlabel("relative distance |m − n|")
    ax.set_ylabel("relative upper bound")
    ax.set_title(rf"RoFormer bound $\frac{{1}}{{d/2}}\sum_j |S_j|$, $d = {d_k}$, base {base:g}")
    ax_s.plot(distance, same, color="C1", label=r"mean $q^\top R(\Delta\theta) q\,/\,d$ (key = query)")
    ax_s.plot(distance, spread, color="C2", label=r"std $q^\top R(\Delta\theta) k\,/\sqrt{d}$ (independent q, k)")
    ax_s.plot(distance, bound / bound[0], color="C0", ls="--", label="bound / bound(0)")
    ax_s.axhline(0, color="0.7", lw=0.8)
    ax_s.set_xlabel("relative distance |m − n|")
    ax_s.set_title(f"scores ({samples} random q, k): only an upper bound decays")
    legend_below(ax_s, ncol=1, fontsize=8)
    return fig


def shift_figure(weights) -> Figure:
    """Attention weights of the same tokens placed at different offsets, side by side.

    Parameters
    ----------
    weights : mapping of str to (n, n) array
        Panel title (e.g. ``"RoPE, positions 0 … n−1"``) to the weights it shows.

    Returns
    -------
    matplotlib.figure.Figure
        One heatmap per entry (query rows, key columns), one colour scale.

    Examples
    --------
    >>> fig = shift_figure({"a": np.eye(2), "b": np.full((2, 2), 0.5)})
    >>> [ax.get_title() for ax in fig.axes[:2]]
    ['a', 'b']
    """
    items = [(str(k), as_numpy(v, f"weights[{k!r}]")) for k, v in dict(weights).items()]
    if not items or any(a.ndim != 2 for _, a in items):
        raise ShapeError("weights must map titles to (n, n) arrays (got none, or arrays that are not 2-d)")
    cols = min(2, len(items))
    rows = -(-len(items) // cols)
    fig = new_figure((4.2 * cols + 1.0, 3.8 * rows))
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    vmax = max(float(a.max()) for _, a in items)
    for ax, (title, A) in zip(axes, items, strict=False):
        image = ax.imshow(A, cmap="viridis", vmin=0, vmax=vmax, interpolation="nearest")
        ax.set_title(title)
        ax.set_xlabel("key j")
        ax.set_ylabel("query i")
    for ax in axes[len(items):]:
        ax.set_visible(False)
    fig.colorbar(image, ax=list(axes[:len(items)]), shrink=0.8, label="attention weight")
    return fig
