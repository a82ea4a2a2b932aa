"""The report in a real browser: Debian's chromium, headless, every page from file:// with no network.

    .venv/bin/pytest -q tests/test_browser.py

Asserts no console errors, no attempted non-file request, that every chart slot rendered an SVG with
marks, that every table sorts (click a heading) and filters (type in its box), that every CSV link
resolves to a file under data/, and that at 900 px nothing is clipped (no table or card wider than
its box). Screenshots of every page at 1400 and 900 px go to test-artifacts/report/ (git-ignored).
The overview's answer table equals `costgap targets --json` per preset (and `costgap gap` for the
interval), every option of the picker equals `costgap targets|tiers --currency C --billing B --f F`
(three currencies, two billing modes, every f), and a permalink restores its view.
Skips only if chromium is absent (`make browser` installs it).
"""

from __future__ import annotations

import csv
import html
import itertools
import json
import os
from pathlib import Path

import pytest

from flows.report import build_site
from reports.pages.html import p_text, pct, sig
from tests.report_options import add_options
from tests.report_world import make_world

CHROMIUM = os.environ.get("COSTGAP_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "report"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
WIDTHS = (1400, 900)
EVIL = "<script>alert(1)</script>"
EVIL_IMG = "<img src=x onerror=alert(2)>"  # would run if a tooltip or label were built with innerHTML

pytestmark = [pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"chromium not installed at {CHROMIUM} (make browser)"),
              pytest.mark.slow]  # a chromium process: `make test` runs it, `make check` does not

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
    add_options(wh)  # EUR and GBP rates, monthly prices, a preset only one target ran
    index = build_site(wh, str(root / "site"), images=False)
    return Path(index).parent


@pytest.fixture(scope="module")
def warehouse(site: Path) -> str:
    return str(site.parent / "wh.duckdb")


def _cli(*args: str):
    from typer.testing import CliRunner

    from cli.main import app

    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


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


ANSWER_JS = """() => Array.from(document.querySelectorAll('#t-overview-answer tbody tr')).map(r =>
  Array.from(r.cells).map(c => [c.getAttribute('data-v'), c.innerText.trim()]))"""
PICKER_JS = """() => ({note: document.getElementById('pk-note').textContent, hash: location.hash,
  rows: Array.from(document.querySelectorAll('#pk-body tr')).map(r =>
    Array.from(r.cells).map(c => [c.getAttribute('data-v'), c.textContent]))})"""


def _by_preset(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:  # the CLI prints cheapest first; within a preset the order stays
        out.setdefault(r["preset"], []).append(r)
    return out


def test_the_answer_table_equals_costgap_targets_per_preset(site: Path, browser, warehouse: str):
    context = _context(browser, 1400, [])
    page, errors, _ = _open(context, site / "index.html")
    shown = page.evaluate(ANSWER_JS)
    cli = {p: [r for r in rows if r["cost_per_mtok"] is not None]
           for p, rows in _by_preset(_cli("targets", "--json", "--warehouse", warehouse)).items()}
    assert [row[0][0] for row in shown] == sorted(p for p, rows in cli.items() if rows)
    alone = 0
    for row in shown:
        preset, (cheapest, cost, runs, runner, gap, runner_runs, verdict) = row[0][0], row[1:]
        best = cli[preset][0]
        assert cheapest[0] == best["target"] and float(cost[0]) == best["cost_per_mtok"], (preset, cost, best)
        assert cost[1].startswith(sig(best["cost_per_mtok"])) and float(runs[0]) == best["runs"]
        if len(cli[preset]) == 1:
            alone += 1
            assert "only target measured" in cheapest[1] and verdict[1] == "only target measured"
            assert runner[0] == "" and gap[0] == ""
            continue
        second = cli[preset][1]
        res = _cli("gap", second["target"], best["target"], "--preset", preset, "--json", "--warehouse", warehouse)
        assert runner[0] == second["target"] and float(runner_runs[0]) == second["runs"]
        assert float(gap[0]) == res["gap"] == second["cost_per_mtok"] / best["cost_per_mtok"] - 1
        assert gap[1] == f"{pct(res['gap'])}\n90% {pct(res['gap_lo'])} to {pct(res['gap_hi'])}"
        assert verdict[1] == ("clear" if res["gap_lo"] > 0 or res["gap_hi"] < 0 else "within noise")
    assert alone == 1 and errors == []
    context.close()


def _combos(spec: dict) -> list[tuple[str, str, str]]:
    """Every currency x billing mode, f cycling through the choices, then any f not yet used."""
    fs = [f"{f:g}" for f in spec["f_choices"]]
    out = [(c, b, fs[i % len(fs)]) for i, (c, b) in enumerate(itertools.product(spec["currencies"], spec["billings"]))]
    used = {f for _, _, f in out}
    return out + [(spec["currencies"][0], spec["billings"][0], f) for f in fs if f not in used]


def _check_view(view: dict, cli_rows: list[dict], derived: list[dict], preset: str, tokens: float) -> None:
    """The picker's rows, each equal to the CLI's figures for the same flags: the same doubles, rounded once
    the same way (reports.pages.html.sig)."""
    mine = [r for r in cli_rows if r["preset"] == preset]
    train = {r["target"]: r for r in derived if r["preset"] == preset}
    assert [row[0][0] for row in view["rows"]] == [r["target"] for r in mine]
    for row, r in zip(view["rows"], mine):
        _, cost, _vs, total, hours, price, x, p, rr, runs = row
        t = train[r["target"]]
        assert t["train_tokens"] == tokens
        for (v, text), want in ((cost, r["cost_per_mtok"]), (total, t["cost_to_train"]), (hours, t["hours_to_train"]),
                                (price, r["price_per_hour"]), (x, r["tokens_per_s"]), (rr, r["R"])):
            assert float(v) == want and text == sig(want), (r["target"], v, text, want)
        assert p[1] == p_text(r["failed_attempts"], r["attempts"]) and int(runs[0]) == r["runs"]


def test_every_picker_option_equals_the_cli_and_a_permalink_restores_the_view(site: Path, browser, warehouse: str):
    attempted: list[str] = []
    context = _context(browser, 1400, attempted)
    page, errors, _ = _open(context, site / "index.html")
    spec = json.loads(page.locator("#picker-inputs").text_content())
    assert len(spec["currencies"]) >= 2 and len(spec["billings"]) >= 2 and len(spec["f_choices"]) >= 2
    for sel, values in (("#pk-currency", spec["currencies"]), ("#pk-billing", spec["billings"]),
                        ("#pk-f", [f"{f:g}" for f in spec["f_choices"]]), ("#pk-preset", spec["presets"])):
        assert page.eval_on_selector_all(f"{sel} option", "os => os.map(o => o.value)") == values
    tokens_text, tokens = "2.5B", 2.5e9
    page.fill("#pk-tokens", tokens_text)
    combos = _combos(spec)
    assert len({c for c, _, _ in combos}) >= 2 and len({b for _, b, _ in combos}) >= 2 and len({f for *_, f in combos}) >= 2
    last = None
    for cur, billing, f in combos:
        page.select_option("#pk-currency", cur)
        page.select_option("#pk-billing", billing)
        page.select_option("#pk-f", f)
        flags = ["--currency", cur, "--billing", billing, "--f", f, "--warehouse", warehouse]
        rows = _cli("targets", "--json", *flags)
        derived = _cli("tiers", "--json", "--tokens", repr(tokens), *flags)["derived"]
        for preset in spec["presets"]:
            page.select_option("#pk-preset", preset)
            view = page.evaluate(PICKER_JS)
            _check_view(view, rows, derived, preset, tokens)
            last = view
    assert errors == []
    # the permalink: the last view's URL, opened fresh, shows the same choices and the same rows
    again, errors2, _ = _open(context, site / "index.html")
    again.goto((site / "index.html").as_uri() + last["hash"], wait_until="load")
    again.wait_for_selector("#picker[data-ready]")
    assert again.evaluate(PICKER_JS) == last
    cur, billing, f = combos[-1]
    assert [again.input_value(s) for s in ("#pk-currency", "#pk-billing", "#pk-f", "#pk-tokens", "#pk-preset")] == \
        [cur, billing, f, tokens_text, spec["presets"][-1]]
    assert errors2 == [] and attempted == []
    context.close()
