"""Sample moments merged across blocks, normal quantiles, and the sample size for a wanted precision.

Moments are accumulated as centred power sums and merged with the pairwise formulas of
Pébay (2008), so a large mean does not destroy the variance estimate. For a sample variance
``s^2`` of ``N`` i.i.d. draws, ``Var[s^2] ≈ (mu_4 - sigma^4) / N``; :func:`samples_for_precision`
inverts it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from ..._checks import positive_int
from ...errors import SpecError

__all__ = ["SampleMoments", "samples_for_precision", "z_value"]


def z_value(level: float = 0.95, *, tests: int = 1) -> float:
    """Two-sided normal quantile for ``level``, Bonferroni-corrected for ``tests`` simultaneous intervals.

    >>> round(z_value(0.95), 3)
    1.96
    >>> round(z_value(0.95, tests=10), 3)
    2.807
    """
    if not 0 < level < 1:
        raise SpecError(f"level must lie strictly between 0 and 1 (got {level!r})")
    tests = positive_int("tests", tests)
    return NormalDist().inv_cdf(1 - (1 - level) / (2 * tests))


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


