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


@pytest.fixture(scope="session")
def data():
    evidence = [verify("softmax-jacobian", quick=True), verify("gelu", quick=True)]
    return page_data(evidence=evidence, seed=3)


@pytest.fixture(scope="session")
def page(data, tmp_path_factory):  # built once per test session
    return write_page(data, tmp_path_factory.mktemp("explorer") / "page.html")


@pytest.fixture(scope="module")
def browser(page):
    with headless.chromium(1440, 900) as driver:
        headless.requests_made(driver)  # forget the browser's start-up tab
        driver.get_log("browser")
        driver.load_seconds = headless.load(driver, page)
        driver.first_requests = headless.wait_for_request(driver, page.resolve().as_uri())
        driver.first_console = driver.get_log("browser")
        yield driver


@pytest.fixture(scope="module")
def phone(page):
    with headless.chromium(390, 844) as driver:
        headless.load(driver, page)
        yield driver


def _cells(driver, view="view-heatmap"):
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#' + arguments[0] + ' rect.cell')).map("
        "r => [Number(r.dataset.i), Number(r.dataset.j), r.dataset.w, r.getAttribute('fill')])", view)


def _click(driver, element):
    """Click an element after scrolling it to the middle of the window (clear of the sticky header)."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def _choose(driver, select_id, value):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.ID, select_id)).select_by_value(str(value))


def test_the_page_makes_no_network_request(browser, page):
    urls = browser.first_requests
    assert page.resolve().as_uri() in urls, "the recorder did not see the page itself"
    # what could leave the machine; chrome://, data:, blob: and file: URLs never do
    assert headless.network_requests(urls) == []


def test_only_network_schemes_count_as_network_requests():
    urls = ["file:///tmp/p.html", "data:image/png;base64,AAAA", "chrome://new-tab-page/", "blob:null/1",
            "about:blank", "http://example.com/", "HTTPS://example.com/x", "ws://h/", "wss://h/", "ftp://h/f"]
    assert headless.network_requests(urls) == urls[5:]


def test_the_recorder_sees_and_blocks_a_network_request(tmp_path):
    """The control: a page that does fetch is seen fetching (so the test above can fail)."""
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><body data-ready="true"><img src="http://example.com/x.png"></body>')
    with headless.chromium() as driver:
        headless.requests_made(driver)
        headless.load(driver, control)
        urls = headless.wait_for_request(driver, "http://example.com/x.png")
    assert "http://example.com/x.png" in headless.network_requests(urls)


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
    fold = browser.find_element(By.ID, "derivations-fold")
    assert fold.get_attribute("open") is None  # complete but folded by default
    _click(browser, fold.find_element(By.TAG_NAME, "summary"))
    button = browser.find_element(By.CSS_SELECTOR, "#derivation-forward li.step:nth-child(5) button")
    _click(browser, button)
    source = browser.find_element(By.CSS_SELECTOR, "#derivation-forward li.step:nth-child(5) pre.latex-source")
    assert source.is_displayed() and r"\frac" in source.text
    button.click()
    assert not source.is_displayed()
    _click(browser, fold.find_element(By.TAG_NAME, "summary"))


def test_claims_expand_to_their_evidence(browser, data):
    from selenium.webdriver.common.by import By

    claim = browser.find_element(By.ID, "claim-gelu")
    assert claim.get_attribute("open") is None
    _click(browser, claim.find_element(By.TAG_NAME, "summary"))
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


def _capture_name(driver, button_css):
    """Click an export button, catching the file name its download link carries."""
    return driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "const original = HTMLAnchorElement.prototype.click;"
        "HTMLAnchorElement.prototype.click = function () { HTMLAnchorElement.prototype.click = original;"
        "  done(this.getAttribute('download')); };"
        "document.querySelector(arguments[0]).click();", button_css)


@pytest.mark.parametrize("view", ["view-heatmap", "view-graph", "view-mlp", "view-headview", "view-contrast-grid"])
def test_svg_export_is_valid_svg_with_its_caption_and_legend(browser, view):
    _choose(browser, "pick-input", 0)
    _choose(browser, "pick-head", 0)
    text = _capture_download(browser, f"#{view} button[data-export=svg]")
    root = ET.fromstring(text.encode("utf-8"))
    assert root.tag == f"{SVG}svg"
    assert root.get("viewBox") and root.find(f"{SVG}title") is not None
    caption = ["".join(t.itertext()) for t in root.iter(f"{SVG}text") if t.get("class") == "caption"]
    assert caption and caption[0] == root.find(f"{SVG}title").text  # whole, on as many lines as it needs
    shown = browser.execute_script("return document.querySelector('#' + arguments[0] + ' svg text.caption').textContent", view)
    assert caption[0] == shown
    if view in ("view-heatmap", "view-contrast-grid"):
        assert root.find(f".//{SVG}g[@class='legend']") is not None
    shapes = root.findall(f".//{SVG}rect") + root.findall(f".//{SVG}line")
    assert len(shapes) >= 6


def test_exported_file_names_differ_per_head_and_say_what_they_hold(browser):
    _choose(browser, "pick-input", 0)
    names = set()
    for head in (0, 1):
        _choose(browser, "pick-head", head)
        for kind in ("svg", "json", "csv"):
            name = _capture_name(browser, f"#view-heatmap button[data-export={kind}]")
            assert name.endswith(f"_L1_H{head + 1}.{kind}") and "heatmap" in name and "toy-input-1" in name
            names.add(name)
    assert len(names) == 6
    _choose(browser, "pick-head", 0)


def test_json_and_csv_export_hold_the_numbers_shown_counting_from_1(browser, data):
    _choose(browser, "pick-input", 0)
    _choose(browser, "pick-head", 1)
    A = np.asarray(data.inputs[0].attention)[0, 1]
    exported = json.loads(_capture_download(browser, "#view-heatmap button[data-export=json]"))
    assert exported["rows"] == list(data.inputs[0].tokens)
    assert (exported["layer"], exported["head"]) == (1, 2) and "count from 1" in exported["numbering"]
    np.testing.assert_array_equal(np.array(exported["matrix"]), A)
    csv = _capture_download(browser, "#view-heatmap button[data-export=csv]").strip().splitlines()
    assert csv[0].startswith("# ") and "layer 1, head 2" in csv[0] and "count from 1" in csv[0]
    assert csv[1].split(",")[1:] == list(data.inputs[0].tokens)
    np.testing.assert_array_equal(np.array([[float(v) for v in line.split(",")[1:]] for line in csv[2:]]), A)
    _choose(browser, "pick-head", 0)


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


def test_contrast_grid_marks_its_cell_and_selects_layer_and_head(browser, data):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    c = data.contrasts[1]
    _choose(browser, "pick-word", 1)
    _open_more(browser)
    grid = _cells(browser, "view-contrast-grid")
    L, H = c.distance.shape
    assert {(i, j): float(w) for i, j, w, _ in grid} == {(layer, h): c.distance[layer, h] for layer in range(L) for h in range(H)}
    browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")  # the view it changes is out of sight
    cell = browser.find_element(By.CSS_SELECTOR, '#view-contrast-grid rect.cell[data-j="0"]')
    cell.send_keys(Keys.ENTER)  # the keyboard reaches the grid
    assert browser.execute_script("return window.attnsymExplorer.state.head") == "0"
    chosen = browser.find_elements(By.CSS_SELECTOR, "#view-contrast-grid rect.cell.chosen")
    assert [(r.get_attribute("data-i"), r.get_attribute("data-j")) for r in chosen] == [("0", "0")]
    shown = browser.execute_script("return document.querySelector('.contrast-distance').textContent")
    assert shown == f"{c.distance[0, 0]:.3f}"
    assert _in_viewport(browser, "headline")
    _choose(browser, "pick-word", 0)


def _open_more(driver):
    """Unfold the contrast's details (the distance grid, the rows, the other measures)."""
    driver.execute_script("const d = document.getElementById('contrast-more'); d.open = true;"
                          "d.dispatchEvent(new Event('toggle'))")


def _in_viewport(driver, element_id):
    return driver.execute_script(
        "const r = document.getElementById(arguments[0]).getBoundingClientRect();"
        "return r.top >= 0 && r.top < innerHeight - 80 && r.bottom > 0 && r.left >= 0 && r.right <= innerWidth + 1", element_id)


def test_the_first_screen_shows_the_contrast_at_laptop_and_phone_size(browser, phone, data):
    for driver in (browser, phone):
        driver.execute_script("window.scrollTo(0, 0)")
        assert _in_viewport(driver, "story-lines"), driver.get_window_size()
    assert _in_viewport(browser, "headline")
    c = data.contrasts[0]
    assert data.inputs[c.inputs[0]].name in browser.title and c.word in browser.title


def test_phone_width_has_no_horizontal_scroll(phone):
    for view in ("attention", "rollout"):
        phone.execute_script("window.attnsymExplorer.state.view = arguments[0]; window.attnsymExplorer.select(2)", view)
        assert phone.execute_script("return document.documentElement.scrollWidth <= innerWidth && innerWidth == 390")
    phone.execute_script("window.attnsymExplorer.state.view = 'attention'; window.attnsymExplorer.select(null)")


def test_the_overview_has_every_head_with_the_numbers_of_the_route_and_its_class(browser, data):
    from attnsym.heads import classify

    inp = data.inputs[0]
    thumbs = browser.execute_script("return Array.from(document.querySelectorAll('#overview-grid button.thumb')).map("
                                    "b => [Number(b.dataset.layer), Number(b.dataset.head), b.dataset.class])")
    report = classify(np.asarray(inp.attention), tokens=[inp.tokens])
    assert thumbs == [[ly + 1, h + 1, report.primary[ly][h]] for ly in range(inp.layers) for h in range(inp.heads)]
    exported = json.loads(_capture_download(browser, "#view-overview button[data-export=json]"))
    np.testing.assert_array_equal(np.array(exported["attention"]), inp.attention)
    assert [(x["layer"], x["head"], x["class"]) for x in exported["head_classes"]] == [(t[0], t[1], t[2]) for t in thumbs]


def test_clicking_a_thumbnail_opens_that_head(browser):
    from selenium.webdriver.common.by import By

    _click(browser, browser.find_element(By.CSS_SELECTOR, '#overview-grid button.thumb[data-head="2"]'))
    assert browser.execute_script("return [window.attnsymExplorer.state.layer, window.attnsymExplorer.state.head]") == [0, "1"]
    assert browser.find_element(By.ID, "routing-what").text == "layer 1, head 2"
    _choose(browser, "pick-head", 0)


def test_head_view_toggles_heads(browser, data):
    from selenium.webdriver.common.by import By

    def heads_drawn():
        return set(browser.execute_script(
            "return Array.from(document.querySelectorAll('#view-headview line.edge')).map(e => e.dataset.head)"))

    browser.execute_script("window.attnsymExplorer.state.hv = null; window.attnsymExplorer.render()")  # as the page opens
    start = data.contrasts[0].cell[1] + 1  # it opens on the contrast's head alone
    assert heads_drawn() == {str(start)}
    other = 3 - start
    _click(browser, browser.find_element(By.CSS_SELECTOR, f'#headview-body button.head-toggle[data-head="{other}"]'))
    assert heads_drawn() == {"1", "2"}
    _click(browser, browser.find_element(By.CSS_SELECTOR, f'#headview-body button.head-toggle[data-head="{start}"]'))
    assert heads_drawn() == {str(other)}
    _click(browser, browser.find_element(By.CSS_SELECTOR, f'#headview-body button.head-toggle[data-head="{start}"]'))


def test_a_pin_survives_a_hover_and_escape_unpins(browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _choose(browser, "pick-input", 0)
    label = browser.find_element(By.CSS_SELECTOR, '#view-heatmap text.row-label[data-i="1"]')
    label.send_keys(Keys.ENTER)  # pin from a heatmap row label, by keyboard
    panel = browser.find_element(By.ID, "token-panel")
    assert panel.get_attribute("data-token") == "1" and panel.get_attribute("data-pinned") == "true"
    token = browser.find_elements(By.CSS_SELECTOR, "#token-strip button.token")[4]
    ActionChains(browser).move_to_element(token).perform()
    assert browser.find_element(By.ID, "token-panel").get_attribute("data-token") == "1"
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    assert browser.execute_script("return window.attnsymExplorer.state.token") is None
    browser.execute_script("document.querySelector('#view-graph g.node[data-k=\"3\"]')"
                           ".dispatchEvent(new MouseEvent('click', {bubbles: true}))")
    assert browser.execute_script("return window.attnsymExplorer.state.token") == 3  # a graph node pins
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)


def test_evidence_is_typeset_with_no_raw_json_or_latex_in_sight(browser):
    from selenium.webdriver.common.by import By

    browser.execute_script("document.querySelectorAll('details.claim').forEach(c => c.open = true)")
    text = browser.find_element(By.ID, "claims").text
    for raw in ('{"', '"latex"', '"text"', r"\frac", "\\"):
        assert raw not in text
    assert browser.find_elements(By.CSS_SELECTOR, "#claims .claim-body .katex")
    browser.execute_script("document.querySelectorAll('details.claim').forEach(c => c.open = false)")


def test_the_page_and_python_colour_a_heatmap_alike(browser):
    """The page's JavaScript colour scale and attnsym._html.sequential (used by _repr_html_) are one scale,
    stretched to each view's largest value (the page's one rule, stated in every legend)."""
    from attnsym._html import sequential

    for head in (0, "max"):
        _choose(browser, "pick-head", head)
        cells = _cells(browser)
        top = max(float(w) for _, _, w, _ in cells)
        assert cells and all(fill == sequential(float(w) / top) for _, _, w, fill in cells)
    _choose(browser, "pick-head", 0)


@pytest.fixture(scope="module")
def long_page(tmp_path_factory):
    """A 64-token text (random attention rows, one layer, two heads): the size the page must keep readable."""
    from attnsym.explorer import MlpData, routing_input

    rng = np.random.default_rng(0)
    n = 64
    A = rng.dirichlet(np.full(n, 0.3), size=(1, 2, n))
    tokens = [f"t{k + 1}" for k in range(n)]
    mlp = MlpData("feed-forward (tokens)", tuple(tokens), tuple(tokens), np.eye(n), "fixed")
    inp = routing_input("a long text", "random rows", tokens, A, mlp, flow=False)
    data = page_data(evidence=(), inputs=[inp], toy=False, derivations=False)
    return inp, write_page(data, tmp_path_factory.mktemp("long") / "long.html")


def test_a_64_token_text_thins_its_labels_and_edges_with_a_threshold_control(long_page):
    from selenium.webdriver.support.ui import WebDriverWait

    inp, page = long_page
    with headless.chromium(1440, 900) as driver:
        headless.load(driver, page)
        labels = driver.execute_script("return document.querySelectorAll('#view-heatmap text.row-label').length")
        assert labels == 32  # every second of 64
        A = np.asarray(inp.attention)[0, 0]

        def edges():
            return driver.execute_script("return document.querySelectorAll('#view-graph line.edge').length")

        threshold = float(driver.execute_script("return document.getElementById('pick-threshold').value"))
        assert threshold == 0.05 and edges() == int(np.count_nonzero(A >= 0.05))
        driver.execute_script("const s = document.getElementById('pick-threshold'); s.value = '0.2';"
                              "s.dispatchEvent(new Event('input'))")
        WebDriverWait(driver, 30).until(lambda d: edges() == int(np.count_nonzero(A >= 0.2)))
        assert driver.execute_script("return document.documentElement.scrollWidth <= innerWidth")


def test_keyboard_tabs_into_the_heatmap_moves_with_the_arrows_and_pins_with_enter(browser, data):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _choose(browser, "pick-input", 0)
    _choose(browser, "pick-head", 0)
    browser.execute_script("window.attnsymExplorer.select(null)")
    stops = browser.find_elements(By.CSS_SELECTOR, '#view-heatmap rect.cell[tabindex="0"]')
    assert len(stops) == 1  # one tab stop per grid (roving tabindex), not one per cell
    labels = browser.find_elements(By.CSS_SELECTOR, "#view-heatmap text.row-label")
    labels[-1].send_keys(Keys.TAB)  # from the last row label, Tab enters the grid
    active = browser.switch_to.active_element
    assert (active.get_attribute("class"), active.get_attribute("data-i"), active.get_attribute("data-j")) == ("cell", "0", "0")
    for key in (Keys.ARROW_RIGHT, Keys.ARROW_RIGHT, Keys.ARROW_DOWN, Keys.ARROW_LEFT):
        browser.switch_to.active_element.send_keys(key)
    active = browser.switch_to.active_element
    assert (active.get_attribute("data-i"), active.get_attribute("data-j"), active.get_attribute("tabindex")) == ("1", "1", "0")
    ring = browser.find_element(By.CSS_SELECTOR, "#view-heatmap rect.focus-ring")  # visible, on the focused cell
    assert ring.get_attribute("visibility") == "visible"
    assert (ring.get_attribute("x"), ring.get_attribute("y")) == (active.get_attribute("x"), active.get_attribute("y"))
    A = np.asarray(data.inputs[0].attention)[0, 0]
    assert float(active.get_attribute("data-w")) == A[1, 1] and active.get_attribute("aria-label").endswith(f"{A[1, 1]:.3f}")
    active.send_keys(Keys.ENTER)  # pins the cell's query token; the focus stays on the cell
    assert browser.execute_script("return window.attnsymExplorer.state.token") == 1
    panel = browser.find_element(By.ID, "token-panel")
    assert panel.get_attribute("data-token") == "1" and panel.get_attribute("data-pinned") == "true"
    active = browser.switch_to.active_element
    assert (active.get_attribute("data-i"), active.get_attribute("data-j")) == ("1", "1")
    active.send_keys(Keys.ESCAPE)
    assert browser.execute_script("return window.attnsymExplorer.state.token") is None
    active = browser.switch_to.active_element  # Escape unpins and the focus stays on the cell
    assert (active.get_attribute("data-i"), active.get_attribute("data-j")) == ("1", "1")
    svg_text = _capture_download(browser, "#view-heatmap button[data-export=svg]")
    assert "focus-ring" not in svg_text  # the ring is the page's, not the figure's


def test_keyboard_moves_on_the_contrast_grid_and_enter_chooses(browser, data):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _choose(browser, "pick-word", 1)
    _open_more(browser)
    c = data.contrasts[1]
    assert c.cell == (0, 1) and c.distance.shape == (1, 2)
    stop = browser.find_elements(By.CSS_SELECTOR, '#view-contrast-grid rect.cell[tabindex="0"]')
    assert [(s.get_attribute("data-i"), s.get_attribute("data-j")) for s in stop] == [("0", "1")]  # the chosen cell
    moves = []
    for key in (Keys.ARROW_DOWN, Keys.ARROW_LEFT, Keys.END, Keys.HOME):  # down is clamped at the last layer
        (stop[0] if not moves else browser.switch_to.active_element).send_keys(key)
        moves.append(browser.switch_to.active_element.get_attribute("data-j"))
    assert moves == ["1", "0", "1", "0"]
    browser.switch_to.active_element.send_keys(Keys.SPACE)
    assert browser.execute_script("return [window.attnsymExplorer.state.layer, window.attnsymExplorer.state.head]") == [0, "0"]
    chosen = browser.find_elements(By.CSS_SELECTOR, "#view-contrast-grid rect.cell.chosen")
    assert [(r.get_attribute("data-i"), r.get_attribute("data-j")) for r in chosen] == [("0", "0")]
    assert browser.find_element(By.CSS_SELECTOR, ".contrast-distance").text == f"{c.distance[0, 0]:.3f}"
    assert browser.switch_to.active_element.get_attribute("data-j") == "0"
    _choose(browser, "pick-word", 0)
    _choose(browser, "pick-head", 0)


def tapped_token_details(driver, k):
    """Tap token ``k`` of the strip (scrolled to the middle of the screen); the geometry of it and its details."""
    from selenium.webdriver.common.by import By

    token = driver.find_elements(By.CSS_SELECTOR, "#token-strip button.token")[k]
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", token)
    token.click()
    return driver.execute_script(
        "const p = document.getElementById('token-panel'), r = p.getBoundingClientRect();"
        "const t = document.querySelectorAll('#token-strip button.token')[arguments[0]].getBoundingClientRect();"
        "return {top: r.top, token_bottom: t.bottom, height: innerHeight, width: innerWidth,"
        " scroll_width: document.documentElement.scrollWidth, token: p.dataset.token, pinned: p.dataset.pinned,"
        " inline: p.classList.contains('inline')}", k)


def assert_details_next_to_the_tap(driver, k):
    """At 390 px the tapped token's details open just under its line, on screen, and nothing scrolls sideways."""
    got = tapped_token_details(driver, k)
    assert got["width"] == 390 and got["scroll_width"] <= 390, got
    assert (got["token"], got["pinned"], got["inline"]) == (str(k), "true", True), got
    assert 0 <= got["top"] < got["height"] - 80, got  # the details' top is in the viewport
    assert 0 <= got["top"] - got["token_bottom"] < 40, got  # directly under the token's line
    driver.execute_script("window.attnsymExplorer.select(null)")
    assert driver.execute_script("return document.getElementById('token-panel').parentNode.id") == "routing"


def test_a_tapped_token_shows_its_details_next_to_it_on_a_phone(phone, browser):
    assert_details_next_to_the_tap(phone, 2)
    got = tapped_token_details(browser, 2)  # a laptop keeps the panel under the strip (a hover never moves it)
    assert got["inline"] is False and got["token"] == "2"
    browser.execute_script("window.attnsymExplorer.select(null)")


def test_keyboard_moves_over_the_overview_and_enter_opens_a_head(browser, data):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _choose(browser, "pick-input", 0)
    _choose(browser, "pick-head", 0)
    stops = browser.find_elements(By.CSS_SELECTOR, '#overview-grid button.thumb[tabindex="0"]')
    assert [(s.get_attribute("data-layer"), s.get_attribute("data-head")) for s in stops] == [("1", "1")]  # the open head
    stops[0].send_keys(Keys.ARROW_RIGHT)
    assert browser.switch_to.active_element.get_attribute("data-head") == "2"
    browser.switch_to.active_element.send_keys(Keys.HOME)
    browser.switch_to.active_element.send_keys(Keys.END)
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    heads = data.inputs[0].heads
    state = browser.execute_script("return [window.attnsymExplorer.state.layer, window.attnsymExplorer.state.head]")
    assert state == [0, str(heads - 1)]
    chosen = browser.find_elements(By.CSS_SELECTOR, '#overview-grid button.thumb.chosen[tabindex="0"]')
    assert [c.get_attribute("data-head") for c in chosen] == [str(heads)]
    _choose(browser, "pick-head", 0)


_CLIPPED_TEXT = """
const out = [];
document.querySelectorAll('svg').forEach(s => {
  if (s.parentElement.closest('svg')) return;
  const r = s.getBoundingClientRect();
  if (!r.width) return;
  s.querySelectorAll('text').forEach(t => {
    const b = t.getBoundingClientRect();
    if (b.width && (b.left < r.left - 1 || b.right > r.right + 1 || b.top < r.top - 1 || b.bottom > r.bottom + 1))
      out.push((s.closest('[id]') || {}).id + ': ' + t.textContent);
  });
});
return out;"""


def _views_fit(driver):
    """Every routing view in turn: no SVG text outside its drawing, no caption cut short with an ellipsis."""
    views = driver.execute_script("return Array.from(document.getElementById('pick-view').options, o => o.value)")
    for view in views:
        _choose(driver, "pick-view", view)
        assert driver.execute_script(_CLIPPED_TEXT) == [], view
        captions = driver.execute_script("return Array.from(document.querySelectorAll('svg text.caption'), t => t.textContent)")
        assert captions and not any("…" in c for c in captions), view
    _choose(driver, "pick-view", "attention")
    return views


def test_no_svg_caption_or_note_runs_past_its_drawing(browser, phone, long_page):
    """Captions and notes wrap inside their drawing: "toy input 1 (random vectors) · attention flow over 1 layer(s),
    heads averaged" and "… blue positive, red negative (64 edges)" ran past its edge, at both widths and on 64 tokens."""
    for driver in (browser, phone):
        _choose(driver, "pick-input", 0)
        assert _views_fit(driver) == ["attention", "rollout", "flow"]
    wrapped = browser.execute_script("return document.querySelectorAll('#view-mlp svg text[data-wrap] tspan').length")
    assert wrapped >= 2  # the MLP's note is longer than its drawing is wide: it takes two lines
    with headless.chromium(1440, 900) as driver:
        headless.load(driver, long_page[1])
        assert _views_fit(driver) == ["attention", "rollout"]


def test_a_toy_page_never_opens_silently_on_a_sink_head(tmp_path):
    """Toy data only: the headline opens on the most different head that is no sink (seed 23: head 1, not the end-token
    sink at head 2); where every head is a sink, the headline calls it one."""
    from attnsym.explorer import ContrastData, MlpData, routing_input

    toy_page = write_page(page_data(evidence=(), derivations=False, seed=23), tmp_path / "toy.html")
    n, tokens = 4, ["a", "b", "c", "d"]
    parked = np.full((1, 1, n, n), 0.1)
    parked[..., 0] = 0.7  # every query parks on the first token: a first-token sink
    mlp = MlpData("feed-forward (tokens)", tuple(tokens), tuple(tokens), np.eye(n), "fixed")
    inputs = [routing_input(f"input {k}", "hand-made rows", tokens, parked, mlp, flow=False) for k in (1, 2)]
    rows = {"heads": parked[:, :, 2], "mean": parked[:, 0, 2], "max": parked[:, 0, 2]}
    contrast = ContrastData("c", (0, 1), (2, 2), np.array([[0.0]]), "distance", (rows, rows))
    sink_page = write_page(page_data(evidence=(), inputs=inputs, contrasts=[contrast], toy=False, derivations=False),
                           tmp_path / "sink.html")
    with headless.chromium(1440, 900) as driver:
        headless.load(driver, toy_page)
        headline = driver.execute_script("return document.getElementById('headline').textContent")
        assert headline.startswith("Layer 1, head 1:") and "sink" not in headline
        headless.load(driver, sink_page)
        headline = driver.execute_script("return document.getElementById('headline').textContent")
        assert "parks its attention on “a” (0.700), the first token: a sink head (first-token)" in headline
