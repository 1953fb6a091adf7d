"""The experiments behind the √d scaling claims: score variance against ``d``, score entries, score rows.

For ``q·k`` with ``N(0, 1)`` components the kurtosis is ``3 + 6/d`` (exact,
:mod:`attnsym.symbolic.stats`), so every interval here uses the exact fourth moment.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..._checks import positive_int
from ...errors import SpecError
from .dot_products import dot_product_moments
from .engine import blas_single_thread, block_sizes, default_workers, run_blocks, seed_sequence
from .moments import SampleMoments, samples_for_precision, z_value

__all__ = ["score_entry_moments", "score_rows", "score_variance"]

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
    children = seed_sequence(seed).spawn(len(dims))
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
    sizes = block_sizes(reps, 32)  # fixed blocks: the result does not depend on workers
    streams = seed_sequence(seed).spawn(len(sizes))
    with blas_single_thread():  # BLAS threads on top of ours oversubscribe the cores (15x slower here)
        parts = list(run_blocks(lambda b: sampler(np.random.Generator(np.random.SFC64(streams[b])), sizes[b]),
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
