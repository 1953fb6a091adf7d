"""``attnsym route`` and ``attnsym explore`` on a small random model folder of every family of the table.

The folders are those of ``models_support.family_model`` (built once per session with
transformers' ``save_pretrained`` beside a word-level tokenizer): what the commands write is read
back and compared with :meth:`Model.route` of the same folder.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from models_support import FAMILY_NAMES, family_model
from models_support import FAMILY_TEXTS as TEXTS

from attnsym import graphs, models
from attnsym.cli import main

pytest.importorskip("torch")
pytest.importorskip("transformers")

pytestmark = pytest.mark.parametrize("name", FAMILY_NAMES)


def test_cli_route_on_every_family_folder(name, tmp_path):
    folder, _ = family_model(name)
    out = tmp_path / "out"
    status = main(["route", "--model", str(folder), TEXTS[0], TEXTS[1], "--no-flow", "--format", "json", "-o", str(out)])
    assert status == 0
    m = models.load(folder)
    r = m.route(TEXTS[1])
    written = json.loads((out / "text2" / "route.json").read_text())
    assert written["tokens"] == list(r.tokens)
    heads = m.config.heads
    assert len(list((out / "text1" / "graphs").glob("layer*-head*.json"))) == m.config.layers * heads
    A = graphs.attention_matrix(graphs.read(out / "text2" / "graphs" / f"layer2-head{heads}.json"))
    np.testing.assert_allclose(A, r.attention[1, heads - 1], atol=1e-6)
    assert "apple" in (out / "report.md").read_text()  # the contrast of a word: explore's, below


def test_cli_explore_on_every_family_folder(name, tmp_path):
    folder, _ = family_model(name)
    page = tmp_path / "page.html"
    status = main(["explore", "--model", str(folder), TEXTS[0], TEXTS[1], "--word", "apple", "--no-claims", "--quick",
                   "--no-toy", "--no-flow", "-o", str(page)])
    html = page.read_text(encoding="utf-8")
    assert status == 0 and models.load(folder).config.describe() in html.replace("&#x27;", "'")
