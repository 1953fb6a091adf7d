"""Figures of the third-round literature claims (soft-capping, …).

Each function draws data its claim computed (:mod:`attnsym.claims.builtin.literature`); none runs
an experiment of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ._base import as_numpy, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["length_scaling_figure", "sink_figure", "softcap_figure"]


def softcap_figure(logits: Sequence[float], capped: Sequence[float], gap: Sequence[float], bound: Sequence[float], *,
                   cap: float) -> Figure:
    """Left: ``c·tanh(ℓ/c)`` against ``ℓ`` with the asymptotes ``±c``; right: ``|ℓ − c·tanh(ℓ/c)|`` and ``|ℓ|³/(3c²)``."""
    fig = new_figure((9.0, 3.6))
    left, right = fig.subplots(1, 2)
    x = as_numpy(logits, "logits")
    left.plot(x, x, color="grey", ls=":", lw=1, label="ℓ (no cap)")
    left.plot(x, as_numpy(capped, "capped"), lw=2, label=f"c·tanh(ℓ/c), c = {cap:g}")
    for y in (-cap, cap):
        left.axhline(y, color="tab:red", ls="--", lw=1)
    left.set_ylim(-1.6 * cap, 1.6 * cap)
    left.set_xlabel("logit ℓ")
    left.set_ylabel("capped logit")
    left.set_title("Soft-capping stays in (−c, c), keeps the order")
    left.legend(fontsize=8, loc="upper left")
    positive = x > 0
    right.loglog(x[positive], as_numpy(gap, "gap")[positive], lw=2, label="|ℓ − c·tanh(ℓ/c)|")
    right.loglog(x[positive], as_numpy(bound, "bound")[positive], ls="--", lw=1.5, label="|ℓ|³/(3c²)")
    right.set_xlabel("logit ℓ")
    right.set_title("Its error is at most |ℓ|³/(3c²)")
    right.legend(fontsize=8, loc="upper left")
    return fig


def sink_figure(gap: Sequence[float], mass: Sequence[float], *, lengths: Sequence[int]) -> Figure:
    """The sink's weight ``σ(s − lse(x))`` against ``s − lse(x)``, and for zero logits over ``n`` keys against ``s``."""
    import numpy as np

    fig = new_figure((9.0, 3.6))
    left, right = fig.subplots(1, 2)
    g = as_numpy(gap, "gap")
    left.plot(g, as_numpy(mass, "mass"), lw=2)
    left.axvline(0, color="grey", ls=":", lw=1)
    left.set_xlabel("s − lse(x)")
    left.set_ylabel("sink weight")
    left.set_title("Sink weight σ(s − lse(x))")
    for n in lengths:
        right.plot(g, 1 / (1 + n * np.exp(-g)), label=f"n = {n} zero logits")
    right.set_xlabel("sink logit s (softmax₁: s = 0)")
    right.set_title("More keys take mass from the sink")
    right.legend(fontsize=8, loc="upper left")
    return fig


def length_scaling_figure(n: Sequence[int], curves: Mapping[str, Sequence[float]]) -> Figure:
    """The top weight against the number of keys, plain and with s·log n scaling for several sΔ."""
    fig = new_figure()
    ax = fig.subplots()
    x = as_numpy(n, "n")
    for label, ys in curves.items():
        ax.plot(x, as_numpy(ys, label), lw=1.8, label=label)
    ax.axhline(0.5, color="grey", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("number of keys n")
    ax.set_ylabel("top attention weight")
    ax.set_title("s·log n scaling: the top weight tends to 1, 1/2 or 0 as sΔ >, =, < 1")
    ax.legend(fontsize=8, loc="lower left")
    return fig
