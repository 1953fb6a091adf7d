"""The training run of the claim ``softmax-saturation``: held-out loss against SGD steps, scaled vs unscaled."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ShapeError
from ..studies.intervals import t_interval
from ._base import as_numpy, legend_below, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..studies.training import TrainingRun

__all__ = ["training_figure", "training_run_figure"]

_ARM_NAMES = (("sqrt", "scaled"), ("none", "unscaled"))


def training_run_figure(run: TrainingRun, *, title: str | None = None) -> Figure:
    """The loss curves of a training run (:func:`attnsym.studies.training.train_retrieval`), each arm at its best rate.

    One panel per ``d`` (mean and 95 % t-band over seeds at every checkpoint), and the final loss
    against the learning rate at the largest ``d``: the figure of the claim ``softmax-saturation``,
    drawn from the result the claim judged.
    """
    panels = []
    for j, at in enumerate(run.per_d):
        panel: dict[str, Any] = {"d": at.d}
        for arm, key in _ARM_NAMES:
            curves = run.best_curve(arm, j)  # (seeds, checkpoints)
            bands = np.array([tuple(t_interval(curves[:, k])) for k in range(curves.shape[1])])
            panel[key] = {"rate": at.best_rate[arm], "mean": bands[:, 0], "lo": bands[:, 1], "hi": bands[:, 2]}
        panels.append(panel)
    last = run.per_d[-1]
    sweep: dict[str, Any] = {"d": last.d, "rates": list(run.learning_rates)}
    for arm, key in _ARM_NAMES:
        sweep[key] = {"mean": [r.loss.value for r in last.final[arm]], "lo": [r.loss.lo for r in last.final[arm]],
                      "hi": [r.loss.hi for r in last.final[arm]]}
    return training_figure(list(run.steps), panels, sweep=sweep, title=title)


def training_figure(steps: Any, curves: Sequence[dict[str, Any]], *, sweep: dict[str, Any] | None = None,
                    title: str | None = None) -> Figure:
    """Held-out loss after each checkpoint step, one panel per ``d``, each arm at its best learning rate.

    Parameters
    ----------
    steps : array-like of int, shape (k,)
        The checkpoint steps.
    curves : sequence of dict
        One per panel: ``"d"``, and for each arm (``"scaled"``, ``"unscaled"``) a dict with
        ``"rate"`` (the learning rate drawn), ``"mean"`` (k,) and ``"lo"``, ``"hi"`` (k,), the
        95 % interval over seeds, drawn as a band (:func:`attnsym.studies.training.train_retrieval`
        computes them; the claim's check passes them).
    sweep : dict, optional
        A last panel: the final loss against the learning rate, ``"d"``, ``"rates"`` (r,) and per
        arm ``"mean"``, ``"lo"``, ``"hi"`` (r,) — why each arm is drawn at its own rate.
    title : str, optional
        The figure's title.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> arm = lambda m: {"rate": 1.0, "mean": np.array(m), "lo": np.array(m) - 0.1, "hi": np.array(m) + 0.1}
    >>> fig = training_figure([0, 10], [{"d": 256, "scaled": arm([1.0, 0.2]), "unscaled": arm([1.5, 1.0])}])
    >>> fig.axes[0].get_title()
    'd = 256'
    >>> sweep = {"d": 256, "rates": [0.1, 1.0], "scaled": arm([0.5, 0.2]), "unscaled": arm([0.3, 0.9])}
    >>> len(training_figure([0, 10], [{"d": 256, "scaled": arm([1.0, 0.2]), "unscaled": arm([1.5, 1.0])}],
    ...                     sweep=sweep).axes)
    2
    """
    steps = as_numpy(steps, "steps")
    if steps.ndim != 1 or not curves:
        raise ShapeError(f"steps must be 1-D and curves non-empty (got steps of shape {steps.shape}, {len(curves)} curves)")
    panels = len(curves) + (sweep is not None)
    fig = new_figure((4.2 * panels + 1.0, 4.4))
    axes = np.atleast_1d(fig.subplots(1, panels, sharey=True))
    for ax, panel in zip(axes, curves, strict=False):
        for arm, colour, marker in (("unscaled", "C3", "o"), ("scaled", "C0", "s")):
            run = panel[arm]
            mean = as_numpy(run["mean"], f"{arm} mean")
            lo, hi = as_numpy(run["lo"], f"{arm} lo"), as_numpy(run["hi"], f"{arm} hi")
            if not (mean.shape == lo.shape == hi.shape == steps.shape):
                raise ShapeError(f"the {arm} curve must have one value per step (got {mean.shape} for {steps.shape})")
            label = (r"unscaled $QK^\top$" if arm == "unscaled" else r"scaled $QK^\top/\sqrt{d}$") + f", lr {run['rate']:g}"
            ax.plot(steps, mean, marker + "-", color=colour, ms=4, label=label)
            ax.fill_between(steps, lo, hi, color=colour, alpha=0.2, lw=0)
        ax.set_xlabel("SGD step")
        ax.set_title(f"d = {panel['d']}")
        ax.set_ylim(bottom=0)
        legend_below(ax, ncol=1)
    if sweep is not None:
        ax = axes[-1]
        rates = as_numpy(sweep["rates"], "sweep rates")
        for arm, colour, marker in (("unscaled", "C3", "o"), ("scaled", "C0", "s")):
            mean = as_numpy(sweep[arm]["mean"], f"sweep {arm} mean")
            lo, hi = as_numpy(sweep[arm]["lo"], f"sweep {arm} lo"), as_numpy(sweep[arm]["hi"], f"sweep {arm} hi")
            if not (mean.shape == lo.shape == hi.shape == rates.shape):
                raise ShapeError(f"the {arm} sweep must have one value per rate (got {mean.shape} for {rates.shape})")
            ax.errorbar(rates, mean, yerr=[mean - lo, hi - mean], fmt=marker + "-", color=colour, ms=4, capsize=3,
                        label="unscaled" if arm == "unscaled" else "scaled")
        ax.set_xscale("log")
        ax.set_xlabel("learning rate")
        ax.set_title(f"d = {sweep['d']}: loss after the run, every rate")
        ax.set_ylim(bottom=0)
        legend_below(ax, ncol=2)
    axes[0].set_ylabel("held-out loss (mean, 95% interval over seeds)")
    fig.suptitle(title or "Retrieval task, one attention layer: each arm at its best learning rate")
    return fig
