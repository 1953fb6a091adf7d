"""Golden tests of attnsym.heads: attention tensors with known patterns, scores computed by hand.

A second, independent implementation (plain loops written from the module docstring's
formulas) is checked against classify() on random tensors, and hypothesis checks the
invariances (order of the texts, padding).
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsym import heads as hd
from attnsym.errors import ShapeError, SpecError

N = 6
TOKENS = ["[CLS]", "hi", ",", "there", "!", "[SEP]"]  # punctuation at 2 and 4
P = hd.PATTERNS.index


def golden() -> np.ndarray:
    """One layer, 8 heads of a bidirectional 6-token text, each a known pattern."""
    A = np.zeros((1, 8, N, N))
    prev = np.eye(N, k=-1)
    prev[0, 0] = 1.0  # query 0 has no previous token: it reads itself
    A[0, 0] = prev
    A[0, 1] = np.eye(N)  # self
    A[0, 2, :, 0] = 1.0  # first-token sink
    A[0, 3, :, N - 1] = 1.0  # end sink
    for i in range(N):  # punctuation: the punctuation marks other than itself, equally
        keys = [j for j in (2, 4) if j != i]
        A[0, 4, i, keys] = 1.0 / len(keys)
    for i in range(N):
        A[0, 5, i, (i + 2) % N] = 1.0  # band at +2 (wrapping)
    A[0, 6] = 1.0 / N  # uniform
    A[0, 7] = 0.7 * prev + 0.3 / N  # a mixture
    return A


def entropy(row) -> float:
    return -sum(p * math.log(p) for p in row if p > 0)


#  head -> {pattern: score}, every pattern of a bidirectional text (induction, duplicate: NaN)
LN6 = math.log(N)
EXPECTED = {
    0: dict(previous=1, next=0, self=1 / 6, first=1 / 5, end=0, punctuation=2 / 6, band=0, broad=0),
    1: dict(previous=0, next=0, self=1, first=0, end=0, punctuation=0, band=0, broad=0),
    2: dict(previous=1 / 5, next=0, self=1 / 6, first=1, end=0, punctuation=0, band=0, broad=0),
    3: dict(previous=0, next=1 / 5, self=1 / 6, first=0, end=1, punctuation=0, band=0, broad=0),
    4: dict(previous=0.2, next=0.2, self=0, first=0, end=0, punctuation=1, band=0.5, broad=(4 * math.log(2) / LN6) / 6),
    5: dict(previous=0, next=0, self=0, first=1 / 5, end=1 / 5, punctuation=2 / 6, band=1, broad=0),
    6: dict(previous=1 / 6, next=1 / 6, self=1 / 6, first=1 / 6, end=1 / 6, punctuation=5 / 18, band=1 / 6, broad=1),
    7: dict(previous=0.75, next=0.05, self=0.7 / 6 + 0.05, first=0.7 / 5 + 0.05, end=0.05,
            punctuation=0.7 * (2 / 6) + 0.3 * (5 / 18), band=0.05, broad=entropy([0.75] + [0.05] * 5) / LN6),
}
# head 0, punctuation: queries 3 and 5 read the mark before them (2 and 4) with weight 1, the
# others read no mark: 2 / 6.  Head 5 reads (i+2) % 6: query 0 -> 2 and query 2 -> 4 are marks.
EXPECTED_CLASS = ("previous-token", "self", "first-token", "end-token", "punctuation", "band", "broad",
                  "previous-token")


@pytest.fixture(scope="module")
def report():
    return hd.classify(golden(), tokens=[TOKENS], causal=False)


@pytest.mark.parametrize("head", sorted(EXPECTED))
def test_every_score_of_every_golden_head(report, head):
    for pattern, value in EXPECTED[head].items():
        assert report.scores[0, head, P(pattern)] == pytest.approx(value, abs=1e-12), (head, pattern)
    assert np.isnan(report.scores[0, head, P("induction")]) and np.isnan(report.scores[0, head, P("duplicate")])


def test_golden_classes_top_scores_and_band_offset(report):
    assert report.primary == (EXPECTED_CLASS,)
    # every label that passes, highest score first: the punctuation head also follows a band (0.5)
    assert report.labels[0][4] == ("punctuation", "band") and report.labels[0][0] == ("previous-token",)
    assert report.top[0, 7] == pytest.approx(0.75)
    assert report.band_offset[0, 5] == 2
    assert report.band_offset[0, 4] == 2  # +2 and +4 both give 0.5: the smaller |k| wins
    assert report.queries == {"previous": 5, "next": 5, "self": 6, "first": 5, "end": 5, "punctuation": 6, "broad": 6}


def test_the_band_score_by_hand_on_the_punctuation_head(report):
    # keys 1..4 only (the first and last are sinks): offset +2 has queries 0, 1, 2 reading 0.5, 0, 1
    A = golden()[0, 4]
    assert (A[0, 2] + A[1, 3] + A[2, 4]) / 3 == pytest.approx(report.scores[0, 4, P("band")])


def test_causal_scores_exclude_query_zero_and_next_and_end_do_not_apply():
    n = 5
    A = np.zeros((1, 3, n, n))
    A[0, 0] = np.eye(n, k=-1)
    A[0, 0, 0, 0] = 1
    A[0, 1] = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    A[0, 2, :, 0] = 1
    r = hd.classify(A)  # causal inferred: nothing above the diagonal
    assert r.causal
    s = r.scores[0]
    assert np.isnan(s[:, P("next")]).all() and np.isnan(s[:, P("end")]).all()
    assert s[0, P("previous")] == 1 and s[0, P("self")] == 0
    assert s[1, P("previous")] == pytest.approx((1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 4)
    assert s[1, P("broad")] == pytest.approx(1.0)
    assert s[2, P("first")] == 1 and s[2, P("self")] == 0 and s[2, P("previous")] == pytest.approx(1 / 4)
    assert r.primary == (("previous-token", "broad", "first-token"),)


def naive(A, punct, causal, max_offset=4):
    """The docstring's formulas as loops, for one text and one head (an independent reference)."""
    n = len(A)
    allowed = [[(j <= i) if causal else True for j in range(n)] for i in range(n)]
    Q = [i for i in range(n) if sum(allowed[i]) >= 2]
    out = {}
    out["previous"] = [A[i][i - 1] for i in Q if i >= 1]
    out["next"] = [] if causal else [A[i][i + 1] for i in Q if i <= n - 2]
    out["self"] = [A[i][i] for i in Q]
    out["first"] = [A[i][0] for i in Q if i >= 1]
    out["end"] = [] if causal else [A[i][n - 1] for i in Q if i <= n - 2]
    out["punctuation"] = [sum(A[i][j] for j in range(n) if punct[j] and j != i and allowed[i][j]) for i in Q
                          if any(punct[j] and j != i and allowed[i][j] for j in range(n))]
    out["broad"] = [entropy(A[i]) / math.log(sum(allowed[i])) for i in Q]
    out["band"] = {k: [A[i][i + k] for i in Q if 1 <= i + k <= n - 2 and allowed[i][i + k]]
                   for d in range(2, max_offset + 1) for k in (-d, d)}
    return out


def pooled(items, causal):
    """Pool the naive values over texts (every query equal) and take the band maximum."""
    lists = [naive(A, p, causal) for A, p in items]
    res = {}
    for key in ("previous", "next", "self", "first", "end", "punctuation", "broad"):
        vals = [v for d in lists for v in d[key]]
        res[key] = sum(vals) / len(vals) if vals else math.nan
    bands = {k: [v for d in lists for v in d["band"][k]] for k in lists[0]["band"]}
    means = [sum(v) / len(v) for v in bands.values() if v]
    res["band"] = max(means) if means else math.nan
    return res


def random_text(rng, n, causal, heads=2):
    S = rng.normal(size=(1, heads, n, n)) * 3
    if causal:
        S = np.where(np.tril(np.ones((n, n), bool)), S, -np.inf)
    A = np.exp(S - S.max(axis=-1, keepdims=True))
    return A / A.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("causal", [False, True])
def test_classify_equals_the_loops_written_from_the_formulas(causal):
    rng = np.random.default_rng(3)
    lengths = (3, 7, 5)
    texts = [random_text(rng, n, causal) for n in lengths]
    puncts = [rng.random(n) < 0.3 for n in lengths]
    tokens = [["," if p else "w" for p in pu] for pu in puncts]
    n = max(lengths)
    batch = np.zeros((len(texts), 1, 2, n, n))
    mask = np.zeros((len(texts), n), dtype=int)
    for b, (A, k) in enumerate(zip(texts, lengths, strict=True)):
        batch[b, ..., :k, :k] = A
        mask[b, :k] = 1
        batch[b, ..., k:, :] = 0.123  # garbage in the padding must be ignored
    padded_tokens = [t + ["."] * (n - len(t)) for t in tokens]
    r = hd.classify(batch, mask=mask, tokens=padded_tokens, causal=causal)
    for h in range(2):
        ref = pooled([(A[0, h].tolist(), p.tolist()) for A, p in zip(texts, puncts, strict=True)], causal)
        for key, value in ref.items():
            got = r.scores[0, h, P(key)]
            assert (math.isnan(value) and math.isnan(got)) or got == pytest.approx(value, abs=1e-12), (h, key)


@st.composite
def text_batches(draw):
    causal = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    lengths = draw(st.lists(st.integers(2, 6), min_size=1, max_size=4))
    rng = np.random.default_rng(seed)
    return causal, [(random_text(rng, n, causal), ["." if rng.random() < 0.3 else "a" for _ in range(n)])
                    for n in lengths]


def as_routes(texts, causal):
    return [SimpleNamespace(attention=A, tokens=tuple(t), offsets=((0, 0),) * len(t), special=(False,) * len(t),
                            causal=causal, text="") for A, t in texts]


@settings(max_examples=30, deadline=None)
@given(text_batches(), st.randoms(use_true_random=False), st.integers(1, 3))
def test_order_of_texts_and_padding_do_not_change_scores(batch, rnd, pad):
    causal, texts = batch
    base = hd.classify(as_routes(texts, causal))
    shuffled = list(texts)
    rnd.shuffle(shuffled)
    np.testing.assert_allclose(hd.classify(as_routes(shuffled, causal)).scores, base.scores, rtol=1e-12, atol=1e-14)
    n = max(len(t) for _, t in texts) + pad
    arr = np.zeros((len(texts), 1, 2, n, n))
    mask = np.zeros((len(texts), n), dtype=int)
    for b, (A, t) in enumerate(texts):
        arr[b, ..., :len(t), :len(t)] = A
        mask[b, :len(t)] = 1
    padded = hd.classify(arr, mask=mask, tokens=[t + ["!"] * (n - len(t)) for _, t in texts], causal=causal)
    np.testing.assert_allclose(padded.scores, base.scores, rtol=1e-12, atol=1e-14)
    assert padded.labels == base.labels and padded.primary == base.primary


def test_inputs_are_never_modified():
    A = golden()
    A.setflags(write=False)
    before = A.copy()
    route = SimpleNamespace(attention=A, tokens=tuple(TOKENS), offsets=((0, 0),) * N, special=(True,) + (False,) * 4
                            + (True,), causal=False, text="hi, there!")
    r = hd.classify(route)
    assert np.array_equal(A, before) and not A.flags.writeable
    B = golden()
    hd.classify(B, tokens=[TOKENS])
    assert np.array_equal(B, golden()) and B.flags.writeable
    assert not r.scores.flags.writeable


def test_report_table_dict_counts_and_thresholds(report):
    d = report.to_dict()
    json.dumps(d)
    assert d["heads"][0]["layer"] == 1 and d["heads"][0]["head"] == 1 and "from 1" in d["numbering"]
    assert d["heads"][7]["class"] == "previous-token" and d["heads"][0]["scores"]["induction"] is None
    counts = report.counts()
    assert set(counts) == set(hd.CLASSES) and counts["previous-token"] == (2,) and sum(sum(v) for v in counts.values()) == 8
    table = report.table()
    assert table.splitlines()[0].split()[:3] == ["layer", "head", "1"] and "prev 1.00" in table
    strict = hd.classify(golden(), tokens=[TOKENS], causal=False, thresholds={"previous": 0.9})
    assert strict.primary[0][7] == "mixed" and strict.labels[0][7] == ("mixed",) and math.isnan(strict.top[0, 7])


def test_bad_inputs_name_the_argument():
    with pytest.raises(ShapeError, match="shape"):
        hd.classify(np.zeros((3, 3)))
    with pytest.raises(ShapeError, match=r"probabilities: finite weights in \[0, 1\]"):
        hd.classify(-golden())
    with pytest.raises(ShapeError, match="mask"):
        hd.classify(golden(), mask=np.ones((1, 5)))
    with pytest.raises(SpecError, match="unknown pattern 'prev'"):
        hd.classify(golden(), thresholds={"prev": 0.5})
    with pytest.raises(SpecError, match=r"thresholds\['self'\] must lie in \[0, 1\]"):
        hd.classify(golden(), thresholds={"self": 2})
    with pytest.raises(SpecError, match="max_offset"):
        hd.classify(golden(), max_offset=1)
    with pytest.raises(ShapeError, match="Route"):
        hd.classify("the cat")
    with pytest.raises(ShapeError, match="empty"):
        hd.classify([])


class FakeDecoder:
    """A 'model' whose forward pass attends by the induction pattern: checks the protocol's indices."""

    name = "fake"
    tokenizer = None

    def __init__(self, causal=True):
        self.config = SimpleNamespace(causal=causal, vocab_size=10**6, max_positions=64, pad_token_id=None)

    def forward(self, ids):
        B, n = ids.shape
        A = np.zeros((1, B, 3, n, n))
        for b in range(B):
            for i in range(n):
                earlier = [j for j in range(i) if ids[b, j] == ids[b, i]]
                A[0, b, 0, i, earlier[-1] + 1 if earlier else i] = 1.0  # induction
                A[0, b, 1, i, earlier[-1] if earlier else i] = 1.0  # duplicate token
                A[0, b, 2, i, i] = 1.0  # self
        return SimpleNamespace(attention=A)


def test_induction_protocol_on_a_hand_built_decoder():
    scores = hd.induction_scores(FakeDecoder(), length=10, seed=1, batch=2, prefix=[0])
    ids = scores.ids
    assert ids.shape == (2, 21) and (ids[:, 1:11] == ids[:, 11:]).all()
    assert all(len(set(row[1:11].tolist())) == 10 for row in ids)  # no repeat inside a copy (10 of 10**6 ids)
    np.testing.assert_allclose(scores.induction[0], [1, 0, 0])
    np.testing.assert_allclose(scores.duplicate[0], [0, 1, 0])
    again = hd.induction_scores(FakeDecoder(), length=10, seed=1, batch=2, prefix=[0])
    assert np.array_equal(again.ids, ids)
    text = 0.5 * np.eye(8)
    text[:, 0] += 0.5
    text[0, 0] = 1.0  # half self, half first token: scores 0.5 at most, below the protocol's 1
    r = hd.classify(text[None, None].repeat(3, axis=1), induction=scores, causal=True)
    assert r.primary == (("induction", "duplicate-token", "self"),)


def test_induction_needs_a_decoder_and_room():
    with pytest.raises(hd.HeadsError, match="bidirectional"):
        hd.induction_scores(FakeDecoder(causal=False))
    with pytest.raises(hd.HeadsError, match="length <= 32"):
        hd.induction_scores(FakeDecoder(), length=40)
    with pytest.raises(SpecError, match="length"):
        hd.induction_scores(FakeDecoder(), length=1)


# ---------------------------------------------------------------------------------------------- real models
def test_minilm_heads_are_classified_and_induction_does_not_apply():
    from models_support import minilm

    m = minilm()
    routes = m.route(["I ate an apple for lunch.", "The cat sat on the mat, and then it slept."])
    r = hd.classify(routes)
    assert r.scores.shape == (6, 12, len(hd.PATTERNS)) and not r.causal
    assert np.isnan(r.score("induction")).all()  # bidirectional: not applicable
    assert r.primary[0][2] == "previous-token" and r.score("previous")[0, 2] > 0.9  # layer 1 head 3 (see contrast)
    # an independent computation of one score: layer 1 head 3's previous-token score from the routes
    values = [a[0, 2, i, i - 1] for a in (x.attention for x in routes) for i in range(1, a.shape[-1])]
    assert r.score("previous")[0, 2] == pytest.approx(float(np.mean(np.array(values, dtype=np.float64))), rel=1e-12)
    assert sum(sum(v) for v in r.counts().values()) == 72
    with pytest.raises(hd.HeadsError, match="bidirectional"):
        hd.induction_scores(m)


def test_a_tiny_random_gpt2_gets_induction_scores_and_classes():
    from models_support import tiny_gpt2

    from attnsym import models

    m = models.load(tiny_gpt2())
    ind = hd.induction_scores(m, length=20, seed=0, batch=2)
    assert ind.induction.shape == (2, 4) and ((0 <= ind.induction) & (ind.induction <= 1)).all()
    assert 0 not in ind.ids  # the special <|endoftext|> id is never drawn
    r = hd.classify(m.route(["the apple phone launch event", "i like to eat apples"]), induction=ind)
    assert r.causal and np.isnan(r.score("next")).all() and np.array_equal(r.score("induction"), ind.induction)
    out = m.forward(ind.ids)  # independent: the mean of A[i, i - L + 1] over the second copy, by loops
    A = np.asarray(out.attention)
    vals = [A[1, b, 3, i, i - 19] for b in range(2) for i in range(20, 40)]
    assert ind.induction[1, 3] == pytest.approx(float(np.mean(vals)), rel=1e-6)


def test_the_docs_page_counts_are_what_classify_gives():
    import re
    from pathlib import Path

    from models_support import minilm

    page = (Path(__file__).resolve().parents[1] / "docs" / "how-to" / "head-classes.md").read_text(encoding="utf-8")
    texts = ["I ate an apple for lunch.", "I bought an Apple phone today!", "The cat sat on the mat, and then it slept.",
             "Attention computes its mixing weights from the data, then applies them to the values."]
    counts = hd.classify(minilm().route(texts)).counts()
    for name, per_layer in re.findall(r"^\| ([a-z-]+)[^|]* \| ([\d, ]+) \| \d+", page, re.M):
        assert counts[name] == tuple(int(x) for x in per_layer.split(",")), name
    assert len(re.findall(r"^\| ([a-z-]+)[^|]* \| ([\d, ]+) \| \d+", page, re.M)) == 5


# ---------------------------------------------------------------------------------------------- several labels
def sink_and_induction(n=8):
    """A causal head that parks 0.55 on the first token and 0.45 on itself: a sink on text."""
    A = np.zeros((n, n))
    A[0, 0] = 1.0
    for i in range(1, n):
        A[i, 0] = 0.55
        A[i, i] += 0.45
    return A


def test_a_sink_does_not_hide_an_induction_head():
    """On SmolLM2 the induction heads' sink score on text is higher than their induction score."""
    A = np.stack([sink_and_induction(), np.tril(np.ones((8, 8))) / np.arange(1, 9)[:, None]])[None]
    ind = hd.InductionScores(induction=np.array([[0.5, 0.0]]), duplicate=np.array([[0.0, 0.0]]), length=4, seed=0,
                             batch=1, ids=np.zeros((1, 8), dtype=np.int64), prefix=0)
    r = hd.classify(A, induction=ind)
    assert r.labels[0][0] == ("first-token", "induction", "self")  # every label, highest score first
    assert r.primary[0][0] == "induction" and r.top[0, 0] == pytest.approx(0.5)  # the specific pattern leads
    assert r.primary[0][1] == "broad" and r.labels[0][1] == ("broad",)  # a sink or broad only when nothing specific
    found = r.found()
    assert found["induction"] == [(1, 1, 0.5)] and found["first-token"][0][:2] == (1, 1)
    assert r.label_counts()["first-token"] == (1,) and r.counts()["first-token"] == (0,)
    assert "induct 0.50 +first +self" in r.table()
    d = r.to_dict()["heads"][0]
    assert d["class"] == "induction" and d["labels"] == ["first-token", "induction", "self"]


# ---------------------------------------------------------------------------------------------- hostile inputs
def test_rows_must_be_probability_rows():
    A = golden()
    with pytest.raises(ShapeError, match=r"finite weights in \[0, 1\]"):
        hd.classify(np.full((1, 1, 3, 3), 1e308))
    with pytest.raises(ShapeError, match=r"summing to 1 within 0\.001"):
        hd.classify(A * 0.5)
    with pytest.raises(ShapeError, match="summing to 1 within"):
        hd.classify(golden()[:, 6:7] * 1.01)  # the uniform head: rows of 1.01, no entry above 1
    assert np.isfinite(hd.classify(A * (1 + 5e-4)).scores[0, 0, P("previous")])  # inside the stated tolerance
    sink = hd.classify(A * 0.7, sinks=True)  # a learned sink took 0.3 of every row
    assert sink.scores[0, 0, P("previous")] == pytest.approx(0.7)
    with pytest.raises(ShapeError, match="in \\[0, 1\\] \\(sinks=True"):
        B = A.copy()
        B[0, 0, 1, 2] = 0.5  # a row of 1.5
        hd.classify(B, sinks=True)


def test_sizes_are_bounded_by_the_input():
    base = hd.classify(golden(), tokens=[TOKENS])
    huge = hd.classify(golden(), tokens=[TOKENS], max_offset=10**9)  # offsets past n - 1 exist in no text
    np.testing.assert_array_equal(base.scores, huge.scores)
    tiny = hd.classify(np.full((1, 1, 2, 2), 0.5))  # no band offset fits: NaN, no error
    assert np.isnan(tiny.score("band")).all()
    with pytest.raises(SpecError, match="batch must be at most 64"):
        hd.induction_scores(FakeDecoder(), batch=10**7)
    with pytest.raises(SpecError, match="prefix"):
        hd.induction_scores(FakeDecoder(), prefix=5)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(tokens=5), ShapeError, "one sequence of token strings per text"),
    (dict(tokens="abcdef"), ShapeError, "one sequence of token strings per text"),
    (dict(tokens=[5]), ShapeError, r"tokens\[0\] must be a sequence of token strings"),
    (dict(tokens=[["a"] * 5 + [3]]), ShapeError, r"tokens\[0\] must be a sequence of token strings"),
    (dict(tokens=[["a"] * 4]), ShapeError, r"tokens\[0\] must be 6"),
    (dict(mask=[["x"] * 6]), ShapeError, "mask must be a 0/1 array"),
    (dict(causal="false"), SpecError, "causal must be"),
    (dict(sinks=1), SpecError, "sinks must be"),
])
def test_bad_keyword_arguments_are_attnsym_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        hd.classify(golden(), **kwargs)


@pytest.mark.parametrize("shape", [(0, 1, 3, 3), (1, 0, 3, 3), (1, 1, 0, 0), (0, 1, 1, 3, 3)])
def test_empty_dimensions_are_refused(shape):
    with pytest.raises(ShapeError, match="empty dimension"):
        hd.classify(np.zeros(shape))


def test_forged_induction_scores_are_refused():
    bad = hd.InductionScores(induction=np.full((1, 8), np.inf), duplicate=np.zeros((1, 8)), length=2, seed=0, batch=1,
                             ids=np.zeros((1, 4), dtype=np.int64), prefix=0)
    with pytest.raises(ShapeError, match=r"induction scores must be mean attention weights in \[0, 1\]"):
        hd.classify(golden(), induction=bad)


def test_probe_classifies_on_the_repeated_sequences():
    r = hd.probe(FakeDecoder(), length=10, seed=1, batch=2)
    assert r.causal and len(r.texts) == 2 and "repeated twice" in r.texts[0]
    assert r.primary[0] == ("induction", "duplicate-token", "self")
    np.testing.assert_allclose(r.score("induction")[0], [1, 0, 0])
    # the same sequences and the same scores as induction_scores
    ind = hd.induction_scores(FakeDecoder(), length=10, seed=1, batch=2)
    np.testing.assert_array_equal(r.score("duplicate"), ind.duplicate)
