"""The site of the shipped leaderboards in a real browser (headless Chromium through
Selenium; skipped, with the reason, where Chromium, chromedriver or selenium is missing:
``make browser`` installs them): every page loads with no console error, every link and
image resolves, the verdict filter changes the rows shown, sorting orders a column, the
pages fit a phone's width, and screenshots of the index, a suite page and a claim page are
kept under the test's output."""

import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from geobench.site.build import build_site

ROOT = Path(__file__).resolve().parents[3]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="Chromium and chromedriver are not installed (make browser installs Debian's "
           "chromium and chromium-driver)")]

IDS = "return Array.from(document.querySelectorAll('[id]')).map(e => e.id)"
LINKS = "return Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"
BROKEN_IMAGES = ("return Array.from(document.images).filter(i => !i.complete || "
                 "i.naturalWidth === 0).map(i => i.src)")
WIDTH = "return [document.documentElement.scrollWidth, window.innerWidth]"
CLIPPED = ("return Array.from(document.querySelectorAll('.scroll'))"
           ".filter(e => e.scrollWidth > e.clientWidth).length")
VISIBLE = ("return Array.from(document.querySelectorAll('table.claims-list tbody tr'))"
           ".filter(r => !r.hidden).map(r => r.dataset.verdict)")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "site"
    build_site(ROOT / "leaderboards", out, ROOT / "docs" / "papers.md")
    return out


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--allow-file-access-from-files"):
        options.add_argument(flag)
    options.binary_location = CHROMIUM
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_window_size(1280, 900)
    yield driver
    driver.quit()


def _errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_every_page_loads_cleanly_and_every_link_and_image_resolves(site, browser):
    pages = sorted(site.glob("*.html"))
    assert {"index.html", "claims.html"} <= {p.name for p in pages}
    ids, links = {}, set()
    for page in pages:
        browser.get(page.as_uri())
        assert _errors(browser) == [], page.name
        assert browser.execute_script(BROKEN_IMAGES) == [], page.name
        ids[page.name] = set(browser.execute_script(IDS))
        links |= {(page.name, href) for href in browser.execute_script(LINKS)}
    for page, href in links:
        parts = urlsplit(href)
        assert parts.scheme == "file", (page, href)  # nothing leaves the folder
        target = Path(unquote(parts.path))
        assert target.is_file() and site in target.parents, (page, href)
        if parts.fragment:
            assert parts.fragment in ids[target.name], (page, href)


def test_the_verdict_filter_changes_the_rows_and_a_heading_sorts(site, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get((site / "claims.html").as_uri())
    every = browser.execute_script(VISIBLE)
    Select(browser.find_element(By.CSS_SELECTOR, "select[data-filter=verdict]")) \
        .select_by_value("holds")
    shown = browser.execute_script(VISIBLE)
    assert 0 < len(shown) < len(every) and set(shown) == {"holds"}
    assert len(shown) == every.count("holds")
    count = browser.find_element(By.CSS_SELECTOR, "[data-count]").text
    assert count == f"{len(shown)} of {len(every)} rows shown"
    header = browser.find_elements(By.CSS_SELECTOR, "table.claims-list th")[6]  # n
    header.click()
    column = browser.execute_script(
        "return Array.from(document.querySelectorAll('table.claims-list tbody tr'))"
        ".map(r => r.cells[6].dataset.sort || '')")  # blank: a claim with parts
    numbers = [float(x) for x in column if x != ""]
    assert numbers == sorted(numbers) and len(set(numbers)) > 1
    assert column[len(numbers):] == [""] * (len(column) - len(numbers))  # blanks last
    assert _errors(browser) == []


def test_the_index_and_claims_tables_fit_1280_pixels(site, browser):
    for name in ("index.html", "claims.html"):
        browser.get((site / name).as_uri())
        assert browser.execute_script(CLIPPED) == 0, name  # no sideways scrolling


@pytest.mark.parametrize("width", [1280, 390])
def test_pages_fit_the_screen_and_screenshots_are_kept(site, browser, width,
                                                       tmp_path_factory):
    shots = tmp_path_factory.getbasetemp() / "site-screenshots"
    shots.mkdir(exist_ok=True)
    suite = sorted(site.glob("suite-*.html"))[0]
    claim = sorted(site.glob("claim-*.html"))[0]
    browser.set_window_size(width, 900)
    try:
        for name, page in [("index", site / "index.html"), ("suite", suite), ("claim", claim)]:
            browser.get(page.as_uri())
            scroll, inner = browser.execute_script(WIDTH)
            assert scroll <= inner, (page.name, width)  # wide tables scroll in their box
            browser.save_screenshot(str(shots / f"{name}_{width}.png"))
            assert (shots / f"{name}_{width}.png").stat().st_size > 10_000
    finally:
        browser.set_window_size(1280, 900)
    print(f"screenshots: {shots}")
