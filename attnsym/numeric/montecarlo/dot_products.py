"""Dot products ``q·k`` of random vectors drawn into preallocated buffers, and their moments.

A dot product of two ``d``-vectors needs ``2 d`` normal draws and only ``2 d`` flops, so the
sampler draws into one reused ``(2 d, c)`` buffer (``Generator.standard_normal(out=...)``) and
reduces over the first axis.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._checks import positive_int
from ...errors import SpecError
from .engine import CHUNK_DRAWS, sample_statistic
from .moments import SampleMoments

__all__ = ["LAWS", "dot_product_moments", "dot_products"]

#: standardised component laws the dot-product sampler draws from
LAWS = ("normal", "uniform", "rademacher")


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
