"""Figures of the limits of attention: dispersion, the entropy bound, the Jacobian norm, rank collapse.

Each function draws data its claim computed (:mod:`attnsym.claims.builtin.softmax_limits`,
:mod:`~attnsym.claims.builtin.rank_collapse`, :mod:`~attnsym.claims.builtin.invariances`); none runs
an experiment of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ._base import as_numpy, legend_below, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["dispersion_figure", "entropy_bound_figure", "jacobian_norm_figure", "rank_collapse_figure"]


def dispersion_figure(n: Sequence[int], curves: Mapping[float, Sequence[float]], example_n: Sequence[int],
                      example_weight: Sequence[float], *, gap: float) -> Figure:
    """Top softmax weight against the number of keys ``n`` (log axis), one curve per logit gap Δ.

    >>> import numpy as np
    >>> n = np.array([1, 10, 100])
    >>> fig = dispersion_figure(n, {5.0: [1.0, 0.94, 0.6]}, [10], [0.94], gap=5.0)
    >>> fig.axes[0].get_xscale()
    'log'
    """
    fig = new_figure()
    ax = fig.subplots()
    x = as_numpy(n, "n")
    for g, ys in curves.items():
        ax.plot(x, as_numpy(ys, "curve"), lw=2 if g == gap else 1.2, label=f"Δ = {g:g}: 1/(1 + (n−1)e^(−Δ))")
    ax.plot(as_numpy(example_n, "example_n"), as_numpy(example_weight, "example_weight"), "ko", ms=6,
            label=f"the claim's example (Δ = {gap:g})")
    for m, w in zip(example_n, example_weight, strict=True):
        ax.annotate(f"{w:.3g}", (m, w), textcoords="offset points", xytext=(6, 6), fontsize=9)
    ax.axhline(0.5, color="grey", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("number of keys n")
    ax.set_ylabel("largest attention weight")
    ax.set_title("Dispersion: a fixed logit gap stops being sharp as n grows")
    ax.legend(fontsize=8, loc="upper right")
    return fig


def entropy_bound_figure(sigma: Sequence[float], bound: Sequence[float], draws: Mapping[float, np.ndarray], *,
                         n_keys: int) -> Figure:
    """Entropy of softmax against the logit norm σ: the lower bound of Zhai et al. and random logits on the sphere.

    >>> import numpy as np
    >>> fig = entropy_bound_figure([0, 1], [1.38, 1.2], {1.0: np.array([1.3, 1.35])}, n_keys=4)
    >>> fig.axes[0].get_ylabel()
    'entropy (nats)'
    """
    fig = new_figure()
    ax = fig.subplots()
    for k, (s, H) in enumerate(draws.items()):
        H = as_numpy(H, "draws")
        ax.plot(np.full(H.shape, s), H, ".", color="tab:blue", alpha=0.15, ms=3,
                label="random logits with ‖z‖₂ = σ" if k == 0 else None)
    ax.plot(as_numpy(sigma, "sigma"), as_numpy(bound, "bound"), color="tab:red", lw=2,
            label="lower bound (Zhai et al. 2023, Thm 3.1), reached by one logit vs the rest")
    ax.axhline(np.log(n_keys), color="grey", ls=":", lw=1, label=f"log T (uniform), T = {n_keys}")
    ax.set_xlabel("logit norm σ")
    ax.set_ylabel("entropy (nats)")
    ax.set_title("Attention entropy collapses as the logit norm grows")
    legend_below(ax, ncol=1, fontsize=8)
    return fig


def jacobian_norm_figure(max_weight: Sequence[float], norm: Sequence[float], *, bound: float = 0.5) -> Figure:
    """Spectral norm of ``diag(a) − a aᵀ`` against the largest weight of ``a``, with the bound and the two-point curve.

    >>> fig = jacobian_norm_figure([0.5, 0.9], [0.5, 0.18])
    >>> fig.axes[0].get_xlabel()
    'largest weight max_i a_i'
    """
    fig = new_figure()
    ax = fig.subplots()
    ax.plot(as_numpy(max_weight, "max_weight"), as_numpy(norm, "norm"), ".", ms=3, alpha=0.4,
            label="random a (3 keys, Dirichlet)")
    p = np.linspace(0.5, 1.0, 101)
    ax.plot(p, 2 * p * (1 - p), color="tab:red", lw=2, label="two keys (p, 1 − p): 2p(1 − p)")
    ax.axhline(bound, color="k", ls="--", lw=1, label=f"bound {bound:g}")
    ax.set_xlabel("largest weight max_i a_i")
    ax.set_ylabel("‖diag(a) − a aᵀ‖₂")
    ax.set_ylim(0, 0.55)
    ax.set_title("The softmax Jacobian's norm is at most 1/2, reached at (1/2, 1/2)")
    ax.legend(fontsize=8)
    return fig


def rank_collapse_figure(curves: Mapping[str, np.ndarray], *, floor: float = 1e-17) -> Figure:
    """Relative residual ``‖res(X_l)‖/‖X_l‖`` (log axis) against depth: median and 95% range over seeds, per stack.

    ``curves[name]`` is ``(seeds, depth + 1)``; residuals below ``floor`` (exact 0 in float64) are drawn at ``floor``.

    >>> import numpy as np
    >>> fig = rank_collapse_figure({"attention": np.array([[1.0, 0.1, 1e-4], [0.9, 0.2, 1e-5]])})
    >>> fig.axes[0].get_yscale()
    'log'
    """
    fig = new_figure()
    ax = fig.subplots()
    for name, R in curves.items():
        R = np.maximum(as_numpy(R, name), floor)
        layers = np.arange(R.shape[1])
        lo, mid, hi = np.quantile(R, [0.025, 0.5, 0.975], axis=0)
        (line,) = ax.plot(layers, mid, "o-", label=f"{name} (median over {R.shape[0]} seeds)")
        ax.fill_between(layers, lo, hi, color=line.get_color(), alpha=0.2)
    ax.set_yscale("log")
    ax.set_xlabel("layer l")
    ax.set_ylabel("relative residual ‖X − 1xᵀ‖₁,∞ / ‖X‖₁,∞")
    ax.set_title("Rank collapse: without skips the residual vanishes doubly exponentially\n"
                 f"(an exact 0 is drawn at {floor:g})")
    ax.legend(fontsize=8, loc="lower left")
    return fig
