"""Figures of the theory claims from the literature (not-lipschitz, kernel-smoother, performer-unbiased,
linear-attention-rnn, mup-scaling).

Each function draws data its claim computed (:mod:`attnsym.claims.builtin.literature_theory`);
none runs an experiment of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ._base import as_numpy, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..studies.lipschitz import LipschitzResult

__all__ = ["kernel_figure", "linear_rnn_figure", "lipschitz_figure", "lipschitz_result_figure", "mup_figure",
           "performer_figure"]


def lipschitz_result_figure(result: LipschitzResult) -> Figure:
    """:func:`lipschitz_figure` of a Lipschitz study (:func:`attnsym.studies.lipschitz.study`): the result the claim judged."""
    return lipschitz_figure(result.sizes.ts, result.exact_entry, result.numeric_entry, result.sizes.radii,
                            result.largest, result.median)


def lipschitz_figure(t: Sequence[float], exact: Sequence[float], numeric: Sequence[float], radii: Sequence[float],
                     largest: Sequence[float], median: Sequence[float]) -> Figure:
    """Left: the witness entry ``∂f₁/∂x₁`` against ``t`` (exact, numeric); right: ``‖J‖₂`` found in balls of radius r."""
    fig = new_figure((9.0, 3.6))
    left, right = fig.subplots(1, 2)
    x = as_numpy(t, "t")
    left.plot(x, as_numpy(exact, "exact"), lw=2, label="exact (symbolic layer)")
    left.plot(x, as_numpy(numeric, "numeric"), "o", ms=4, label="numeric layer")
    left.set_xlabel("t (tokens x₁ = 0, x₂ = t)")
    left.set_ylabel("∂f₁/∂x₁")
    left.set_title("Witness: a Jacobian entry grows like t²")
    left.legend(fontsize=8, loc="upper left")
    r = as_numpy(radii, "radii")
    right.loglog(r, as_numpy(largest, "largest"), "o-", lw=1.8, label="largest ‖J‖₂ found")
    right.loglog(r, as_numpy(median, "median"), "s--", lw=1.2, label="median ‖J‖₂")
    right.loglog(r, r**2 * as_numpy(largest, "largest")[-1] / r[-1] ** 2, color="grey", ls=":", lw=1, label="∝ r²")
    from matplotlib.ticker import NullLocator

    right.xaxis.set_minor_locator(NullLocator())
    right.set_xticks(r, [f"{v:g}" for v in r])
    right.set_xlabel("input radius r (Frobenius norm of X)")
    right.set_ylabel("Jacobian norm")
    right.set_title("Local Lipschitz constant grows with r")
    right.legend(fontsize=8, loc="upper left")
    return fig


def kernel_figure(tied: Sequence[Sequence[float]], untied: Sequence[Sequence[float]]) -> Figure:
    """The kernel matrices ``k(x_i, x_j)`` for ``W_K = W_Q`` (symmetric) and for independent weights (not)."""
    fig = new_figure((9.0, 3.8))
    axes = fig.subplots(1, 2)
    for ax, matrix, title in zip(axes, (tied, untied), ("W_K = W_Q: k symmetric", "W_K ≠ W_Q: k not symmetric"),
                                 strict=True):
        image = ax.imshow(as_numpy(matrix, "kernel"), cmap="viridis")
        ax.set_title(title)
        ax.set_xlabel("key j")
        ax.set_ylabel("query i")
        fig.colorbar(image, ax=ax, shrink=0.8, label="k(x_i, x_j)")
    return fig


def performer_figure(features: Sequence[int], exact_mse: Sequence[float], mc_mse: Sequence[float],
                     mc_half_width: Sequence[float], bias: Sequence[float], bias_half_width: Sequence[float]) -> Figure:
    """Left: the MSE of FAVOR+'s estimate of ``exp(xᵀy)`` against m (exact, Monte Carlo); right: the normalised output's bias."""
    fig = new_figure((9.0, 3.6))
    left, right = fig.subplots(1, 2)
    m = as_numpy(features, "features")
    left.loglog(m, as_numpy(exact_mse, "exact_mse"), lw=2, label="exact (Lemma 2)")
    left.errorbar(m, as_numpy(mc_mse, "mc_mse"), yerr=as_numpy(mc_half_width, "mc_half_width"), fmt="o", ms=4,
                  capsize=3, label="Monte Carlo, CI")
    left.set_xlabel("random features m")
    left.set_ylabel("MSE of the estimate of exp(xᵀy)")
    left.set_title("Unbiased, MSE ∝ 1/m")
    left.legend(fontsize=8, loc="lower left")
    right.errorbar(m, as_numpy(bias, "bias"), yerr=as_numpy(bias_half_width, "bias_half_width"), fmt="o-", ms=4,
                   capsize=3)
    right.axhline(0, color="grey", ls=":", lw=1)
    right.set_xscale("log")
    right.set_xlabel("random features m")
    right.set_ylabel("E[output] − softmax output")
    right.set_title("The row-normalised output is biased")
    from matplotlib.ticker import NullLocator

    for ax in (left, right):
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(m, [f"{v:g}" for v in m])
    return fig


def linear_rnn_figure(weights: Sequence[Sequence[float]], parallel: Sequence[float], recurrent: Sequence[float]) -> Figure:
    """Left: the causal linear-attention weights; right: one output coordinate, parallel (line) and recurrent (marks)."""
    fig = new_figure((9.0, 3.6))
    left, right = fig.subplots(1, 2)
    image = left.imshow(as_numpy(weights, "weights"), cmap="viridis")
    fig.colorbar(image, ax=left, shrink=0.8, label="weight")
    left.set_xlabel("key j")
    left.set_ylabel("query i")
    left.set_title("Causal linear attention")
    p = as_numpy(parallel, "parallel")
    positions = range(1, p.size + 1)
    right.plot(positions, p, lw=2, label="parallel (masked) form")
    right.plot(positions, as_numpy(recurrent, "recurrent"), "o", ms=3, label="recurrent form (state S_i, z_i)")
    right.set_xlabel("position i")
    right.set_ylabel("output, coordinate 1")
    right.set_title("The two forms agree")
    right.legend(fontsize=8, loc="best")
    return fig


def mup_figure(d: Sequence[int], curves: Mapping[str, tuple[Sequence[float], Sequence[float]]],
               sampled: Mapping[str, tuple[Sequence[float], Sequence[float]]], *, rho: float) -> Figure:
    """Mean ± one standard deviation of the logit against d, for 1/√d and 1/d scaling (exact bands, sampled marks)."""
    fig = new_figure()
    ax = fig.subplots()
    x = as_numpy(d, "d")
    for (label, (mean, std)), color in zip(curves.items(), ("tab:blue", "tab:orange"), strict=False):
        mu, sd = as_numpy(mean, label), as_numpy(std, label)
        ax.plot(x, mu, lw=2, color=color, label=f"{label}: exact mean")
        ax.fill_between(x, mu - sd, mu + sd, color=color, alpha=0.2)
    for (label, (dims, means)), color in zip(sampled.items(), ("tab:blue", "tab:orange"), strict=False):
        ax.plot(as_numpy(dims, label), as_numpy(means, label), "o", ms=5, color=color, label=f"{label}: sampled mean")
    ax.set_xscale("log")
    ax.set_xlabel("head width d")
    ax.set_ylabel(f"logit (mean ± std), ρ = {rho:g}")
    ax.set_title("Correlated q, k: 1/√d logits grow like ρ√d, 1/d keeps them Θ(1)")
    ax.legend(fontsize=8, loc="upper left")
    return fig
