"""The standard figures by name, each built from the layers' data (``attnsym plot`` and the tour)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import SizeLimitError, SpecError
from .activations import gelu_figure
from .complexity import path_length_figure
from .heatmaps import attention_heatmap, random_attention
from .positions import positional_encoding_figure
from .rope_alibi import alibi_bias_figure, rope_decay_figure, rope_frequencies_figure
from .scaling import entropy_figure, variance_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["FIGURES", "MAX_HEATMAP_N", "figure"]

#: the largest sequence length the heatmap figure draws (a panel has no more pixels than that)
MAX_HEATMAP_N = 1024

#: the standard figures: name -> what it shows (build one with :func:`figure`; used by ``attnsym plot`` and the tour)
FIGURES: dict[str, str] = {
    "heatmap": "attention weights per head (query × key) for random inputs",
    "positions": "sinusoidal positional-encoding curves and matrix",
    "gelu": "GELU exact vs tanh approximation, and the error",
    "variance": "variance of q·k vs d, unscaled and scaled by 1/√d (Monte Carlo + exact)",
    "entropy": "row entropy and largest weight of softmax vs d, unscaled and scaled",
    "paths": "Table 1: maximum path length and sequential depth vs n per architecture",
    "rope": "RoPE frequencies θ_i = 10000^(−2i/d) and the angles p θ_i they turn",
    "rope-decay": "RoFormer's long-range decay bound of RoPE scores vs distance, and actual scores",
    "alibi": "ALiBi's bias −m_h (i − j) per head and the recency it gives the weights",
}


def figure(name: str, *, seed: int = 0, quick: bool = False, spec: Any = None) -> Figure:
    """Build one of the standard figures of :data:`FIGURES` with data from the layers.

    Parameters
    ----------
    name : {"heatmap", "positions", "gelu", "variance", "entropy", "paths", "rope", "rope-decay", "alibi"}
    seed : int, default 0
        Seed of every random input (heatmap, Monte Carlo, entropy).
    quick : bool, default False
        Fewer samples (for tests and ``attnsym tour --quick``).
    spec : AttentionSpec, optional
        The layer of the heatmap (default n=6, d_model=8, heads=2).

    Raises
    ------
    SpecError
        Unknown ``name``.

    Examples
    --------
    >>> fig = figure("gelu")
    >>> fig.axes[-1].get_ylabel()
    'tanh − exact'
    """
    if name not in FIGURES:
        raise SpecError(f"name must be one of {', '.join(FIGURES)} (got {name!r})")
    if name == "heatmap":
        if spec is not None and spec.n > MAX_HEATMAP_N:  # before computing heads·n² weights
            raise SizeLimitError(
                f"n must be at most {MAX_HEATMAP_N} for a heatmap (got n={spec.n}: {spec.heads} head(s) × n² = "
                f"{spec.heads * spec.n**2:.1e} weights, {spec.heads * spec.n**2 * 8 / 1e9:.2g} GB, more cells than "
                "pixels); draw a slice of A with attnsym.plots.attention_heatmap instead")
        A, tokens = random_attention(spec, seed=seed)
        allowed = None if spec is None else spec.allowed_array()
        return attention_heatmap(A, tokens, allowed=allowed,
                                 title="Attention weights for a random input (the words label random vectors)")
    if name == "positions":
        return positional_encoding_figure()
    if name == "gelu":
        return gelu_figure()
    if name == "variance":
        return variance_figure(seed=seed, quick=quick)
    if name == "entropy":
        return entropy_figure(seed=seed, quick=quick)
    if name == "rope":
        return rope_frequencies_figure()
    if name == "rope-decay":
        return rope_decay_figure(seed=seed, samples=200 if quick else 2000)
    if name == "alibi":
        return alibi_bias_figure()
    return path_length_figure()
