"""What every figure module shares: the default size, a fresh pyplot-free Figure, array conversion.

matplotlib is imported inside :func:`new_figure`, so importing a figure module stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ShapeError

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["DPI", "FIGSIZE", "as_numpy", "legend_below", "new_figure"]

#: default size of every figure, in inches; at ``dpi=100`` a PNG is 800 × 500 pixels
FIGSIZE = (8.0, 5.0)
DPI = 100


def new_figure(figsize: tuple[float, float] = FIGSIZE) -> Figure:
    """A fresh Figure that belongs to no pyplot window (safe headless, never leaks)."""
    from matplotlib.figure import Figure

    return Figure(figsize=figsize, dpi=DPI, layout="constrained")


def legend_below(ax, handles=None, labels=None, *, ncol: int = 2, fontsize: float = 9):
    """A legend under the axes (outside the data, so no curve can run through it).

    The figure's constrained layout makes room for it. Returns the legend.
    """
    kwargs = {"loc": "upper center", "bbox_to_anchor": (0.5, -0.16), "ncol": ncol, "fontsize": fontsize,
              "frameon": False}
    if handles is None:
        return ax.legend(**kwargs)
    return ax.legend(handles, labels if labels is not None else [h.get_label() for h in handles], **kwargs)


def as_numpy(a: Any, name: str) -> np.ndarray:
    """Convert NumPy / CuPy / PyTorch arrays (or nested lists) to a float64 NumPy array.

    Refused with a :class:`ShapeError` naming ``name``: ``None``, what is not numeric (text,
    ragged lists), complex numbers (their imaginary part would be dropped), dates and
    durations, and NaN or infinity (the message gives the first one and its index).
    """
    if a is None:
        raise ShapeError(f"{name} must be a numeric array (got None)")
    if hasattr(a, "detach"):  # torch
        a = a.detach().cpu().numpy()
    elif hasattr(a, "get") and type(a).__module__.startswith("cupy"):
        a = a.get()
    kind = getattr(getattr(a, "dtype", None), "kind", None)
    if kind in ("c", "M", "m"):
        what = {"c": "complex", "M": "dates", "m": "durations"}[kind]
        raise ShapeError(f"{name} must be a real numeric array (got {what}, dtype {a.dtype})")
    try:
        out = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ShapeError(f"{name} must be a numeric array (got {type(a).__name__}: {error})") from None
    finite = np.isfinite(out)
    if not finite.all():
        where = tuple(int(i) for i in np.argwhere(~finite)[0])
        raise ShapeError(f"{name} must contain only finite values (got {out[where]} at index {where})")
    return out
