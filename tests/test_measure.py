"""Measurement helpers: traced peak memory, median time, growth exponents."""

import numpy as np
import pytest

from attnsym.errors import ShapeError
from attnsym.numeric.measure import growth_exponent, median_seconds, peak_traced_bytes


def test_peak_memory_counts_numpy_buffers():
    result, peak = peak_traced_bytes(lambda: np.zeros((100, 100)) + 1.0)
    assert result.shape == (100, 100)
    assert 80_000 <= peak < 2 * 80_000 + 10_000  # one or two 80 kB temporaries


def test_growth_exponent_exact_powers():
    ns = [2, 4, 8, 16]
    assert growth_exponent(ns, [n**2 for n in ns]) == pytest.approx(2.0)
    assert growth_exponent(ns, [5 * n for n in ns]) == pytest.approx(1.0)


def test_growth_exponent_errors():
    with pytest.raises(ShapeError, match="same length"):
        growth_exponent([1, 2], [1])
    with pytest.raises(ShapeError, match="positive"):
        growth_exponent([1, 2], [0, 1])
    with pytest.raises(ShapeError, match="two different sizes"):
        growth_exponent([2, 2], [1, 1])


def test_median_seconds_runs_the_function():
    calls = []
    assert median_seconds(lambda: calls.append(1), repeat=3) >= 0
    assert len(calls) == 4  # one warm-up + three timed
