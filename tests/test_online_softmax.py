"""The online-softmax merge: exact symbolic proof, the buggy merge rejected, numeric pairing."""

import numpy as np
import pytest
import sympy as sp
from scipy.special import softmax as scipy_softmax

from attnsym.errors import SpecError
from attnsym.numeric import attention
from attnsym.symbolic.online_softmax import block_statistics, merge_blocks, prove_online_softmax
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)


@pytest.mark.parametrize("sizes", [(1, 1, 1), (2, 1, 1), (2, 2, 2), (3, 2, 1)])
def test_merge_equals_softmax_of_union(sizes):
    proof = prove_online_softmax(*sizes)
    assert proof.holds
    assert proof.difference == sp.zeros(1, sizes[2])
    assert len(proof.scores) == sizes[0] + sizes[1]


def test_merge_without_rescaling_fails():
    proof = prove_online_softmax(2, 2, rescale=False)
    assert not proof.holds
    # and it really differs: at a point with different block maxima the values disagree
    point = {s: v for s, v in zip(proof.scores, [0, 1, 5, 2], strict=True)}
    m1, m2, m = proof.shifts
    point.update({m1: 1, m2: 5, m: 5, **{v: i + 1 for i, v in enumerate(proof.values)}})
    merged = float(proof.merged[0].subs(point))
    direct = float(proof.direct[0].subs(point))
    assert abs(merged - direct) > 1e-3


def test_merged_expression_evaluates_like_scipy_softmax():
    """Numeric pairing: the symbolic merge with the block maxima as shifts equals softmax(s) @ v from SciPy."""
    proof = prove_online_softmax(3, 2, 2)
    rng = np.random.default_rng(1)
    s = rng.standard_normal(5) * 30  # large logits: the maxima keep exp() in range
    V = rng.standard_normal((5, 2))
    m1, m2, m = proof.shifts
    subs = {sym: float(val) for sym, val in zip(proof.scores, s, strict=True)}
    subs.update({sym: float(val) for sym, val in zip(proof.values, V.ravel(), strict=True)})
    subs.update({m1: float(s[:3].max()), m2: float(s[3:].max()), m: float(s.max())})
    merged = np.array(proof.merged.evalf(30, subs=subs), dtype=float).ravel()
    np.testing.assert_allclose(merged, scipy_softmax(s) @ V, rtol=TOL64.rtol)


def test_numeric_blockwise_path_is_the_same_identity():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((37, 6)) * 4
    W = rng.standard_normal((3, 6, 6)) / np.sqrt(6)
    Y, _ = attention(X, *W)
    for block in (1, 5, 16, 64):
        np.testing.assert_allclose(attention(X, *W, return_weights=False, block_size=block), Y, rtol=TOL64.rtol, atol=TOL64.atol)


def test_block_statistics_and_merge_shapes():
    s = sp.symbols("s_1:3")
    m = sp.Symbol("m")
    stats = block_statistics(s, sp.Matrix([[1, 2], [3, 4]]), m)
    assert stats[2].shape == (1, 2)
    merged = merge_blocks(stats, stats, m)
    assert sp.simplify(merged[1] - 2 * stats[1]) == 0
    with pytest.raises(SpecError, match="one row per score"):
        block_statistics(s, sp.Matrix([[1]]), m)


@pytest.mark.parametrize("bad", [0, 9, 1.5, True])
def test_bad_sizes(bad):
    with pytest.raises(SpecError, match="first must be an integer between 1 and 8"):
        prove_online_softmax(bad, 1)
