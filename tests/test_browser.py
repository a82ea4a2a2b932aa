"""The report in a real browser: Debian's chromium, headless, every page from file:// with no network.

    .venv/bin/pytest -q tests/test_browser.py

Asserts no console errors, no attempted non-file request, that every chart slot rendered an SVG with
marks, that every table sorts (click a heading) and filters (type in its box), that every CSV link
resolves to a file under data/, and that at 900 px nothing is clipped (no table or card wider than
its box). Screenshots of every page at 1400 and 900 px go to test-artifacts/report/ (git-ignored).
Skips only if chromium is absent (`make browser` installs it).
"""

from __future__ import annotations

import csv
import html
import os
from pathlib import Path

import pytest

from flows.report import build_site
from tests.report_world import make_world

CHROMIUM = os.environ.get("COSTGAP_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "report"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
WIDTHS = (1400, 900)
EVIL = "<script>alert(1)</script>"
EVIL_IMG = "<img src=x onerror=alert(2)>"  # would run if a tooltip or label were built with innerHTML

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"chromium not installed at {CHROMIUM} (make browser)")

# (selector, its box) pairs that must not be wider than their box at 900 px
OVERFLOW_JS = """() => Array.from(document.querySelectorAll('div.scroll, section.card'))
  .filter(e => e.scrollWidth > e.clientWidth + 1)
  .map(e => (e.querySelector('table') ? 'table ' + (e.querySelector('table').id || '') : 'card')
            + ' ' + e.scrollWidth + ' > ' + e.clientWidth)"""
KEYS_JS = """([id, col]) => Array.from(document.getElementById(id).tBodies[0].rows)
  .map(r => r.cells[col].getAttribute('data-v'))"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    wh = make_world(str(root / "wh.duckdb"), runs=120, telemetry=1200, target_names=["h200-sxm", EVIL, "a10-pcie", EVIL_IMG])
    index = build_site(wh, str(root / "site"), images=False)
    return Path(index).parent


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


def _context(browser, width: int, attempted: list[str]):
    context = browser.new_context(viewport={"width": width, "height": 900}, offline=True)

    def guard(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            attempted.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    return context


def _open(context, path: Path):
    page = context.new_page()
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("console", lambda m, e=errors: e.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc, e=errors: e.append(str(exc)))
    page.on("dialog", lambda d, s=dialogs: (s.append(d.message), d.dismiss()))
    page.goto(path.as_uri(), wait_until="load")
    n = page.locator("div.chart").count()
    if n:
        page.wait_for_function(
            "n => document.querySelectorAll('div.chart[data-rendered], div.chart[data-error]').length === n",
            arg=n, timeout=30_000)
    return page, errors, dialogs


def _sorted(keys: list[str | None], reverse: bool = False) -> bool:
    """data-v keys in order, numbers as numbers, missing ('') last either way."""
    present = [k for k in keys if k != ""]
    if keys[: len(present)] != present:
        return False
    try:
        vals = [float(k) for k in present]
    except ValueError:
        vals = [k.lower() for k in present]
    return vals == sorted(vals, reverse=reverse)


def test_every_page_renders_offline_without_errors_at_both_widths(site: Path, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pages = sorted(site.glob("*.html"))
    assert len(pages) >= 10  # six site pages and four target pages
    attempted: list[str] = []
    for width in WIDTHS:
        context = _context(browser, width, attempted)
        for path in pages:
            page, errors, dialogs = _open(context, path)
            slots = page.locator("div.chart")
            for i in range(slots.count()):
                slot = slots.nth(i)
                assert slot.get_attribute("data-error") is None, f"{path.name}: {slot.get_attribute('data-error')}"
                marks = slot.locator("svg .mark-rect path, svg .mark-line path, svg .mark-rule line, svg .mark-symbol path, svg path")
                assert marks.count() > 0, f"{path.name}: chart {slot.get_attribute('id')} drew nothing"
            if width == 900:
                assert page.evaluate(OVERFLOW_JS) == [], f"{path.name} at 900 px: clipped"
            if path.name == "index.html" and width == 1400:  # tooltips show target names: hover the cost bars
                page.locator("#c-overview-cost").scroll_into_view_if_needed()  # below "Recent changes"
                bars = page.locator("#c-overview-cost svg .mark-rect path")
                shown = []
                for j in range(bars.count()):
                    box = bars.nth(j).bounding_box()
                    page.mouse.move(1, 1)
                    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=3)
                    page.wait_for_timeout(200)
                    tip = page.locator("#vg-tooltip-element")
                    if tip.count() and tip.is_visible():
                        shown.append(tip.inner_html())
                        assert tip.locator("img, script").count() == 0, tip.inner_html()
                assert any("&lt;img" in h for h in shown), shown
            page.screenshot(path=str(ARTIFACTS / f"{path.stem}-{width}.png"), full_page=True)
            assert errors == [], f"{path.name}: console errors {errors}"
            assert dialogs == [], f"{path.name}: a script ran from data: {dialogs}"
            if "script-alert" in path.name:
                assert EVIL in page.locator("h1").inner_text()  # shown as text, not executed
            if "img-src-x" in path.name:
                assert EVIL_IMG in page.locator("h1").inner_text() and page.locator("main img").count() == 0
            page.close()
        context.close()
    assert attempted == [], f"pages tried to reach the network: {attempted}"


def test_every_table_sorts_and_filters_and_every_csv_link_resolves(site: Path, browser):
    attempted: list[str] = []
    context = _context(browser, 1400, attempted)
    checked = 0
    for path in sorted(site.glob("*.html")):
        page, errors, _ = _open(context, path)
        for href in page.eval_on_selector_all("a[href^='data/']", "els => els.map(e => e.getAttribute('href'))"):
            with (site / href).open(encoding="utf-8") as fh:
                header = next(csv.reader(fh))
            assert header and all(header), f"{path.name}: {href} has no header"
        n_tables = page.locator("table.data").count()
        n_csv = page.locator("a[href^='data/']").count()
        assert n_csv >= n_tables + page.locator("div.chart").count(), f"{path.name}: a table or chart without CSV"
        for t in range(n_tables):
            table = page.locator("table.data").nth(t)
            tid = table.get_attribute("id")
            rows = table.locator("tbody tr")
            if rows.count() < 2:
                continue
            for col in range(table.locator("thead th").count()):
                th = table.locator("thead th").nth(col)
                th.click()
                assert th.get_attribute("aria-sort") == "ascending"
                assert _sorted(page.evaluate(KEYS_JS, [tid, col])), f"{path.name} #{tid} col {col} ascending"
                th.click()
                assert th.get_attribute("aria-sort") == "descending"
                assert _sorted(page.evaluate(KEYS_JS, [tid, col]), reverse=True), f"{path.name} #{tid} col {col}"
            word = rows.nth(0).locator("td").nth(0).inner_text().strip().split()[0]
            box = page.locator(f"input.filter[data-for='{tid}']")
            box.fill(word)
            visible = [r for r in range(rows.count()) if rows.nth(r).is_visible()]
            assert visible and all(word.lower() in rows.nth(r).inner_text().lower() for r in visible), (path.name, tid)
            box.fill("no row contains this text 7f3a")
            assert not any(rows.nth(r).is_visible() for r in range(rows.count())), (path.name, tid)
            box.fill("")
            checked += 1
        assert errors == [], f"{path.name}: console errors {errors}"
        page.close()
    context.close()
    assert checked >= 10 and attempted == []


def test_evil_target_is_text_in_the_markup(site: Path):
    for path in site.glob("*.html"):
        text = path.read_text(encoding="utf-8")
        assert EVIL not in text, path.name
    evil_page = next(site.glob("target-script-alert-1-script-*.html")).read_text(encoding="utf-8")
    assert html.escape(EVIL) in evil_page
