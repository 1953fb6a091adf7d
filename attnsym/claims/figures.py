"""Figures the claims need beyond :mod:`attnsym.plots` (matplotlib imported inside each function).

Each function takes the data a check computed and returns a :class:`matplotlib.figure.Figure`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["saturation_gradient_figure"]


def saturation_gradient_figure(
    d: Sequence[int],
    jacobian_unscaled: Sequence[float],
    jacobian_scaled: Sequence[float],
    d_grad: Sequence[int],
    grad_ratio_typical: Sequence[float],
    grad_dead_fraction: Sequence[float],
    *,
    jacobian_median_unscaled: Sequence[float] | None = None,
    jacobian_median_scaled: Sequence[float] | None = None,
) -> Any:
    """Softmax Jacobian norm against d (scaled vs unscaled), and the gradient reaching W_Q.

    Parameters
    ----------
    d, jacobian_unscaled, jacobian_scaled : sequences
        Mean Frobenius norm of ``diag(a) - a a^T`` per row at each ``d``.
    d_grad, grad_ratio_typical, grad_dead_fraction : sequences
        Typical (geometric-mean) ratio ``||dL/dW_Q||`` unscaled / scaled, and the fraction of
        draws where it is below 1 %, at each ``d``.
    jacobian_median_unscaled, jacobian_median_scaled : sequences, optional
        Median norms, drawn dashed.

    Examples
    --------
    >>> fig = saturation_gradient_figure([1, 4], [0.3, 0.2], [0.3, 0.3], [1, 4], [1.0, 0.9], [0.0, 0.1])
    >>> len(fig.axes)  # two panels and the right-hand axis of the second
    3
    """
    from matplotlib.figure import Figure

    d, ju, js = (np.asarray(v, dtype=float) for v in (d, jacobian_unscaled, jacobian_scaled))
    fig = Figure(figsize=(11.0, 4.6), layout="constrained")
    ax, ax2 = fig.subplots(1, 2)
    ax.plot(d, ju, "o-", color="C3", label="unscaled: mean")
    ax.plot(d, js, "s-", color="C0", label="scaled by 1/√d: mean")
    if jacobian_median_unscaled is not None and jacobian_median_scaled is not None:
        ax.plot(d, np.asarray(jacobian_median_unscaled, dtype=float), "o--", color="C3", alpha=0.6, label="unscaled: median")
        ax.plot(d, np.asarray(jacobian_median_scaled, dtype=float), "s--", color="C0", alpha=0.6, label="scaled: median")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("dimension d")
    ax.set_ylabel(r"$\|\mathrm{diag}(a) - a a^\top\|_F$ per row")
    ax.set_title("Softmax Jacobian norm")
    ax.legend(fontsize=9)
    dg = np.asarray(d_grad, dtype=float)
    ratio_line = ax2.plot(dg, np.asarray(grad_ratio_typical, dtype=float), "o-", color="C3",
                          label="ratio unscaled / scaled (geometric mean, left axis)")
    ax2.axhline(1.0, color="0.6", ls=":")
    ax2.set_xscale("log", base=2)
    ax2.set_yscale("log")
    ax2.set_xlabel("dimension d")
    ax2.set_ylabel(r"$\|\partial L/\partial W_Q\|$ unscaled / scaled")
    ax2.set_title(r"Gradient reaching $W_Q$ (one query's loss)")
    # the fraction is a proportion in [0, 1] (often exactly 0 at small d): a linear axis of its own
    ax3 = ax2.twinx()
    fraction_line = ax3.plot(dg, np.asarray(grad_dead_fraction, dtype=float), "^--", color="C2",
                             label="fraction of queries with ratio < 1 % (right axis)")
    ax3.set_ylim(-0.02, 1.02)
    ax3.set_ylabel("fraction of queries with ratio < 1 %", color="C2")
    ax3.tick_params(axis="y", colors="C2")
    lines = ratio_line + fraction_line
    ax2.legend(lines, [line.get_label() for line in lines], fontsize=9, loc="center left")
    fig.suptitle("Without 1/√d the softmax saturates: its Jacobian, and the gradient through it, vanish for most queries")
    return fig
