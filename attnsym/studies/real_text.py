r"""The entropy and dispersion claims on real text: a model's heads as the text grows, beside their bounds.

:func:`study` runs a model's streamed head statistics (:meth:`Model.head_stats` with
``per_row=True, spread=True``) on the first ``n`` tokens of a text for every ``n`` of
``sizes`` (64, 128, …, 8 192 by default) and returns a :class:`RealTextScaling`: per size, layer
and head, the mean over the query rows that count (as in :mod:`attnsym.audits.stream`) of

* the row entropy :math:`H_i` and the largest weight :math:`a_{\max,i}`;
* Zhai et al.'s lower bound on the entropy (the ``entropy-lower-bound`` claim,
  :func:`attnsym.symbolic.softmax_limits.entropy_lower_bound`) at the row's own
  :math:`(\sigma_i, T_i)`: ``T_i`` its allowed keys and :math:`\sigma_i = \lVert s_i - \bar s_i\rVert_2`
  its scores centred on their mean (softmax ignores a shift, so that is the least ℓ2 norm of
  logits giving the row's weights, and the theorem applies to it);
* the dispersion bound on the largest weight (the ``dispersion`` claim,
  :func:`attnsym.symbolic.softmax_limits.dispersion_top_weight`):
  :math:`1 / (1 + (T_i - 1) e^{-\Delta_i})` with :math:`\Delta_i` the range of the row's scores —
  the largest weight any key can get when all logits lie in an interval of width :math:`\Delta_i`;
* the ceiling :math:`\ln T_i` (uniform weights).

Both bounds hold row by row, so :attr:`RealTextScaling.entropy_margin` (the least
:math:`H_i - \text{bound}_i` over the rows) and :attr:`~RealTextScaling.dispersion_margin` (the least
:math:`\text{bound}_i - a_{\max,i}`) are never below the pass's rounding; what a real model shows
is how far above them it stays as ``n`` grows, and whether its σ grows with ``n`` (then the
bound falls and does not force the entropy up) or not.

In a causal model the rows of the first ``n`` tokens do not depend on the tokens after them,
so one pass at the largest size gives every smaller one (the prefix's rows, cut); a
bidirectional model runs one pass per size.

>>> SIZES[0], SIZES[-1], doubling_sizes(64, 300)
(64, 8192, (64, 128, 256))
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from .._checks import positive_int
from ..errors import SpecError
from ..symbolic.softmax_limits import dispersion_top_weight, entropy_lower_bound

__all__ = ["SIZES", "TOLERANCE", "RealTextScaling", "doubling_sizes", "row_bounds", "study"]

#: the text lengths (tokens) of the study: 64, 128, …, 8 192 (SmolLM2's context)
SIZES = tuple(64 * 2**k for k in range(8))
#: how far a float32 pass may sit below a bound (nats, or weight) and still be said to respect it
TOLERANCE = 1e-4


def doubling_sizes(smallest: int, largest: int) -> tuple[int, ...]:
    """``smallest · 2^k`` up to ``largest`` (at least ``smallest``)."""
    smallest, largest = positive_int("smallest", smallest), positive_int("largest", largest)
    if largest < smallest:
        raise SpecError(f"largest must be at least smallest = {smallest} (got {largest})")
    return tuple(smallest * 2**k for k in range(64) if smallest * 2**k <= largest)


@dataclass(frozen=True)
class RealTextScaling:
    """What :func:`study` measured: arrays ``(sizes, layers, heads)`` of means over the query rows that count.

    Attributes
    ----------
    model, revision : str
        The model's name and weights fingerprint.
    sizes : tuple of int
        The text lengths ``n`` (tokens).
    entropy, max_weight : ndarray
        Mean row entropy (nats) and mean largest weight.
    zhai_bound, dispersion_bound, ceiling : ndarray
        Mean of each row's Zhai bound, dispersion bound and ``ln T_i``.
    logit_norm, logit_range : ndarray
        Mean centred ℓ2 norm ``σ_i`` and range ``Δ_i`` of the rows' scores.
    entropy_margin, dispersion_margin : ndarray
        Least ``H_i − bound_i`` and least ``bound_i − a_max,i`` over the rows.
    """

    model: str
    revision: str
    sizes: tuple[int, ...]
    entropy: np.ndarray
    max_weight: np.ndarray
    zhai_bound: np.ndarray
    dispersion_bound: np.ndarray
    ceiling: np.ndarray
    logit_norm: np.ndarray
    logit_range: np.ndarray
    entropy_margin: np.ndarray
    dispersion_margin: np.ndarray

    @property
    def layers(self) -> int:
        return int(self.entropy.shape[1])

    @property
    def heads(self) -> int:
        return int(self.entropy.shape[2])

    def holds(self, tolerance: float = TOLERANCE) -> bool:
        """Whether every row respects both bounds within ``tolerance``."""
        return bool(np.nanmin(self.entropy_margin) >= -tolerance and np.nanmin(self.dispersion_margin) >= -tolerance)

    def records(self) -> list[dict[str, Any]]:
        """One dict per (size, layer, head): ``n``, ``layer``, ``head`` and every array's value (Python floats)."""
        names = ("entropy", "max_weight", "zhai_bound", "dispersion_bound", "ceiling", "logit_norm", "logit_range",
                 "entropy_margin", "dispersion_margin")
        return [{"n": n, "layer": k, "head": h, **{name: float(getattr(self, name)[s, k, h]) for name in names}}
                for s, n in enumerate(self.sizes) for k in range(self.layers) for h in range(self.heads)]


@functools.cache
def _bound_functions() -> tuple[Callable, Callable]:
    """The two claims' bounds as NumPy functions of arrays: Zhai's ``(σ, T)`` and the dispersion ``(T, Δ)``."""
    sigma, T, gap = sp.symbols("sigma T Delta", positive=True)
    zhai = sp.lambdify((sigma, T), entropy_lower_bound(sigma, T), "numpy")
    dispersion = sp.lambdify((T, gap), dispersion_top_weight(T, gap), "numpy")
    return zhai, dispersion


def row_bounds(keys: np.ndarray, logit_norm: np.ndarray, logit_range: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zhai's entropy bound and the dispersion bound of rows with ``keys`` allowed keys (≥ 2), centred norm and range.

    >>> zhai, top = row_bounds(np.array([4.0]), np.array([0.0]), np.array([0.0]))
    >>> bool(np.isclose(zhai[0], np.log(4))), float(top[0])  # equal logits: uniform weights
    (True, 0.25)
    """
    zhai, dispersion = _bound_functions()
    with np.errstate(over="ignore", invalid="ignore"):
        return (np.asarray(zhai(logit_norm, keys), dtype=np.float64),
                np.asarray(dispersion(keys, logit_range), dtype=np.float64))


def _prefix_means(values: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """``(sizes, L, H)`` means over the non-NaN rows of ``values`` ``(L, H, n)`` among the first ``n`` of each size."""
    ok = ~np.isnan(values)
    total = np.cumsum(np.where(ok, values, 0.0), axis=-1)
    count = np.cumsum(ok, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.stack([np.where(count[..., n - 1] > 0, total[..., n - 1] / np.maximum(count[..., n - 1], 1), np.nan)
                         for n in sizes])


def _prefix_least(values: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """``(sizes, L, H)`` least non-NaN value among the first ``n`` rows of each size (NaN when none)."""
    least = np.fmin.accumulate(values, axis=-1)
    return np.stack([least[..., n - 1] for n in sizes])


def _measure(rows: dict[str, np.ndarray], sizes: Sequence[int]) -> dict[str, np.ndarray]:
    """The result's arrays from one pass's per-row statistics ``(L, H, n)``, for each prefix of ``sizes``."""
    zhai, top = row_bounds(rows["keys"], rows["logit_norm"], rows["logit_range"])
    with np.errstate(divide="ignore", invalid="ignore"):
        ceiling = np.log(rows["keys"])
    means = {"entropy": rows["entropy"], "max_weight": rows["max_weight"], "zhai_bound": zhai,
             "dispersion_bound": top, "ceiling": ceiling, "logit_norm": rows["logit_norm"],
             "logit_range": rows["logit_range"]}
    out = {name: _prefix_means(v, sizes) for name, v in means.items()}
    out["entropy_margin"] = _prefix_least(rows["entropy"] - zhai, sizes)
    out["dispersion_margin"] = _prefix_least(top - rows["max_weight"], sizes)
    return out


def _checked_sizes(sizes: Sequence[int], limit: int) -> tuple[int, ...]:
    try:
        out = tuple(positive_int("sizes", n) for n in sizes)
    except TypeError:
        raise SpecError(f"sizes must be a sequence of token counts (got {sizes!r})") from None
    if not out or any(b <= a for a, b in itertools.pairwise(out)) or out[0] < 2:
        raise SpecError(f"sizes must be increasing token counts of at least 2 (got {sizes!r})")
    if out[-1] > limit:
        raise SpecError(f"sizes go up to {out[-1]} tokens, past the model's {limit} positions; use smaller sizes")
    return out


def study(model, text: str, sizes: Sequence[int] = SIZES, *, block: int = 256, progress: bool | None = None,
          threads: int | None = None) -> RealTextScaling:
    """Entropy and largest weight of every head on the first ``n`` tokens of ``text`` for each ``n``, beside the bounds.

    Parameters
    ----------
    model : Model
        A loaded model (NumPy backend) without a learned sink (the bounds are about a softmax
        over the keys alone).
    text : str
        English prose at least ``max(sizes)`` tokens long, e.g. the paragraphs of
        ``pydoc_data.topics`` joined (:func:`attnsym.audits.stdlib_corpus`).
    sizes : sequence of int
        Increasing text lengths in tokens (default :data:`SIZES`).
    block, progress, threads
        Passed to :meth:`Model.head_stats`.

    Returns
    -------
    RealTextScaling

    Raises
    ------
    SpecError
        Bad sizes, a text shorter than the largest, a model with a learned sink.

    Examples
    --------
    >>> m = at.models.packaged_model()
    >>> r = study(m, "The cat sat on the mat and looked at the dog. " * 4, sizes=(8, 16))
    >>> r.entropy.shape, r.holds()
    ((2, 6, 12), True)
    """
    plan = model.config
    sizes = _checked_sizes(sizes, int(plan.max_positions))
    if any(b.attention.sink for b in plan.blocks):
        raise SpecError(f"{model.name} has layers with a learned sink: the entropy and dispersion bounds are about a "
                        "softmax over the keys alone")
    if not isinstance(text, str):
        raise SpecError(f"text must be a string (got {type(text).__name__})")
    ids = np.asarray(model.tokenizer.encode(text).ids, dtype=np.int64)
    if ids.size < sizes[-1]:
        raise SpecError(f"text has {ids.size} tokens, fewer than the largest size {sizes[-1]}; give a longer text")
    options = {"per_row": True, "spread": True, "induction": False, "block": block, "progress": progress,
               "threads": threads}
    if plan.causal:  # a prefix's rows are the whole pass's first rows: one pass, cut at every size
        passes = [(sizes, model.head_stats(ids[:sizes[-1]], **options))]
    else:
        passes = [((n,), model.head_stats(ids[:n], **options)) for n in sizes]
    parts = [_measure(s.rows, cut) for cut, s in passes]
    arrays = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    for v in arrays.values():
        v.setflags(write=False)
    return RealTextScaling(model=model.name, revision=passes[0][1].revision, sizes=sizes, **arrays)
