"""The report in a real browser: Debian's chromium, headless, every page from file:// with no network.

    .venv/bin/pytest -q tests/test_browser.py

Asserts no console errors, no attempted non-file request, and that every chart slot rendered an SVG
with marks. Screenshots go to test-artifacts/report/ (git-ignored). Skips only if chromium is absent
(`make browser` installs it).
"""

from __future__ import annotations

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
EVIL = "<script>alert(1)</script>"
EVIL_IMG = "<img src=x onerror=alert(2)>"  # would run if a tooltip or label were built with innerHTML

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"chromium not installed at {CHROMIUM} (make browser)")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    wh = make_world(str(root / "wh.duckdb"), runs=120, telemetry=1200, target_names=["h200-sxm", EVIL, "a10-pcie", EVIL_IMG])
    index = build_site(wh, str(root / "site"), images=False)
    return Path(index).parent


def test_every_page_renders_offline_without_errors(site: Path):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pages = sorted(site.glob("*.html"))
    assert len(pages) >= 10  # six site pages and four target pages
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        context = browser.new_context(viewport={"width": 1366, "height": 900}, offline=True)
        attempted: list[str] = []

        def guard(route):
            if route.request.url.startswith("file://"):
                route.continue_()
            else:
                attempted.append(route.request.url)
                route.abort()

        context.route("**/*", guard)
        for path in pages:
            page = context.new_page()
            errors: list[str] = []
            dialogs: list[str] = []
            page.on("console", lambda m, e=errors: e.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc, e=errors: e.append(str(exc)))
            page.on("dialog", lambda d, s=dialogs: (s.append(d.message), d.dismiss()))
            page.goto(path.as_uri(), wait_until="load")
            slots = page.locator("div.chart")
            n = slots.count()
            if n:
                page.wait_for_function(
                    "n => document.querySelectorAll('div.chart[data-rendered], div.chart[data-error]').length === n",
                    arg=n, timeout=20_000)
            for i in range(n):
                slot = slots.nth(i)
                assert slot.get_attribute("data-error") is None, f"{path.name}: {slot.get_attribute('data-error')}"
                marks = slot.locator("svg .mark-rect path, svg .mark-line path, svg .mark-rule line, svg .mark-symbol path, svg path")
                assert marks.count() > 0, f"{path.name}: chart {slot.get_attribute('id')} drew nothing"
            if path.name == "index.html":  # tooltips show target names: hover every bar of the cost chart
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
            page.screenshot(path=str(ARTIFACTS / f"{path.stem}.png"), full_page=True)
            assert errors == [], f"{path.name}: console errors {errors}"
            assert dialogs == [], f"{path.name}: a script ran from data: {dialogs}"
            if "script-alert" in path.name:
                assert EVIL in page.locator("h1").inner_text()  # shown as text, not executed
            if "img-src-x" in path.name:
                assert EVIL_IMG in page.locator("h1").inner_text() and page.locator("main img").count() == 0
            page.close()
        browser.close()
    assert attempted == [], f"pages tried to reach the network: {attempted}"


def test_evil_target_is_text_in_the_markup(site: Path):
    for path in site.glob("*.html"):
        text = path.read_text(encoding="utf-8")
        assert EVIL not in text, path.name
    evil_page = next(site.glob("target-script-alert-1-script-*.html")).read_text(encoding="utf-8")
    assert html.escape(EVIL) in evil_page
