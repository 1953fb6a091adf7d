"""Figures for the cost and routing claims (``quadratic-cost``, ``kv-cache``, ``two-token-example``).

Each function takes the data a check computed and returns a :class:`matplotlib.figure.Figure`;
matplotlib is imported inside the functions, so importing this module stays light.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["decode_cost_figure", "memory_growth_figure", "two_token_figure"]


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

    ns = np.asarray(ns, dtype=float)
    with_time = plain_seconds is not None and blockwise_seconds is not None
    fig = Figure(figsize=(11.0 if with_time else 6.0, 4.4), layout="constrained")
    axes = fig.subplots(1, 2 if with_time else 1)
    ax = axes[0] if with_time else axes
    ax.loglog(ns, np.asarray(plain_bytes, float) / 2**20, "o-", color="C3", label="plain (stores A)")
    ax.loglog(ns, np.asarray(blockwise_bytes, float) / 2**20, "s-", color="C0", label="blockwise (online softmax)")
    ax.loglog(ns, 8 * ns**2 / 2**20, ":", color="grey", label="one n×n float64 map")
    _plain_log_ticks(ax, ns)
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("peak traced memory (MiB)")
    ax.set_title("Memory of one attention call")
    ax.legend(fontsize=9)
    if with_time:
        ax2 = axes[1]
        ax2.loglog(ns, plain_seconds, "o-", color="C3", label="plain")
        ax2.loglog(ns, blockwise_seconds, "s-", color="C0", label="blockwise")
        t0 = float(np.asarray(plain_seconds, float)[-1])
        ax2.loglog(ns, t0 * (ns / ns[-1]) ** 2, ":", color="grey", label="∝ n²")
        _plain_log_ticks(ax2, ns)
        ax2.set_xlabel("sequence length n")
        ax2.set_ylabel("median wall time (s)")
        ax2.set_title("Time (reported, not judged)")
        ax2.legend(fontsize=9)
    return fig


def _plain_log_ticks(ax, ns) -> None:
    """Tick the x axis at the measured sizes and print numbers plainly (no 10^k notation)."""
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    ax.set_xticks(ns, [str(int(v)) for v in ns])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))


def decode_cost_figure(t: Sequence[int], mul_cached: Sequence[int], mul_recompute: Sequence[int]):
    """Multiplications per generated token with and without a K/V cache.

    Examples
    --------
    >>> fig = decode_cost_figure([1, 2, 3], [16, 20, 24], [16, 40, 72])
    >>> fig.axes[0].get_xlabel()
    'token t'
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 4.4), layout="constrained")
    ax = fig.subplots()
    ax.plot(t, mul_recompute, "o-", color="C3", label="recompute the prefix (∝ t²)")
    ax.plot(t, mul_cached, "s-", color="C0", label="K/V cache (∝ t)")
    ax.set_xlabel("token t")
    ax.set_ylabel("multiplications in this step")
    ax.set_title("Cost of generating token t")
    ax.legend(fontsize=9)
    return fig


def two_token_figure(routings: Sequence[Sequence[float]], static: Sequence[float]):
    """Token 1's mixing weights for each input: attention (computed) against a static mixer (fixed).

    Examples
    --------
    >>> fig = two_token_figure([[0.1, 0.9], [0.95, 0.05]], [0.7, 0.3])
    >>> len(fig.axes)
    2
    """
    from matplotlib.figure import Figure

    routings = np.asarray(routings, dtype=float)
    fig = Figure(figsize=(9.0, 3.8), layout="constrained")
    ax_att, ax_mlp = fig.subplots(1, 2, sharey=True)
    x = np.arange(2)
    width = 0.8 / len(routings)
    for k, row in enumerate(routings):
        ax_att.bar(x + k * width, row, width, label=f"input {k + 1}")
        ax_mlp.bar(x + k * width, static, width, label=f"input {k + 1}")
    for ax, title in ((ax_att, "attention: weights computed from the input"),
                      (ax_mlp, "static mixer: the same weights for every input")):
        ax.set_xticks(x + width * (len(routings) - 1) / 2, ["token 1", "token 2"])
        ax.set_ylim(0, 1)
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=9)
    ax_att.set_ylabel("weight of each token in output 1")
    return fig
