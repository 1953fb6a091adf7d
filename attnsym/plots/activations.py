"""Activations: GELU exact against its tanh approximation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ShapeError
from ..numeric import gelu, gelu_tanh
from ._base import as_numpy, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["gelu_figure"]


def gelu_figure(x: Any = None, exact: Any = None, approx: Any = None) -> Figure:
    """GELU exact (x·Φ(x)) against its tanh approximation, and their difference.

    Parameters
    ----------
    x : array-like, optional
        Points; default 801 points on [-5, 5].
    exact, approx : array-like, optional
        GELU and its tanh approximation at ``x``; by default from
        ``attnsym.numeric.gelu`` and ``attnsym.numeric.gelu_tanh``.

    Returns
    -------
    matplotlib.figure.Figure
        Top: both curves. Bottom: ``approx - exact`` with its maximum marked.

    Examples
    --------
    >>> fig = gelu_figure(x=np.array([-1.0, 0.0, 1.0]))
    >>> np.round(fig.axes[0].get_lines()[0].get_ydata(), 4)      # x Φ(x)
    array([-0.1587,  0.    ,  0.8413])
    """
    x = np.linspace(-5.0, 5.0, 801) if x is None else as_numpy(x, "x")
    if exact is None or approx is None:
        exact = gelu(x) if exact is None else exact
        approx = gelu_tanh(x) if approx is None else approx
    exact, approx = as_numpy(exact, "exact"), as_numpy(approx, "approx")
    if exact.shape != x.shape or approx.shape != x.shape:
        raise ShapeError(f"exact and approx must have the shape of x {x.shape} (got {exact.shape}, {approx.shape})")
    fig = new_figure((8.0, 6.0))
    ax_f, ax_e = fig.subplots(2, 1, sharex=True, height_ratios=[2, 1])
    ax_f.plot(x, exact, lw=2.2, label=r"exact: $x\,\Phi(x) = \frac{x}{2}(1+\mathrm{erf}(x/\sqrt{2}))$")
    ax_f.plot(x, approx, lw=1.4, ls="--",
              label=r"tanh: $\frac{x}{2}(1+\tanh(\sqrt{2/\pi}(x+0.044715x^3)))$")
    ax_f.plot(x, np.maximum(x, 0), lw=0.8, color="0.6", label="ReLU (reference)")
    ax_f.set_ylabel("GELU(x)")
    fig.suptitle("GELU: exact x·Φ(x) against its tanh approximation")
    ax_f.legend(fontsize=9, loc="upper left")
    error = approx - exact
    ax_e.plot(x, error, color="C3")
    top = float(np.max(np.abs(error)))
    # every point within 0.1 % of the largest |error|: the error is even (GELU(x) − GELU(−x) = x for both
    # formulas), so there are two maxima, at ±x*; a sampled grid finds both (the report's exact search gives x*)
    at = np.flatnonzero(np.abs(error) >= top * (1 - 1e-3))
    peaks = [int(g[np.argmax(np.abs(error[g]))]) for g in np.split(at, np.flatnonzero(np.diff(at) > 1) + 1)]
    ax_e.plot(x[peaks], error[peaks], "o", color="C3")
    where = " and ".join(f"x = {x[k]:+.2f}" for k in peaks)
    note = f"max |error| = {top:.2e} at {where}" + (" (the error is even in x)" if len(peaks) == 2 else "")
    ax_e.set_title(note + " (sampled grid)", fontsize=9)
    ax_e.margins(y=0.15)
    ax_e.axhline(0, color="0.7", lw=0.8)
    ax_e.set_xlabel("x")
    ax_e.set_ylabel("tanh − exact")
    ax_e.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    return fig

