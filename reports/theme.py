"""One look for every page and chart: colours, type, the Vega-Lite config and the page CSS.

    python -c "from reports.theme import VEGA_CONFIG; print(VEGA_CONFIG['font'])"

Sizes are chosen for a 13-14" laptop at 100% zoom: body text 15 px, charts 640 px wide.
"""

from __future__ import annotations

FONT = "Inter, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"  # system fonts only: offline
MONO = "'JetBrains Mono', 'DejaVu Sans Mono', Menlo, Consolas, monospace"
INK = "#1f2933"  # body text
MUTED = "#616e7c"  # captions, axis labels
GRID = "#e4e7eb"
ACCENT = "#2563eb"  # links, the baseline
WARN = "#b45309"  # stale prices, throttled, synthetic data
BAD = "#b91c1c"  # failures
GOOD = "#047857"
# Targets: ten hues, the first two contrasting strongly, with no amber/orange, teal or magenta: those
# three belong to the log terms below, so a term never reads as a target (tests/test_report.py checks).
PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#7c3aed", "#0ea5e9", "#64748b", "#ec4899", "#84cc16", "#1e3a8a", "#a3a3a3"]
CHART_WIDTH = 640  # px; fits beside nothing, readable without horizontal scroll on a laptop
CHART_HEIGHT = 260
SMALL_WIDTH = 360  # px; a small multiple: two side by side still fit a 900 px window... one per row below it
SMALL_HEIGHT = 200
# The three terms of the gap's decomposition, the one palette for them on every chart and page: hues no
# target takes (amber, teal, magenta).
TERM_COLORS = {"price": "#f59e0b", "throughput": "#0d9488", "reliability": "#c026d3"}

# the same three hues, darkened for text on white (WCAG AA)
TERM_TEXT = {"price": "#b45309", "throughput": "#0f766e", "reliability": "#a21caf"}


def target_colors(targets) -> dict[str, str]:
    """One fixed colour per target on every chart of the site: sorted targets take the palette in order."""
    return {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(sorted({str(t) for t in targets}))}

VEGA_CONFIG: dict = {
    "font": FONT,
    "background": "white",
    "view": {"stroke": None},
    "range": {"category": PALETTE},
    "axis": {
        "labelColor": MUTED, "titleColor": INK, "gridColor": GRID, "domainColor": GRID,
        "tickColor": GRID, "labelFontSize": 12, "titleFontSize": 12, "titleFontWeight": 600,
    },
    "legend": {"labelFontSize": 12, "titleFontSize": 12, "labelColor": INK, "titleColor": INK, "labelLimit": 240},
    "title": {"fontSize": 14, "anchor": "start", "color": INK, "fontWeight": 600, "subtitleColor": MUTED},
    "header": {"labelFontSize": 12, "titleFontSize": 12},
    "bar": {"color": ACCENT},
    "line": {"strokeWidth": 2},
    "point": {"size": 40},
}

CSS = f"""
*{{box-sizing:border-box}}
body{{margin:0;font-family:{FONT};font-size:15px;line-height:1.5;color:{INK};background:#f5f7fa}}
header{{background:#111827;color:#f9fafb;padding:14px 28px;display:flex;gap:28px;align-items:baseline;flex-wrap:wrap}}
header .brand{{font-weight:700;font-size:18px;letter-spacing:.02em}}
header nav a{{color:#cbd5e1;text-decoration:none;margin-right:18px;font-size:14px}}
header nav a.here{{color:#fff;border-bottom:2px solid {ACCENT}}}
main{{max-width:1260px;margin:0 auto;padding:22px 28px 60px}}
h1{{font-size:24px;margin:6px 0 4px}} h2{{font-size:18px;margin:30px 0 8px}}
p.lede{{color:{MUTED};margin:0 0 16px;max-width:820px}}
section.card{{overflow-x:auto;background:#fff;border:1px solid {GRID};border-radius:8px;padding:16px 20px;margin:16px 0}}
table{{border-collapse:collapse;width:100%;font-size:13.5px}}
th,td{{text-align:left;padding:6px 10px;border-bottom:1px solid {GRID};vertical-align:top}}
th{{font-weight:600;color:{MUTED};background:#fafbfc;position:sticky;top:0}}
table.data th{{cursor:pointer;user-select:none}}
table.data th[aria-sort=ascending]::after{{content:" ▲";font-size:10px}}
table.data th[aria-sort=descending]::after{{content:" ▼";font-size:10px}}
.tools{{display:flex;gap:12px;align-items:center;flex-wrap:wrap;margin:0 0 8px;font-size:12.5px;color:{MUTED}}}
input.filter{{font:inherit;font-size:13px;padding:3px 8px;border:1px solid {GRID};border-radius:6px;min-width:180px}}
.headline{{font-size:16px;margin:6px 0}} .headline b{{font-weight:650}}
.sub{{display:block;font-size:11.5px;color:{MUTED}}}
.row{{display:flex;gap:18px;flex-wrap:wrap;align-items:flex-start}}
td.num,th.num{{text-align:right;font-variant-numeric:tabular-nums}}
th{{white-space:normal;min-width:3.5em}} td{{overflow-wrap:anywhere}}
tr.base td{{background:#eff6ff}}
code,.mono{{font-family:{MONO};font-size:12.5px}}
.badge{{white-space:nowrap;display:inline-block;padding:0 7px;border-radius:9px;font-size:12px;font-weight:600;background:#e5e7eb;color:{INK}}}
.badge.warn{{background:#fef3c7;color:{WARN}}} .badge.bad{{background:#fee2e2;color:{BAD}}}
.badge.good{{background:#d1fae5;color:{GOOD}}}
.empty{{color:{MUTED};font-style:italic;padding:10px 0}}
.banner{{background:#fffbeb;border:1px solid #fcd34d;color:#78350f;border-radius:8px;padding:10px 16px;margin:12px 0}}
.chart{{margin:8px 0 4px;min-height:60px}}
.exports{{font-size:12.5px;color:{MUTED}}} .exports a{{color:{ACCENT}}}
a{{color:{ACCENT}}}
footer{{color:{MUTED};font-size:12.5px;max-width:1260px;margin:0 auto;padding:0 28px 30px}}
.scroll{{max-height:560px;overflow:auto}}
form.choices{{display:flex;flex-wrap:wrap;gap:10px 18px;align-items:end;margin:8px 0}}
form.choices label{{display:flex;flex-direction:column;font-size:12.5px;color:{MUTED};font-weight:600}}
form.choices select,form.choices input{{font:inherit;font-size:14px;color:{INK};padding:4px 8px;border:1px solid #cbd5e1;border-radius:6px;background:#fff;font-weight:400}}
details.glossary{{margin:12px 0 0}} details.glossary summary{{cursor:pointer;font-weight:600}}
.term-price{{color:{TERM_TEXT["price"]}}} .term-throughput{{color:{TERM_TEXT["throughput"]}}} .term-reliability{{color:{TERM_TEXT["reliability"]}}}
.nw,td a{{white-space:nowrap}}
@media (max-width:1000px){{main{{padding:14px 12px 40px}} section.card{{padding:12px 10px}}
 th,td{{padding:5px 6px}} table{{font-size:12.5px}} header{{padding:12px}}}}
"""
