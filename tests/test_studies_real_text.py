"""attnsym.studies.real_text: entropy and largest weight against n beside the claims' bounds, on tiny random models.

The bounds are checked against an independent reading: the dense scores of ``Model.forward``,
each row's centred norm and range computed here, and the claims' SymPy formulas evaluated row by row.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import sympy as sp
from models_support import FAMILY_WORDS, decoder_family

from attnsym import models
from attnsym.errors import SpecError
from attnsym.plots.real_text import real_text_figure
from attnsym.studies import real_text
from attnsym.symbolic.softmax_limits import dispersion_top_weight, entropy_lower_bound

SIZES = (8, 16, 40)


def _text(n: int, seed: int = 0) -> str:
    words = np.random.default_rng(seed).choice(FAMILY_WORDS[2:], n)
    return " ".join(words)


@pytest.fixture(scope="module")
def llama():
    return models.load(decoder_family("llama")[0], dtype="float64")


@pytest.fixture(scope="module")
def result(llama):
    return real_text.study(llama, _text(60), SIZES, block=8, progress=False)


def test_the_prefix_cut_equals_a_pass_per_size(llama, result):
    """One causal pass cut at n gives what head_stats gives on the first n tokens alone."""
    ids = np.asarray(llama.tokenizer.encode(_text(60)).ids)
    for s, n in enumerate(SIZES):
        alone = llama.head_stats(ids[:n], induction=False, block=8)
        np.testing.assert_allclose(result.entropy[s], alone.means["entropy"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(result.max_weight[s], alone.means["max_weight"], rtol=0, atol=1e-12)


def test_the_bounds_are_the_claims_formulas_at_each_rows_scores(llama, result):
    ids = np.asarray(llama.tokenizer.encode(_text(60)).ids)[:SIZES[-1]]
    S = np.asarray(llama.forward(ids[None, :]).scores, dtype=np.float64)[:, 0]  # (L, H, n, n)
    k, h = 1, 2
    zhai, top = [], []
    for i in range(1, SIZES[-1]):  # row 0 sees one key: it does not count
        z = S[k, h, i][np.isfinite(S[k, h, i])]
        sigma = float(np.linalg.norm(z - z.mean()))
        zhai.append(float(entropy_lower_bound(sp.Float(sigma, 30), z.size)))
        top.append(float(dispersion_top_weight(z.size, sp.Float(float(z.max() - z.min()), 30))))
    assert result.zhai_bound[-1, k, h] == pytest.approx(np.mean(zhai), abs=1e-12)
    assert result.dispersion_bound[-1, k, h] == pytest.approx(np.mean(top), abs=1e-12)
    assert result.ceiling[-1, k, h] == pytest.approx(np.mean(np.log(np.arange(2, SIZES[-1] + 1))), abs=1e-12)


def test_the_bounds_hold(result):
    assert result.holds(1e-10)
    assert np.all(result.entropy >= result.zhai_bound) and np.all(result.max_weight <= result.dispersion_bound)
    assert np.all(result.entropy <= result.ceiling + 1e-12)
    broken = dataclasses.replace(result, dispersion_margin=result.dispersion_margin - 1e-3)
    assert not broken.holds(1e-4)  # a row below a bound by more than the tolerance is reported


def test_a_bound_at_the_wrong_norm_is_broken(llama):
    """Zhai's bound read at σ = 0 (logits taken as equal) is ln T: real rows fall below it (the check can fail)."""
    ids = np.asarray(llama.tokenizer.encode(_text(60)).ids)[:40]
    rows = llama.head_stats(ids, per_row=True, spread=True, induction=False).rows
    zhai, _ = real_text.row_bounds(rows["keys"], 0.0 * rows["logit_norm"], rows["logit_range"])
    assert np.nanmin(rows["entropy"] - zhai) < -1e-3


def test_an_encoder_runs_a_pass_per_size():
    m = models.load(decoder_family("bert")[0], dtype="float64")
    r = real_text.study(m, _text(30, 1), (4, 8, 16), block=4, progress=False)
    ids = np.asarray(m.tokenizer.encode(_text(30, 1)).ids)
    np.testing.assert_allclose(r.entropy[1], m.head_stats(ids[:8], induction=False).means["entropy"], atol=1e-12)
    assert r.holds(1e-10) and r.revision


def test_records_and_figure(result):
    recs = result.records()
    assert len(recs) == len(SIZES) * result.layers * result.heads
    assert recs[0]["n"] == SIZES[0] and recs[0]["entropy"] == float(result.entropy[0, 0, 0])
    fig = real_text_figure(result)
    left, right = fig.axes[:2]
    mean = left.lines[result.layers]  # after one line per layer: the mean over every head
    np.testing.assert_allclose(mean.get_ydata(), result.entropy.reshape(len(SIZES), -1).mean(axis=1))
    np.testing.assert_allclose(right.lines[result.layers + 1].get_ydata(),
                               result.dispersion_bound.reshape(len(SIZES), -1).mean(axis=1))


@pytest.mark.parametrize("sizes, text, match", [
    ((16, 8), 60, "increasing"),
    ((8, 100), 120, "past the model's 64 positions"),
    ((8, 16), 10, "fewer than the largest size 16"),
    ((), 60, "increasing"),
])
def test_bad_arguments_are_refused(llama, sizes, text, match):
    with pytest.raises(SpecError, match=match):
        real_text.study(llama, _text(text), sizes, progress=False)


def test_a_model_with_a_learned_sink_is_refused():
    from test_models_2026 import checkpoint

    m = models.load(checkpoint("gpt_oss")[0], dtype="float64")
    with pytest.raises(SpecError, match="learned sink"):
        real_text.study(m, _text(60), (8, 16), progress=False)


def test_doubling_sizes():
    assert real_text.doubling_sizes(64, 1024) == (64, 128, 256, 512, 1024)
    assert real_text.SIZES == real_text.doubling_sizes(64, 8192)
    with pytest.raises(SpecError, match="at least smallest"):
        real_text.doubling_sizes(64, 32)
