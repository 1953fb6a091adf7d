"""The cost studies: the exact operation count, measured memory growth and K/V-cache decoding, typed."""

from __future__ import annotations

import dataclasses

import pytest
import sympy as sp

from attnsym.studies import streams
from attnsym.studies.cost import (
    BRUTE_SIZES,
    DecodeSizes,
    MemoryGrowth,
    decode_cost,
    memory_growth,
    operation_count,
    prefix_unchanged,
)


def test_the_operation_count_agrees_three_ways():
    count = operation_count()
    assert count.degrees == (2, 1) and count.memory_degree == 2
    assert count.matches_interpolation and count.matches_brute
    assert set(count.brute) == set(BRUTE_SIZES)
    # NumPy's count of Q Kᵀ and A V is 2·n²·d at each size: the closed form's n² more is the normalisation
    assert all(m == 2 * n * n * d for (n, d), m in count.brute.items())
    n, d = count.n, count.d
    assert sp.expand(count.closed.total - (4 * d * n**2 + 2 * n**2 - d * n)) == 0


def test_memory_growth_properties_judge_the_numbers_they_are_given():
    quadratic = MemoryGrowth((100, 200), 8, 16, (8 * 100**2 + 500, 8 * 200**2 + 500), (40_000, 80_000))
    assert quadratic.plain_holds_a_map and quadratic.one_map == 8 * 200**2
    assert quadratic.plain_exponent == pytest.approx(2.0, abs=0.01)
    assert quadratic.lean_exponent == pytest.approx(1.0)
    assert quadratic.time_exponent is None  # not measured
    below = dataclasses.replace(quadratic, plain_peaks=(8 * 100**2 - 1, 8 * 200**2))
    assert not below.plain_holds_a_map


def test_measured_memory_small_sizes():
    m = memory_growth(streams(0)(), (64, 128), d=8, block=16)
    assert len(m.plain_peaks) == len(m.lean_peaks) == 2 and m.plain_seconds == ()
    assert m.plain_holds_a_map and m.lean_peaks[-1] < m.plain_peaks[-1]


@pytest.fixture(scope="module")
def decoded():
    return decode_cost(streams(0, "kv-cache"), quick=True)


def test_decoding_is_exact_and_counts_agree(decoded):
    assert decoded.sizes == DecodeSizes.of(True) and decoded.sizes.d_k == 2
    assert decoded.exact and max(decoded.cached_errors) < 1e-12 and max(decoded.uncached_errors) < 1e-12
    assert decoded.counter_matches_brute and decoded.closed_form_matches_brute
    assert (decoded.cached_degree, decoded.uncached_degree) == (1, 2)
    assert [s.t for s in decoded.steps] == list(range(1, decoded.sizes.n + 1))
    assert all((s.brute is not None) == (s.t in decoded.probe) for s in decoded.steps)
    assert all(s.cached < s.uncached for s in decoded.steps[1:])
    assert decoded.cache_shape == (2, decoded.sizes.n, 2)
    assert decoded.bidirectional_change > 1e-6


def test_only_a_causal_prefix_is_independent_of_later_tokens():
    assert prefix_unchanged(True) and not prefix_unchanged(False)
