"""Figures to bytes and files: PNG, SVG or PDF rendered in memory, written atomically, never a silent overwrite."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .._io import atomic_write, refuse_existing
from ..errors import SpecError
from ._base import DPI

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["FORMATS", "figure_to_bytes", "import_renderer", "resampled_png", "save_figure"]

#: the file formats a figure is written in
FORMATS = ("png", "svg", "pdf")


def import_renderer() -> None:
    """Import matplotlib's figure classes and Agg renderer now (0.5 s of CPU on this project's machines).

    For a process about to fork workers that draw: each forked worker otherwise imports them
    again. ``import attnsym.plots`` itself does not import matplotlib.
    """
    import matplotlib.backends.backend_agg
    import matplotlib.figure  # noqa: F401

    from . import ticks  # noqa: F401


def figure_to_bytes(fig: Figure, fmt: str = "png", *, dpi: int = DPI) -> bytes:
    """Render ``fig`` to PNG, SVG or PDF bytes in memory, byte-for-byte reproducible (no date, fixed SVG ids).

    Examples
    --------
    >>> from attnsym import plots
    >>> fig = plots.gelu_figure(x=np.linspace(-3, 3, 7), exact=np.zeros(7), approx=np.zeros(7))
    >>> plots.figure_to_bytes(fig, "png")[:4]
    b'\\x89PNG'
    """
    fmt = fmt.lower().lstrip(".")
    if fmt not in FORMATS:
        raise SpecError(f"fmt must be one of {FORMATS} (got {fmt!r})")
    import matplotlib

    from .ticks import plain_log_labels  # with matplotlib: importing attnsym.plots does not import it

    plain_log_labels(fig)
    buffer = io.BytesIO()
    # no date or producer: the same figure gives the same bytes on every run
    metadata = {"png": {"Software": None}, "svg": {"Date": None},
                "pdf": {"CreationDate": None, "ModDate": None, "Producer": None}}[fmt]
    # a fixed SVG id salt and path simplification: the same figure gives the same bytes on every run
    with matplotlib.rc_context({"svg.hashsalt": "attnsym", "path.simplify": True}):
        settle_layout(fig)
        fig.savefig(buffer, format=fmt, dpi=dpi, metadata=metadata)
    return buffer.getvalue()


def resampled_png(png: bytes, dpi: int) -> bytes:
    """A PNG rendered at a higher resolution, resampled (Lanczos) to ``dpi``: the same figure, not drawn again.

    Drawing a figure is most of what writing it costs (laying out and rasterising its text);
    resampling the pixels already drawn costs a few milliseconds. The source resolution is read
    from the PNG (matplotlib records it); a PNG at ``dpi`` or below comes back unchanged. The
    result is opaque (composited on white) with a 256-colour palette.

    Examples
    --------
    >>> from attnsym import plots
    >>> fig = plots.gelu_figure(x=np.linspace(-3, 3, 7), exact=np.zeros(7), approx=np.zeros(7))
    >>> from PIL import Image
    >>> Image.open(io.BytesIO(resampled_png(plots.figure_to_bytes(fig, "png", dpi=100), 50))).size
    (400, 300)
    """
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        source = float(image.info.get("dpi", (DPI, DPI))[0])
        if source <= dpi + 0.5:
            return png
        size = (max(1, round(image.width * dpi / source)), max(1, round(image.height * dpi / source)))
        smaller = image.convert("RGBA").resize(size, Image.Resampling.LANCZOS)
    # on white, in a 256-colour palette: resampling's soft edges would make a full-colour PNG 2.5x larger
    opaque = Image.alpha_composite(Image.new("RGBA", smaller.size, "white"), smaller).convert("RGB")
    buffer = io.BytesIO()
    opaque.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(buffer, "PNG", dpi=(dpi, dpi))
    return buffer.getvalue()


def settle_layout(fig: Figure) -> None:
    """Run the figure's layout engine once, then freeze the positions it chose.

    matplotlib runs a constrained layout on every draw; measuring every tick label of every axes
    is most of the cost of writing a figure. One pass places everything (that is what a plain
    ``savefig`` of a fresh figure does); freezing it means later renders draw without laying out
    again, and every render of the figure gives the same bytes.
    """
    from matplotlib.layout_engine import PlaceHolderLayoutEngine

    engine = fig.get_layout_engine()
    if engine is None or isinstance(engine, PlaceHolderLayoutEngine):  # nothing to lay out, or already settled
        return
    engine.execute(fig)
    # no engine at all (not the "none" placeholder, which still makes savefig draw once to lay out)
    fig.set_layout_engine(None)


def save_figure(fig: Figure, path: str | os.PathLike, *, overwrite: bool = False, dpi: int = DPI) -> Path:
    """Save ``fig`` to ``path`` (``.png``, ``.svg`` or ``.pdf``) atomically; refuse to overwrite silently.

    The image is rendered in memory and written with :func:`attnsym._io.atomic_write`, so a
    reader never sees a half-written file. A PNG of a default figure is
    ``FIGSIZE * dpi`` = 800 × 500 pixels.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    path : str or PathLike
        Destination; the suffix (``.png``, ``.svg`` or ``.pdf``) chooses the format.
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
        The suffix is not ``.png``, ``.svg`` or ``.pdf``.
    OverwriteError
        ``path`` exists and ``overwrite`` is False.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> fig = at.plots.attention_heatmap(np.eye(2))
    >>> save_figure(fig, folder / "eye.png").stat().st_size > 0
    True
    >>> save_figure(fig, folder / "eye.png")
    Traceback (most recent call last):
    ...
    attnsym.errors.OverwriteError: ... exists; pass overwrite=True (--force on the command line) to replace it
    """
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise SpecError(f"path must end in {', '.join('.' + f for f in FORMATS)} (got {str(path)!r})")
    refuse_existing(path, overwrite=overwrite)  # fail before spending time on rendering
    return atomic_write(path, figure_to_bytes(fig, fmt, dpi=dpi), overwrite=overwrite)

