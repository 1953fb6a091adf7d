"""``attnsym route``: files written, what they hold, and one-line errors with exit status 2."""

from __future__ import annotations

import json

import numpy as np
import pytest
from models_support import minilm

from attnsym import graphs
from attnsym.cli import main

APPLE = ["the Apple phone launch event", "I like to eat apples"]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    minilm()  # skips without the packaged model
    out = tmp_path_factory.mktemp("route")
    status = main(["route", *APPLE, "--token", "apple", "--format", "json", "-o", str(out)])
    return status, out


def test_route_writes_graphs_figures_and_report(written):
    status, out = written
    assert status == 0
    assert len(list((out / "text1" / "graphs").glob("layer*-head*.json"))) == 72
    for name in ("report.md", "contrast.png", "contrast.md", "contrast.json", "text1/heatmaps.png",
                 "text2/rollout-flow.png", "text2/route.json"):
        assert (out / name).is_file(), name
    report = (out / "report.md").read_text()
    assert "'Apple' in 'the Apple phone launch event' and 'apples' in 'I like to eat apples'" in report
    assert "[CLS], [SEP] and the first token" in report and "identical" in report


def test_route_graph_files_hold_the_models_attention(written):
    _, out = written
    r = minilm().route(APPLE[1])
    G = graphs.read(out / "text2" / "graphs" / "layer3-head6.json")  # text 2, layer index 2, head index 5
    A = graphs.attention_matrix(G)
    np.testing.assert_allclose(A, r.attention[2, 5], atol=1e-6)
    assert [G.nodes[i]["token"] for i in range(r.n)] == r.labels()
    data = json.loads((out / "contrast.json").read_text())
    assert data["weights_identical"] is True and len(data["role_distance"]) == 6


def test_route_refuses_existing_files_and_bad_input(written, capsys):
    _, out = written
    capsys.readouterr()
    assert main(["route", *APPLE, "--token", "apple", "--no-graphs", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "exist" in err and "--force" in err and err.count("\n") == 1  # refused before any work
    assert main(["route", APPLE[0], "--token", "apple", "-o", str(out / "new")]) == 2
    assert "exactly two texts (got 1 text(s))" in capsys.readouterr().err
    assert main(["route", "", "-o", str(out / "new")]) == 2
    assert "at least one word" in capsys.readouterr().err
    assert main(["route", "hello", "--model", str(out / "nowhere"), "-o", str(out / "new")]) == 2
    assert "neither a folder nor a packaged model" in capsys.readouterr().err
    assert main(["route", *APPLE, "--token", "pear", "-o", str(out / "new")]) == 2
    assert "'pear' is not a word of text1" in capsys.readouterr().err
    assert not (out / "new").exists()  # nothing is written before every check passed


def test_tour_section_leads_the_tour_with_the_apple_contrast(tmp_path, monkeypatch):
    # the files themselves are what test_route_writes_graphs_figures_and_report checks; here: what the tour asks for
    from attnsym.cli import route, tour
    from attnsym.models import evidence

    assert tour.STEPS[0][1] is tour._real_model and tour.SECTIONS[0][0] == "real-model"
    calls = []

    def fake_write_route(folder, model, texts, token, **options):
        calls.append((folder, model.name, list(texts), token, options))
        result = route.RouteFiles(folder)
        result.facts.update(words=["Apple", "apples"], mean_role_distance=0.28, max_role_distance=0.8,
                            most_different=(0, 3), weights_identical=True)
        return result

    monkeypatch.setattr(route, "write_route", fake_write_route)
    minilm()
    written = route.tour_section(tmp_path)
    assert calls == [(tmp_path, "all-MiniLM-L6-v2", list(evidence.APPLE[:2]), "apple", {"graphs": False, "overwrite": False})]
    assert "'Apple'" in written.facts["summary"] and "layer 1 head 4" in written.facts["summary"]
    evidence.packaged_model.cache_clear()
    monkeypatch.setattr(evidence, "available", lambda: [])
    try:
        assert route.tour_section(tmp_path / "none") is None  # no model installed: the tour has no such section
    finally:
        evidence.packaged_model.cache_clear()
