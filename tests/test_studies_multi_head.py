"""The multi-head study: typed counts, per-head maps and the comparisons the ``multi-head`` claim judges."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from attnsym.claims import CheckContext
from attnsym.claims import _compare as claims_compare
from attnsym.claims.builtin import multi_head as multi_head_claim
from attnsym.studies import compare, streams
from attnsym.studies.multi_head import HEAD_COUNTS, MultiHeadResult, MultiHeadSizes, study


@pytest.fixture(scope="module")
def result() -> MultiHeadResult:
    return study(streams(0, "multi-head"), quick=True, torch=False)


def test_the_result_is_frozen_typed_and_holds_what_it_measured(result):
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.concat_gap = 1.0  # type: ignore[misc]
    heads = result.sizes.heads
    assert result.sizes == MultiHeadSizes.of(True)
    assert [c.heads for c in result.counts] == list(HEAD_COUNTS)
    assert all(c.torch is None and c.d_k * c.heads == result.sizes.d_model for c in result.counts)
    assert result.counts_kept and result.counts_match_torch  # nothing to compare without PyTorch
    assert result.weights.shape == (heads, result.sizes.n, result.sizes.n)
    assert np.allclose(result.weights.sum(axis=-1), 1.0)
    assert len(result.head_distances) == heads * (heads - 1) // 2 and min(result.head_distances) > 0
    assert result.concat_close and result.concat_gap < 1e-12 and result.symbolic_per_head
    assert result.torch is None and result.lambdified.reference == "formula" and result.lambdified.agrees
    assert result.formula_gap < 1e-12


def test_the_claim_reads_the_same_stream_as_the_study(result):
    ev = multi_head_claim.check_multi_head(CheckContext(seed=0, quick=True), reference="none")
    assert ev.details["head distances"] == list(result.head_distances)
    assert ev.details["concat·W_O error"] == result.concat_gap


@pytest.mark.parametrize(("wrong", "broken"), [
    ({"d_k_of": lambda d, h: d}, "counts_kept"),            # full-width heads: 4·d² only for h = 1
    ({"head_order": [1, 0, 2, 3]}, "concat_close"),         # heads concatenated out of order
    ({"scale": 1 / np.sqrt(8)}, "formula_gap"),             # 1/√d_model instead of 1/√d_k
])
def test_each_wrong_setting_breaks_what_it_should(wrong, broken):
    r = study(streams(0, "multi-head"), quick=True, torch=False, **wrong)
    assert (r.formula_gap > 1e-3) if broken == "formula_gap" else not getattr(r, broken)


def test_claims_compare_with_the_studies_tolerance():
    # one definition: the claims' comparison helpers are the studies' own
    for name in ("TOL64", "close", "max_abs", "random_weights"):
        assert getattr(claims_compare, name) is getattr(compare, name)
    assert compare.close([1.0], [1.0 + 1e-13]) and not compare.close([1.0], [1.001])
