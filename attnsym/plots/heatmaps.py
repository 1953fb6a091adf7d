"""Attention weights as heatmaps, one panel per head, and the random attention they default to."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ShapeError, SpecTypeError
from ..numeric import attention, random_inputs
from ..spec import AttentionSpec
from ._base import as_numpy, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage

__all__ = ["attention_heatmap", "random_attention"]


def attention_heatmap(
    A: Any,
    tokens: Sequence[str] | None = None,
    *,
    head_titles: Sequence[str] | None = None,
    title: str | None = None,
    annotate: bool | None = None,
    label: str = "attention weight $A_{ij}$",
    allowed: Any = None,
) -> Figure:
    """Heatmap of attention weights, one panel per head: query (rows) × key (columns).

    Parameters
    ----------
    A : array-like, shape (n, n) or (heads, n, n)
        Attention weights; row ``i`` is the distribution query ``i`` puts over the keys.
        NumPy, CuPy or PyTorch arrays are accepted.
    tokens : sequence of str, optional
        Labels of the ``n`` positions (both axes); default ``1 … n`` (tokens count from 1).
    head_titles : sequence of str, optional
        Title of each panel; default ``"head 1"``, ``"head 2"``, … (none for a single head): people
        count heads from 1, so panel ``"head h"`` shows ``A[..., h - 1, :, :]``.
    title : str, optional
        Figure title; default ``"Attention weights A = softmax(Q Kᵀ / √d_k)"``.
    annotate : bool, optional
        Print each weight in its cell; default when ``n <= 8``.
    label : str
        Label of the colour bar (change it when drawing scores ``S`` rather than weights).
        The colour scale runs from 0 (or the minimum, if negative) to the largest value shown, so
        that the many small weights of a long sequence (about 1/n each) are not all the same dark.
    allowed : (n, n) bool array-like, optional
        ``True`` where query ``i`` may attend to key ``j`` (e.g. ``spec.allowed_array()``); the
        other cells are drawn grey and hatched and printed "×", never "0.00" like a real zero.
        Booleans, or numbers that are all 0 or 1. A mask that allows no cell at all is drawn too
        (every cell hatched, the colour scale 0 … 1, since no value is shown to scale it to).

    Returns
    -------
    matplotlib.figure.Figure
        One image axis per head sharing one colour bar (labelled, 0 … the largest weight).

    Raises
    ------
    ShapeError
        ``A`` is not (n, n) or (heads, n, n) with n >= 1 and at least one head, is not real and
        finite, or spans a range wider than float64 holds; ``tokens`` / ``head_titles`` have the
        wrong length; ``allowed`` is not (n, n) or holds values other than 0/1 (or True/False).
    SpecTypeError
        ``tokens`` or ``head_titles`` is a single str or not a sequence.

    Examples
    --------
    >>> A = np.array([[[1.0, 0.0], [0.5, 0.5]], [[0.2, 0.8], [0.6, 0.4]]])
    >>> fig = attention_heatmap(A, tokens=["a", "b"])
    >>> [ax.get_title() for ax in fig.axes if ax.get_label() != "<colorbar>"]
    ['head 1', 'head 2']
    >>> attention_heatmap(np.zeros((0, 2, 2)))
    Traceback (most recent call last):
    ...
    attnsym.errors.ShapeError: A must hold at least one head: shape (heads, n, n) with heads >= 1 (got (0, 2, 2))
    """
    A = _head_stack(as_numpy(A, "A"))
    heads, n, _ = A.shape
    tokens = _position_labels(tokens, n)
    head_titles = _panel_titles(head_titles, heads)
    if annotate is None:
        annotate = n <= 8
    allowed = _allowed_cells(allowed, n)
    vmin, vmax = _colour_range(A, allowed)
    fig, axes = _panel_grid(heads)
    images = [_draw_head(ax, A[h], tokens, head_titles[h], allowed=allowed, vmin=vmin, vmax=vmax, annotate=annotate)
              for h, ax in enumerate(axes[:heads])]
    for ax in axes[heads:]:
        ax.set_visible(False)
    fig.colorbar(images[-1], ax=axes[:heads].tolist(), label=_colour_bar_label(label, vmin, vmax, allowed), shrink=0.9)
    fig.suptitle(title or r"Attention weights $A = \mathrm{softmax}(QK^\top/\sqrt{d_k})$, " + _row_sums_note(A)
                 + (", heads from 1" if heads > 1 else ""))
    return fig


def _row_sums_note(A: np.ndarray) -> str:
    """What the rows of ``A`` sum to, as the default title says it: 1, 1 but for fully masked rows, or the range.

    >>> _row_sums_note(np.array([[[1.0, 0.0], [0.0, 0.0]]]))
    'rows sum to 1 (a fully masked row: 0)'
    >>> _row_sums_note(np.array([[[0.5, 0.25], [0.3, 0.3]]]))
    'row sums 0.6 to 0.75'
    """
    sums = A.sum(axis=-1)
    one, zero = np.isclose(sums, 1.0, rtol=0, atol=1e-6), np.isclose(sums, 0.0, rtol=0, atol=1e-12)
    if one.all():
        return "rows sum to 1"
    if (one | zero).all() and one.any():
        return "rows sum to 1 (a fully masked row: 0)"
    low, high = float(sums.min()), float(sums.max())
    return f"row sums {low:.3g} to {high:.3g}" if low != high else f"rows sum to {low:.3g}"


def _head_stack(A: np.ndarray) -> np.ndarray:
    """``A`` as (heads, n, n): one (n, n) matrix becomes a stack of one head; no head or no position is refused."""
    if A.ndim not in (2, 3) or A.shape[-1] != A.shape[-2]:
        raise ShapeError(f"A must have shape (n, n) or (heads, n, n) (got {tuple(A.shape)})")
    if A.ndim == 3 and A.shape[0] == 0:
        raise ShapeError(f"A must hold at least one head: shape (heads, n, n) with heads >= 1 (got {tuple(A.shape)})")
    if A.shape[-1] == 0:
        raise ShapeError(f"A must have at least one position: shape (n, n) or (heads, n, n) with n >= 1 "
                         f"(got {tuple(A.shape)})")
    return A[None] if A.ndim == 2 else A


def _labels(values: Any, name: str, count: int, per: str) -> list[str]:
    """``values`` (a sequence, not one str) as ``count`` strings, one per ``per`` (a position, a head)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        shown = repr(values) if len(repr(values)) <= 40 else repr(values)[:40] + "..."
        raise SpecTypeError(f"{name} must be a sequence of {count} labels, one per {per} (got {type(values).__name__} "
                            f"{shown})")
    labels = [str(value) for value in values]
    if len(labels) != count:
        raise ShapeError(f"{name} must have {count} labels, one per {per} (got {len(labels)})")
    return labels


def _position_labels(tokens: Sequence[str] | None, n: int) -> list[str]:
    """The ``n`` axis labels: ``tokens`` as str, or ``1 … n``."""
    return [str(i + 1) for i in range(n)] if tokens is None else _labels(tokens, "tokens", n, "position")


def _panel_titles(head_titles: Sequence[str] | None, heads: int) -> Sequence[str]:
    """One title per head: ``head_titles``, or ``head 1 … head H`` (no title for a single head)."""
    if head_titles is None:
        return [f"head {h + 1}" for h in range(heads)] if heads > 1 else [""]
    return _labels(head_titles, "head_titles", heads, "head of A")


def _allowed_cells(allowed: Any, n: int) -> np.ndarray | None:
    """``allowed`` as an (n, n) bool array, or None (every cell allowed); only 0/1 (False/True) entries."""
    if allowed is None:
        return None
    cells = as_numpy(allowed, "allowed")
    if cells.shape != (n, n):
        raise ShapeError(f"allowed must have shape (n, n) = ({n}, {n}) (got {cells.shape})")
    odd = (cells != 0) & (cells != 1)
    if odd.any():
        where = tuple(int(i) for i in np.argwhere(odd)[0])
        raise ShapeError(f"allowed must hold True/False (or 1/0) per cell (got {cells[where]:g} at index {where})")
    return cells == 1


def _colour_range(A: np.ndarray, allowed: np.ndarray | None) -> tuple[float, float]:
    """``(vmin, vmax)``: 0 (or the least value, if negative) … the largest value of the allowed cells.

    With no cell allowed there is no value to scale to: 0 … 1, the range of a weight. A range
    wider than float64 holds (values near ±1.8e308) is refused: the colours could not be computed.
    """
    shown = A if allowed is None else A[:, allowed]
    if shown.size == 0:
        return 0.0, 1.0
    vmin = min(0.0, float(shown.min()))
    vmax = float(shown.max()) if shown.max() > vmin else vmin + 1.0
    if not np.isfinite(vmax - vmin):
        raise ShapeError(f"A's colour range {vmin:g} … {vmax:g} is wider than float64 holds; rescale A")
    return vmin, vmax


def _colour_bar_label(label: str, vmin: float, vmax: float, allowed: np.ndarray | None) -> str:
    """``label`` with the colour scale's range, and what the hatched cells mean when some are masked."""
    if allowed is not None and not allowed.any():
        note = f"{label} (colour scale {vmin:g} … {vmax:.3g}: every cell is masked)"
    else:
        note = f"{label} (colour scale {vmin:g} … {vmax:.3g}, the largest shown)"
    if allowed is not None:
        note += "\ngrey hatched ×: masked, may not attend"
    return note


def _panel_grid(heads: int) -> tuple[Figure, np.ndarray]:
    """A figure with a grid of at least ``heads`` axes (up to 3 columns; 2 × 2 for four), and its axes, row by row."""
    cols = heads if heads <= 3 else (2 if heads == 4 else 3)
    rows = math.ceil(heads / cols)
    width = max(4.6 * cols + 1.2, 6.0)
    fig = new_figure((width, 4.4 * rows + 0.6))
    return fig, np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()


def _draw_head(ax, weights: np.ndarray, tokens: list[str], title: str, *, allowed: np.ndarray | None, vmin: float,
               vmax: float, annotate: bool) -> AxesImage:
    """One head's (n, n) ``weights`` on ``ax``: the image, masked cells hatched, token ticks, labels, values."""
    data = weights if allowed is None else np.ma.masked_array(weights, mask=~allowed)
    image = ax.imshow(data, cmap="viridis", vmin=vmin, vmax=vmax, aspect="equal", interpolation="nearest")
    if allowed is not None:
        _hatch_masked(ax, allowed)
    _token_ticks(ax, tokens)
    ax.set_xlabel("key j (attended to)")
    ax.set_ylabel("query i (attending)")
    if title:
        ax.set_title(title)
    if annotate:
        _print_values(ax, weights, allowed, vmin, vmax)
    return image


def _hatch_masked(ax, allowed: np.ndarray) -> None:
    """Masked cells grey and hatched, so they never read as weight 0."""
    from matplotlib.patches import Rectangle

    ax.set_facecolor("0.85")
    for i, j in zip(*np.nonzero(~allowed), strict=True):
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", edgecolor="0.6", linewidth=0))


def _token_ticks(ax, tokens: list[str]) -> None:
    """Token labels on both axes (slanted when long); every k-th one past 16 tokens, to stay legible."""
    n = len(tokens)
    long = max(map(len, tokens)) > 3
    ax.set_xticks(range(n), tokens, rotation=45 if long else 0, ha="right" if long else "center")
    ax.set_yticks(range(n), tokens)
    if n > 16:
        step = math.ceil(n / 16)
        ax.set_xticks(range(0, n, step), tokens[::step])
        ax.set_yticks(range(0, n, step), tokens[::step])


def _print_values(ax, weights: np.ndarray, allowed: np.ndarray | None, vmin: float, vmax: float) -> None:
    """Each weight in its cell (dark text on light colours), "×" in a masked cell."""
    n = weights.shape[0]
    for i in range(n):
        for j in range(n):
            if allowed is not None and not allowed[i, j]:
                ax.text(j, i, "×", ha="center", va="center", fontsize=9, color="0.35")
                continue
            value = weights[i, j]
            shade = (value - vmin) / (vmax - vmin or 1.0)
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=9,
                    color="black" if shade > 0.6 else "white")


def random_attention(spec: Any = None, *, seed: int = 0, input_seed: int | None = None) -> tuple[np.ndarray, list[str]]:
    """Attention weights of every head for random weights and inputs, computed by :mod:`attnsym.numeric`.

    The inputs come from :func:`attnsym.numeric.random_inputs`: weights and biases drawn with
    ``seed`` (entries ``N(0, 1/fan_in)``), the input ``X ~ N(0, 1)`` with ``input_seed`` (default
    ``seed``): the same ``seed`` with two ``input_seed`` values gives two inputs through the same
    weights.

    Returns
    -------
    A : ndarray, shape (n, n) or (heads, n, n)
    tokens : list of str
        Placeholder words labelling the positions (token numbers 1 … n beyond 8 tokens): the inputs
        are random vectors, so two positions labelled "the" hold different vectors.

    Examples
    --------
    >>> A, tokens = random_attention(at.AttentionSpec(n=3, d_model=4, heads=2), seed=0)
    >>> A.shape, tokens
    ((2, 3, 3), ['the', 'cat', 'sat'])
    >>> bool(np.allclose(A.sum(axis=-1), 1.0))
    True
    """
    spec = spec if spec is not None else AttentionSpec(n=6, d_model=8, heads=2)
    values = random_inputs(spec, seed, input_seed=input_seed)
    # W_Q, …, b_O as keyword arguments (mixed with attention's int/bool/str options, so not dict[str, ndarray])
    weights: dict[str, Any] = {name: values[name] for name in spec.parameter_names}
    _, A = attention(values["X"], spec=spec, **weights)
    tokens = ["the", "cat", "sat", "on", "the", "mat", "and", "purred"]
    labels = tokens[: spec.n] if spec.n <= len(tokens) else [str(i + 1) for i in range(spec.n)]
    return np.asarray(A), labels

