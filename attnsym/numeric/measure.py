"""Small, repeatable measurements of a numeric call: peak traced memory, median time, growth exponent.

Used by the cost claims (``quadratic-cost``, ``blockwise-exact``) to show how the numeric
backend scales with the sequence length. Memory is measured with :mod:`tracemalloc`, which sees
every NumPy array allocation (NumPy reports its buffers to it), so the peak is deterministic for
a given call — unlike wall time, which is reported but never relied on for a verdict. The lean
path's per-thread workspace (:func:`attnsym.numeric._pool.workspace`) is kept between calls, so
a call's peak would depend on what ran before it in the process (and on which worker thread took
which block); :func:`peak_traced_bytes` has every workspace request allocate afresh while it
measures, so the call's own buffers are counted, whatever ran before.
"""

from __future__ import annotations

import math
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ShapeError
from . import _pool

__all__ = ["growth_exponent", "median_seconds", "peak_traced_bytes"]


def peak_traced_bytes(fn: Callable[[], Any]) -> tuple[Any, int]:
    """Run ``fn()`` and return its result and the peak memory it allocated on top of what was live.

    Only allocations reported to :mod:`tracemalloc` count (Python objects and NumPy buffers;
    not PyTorch or CuPy memory).

    Examples
    --------
    >>> _, peak = peak_traced_bytes(lambda: np.ones(1000))   # 8000 bytes of data
    >>> 8000 <= peak < 9000
    True
    """
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        with _pool.fresh_workspace():
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            result = fn()
            peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return result, int(peak)


def median_seconds(fn: Callable[[], Any], repeat: int = 3) -> float:
    """Median wall time of ``repeat`` calls of ``fn()`` after one warm-up call.

    >>> median_seconds(lambda: None, repeat=3) < 1.0
    True
    """
    fn()
    times = []
    for _ in range(max(1, int(repeat))):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def growth_exponent(ns: Sequence[float], values: Sequence[float]) -> float:
    """Least-squares slope of ``log(value)`` against ``log(n)``: ``value ∝ n^slope``.

    >>> round(growth_exponent([1, 2, 4, 8], [3, 12, 48, 192]), 6)
    2.0
    """
    if len(ns) != len(values) or len(ns) < 2:
        raise ShapeError(f"ns and values must have the same length >= 2 (got {len(ns)} and {len(values)})")
    if any(v <= 0 for v in values) or any(n <= 0 for n in ns):
        raise ShapeError(f"ns and values must be positive to take logarithms (got ns={list(ns)}, values={list(values)})")
    x = [math.log(n) for n in ns]
    y = [math.log(v) for v in values]
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sxx = sum((a - mx) ** 2 for a in x)
    if sxx == 0:
        raise ShapeError(f"ns must contain at least two different sizes (got {list(ns)})")
    return sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True)) / sxx
