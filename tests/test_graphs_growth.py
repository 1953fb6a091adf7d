"""The growth decision of Table 1 over the full candidate set, across kernel widths k and windows r."""

from __future__ import annotations

import math

import pytest

from attnsym.claims import CheckContext
from attnsym.claims.builtin import table1
from attnsym.errors import ShapeError
from attnsym.graphs.architectures import max_path_length, sequential_depth
from attnsym.graphs.growth import CANDIDATES, decide_growth

EXPECTED_PATH = {"self_attention": ("O(1)", "O(1)"), "recurrent": ("O(n)", "O(n)"), "convolution": ("O(n)", "O(n/k)"),
                 "dilated_convolution": ("O(log n)", "O(log_k n)"), "restricted_self_attention": ("O(n)", "O(n/r)")}


@pytest.mark.parametrize(("k", "r", "top"), [(2, 1, 16), (3, 4, 16), (4, 3, 16), (8, 2, 16), (5, 8, 40)])
@pytest.mark.parametrize("arch", sorted(EXPECTED_PATH))
def test_path_growth_is_decided_right_across_k_and_r(arch, k, r, top):
    ns = range(2, top + 1)
    if arch == "restricted_self_attention" and r >= top // 2:
        pytest.skip("a window r ≥ n/2 reaches across the sequence in at most two layers: nothing to classify")
    d = decide_growth(ns, [max_path_length(arch, n, k=k, r=r) for n in ns], k=k, r=r)
    growth, candidate = EXPECTED_PATH[arch]
    assert d.growth == growth, (d.explained_by, d.spread)
    assert candidate in d.explained_by


@pytest.mark.parametrize(("k", "r"), [(3, 4), (5, 8)])
def test_sequential_depth_growth(k, r):
    ns = range(2, 17)
    for arch in EXPECTED_PATH:
        d = decide_growth(ns, [sequential_depth(arch, n, k=k, r=r) for n in ns], k=k, r=r)
        assert d.growth == ("O(n)" if arch == "recurrent" else "O(1)"), arch


def test_the_issue_cases_that_least_squares_got_wrong():
    # dilated convolution, k = 5 over n = 2..40 and k = 8 over n = 2..16: logarithmic, not linear
    for k, r, top in ((5, 8, 40), (8, 2, 16)):
        ns = range(2, top + 1)
        values = [max_path_length("dilated_convolution", n, k=k, r=r) for n in ns]
        assert decide_growth(ns, values, k=k, r=r).growth == "O(log n)"
    # k = 8, r = 8 over 2..16: the values 1, …, 1, 2 are n/8 as much as log_8 n — said, not guessed
    ns = range(2, 17)
    d = decide_growth(ns, [max_path_length("dilated_convolution", n, k=8, r=8) for n in ns], k=8, r=8)
    assert d.growth == "undecided" and d.explained_by == ("O(log_k n)", "O(n/r)")


def test_ambiguous_values_are_undecided_not_guessed():
    d = decide_growth(range(2, 17), [max_path_length("restricted_self_attention", n, k=5, r=8) for n in range(2, 17)],
                      k=5, r=8)
    assert d.growth == "undecided" and len(d.explained_by) == 2 and not d.decided
    assert decide_growth([2, 3, 4], [7, 1, 9], k=3, r=2).explained_by == ()
    assert set(d.spread) == set(CANDIDATES) and "undecided" in d.rule


def test_decision_rule_by_hand():
    # ceil(log_3 n) - f has spread < 1 exactly; a line of slope 1/2 does not follow it
    ns = list(range(2, 41))
    y = [math.ceil(math.log(n, 3) - 1e-12) for n in ns]
    d = decide_growth(ns, y, k=3, r=4)
    assert d.spread["O(log_k n)"] < 1 <= d.spread["O(n/k)"]


def test_bad_input():
    with pytest.raises(ShapeError, match="same length >= 3"):
        decide_growth([1, 2], [1, 2], k=3, r=2)
    with pytest.raises(ShapeError, match="k must be at least 2"):
        decide_growth([1, 2, 3], [1, 2, 3], k=1, r=2)


def test_restricted_self_attention_is_not_a_variant_of_self_attention():
    # the false claim "self-attention has path length O(n)" must fail, not hold under conditions
    ev = table1.check_table1_column(CheckContext(quick=True), column="path", claimed={"self_attention": "O(n)"})
    assert ev.verdict == "fails"
    ev = table1.check_table1_column(CheckContext(quick=True), column="path", claimed={"convolution": "O(log_k n)"})
    assert ev.verdict == "holds-under-conditions" and "dilated_convolution" in ev.conditions[0]
