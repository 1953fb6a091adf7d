"""``attnsym verify`` reads well at 80 columns: labelled columns, whole words, a summary line."""

from __future__ import annotations

import re

import pytest

from attnsym.claims import CLAIMS, Evidence, claim
from attnsym.cli import main
from attnsym.cli.verify import AS_EXPECTED_NOTE, summary_line

LONG = ("exact for symbolic d: E = 0, Var = d, Var/d = 1; Monte Carlo agrees at 7 d in 1..4096 and for uniform "
        "and ±1 components (max |z| = 2.47 ≤ 3.86); `2*d*n**2` operations")


@pytest.fixture
def two_claims():
    ids = ("cli-long-holds", "cli-conditional")

    def long_check(ctx):
        return Evidence(ids[0], "A claim with long evidence.", "holds",
                        method="symbolic proof (exact, symbolic d) + Monte Carlo (95% CI)", summary=LONG)

    def conditional(ctx):
        return Evidence(ids[1], "A claim with conditions.", "holds-under-conditions", method="graph computation",
                        summary="holds for n ≥ 2", conditions=("n ≥ 2",))

    claim(ids[0], "A claim with long evidence.")(long_check)
    claim(ids[1], "A claim with conditions.")(conditional)
    yield ids
    for cid in ids:
        CLAIMS.pop(cid, None)


@pytest.mark.parametrize("columns", [80, 100, 160])
def test_table_fits_labels_and_keeps_words(columns, two_claims, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["verify", *two_claims]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(map(len, lines)) <= columns
    for label in ("claim", "verdict", "time (s)"):
        assert label in out
    if columns < 120:
        assert "method:" in out and "evidence:" in out
    else:
        assert "method" in out and "key evidence" in out
    flat = " ".join(re.sub(r"[│┃]", " ", out).split())
    words = set(flat.split())
    for word in LONG.replace("`", "").split():  # every word of the evidence, whole (no cut words)
        assert word in words, word
    assert "`" not in out  # code spans are styled, not shown with backticks
    assert "2 claims: 1 holds, 1 holds under conditions, 0 fail; all as expected" in out
    assert "as expected =" in flat


def test_summary_line_names_the_claims_not_as_expected():
    bad = Evidence("x", "s", "fails", "m", "e")
    assert summary_line([bad]) == "1 claim: 0 hold, 0 hold under conditions, 1 fails; 1 not as expected (x)"


def test_list_explains_as_expected(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["verify", "--list"]) == 0
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= 80
    assert "expected verdict" in out and "variance-scaling" in out
    flat = " ".join(out.split())
    assert AS_EXPECTED_NOTE.split(";")[0] in flat
