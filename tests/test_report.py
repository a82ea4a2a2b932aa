"""The static report: offline, escaped, bounded, and robust to missing parts of the warehouse.

    .venv/bin/pytest -q tests/test_report.py
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tasks.errors import UserError
from reports.pages.html import Markup, Sorted, badge, cell, escape, link, script_json, table
from flows.report import build_site
from reports.site import PAGE_BUDGET_BYTES
from tests.report_world import make_world

EVIL = "<script>alert(1)</script>"
URL = re.compile(rb"https?://", re.IGNORECASE)


class Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.refs += [v for k, v in attrs if k in ("src", "href") and v]


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("world")
    return make_world(str(root / "wh.duckdb"), runs=160, telemetry=3200, target_names=["h200-sxm", EVIL, "a10-pcie"])


@pytest.fixture(scope="module")
def site(world, tmp_path_factory) -> Path:
    return Path(build_site(world, str(tmp_path_factory.mktemp("s") / "site"))).parent


@pytest.mark.parametrize("value, expected", [
    (EVIL, "&lt;script&gt;alert(1)&lt;/script&gt;"),
    ('" onmouseover="x', "&#34; onmouseover=&#34;x"),
    (None, "—"),  # a missing value is MISSING, on every page
    ("a & b", "a &amp; b"),
    (Markup("<b>kept</b>"), "<b>kept</b>"),  # markup written on purpose passes
    (Sorted(Markup("<i>x</i>"), sort=1), "<i>x</i>"),
])
def test_a_cell_escapes_text_and_keeps_markup(value, expected):
    assert cell(value) == expected


def test_escaping_is_the_default_when_text_meets_markup():
    assert Markup("<b>{}</b>").format(EVIL) == f"<b>{escape(EVIL)}</b>"
    assert Markup("<p>") + EVIL == f"<p>{escape(EVIL)}"
    assert Markup("").join([EVIL, Markup("<br>")]) == f"{escape(EVIL)}<br>"
    assert str(link(EVIL, EVIL)) == f'<a href="{escape(EVIL)}">{escape(EVIL)}</a>'
    assert str(badge(EVIL, EVIL)) == f'<span class="badge {escape(EVIL)}">{escape(EVIL)}</span>'
    assert Markup("<td>{}</td>").format(badge("x")) == '<td><span class="badge ">x</span></td>'  # a cell stays markup


def test_script_json_cannot_close_its_script_tag():
    text = script_json({"t": "</script><script>alert(1)</script>", "amp": "&"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert '"\\u003c/script\\u003e' in text


def test_table_escapes_every_cell_and_heading():
    out = table([("a", EVIL)], [{"a": EVIL}], table_id=EVIL)
    assert EVIL not in out and out.count(escape(EVIL)) == 4  # heading, id, the cell's sort key and its text


def test_every_chart_spec_is_valid_vega_lite(world, tmp_path, monkeypatch):
    import reports.charts as charts

    monkeypatch.setattr(charts, "VALIDATE_SPECS", True)  # Altair validates each spec against the schema
    out = Path(build_site(world, str(tmp_path / "site"), images=False)).parent
    import json

    assert json.loads((out / "site.json").read_text())["charts"] >= 8


def test_site_has_every_page_and_no_external_reference(site: Path):
    names = {p.name for p in site.glob("*.html")}
    assert {"index.html", "over-time.html", "why.html", "hardware.html", "reliability.html", "quality.html"} <= names
    assert len([n for n in names if n.startswith("target-")]) == 3
    for path in [*site.glob("*.html"), site / "assets" / "vega.js"]:
        data = path.read_bytes()
        assert not URL.search(data), f"{path.name}: {URL.search(data).group(0)!r} at {URL.search(data).start()}"
    for path in site.glob("*.html"):
        parser = Refs()
        parser.feed(path.read_text(encoding="utf-8"))
        assert parser.refs, path.name
        for ref in parser.refs:
            assert not ref.startswith(("/", "//")) and ":" not in ref, f"{path.name}: {ref}"
            assert (site / ref.split("#")[0]).exists(), f"{path.name} links to missing {ref}"


def test_vega_is_one_shared_local_file(site: Path):
    for path in site.glob("*.html"):
        text = path.read_text(encoding="utf-8")
        assert text.count('src="assets/vega.js"') <= 1
        assert "vegaEmbed(" not in text or 'src="assets/vega.js"' in text
    assert (site / "assets" / "vega.js").stat().st_size > 100_000


def test_every_chart_exported_as_png_and_svg(site: Path):
    import json

    manifest = json.loads((site / "site.json").read_text())
    ids = set(re.findall(r'id="c-([^"]+)"', "".join(p.read_text() for p in site.glob("*.html"))))
    assert manifest["charts"] == len(ids) >= 8
    for cid in ids:
        assert (site / "charts" / f"{cid}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "<svg" in (site / "charts" / f"{cid}.svg").read_text()


@pytest.mark.slow  # a world at scale / every chart exported as PNG and SVG
def test_unchanged_charts_reuse_their_exports(world, tmp_path: Path):
    import json

    site = Path(build_site(world, str(tmp_path / "first"))).parent
    again = Path(build_site(world, str(tmp_path / "again"))).parent
    manifest = json.loads((again / "site.json").read_text())
    assert manifest["export_cache_hits"] == manifest["charts"]  # same data, same specs
    for p in (site / "charts").iterdir():
        assert (again / "charts" / p.name).read_bytes() == p.read_bytes(), p.name


def test_evil_target_is_escaped_everywhere(site: Path):
    for path in site.glob("*.html"):
        assert EVIL not in path.read_text(encoding="utf-8"), path.name
    assert escape(EVIL) in (site / "index.html").read_text(encoding="utf-8")


def test_no_markup_of_the_report_is_escaped_as_text(site: Path):
    """The other way to get escaping wrong: the report's own tags shown as text, or text escaped twice. The
    world's only tag-like text is the evil target's name."""
    for path in site.glob("*.html"):
        text = path.read_text(encoding="utf-8").replace(str(escape(EVIL)), "")
        tag = re.search(r"&lt;/?[a-z][a-z0-9]*(\s|&gt;|/)|&amp;(lt|gt|amp|#)", text)
        assert tag is None, (path.name, text[max(0, tag.start() - 200):tag.end() + 200])


def test_pages_show_measured_content(site: Path):
    hw = (site / "hardware.html").read_text()
    assert "sw_power_cap" in hw and "Measurements that ran throttled" in hw
    assert "next latency ms" in hw  # DataLoader feed figure, named for a reader
    assert "torch 2.12.0 → 2.13.0" in (site / "over-time.html").read_text()
    q = (site / "quality.html").read_text()
    assert "3 file(s) refused in all" in q and "tokens_per_s &lt;= 0" in q and "quarantined" in q
    t = next(site.glob("target-h200-sxm-*.html")).read_text()
    assert "What changed in its environment" in t and "newest" in t and "Cost and price history" in t


@pytest.mark.slow  # a world at scale / every chart exported as PNG and SVG
def test_page_weight_bounded_at_scale(tmp_path: Path):
    wh = make_world(str(tmp_path / "big.duckdb"), runs=6000, telemetry=60000, targets=12, weeks=52)
    out = Path(build_site(wh, str(tmp_path / "site"), images=False)).parent
    js = (out / "assets" / "vega.js").stat().st_size
    for p in out.glob("*.html"):
        assert p.stat().st_size + js <= PAGE_BUDGET_BYTES, p.name


def test_empty_warehouse_renders_no_data_states(tmp_path: Path):
    from warehouse.db import connect

    connect(str(tmp_path / "e.duckdb")).close()
    out = Path(build_site(str(tmp_path / "e.duckdb"), str(tmp_path / "site"), images=False)).parent
    text = (out / "index.html").read_text()
    assert "no data yet" in text
    assert "no data yet" in (out / "hardware.html").read_text()


def test_a_bug_in_the_cost_model_fails_the_build_and_keeps_the_site(world, tmp_path, monkeypatch):
    """No swallowing: the error propagates with its traceback, and the published site is untouched."""
    import reports.data

    site = tmp_path / "site"
    build_site(world, str(site), images=False)
    before = {p.name: p.read_bytes() for p in site.iterdir() if p.is_file()}

    def broken(*args, **kwargs):
        raise RuntimeError("a bug in the cost model")

    monkeypatch.setattr(reports.data, "costs", broken)
    with pytest.raises(RuntimeError, match="a bug in the cost model"):
        build_site(world, str(site), images=False)
    assert {p.name: p.read_bytes() for p in site.iterdir() if p.is_file()} == before
    assert not list(tmp_path.glob(".site.build-*"))


def test_unknown_baseline_is_a_user_error(world, tmp_path):
    with pytest.raises(UserError, match="--baseline 'nope'"):
        build_site(world, str(tmp_path / "site"), baseline="nope", images=False)


def test_report_cli(world, tmp_path):
    from typer.testing import CliRunner

    from cli.main import app

    res = CliRunner().invoke(app, ["report", "--warehouse", world, "--site", str(tmp_path / "s"), "--no-images"])
    assert res.exit_code == 0, res.output
    assert "index.html" in res.output and (tmp_path / "s" / "index.html").exists()


def test_escaping_holds_for_any_text():
    import json

    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=300, deadline=None)
    @given(st.text())
    def check(s):
        assert "<" not in escape(s) and ">" not in escape(s) and '"' not in escape(s)
        blob = script_json({"k": s})
        assert not any(c in blob for c in "<>&") and json.loads(blob) == {"k": s}  # same data, inert markup

    check()


def test_the_glossary_describes_every_preset_as_the_probe_defines_it():
    from reports.glossary import PRESETS as NOTES

    try:
        from tasks.probe.finetune.presets import PRESETS
    except ModuleNotFoundError:  # before issue 27 re-housed tasks/probe by what it measures
        from tasks.probe.presets import PRESETS

    assert set(NOTES) == set(PRESETS)
    for name, preset in PRESETS.items():
        assert (NOTES[name].mode, NOTES[name].seq_len) == (preset.mode, preset.seq_len), name


def _rgb(hex_: str) -> tuple[int, ...]:
    return tuple(int(hex_[i:i + 2], 16) for i in (1, 3, 5))


def test_the_log_terms_have_one_palette_no_target_colour_comes_near():
    from reports.theme import PALETTE, TERM_COLORS

    for term, c in TERM_COLORS.items():
        near = min(sum((a - b) ** 2 for a, b in zip(_rgb(c), _rgb(t))) ** 0.5 for t in PALETTE)
        assert near > 60, (term, c, near)  # distinct at a glance (RGB distance; 0-441)


@pytest.mark.parametrize("values", [[3.496] * 5, [0.1104], [60000.0, 61000.0], [0.0, 0.0], [-2.0, 5.0]])
def test_a_constant_series_gets_a_padded_axis(values):
    """A flat series sits inside its axis with room on both sides (not on one tick labelled "3")."""
    from reports.charts import padded

    lo, hi = padded(values).to_dict()["domain"]
    room = max(abs(v) for v in values) * 0.05 or 0.05
    assert lo <= min(values) - room or lo == 0 <= min(values)  # a non-negative figure's axis stops at 0
    assert hi >= max(values) + room and hi - lo <= 4 * (max(values) - min(values) + 2 * room) + 1


@pytest.mark.parametrize("lo, hi, verdict", [(0.054, 0.472, "clear"), (-0.02, 0.3, "within noise"),
                                             (-0.3, -0.01, "clear")])
def test_verdict_is_clear_only_when_the_interval_excludes_zero(lo, hi, verdict):
    from reports.pages.answer import verdict as decide

    assert decide({"runner_up": "b", "gap_lo": lo, "gap_hi": hi}) == verdict
    assert decide({"runner_up": None}) == "only target measured"


def test_one_format_for_intervals_and_p():
    from reports.pages.html import interval_text, p_text

    assert interval_text(0.0150, 0.01782) == "90% 0.01500 to 0.01782"
    assert interval_text(0.054, 0.472, as_pct=True) == "90% +5.4% to +47.2%"
    assert p_text(1, 12) == "8.3% (1/12)" and p_text(0, 0) == "none recorded"
