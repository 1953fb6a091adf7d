"""Seeded, chunked, multi-threaded Monte Carlo for the statistics of attention scores.

The experiments here are bound by random-number generation: a dot product of two ``d``-vectors
needs ``2 d`` normal draws and only ``2 d`` flops. So they

* draw into preallocated ``(2 d, c)`` buffers (``Generator.standard_normal(out=...)``, the
  fastest path NumPy has, with the ``SFC64`` bit generator) and reduce over the first axis;
* split the samples into fixed **blocks**, each with its own independent stream from
  ``SeedSequence(seed).spawn(n_blocks)``, run the blocks on a thread pool (NumPy releases the
  GIL while it fills arrays and while it multiplies and sums), and merge the per-block moments
  **in block order** — so the result depends on the seed only, not on the number of workers;
* keep memory bounded: one ``(2 d, c)`` buffer of about 2 MiB per worker, whatever the sample size.

Moments are accumulated as centred power sums and merged with the pairwise formulas of
Pébay (2008), so a large mean does not destroy the variance estimate.

How many samples? For a sample variance ``s^2`` of ``N`` i.i.d. draws,
``Var[s^2] ≈ (mu_4 - sigma^4) / N``, i.e. a *relative* standard error
``sqrt((kappa - 1) / N)`` with ``kappa = mu_4 / sigma^4`` the kurtosis. For ``q·k`` with
``N(0, 1)`` components ``kappa = 3 + 6/d`` (exact, :mod:`attnsym.symbolic.stats`), hence the
rule ``SE ≈ sqrt((2 + 6/d) / N)``, and :func:`samples_for_precision` inverts it:
``N = z^2 (kappa - 1) / eps^2`` for a confidence-interval half-width ``eps`` (relative).

>>> from attnsym.numeric import montecarlo as mc
>>> est = mc.dot_product_moments(64, 40_000, seed=0)
>>> bool(abs(est.variance - 64) < 4 * est.se_variance(fourth_central=3 * 64**2 + 6 * 64))
True
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import positive_int
from ..errors import SpecError

__all__ = [
    "LAWS",
    "SampleMoments",
    "default_workers",
    "dot_product_moments",
    "dot_products",
    "normal_rate",
    "sample_statistic",
    "samples_for_precision",
    "score_entry_moments",
    "score_rows",
    "score_variance",
    "z_value",
]

#: normal draws per chunk buffer (2 MiB of float64): fits the L2 cache of one core
CHUNK_DRAWS = 1 << 18
#: standardised component laws the dot-product sampler draws from
LAWS = ("normal", "uniform", "rademacher")
#: samples per independent stream (one seed child each)
BLOCK_SAMPLES = 1 << 16


def default_workers() -> int:
    """Threads used when ``workers`` is not given: the CPUs this process may run on (at most 8)."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        count = os.cpu_count() or 1
    return max(1, min(8, count))


def _seed_sequence(seed: Any) -> np.random.SeedSequence:
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise SpecError(f"seed must be a non-negative integer or a numpy SeedSequence (got {seed!r})")
    return np.random.SeedSequence(int(seed))


def z_value(level: float = 0.95, *, tests: int = 1) -> float:
    """Two-sided normal quantile for ``level``, Bonferroni-corrected for ``tests`` simultaneous intervals.

    >>> round(z_value(0.95), 3)
    1.96
    >>> round(z_value(0.95, tests=10), 3)
    2.807
    """
    from scipy.special import ndtri

    if not 0 < level < 1:
        raise SpecError(f"level must lie strictly between 0 and 1 (got {level!r})")
    tests = positive_int("tests", tests)
    return float(ndtri(1 - (1 - level) / (2 * tests)))


def samples_for_precision(rel_error: float, kurtosis: float, *, level: float = 0.95, tests: int = 1) -> int:
    """Samples so that the ``level`` interval of a variance estimate has relative half-width ``rel_error``.

    ``N = z^2 (kurtosis - 1) / rel_error^2`` from ``Var[s^2] ≈ (mu_4 - sigma^4)/N``.

    >>> samples_for_precision(0.01, 3 + 6 / 64)   # q·k, d = 64, ±1 % at 95 %: 1.96² (2 + 6/64) / 0.01²
    80431
    """
    if not rel_error > 0:
        raise SpecError(f"rel_error must be positive (got {rel_error!r})")
    if not kurtosis >= 1:
        raise SpecError(f"kurtosis must be >= 1 (got {kurtosis!r}; every distribution has mu_4 >= sigma^4)")
    z = z_value(level, tests=tests)
    return max(2, math.ceil(z * z * (kurtosis - 1) / rel_error**2))


@dataclass(frozen=True)
class SampleMoments:
    """Mean and central moments of ``n`` i.i.d. samples of a statistic.

    Attributes
    ----------
    n : int
    mean : float
    m2, m3, m4 : float
        Centred power sums ``sum (x - mean)^r`` (merged exactly across blocks).
    """

    n: int
    mean: float
    m2: float
    m3: float
    m4: float

    @classmethod
    def of(cls, x: np.ndarray) -> SampleMoments:
        """Moments of the samples in a 1-D array."""
        x = np.asarray(x, dtype=np.float64).ravel()
        if x.size == 0:
            raise SpecError("need at least one sample")
        mean = float(x.mean())
        dev = x - mean
        dev2 = dev * dev
        return cls(x.size, mean, float(dev2.sum()), float((dev2 * dev).sum()), float((dev2 * dev2).sum()))

    def merge(self, other: SampleMoments) -> SampleMoments:
        """The moments of both sample sets together (Pébay 2008, exact up to rounding)."""
        na, nb = self.n, other.n
        n = na + nb
        delta = other.mean - self.mean
        mean = self.mean + delta * nb / n
        m2 = self.m2 + other.m2 + delta**2 * na * nb / n
        m3 = self.m3 + other.m3 + delta**3 * na * nb * (na - nb) / n**2 + 3 * delta * (na * other.m2 - nb * self.m2) / n
        m4 = (self.m4 + other.m4 + delta**4 * na * nb * (na * na - na * nb + nb * nb) / n**3
              + 6 * delta**2 * (na * na * other.m2 + nb * nb * self.m2) / n**2
              + 4 * delta * (na * other.m3 - nb * self.m3) / n)
        return SampleMoments(n, mean, m2, m3, m4)

    @property
    def variance(self) -> float:
        """Unbiased sample variance ``m2 / (n - 1)``."""
        return self.m2 / (self.n - 1) if self.n > 1 else math.nan

    @property
    def fourth_central(self) -> float:
        """Sample fourth central moment ``m4 / n``."""
        return self.m4 / self.n

    @property
    def kurtosis(self) -> float:
        """Sample kurtosis ``mu_4 / sigma^4``."""
        return self.fourth_central / (self.m2 / self.n) ** 2

    def se_mean(self, variance: float | None = None) -> float:
        """Standard error of the mean, ``sqrt(variance / n)`` (the exact variance when given)."""
        return math.sqrt((self.variance if variance is None else variance) / self.n)

    def se_variance(self, fourth_central: float | None = None, variance: float | None = None) -> float:
        """Standard error of the sample variance, ``sqrt((mu_4 - sigma^4) / n)``.

        With ``fourth_central`` (and ``variance``) from exact theory the error bar is a
        prediction, not an estimate; without, the sample moments are used.
        """
        mu4 = self.fourth_central if fourth_central is None else float(fourth_central)
        var = self.variance if variance is None else float(variance)
        return math.sqrt(max(mu4 - var * var, 0.0) / self.n)

    def variance_interval(self, level: float = 0.95, *, tests: int = 1, fourth_central: float | None = None,
                          variance: float | None = None) -> tuple[float, float]:
        """Normal-approximation interval for the variance (Bonferroni over ``tests`` intervals)."""
        half = z_value(level, tests=tests) * self.se_variance(fourth_central, variance)
        return (self.variance - half, self.variance + half)

    def mean_interval(self, level: float = 0.95, *, tests: int = 1, variance: float | None = None) -> tuple[float, float]:
        """Normal-approximation interval for the mean."""
        half = z_value(level, tests=tests) * self.se_mean(variance)
        return (self.mean - half, self.mean + half)


def _block_sizes(n_samples: int, block: int) -> list[int]:
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
    sizes = _block_sizes(n_samples, block)
    children = _seed_sequence(seed).spawn(len(sizes))

    def run(b: int) -> SampleMoments:
        rng = np.random.Generator(np.random.SFC64(children[b]))
        x = np.asarray(sampler(rng, sizes[b]))
        if x.shape != (sizes[b],):
            raise SpecError(f"sampler must return a 1-D array of length size={sizes[b]} (got shape {x.shape})")
        return SampleMoments.of(x)

    total: SampleMoments | None = None
    done = 0
    for b, part in enumerate(_run_blocks(run, len(sizes), workers)):
        total = part if total is None else total.merge(part)
        done += sizes[b]
        if progress is not None:
            progress(done, n_samples)
    assert total is not None
    return total


def _run_blocks(run: Callable[[int], Any], n_blocks: int, workers: int):
    """``run(b)`` for every block, on ``workers`` threads; results yielded in block order."""
    if workers == 1 or n_blocks == 1:
        yield from map(run, range(n_blocks))
        return
    with ThreadPoolExecutor(max_workers=min(workers, n_blocks)) as pool:
        yield from pool.map(run, range(n_blocks))


def dot_products(
    rng: np.random.Generator,
    size: int,
    d: int,
    *,
    mean_q: float = 0.0,
    std_q: float = 1.0,
    mean_k: float = 0.0,
    std_k: float = 1.0,
    same: bool = False,
    scale: float = 1.0,
    law: str = "normal",
) -> np.ndarray:
    """``size`` draws of ``scale * q·k`` with ``q_i ~ N(mean_q, std_q^2)``, ``k_i ~ N(mean_k, std_k^2)`` i.i.d.

    With ``same=True``, ``k = q`` (``scale * q·q``). Draws ``(2 d, c)`` chunks of about
    :data:`CHUNK_DRAWS` normals into one reused buffer. ``law`` picks the standardised law of the
    components before ``mean + std * z``: ``"normal"``, ``"uniform"`` (``U(-sqrt 3, sqrt 3)``) or
    ``"rademacher"`` (±1) — all with mean 0 and variance 1.

    >>> rng = np.random.default_rng(0)
    >>> dot_products(rng, 5, 3).shape
    (5,)
    """
    size = positive_int("size", size)
    d = positive_int("d", d)
    if law not in LAWS:
        raise SpecError(f"law must be one of {LAWS} (got {law!r})")
    rows = d if same else 2 * d
    c = max(1, min(size, CHUNK_DRAWS // rows))
    buf = np.empty((rows, c))
    tmp = np.empty((d, c))
    out = np.empty(size)
    affine_q = mean_q != 0 or std_q != 1
    affine_k = (mean_k != 0 or std_k != 1) and not same
    for start in range(0, size, c):
        m = min(c, size - start)
        if m < c:  # the last, partial chunk: smaller contiguous buffers
            buf, tmp = np.empty((rows, m)), np.empty((d, m))
        if law == "normal":
            rng.standard_normal(out=buf)  # (rows, m)
        else:
            rng.random(out=buf)  # U(0, 1)
            if law == "uniform":
                buf -= 0.5
                buf *= 2 * math.sqrt(3.0)
            else:
                np.copysign(1.0, buf - 0.5, out=buf)
        q = buf[:d]  # (d, m)
        k = q if same else buf[d:]  # (d, m)
        if affine_q:
            q *= std_q
            q += mean_q
        if affine_k:
            k *= std_k
            k += mean_k
        np.multiply(q, k, out=tmp)
        tmp.sum(axis=0, out=out[start:start + m])
    if scale != 1:
        out *= scale
    return out


def dot_product_moments(
    d: int,
    n_samples: int,
    *,
    mean_q: float = 0.0,
    std_q: float = 1.0,
    mean_k: float = 0.0,
    std_k: float = 1.0,
    same: bool = False,
    scale: float = 1.0,
    law: str = "normal",
    seed: Any = 0,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SampleMoments:
    """Monte Carlo moments of ``scale * q·k`` (see :func:`dot_products`), seeded and multi-threaded.

    >>> est = dot_product_moments(16, 50_000, seed=3)
    >>> lo, hi = est.variance_interval(0.999, fourth_central=3 * 16**2 + 6 * 16, variance=16)
    >>> bool(lo <= 16 <= hi)
    True
    """
    d = positive_int("d", d)

    def sampler(rng: np.random.Generator, size: int) -> np.ndarray:
        return dot_products(rng, size, d, mean_q=mean_q, std_q=std_q, mean_k=mean_k, std_k=std_k, same=same, scale=scale,
                            law=law)

    # blocks of about 2^22 normal draws (tens of ms): enough blocks for every worker, few merges
    block = max(256, (1 << 22) // (d if same else 2 * d))
    return sample_statistic(sampler, n_samples, seed=seed, workers=workers, block=block, progress=progress)


#: dimensions of the score-variance experiment by default: 1, 2, 4, …, 4096
_DEFAULT_DIMS = tuple(2**k for k in range(13))


def score_variance(
    d: Sequence[int] = _DEFAULT_DIMS,
    samples: int | None = None,
    *,
    seed: Any = 0,
    rel_error: float = 0.02,
    level: float = 0.95,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, np.ndarray]:
    """Var[q·k] and Var[q·k/√d] for ``q, k ~ N(0, I_d)`` at each ``d``, with intervals from the exact fourth moment.

    Parameters
    ----------
    d : sequence of int, default 1, 2, 4, ..., 4096
    samples : int, optional
        Samples per ``d``. By default chosen per ``d`` by :func:`samples_for_precision` so that
        the ``level`` interval has relative half-width ``rel_error`` (kurtosis ``3 + 6/d``).
    seed : int
        Each ``d`` gets its own child stream of ``SeedSequence(seed)``.

    Returns
    -------
    dict
        ``d``, ``samples``, ``unscaled``, ``scaled`` (estimates), ``unscaled_ci``, ``scaled_ci``
        (shape ``(len(d), 2)``, ``level`` intervals with ``SE = sqrt((mu_4 - sigma^4)/N)`` from
        the exact ``mu_4 = 3 d^2 + 6 d``), ``exact_unscaled`` (= d), ``exact_scaled`` (= 1),
        ``se_unscaled``, ``se_scaled``, ``z`` (the quantile used).

    Examples
    --------
    >>> r = score_variance([1, 64], seed=0, rel_error=0.05)
    >>> r["samples"].tolist()
    [12293, 3218]
    >>> bool(np.all((r["scaled_ci"][:, 0] <= 1) & (1 <= r["scaled_ci"][:, 1])))
    True
    """
    dims = [positive_int("d", int(v)) for v in d]
    children = _seed_sequence(seed).spawn(len(dims))
    z = z_value(level)
    counts = []
    for dim in dims:
        counts.append(samples_for_precision(rel_error, 3 + 6 / dim, level=level) if samples is None
                      else positive_int("samples", samples))
    total = sum(c * dd for c, dd in zip(counts, dims, strict=True))
    done = 0
    est, se = [], []
    for dim, n, child in zip(dims, counts, children, strict=True):
        m = dot_product_moments(dim, n, seed=child, workers=workers)
        mu4 = 3.0 * dim * dim + 6.0 * dim  # exact: kappa_4 = 6 d, sigma^2 = d
        est.append(m.variance)
        se.append(m.se_variance(fourth_central=mu4, variance=float(dim)))
        done += n * dim
        if progress is not None:
            progress(done, total)
    darr = np.array(dims, dtype=np.int64)
    unscaled, se_u = np.array(est), np.array(se)
    scaled, se_s = unscaled / darr, se_u / darr
    out: dict[str, Any] = {
        "d": darr,
        "samples": np.array(counts, dtype=np.int64),
        "unscaled": unscaled,
        "scaled": scaled,
        "se_unscaled": se_u,
        "se_scaled": se_s,
        "unscaled_ci": np.stack([unscaled - z * se_u, unscaled + z * se_u], axis=1),
        "scaled_ci": np.stack([scaled - z * se_s, scaled + z * se_s], axis=1),
        "exact_unscaled": darr.astype(np.float64),
        "exact_scaled": np.ones(len(dims)),
        "z": np.float64(z),
    }
    return out


def score_entry_moments(
    d_model: int,
    d_k: int,
    *,
    var_x: float = 1.0,
    var_wq: float = 1.0,
    var_wk: float = 1.0,
    n_tokens: int = 16,
    reps: int = 400,
    scale: float = 1.0,
    seed: Any = 0,
    workers: int | None = None,
) -> dict[str, float]:
    """Mean square of the entries of ``scale * (X W_Q)(X W_K)^T`` for Gaussian X, W_Q, W_K.

    Each repetition draws ``X`` ``(n_tokens, d_model)`` with ``N(0, var_x)`` entries and
    independent ``W_Q``, ``W_K`` ``(d_model, d_k)`` with ``N(0, var_wq)``, ``N(0, var_wk)``
    entries, and records the mean of the squared off-diagonal and diagonal score entries. The
    entries of one repetition are correlated (they share the weights), so the standard errors
    come from the spread *between* the independent repetitions (batch means).

    Returns
    -------
    dict
        ``off_diagonal``, ``off_diagonal_se``, ``diagonal``, ``diagonal_se``, ``reps``.

    Examples
    --------
    >>> r = score_entry_moments(32, 8, reps=200, seed=0)      # exact off-diagonal: 8 * 32**2 = 8192
    >>> bool(abs(r["off_diagonal"] - 8192) < 4 * r["off_diagonal_se"])
    True
    """
    d_model = positive_int("d_model", d_model)
    d_k = positive_int("d_k", d_k)
    n_tokens = positive_int("n_tokens", n_tokens)
    reps = positive_int("reps", reps)
    if n_tokens < 2:
        raise SpecError(f"n_tokens must be at least 2 for off-diagonal entries (got {n_tokens})")
    off_mask = ~np.eye(n_tokens, dtype=bool)
    sx, sq, sk = math.sqrt(var_x), math.sqrt(var_wq), math.sqrt(var_wk)

    def sampler(rng: np.random.Generator, size: int) -> np.ndarray:
        res = np.empty((size, 2))
        for r in range(size):
            X = rng.standard_normal((n_tokens, d_model)) * sx  # (n, d_model)
            W_Q = rng.standard_normal((d_model, d_k)) * sq  # (d_model, d_k)
            W_K = rng.standard_normal((d_model, d_k)) * sk
            S = scale * ((X @ W_Q) @ (X @ W_K).T)  # (n, n)
            S2 = S * S
            res[r, 0] = S2[off_mask].mean()
            res[r, 1] = np.diagonal(S2).mean()
        return res

    workers = default_workers() if workers is None else positive_int("workers", workers)
    sizes = _block_sizes(reps, 32)  # fixed blocks: the result does not depend on workers
    streams = _seed_sequence(seed).spawn(len(sizes))
    with _blas_single_thread():  # BLAS threads on top of ours oversubscribe the cores (15x slower here)
        parts = list(_run_blocks(lambda b: sampler(np.random.Generator(np.random.SFC64(streams[b])), sizes[b]),
                                 len(sizes), workers))
    values = np.concatenate(parts, axis=0)
    off, diag = SampleMoments.of(values[:, 0]), SampleMoments.of(values[:, 1])
    return {
        "off_diagonal": off.mean,
        "off_diagonal_se": off.se_mean() if reps > 1 else math.nan,
        "diagonal": diag.mean,
        "diagonal_se": diag.se_mean() if reps > 1 else math.nan,
        "reps": reps,
    }


def score_rows(rng: np.random.Generator, rows: int, n: int, d: int, *, scale: float = 1.0) -> np.ndarray:
    """``rows`` independent rows of scores ``scale * q·k_j``, ``j = 1..n``, for ``q, k_j ~ N(0, I_d)`` independent.

    Drawn in ``O(n)`` per row instead of ``O(n d)``: given ``q``, the scores ``q·k_j`` are i.i.d.
    ``N(0, ||q||^2)`` (a fixed linear functional of a standard normal vector), and
    ``||q||^2 ~ chi^2_d``. So a row is ``sqrt(chi2_d) * z`` with ``z ~ N(0, I_n)`` — the same joint
    law as forming ``q`` and the ``k_j`` explicitly (tested against that in the test suite).

    Returns
    -------
    numpy.ndarray, shape (rows, n)

    Examples
    --------
    >>> S = score_rows(np.random.default_rng(0), 20_000, 4, 64)
    >>> round(float(S.var()) / 64, 1)
    1.0
    """
    rows, n, d = (positive_int(k, v) for k, v in (("rows", rows), ("n", n), ("d", d)))
    norm = np.sqrt(rng.chisquare(d, size=(rows, 1)))  # ||q||, (rows, 1)
    return (scale * norm) * rng.standard_normal((rows, n))  # (rows, n)


def _blas_single_thread():
    """A context that keeps BLAS to one thread (threads of our own already use the cores)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def normal_rate(seconds: float = 0.5, *, workers: int = 1, seed: int = 0) -> float:
    """Measured standard-normal draws per second into a reused buffer (the generator's ceiling).

    Used by the benchmark to quote the fraction of the generator's rate that the Monte Carlo
    reaches. ``workers`` threads draw concurrently on independent streams.
    """
    import time

    workers = positive_int("workers", workers)
    children = _seed_sequence(seed).spawn(workers)

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
