"""Figures of attention: heatmaps, positional encodings, GELU, score variance, entropy, Table 1.

Every function returns a :class:`matplotlib.figure.Figure` and never calls ``show()``; figures
are built with the object-oriented API (no pyplot state), so they work headless with any
backend, including ``Agg``. matplotlib is imported inside the functions: ``import attnsym``
never imports it.

The functions here *draw*; they do not compute. Each figure takes its data as arguments, and
when the data is left out it is fetched from the layer that owns the mathematics:
:mod:`attnsym.numeric` (attention weights, positional encodings, GELU, Monte Carlo),
:mod:`attnsym.graphs` (row entropy, path lengths and depths of Table 1).

Save a figure as PNG or SVG with :func:`save_figure` (atomic, never a silent overwrite).

Examples
--------
>>> import numpy as np
>>> from attnsym import plots
>>> fig = plots.attention_heatmap(np.array([[0.9, 0.1], [0.3, 0.7]]), tokens=["the", "cat"])
>>> fig.axes[0].get_xlabel()
'key j (attended to)'
>>> [label.get_text() for label in fig.axes[0].get_yticklabels()]
['the', 'cat']
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._io import atomic_write
from .errors import OverwriteError, ShapeError, SpecError
from .spec import DEFAULT_POSITION_BASE

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "FIGURES",
    "attention_heatmap",
    "entropy_figure",
    "figure",
    "figure_to_bytes",
    "gelu_figure",
    "path_length_figure",
    "positional_encoding_figure",
    "random_attention",
    "save_figure",
    "variance_figure",
]

#: default size of every figure, in inches; at ``dpi=100`` a PNG is 800 × 500 pixels
FIGSIZE = (8.0, 5.0)
DPI = 100
_FORMATS = ("png", "svg")


def _new_figure(figsize: tuple[float, float] = FIGSIZE) -> Figure:
    """A fresh Figure that belongs to no pyplot window (safe headless, never leaks)."""
    from matplotlib.figure import Figure

    return Figure(figsize=figsize, dpi=DPI, layout="constrained")


def _as_numpy(a: Any, name: str) -> np.ndarray:
    """Convert NumPy / CuPy / PyTorch arrays (or nested lists) to a float64 NumPy array."""
    if hasattr(a, "detach"):  # torch
        a = a.detach().cpu().numpy()
    elif hasattr(a, "get") and type(a).__module__.startswith("cupy"):
        a = a.get()
    try:
        out = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ShapeError(f"{name} must be a numeric array (got {type(a).__name__}: {error})") from None
    if not np.all(np.isfinite(out)):
        raise ShapeError(f"{name} must contain only finite values")
    return out


# ----------------------------------------------------------------------------- output
def figure_to_bytes(fig: Figure, fmt: str = "png", *, dpi: int = DPI) -> bytes:
    """Render ``fig`` to PNG or SVG bytes in memory.

    Examples
    --------
    >>> from attnsym import plots
    >>> fig = plots.gelu_figure(x=np.linspace(-3, 3, 7), exact=np.zeros(7), approx=np.zeros(7))
    >>> plots.figure_to_bytes(fig, "png")[:4]
    b'\\x89PNG'
    """
    fmt = fmt.lower().lstrip(".")
    if fmt not in _FORMATS:
        raise SpecError(f"fmt must be one of {_FORMATS} (got {fmt!r})")
    buffer = io.BytesIO()
    fig.draw_without_rendering()  # settle the constrained layout, so every render is identical
    metadata = {"Software": None} if fmt == "png" else {"Date": None}
    fig.savefig(buffer, format=fmt, dpi=dpi, metadata=metadata)
    return buffer.getvalue()


def save_figure(fig: Figure, path: str | os.PathLike, *, overwrite: bool = False, dpi: int = DPI) -> Path:
    """Save ``fig`` to ``path`` (``.png`` or ``.svg``) atomically; refuse to overwrite silently.

    The image is rendered in memory and written with :func:`attnsym._io.atomic_write`, so a
    reader never sees a half-written file. A PNG of a default figure is
    ``FIGSIZE * dpi`` = 800 × 500 pixels.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    path : str or PathLike
        Destination; the suffix (``.png`` or ``.svg``) chooses the format.
    overwrite : bool, default False
        Replace an existing file (otherwise :class:`~attnsym.OverwriteError`).
    dpi : int, default 100
        Resolution of a PNG.

    Returns
    -------
    Path
        The path written.

    Raises
    ------
    SpecError
        The suffix is not ``.png`` or ``.svg``.
    OverwriteError
        ``path`` exists and ``overwrite`` is False.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> fig = attention_heatmap(np.eye(2))
    >>> save_figure(fig, folder / "eye.png").stat().st_size > 0
    True
    >>> save_figure(fig, folder / "eye.png")
    Traceback (most recent call last):
    ...
    attnsym.errors.OverwriteError: ... exists; pass overwrite=True (--force on the command line) to replace it
    """
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in _FORMATS:
        raise SpecError(f"path must end in .png or .svg (got {str(path)!r})")
    if path.exists() and not overwrite:  # fail before spending time on rendering
        raise OverwriteError(f"{path} exists; pass overwrite=True (--force on the command line) to replace it")
    return atomic_write(path, figure_to_bytes(fig, fmt, dpi=dpi), overwrite=overwrite)


# ----------------------------------------------------------------------------- heatmaps
def attention_heatmap(
    A: Any,
    tokens: Sequence[str] | None = None,
    *,
    head_titles: Sequence[str] | None = None,
    title: str | None = None,
    annotate: bool | None = None,
    label: str = "attention weight $A_{ij}$",
) -> Figure:
    """Heatmap of attention weights, one panel per head: query (rows) × key (columns).

    Parameters
    ----------
    A : array-like, shape (n, n) or (heads, n, n)
        Attention weights; row ``i`` is the distribution query ``i`` puts over the keys.
        NumPy, CuPy or PyTorch arrays are accepted.
    tokens : sequence of str, optional
        Labels of the ``n`` positions (both axes); default ``0 … n-1``.
    head_titles : sequence of str, optional
        Title of each panel; default ``"head 0"``, ``"head 1"``, … (none for a single head), counted
        from 0 like the head index of the graphs and of ``A[..., h, :, :]``.
    title : str, optional
        Figure title; default ``"Attention weights A = softmax(Q Kᵀ / √d_k)"``.
    annotate : bool, optional
        Print each weight in its cell; default when ``n <= 8``.
    label : str
        Label of the colour bar (change it when drawing scores ``S`` rather than weights).
        Values outside [0, 1] get a colour scale from their minimum to their maximum.

    Returns
    -------
    matplotlib.figure.Figure
        One image axis per head sharing one colour bar (0 … 1, labelled).

    Raises
    ------
    ShapeError
        ``A`` is not (n, n) or (heads, n, n), or ``tokens`` has the wrong length.

    Examples
    --------
    >>> A = np.array([[[1.0, 0.0], [0.5, 0.5]], [[0.2, 0.8], [0.6, 0.4]]])
    >>> fig = attention_heatmap(A, tokens=["a", "b"])
    >>> [ax.get_title() for ax in fig.axes if ax.get_label() != "<colorbar>"]
    ['head 0', 'head 1']
    """
    A = _as_numpy(A, "A")
    if A.ndim not in (2, 3) or A.shape[-1] != A.shape[-2]:
        raise ShapeError(f"A must have shape (n, n) or (heads, n, n) (got {tuple(A.shape)})")
    if A.ndim == 2:
        A = A[None]
    heads, n, _ = A.shape
    if tokens is None:
        tokens = [str(i) for i in range(n)]
    tokens = [str(t) for t in tokens]
    if len(tokens) != n:
        raise ShapeError(f"tokens must have n = {n} labels (got {len(tokens)})")
    if head_titles is None:
        head_titles = [f"head {h}" for h in range(heads)] if heads > 1 else [""]
    if len(head_titles) != heads:
        raise ShapeError(f"head_titles must have {heads} entries (got {len(head_titles)})")
    if annotate is None:
        annotate = n <= 8
    vmax = 1.0 if A.max() <= 1.0 + 1e-12 and A.min() >= 0 else float(A.max())
    vmin = 0.0 if A.min() >= 0 else float(A.min())

    cols = heads if heads <= 3 else (2 if heads == 4 else 3)
    rows = math.ceil(heads / cols)
    width = max(4.6 * cols + 1.2, 6.0)
    fig = _new_figure((width, 4.4 * rows + 0.6))
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    image = None
    for h, ax in enumerate(axes):
        if h >= heads:
            ax.set_visible(False)
            continue
        image = ax.imshow(A[h], cmap="viridis", vmin=vmin, vmax=vmax, aspect="equal", interpolation="nearest")
        ax.set_xticks(range(n), tokens, rotation=45 if max(map(len, tokens)) > 3 else 0, ha="right"
                      if max(map(len, tokens)) > 3 else "center")
        ax.set_yticks(range(n), tokens)
        if n > 16:  # keep tick labels legible
            step = math.ceil(n / 16)
            ax.set_xticks(range(0, n, step), tokens[::step])
            ax.set_yticks(range(0, n, step), tokens[::step])
        ax.set_xlabel("key j (attended to)")
        ax.set_ylabel("query i (attending)")
        if head_titles[h]:
            ax.set_title(head_titles[h])
        if annotate:
            for i in range(n):
                for j in range(n):
                    value = A[h, i, j]
                    shade = (value - vmin) / (vmax - vmin or 1.0)
                    ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=9,
                            color="black" if shade > 0.6 else "white")
    fig.colorbar(image, ax=axes[:heads].tolist(), label=label, shrink=0.9)
    fig.suptitle(title or r"Attention weights $A = \mathrm{softmax}(QK^\top/\sqrt{d_k})$, rows sum to 1")
    return fig


# ----------------------------------------------------------------------------- positions
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
    >>> [line.get_label() for line in curves.get_lines()[:2]]
    ['dim 0 (sin, i=0)', 'dim 1 (cos, i=0)']
    >>> np.round(curves.get_lines()[1].get_ydata()[:2], 4)      # cos(0), cos(1)
    array([1.    , 0.5403])
    """
    if PE is None:
        from .numeric import sinusoidal_positions

        PE = sinusoidal_positions(n, d_model, base=base)
    PE = _as_numpy(PE, "PE")
    if PE.ndim != 2:
        raise ShapeError(f"PE must have shape (n, d_model) (got {tuple(PE.shape)})")
    n, d_model = PE.shape
    if dims is None:
        dims = sorted({0, 1, min(2, d_model - 1), min(4, d_model - 1), min(d_model // 2, d_model - 1)})
    for dim in dims:
        if not 0 <= dim < d_model:
            raise ShapeError(f"dims must lie in [0, {d_model}) (got {dim})")
    fig = _new_figure((11.0, 4.6))
    ax_curves, ax_map = fig.subplots(1, 2, width_ratios=[1.25, 1])
    positions = np.arange(n)
    for dim in dims:
        kind = "sin" if dim % 2 == 0 else "cos"
        ax_curves.plot(positions, PE[:, dim], marker="." if n <= 40 else None, label=f"dim {dim} ({kind}, i={dim // 2})")
    ax_curves.set_xlabel("position p")
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


# ----------------------------------------------------------------------------- GELU
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
    x = np.linspace(-5.0, 5.0, 801) if x is None else _as_numpy(x, "x")
    if exact is None or approx is None:
        from .numeric import gelu, gelu_tanh

        exact = gelu(x) if exact is None else exact
        approx = gelu_tanh(x) if approx is None else approx
    exact, approx = _as_numpy(exact, "exact"), _as_numpy(approx, "approx")
    if exact.shape != x.shape or approx.shape != x.shape:
        raise ShapeError(f"exact and approx must have the shape of x {x.shape} (got {exact.shape}, {approx.shape})")
    fig = _new_figure((8.0, 6.0))
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
    k = int(np.argmax(np.abs(error)))
    ax_e.plot([x[k]], [error[k]], "o", color="C3")
    ax_e.annotate(f"max |error| = {abs(error[k]):.2e} at x = {x[k]:.2f}", (x[k], error[k]),
                  textcoords="offset points", xytext=(-10 if x[k] > 0 else 10, 0), fontsize=9, va="center",
                  ha="right" if x[k] > 0 else "left")
    ax_e.axhline(0, color="0.7", lw=0.8)
    ax_e.set_xlabel("x")
    ax_e.set_ylabel("tanh − exact")
    ax_e.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    return fig


# ----------------------------------------------------------------------------- √d scaling
def variance_figure(
    d: Any = None,
    unscaled: Any = None,
    scaled: Any = None,
    *,
    unscaled_ci: Any = None,
    scaled_ci: Any = None,
    exact_unscaled: Any = None,
    exact_scaled: Any = None,
    samples: int | None = None,
    seed: int = 0,
    quick: bool = False,
) -> Figure:
    """Variance of the score q·k against d, unscaled and divided by √d (log–log axes).

    Parameters
    ----------
    d : array-like of int
        Dimensions. With ``unscaled``/``scaled`` left out, the Monte Carlo estimates (with
        their 95 % intervals) and the exact values come from
        :func:`attnsym.numeric.montecarlo.score_variance`.
    unscaled, scaled : array-like
        Estimated Var[q·k] and Var[q·k/√d] at each ``d``.
    unscaled_ci, scaled_ci : array-like, shape (len(d), 2), optional
        Lower and upper ends of each estimate's confidence interval.
    exact_unscaled, exact_scaled : array-like, optional
        Exact variances at each ``d`` (drawn as lines).
    samples, seed, quick
        Passed to the Monte Carlo when the data is fetched.

    Returns
    -------
    matplotlib.figure.Figure
        Left: both variances on log–log axes; right (when intervals are given): the scaled
        variance with its intervals, zoomed.

    Examples
    --------
    >>> d = np.array([1, 4, 16])
    >>> fig = variance_figure(d, unscaled=1.0 * d, scaled=np.ones(3))
    >>> fig.axes[0].get_xscale(), fig.axes[0].get_yscale()
    ('log', 'log')
    """
    if unscaled is None or scaled is None:
        data = _score_variance_data(d, samples=samples, seed=seed, quick=quick)
        d, unscaled, scaled = data["d"], data["unscaled"], data["scaled"]
        unscaled_ci, scaled_ci = data["unscaled_ci"], data["scaled_ci"]
        exact_unscaled, exact_scaled = data["exact_unscaled"], data["exact_scaled"]
    d = _as_numpy(d, "d")
    unscaled, scaled = _as_numpy(unscaled, "unscaled"), _as_numpy(scaled, "scaled")
    if not (d.shape == unscaled.shape == scaled.shape) or d.ndim != 1:
        raise ShapeError(f"d, unscaled and scaled must be 1-D of equal length (got {d.shape}, {unscaled.shape}, {scaled.shape})")
    zoom = scaled_ci is not None
    fig = _new_figure((11.0, 4.8) if zoom else FIGSIZE)
    axes = fig.subplots(1, 2, width_ratios=[1.3, 1]) if zoom else [fig.subplots()]
    ax = axes[0]
    for values, ci, exact, label, colour in (
        (unscaled, unscaled_ci, exact_unscaled, r"unscaled $q\cdot k$", "C3"),
        (scaled, scaled_ci, exact_scaled, r"scaled $q\cdot k/\sqrt{d}$", "C0"),
    ):
        if ci is not None:
            ci = _as_numpy(ci, "ci")
            yerr = np.abs(np.stack([values - ci[:, 0], ci[:, 1] - values]))
            ax.errorbar(d, values, yerr=yerr, fmt="o", color=colour, capsize=3, label=f"{label}: Monte Carlo, 95% CI")
        else:
            ax.plot(d, values, "o", color=colour, label=f"{label}: estimate")
        if exact is not None:
            ax.plot(d, _as_numpy(exact, "exact"), "-", color=colour, alpha=0.6, label=f"{label}: exact")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("dimension d (components i.i.d., mean 0, variance 1)")
    ax.set_ylabel("variance of the score")
    ax.set_title("log–log: unscaled grows like d, scaled stays at 1")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=9)
    if zoom:
        ci = _as_numpy(scaled_ci, "scaled_ci")
        ax2 = axes[1]
        ax2.errorbar(d, scaled, yerr=np.abs(np.stack([scaled - ci[:, 0], ci[:, 1] - scaled])), fmt="o", color="C0",
                     capsize=3, label="Monte Carlo, 95% CI")
        if exact_scaled is not None:
            ax2.plot(d, _as_numpy(exact_scaled, "exact_scaled"), "-", color="C0", alpha=0.6, label="exact")
        ax2.set_xscale("log", base=2)
        ax2.set_xlabel("dimension d")
        ax2.set_ylabel(r"Var$[q\cdot k/\sqrt{d}]$")
        ax2.set_title("zoom on the scaled variance")
        ax2.grid(True, alpha=0.3)
        ax2.legend(fontsize=9)
    fig.suptitle(r"Var$[q\cdot k] = d$; dividing by $\sqrt{d}$ brings it back to 1")
    return fig


def _score_variance_data(d: Any, *, samples: int | None, seed: int, quick: bool) -> dict[str, Any]:
    """Fetch the Monte Carlo estimates behind :func:`variance_figure` from attnsym.numeric.montecarlo."""
    from .numeric import montecarlo

    kwargs: dict[str, Any] = {"seed": seed}
    if d is not None:
        kwargs["d"] = [int(v) for v in np.atleast_1d(d)]
    if samples is not None:
        kwargs["samples"] = samples
    elif quick:
        kwargs["rel_error"] = 0.05  # 95 % intervals of ±5 % instead of ±2 %
    return montecarlo.score_variance(**kwargs)


# ----------------------------------------------------------------------------- saturation
def entropy_figure(
    d: Any = None,
    unscaled: Any = None,
    scaled: Any = None,
    *,
    n: int = 16,
    max_weight_unscaled: Any = None,
    max_weight_scaled: Any = None,
    seed: int = 0,
    quick: bool = False,
) -> Figure:
    """Mean row entropy of softmax(q·k) against d, unscaled and scaled (saturation).

    Parameters
    ----------
    d : array-like of int
        Dimensions.
    unscaled, scaled : array-like
        Mean row entropy (nats) of the attention matrix at each ``d``. Left out, they are
        computed by the layers: random inputs ``X ~ N(0, I)`` and independent ``W_Q, W_K`` with
        entries ``N(0, 1/d)`` (so q and k have unit-variance components), ``attnsym.numeric.attention`` for
        the weights, ``attnsym.graphs.row_entropy`` for the entropy.
    n : int
        Number of keys (sets the maximum entropy ``log n`` drawn as a reference).
    max_weight_unscaled, max_weight_scaled : array-like, optional
        Mean largest weight per row, drawn on a second panel.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = entropy_figure([1, 16, 256], unscaled=[2.7, 1.1, 0.2], scaled=[2.7, 2.4, 2.4], n=16)
    >>> round(fig.axes[0].get_lines()[2].get_ydata()[0], 4)      # log 16, the uniform row
    2.7726
    """
    if unscaled is None or scaled is None:
        data = _entropy_data(d, n=n, seed=seed, quick=quick)
        d, unscaled, scaled = data["d"], data["unscaled"], data["scaled"]
        max_weight_unscaled, max_weight_scaled = data["max_unscaled"], data["max_scaled"]
    d = _as_numpy(d, "d")
    unscaled, scaled = _as_numpy(unscaled, "unscaled"), _as_numpy(scaled, "scaled")
    if not (d.shape == unscaled.shape == scaled.shape) or d.ndim != 1:
        raise ShapeError(f"d, unscaled and scaled must be 1-D of equal length (got {d.shape}, {unscaled.shape}, {scaled.shape})")
    two = max_weight_unscaled is not None and max_weight_scaled is not None
    fig = _new_figure((11.0, 4.6) if two else FIGSIZE)
    axes = fig.subplots(1, 2) if two else [fig.subplots()]
    ax = axes[0]
    ax.plot(d, unscaled, "o-", color="C3", label=r"unscaled $QK^\top$")
    ax.plot(d, scaled, "s-", color="C0", label=r"scaled $QK^\top/\sqrt{d}$")
    ax.axhline(math.log(n), color="0.5", ls=":", label=f"uniform: log n = {math.log(n):.2f}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("dimension d")
    ax.set_ylabel("mean row entropy (nats)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"Row entropy of A, n = {n} keys")
    ax.legend(fontsize=9)
    if two:
        ax2 = axes[1]
        ax2.plot(d, _as_numpy(max_weight_unscaled, "max_weight_unscaled"), "o-", color="C3", label="unscaled")
        ax2.plot(d, _as_numpy(max_weight_scaled, "max_weight_scaled"), "s-", color="C0", label="scaled")
        ax2.axhline(1 / n, color="0.5", ls=":", label=f"uniform: 1/n = {1 / n:.3f}")
        ax2.set_xscale("log", base=2)
        ax2.set_xlabel("dimension d")
        ax2.set_ylabel("mean largest weight per row")
        ax2.set_ylim(0, 1.05)
        ax2.set_title("Largest weight: unscaled softmax saturates to one-hot")
        ax2.legend(fontsize=9)
    fig.suptitle("Without 1/√d the softmax saturates as d grows (entropy → 0, gradients vanish)")
    return fig


def _entropy_data(d: Any, *, n: int, seed: int, quick: bool) -> dict[str, Any]:
    """Mean row entropy and largest weight of random attention matrices, via numeric + graphs."""
    from .graphs import row_entropy
    from .numeric import attention

    dims = [int(v) for v in np.atleast_1d(d)] if d is not None else [2**k for k in range(0, 11 if not quick else 9)]
    trials = 8 if quick else 32
    rng = np.random.default_rng(seed)
    out: dict[str, list[float]] = {"unscaled": [], "scaled": [], "max_unscaled": [], "max_scaled": []}
    for dim in dims:
        X = rng.standard_normal((trials, n, dim))
        # independent W_Q, W_K with entries N(0, 1/d): the components of q and k have mean 0, variance ~1
        W_Q, W_K = rng.standard_normal((2, dim, dim)) / math.sqrt(dim)
        W_V = np.eye(dim)
        for key, scale in (("unscaled", "none"), ("scaled", "sqrt")):
            _, A = attention(X, W_Q, W_K, W_V, scale=scale)
            A = np.asarray(A)
            out[key].append(float(np.mean([np.mean(row_entropy(a)) for a in A])))
            out["max_" + key].append(float(np.mean(A.max(axis=-1))))
    return {"d": np.array(dims), **{k: np.array(v) for k, v in out.items()}}


# ----------------------------------------------------------------------------- Table 1
def path_length_figure(
    ns: Any = None,
    path_lengths: Mapping[str, Sequence[float]] | None = None,
    depths: Mapping[str, Sequence[float]] | None = None,
) -> Figure:
    """Table 1 of Vaswani et al. (2017) as growth curves: maximum path length and sequential depth.

    Parameters
    ----------
    ns : array-like of int
        Sequence lengths.
    path_lengths, depths : mapping architecture -> values at each ``n``
        The longest shortest path between any two positions, and the depth of the computation
        DAG. Left out, they come from :func:`attnsym.graphs.max_path_length` and
        :func:`attnsym.graphs.sequential_depth` (built from real graphs).

    Returns
    -------
    matplotlib.figure.Figure
        Two panels (path length, depth) with one line per architecture.

    Examples
    --------
    >>> ns = [2, 4, 8]
    >>> fig = path_length_figure(ns, {"self_attention": [1, 1, 1], "recurrent": [2, 4, 8]},
    ...                          {"self_attention": [1, 1, 1], "recurrent": [2, 4, 8]})
    >>> [line.get_label() for line in fig.axes[0].get_lines()]
    ['self attention', 'recurrent']
    """
    if path_lengths is None or depths is None:
        data = _table1_data(ns)
        ns, path_lengths, depths = data["n"], data["path_lengths"], data["depths"]
    ns = _as_numpy(ns, "ns")
    fig = _new_figure((11.0, 4.6))
    axes = fig.subplots(1, 2, sharex=True)
    markers = "osD^vx*"
    for ax, table, ylabel, title in (
        (axes[0], path_lengths, "maximum path length (edges)", "Maximum path length between positions"),
        (axes[1], depths, "sequential operations (DAG depth)", "Sequential operations"),
    ):
        same: dict[tuple, list[str]] = {}
        every = max(1, len(ns) // 12)  # at most about a dozen markers per line
        for k, (arch, values) in enumerate(table.items()):
            values = _as_numpy(values, f"{arch} values")
            if values.shape != ns.shape:
                raise ShapeError(f"values for {arch!r} must have one entry per n ({ns.shape}) (got {values.shape})")
            name = str(arch).replace("_", " ")
            ax.plot(ns, values, marker=markers[k % len(markers)], markevery=every, label=name)
            same.setdefault(tuple(values.tolist()), []).append(name)
        for values, names in same.items():
            if len(names) > 1:  # lines drawn on top of each other: say so, inside the axes, at the right end
                lines = [names[0]]
                for name in names[1:]:
                    if len(lines[-1]) + len(name) > 36:
                        lines[-1] += " ="
                        lines.append(name)
                    else:
                        lines[-1] += " = " + name
                ax.annotate("\n".join(lines), (ns[-1], values[-1]), textcoords="offset points",
                            xytext=(-4, 6), ha="right", va="bottom", fontsize=8, color="0.3")
        ax.set_xlabel("sequence length n")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=9)
    fig.suptitle("Table 1 of Vaswani et al. (2017), computed from graphs: self-attention is O(1) in both")
    return fig


def _table1_data(ns: Any) -> dict[str, Any]:
    from . import graphs

    ns = [int(v) for v in np.atleast_1d(ns)] if ns is not None else [2, 4, 8, 16, 32, 64]
    archs = getattr(graphs, "ARCHITECTURES", ("self-attention", "recurrent", "convolutional"))
    path_lengths = {arch: [graphs.max_path_length(arch, n) for n in ns] for arch in archs}
    depths = {arch: [graphs.sequential_depth(arch, n) for n in ns] for arch in archs}
    return {"n": np.array(ns), "path_lengths": path_lengths, "depths": depths}


#: the standard figures: name -> what it shows (build one with :func:`figure`; used by ``attnsym plot`` and the tour)
FIGURES: dict[str, str] = {
    "heatmap": "attention weights per head (query × key) for random inputs",
    "positions": "sinusoidal positional-encoding curves and matrix",
    "gelu": "GELU exact vs tanh approximation, and the error",
    "variance": "variance of q·k vs d, unscaled and scaled by 1/√d (Monte Carlo + exact)",
    "entropy": "row entropy and largest weight of softmax vs d, unscaled and scaled",
    "paths": "Table 1: maximum path length and sequential depth vs n per architecture",
}


def random_attention(spec: Any = None, *, seed: int = 0, input_seed: int | None = None) -> tuple[np.ndarray, list[str]]:
    """Attention weights of every head for random weights and inputs, computed by :mod:`attnsym.numeric`.

    Weights are drawn with ``seed`` (entries ``N(0, 1/fan_in)``), the input ``X ~ N(0, 1)`` with
    ``input_seed`` (default ``seed``): the same ``seed`` with two ``input_seed`` values gives two
    inputs through the same weights.

    Returns
    -------
    A : ndarray, shape (n, n) or (heads, n, n)
    tokens : list of str
        Placeholder words labelling the positions (position numbers beyond 8 tokens).

    Examples
    --------
    >>> A, tokens = random_attention(at.AttentionSpec(n=3, d_model=4, heads=2), seed=0)
    >>> A.shape, tokens
    ((2, 3, 3), ['the', 'cat', 'sat'])
    >>> bool(np.allclose(A.sum(axis=-1), 1.0))
    True
    """
    from .numeric import attention
    from .spec import AttentionSpec

    spec = spec if spec is not None else AttentionSpec(n=6, d_model=8, heads=2)
    rng = np.random.default_rng(seed)
    shapes = spec.shapes
    W = {name: rng.standard_normal(shapes[name]) / math.sqrt(shapes[name][0]) for name in spec.parameter_names
         if name.startswith("W_")}
    X = np.random.default_rng(seed if input_seed is None else input_seed + 7919).standard_normal(shapes["X"])
    _, A = attention(X, W["W_Q"], W["W_K"], W["W_V"], W.get("W_O"), spec=spec)
    tokens = ["the", "cat", "sat", "on", "the", "mat", "and", "purred"]
    labels = tokens[: spec.n] if spec.n <= len(tokens) else [str(i) for i in range(spec.n)]
    return np.asarray(A), labels


def figure(name: str, *, seed: int = 0, quick: bool = False, spec: Any = None) -> Figure:
    """Build one of the standard figures of :data:`FIGURES` with data from the layers.

    Parameters
    ----------
    name : {"heatmap", "positions", "gelu", "variance", "entropy", "paths"}
    seed : int, default 0
        Seed of every random input (heatmap, Monte Carlo, entropy).
    quick : bool, default False
        Fewer samples (for tests and ``attnsym tour --quick``).
    spec : AttentionSpec, optional
        The layer of the heatmap (default n=6, d_model=8, heads=2).

    Raises
    ------
    SpecError
        Unknown ``name``.

    Examples
    --------
    >>> fig = figure("gelu")
    >>> fig.axes[-1].get_ylabel()
    'tanh − exact'
    """
    if name not in FIGURES:
        raise SpecError(f"name must be one of {', '.join(FIGURES)} (got {name!r})")
    if name == "heatmap":
        A, tokens = random_attention(spec, seed=seed)
        return attention_heatmap(A, tokens)
    if name == "positions":
        return positional_encoding_figure()
    if name == "gelu":
        return gelu_figure()
    if name == "variance":
        return variance_figure(seed=seed, quick=quick)
    if name == "entropy":
        return entropy_figure(seed=seed, quick=quick)
    return path_length_figure()
