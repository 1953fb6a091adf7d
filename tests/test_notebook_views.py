"""Jupyter views of a Route, a HeadReport and a TokenContrast: interactive, offline, drawn from the data as computed.

The HTML is what a notebook cell shows (``_repr_html_``); the browser tests open it in headless
Debian Chromium with the network blocked and recorded, as tests/test_explorer_browser.py does.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pytest

from attnsym import heads
from attnsym._html import VIEW_CSP, sequential
from attnsym.explorer import headless


@pytest.fixture(scope="module")
def model():
    from attnsym.models.evidence import packaged_model

    m = packaged_model()
    if m is None:
        pytest.skip("the packaged model is not installed")
    return m


@pytest.fixture(scope="module")
def route(model):
    return model.route("I ate an apple for lunch.")


@pytest.fixture(scope="module")
def report(model):
    return heads.classify(model.route(["I ate an apple for lunch.", "The cat sat on the mat."]))


@pytest.fixture(scope="module")
def contrast(model):
    return model.contrast("I ate an apple for lunch", "I bought an Apple phone today", token="apple")


def _document(view: str) -> str:
    """The document inside the view's iframe."""
    match = re.search(r'<iframe srcdoc="([^"]*)"', view)
    assert match, view[:200]
    return html.unescape(match.group(1))


def test_each_result_shows_an_offline_view_counted_from_one(route, report, contrast):
    for result in (route, report, contrast):
        view = result._repr_html_()
        doc = _document(view)
        assert VIEW_CSP in doc and "connect-src 'none'" in doc
        assert not re.search(r"(src|href)=\"?(https?:)?//", doc)  # nothing to fetch
        assert "from 1" in view or "1-based" in doc
    assert len(route._repr_html_()) < 100_000  # the data once (4 decimals), not a picture per layer


def test_a_text_cannot_break_out_of_the_view(model):
    r = model.route("a </script><script>alert(1)</script> b")
    doc = _document(r._repr_html_())
    assert doc.count("<script") == 2 and "alert(1)</script>" not in doc  # the data block and the view's script


browser_missing = headless.browser_available()


@pytest.fixture(scope="module")
def browser():
    if browser_missing:
        pytest.skip(browser_missing)
    with headless.chromium(1280, 1000) as driver:
        headless.requests_made(driver)  # forget the start-up tab
        yield driver


def _open(driver, view: str, folder: Path) -> list[str]:
    """Open the view as a notebook cell holds it; switch into its frame; return the requests the page made."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    page = folder / "cell.html"
    page.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{view}</body></html>",
                    encoding="utf-8")
    driver.switch_to.default_content()
    driver.get_log("browser")
    driver.get(page.resolve().as_uri())
    driver.switch_to.frame(driver.find_element(By.TAG_NAME, "iframe"))
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.getAttribute('data-ready')") == "true")
    return headless.wait_for_request(driver, page.resolve().as_uri())


def _cells(driver, view_id: str):
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#' + arguments[0] + ' rect.cell')).map("
        "r => [Number(r.dataset.i), Number(r.dataset.j), r.dataset.w, r.getAttribute('fill')])", view_id)


def _choose(driver, select_id: str, value: int | str) -> None:
    driver.execute_script("var s = document.getElementById(arguments[0]); s.value = String(arguments[1]);"
                          "s.dispatchEvent(new Event('change'));", select_id, value)


def _no_errors(driver) -> None:
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []


def test_route_view_draws_the_chosen_head_and_its_layer(browser, route, tmp_path):
    requests = _open(browser, route._repr_html_(), tmp_path)
    assert headless.network_requests(requests) == []
    n = route.n
    for layer, head in ((0, 0), (3, 9)):
        _choose(browser, "pick-layer", layer)
        _choose(browser, "pick-head", head)
        cells = _cells(browser, "view-heatmap")
        assert len(cells) == n * n
        for i, j, w, fill in cells:
            assert float(w) == pytest.approx(float(route.attention[layer, head, i, j]), abs=5e-4)  # in thousandths
            assert fill == sequential(float(w))  # the page's colour scale, computed alike
        caption = browser.find_element("css selector", "#view-heatmap figcaption").text
        assert f"layer {layer + 1}, head {head + 1} (1-based)" in caption
        expected = int((np.rint(route.attention[layer].astype(np.float64) * 1000) >= 50).sum())
        assert len(browser.find_elements("css selector", "#view-headview line.edge")) == expected
    one = int((np.rint(route.attention[3, 0].astype(np.float64) * 1000) >= 50).sum())
    browser.find_element("css selector", '#view-headview button[data-head="1"]').click()  # head 1 off
    assert len(browser.find_elements("css selector", "#view-headview line.edge")) == expected - one
    assert browser.find_elements("css selector", '#view-headview line.edge[data-head="1"]') == []
    _no_errors(browser)


def test_head_report_view_colours_by_the_chosen_score(browser, report, tmp_path):
    requests = _open(browser, report._repr_html_(), tmp_path)
    assert headless.network_requests(requests) == []
    cells = _cells(browser, "view-heads")
    assert len(cells) == report.layers * report.heads
    labels = browser.execute_script(
        "return Array.from(document.querySelectorAll('#view-heads text.label')).map(t => t.textContent)")
    assert labels == [heads.SHORT[report.primary[ly][h]] for ly in range(report.layers) for h in range(report.heads)]
    k = report.patterns.index("previous")
    _choose(browser, "pick-pattern", k)
    for ly, h, w, fill in _cells(browser, "view-heads"):
        assert float(w) == pytest.approx(float(report.scores[ly, h, k]), abs=5e-5)
        assert fill == sequential(float(w))
    _no_errors(browser)


def test_contrast_view_opens_the_words_rows_at_a_cell(browser, contrast, tmp_path):
    requests = _open(browser, contrast._repr_html_(), tmp_path)
    assert headless.network_requests(requests) == []
    L, H = contrast.role_distance.shape
    assert len(_cells(browser, "view-distance")) == L * H
    browser.find_element("css selector", '#view-distance rect.cell[data-i="2"][data-j="4"]').click()
    where = browser.find_element("css selector", "#view-reads .where").text
    assert where.startswith("layer 3, head 5 (1-based)")
    for k in (0, 1):
        bars = browser.execute_script(
            "return Array.from(document.querySelectorAll('#view-reads .reads[data-text=\"' + arguments[0] + '\"] .bar'))"
            ".map(b => Number(b.dataset.w))", k + 1)
        np.testing.assert_allclose(bars, contrast.rows[k][2, 4], atol=5e-5)
    _no_errors(browser)
