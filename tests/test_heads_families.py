"""attnsym.heads and ``attnsym heads`` on every decoder family attnsym loads (the small random models).

The models are the session-built ones of tests/test_models_families.py (models_support.decoder_family):
grouped-query attention (4 query heads over 2 key/value heads), sliding windows (Mistral, Gemma 2's
even layers), soft-capping, ALiBi, partial rotary — all causal, none with a ``[CLS]``.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from models_support import FAMILY_TEXTS, FAMILY_VARIANTS, decoder_family

from attnsym import heads as hd
from attnsym import models

pytest.importorskip("torch")
pytest.importorskip("transformers")


def P(name):
    return hd.PATTERNS.index(name)


def _direct(route_list, layer, head):
    """Previous-token, self and broad of one head, straight from the formulas (queries with 2+ allowed keys)."""
    prev, self_, broad = [], [], []
    for r in route_list:
        A, S = np.asarray(r.attention, dtype=np.float64)[layer, head], np.asarray(r.scores)[layer, head]
        for i in range(r.n):
            keys = np.flatnonzero(np.isfinite(S[i]))
            if keys.size < 2:
                continue
            self_.append(A[i, i])
            if i - 1 in keys:
                prev.append(A[i, i - 1])
            row = A[i, keys]
            row = row[row > 0]
            broad.append(-(row * np.log(row)).sum() / np.log(keys.size))
    return np.mean(prev), np.mean(self_), np.mean(broad)


@pytest.fixture(scope="module", params=list(FAMILY_VARIANTS))
def family_report(request):
    folder, _ = decoder_family(request.param)
    m = models.load(folder)
    routes = m.route(FAMILY_TEXTS)
    induction = hd.induction_scores(m, length=8, batch=2)
    return request.param, m, routes, induction, hd.classify(routes, induction=induction)


def test_every_decoder_family_is_classified_head_by_head(family_report):
    name, m, routes, induction, report = family_report
    spec = m.spec(0)
    assert report.causal and (report.layers, report.heads) == (m.config.layers, spec.heads)  # query heads, not kv heads
    assert np.isnan(report.score("next")).all() and np.isnan(report.score("end")).all()  # a decoder has no later key
    assert all(label in hd.CLASSES for row in report.primary for label in row)
    assert all(set(labels) <= set(hd.CLASSES) for row in report.labels for labels in row)
    for pattern in ("previous", "self", "first", "broad", "induction", "duplicate"):
        s = report.score(pattern)
        assert np.isfinite(s).all() and (s >= -1e-12).all() and (s <= 1 + 1e-9).all(), (name, pattern)
    np.testing.assert_array_equal(report.score("induction"), induction.induction)
    for layer in range(report.layers):
        for head in (0, report.heads - 1):
            expected = _direct(routes, layer, head)
            got = [report.scores[layer, head, P(p)] for p in ("previous", "self", "broad")]
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=f"{name} layer {layer} head {head}")


def test_a_sliding_window_counts_only_the_keys_it_lets_a_query_see():
    """Uniform attention over a window of 3: broad is 1 (not ln 3 / ln(i+1)); first-token counts queries 1 and 2 only."""
    n, w = 6, 3
    i, j = np.indices((n, n))
    inside = (j <= i) & (j > i - w)
    A = (inside / inside.sum(axis=1, keepdims=True))[None, None]
    scores = np.where(inside, 0.0, -np.inf)[None, None]
    route = SimpleNamespace(attention=A, scores=scores, tokens=("a",) * n, offsets=((0, 0),) * n, special=(False,) * n,
                            causal=True, text="")
    r = hd.classify(route)
    assert r.scores[0, 0, P("broad")] == pytest.approx(1.0, abs=1e-12)
    assert r.scores[0, 0, P("first")] == pytest.approx((1 / 2 + 1 / 3) / 2, abs=1e-12)
    assert r.queries["first"] == 2 and r.primary == (("broad",),)
    assert r.labels == ((("broad", "first-token"),),)  # first-token (0.42) passes too: a second label
    plain = hd.classify(SimpleNamespace(**{**vars(route), "scores": None}))  # no scores: the causal mask only
    assert plain.scores[0, 0, P("broad")] < 0.9 and plain.queries["first"] == n - 1


@pytest.mark.parametrize("name", ["mistral"])
def test_cli_heads_on_a_decoder_family_folder(name, tmp_path, capsys):
    from attnsym.cli import main

    folder, _ = decoder_family(name)
    out = tmp_path / "out"
    assert main(["heads", "--model", str(folder), *FAMILY_TEXTS, "--induction-length", "8", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "induction/duplicate: 4 random sequences of 8 tokens" in text
    m = models.load(folder)
    expected = hd.classify(m.route(FAMILY_TEXTS), induction=hd.induction_scores(m, length=8))
    data = json.loads((out / "heads.json").read_text())
    assert data["causal"] is True and data["heads_per_layer"] == m.spec(0).heads
    assert [h["class"] for h in data["heads"]] == [c for row in expected.primary for c in row]
    assert [h["labels"] for h in data["heads"]] == [list(c) for row in expected.labels for c in row]
    assert [h["scores"]["induction"] for h in data["heads"]] == pytest.approx(list(expected.score("induction").ravel()))
