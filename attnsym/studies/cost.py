"""What attention costs, counted and measured: the studies behind ``quadratic-cost`` and ``kv-cache``.

Two questions, one function each:

* :func:`attention_cost` — the operations of one head as a polynomial in ``n`` and ``d``
  (the closed form of :func:`attnsym.symbolic.opcount.attention_opcount` against the polynomial
  interpolated from the SymPy expression graph, and NumPy's own count of the two matrix products
  on counting scalars), and the peak memory of the numeric forward pass as ``n`` grows, plain
  (the ``n × n`` map stored) against blockwise (:func:`attnsym.numeric.attention` with
  ``block_size``), traced by ``tracemalloc``; returns an :class:`AttentionCost`;
* :func:`decode_cost` — generating token by token with and without a K/V cache
  (:func:`attnsym.numeric.kvcache.causal_decode`) against full causal attention, the
  multiplications of each step against a brute-force count and the closed form
  (:func:`attnsym.symbolic.opcount.decode_step_opcount`), and, exactly, why the cache is valid:
  a causal prefix's outputs do not depend on later tokens; returns a :class:`DecodeCost`.

The claims ``quadratic-cost`` and ``kv-cache`` judge the results; their figures draw the same
objects.

>>> from attnsym.studies import streams
>>> r = decode_cost(streams(0), quick=True)
>>> r.cached_degree, r.uncached_degree, r.causal_prefix_unchanged, r.bidirectional_prefix_unchanged
(1, 2, True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import sympy as sp

from .._exact import exact
from ..numeric import attention
from ..numeric.flopcount import contraction_multiplications, decode_step_multiplications
from ..numeric.kvcache import causal_decode
from ..numeric.measure import growth_exponent, median_seconds, peak_traced_bytes
from ..spec import AttentionSpec
from ..symbolic.matrices import attention as symbolic_attention
from ..symbolic.opcount import OpCount, attention_opcount, decode_step_opcount, interpolate_opcount
from ._streams import Streams
from .compare import close, max_abs

__all__ = ["AttentionCost", "DecodeCost", "DecodeSizes", "DecodeStep", "MemoryGrowth", "OperationCount",
           "attention_cost", "decode_cost", "prefix_unchanged"]

#: the (n, d) at which NumPy counts the multiplications of Q Kᵀ and A V on counting scalars
BRUTE_SIZES = ((3, 2), (5, 3), (8, 4))
#: bytes per float64 entry of the n × n map
FLOAT64_BYTES = 8


# ----------------------------------------------------------------------------- attention_cost

@dataclass(frozen=True)
class OperationCount:
    """The operations of one head (``d_k = d_v = d``, unscaled; projections not counted).

    ``closed`` is the closed form, ``interpolated`` the polynomial (by kind) interpolated from the
    expression graph's operations at ``n ≤ 5, d ≤ 3``; ``brute`` NumPy's count of the
    multiplications of ``Q Kᵀ`` and ``A V`` at :data:`BRUTE_SIZES` (the closed form has ``n²``
    more: ``a_ij = e_ij · (1/Σ_j e_ij)``).
    """

    n: sp.Symbol
    d: sp.Symbol
    closed: OpCount
    interpolated: dict[str, sp.Expr]
    brute: dict[tuple[int, int], int]

    @property
    def by_kind(self) -> dict[str, sp.Expr]:
        """The closed form by kind of operation (``mul``, ``add``, ``exp``, ``div``)."""
        return self.closed.by_kind()

    @property
    def matches_interpolation(self) -> bool:
        """The closed form equals the expression graph's count, kind by kind."""
        by_kind = self.by_kind
        return all(sp.expand(by_kind[k] - self.interpolated[k]) == 0 for k in by_kind)

    @property
    def matches_brute(self) -> bool:
        """The closed form's multiplications, less the ``n²`` of the normalisation, equal NumPy's count."""
        mul = self.by_kind["mul"]
        return all(int(mul.subs({self.n: nn, self.d: dd})) - nn * nn == m for (nn, dd), m in self.brute.items())

    @property
    def degrees(self) -> tuple[int, int]:
        """The degrees of the total in ``n`` and in ``d``."""
        total = self.closed.total
        return int(sp.degree(total, self.n)), int(sp.degree(total, self.d))

    @property
    def memory_degree(self) -> int:
        """The degree in ``n`` of the weights the plain path stores."""
        return int(sp.degree(self.closed.memory["weights"], self.n))


@dataclass(frozen=True)
class MemoryGrowth:
    """Peak traced bytes of the forward pass at each ``n`` (width ``d``): plain, and blockwise with ``block``.

    Each peak is the least of three runs (a run's spread is a few allocations more, never fewer).
    ``plain_seconds`` / ``lean_seconds`` are median wall times, empty unless measured.
    """

    ns: tuple[int, ...]
    d: int
    block: int
    plain_peaks: tuple[int, ...]
    lean_peaks: tuple[int, ...]
    plain_seconds: tuple[float, ...] = ()
    lean_seconds: tuple[float, ...] = ()

    @property
    def one_map(self) -> int:
        """Bytes of one ``n × n`` float64 map at the largest ``n``."""
        return FLOAT64_BYTES * self.ns[-1] ** 2

    @property
    def plain_exponent(self) -> float:
        """Growth exponent of the plain peak between the two largest ``n`` (fixed overheads matter least there)."""
        return growth_exponent(self.ns[-2:], self.plain_peaks[-2:])

    @property
    def lean_exponent(self) -> float:
        """Growth exponent of the blockwise peak between the two largest ``n``."""
        return growth_exponent(self.ns[-2:], self.lean_peaks[-2:])

    @property
    def plain_holds_a_map(self) -> bool:
        """The plain peak is at least one ``n × n`` map at every ``n`` (a quadratic lower bound)."""
        return all(m >= FLOAT64_BYTES * n**2 for m, n in zip(self.plain_peaks, self.ns, strict=True))

    @property
    def lean_below_a_map(self) -> bool:
        """The blockwise peak is below one ``n × n`` float64 map at the largest ``n`` (fixed overheads weigh more
        at small ``n``)."""
        return self.lean_peaks[-1] < self.one_map

    @property
    def time_exponent(self) -> float | None:
        """Growth exponent of the plain path's wall time over every ``n`` (None: not measured)."""
        return growth_exponent(self.ns, self.plain_seconds) if self.plain_seconds else None


@dataclass(frozen=True)
class AttentionCost:
    """What :func:`attention_cost` found: the exact count and the measured memory."""

    count: OperationCount
    memory: MemoryGrowth


def operation_count() -> OperationCount:
    """The exact operations of one head, three ways (closed form, expression graph, NumPy on counting scalars).

    >>> count = operation_count()
    >>> count.degrees, count.memory_degree, count.matches_interpolation, count.matches_brute
    ((2, 1), 2, True, True)
    """
    n, d = sp.symbols("n d", positive=True, integer=True)
    brute = {(nn, dd): contraction_multiplications("ik,jk->ij", (nn, dd), (nn, dd))
             + contraction_multiplications("ij,jk->ik", (nn, nn), (nn, dd)) for nn, dd in BRUTE_SIZES}
    return OperationCount(n, d, attention_opcount(n, d, d, scaled=False), interpolate_opcount(5, 3, scaled=False), brute)


def memory_growth(rng: np.random.Generator, ns: tuple[int, ...], *, d: int = 32, block: int = 64,
                  measure_time: bool = False) -> MemoryGrowth:
    """Peak traced bytes of the plain and blockwise paths at each ``n`` (each the least of three runs); wall
    times if asked."""
    plain_mem, lean_mem, plain_t, lean_t = [], [], [], []
    for size in ns:
        X = rng.standard_normal((size, d))
        W = [rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3)]
        plain = partial(attention, X, *W)
        lean = partial(attention, X, *W, return_weights=False, block_size=block)
        plain(), lean()  # warm-up: first-call allocations are not the method's
        plain_mem.append(min(peak_traced_bytes(plain)[1] for _ in range(3)))
        lean_mem.append(min(peak_traced_bytes(lean)[1] for _ in range(3)))
        if measure_time:
            plain_t.append(median_seconds(plain, repeat=3))
            lean_t.append(median_seconds(lean, repeat=3))
    return MemoryGrowth(ns, d, block, tuple(plain_mem), tuple(lean_mem), tuple(plain_t), tuple(lean_t))


def attention_cost(rng: Streams, *, quick: bool, measure_time: bool = False) -> AttentionCost:
    """The exact operation count of one head and the measured memory of the plain and blockwise paths.

    Parameters
    ----------
    rng : callable
        ``rng()`` draws the inputs and weights of every measured size, in order.
    quick : bool
        ``n = 128, 256, 512`` (quick) or ``512, 1024, 2048``; ``d = 32``, blocks of 64.
    measure_time : bool, default False
        Also median wall times (never judged: they vary from run to run).
    """
    ns = (128, 256, 512) if quick else (512, 1024, 2048)
    return AttentionCost(operation_count(), memory_growth(rng(), ns, measure_time=measure_time))


# ----------------------------------------------------------------------------- decode_cost

@dataclass(frozen=True)
class DecodeSizes:
    """Tokens ``n``, width ``d`` and ``heads`` of the decoded layer (heads of width ``d // heads``)."""

    n: int
    d: int
    heads: int

    @property
    def d_k(self) -> int:
        """The width of one head."""
        return self.d // self.heads

    @classmethod
    def of(cls, quick: bool) -> DecodeSizes:
        """Quick: 8 tokens, d = 4, 2 heads; full: 32 tokens, d = 16, 4 heads."""
        return cls(8, 4, 2) if quick else cls(32, 16, 4)


@dataclass(frozen=True)
class DecodeStep:
    """The multiplications of step ``t`` with and without the cache; ``brute`` NumPy's count of both (probed steps)."""

    t: int
    cached: int
    uncached: int
    brute: tuple[int, int] | None


@dataclass(frozen=True)
class DecodeCost:
    """What :func:`decode_cost` found.

    ``cached_errors`` / ``uncached_errors`` are ``max |y_t − y_t^full|`` per token, ``exact`` whether
    both decodings equal full causal attention within the float64 tolerance. ``cached_count`` and
    ``uncached_count`` are the closed forms per step in ``t`` (by kind), ``cached_count_width_d``
    the cached multiplications of one head of symbolic width ``d``, ``last_row_count`` those of one
    layer that reruns only its last query row without a cache. ``bidirectional_change`` is the
    largest change of earlier outputs when a token is appended to a layer without a causal mask;
    the two ``*_prefix_unchanged`` are the exact SymPy answers (2 tokens, then 3).
    """

    sizes: DecodeSizes
    cached_errors: tuple[float, ...]
    uncached_errors: tuple[float, ...]
    exact: bool
    t: sp.Symbol
    cached_count: dict[str, sp.Expr]
    uncached_count: dict[str, sp.Expr]
    cached_count_width_d: sp.Expr
    last_row_count: sp.Expr
    probe: tuple[int, ...]
    steps: tuple[DecodeStep, ...]
    counter_matches_brute: bool
    closed_form_matches_brute: bool
    cache_shape: tuple[int, ...] | None
    bidirectional_change: float
    causal_prefix_unchanged: bool
    bidirectional_prefix_unchanged: bool

    @property
    def cached_degree(self) -> int:
        """The degree in ``t`` of the cached step's multiplications."""
        return int(sp.degree(self.cached_count["mul"], self.t))

    @property
    def uncached_degree(self) -> int:
        """The degree in ``t`` of the recomputing step's multiplications."""
        return int(sp.degree(self.uncached_count["mul"], self.t))


def prefix_unchanged(causal: bool) -> bool:
    """Whether the SymPy outputs of 2 tokens are the same expressions when a 3rd token follows (exact).

    >>> prefix_unchanged(True), prefix_unchanged(False)
    (True, False)
    """
    long, short = (symbolic_attention(AttentionSpec(n=m, d_model=1, causal=causal)) for m in (3, 2))
    return all(e == 0 for e in (long.Y[:2, :] - short.Y))


def _counts(sizes: DecodeSizes, t: sp.Symbol) -> tuple[dict[str, sp.Expr], dict[str, sp.Expr], sp.Expr, sp.Expr]:
    """The per-step closed forms (cached, recomputed), one head of width d cached, and the last-row rerun."""
    d, d_k, heads = sizes.d, sizes.d_k, sizes.heads
    cached = decode_step_opcount(t, d, d_k, heads=heads, cached=True, output_projection=True)
    uncached = decode_step_opcount(t, d, d_k, heads=heads, cached=False, output_projection=True)
    dm = sp.Symbol("d", positive=True, integer=True)  # the cached cost in symbolic width: O(t·d + d²)
    width_d = sp.expand(decode_step_opcount(t, dm, dm, heads=1, cached=True, output_projection=True)["mul"])
    # one layer without a cache could rerun only the last query row: re-project K, V of all t tokens (t·d·h·d_k
    # each), score and mix t rows, W_O once — linear in t, d_model times the cached cost per past token
    hd = heads * d_k
    last_row = sp.expand(2 * t * d * hd + d * hd + 2 * t * hd + hd * d)
    return cached, uncached, width_d, last_row


def decode_cost(rng: Streams, *, quick: bool) -> DecodeCost:
    """Decoding with and without a K/V cache against full causal attention; the cost of each step, three ways.

    ``rng()`` draws the tokens, then ``W_Q, W_K, W_V, W_O`` (scaled by ``1/√d``).
    """
    sizes = DecodeSizes.of(quick)
    n, d, heads = sizes.n, sizes.d, sizes.heads
    generator = rng()
    X = generator.standard_normal((n, d))
    W = [generator.standard_normal((d, d)) / np.sqrt(d) for _ in range(4)]
    full, _ = attention(X, *W, heads=heads, causal=True)
    fast, slow = (causal_decode(X, *W, heads=heads, cache=cache) for cache in (True, False))
    t = sp.Symbol("t", positive=True, integer=True)
    cached, uncached, width_d, last_row = _counts(sizes, t)
    probe = tuple(sorted({1, 2, 3, n // 2, n}))  # both counts are polynomials of degree ≤ 2 in t
    brute = {tt: (decode_step_multiplications(tt, d, heads, sizes.d_k, cached=True),
                  decode_step_multiplications(tt, d, heads, sizes.d_k, cached=False)) for tt in probe}
    steps = tuple(DecodeStep(a["t"], a["mul"], b["mul"], brute.get(a["t"]))
                  for a, b in zip(fast.steps, slow.steps, strict=True))
    # without a causal mask, appending a token changes the earlier outputs: nothing can be cached
    Y_short = attention(X[:-1], *W, heads=heads, return_weights=False)
    Y_long = attention(X, *W, heads=heads, return_weights=False)
    return DecodeCost(
        sizes=sizes, cached_errors=tuple(max_abs(fast.Y[i], full[i]) for i in range(n)),
        uncached_errors=tuple(max_abs(slow.Y[i], full[i]) for i in range(n)),
        exact=close(fast.Y, full) and close(slow.Y, full), t=t, cached_count=cached, uncached_count=uncached,
        cached_count_width_d=width_d, last_row_count=last_row, probe=probe, steps=steps,
        counter_matches_brute=all((steps[tt - 1].cached, steps[tt - 1].uncached) == brute[tt] for tt in probe),
        closed_form_matches_brute=all(
            (int(cached["mul"].subs(t, exact("t", tt))), int(uncached["mul"].subs(t, exact("t", tt)))) == brute[tt]
            for tt in probe),
        cache_shape=fast.cache_shape, bidirectional_change=max_abs(Y_long[:-1], Y_short),
        causal_prefix_unchanged=prefix_unchanged(True), bidirectional_prefix_unchanged=prefix_unchanged(False))
