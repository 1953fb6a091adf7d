"""The head classes of a model as one picture: a layers × heads grid coloured by class, with a legend.

The data is a :class:`~attnsym.heads.HeadReport` (:func:`attnsym.heads.classify`); this module
only draws it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import SpecError
from ._base import new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["CLASS_COLOURS", "head_classes_figure"]

#: class -> colour (colour-blind-safe Okabe–Ito hues first; ``mixed`` light grey)
CLASS_COLOURS: dict[str, str] = {
    "previous-token": "#0072B2", "next-token": "#56B4E9", "self": "#009E73", "first-token": "#E69F00",
    "end-token": "#D55E00", "learned-sink": "#332288", "punctuation": "#CC79A7", "band": "#F0E442", "broad": "#999999",
    "induction": "#882255", "duplicate-token": "#44AA99", "mixed": "#EEEEEE",
}


def head_classes_figure(report: Any, *, title: str | None = None) -> Figure:
    """Layers (rows, from 1) × heads (columns, from 1), each cell coloured by its primary class, with its score and other labels.

    Parameters
    ----------
    report : HeadReport
        From :func:`attnsym.heads.classify`.
    title : str, optional
        The figure's title (default names the numbering and the rule).

    Returns
    -------
    matplotlib.figure.Figure
        One axes; the legend lists only the classes that occur, each with the heads whose primary
        class it is and, where more heads carry it as a further label, that count too.

    Examples
    --------
    >>> import numpy as np
    >>> from attnsym.heads import classify
    >>> A = np.zeros((1, 2, 3, 3)); A[0, 0] = np.eye(3); A[0, 1] = 1 / 3
    >>> fig = head_classes_figure(classify(A))
    >>> [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    ['self (1)', 'broad (1)']
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    from ..heads import CLASSES, SHORT

    if not hasattr(report, "primary") or not hasattr(report, "top"):
        raise SpecError(f"report must be a HeadReport from attnsym.heads.classify (got {type(report).__name__})")
    L, H = report.layers, report.heads
    index = {c: k for k, c in enumerate(CLASSES)}
    grid = np.array([[index[c] for c in row] for row in report.primary], dtype=float)  # (L, H)
    fig = new_figure((max(6.0, 0.62 * H + 2.8), max(3.2, 0.5 * L + 2.2)))
    ax = fig.add_subplot()
    cmap = ListedColormap([CLASS_COLOURS[c] for c in CLASSES])
    ax.imshow(grid, cmap=cmap, vmin=-0.5, vmax=len(CLASSES) - 0.5, aspect="auto", interpolation="nearest")
    for ly in range(L):
        for h in range(H):
            label = report.primary[ly][h]
            value = report.top[ly, h]
            text = SHORT[label] if math.isnan(value) else f"{SHORT[label]}\n{value:.2f}"
            others = [SHORT[c] for c in report.labels[ly][h] if c != label]
            if others:
                text += "\n+" + "+".join(others)
            dark = label in ("previous-token", "induction", "end-token")
            ax.text(h, ly, text, ha="center", va="center", fontsize=7, color="white" if dark else "black")
    ax.set_xticks(range(H), [str(h + 1) for h in range(H)])
    ax.set_yticks(range(L), [str(ly + 1) for ly in range(L)])
    ax.set_xlabel("head (from 1)")
    ax.set_ylabel("layer (from 1)")
    ax.set_xticks(np.arange(-0.5, H, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, L, 1), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    counts, carried = report.counts(), report.label_counts()
    present = [c for c in CLASSES if sum(counts[c]) or (c != "mixed" and sum(carried[c]))]

    def entry(c: str) -> str:
        extra = sum(carried[c]) - sum(counts[c]) if c != "mixed" else 0
        return f"{c} ({sum(counts[c])}" + (f", +{extra} as a further label)" if extra else ")")

    handles = [Patch(facecolor=CLASS_COLOURS[c], edgecolor="#555555", label=entry(c)) for c in present]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False,
              title="primary class (heads)", title_fontsize=8)
    ax.set_title(title or "head classes: colour and first line the primary class and its score; "
                 "+ the further labels that pass their threshold", fontsize=9)
    return fig
