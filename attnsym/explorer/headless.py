"""Drive an explorer page in headless Chromium: the browser tests, the load time, the docs' screenshots.

Uses Debian's ``chromium`` and ``chromedriver`` through selenium (a test dependency, imported
only here and only when a browser is asked for). The network is blocked twice: Chromium's
resolver maps every host to nothing, and the DevTools protocol blocks every ``http(s)``/``ws``
URL; every request the page makes is recorded from the performance log, so a test can assert
that there was none.

``python -m attnsym.explorer.headless FOLDER`` writes the screenshots of the main views
(the docs and the README show them) and prints the page's size and load time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..claims import verify_all
from . import write_tour_page

__all__ = ["BLOCKED", "NETWORK_SCHEMES", "browser_available", "chromium", "load", "network_requests", "requests_made",
           "screenshots", "text_below", "wait_for_request"]

#: URL patterns the DevTools protocol refuses to load
BLOCKED = ["http://*", "https://*", "ws://*", "wss://*", "ftp://*"]

_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
          "--disable-component-update", "--disable-sync", "--disable-extensions", "--disable-default-apps",
          "--host-resolver-rules=MAP * ~NOTFOUND")


def _binaries() -> tuple[str | None, str | None]:
    return shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")


def browser_available() -> str | None:
    """None when headless Chromium can be driven here, else the reason it cannot (for ``pytest.skip``)."""
    browser, driver = _binaries()
    if browser is None or driver is None:
        return "chromium and chromedriver are not installed (Debian: apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    return None


@contextlib.contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A headless Chromium WebDriver with the network blocked and requests and console logged.

    The profile is a fresh temporary folder, removed afterwards.
    """
    reason = browser_available()
    if reason:
        raise RuntimeError(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver_path = _binaries()
    assert browser is not None and driver_path is not None  # browser_available() said so
    profile = tempfile.mkdtemp(prefix="attnsym-chromium-")
    options = webdriver.ChromeOptions()
    for flag in _FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    options.binary_location = browser
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": BLOCKED})
        if width < 500:  # a headless window is at least 500 px wide: emulate a phone's viewport instead
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                   {"width": width, "height": height, "deviceScaleFactor": 2, "mobile": True})
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def requests_made(driver: Any) -> list[str]:
    """The URLs of every request since the last call (from the performance log)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


#: URL schemes of a request that could leave the machine (``chrome:``, ``data:``, ``blob:``, ``file:`` never do)
NETWORK_SCHEMES = ("http", "https", "ws", "wss", "ftp")


def network_requests(urls: list[str]) -> list[str]:
    """The URLs among ``urls`` that could leave the machine (scheme in :data:`NETWORK_SCHEMES`).

    >>> network_requests(["file:///p.html", "chrome://new-tab-page/", "data:,x", "https://example.com/"])
    ['https://example.com/']
    """
    return [u for u in urls if u.split(":", 1)[0].lower() in NETWORK_SCHEMES]


def wait_for_request(driver: Any, url: str, *, timeout: float = 60.0) -> list[str]:
    """Every request recorded until ``url`` has been seen (the log can lag behind the page on a busy machine)."""
    from selenium.webdriver.support.ui import WebDriverWait

    seen: list[str] = []

    def arrived(d: Any) -> bool:
        seen.extend(requests_made(d))
        return url in seen

    WebDriverWait(driver, timeout, poll_frequency=0.1).until(arrived)
    return seen


def load(driver: Any, path: str | Path, *, timeout: float = 120.0) -> float:
    """Open ``path`` and wait until the page says it is ready; returns the seconds it took."""
    from selenium.webdriver.support.ui import WebDriverWait

    start = time.perf_counter()
    driver.get(Path(path).resolve().as_uri())
    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script("return document.body && document.body.getAttribute('data-ready') === 'true'"))
    return time.perf_counter() - start


#: per visible text node: its rendered font size (an SVG's text scaled by its drawing), and where it is
_SMALL_TEXT = r"""const out = [], walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let t = walk.nextNode(); t; t = walk.nextNode()) {
  if (!/[^\s\u200b]/.test(t.textContent)) continue;  // KaTeX's struts: zero-width spaces
  const e = t.parentElement, r = e.getBoundingClientRect();
  if (!r.width || !r.height || e.closest('[hidden], details:not([open]) > :not(summary), .katex-mathml')) continue;
  let size = parseFloat(getComputedStyle(e).fontSize);
  const s = e.closest('svg');
  if (s && s.getScreenCTM()) size *= s.getScreenCTM().a;
  if (size < arguments[0] - 1e-6) out.push([size, t.textContent.trim().slice(0, 30), e.tagName]);
}
return out;"""


def text_below(driver: Any, px: float) -> list[list[Any]]:
    """Every visible text of the loaded page drawn smaller than ``px`` pixels: [size, its first 30 characters, its tag]."""
    return driver.execute_script(_SMALL_TEXT, px)


def screenshots(page: str | Path, folder: str | Path) -> dict[str, Path]:
    """Screenshots of the page's main views into ``folder`` (1440 × 900; the first screen, the picture, the head
    view and the overview at 390 × 844).

    Returns the written files by view name.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}

    def shoot(driver: Any, name: str, element_id: str | None = None, offset: int = 0) -> None:
        path = folder / f"explorer-{name}.png"
        driver.execute_script("document.querySelector('header.top').style.position = 'static';"
                              "const e = arguments[0] && document.getElementById(arguments[0]);"
                              "window.scrollTo(0, e ? e.getBoundingClientRect().top + window.scrollY - 8 + arguments[1] : 0);",
                              element_id, offset)
        driver.save_screenshot(str(path))
        out[name] = path

    with chromium(1440, 900) as driver:
        load(driver, page)
        shoot(driver, "first-screen")  # the page as it opens: the story, the headline, the results
        driver.execute_script("const d = document.getElementById('contrast-more'); if (d) d.open = true")
        shoot(driver, "contrast", "contrast")
        driver.execute_script("const d = document.getElementById('contrast-more'); if (d) d.open = false")
        shoot(driver, "overview", "overview")
        shoot(driver, "headview", "headview")
        driver.execute_script("window.attnsymExplorer.select(2)")
        shoot(driver, "routing", "routing")
        driver.execute_script("window.attnsymExplorer.select(null)")
        driver.execute_script("const c = document.querySelector('details.claim:nth-of-type(3)') ||"
                              " document.querySelector('details.claim'); if (c) c.open = true")
        shoot(driver, "claims", "claims")
        driver.execute_script("document.getElementById('derivations-fold').open = true")
        shoot(driver, "derivations", "derivations")
    with chromium(390, 844) as driver:
        load(driver, page)
        shoot(driver, "phone")  # the phone's first screen: the story and the headline
        shoot(driver, "phone-picture", "story-picture")
        shoot(driver, "phone-headview", "headview")
        shoot(driver, "phone-overview", "overview")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnsym.explorer.headless",
                                     description="Write the explorer's screenshots and report its size and load time.")
    parser.add_argument("folder", type=Path, help="where the screenshots go (e.g. docs/images)")
    parser.add_argument("--page", type=Path, help="an existing page (default: build the tour's page, quick claims)")
    args = parser.parse_args(argv)
    page = args.page
    if page is None:  # the tour's page: the apple example on the packaged model (if installed), quick claims
        page = write_tour_page(Path(tempfile.mkdtemp()) / "explorer.html", evidence=verify_all(quick=True),
                               seed=0, quick=True)
    with chromium() as driver:
        seconds = load(driver, page)
    written = screenshots(page, args.folder)
    print(f"page {page}: {page.stat().st_size / 1e6:.2f} MB, loaded in {seconds:.2f} s in headless Chromium")
    for path in written.values():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
