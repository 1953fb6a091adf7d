"""Operation counts: closed form vs the SymPy expression graph vs interpolation vs the numeric K/V decoder."""

import itertools

import numpy as np
import pytest
import sympy as sp

from attnsym.errors import SizeLimitError, SpecError
from attnsym.numeric.kvcache import causal_decode
from attnsym.symbolic.opcount import (
    attention_opcount,
    count_attention_graph,
    decode_step_opcount,
    interpolate_opcount,
    size_symbols,
)


def test_hand_count_n2_d1():
    # S = Q Kᵀ: 4 products, no additions (d=1); softmax: 4 exp, 2 row sums of 2 terms (2 additions),
    # 2 reciprocals, 4 products; Z = A V: 4 products, 2 additions
    counts = count_attention_graph(2, 1, scaled=False)
    assert counts["total"] == {"mul": 12, "add": 4, "exp": 4, "div": 2}
    assert counts["stages"]["scores"]["mul"] == 4 and counts["stages"]["softmax"]["add"] == 2
    assert counts["stages"]["softmax"] == {"mul": 4, "add": 2, "exp": 4, "div": 2}


@pytest.mark.parametrize(("n", "d_k", "d_v", "scaled"), [
    (n, k, v, s) for n, k, v, s in itertools.product((2, 3, 4), (1, 2, 3), (1, 2), (False, True))
])
def test_closed_form_equals_graph_count(n, d_k, d_v, scaled):
    closed = attention_opcount(n, d_k, d_v, scaled=scaled).by_kind()
    assert {k: int(v) for k, v in closed.items()} == count_attention_graph(n, d_k, d_v, scaled=scaled)["total"]


def test_interpolation_recovers_the_polynomial():
    n, d = sp.symbols("n d", positive=True, integer=True)
    poly = interpolate_opcount(scaled=True)
    closed = attention_opcount(n, d, d, scaled=True).by_kind()
    for kind in poly:
        assert sp.expand(poly[kind] - closed[kind]) == 0
    total = sp.expand(sum(poly.values()))
    assert sp.degree(total, n) == 2 and sp.degree(total, d) == 1


def test_leading_term_and_memory():
    n, d_k, d_v = size_symbols()
    c = attention_opcount()
    # n² coefficient: mul d_k + 1 (scale) + 1 (softmax) + d_v; add (d_k − 1) + 1 + d_v; exp 1
    assert sp.expand(c.leading(n) - n**2 * (2 * d_k + 2 * d_v + 3)) == 0
    assert c.memory["scores"] == n**2 and c.memory["weights"] == n**2
    b = sp.Symbol("b", positive=True, integer=True)
    assert sp.degree(c.memory["blockwise"], n) == 1 and c.memory["blockwise"].has(b)


@pytest.mark.parametrize("cached", [True, False])
@pytest.mark.parametrize(("heads", "with_wo"), [(1, False), (2, True), (4, True)])
def test_decode_counts_pair_with_numeric_decoder(cached, heads, with_wo):
    rng = np.random.default_rng(0)
    n, d = 6, 8
    X = rng.standard_normal((n, d))
    W = rng.standard_normal((4, d, d))
    result = causal_decode(X, *W[:3], W[3] if with_wo else None, heads=heads, cache=cached)
    t = sp.Symbol("t")
    poly = decode_step_opcount(t, d, d // heads, heads=heads, cached=cached, output_projection=with_wo)
    for step in result.steps:
        assert step["mul"] == poly["mul"].subs(t, step["t"])
        assert step["exp"] == poly["exp"].subs(t, step["t"])


def test_decode_step_by_hand():
    # t = 3, d_model = 2, d_k = d_v = 2, one head, cached: projections 2·(2+2+2) = 12, scores 3·2, mixing 3·2
    assert decode_step_opcount(3, 2, 2, cached=True)["mul"] == 24
    # uncached: 3 rows projected (36), 3×3 scores of width 2 (18), mixing 3×3×2 (18)
    assert decode_step_opcount(3, 2, 2, cached=False)["mul"] == 72
    t = sp.Symbol("t", positive=True, integer=True)
    assert sp.degree(decode_step_opcount(cached=True)["mul"], t) == 1
    assert sp.degree(decode_step_opcount(cached=False)["mul"], t) == 2


def test_guards():
    with pytest.raises(SpecError, match="n must be an integer >= 2"):
        count_attention_graph(1, 1)
    with pytest.raises(SizeLimitError, match="use attention_opcount"):
        count_attention_graph(30, 8)


def test_subs_and_block_memory():
    n, d_k, d_v = size_symbols()
    c = attention_opcount(block=32)
    # mul 18 + 9 (scale) + 9 (softmax) + 18; add 9 + 6 + 12; one reciprocal per row
    assert c.subs({n: 3, d_k: 2, d_v: 2}) == {"mul": 54, "add": 27, "exp": 9, "div": 3}
    assert c.memory["blockwise"].subs(n, 100) == 100 * 32 + 200
