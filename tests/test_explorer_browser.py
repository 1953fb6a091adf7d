"""The explorer page in a real browser: headless Debian Chromium, the network blocked and recorded.

Skips cleanly where chromium, chromedriver or selenium is missing.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from attnsym import graphs
from attnsym.claims import verify
from attnsym.explorer import headless, page_data, write_page
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)

reason = headless.browser_available()
pytestmark = pytest.mark.skipif(reason is not None, reason=reason or "")

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def data():
    evidence = [verify("softmax-jacobian", quick=True), verify("gelu", quick=True)]
    return page_data(evidence=evidence, seed=3)


@pytest.fixture(scope="module")
def page(data, tmp_path_factory):
    return write_page(data, tmp_path_factory.mktemp("explorer") / "page.html")


@pytest.fixture(scope="module")
def browser(page):
    with headless.chromium() as driver:
        headless.requests_made(driver)  # forget the browser's start-up tab
        driver.get_log("browser")
        driver.load_seconds = headless.load(driver, page)
        driver.first_requests = headless.requests_made(driver)
        driver.first_console = driver.get_log("browser")
        yield driver


def _cells(driver, view="view-heatmap"):
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#' + arguments[0] + ' rect.cell')).map("
        "r => [Number(r.dataset.i), Number(r.dataset.j), r.dataset.w, r.getAttribute('fill')])", view)


def _choose(driver, select_id, value):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.ID, select_id)).select_by_value(str(value))


def test_the_page_makes_no_network_request(browser, page):
    urls = browser.first_requests
    assert urls, "the recorder saw no request at all (not even the page itself)"
    assert urls[0] == page.resolve().as_uri()
    outside = [u for u in urls if not u.startswith(("file:", "data:", "blob:"))]
    assert outside == []


def test_the_recorder_sees_and_blocks_a_network_request(tmp_path):
    """The control: a page that does fetch is seen fetching (so the test above can fail)."""
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><body data-ready="true"><img src="http://example.com/x.png"></body>')
    with headless.chromium() as driver:
        headless.requests_made(driver)
        headless.load(driver, control)
        urls = headless.requests_made(driver)
    assert "http://example.com/x.png" in urls


def test_no_console_errors(browser):
    errors = [e for e in browser.first_console if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    assert browser.execute_script("return document.querySelectorAll('.math-error').length") == 0


def test_math_is_typeset_and_its_source_is_one_click_away(browser):
    from selenium.webdriver.common.by import By

    text = browser.find_element(By.TAG_NAME, "body").text
    for raw in (r"\frac", r"\begin{", r"\sqrt", r"\operatorname", "$$"):
        assert raw not in text
    assert browser.execute_script("return document.querySelectorAll('.katex').length") > 50
    button = browser.find_element(By.CSS_SELECTOR, "#derivation-forward li.step:nth-child(5) button")
    button.click()
    source = browser.find_element(By.CSS_SELECTOR, "#derivation-forward li.step:nth-child(5) pre.latex-source")
    assert source.is_displayed() and r"\frac" in source.text
    button.click()
    assert not source.is_displayed()


def test_claims_expand_to_their_evidence(browser, data):
    from selenium.webdriver.common.by import By

    claim = browser.find_element(By.ID, "claim-gelu")
    assert claim.get_attribute("open") is None
    claim.find_element(By.TAG_NAME, "summary").click()
    assert claim.get_attribute("open") is not None
    body = claim.find_element(By.CLASS_NAME, "claim-body")
    assert data.claims[1]["statement"] in body.text
    assert body.find_elements(By.TAG_NAME, "img") and body.find_elements(By.CLASS_NAME, "katex")


def test_choosing_another_head_changes_the_heatmap(browser, data):
    A = np.asarray(data.inputs[0].attention)
    _choose(browser, "pick-input", 0)
    _choose(browser, "pick-head", 0)
    head0 = _cells(browser)
    _choose(browser, "pick-head", 1)
    head1 = _cells(browser)
    assert [c[3] for c in head0] != [c[3] for c in head1]
    for i, j, w, _ in head1:
        assert float(w) == A[0, 1, i, j]
    _choose(browser, "pick-head", "mean")
    for i, j, w, _ in _cells(browser):
        assert float(w) == pytest.approx(A[0, :, i, j].mean(), abs=TOL64.atol)
    _choose(browser, "pick-head", 0)


@pytest.mark.parametrize("head", [0, 1, "max"])
def test_hovering_a_token_shows_its_row_and_column_as_python_computed_them(browser, data, head):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    A = np.asarray(data.inputs[1].attention)[0]
    M = A.max(axis=0) if head == "max" else A[head]
    _choose(browser, "pick-input", 1)
    _choose(browser, "pick-head", head)
    k = 2
    token = browser.find_elements(By.CSS_SELECTOR, "#token-strip button.token")[k]
    ActionChains(browser).move_to_element(token).perform()
    panel = browser.find_element(By.ID, "token-panel")
    assert panel.get_attribute("data-token") == str(k)
    rows = panel.find_elements(By.CSS_SELECTOR, ".weights.row td.num")
    cols = panel.find_elements(By.CSS_SELECTOR, ".weights.col td.num")
    assert [r.text for r in rows] == [f"{w:.3f}" for w in M[k]]
    assert [c.text for c in cols] == [f"{w:.3f}" for w in M[:, k]]
    _choose(browser, "pick-input", 0)
    _choose(browser, "pick-head", 0)


def test_keyboard_tab_to_a_token_and_move_with_the_arrows(browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    first = browser.find_elements(By.CSS_SELECTOR, "#token-strip button.token")[0]
    first.send_keys(Keys.ENTER)
    assert browser.execute_script("return window.attnsymExplorer.state.token") == 0
    browser.switch_to.active_element.send_keys(Keys.ARROW_RIGHT)
    browser.switch_to.active_element.send_keys(Keys.ARROW_RIGHT)
    assert browser.execute_script("return window.attnsymExplorer.state.token") == 2
    assert browser.switch_to.active_element.text == browser.execute_script(
        "return document.querySelectorAll('#token-strip button.token')[2].textContent")
    assert browser.find_element(By.ID, "token-panel").get_attribute("data-token") == "2"
    browser.switch_to.active_element.send_keys(Keys.ENTER)  # unpin
    assert browser.execute_script("return window.attnsymExplorer.state.token") is None


def test_the_drawn_routing_graph_is_routing_graph(browser, data):
    A = np.asarray(data.inputs[0].attention)[0, 0]
    G = graphs.routing_graph(A, tokens=list(data.inputs[0].tokens))
    drawn = browser.execute_script(
        "return Array.from(document.querySelectorAll('#view-graph line.edge')).map("
        "e => [Number(e.dataset.j), Number(e.dataset.i), Number(e.dataset.w)])")
    assert sorted((j, i, w) for j, i, w in drawn) == sorted(G.edges(data="weight"))


def _capture_download(driver, button_css):
    """Click an export button, catching the Blob it hands to the browser's download."""
    return driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "const original = URL.createObjectURL;"
        "URL.createObjectURL = function (blob) { URL.createObjectURL = original;"
        "  blob.text().then(t => done(t)); return original.call(URL, blob); };"
        "document.querySelector(arguments[0]).click();", button_css)


@pytest.mark.parametrize("view", ["view-heatmap", "view-graph", "view-mlp"])
def test_svg_export_is_valid_svg(browser, view):
    text = _capture_download(browser, f"#{view} button[data-export=svg]")
    root = ET.fromstring(text.encode("utf-8"))
    assert root.tag == f"{SVG}svg"
    assert root.get("viewBox") and root.find(f"{SVG}title") is not None
    shapes = root.findall(f".//{SVG}rect") + root.findall(f".//{SVG}line")
    assert len(shapes) >= 6


def test_json_and_csv_export_hold_the_numbers_shown(browser, data):
    A = np.asarray(data.inputs[0].attention)[0, 0]
    exported = json.loads(_capture_download(browser, "#view-heatmap button[data-export=json]"))
    assert exported["tokens" if "tokens" in exported else "rows"] == list(data.inputs[0].tokens)
    np.testing.assert_array_equal(np.array(exported["matrix"]), A)
    csv = _capture_download(browser, "#view-heatmap button[data-export=csv]").strip().splitlines()
    assert csv[0].split(",")[1:] == list(data.inputs[0].tokens)
    np.testing.assert_array_equal(np.array([[float(v) for v in line.split(",")[1:]] for line in csv[1:]]), A)


def test_rollout_and_flow_views_show_python_rollout_and_flow(browser, data):
    inp = data.inputs[0]
    for view, expected in (("rollout", inp.rollout), ("flow", inp.flow)):
        _choose(browser, "pick-view", view)
        cells = _cells(browser)
        shown = np.zeros_like(expected)
        for i, j, w, _ in cells:
            shown[i, j] = float(w)
        np.testing.assert_array_equal(shown, expected)
    _choose(browser, "pick-view", "attention")


def test_contrast_grid_selects_layer_and_head(browser, data):
    c = data.contrasts[1]
    _choose(browser, "pick-word", 1)
    grid = _cells(browser, "view-contrast-grid")
    L, H = c.distance.shape
    assert {(i, j): float(w) for i, j, w, _ in grid} == {(layer, h): c.distance[layer, h] for layer in range(L) for h in range(H)}
    browser.execute_script("document.querySelector('#view-contrast-grid rect.cell[data-j=\"1\"]').dispatchEvent("
                           "new MouseEvent('click', {bubbles: true}))")
    assert browser.execute_script("return window.attnsymExplorer.state.head") == "1"
    shown = browser.execute_script("return document.querySelector('.contrast-distance').textContent")
    assert shown == f"{c.distance[0, 1]:.3f}"
    _choose(browser, "pick-head", 0)


def test_phone_width_has_no_horizontal_scroll(page):
    with headless.chromium(390, 844) as driver:
        headless.load(driver, page)
        wide = driver.execute_script("return document.documentElement.scrollWidth")
        assert wide <= 390


def test_the_page_and_python_colour_a_heatmap_alike(browser):
    """The page's JavaScript colour scale and attnsym._html.sequential (used by _repr_html_) are one scale."""
    from attnsym._html import sequential

    _choose(browser, "pick-head", 0)
    cells = _cells(browser)
    assert cells and all(fill == sequential(float(w)) for _, _, w, fill in cells)
    _choose(browser, "pick-head", "max")
    assert all(fill == sequential(float(w)) for _, _, w, fill in _cells(browser))
    _choose(browser, "pick-head", 0)
