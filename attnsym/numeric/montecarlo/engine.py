"""The sampling engine: fixed blocks on independent streams, run on threads, merged in block order.

Block ``b`` of a run draws from ``Generator(SFC64(SeedSequence(seed).spawn(n_blocks)[b]))`` and the
per-block moments are merged in block order, so a result depends on the seed only, never on the
number of workers.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from ..._checks import positive_int
from ...errors import SpecError
from .moments import SampleMoments

__all__ = [
    "BLOCK_SAMPLES",
    "CHUNK_DRAWS",
    "blas_single_thread",
    "block_sizes",
    "default_workers",
    "normal_rate",
    "run_blocks",
    "sample_statistic",
    "seed_sequence",
]

#: normal draws per chunk buffer (2 MiB of float64): fits the L2 cache of one core
CHUNK_DRAWS = 1 << 18
#: samples per independent stream (one seed child each)
BLOCK_SAMPLES = 1 << 16


def default_workers() -> int:
    """Threads used when ``workers`` is not given: the CPUs this process may run on (at most 8)."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        count = os.cpu_count() or 1
    return max(1, min(8, count))


def seed_sequence(seed: Any) -> np.random.SeedSequence:
    """``seed`` as a :class:`numpy.random.SeedSequence` (a non-negative integer or a sequence itself).

    >>> seed_sequence(3).entropy
    3
    """
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise SpecError(f"seed must be a non-negative integer or a numpy SeedSequence (got {seed!r})")
    return np.random.SeedSequence(int(seed))


def block_sizes(n_samples: int, block: int) -> list[int]:
    """Fixed block lengths covering ``n_samples`` (all ``block`` long but the last).

    >>> block_sizes(10, 4)
    [4, 4, 2]
    """
    full, rest = divmod(n_samples, block)
    return [block] * full + ([rest] if rest else [])


def sample_statistic(
    sampler: Callable[[np.random.Generator, int], np.ndarray],
    n_samples: int,
    *,
    seed: Any = 0,
    workers: int | None = None,
    block: int = BLOCK_SAMPLES,
    progress: Callable[[int, int], None] | None = None,
) -> SampleMoments:
    """Moments of ``n_samples`` draws of a statistic, in blocks on independent streams and threads.

    Parameters
    ----------
    sampler : callable ``(rng, size) -> 1-D array of length size``
        Draws ``size`` samples of the statistic from ``rng``.
    n_samples : int
    seed : int or numpy.random.SeedSequence
        Block ``b`` uses the generator ``Generator(SFC64(SeedSequence(seed).spawn(n_blocks)[b]))``.
    workers : int, optional
        Threads (default :func:`default_workers`). The result does not depend on it.
    block : int
        Samples per stream.
    progress : callable ``(done_samples, n_samples) -> None``, optional
        Called (from the calling thread) as blocks finish, in order.

    Examples
    --------
    >>> est = sample_statistic(lambda rng, size: rng.standard_normal(size), 100_000, seed=1)
    >>> round(est.variance, 2), round(est.kurtosis, 1)
    (1.0, 3.0)
    """
    n_samples = positive_int("n_samples", n_samples)
    block = positive_int("block", block)
    workers = default_workers() if workers is None else positive_int("workers", workers)
    sizes = block_sizes(n_samples, block)
    children = seed_sequence(seed).spawn(len(sizes))

    def run(b: int) -> SampleMoments:
        rng = np.random.Generator(np.random.SFC64(children[b]))
        x = np.asarray(sampler(rng, sizes[b]))
        if x.shape != (sizes[b],):
            raise SpecError(f"sampler must return a 1-D array of length size={sizes[b]} (got shape {x.shape})")
        return SampleMoments.of(x)

    total: SampleMoments | None = None
    done = 0
    for b, part in enumerate(run_blocks(run, len(sizes), workers)):
        total = part if total is None else total.merge(part)
        done += sizes[b]
        if progress is not None:
            progress(done, n_samples)
    assert total is not None
    return total


def run_blocks(run: Callable[[int], Any], n_blocks: int, workers: int) -> Iterator[Any]:
    """``run(b)`` for every block, on ``workers`` threads; results yielded in block order."""
    if workers == 1 or n_blocks == 1:
        yield from map(run, range(n_blocks))
        return
    with ThreadPoolExecutor(max_workers=min(workers, n_blocks)) as pool:
        yield from pool.map(run, range(n_blocks))


def blas_single_thread() -> threadpool_limits:
    """A context that keeps BLAS to one thread (threads of our own already use the cores)."""
    return threadpool_limits(1, user_api="blas")


def normal_rate(seconds: float = 0.5, *, workers: int = 1, seed: int = 0) -> float:
    """Measured standard-normal draws per second into a reused buffer (the generator's ceiling).

    Used by the benchmark to quote the fraction of the generator's rate that the Monte Carlo
    reaches. ``workers`` threads draw concurrently on independent streams.
    """
    workers = positive_int("workers", workers)
    children = seed_sequence(seed).spawn(workers)

    def run(w: int) -> int:
        rng = np.random.Generator(np.random.SFC64(children[w]))
        buf = np.empty(CHUNK_DRAWS)
        count = 0
        stop = time.perf_counter() + seconds
        while time.perf_counter() < stop:
            rng.standard_normal(out=buf)
            count += buf.size
        return count

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        total = sum(pool.map(run, range(workers)))
    return total / (time.perf_counter() - start)
