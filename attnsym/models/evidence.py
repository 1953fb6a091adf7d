r"""Real-model numbers for the claims: score variance and row entropy per layer and head, the apple contrast.

The claims engine (:mod:`attnsym.claims`) calls these when a packaged model is installed and
reports them beside its Monte Carlo figures; they never download anything.

* :func:`packaged_model` — the packaged all-MiniLM-L6-v2, loaded once, or None.
* :func:`score_statistics` — per layer and head, over a few texts: the mean and variance of
  the real scaled scores :math:`S = QK^\top/\sqrt{d_k}` (is the variance near 1, as the
  ``variance-scaling`` argument assumes for unit-variance q and k?), the variance the
  unscaled scores :math:`QK^\top` would have (``d_k`` times larger), and the row entropy of
  the attention in nats and as a fraction of :math:`\ln n`.
* :func:`special_shares` — how much attention lands on ``[CLS]`` / ``[SEP]`` (or a decoder's
  first token), per layer.
* :func:`apple_contrast` — the sources' example, "apple" in two sentences, through the same
  weights (:func:`attnsym.models.contrast`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..graphs.metrics import row_entropy
from .contrast import TokenContrast, contrast
from .model import Model, available, load

__all__ = ["APPLE", "EVIDENCE_TEXTS", "ScoreStatistics", "SpecialShares", "apple_contrast", "packaged_model", "score_statistics",
           "special_shares"]

#: the two sentences and the word of the sources' example
APPLE: tuple[str, str, str] = ("I ate an apple for lunch", "I bought an Apple phone today", "apple")  # same position

#: the texts the score and entropy statistics are measured on (fixed, so the numbers are reproducible)
EVIDENCE_TEXTS: tuple[str, ...] = (
    "the Apple phone launch event",
    "I like to eat apples",
    "Attention computes its mixing weights from the data, then applies them to the values.",
    "An MLP mixes the features of each token with the same fixed matrix, whatever the input.",
    "She walked along the river bank at dawn, counting the boats that passed.",
)


@functools.cache
def packaged_model(name: str = "all-MiniLM-L6-v2") -> Model | None:
    """The packaged model, loaded once per process, or None when its package is not installed."""
    if name not in available():
        return None
    return load(name)


@dataclass(frozen=True)
class ScoreStatistics:
    """Statistics of real scores and attention, per layer and head (arrays ``(layers, heads)``).

    Attributes
    ----------
    model : str
    texts : tuple of str
    d_k : int
        Head width; the unscaled scores are ``sqrt(d_k)`` times the scaled ones.
    score_mean, score_variance : array
        Mean and variance of the scaled scores ``S`` over every allowed (query, key) pair of
        every text (pooled).
    unscaled_variance : array
        ``d_k * score_variance``: the variance of ``Q Kᵀ`` without the ``1/sqrt(d_k)``.
    entropy : array
        Mean row entropy of the attention, nats.
    normalised_entropy : array
        Mean of ``H / ln n`` (0: one-hot rows; 1: uniform rows).
    tokens : int
        Number of query rows pooled per head.
    """

    model: str
    texts: tuple[str, ...]
    d_k: int
    score_mean: np.ndarray
    score_variance: np.ndarray
    unscaled_variance: np.ndarray
    entropy: np.ndarray
    normalised_entropy: np.ndarray
    tokens: int

    def as_dict(self) -> dict[str, Any]:
        """Plain values (JSON-ready), with overall summaries."""
        return {
            "model": self.model, "texts": list(self.texts), "d_k": self.d_k, "tokens": self.tokens,
            "score_mean": self.score_mean.tolist(), "score_variance": self.score_variance.tolist(),
            "unscaled_variance": self.unscaled_variance.tolist(), "entropy": self.entropy.tolist(),
            "normalised_entropy": self.normalised_entropy.tolist(),
            "score_variance_median": float(np.median(self.score_variance)),
            "score_variance_range": [float(self.score_variance.min()), float(self.score_variance.max())],
        }


def score_statistics(model: Model, texts: Sequence[str] = EVIDENCE_TEXTS) -> ScoreStatistics:
    """Mean and variance of the real scaled scores, and row entropies, per layer and head.

    Parameters
    ----------
    model : Model
    texts : sequence of str, default :data:`EVIDENCE_TEXTS`
        Routed as one padded batch; only real tokens (and, in a decoder, only allowed pairs)
        enter the statistics.

    Returns
    -------
    ScoreStatistics
    """
    routes = model.route(list(texts))
    assert isinstance(routes, list)  # a list of texts routes to a list
    L, H = routes[0].layers, routes[0].heads
    values: list[np.ndarray] = []
    entropy = np.zeros((L, H))
    normalised = np.zeros((L, H))
    rows = 0
    for r in routes:
        allowed = np.isfinite(r.scores)  # (L, H, n, n)
        values.append(np.where(allowed, r.scores, np.nan).reshape(L, H, -1).astype(np.float64))
        h = row_entropy(r.attention.astype(np.float64))  # (L, H, n)
        entropy += h.sum(-1)
        normalised += (h / np.log(r.n)).sum(-1) if r.n > 1 else 0.0
        rows += r.n
    pooled = np.concatenate(values, axis=-1)  # (L, H, pairs)
    variance = np.nanvar(pooled, axis=-1)
    d_k = model.config.d_k
    return ScoreStatistics(
        model=model.name, texts=tuple(texts), d_k=d_k, score_mean=np.nanmean(pooled, axis=-1), score_variance=variance,
        unscaled_variance=d_k * variance, entropy=entropy / rows, normalised_entropy=normalised / rows, tokens=rows,
    )


def apple_contrast(model: Model) -> TokenContrast:
    """The sources' example, with "apple" at the same position: "I ate an apple for lunch" / "I bought an Apple phone today"."""
    text1, text2, token = APPLE
    return contrast(model, text1, text2, token)


@dataclass(frozen=True)
class SpecialShares:
    """Per layer, where the attention of a text's tokens goes, averaged over heads and query rows.

    Attributes
    ----------
    first, last, rest : array ``(layers,)``
        Share of attention to the first token (``[CLS]`` in BERT), to the last token when the
        tokenizer added it (``[SEP]``; 0 otherwise), and to every other token; each layer's
        three shares sum to 1.
    first_label, last_label : str
    """

    first: np.ndarray
    last: np.ndarray
    rest: np.ndarray
    first_label: str
    last_label: str


def special_shares(route: Any) -> SpecialShares:
    """How much of each layer's attention goes to the first token and to the closing special token.

    In BERT-family encoders much of the attention of many heads lands on ``[CLS]`` and
    ``[SEP]`` — a "no-op" place to park attention (Clark et al., 2019, *What Does BERT Look
    At?*); in decoders the first token plays that role. This measures it for one route.
    """
    A = route.attention.astype(np.float64)  # (L, H, n, n)
    per_key = A.mean(axis=(1, 2))  # (L, n): mean over heads and queries of the attention each key receives
    last_special = route.n > 1 and route.special[-1]
    first = per_key[:, 0]
    last = per_key[:, -1] if last_special else np.zeros(route.layers)
    labels = route.labels()
    return SpecialShares(first=first, last=last, rest=1.0 - first - last, first_label=labels[0],
                         last_label=labels[-1] if last_special else "—")
