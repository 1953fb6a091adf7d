"""The figures of an audit's report: sink rate per layer, entropy against length beside its bounds.

The data is an :class:`~attnsym.audits.summary.AuditSummary`; this module only draws it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..symbolic.softmax_limits import entropy_lower_bound
from ._base import new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["ZHAI_SIGMAS", "entropy_length_figure", "sink_rate_figure"]

#: the logit norms σ whose Zhai bound is drawn beside the measured entropies
ZHAI_SIGMAS = (2.0, 5.0, 10.0)


def sink_rate_figure(summary: Any) -> Figure:
    """Sink rate per layer (from 0) with its 95 % interval as error bars."""
    fig = new_figure((6.0, 3.4))
    ax = fig.add_subplot()
    q = np.arange(summary.layers)
    rate = summary.sink_rate
    below = np.clip(np.nan_to_num(rate - summary.sink_low), 0.0, None)  # rounding: the interval may not quite reach 0
    above = np.clip(np.nan_to_num(summary.sink_high - rate), 0.0, None)
    ax.errorbar(q, rate, yerr=[below, above], fmt="o", capsize=3)
    ax.set_xlabel("layer (from 0)")
    ax.set_ylabel("share of heads that sink")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"{summary.model}: first-token sinks over {summary.texts} texts")
    return fig


def entropy_length_figure(summary: Any) -> Figure:
    """Mean row entropy per text and layer against ln n, with ln n and Zhai's bound for :data:`ZHAI_SIGMAS`."""
    fig = new_figure((6.0, 4.0))
    ax = fig.add_subplot()
    for q in range(summary.layers):
        ax.scatter(summary.log_n, summary.entropy[:, q], s=8, alpha=0.6, label=f"layer {q}" if summary.layers <= 12
                   else None)
    top = max(float(np.max(summary.log_n)) if summary.log_n.size else 1.0, 1.0)
    x = np.linspace(np.log(2), top, 40)
    ax.plot(x, x, color="black", lw=1, label="ln n (uniform)")
    for sigma in ZHAI_SIGMAS:
        y = [float(entropy_lower_bound(sigma, round(np.exp(v)))) for v in x]
        ax.plot(x, y, ls="--", lw=1, label=f"Zhai bound, σ = {sigma:g}")
    ax.set_xlabel("ln n (tokens)")
    ax.set_ylabel("mean row entropy (nats)")
    ax.legend(fontsize=7, ncol=2)
    return fig
