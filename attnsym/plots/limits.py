"""Figures of the limits of attention: dispersion, the entropy bound, the Jacobian norm, rank collapse,
the key bias and equal tokens.

Each function draws data its claim computed (:mod:`attnsym.claims.builtin.softmax_limits`,
:mod:`~attnsym.claims.builtin.rank_collapse`, :mod:`~attnsym.claims.builtin.invariances`); none runs
an experiment of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..numeric.invariances import BiasSlices, EqualTokenGradients, bias_loss_slices, gradients_near_equal_tokens
from ..spec import AttentionSpec
from ._base import as_numpy, legend_below, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "bias_slices_figure",
    "dispersion_figure",
    "entropy_bound_figure",
    "equal_tokens_figure",
    "jacobian_norm_figure",
    "rank_collapse_figure",
]

#: the layers the two gradient figures use when no experiment is passed (those of their claims)
BIAS_SPEC = AttentionSpec(n=6, d_model=4, heads=2, bias=True)
EQUAL_TOKENS_SPEC = AttentionSpec(n=8, d_model=4, heads=2)
_BIAS_STYLE = {"b_K": ("tab:red", 2.6, "-"), "b_Q": ("tab:blue", 1.5, "-"), "b_V": ("tab:green", 1.2, "--"),
               "b_O": ("tab:grey", 1.2, ":")}


def dispersion_figure(n: Sequence[int], curves: Mapping[float, Sequence[float]], example_n: Sequence[int],
                      example_weight: Sequence[float], *, gap: float) -> Figure:
    """Top softmax weight against the number of keys ``n`` (log axis), one curve per logit gap Δ.

    >>> import numpy as np
    >>> n = np.array([1, 10, 100])
    >>> fig = dispersion_figure(n, {5.0: [1.0, 0.94, 0.6]}, [10], [0.94], gap=5.0)
    >>> fig.axes[0].get_xscale()
    'log'
    """
    fig = new_figure()
    ax = fig.subplots()
    x = as_numpy(n, "n")
    for g, ys in curves.items():
        ax.plot(x, as_numpy(ys, "curve"), lw=2 if g == gap else 1.2, label=f"Δ = {g:g}: 1/(1 + (n−1)e^(−Δ))")
    ax.plot(as_numpy(example_n, "example_n"), as_numpy(example_weight, "example_weight"), "ko", ms=6,
            label=f"the claim's example (Δ = {gap:g})")
    for m, w in zip(example_n, example_weight, strict=True):
        ax.annotate(f"{w:.3g}", (m, w), textcoords="offset points", xytext=(6, 6), fontsize=9)
    ax.axhline(0.5, color="grey", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("number of keys n")
    ax.set_ylabel("largest attention weight")
    ax.set_title("Dispersion: a fixed logit gap stops being sharp as n grows")
    ax.legend(fontsize=8, loc="upper right")
    return fig


def entropy_bound_figure(sigma: Sequence[float], bound: Sequence[float], draws: Mapping[float, np.ndarray], *,
                         n_keys: int) -> Figure:
    """Entropy of softmax against the logit norm σ: the lower bound of Zhai et al. and random logits on the sphere.

    >>> import numpy as np
    >>> fig = entropy_bound_figure([0, 1], [1.38, 1.2], {1.0: np.array([1.3, 1.35])}, n_keys=4)
    >>> fig.axes[0].get_ylabel()
    'entropy (nats)'
    """
    fig = new_figure()
    ax = fig.subplots()
    for k, (s, H) in enumerate(draws.items()):
        H = as_numpy(H, "draws")
        ax.plot(np.full(H.shape, s), H, ".", color="tab:blue", alpha=0.15, ms=3,
                label="random logits with ‖z‖₂ = σ" if k == 0 else None)
    ax.plot(as_numpy(sigma, "sigma"), as_numpy(bound, "bound"), color="tab:red", lw=2,
            label="lower bound (Zhai et al. 2023, Thm 3.1), reached by one logit vs the rest")
    ax.axhline(np.log(n_keys), color="grey", ls=":", lw=1, label=f"log T (uniform), T = {n_keys}")
    ax.set_xlabel("logit norm σ")
    ax.set_ylabel("entropy (nats)")
    ax.set_title("Attention entropy collapses as the logit norm grows")
    legend_below(ax, ncol=1, fontsize=8)
    return fig


def jacobian_norm_figure(max_weight: Sequence[float], norm: Sequence[float], *, bound: float = 0.5) -> Figure:
    """Spectral norm of ``diag(a) − a aᵀ`` against the largest weight of ``a``, with the bound and the two-point curve.

    >>> fig = jacobian_norm_figure([0.5, 0.9], [0.5, 0.18])
    >>> fig.axes[0].get_xlabel()
    'largest weight max_i a_i'
    """
    fig = new_figure()
    ax = fig.subplots()
    ax.plot(as_numpy(max_weight, "max_weight"), as_numpy(norm, "norm"), ".", ms=3, alpha=0.4,
            label="random a (3 keys, Dirichlet)")
    p = np.linspace(0.5, 1.0, 101)
    ax.plot(p, 2 * p * (1 - p), color="tab:red", lw=2, label="two keys (p, 1 − p): 2p(1 − p)")
    ax.axhline(bound, color="k", ls="--", lw=1, label=f"bound {bound:g}")
    ax.set_xlabel("largest weight max_i a_i")
    ax.set_ylabel("‖diag(a) − a aᵀ‖₂")
    ax.set_ylim(0, 0.55)
    ax.set_title("The softmax Jacobian's norm is at most 1/2, reached at (1/2, 1/2)")
    ax.legend(fontsize=8)
    return fig


def rank_collapse_figure(curves: Mapping[str, np.ndarray], *, floor: float = 1e-17) -> Figure:
    """Relative residual ``‖res(X_l)‖/‖X_l‖`` (log axis) against depth: median and 95% range over seeds, per stack.

    ``curves[name]`` is ``(seeds, depth + 1)``; residuals below ``floor`` (exact 0 in float64) are drawn at ``floor``.

    >>> import numpy as np
    >>> fig = rank_collapse_figure({"attention": np.array([[1.0, 0.1, 1e-4], [0.9, 0.2, 1e-5]])})
    >>> fig.axes[0].get_yscale()
    'log'
    """
    fig = new_figure()
    ax = fig.subplots()
    for name, R in curves.items():
        R = np.maximum(as_numpy(R, name), floor)
        layers = np.arange(R.shape[1])
        lo, mid, hi = np.quantile(R, [0.025, 0.5, 0.975], axis=0)
        (line,) = ax.plot(layers, mid, "o-", label=f"{name} (median over {R.shape[0]} seeds)")
        ax.fill_between(layers, lo, hi, color=line.get_color(), alpha=0.2)
    ax.set_yscale("log")
    ax.set_xlabel("layer l")
    ax.set_ylabel("relative residual ‖X − 1xᵀ‖₁,∞ / ‖X‖₁,∞")
    ax.set_title("Rank collapse: without skips the residual vanishes doubly exponentially\n"
                 f"(an exact 0 is drawn at {floor:g})")
    ax.legend(fontsize=8, loc="lower left")
    return fig


def bias_slices_figure(slices: BiasSlices | None = None, *, seed: int = 0, floor: float = 1e-17) -> Figure:
    """The loss along a line through each bias: flat for the key bias, curved for the others.

    Left: ``L(b + t u) − L(b)`` against ``t`` for every bias of the layer; right: its absolute
    value on a log axis (the key bias's stays at rounding level; exact zeros are drawn at
    ``floor``). The data is :func:`attnsym.numeric.invariances.bias_loss_slices` — pass the
    result the ``key-bias-invariance`` claim computed, or leave it out to run it for
    :data:`BIAS_SPEC` with ``seed``.

    Examples
    --------
    >>> from attnsym.numeric.invariances import bias_loss_slices
    >>> fig = bias_slices_figure(bias_loss_slices(BIAS_SPEC, offsets=[-1.0, 0.0, 1.0]))
    >>> [ax.get_yscale() for ax in fig.axes]
    ['linear', 'log']
    """
    if slices is None:
        slices = bias_loss_slices(BIAS_SPEC, seed)
    fig = new_figure((11.0, 4.8))
    lin, log = fig.subplots(1, 2)
    t = as_numpy(slices.offsets, "offsets")
    order = [b for b in ("b_Q", "b_V", "b_O", "b_K") if b in slices.loss_change]  # b_K last: drawn on top
    for name in order:
        colour, width, style = _BIAS_STYLE[name]
        dL = as_numpy(slices.loss_change[name], name)
        label = (f"{name}: max |∂L/∂{name}| = {slices.backward[name]:.1e} (backward), "
                 f"{slices.central[name]:.1e} (central differences)")
        lin.plot(t, dL, color=colour, lw=width, ls=style, label=label)
        log.plot(t, np.maximum(np.abs(dL), floor), color=colour, lw=width, ls=style)
    lin.axhline(0.0, color="k", lw=0.6)
    lin.set_xlabel("offset t along a random unit direction u")
    lin.set_ylabel("L(b + t u) − L(b)")
    lin.set_title("The loss does not move with the key bias")
    log.set_yscale("log")
    log.set_xlabel("offset t")
    log.set_ylabel("|L(b + t u) − L(b)|")
    log.set_title(f"b_K stays at rounding level (exact 0 drawn at {floor:g})")
    legend_below(lin, ncol=1, fontsize=8)
    return fig


def equal_tokens_figure(gradients: EqualTokenGradients | None = None, *, seed: int = 0) -> Figure:
    """Weight gradients at ``X = 1 xᵀ + ε E`` against ``ε`` (log-log): W_Q, W_K vanish at equal tokens, W_V does not.

    The data is :func:`attnsym.numeric.invariances.gradients_near_equal_tokens` — pass the
    result the ``rank-one-input`` claim computed, or leave it out to run it for
    :data:`EQUAL_TOKENS_SPEC` with ``seed``. The value at ``ε = 0`` is written in the legend
    (a log axis has no 0); a dotted guide of slope 2 (above the W_Q curve) shows the quadratic
    growth of the query and key gradients.

    Examples
    --------
    >>> from attnsym.numeric.invariances import gradients_near_equal_tokens
    >>> fig = equal_tokens_figure(gradients_near_equal_tokens(EQUAL_TOKENS_SPEC, epsilons=[0.0, 1e-3, 1e-2, 1.0]))
    >>> fig.axes[0].get_xscale(), fig.axes[0].get_yscale()
    ('log', 'log')
    """
    if gradients is None:
        gradients = gradients_near_equal_tokens(EQUAL_TOKENS_SPEC, seed)
    eps = as_numpy(gradients.epsilons, "epsilons")
    positive = eps > 0
    fig = new_figure()
    ax = fig.subplots()
    styles = {"W_Q": ("tab:blue", "o-"), "W_K": ("tab:orange", "s-"), "W_V": ("tab:green", "^-"), "W_O": ("tab:grey", "v:")}
    for name, values in gradients.max_gradient.items():
        g = as_numpy(values, name)
        colour, style = styles.get(name, ("k", ".-"))
        zero = g[~positive][0] if np.any(~positive) else None
        at_zero = "" if zero is None else "; at ε = 0: exactly 0" if zero == 0 else f"; at ε = 0: {zero:.1e}"
        ax.plot(eps[positive], g[positive], style, color=colour, ms=4, label=f"max |∂L/∂{name}|{at_zero}")
    if "W_Q" in gradients.max_gradient and np.count_nonzero(positive) >= 2:
        e_ref = eps[positive][0]
        g_ref = as_numpy(gradients.max_gradient["W_Q"], "W_Q")[positive][0]
        guide = eps[positive]
        ax.plot(guide, 4 * g_ref * (guide / e_ref) ** 2, "k:", lw=1, label="guide of slope 2 (∝ ε²)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("distance ε from equal tokens (X = 1xᵀ + εE)")
    ax.set_ylabel("largest entry of the weight gradient")
    ax.set_title("Equal tokens give the query and key weights no gradient")
    legend_below(ax, ncol=2, fontsize=8)
    return fig
