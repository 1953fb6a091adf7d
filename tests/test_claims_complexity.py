"""Cost claims: global-path-length, parallelism, quadratic-cost, kv-cache, blockwise-exact.

Each claim is verified through the engine, and each check is run with a deliberately false
statement that it must report as failing.
"""

import pytest
import sympy as sp

from attnsym.claims import CheckContext, verify
from attnsym.claims.builtin import cost, table1

QUICK = CheckContext(seed=0, quick=True)


@pytest.mark.parametrize(("claim_id", "verdict"), [
    ("global-path-length", "holds-under-conditions"),  # O(log_k n) only for dilated convolutions
    ("parallelism", "holds"),
    ("quadratic-cost", "holds-under-conditions"),      # O(n²) memory only on the plain path
    ("kv-cache", "holds-under-conditions"),            # O(t·d + d²), against a stacked decoder's recomputation
    ("blockwise-exact", "holds"),
])
def test_claim_verdicts(claim_id, verdict):
    ev = verify(claim_id, quick=True, strict=True)
    assert ev.verdict == verdict and ev.as_expected
    assert ev.conditions and ev.summary


def test_self_attention_on_is_false_whatever_restricted_attention_measures():
    # "self-attention needs O(n) steps" is false: restricted self-attention is another row of Table 1, not a variant
    ev = table1.check_table1_column(QUICK, column="path", claimed={"self_attention": "O(n)"})
    assert ev.verdict == "fails"
    assert any("self_attention: claimed O(n), measured O(1)" in f for f in ev.details["failures"])


def test_path_length_condition_names_dilation():
    ev = table1.check_table1_column(QUICK, column="path")
    assert any("dilated_convolution" in c for c in ev.conditions)
    table = {row["architecture"]: row for row in ev.details["table"]}
    assert table["self_attention"]["measured growth"] == "O(1)"
    assert table["recurrent"]["measured growth"] == "O(n)"


def test_quadratic_cost_details():
    ev = cost.check_quadratic_cost(QUICK)
    assert ev.details["closed form == interpolation"]
    assert ev.details["degrees (n, d)"] == (2, 1)
    m = ev.details["measured"]
    assert m["plain peak ≥ one n×n map at every n"] and m["blockwise peak < one n×n map at the largest n"]
    assert m["plain memory exponent"] > 1.5 > 1.0 > m["blockwise memory exponent"]
    assert not any("bytes" in key and key != "bytes of one n×n float64 map at the largest n" for key in m)
    assert "plain seconds" not in m  # wall times only when asked for: the evidence is reproducible
    timed = cost.check_quadratic_cost(QUICK, measure_time=True).details["measured"]
    assert len(timed["plain seconds"]) == len(timed["n"]) and all(t > 0 for t in timed["plain seconds"])


def test_same_seed_same_evidence():
    a, b = cost.check_quadratic_cost(QUICK), cost.check_quadratic_cost(QUICK)
    assert a.summary == b.summary and a.details == b.details
    a, b = cost.check_blockwise_exact(QUICK), cost.check_blockwise_exact(QUICK)
    assert a.summary == b.summary


def test_kv_cache_details():
    ev = cost.check_kv_cache(QUICK)
    assert ev.details["numeric counter = brute-force count"]
    assert max(ev.details["max error per token (cache)"]) < 1e-12
    assert ev.details["non-causal: max change of earlier outputs when a token is appended"] > 1e-6
    assert ev.details["symbolic: causal outputs of 2 tokens unchanged by a 3rd (exact)"]
    assert not ev.details["symbolic: non-causal outputs of 2 tokens unchanged by a 3rd"]


@pytest.mark.parametrize(("check", "wrong"), [
    (table1.check_table1_column, {"column": "path", "claimed": {"recurrent": "O(1)"}}),
    (table1.check_table1_column, {"column": "sequential", "claimed": {"self_attention": "O(n)"}}),
    (table1.check_table1_column, {"column": "sequential", "claimed": {"recurrent": "O(1)"}}),
    (cost.check_quadratic_cost, {"time_degree": (1, 1)}),      # "linear in n"
    (cost.check_quadratic_cost, {"memory_degree": 1}),         # "linear memory" for the plain path
    (cost.check_kv_cache, {"cached_degree": 0}),               # "constant cost per token"
    (cost.check_blockwise_exact, {"rescale": False}),          # merge without e^{m_b − m}
])
def test_false_statements_fail(check, wrong):
    assert check(QUICK, **wrong).verdict == "fails"


def test_bad_arguments():
    with pytest.raises(KeyError, match="unknown architecture"):
        table1.check_table1_column(QUICK, claimed={"transformer-xl": "O(1)"})
    with pytest.raises(ValueError, match="column must be 'path' or 'sequential'"):
        table1.check_table1_column(QUICK, column="depth")


def test_table1_column_attributes_the_convolution_path_correctly():
    # Vaswani et al. 2017, Table 1, "Convolutional": maximum path length O(log_k(n)); O(n/k) is the text's
    # figure for contiguous kernels (section 4), so it must not be presented as Table 1's entry
    ev = table1.check_table1_column(QUICK, column="path")
    paper = {row["architecture"]: row["paper (Table 1)"] for row in ev.details["table"]}
    assert paper["self_attention"] == "O(1)" and paper["recurrent"] == "O(n)" and paper["restricted_self_attention"] == "O(n/r)"
    assert paper["dilated_convolution"] == "O(log_k n)"
    assert paper["convolution"].startswith("O(n/k)") and "Table 1's convolutional row: O(log_k n)" in paper["convolution"]
    rows = table1.check_table1_column(QUICK, column="sequential").details["table"]
    seq = {row["architecture"]: row["paper (Table 1)"] for row in rows}
    assert seq == {"self_attention": "O(1)", "recurrent": "O(n)", "convolution": "O(1)", "dilated_convolution": "O(1)",
                   "restricted_self_attention": "O(1)"}


def test_kv_cache_states_what_the_uncached_baseline_recomputes():
    # quick sizes d = 4, heads = 2 (h·d_k = 4). Rerunning only the last query row of one layer, by hand:
    # K, V of t tokens 2·t·4·4, q 4·4, scores t·4, mixing t·4, W_O 4·4  ->  40 t + 32 (linear in t)
    ev = cost.check_kv_cache(QUICK)
    assert str(ev.details["mul without cache, last query row only (one layer)"]) == "40*t + 32"  # a SymPy polynomial
    assert any("whole prefix" in c and "40*t + 32" in c for c in ev.conditions)


def test_quadratic_cost_count_by_hand_and_projections_named():
    # by hand, one head: Q Kᵀ n²·d mul + n²(d−1) add; softmax n² exp, n(n−1) add, n div, n² mul (by 1/sum);
    # A V n²·d mul + n·d(n−1) add  ->  4 d n² + 2 n² − d n in all, with no projection terms
    ev = cost.check_quadratic_cost(QUICK)
    (title, eq), = [(t, e) for t, e in ev.equations if t.startswith("operations of one head")]
    assert "projections not counted" in title
    n, d = 7, 5
    assert eq.rhs.subs({s: {"n": n, "d": d}[s.name] for s in eq.rhs.free_symbols}) == 4 * d * n**2 + 2 * n**2 - d * n
    assert any("projections X W, not counted" in c for c in ev.conditions)


def test_kv_cache_counts_agree_with_a_brute_force_count_and_state_the_d_squared_term():
    ev = cost.check_kv_cache(QUICK)
    assert ev.details["numeric counter = brute-force count"] and ev.details["closed form = brute-force count"]
    d = sp.Symbol("d", positive=True, integer=True)
    t = sp.Symbol("t", positive=True, integer=True)
    assert sp.expand(ev.details["mul with cache, one head of width d"] - (4 * d**2 + 2 * d * t)) == 0
    assert any("O(t·d + d²)" in c for c in ev.conditions)
