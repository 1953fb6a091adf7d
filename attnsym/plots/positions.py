"""Positional encodings: the sinusoids as curves and as a (position, dimension) matrix."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ShapeError
from ..numeric import sinusoidal_positions
from ..spec import DEFAULT_POSITION_BASE
from ._base import as_numpy, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["positional_encoding_figure"]


def positional_encoding_figure(
    PE: Any = None,
    *,
    n: int = 64,
    d_model: int = 16,
    dims: Sequence[int] | None = None,
    base: int = DEFAULT_POSITION_BASE,
) -> Figure:
    """Sinusoidal positional encodings: selected dimensions as curves, and the whole matrix.

    Parameters
    ----------
    PE : array-like, shape (n, d_model), optional
        The encodings; by default ``attnsym.numeric.sinusoidal_positions(n, d_model, base)``.
    n, d_model, base : int
        Used only when ``PE`` is not given.
    dims : sequence of int, optional
        Columns to draw as curves; default the first two (sin/cos pair) and a few slower ones.

    Returns
    -------
    matplotlib.figure.Figure
        Left: ``PE[:, dim]`` against position. Right: the ``(position, dimension)`` heatmap
        with a colour bar.

    Examples
    --------
    >>> fig = positional_encoding_figure(n=8, d_model=4, dims=[0, 1])
    >>> curves = fig.axes[0]
    >>> [line.get_label() for line in curves.get_lines()[:4:2]]   # a curve per dimension, then its dots
    ['dim 0 (sin, i=0)', 'dim 1 (cos, i=0)']
    >>> np.round(curves.get_lines()[3].get_ydata()[:2], 4)      # at positions 0, 1: cos(0), cos(1)
    array([1.    , 0.5403])
    """
    continuous = None
    if PE is None:
        PE = sinusoidal_positions(n, d_model, base=base)
        continuous = _continuous_curves(d_model, base)
    PE = as_numpy(PE, "PE")
    if PE.ndim != 2:
        raise ShapeError(f"PE must have shape (n, d_model) (got {tuple(PE.shape)})")
    n, d_model = PE.shape
    if dims is None:
        dims = sorted({0, 1, min(2, d_model - 1), min(4, d_model - 1), min(d_model // 2, d_model - 1)})
    for dim in dims:
        if not 0 <= dim < d_model:
            raise ShapeError(f"dims must lie in [0, {d_model}) (got {dim})")
    fig = new_figure((11.0, 4.6))
    ax_curves, ax_map = fig.subplots(1, 2, width_ratios=[1.25, 1])
    positions = np.arange(n)
    fine = np.linspace(0, n - 1, 40 * n)
    for k, dim in enumerate(dims):
        kind = "sin" if dim % 2 == 0 else "cos"
        label = f"dim {dim} ({kind}, i={dim // 2})"
        if continuous is not None:  # the curve of real p, and the integer positions a sequence uses on it
            ax_curves.plot(fine, continuous(fine)[dim], color=f"C{k}", lw=1.2, label=label)
            ax_curves.plot(positions, PE[:, dim], ".", color=f"C{k}", ms=4 if n > 40 else 6)
        else:  # only the samples are known
            ax_curves.plot(positions, PE[:, dim], ".-", color=f"C{k}", lw=0.6, ms=4, label=label)
    ax_curves.set_xlabel("position p (lines: real p; dots: the integer positions of tokens)"
                         if continuous is not None else "position p")
    ax_curves.set_ylabel("PE(p, dim)")
    ax_curves.set_ylim(-1.15, 1.15)
    ax_curves.axhline(0, color="0.7", lw=0.8)
    ax_curves.set_title("curves: frequencies fall geometrically with i")
    ax_curves.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncols=3, frameon=False)
    image = ax_map.imshow(PE, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    ax_map.set_xlabel("dimension (even: sin, odd: cos)")
    ax_map.set_ylabel("position p")
    ax_map.set_title(f"PE matrix, n={n}, d_model={d_model}")
    fig.colorbar(image, ax=ax_map, label="PE value")
    fig.suptitle(rf"Sinusoidal positions: $PE(p,2i)=\sin(p/{base}^{{2i/d}})$, $PE(p,2i+1)=\cos(p/{base}^{{2i/d}})$")
    return fig


def _continuous_curves(d_model: int, base: int):
    """``PE(p, ·)`` for real ``p``: the library's exact formula with a symbolic position, lambdified."""
    # lazy: SymPy and the symbolic layer, +0.4 s CPU measured over `import attnsym`, only for the continuous curves
    import sympy as sp

    from ..symbolic.positions import sinusoidal_positions as exact_positions

    p = sp.Symbol("p", real=True)
    row = exact_positions(1, d_model, base, offset=p)
    f = sp.lambdify(p, list(row), modules="numpy")
    return lambda values: [np.broadcast_to(np.asarray(v, dtype=float), np.shape(values)) for v in f(values)]

