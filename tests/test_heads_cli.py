"""``attnsym heads``: the printed table, the files written with -o (figure, JSON, CSV), one-line errors."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from models_support import minilm, tiny_gpt2

from attnsym import heads as hd
from attnsym.cli import main
from attnsym.plots.heads import CLASS_COLOURS, head_classes_figure

TEXTS = ["I ate an apple for lunch.", "The cat sat on the mat, and then it slept."]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    minilm()  # skips without the packaged model
    out = tmp_path_factory.mktemp("heads") / "out"
    return main(["heads", *TEXTS, "-o", str(out)]), out


def test_heads_prints_a_layer_by_head_table(written, capsys):
    assert main(["heads", *TEXTS]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[1].split()[:3] == ["layer", "head", "1"] and lines[2].split()[0] == "1"
    assert len([ln for ln in lines if ln[:1].isdigit()]) == 6  # one row per layer
    expected = hd.classify(minilm().route(TEXTS))
    assert f"prev {expected.top[0, 2]:.2f}" in lines[2]  # layer 1, head 3: the previous-token head
    assert "induction and duplicate-token scores do not apply" in text


def test_heads_writes_figure_json_and_csv_equal_to_classify(written):
    status, out = written
    assert status == 0
    assert sorted(p.name for p in out.iterdir()) == ["heads.csv", "heads.json", "heads.png"]
    assert (out / "heads.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    expected = hd.classify(minilm().route(TEXTS))
    data = json.loads((out / "heads.json").read_text())
    assert data["model"] == "all-MiniLM-L6-v2" and "from 1" in data["numbering"]
    assert [(h["layer"], h["head"], h["class"]) for h in data["heads"]] == [
        (ly + 1, h + 1, expected.primary[ly][h]) for ly in range(6) for h in range(12)]
    assert [h["labels"] for h in data["heads"]] == [list(expected.labels[ly][h]) for ly in range(6) for h in range(12)]
    rows = list(csv.DictReader((out / "heads.csv").open()))
    assert len(rows) == 72 and rows[2]["layer"] == "1" and rows[2]["head"] == "3"
    assert rows[2]["labels"] == " ".join(expected.labels[0][2])
    assert float(rows[2]["previous"]) == pytest.approx(expected.scores[0, 2, 0], rel=1e-12)
    assert rows[2]["induction"] == ""  # not applicable to a bidirectional model


def test_heads_refuses_a_non_empty_folder_without_force(written, capsys):
    _, out = written
    before = (out / "heads.json").read_bytes()
    assert main(["heads", "a b c", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "exists and is not empty; pass --force" in err
    assert (out / "heads.json").read_bytes() == before
    assert main(["heads", "a b c", "-o", str(out), "--force"]) == 0
    assert json.loads((out / "heads.json").read_text())["texts"] == ["a b c"]


def test_heads_errors_are_one_line(capsys, tmp_path):
    assert main(["heads", "--model", str(tmp_path / "missing"), "x"]) == 2
    assert main(["heads", "   "]) == 2
    assert main(["heads", "x", "--seed", "-1"]) == 2
    assert main(["heads"]) == 2  # no text and no probe
    assert main(["heads", "--probe", "induction"]) == 2  # MiniLM is bidirectional
    assert main(["heads", "--probe", "induction", "x"]) == 2  # a probe takes no text
    errors = [ln for ln in capsys.readouterr().err.strip().splitlines()
              if not ln.startswith(("routing ", "probing "))]
    assert len(errors) == 6 and all(ln.startswith("attnsym heads: error:") for ln in errors)
    assert "--seed must be a non-negative integer (got -1)" in errors[2]
    assert "--probe induction" in errors[3] and "bidirectional" in errors[4] and "give no TEXT" in errors[5]


def test_heads_probe_induction_on_a_decoder(capsys, tmp_path):
    folder = tiny_gpt2()
    assert main(["heads", "--model", str(folder), "--probe", "induction", "--induction-length", "12",
                 "-o", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert "on the induction probe" in out and "probe: 4 random sequences of 12 tokens repeated twice" in out
    from attnsym import models

    expected = hd.probe(models.load(folder), length=12)
    data = json.loads((tmp_path / "p" / "heads.json").read_text())
    assert [h["labels"] for h in data["heads"]] == [list(c) for row in expected.labels for c in row]
    assert data["texts"][0].startswith("random sequence 1 of 12 tokens")


def test_heads_on_a_decoder_reports_induction(capsys, tmp_path):
    folder = tiny_gpt2()
    assert main(["heads", "--model", str(folder), "i like to eat apples", "--induction-length", "20",
                 "-o", str(tmp_path / "g")]) == 0
    assert "random sequences of 20 tokens repeated twice, seed 0" in capsys.readouterr().out
    data = json.loads((tmp_path / "g" / "heads.json").read_text())
    assert data["causal"] and all(h["scores"]["induction"] is not None and h["scores"]["next"] is None
                                  for h in data["heads"])


def test_the_figure_colours_each_cell_by_its_class():
    A = np.zeros((2, 3, 4, 4))
    A[:, 0] = np.eye(4)
    A[:, 1] = 0.25
    A[0, 2, :, 0] = 1.0
    A[1, 2] = np.eye(4, k=1)
    A[1, 2, 3, 3] = 1.0
    report = hd.classify(A, causal=False)
    fig = head_classes_figure(report)
    ax = fig.axes[0]
    grid = ax.images[0].get_array()
    cmap = ax.images[0].get_cmap()
    from matplotlib.colors import to_hex

    for ly in range(2):
        for h in range(3):
            colour = to_hex(cmap(ax.images[0].norm(grid[ly, h])))
            assert colour == CLASS_COLOURS[report.primary[ly][h]].lower()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["next-token (1)", "self (2)", "first-token (1)", "broad (2)"]
    assert ax.get_xlabel() == "head (from 1)" and ax.get_ylabel() == "layer (from 1)"
    assert "self\n1.00" in [t.get_text() for t in ax.texts]
