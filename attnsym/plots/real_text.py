"""The entropy and dispersion claims on real text: a :class:`~attnsym.studies.real_text.RealTextScaling` drawn.

Two panels against the text length ``n`` (log scale): the mean row entropy beside Zhai et al.'s
bound and the ceiling ``ln T``, and the mean largest weight beside the dispersion bound. Thin
lines are layers (each the mean over its heads), the bold ones the mean over every head.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._base import legend_below, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..studies.real_text import RealTextScaling

__all__ = ["real_text_figure"]


def _over_heads(a: np.ndarray) -> np.ndarray:
    """``(sizes, layers)`` means over heads (NaN heads left out)."""
    with np.errstate(invalid="ignore"):
        return np.nanmean(a, axis=2)


def _over_all(a: np.ndarray) -> np.ndarray:
    """``(sizes,)`` means over every layer and head."""
    return np.nanmean(a.reshape(a.shape[0], -1), axis=1)


def real_text_figure(result: RealTextScaling) -> Figure:
    """Entropy and largest weight against ``n`` per layer, with their bounds (module docstring).

    >>> import numpy as np
    >>> from attnsym.studies.real_text import RealTextScaling
    >>> a = np.full((2, 1, 1), 0.5)
    >>> r = RealTextScaling("m", "0", (64, 128), *(a,) * 9)
    >>> [ax.get_xlabel() for ax in real_text_figure(r).axes]
    ['text length n (tokens)', 'text length n (tokens)']
    """
    import matplotlib as mpl

    fig = new_figure((10.0, 4.8))
    left, right = fig.subplots(1, 2)
    n = np.asarray(result.sizes, dtype=float)
    colours = mpl.colormaps["viridis"](np.linspace(0.0, 0.9, max(result.layers, 1)))
    for ax, measured, bound, what, bound_label in (
            (left, result.entropy, result.zhai_bound, "mean row entropy (nats)", "Zhai et al. bound at each row's σ, T"),
            (right, result.max_weight, result.dispersion_bound, "mean largest weight",
             "dispersion bound 1/(1 + (T−1)e^(−Δ))")):
        per_layer = _over_heads(measured)
        for k in range(result.layers):
            ax.plot(n, per_layer[:, k], color=colours[k], lw=0.7, alpha=0.7)
        ax.plot(n, _over_all(measured), color="black", lw=2.2, marker="o", ms=3, label="measured, mean over heads")
        ax.plot(n, _over_all(bound), color="tab:red", lw=2.0, ls="--", label=bound_label)
        if measured is result.entropy:
            ax.plot(n, _over_all(result.ceiling), color="grey", lw=1.2, ls=":", label="ceiling ln T (uniform)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("text length n (tokens)")
        ax.set_ylabel(what)
        legend_below(ax, ncol=1, fontsize=8)
    left.set_title("entropy", fontsize=10)
    right.set_title("largest weight", fontsize=10)
    fig.suptitle(f"{result.model}: every head on the first n tokens of one text (thin lines: layers 0 … "
                 f"{result.layers - 1}, dark to light)", fontsize=10)
    return fig
