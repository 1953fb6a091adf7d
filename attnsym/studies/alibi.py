"""ALiBi's recency bias, measured: the bias exactly, the slopes against the paper's code, entropy and paths.

:func:`study` returns an :class:`AlibiResult`: the exact bias ``−m_h (i − j)`` and the weight ratio
``e^{m_h}`` per step of zero scores (SymPy, ``n = 4``); the slopes of the spec's rule, of
:func:`attnsym.numeric.alibi_slopes` and of the layer's own weights against the ALiBi reference
code (:func:`attnsym.numeric.paper_formulas.alibi_paper_slopes`); the row entropy of random scores
with and without the bias, per head; the routing graph of the steepest head (its longest shortest
path, whether every causal edge is kept); the mean weight by distance. The claim
``alibi-recency`` judges it; :func:`attnsym.plots.alibi_bias_figure` draws its weights.

>>> AlibiSizes.of(quick=True).heads
6
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import networkx as nx
import numpy as np
import sympy as sp

from ..graphs import routing_graph
from ..numeric import alibi_slopes, scores, softmax
from ..numeric.entropy import row_entropy
from ..numeric.paper_formulas import alibi_paper_slopes
from ..numeric.position_experiments import alibi_weights, weight_by_distance
from ..spec import AttentionSpec, alibi_slope_exponents
from ..symbolic.operations import row_softmax
from ..symbolic.positions import alibi_bias as exact_alibi_bias
from ._streams import Streams

__all__ = ["AlibiResult", "AlibiSizes", "study"]


@dataclass(frozen=True)
class AlibiSizes:
    """Heads; head counts checked against the reference slopes; sequence length, head width and batch."""

    heads: int
    head_counts: tuple[int, ...]
    n: int
    d_k: int
    batch: int

    @classmethod
    def of(cls, quick: bool) -> AlibiSizes:
        """Quick: 6 heads, H = 1 … 16, n = 32; full: 8 heads, H = 1 … 64, n = 128."""
        return cls(6, tuple(range(1, 17)), 32, 8, 8) if quick else cls(8, tuple(range(1, 65)), 128, 16, 16)


@dataclass(frozen=True)
class AlibiResult:
    """What :func:`study` found.

    ``bias``/``last_row`` are head 1's exact bias (n = 4) and the weights of its last query at zero
    scores; ``slope_gap`` the largest ``|log₂ slope − log₂ reference|`` over ``sizes.head_counts``
    (rule and numeric slopes), ``used_gap`` the same for the slopes read off the layer's weights;
    ``entropy``/``entropy_plain`` the mean late-row entropy per head with and without the bias;
    ``reach`` the longest shortest path of the steepest head's routing graph, ``every_edge`` whether
    it keeps every causal edge, ``far_weight`` its smallest causal weight; ``profile`` the mean weight
    by distance per head (heads, n).
    """

    sizes: AlibiSizes
    exponents: tuple[Fraction, ...]
    bias_exact: bool
    ratio_exact: bool
    bias: sp.Matrix
    last_row: sp.Matrix
    slope_gap: float
    used_gap: float
    slopes: np.ndarray
    entropy: np.ndarray
    entropy_plain: np.ndarray
    reach: int
    every_edge: bool
    far_weight: float
    profile: np.ndarray

    @property
    def drop(self) -> np.ndarray:
        """Entropy lost to the bias, per head."""
        return self.entropy_plain - self.entropy

    @property
    def order(self) -> np.ndarray:
        """Heads from the steepest slope to the shallowest."""
        return np.argsort(-self.slopes)


def _slope_gaps(sizes: AlibiSizes) -> tuple[float, float]:
    """The spec's rule and the numeric slopes, and the slopes the layer's weights use, against the reference code."""
    gap = max(max(abs(math.log2(float(2.0 ** -float(e))) - math.log2(m))
                  for e, m in zip(alibi_slope_exponents(H), alibi_paper_slopes(H), strict=True)) for H in sizes.head_counts)
    gap = max(gap, max(float(np.max(np.abs(np.log2(np.asarray(alibi_slopes(H))) - np.log2(alibi_paper_slopes(H)))))
                       for H in sizes.head_counts))
    h = sizes.heads
    zero_spec = AttentionSpec(n=4, d_model=h, heads=h, positions="alibi", causal=True)
    A_zero = alibi_weights(np.zeros((1, h, 4, 1)), np.zeros((1, h, 4, 1)), zero_spec)[0]  # (heads, 4, 4)
    used = np.log(A_zero[:, 3, 3] / A_zero[:, 3, 2])  # (heads,): log of consecutive weights = m_h
    return gap, float(np.max(np.abs(np.log2(used) - np.log2(alibi_paper_slopes(h)))))


def study(rng: Streams, *, quick: bool) -> AlibiResult:
    """ALiBi's bias, slopes, entropy and routing; ``rng()`` draws the random queries and keys."""
    z = AlibiSizes.of(quick)
    small = AttentionSpec(n=4, d_model=z.heads, heads=z.heads, positions="alibi", causal=True)
    bias_exact = all(exact_alibi_bias(small, h)[i, j] == -sp.Integer(2) ** -sp.Rational(e) * (i - j)
                     for h, e in enumerate(small.alibi_slope_exponents) for i in range(4) for j in range(i + 1))
    B0 = exact_alibi_bias(small, 0)
    A_exact = row_softmax(B0, allowed=small.allowed)  # zero scores: consecutive weights in the ratio exp(m_h)
    m0 = sp.Integer(2) ** -sp.Rational(small.alibi_slope_exponents[0])
    ratio_exact = all(sp.simplify(A_exact[3, j + 1] / A_exact[3, j] - sp.exp(m0)) == 0 for j in range(3))
    slope_gap, used_gap = _slope_gaps(z)
    n, batch, heads = z.n, z.batch, z.heads
    spec = AttentionSpec(n=n, d_model=heads * z.d_k, heads=heads, positions="alibi", causal=True)
    Q, K = rng().standard_normal((2, batch, heads, n, z.d_k))
    A_all = alibi_weights(Q, K, spec)  # (batch, heads, n, n)
    A_plain = softmax(scores(Q, K, spec.scale_float), allowed=spec.allowed_array())

    def late_entropy(W):  # mean over the later half of the queries (they see many keys) and the batch
        return row_entropy(np.asarray(W).reshape(-1, n)).reshape(batch, heads, n)[:, :, n // 2:].mean(axis=(0, 2))

    slopes = np.asarray(alibi_slopes(heads))
    steepest = int(np.argsort(-slopes)[0])
    A = A_all[0]
    G = routing_graph(A[steepest])
    lengths = dict(nx.all_pairs_shortest_path_length(G))
    return AlibiResult(
        sizes=z, exponents=tuple(small.alibi_slope_exponents), bias_exact=bias_exact,
        ratio_exact=ratio_exact, bias=B0, last_row=A_exact[3, :], slope_gap=slope_gap, used_gap=used_gap,
        slopes=slopes, entropy=late_entropy(A_all), entropy_plain=late_entropy(A_plain),
        reach=max(lengths[j][i] for i in range(n) for j in range(i + 1)),
        every_edge=all(G.has_edge(j, i) for i in range(n) for j in range(i + 1)),
        far_weight=float(np.min(A[steepest][np.tril(np.ones((n, n), dtype=bool))])), profile=weight_by_distance(A))
