"""Cost and depth: Table 1 as growth curves, memory of the plain and blockwise paths, K/V-cache decoding."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ShapeError
from ._base import as_numpy, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["decode_cost_figure", "memory_growth_figure", "path_length_figure"]


def path_length_figure(
    ns: Any = None,
    path_lengths: Mapping[str, Sequence[float]] | None = None,
    depths: Mapping[str, Sequence[float]] | None = None,
    *,
    panels: Sequence[str] = ("path", "depth"),
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
    panels : sequence of {"path", "depth"}, default both
        Which columns of Table 1 to draw: ``("path",)`` for the claim global-path-length,
        ``("depth",)`` for parallelism.

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
    ns = as_numpy(ns, "ns")
    panels = tuple(panels)
    if not panels or any(p not in ("path", "depth") for p in panels) or len(set(panels)) != len(panels):
        raise ShapeError(f"panels must be 'path', 'depth' or both, each once (got {panels!r})")
    columns = {
        "path": (path_lengths, "maximum path length (edges)", "Maximum path length between positions"),
        "depth": (depths, "sequential operations (DAG depth)", "Sequential operations"),
    }
    fig = new_figure((11.0, 4.6) if len(panels) == 2 else (6.5, 4.6))
    axes = np.atleast_1d(fig.subplots(1, len(panels), sharex=True))
    markers = "osD^vx*"
    for ax, (table, ylabel, title) in zip(axes, (columns[p] for p in panels), strict=True):
        same: dict[tuple, list[str]] = {}
        every = max(1, len(ns) // 12)  # at most about a dozen markers per line
        for k, (arch, values) in enumerate(table.items()):
            values = as_numpy(values, f"{arch} values")
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
    titles: dict[tuple[str, ...], str] = {("path",): "maximum path length", ("depth",): "sequential operations"}
    what = titles.get(panels, "both columns")
    fig.suptitle(f"Table 1 of Vaswani et al. (2017), {what}, from graphs" + ("" if len(panels) == 1 else
                 ": self-attention is O(1) in both"))
    return fig


def _table1_data(ns: Any) -> dict[str, Any]:
    """Path lengths and depths of Table 1 from the computation graphs of :mod:`attnsym.graphs`."""
    # lazy: attnsym.graphs loads networkx (+0.26 s CPU measured), paid only when this figure fetches its data
    from .. import graphs

    ns = [int(v) for v in np.atleast_1d(ns)] if ns is not None else [2, 4, 8, 16, 32, 64]
    archs = graphs.ARCHITECTURES
    path_lengths = {arch: [graphs.max_path_length(arch, n) for n in ns] for arch in archs}
    depths = {arch: [graphs.sequential_depth(arch, n) for n in ns] for arch in archs}
    return {"n": np.array(ns), "path_lengths": path_lengths, "depths": depths}


def memory_growth_figure(ns: Sequence[int], plain_bytes: Sequence[float], blockwise_bytes: Sequence[float],
                         plain_seconds: Sequence[float] | None = None, blockwise_seconds: Sequence[float] | None = None):
    """Peak memory (and optionally time) of the plain and blockwise attention paths against ``n``, log–log.

    The reference line is one ``n × n`` float64 map (``8 n²`` bytes).

    Examples
    --------
    >>> fig = memory_growth_figure([128, 256], [4e5, 1.6e6], [2e5, 3e5], [1e-3, 4e-3], [1e-3, 3e-3])
    >>> len(fig.axes)
    2
    """
    from matplotlib.figure import Figure

    sizes = np.asarray(ns, dtype=float)
    with_time = plain_seconds is not None and blockwise_seconds is not None
    fig = Figure(figsize=(11.0 if with_time else 6.0, 4.4), layout="constrained")
    axes = fig.subplots(1, 2 if with_time else 1, squeeze=False)[0]
    ax = axes[0]
    plain = np.asarray(plain_bytes, float) / 2**20
    lean = np.asarray(blockwise_bytes, float) / 2**20
    ax.loglog(sizes, plain, "o-", color="C3", label=f"plain (stores A): ∝ n^{_slope(sizes, plain):.1f}")
    ax.loglog(sizes, lean, "s-", color="C0", label=f"blockwise (online softmax): ∝ n^{_slope(sizes, lean):.1f}")
    ax.loglog(sizes, 8 * sizes**2 / 2**20, ":", color="grey", label="one n×n float64 map: ∝ n²")
    _plain_log_ticks(ax, sizes)
    ax.set_xlabel(f"sequence length n ({len(sizes)} sizes measured)")
    ax.set_ylabel("peak traced memory (MiB)")
    ax.set_title("Memory of one attention call")
    ax.legend(fontsize=9, loc="upper left")
    if with_time:
        ax2 = axes[1]
        ax2.loglog(sizes, plain_seconds, "o-", color="C3", label="plain")
        ax2.loglog(sizes, blockwise_seconds, "s-", color="C0", label="blockwise")
        t0 = float(np.asarray(plain_seconds, float)[-1])
        ax2.loglog(sizes, t0 * (sizes / sizes[-1]) ** 2, ":", color="grey", label="∝ n²")
        _plain_log_ticks(ax2, sizes)
        ax2.set_xlabel("sequence length n")
        ax2.set_ylabel("median wall time (s)")
        ax2.set_title("Time (reported, not judged)")
        ax2.legend(fontsize=9)
    return fig


def _slope(ns, values) -> float:
    """The exponent of a power law through the points, by least squares on log–log axes."""
    return float(np.polyfit(np.log(ns), np.log(np.asarray(values, float)), 1)[0])


def _plain_log_ticks(ax, ns) -> None:
    """Tick the x axis at the measured sizes; label the y axis at 1, 2, 5 × 10^k, plainly (no 10^k notation)."""
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    ax.set_xticks(ns, [str(int(v)) for v in ns])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_locator(LogLocator(base=10, subs=[float(k) for k in range(2, 10)]))
    ax.yaxis.set_minor_formatter(NullFormatter())


def decode_cost_figure(t: Sequence[int], mul_cached: Sequence[int], mul_recompute: Sequence[int]):
    """Multiplications per generated token with and without a K/V cache.

    Examples
    --------
    >>> fig = decode_cost_figure([1, 2, 3], [16, 20, 24], [16, 40, 72])
    >>> fig.axes[0].get_xlabel()
    'token t'
    """
    from matplotlib.figure import Figure

    tokens = np.asarray(t, dtype=float)
    cached, recompute = np.asarray(mul_cached, dtype=float), np.asarray(mul_recompute, dtype=float)
    fig = Figure(figsize=(10.0, 4.2), layout="constrained")
    ax_lin, ax_log = fig.subplots(1, 2)
    for ax in (ax_lin, ax_log):
        ax.plot(tokens, recompute, "o-", color="C3", label="recompute the prefix (∝ t²)")
        ax.plot(tokens, cached, "s-", color="C0", label="K/V cache (∝ t)")
        ax.set_xlabel("token t")
        ax.grid(True, alpha=0.3)
    ax_lin.set_ylabel("multiplications in this step")
    ax_lin.set_title("linear axis: the cached cost looks flat beside t²")
    ax_lin.legend(fontsize=9, loc="upper left")
    ax_log.set_yscale("log")
    ax_log.set_title("log axis: the cached cost grows too, linearly in t")
    ax_log.annotate(f"at t = {tokens[-1]:g}: {recompute[-1] / cached[-1]:.1f}× fewer with the cache",
                    (0.98, 0.04), xycoords="axes fraction", ha="right", va="bottom", fontsize=9)
    fig.suptitle("Cost of generating token t, with and without a K/V cache")
    return fig
