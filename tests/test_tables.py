"""Results as tables: to_records() and to_pandas() give the documented columns, counted from 1, values of the arrays."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from attnsym import heads, tables
from attnsym.claims import Evidence
from attnsym.errors import AttnsymError

pd = pytest.importorskip("pandas")
DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture(scope="module")
def model():
    from attnsym.models.evidence import packaged_model

    m = packaged_model()
    if m is None:
        pytest.skip("the packaged model is not installed")
    return m


@pytest.fixture(scope="module")
def routes(model):
    return model.route(["I ate an apple.", "The cat sat on the mat."])


def test_route_rows_are_the_attention_counted_from_one(routes):
    r = routes[0]
    frame = r.to_pandas()
    assert tuple(frame.columns) == tables.ROUTE_COLUMNS
    assert len(frame) == r.attention.size and frame.attrs["numbering"] == tables.NUMBERING
    assert frame["layer"].min() == 1 and frame["layer"].max() == r.layers and frame["head"].max() == r.heads
    assert frame["query"].max() == r.n and frame["key"].min() == 1
    for row in frame.sample(25, random_state=0).itertuples():
        assert row.weight == pytest.approx(float(r.attention[row.layer - 1, row.head - 1, row.query - 1, row.key - 1]))
        assert row.key_token == r.labels()[row.key - 1]
    records = r.to_records()
    assert list(records[0]) == list(tables.ROUTE_COLUMNS) and len(records) == len(frame)
    assert all(type(v) in (str, int, float) for v in records[7].values())
    np.testing.assert_array_equal(frame["weight"].to_numpy(), [x["weight"] for x in records])
    both = tables.to_pandas(routes)  # several routes: one table, told apart by text
    assert len(both) == sum(x.attention.size for x in routes) and set(both["text"]) == {x.text for x in routes}


def test_head_report_rows_per_pattern(routes):
    report = heads.classify(routes)
    frame = report.to_pandas()
    assert tuple(frame.columns) == tables.HEAD_COLUMNS
    assert len(frame) == report.layers * report.heads * len(report.patterns)
    row = frame[(frame["layer"] == 2) & (frame["head"] == 3) & (frame["pattern"] == "previous")].iloc[0]
    assert row["score"] == pytest.approx(float(report.score("previous")[1, 2]))
    assert row["class"] == report.primary[1][2] and row["labels"] == " ".join(report.labels[1][2])
    assert frame[frame.pattern == "induction"]["score"].isna().all()  # a bidirectional model: not defined
    assert report.to_records()[0]["layer"] == 1


def test_contrast_rows_are_the_words_rows(model):
    c = model.contrast("I ate an apple for lunch", "I bought an Apple phone today", token="apple")
    frame = c.to_pandas()
    assert tuple(frame.columns) == tables.CONTRAST_COLUMNS
    assert len(frame) == c.rows[0].size + c.rows[1].size
    second = frame[frame.text == c.texts[1]]
    row = second[(second["layer"] == 3) & (second["head"] == 5)].iloc[2]
    assert row["weight"] == pytest.approx(float(c.rows[1][2, 4, row["key"] - 1]))
    assert row["role_distance"] == pytest.approx(float(c.role_distance[2, 4]))
    assert set(frame["word"]) == {w.text for w in c.words}


def test_evidence_rows_one_per_claim():
    evs = [Evidence("a", "s", "holds", "m", "e", conditions=("x", "y"), seconds=1.5),
           Evidence("b", "s", "fails", "m", "e")]
    frame = tables.to_pandas(evs)
    assert tuple(frame.columns) == tables.EVIDENCE_COLUMNS
    assert frame["claim"].tolist() == ["a", "b"] and frame["as_expected"].tolist() == [True, False]
    assert evs[0].to_records() == [{"claim": "a", "verdict": "holds", "expected": "holds", "as_expected": True,
                                    "method": "m", "summary": "e", "conditions": "x; y", "seconds": 1.5, "source": ""}]


def test_without_pandas_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(tables.PandasMissingError, match=r'attnsym\[tables\]') as info:
        Evidence("a", "s", "holds", "m", "e").to_pandas()
    assert isinstance(info.value, ImportError) and isinstance(info.value, AttnsymError)


def test_a_mixed_or_empty_list_is_refused():
    with pytest.raises(AttnsymError, match="a non-empty list of one of them"):
        tables.to_records([])
    with pytest.raises(AttnsymError, match="got Evidence, int"):
        tables.to_records([Evidence("a", "s", "holds", "m", "e"), 3])


def test_the_docs_name_the_columns_of_every_table():
    page = (DOCS / "how-to" / "tables.md").read_text(encoding="utf-8")
    for name in ("ROUTE_COLUMNS", "HEAD_COLUMNS", "CONTRAST_COLUMNS", "EVIDENCE_COLUMNS"):
        columns = getattr(tables, name)
        line = next((ln for ln in page.splitlines() if f"`{name}`" in ln), "")
        assert re.findall(r"`(\w+)`", line.split(" — ")[0])[1:] == list(columns), (name, line)
    assert "r.attention[l, h]" in page
