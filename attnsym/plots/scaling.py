"""The 1/sqrt(d) scaling: score variance against d, softmax saturation (entropy, Jacobian, gradient)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._checks import non_negative_int
from ..errors import ShapeError
from ..numeric import montecarlo
from ._base import FIGSIZE, as_numpy, legend_below, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..studies.saturation import SaturationResult
    from ..studies.variance import VarianceResult

__all__ = ["entropy_figure", "saturation_entropy_figure", "saturation_gradient_figure", "saturation_jacobian_figure",
           "variance_figure", "variance_result_figure"]


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
    d = as_numpy(d, "d")
    unscaled, scaled = as_numpy(unscaled, "unscaled"), as_numpy(scaled, "scaled")
    if not (d.shape == unscaled.shape == scaled.shape) or d.ndim != 1:
        raise ShapeError(f"d, unscaled and scaled must be 1-D of equal length (got {d.shape}, {unscaled.shape}, {scaled.shape})")
    zoom = scaled_ci is not None
    fig = new_figure((11.0, 4.8) if zoom else FIGSIZE)
    axes = fig.subplots(1, 2, width_ratios=[1.3, 1]) if zoom else [fig.subplots()]
    ax = axes[0]
    for values, ci, exact, label, colour in (
        (unscaled, unscaled_ci, exact_unscaled, r"unscaled $q\cdot k$", "C3"),
        (scaled, scaled_ci, exact_scaled, r"scaled $q\cdot k/\sqrt{d}$", "C0"),
    ):
        if ci is not None:
            ax.errorbar(d, values, yerr=_error_bars(values, as_numpy(ci, "ci")), fmt="o", color=colour, capsize=3,
                        label=f"{label}: Monte Carlo, 95% CI")
        else:
            ax.plot(d, values, "o", color=colour, label=f"{label}: estimate")
        if exact is not None:
            ax.plot(d, as_numpy(exact, "exact"), "-", color=colour, alpha=0.6, label=f"{label}: exact")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("dimension d (components i.i.d., mean 0, variance 1)")
    ax.set_ylabel("variance of the score")
    ax.set_title("log–log: unscaled grows like d, scaled stays at 1")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=9)
    if zoom:
        _draw_scaled_zoom(axes[1], d, scaled, as_numpy(scaled_ci, "scaled_ci"), exact_scaled)
    fig.suptitle(r"Var$[q\cdot k] = d$; dividing by $\sqrt{d}$ brings it back to 1")
    return fig


def _error_bars(values: np.ndarray, ci: np.ndarray) -> np.ndarray:
    """Matplotlib's ``yerr`` (2, n) for estimates ``values`` and their intervals ``ci`` (n, 2): the distances below and above."""
    return np.abs(np.stack([values - ci[:, 0], ci[:, 1] - values]))


def _draw_scaled_zoom(ax, d: np.ndarray, scaled: np.ndarray, ci: np.ndarray, exact_scaled: Any) -> None:
    """The right panel of :func:`variance_figure`: the scaled variance with its intervals, on its own linear axis."""
    ax.errorbar(d, scaled, yerr=_error_bars(scaled, ci), fmt="o", color="C0", capsize=3, label="Monte Carlo, 95% CI")
    if exact_scaled is not None:
        ax.plot(d, as_numpy(exact_scaled, "exact_scaled"), "-", color="C0", alpha=0.6, label="exact")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("dimension d")
    ax.set_ylabel(r"Var$[q\cdot k/\sqrt{d}]$")
    ax.set_title("zoom on the scaled variance")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=9)


def _score_variance_data(d: Any, *, samples: int | None, seed: int, quick: bool) -> dict[str, Any]:
    """Fetch the Monte Carlo estimates behind :func:`variance_figure` from attnsym.numeric.montecarlo."""
    kwargs: dict[str, Any] = {"seed": seed}
    if d is not None:
        kwargs["d"] = [int(v) for v in np.atleast_1d(d)]
    if samples is not None:
        kwargs["samples"] = samples
    elif quick:
        kwargs["rel_error"] = 0.05  # 95 % intervals of ±5 % instead of ±2 %
    return montecarlo.score_variance(**kwargs)


def variance_result_figure(result: VarianceResult) -> Figure:
    """:func:`variance_figure` of a variance study (:func:`attnsym.studies.variance.study`): its normal-law estimates
    with 95 % intervals against the exact ``d`` and 1 — the result the claim ``variance-scaling`` judged."""
    gaussian = [s for s in result.samples if s.law == "normal"]
    dd = np.array([s.d for s in gaussian])
    un = np.array([s.variance for s in gaussian])
    ci = np.array([(s.variance - 1.96 * s.se, s.variance + 1.96 * s.se) for s in gaussian])
    return variance_figure(dd, un, un / dd, unscaled_ci=ci, scaled_ci=ci / dd[:, None],
                           exact_unscaled=dd.astype(float), exact_scaled=np.ones(len(dd)))


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
        computed by the experiment of the claim ``softmax-saturation``
        (:func:`attnsym.numeric.saturation.softmax_saturation`: fresh scores of unit-variance
        q, k components for every row and every ``d``).
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
    seed = non_negative_int("seed", seed)
    if unscaled is None or scaled is None:
        data = _entropy_data(d, n=n, seed=seed, quick=quick)
        d, unscaled, scaled = data["d"], data["unscaled"], data["scaled"]
        max_weight_unscaled, max_weight_scaled = data["max_unscaled"], data["max_scaled"]
    d = as_numpy(d, "d")
    unscaled, scaled = as_numpy(unscaled, "unscaled"), as_numpy(scaled, "scaled")
    if not (d.shape == unscaled.shape == scaled.shape) or d.ndim != 1:
        raise ShapeError(f"d, unscaled and scaled must be 1-D of equal length (got {d.shape}, {unscaled.shape}, {scaled.shape})")
    two = max_weight_unscaled is not None and max_weight_scaled is not None
    fig = new_figure((11.0, 4.6) if two else FIGSIZE)
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
        ax2.plot(d, as_numpy(max_weight_unscaled, "max_weight_unscaled"), "o-", color="C3", label="unscaled")
        ax2.plot(d, as_numpy(max_weight_scaled, "max_weight_scaled"), "s-", color="C0", label="scaled")
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
    """Mean row entropy and largest weight: the experiment of the claim softmax-saturation, not one of our own.

    :func:`attnsym.numeric.saturation.softmax_saturation` draws fresh scores for every row and
    every ``d`` (independent unit-variance q, k components), so no single weight draw shapes a curve.
    """
    # lazy: studies.saturation loads SymPy (its exact half), which importing attnsym.plots does not
    from ..studies.saturation import softmax_saturation

    dims = [int(v) for v in np.atleast_1d(d)] if d is not None else [2**k for k in range(0, 11 if not quick else 9)]
    table = softmax_saturation(np.random.default_rng(seed), dims, rows=500 if quick else 4000, n=n)
    return {"d": np.array(dims), "unscaled": np.array([r.unscaled.entropy.value for r in table]),
            "scaled": np.array([r.scaled.entropy.value for r in table]),
            "max_unscaled": np.array([r.unscaled.max_weight.value for r in table]),
            "max_scaled": np.array([r.scaled.max_weight.value for r in table])}


def saturation_entropy_figure(result: SaturationResult) -> Figure:
    """Row entropy and largest weight against ``d`` of a saturation study (:func:`attnsym.studies.saturation.study`).

    The figure of the claim ``softmax-saturation``: it draws the result the claim judged.
    """
    table = result.table
    value = lambda scoring, stat: np.array([getattr(r.of(scoring), stat).value for r in table])
    return entropy_figure(np.array([r.d for r in table]), value("unscaled", "entropy"), value("scaled", "entropy"),
                          n=result.sizes.n, max_weight_unscaled=value("unscaled", "max_weight"),
                          max_weight_scaled=value("scaled", "max_weight"))


def saturation_jacobian_figure(result: SaturationResult) -> Figure:
    """Softmax Jacobian norm and the gradient ratio reaching ``W_Q`` against ``d``, of a saturation study."""
    table, grads = result.table, result.gradients
    return saturation_gradient_figure(
        [r.d for r in table], [r.unscaled.jacobian_mean.value for r in table],
        [r.scaled.jacobian_mean.value for r in table], [g.d for g in grads],
        [g.geometric_mean_ratio.value for g in grads], [g.below_one_percent.value for g in grads],
        jacobian_median_unscaled=[r.unscaled.jacobian_median.value for r in table],
        jacobian_median_scaled=[r.scaled.jacobian_median.value for r in table])


def saturation_gradient_figure(
    d: Sequence[int],
    jacobian_unscaled: Sequence[float],
    jacobian_scaled: Sequence[float],
    d_grad: Sequence[int],
    grad_ratio_typical: Sequence[float],
    grad_dead_fraction: Sequence[float],
    *,
    jacobian_median_unscaled: Sequence[float] | None = None,
    jacobian_median_scaled: Sequence[float] | None = None,
) -> Any:
    """Softmax Jacobian norm against d (scaled vs unscaled), and the gradient reaching W_Q.

    Parameters
    ----------
    d, jacobian_unscaled, jacobian_scaled : sequences
        Mean Frobenius norm of ``diag(a) - a a^T`` per row at each ``d``.
    d_grad, grad_ratio_typical, grad_dead_fraction : sequences
        Typical (geometric-mean) ratio ``||dL/dW_Q||`` unscaled / scaled, and the fraction of
        draws where it is below 1 %, at each ``d``.
    jacobian_median_unscaled, jacobian_median_scaled : sequences, optional
        Median norms, drawn dashed.

    Examples
    --------
    >>> fig = saturation_gradient_figure([1, 4], [0.3, 0.2], [0.3, 0.3], [1, 4], [1.0, 0.9], [0.0, 0.1])
    >>> len(fig.axes)  # two panels and the right-hand axis of the second
    3
    """
    from matplotlib.figure import Figure

    dims, ju, js = (np.asarray(v, dtype=float) for v in (d, jacobian_unscaled, jacobian_scaled))
    fig = Figure(figsize=(11.0, 4.6), layout="constrained")
    ax, ax2 = fig.subplots(1, 2)
    ax.plot(dims, ju, "o-", color="C3", label="unscaled: mean")
    ax.plot(dims, js, "s-", color="C0", label="scaled by 1/√d: mean")
    if jacobian_median_unscaled is not None and jacobian_median_scaled is not None:
        ax.plot(dims, np.asarray(jacobian_median_unscaled, dtype=float), "o--", color="C3", alpha=0.6, label="unscaled: median")
        ax.plot(dims, np.asarray(jacobian_median_scaled, dtype=float), "s--", color="C0", alpha=0.6, label="scaled: median")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("dimension d")
    ax.set_ylabel(r"$\|\mathrm{diag}(a) - a a^\top\|_F$ per row")
    ax.set_title("Softmax Jacobian norm")
    legend_below(ax)
    dg = np.asarray(d_grad, dtype=float)
    ratio_line = ax2.plot(dg, np.asarray(grad_ratio_typical, dtype=float), "o-", color="C3",
                          label="ratio unscaled / scaled (geometric mean, left axis)")
    ax2.axhline(1.0, color="0.6", ls=":")
    ax2.set_xscale("log", base=2)
    ax2.set_yscale("log")
    ax2.set_xlabel("dimension d")
    ax2.set_ylabel(r"$\|\partial L/\partial W_Q\|$ unscaled / scaled")
    ax2.set_title(r"Gradient reaching $W_Q$ (one query's loss)")
    # the fraction is a proportion in [0, 1] (often exactly 0 at small d): a linear axis of its own
    ax3 = ax2.twinx()
    fraction_line = ax3.plot(dg, np.asarray(grad_dead_fraction, dtype=float), "^--", color="C2",
                             label="fraction of queries with ratio < 1 % (right axis)")
    ax3.set_ylim(-0.02, 1.02)
    ax3.set_ylabel("fraction of queries with ratio < 1 %", color="C2")
    ax3.tick_params(axis="y", colors="C2")
    lines = ratio_line + fraction_line
    legend_below(ax2, lines, ncol=1)
    dead = float(np.nanmax(np.asarray(grad_dead_fraction, dtype=float))) if len(dg) else 0.0
    fig.suptitle("Without 1/√d the softmax saturates: its Jacobian shrinks as d grows,\n"
                 f"and the gradient through it falls below 1 % for up to {dead:.0%} of queries")  # the right panel's
    return fig
