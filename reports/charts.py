"""Altair charts over the small pre-aggregated tables of reports.data; each returns a Vega-Lite dict.

    python -c "from reports.charts import cost_bars; print(cost_bars([{'target':'a','preset':'tiny','cost_per_mtok':1.0}], 'USD', {'a': '#000'}))"

Data are inlined as `values` (never a URL), dates as ISO strings, and the theme's config is applied,
so the same spec renders in the page (vega-embed) and in the PNG/SVG export (vl-convert). A target
has one colour on every chart (`color`, from reports.theme.target_colors). The gap's own charts are
in reports/charts_gap.py.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from typing import Any

import altair as alt

from reports.theme import BAD, CHART_WIDTH, GOOD, MUTED, SMALL_HEIGHT, SMALL_WIDTH, TERM_COLORS, VEGA_CONFIG

Rows = list[dict[str, Any]]
PAD = 0.1  # a y-axis spans at least +-10% of its values' middle: a constant series sits mid-chart, not on one tick


def key(text: str) -> str:
    """A file-safe chart id part."""
    return "".join(c if c.isalnum() else "-" for c in str(text).lower()).strip("-") or "x"


def padded(values, frac: float = PAD, zero: bool = False) -> alt.Scale:
    """A linear scale over `values` padded so that a flat or nearly flat series gets a readable axis
    (a constant 3.496 is drawn between 3.1 and 3.9 with several ticks, not on one tick labelled "3")."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals:
        return alt.Scale(zero=zero)
    lo, hi = min(vals), max(vals)
    mid = (lo + hi) / 2
    half = max((hi - lo) / 2 * (1 + 2 * frac), abs(mid) * frac) or 1.0
    low = 0.0 if zero or (mid - half < 0 <= lo) else mid - half
    return alt.Scale(domain=[low, mid + half], zero=False, nice=True)


def _clean(rows: Rows, keep: tuple[str, ...]) -> Rows:
    """Only the needed columns; datetimes as ISO strings; floats rounded, non-finite ones as null."""
    out = []
    for r in rows:
        row = {}
        for k in keep:
            v = r.get(k)
            if isinstance(v, (datetime, date)):
                v = v.isoformat()
            elif isinstance(v, float):  # 6 significant digits: smaller pages, and identical specs for
                v = float(f"{v:.6g}") if math.isfinite(v) else None  # identical data (float noise dropped)
            row[k] = v
        out.append(row)
    return out


# Altair's JSON-schema validation costs ~20 ms per chart (about half a rebuild's CPU). The tests
# validate every chart builder once (tests/test_report.py sets this True); the site build skips it.
VALIDATE_SPECS = False


def _spec(chart: alt.TopLevelMixin) -> dict:
    spec = chart.to_dict(validate=VALIDATE_SPECS)
    spec.pop("$schema", None)  # a URL; the page and vl-convert both know the version
    spec["config"] = VEGA_CONFIG
    return spec


def _data(rows: Rows, keep: tuple[str, ...]) -> alt.Data:
    return alt.Data(values=_clean(rows, keep))


def color(colors: dict[str, str], legend: bool = True, shown: list[str] | None = None) -> alt.Color:
    """Colour by target with the site-wide fixed colours (the same target, the same colour, everywhere);
    the legend lists `shown` (the targets on this chart) when given."""
    kw = {"values": shown} if shown is not None else {}
    return alt.Color("target:N", title="target", scale=alt.Scale(domain=list(colors), range=list(colors.values())),
                     legend=alt.Legend(orient="bottom", columns=4, **kw) if legend else None)


def tip(field: str, title: str, fmt: str | None = None) -> alt.Tooltip:
    """A tooltip line with a reader's name and unit; `fmt` is a d3 format (one per kind of figure)."""
    return alt.Tooltip(field, title=title, **({"format": fmt} if fmt else {}))


# one d3 format per kind of figure, as reports.pages.html shows it: 4 significant figures, thousands grouped,
# signed percentages with one decimal, log points with one decimal
NUM, THOUSANDS, PCT, SHARE, POINTS = ",.4~r", ",.0f", "+.1%", ".1%", "+.1f"
TARGET_TIP = alt.Tooltip("target:N", title="target")
PERIOD_TIP = alt.Tooltip("period_end:T", title="window ending", format="%Y-%m-%d")


def cost_bars(cost: Rows, currency: str, colors: dict[str, str]) -> dict:
    """Effective cost per 1M tokens per target, one row of bars per preset (each its own scale), with
    the 90% interval as whiskers; the baseline's bar is outlined."""
    rows = [r for r in cost if r.get("cost_per_mtok") is not None]
    keep = ("target", "preset", "cost_per_mtok", "cost_lo", "cost_hi", "is_baseline")
    y = alt.Y("target:N", title=None, axis=alt.Axis(labelLimit=220))
    bars = alt.Chart().mark_bar(height={"band": 0.7}).encode(
        y=y, x=alt.X("cost_per_mtok:Q", title=f"effective cost per 1M tokens ({currency})"), color=color(colors),
        stroke=alt.condition("datum.is_baseline", alt.value("#111827"), alt.value(None)),
        tooltip=[TARGET_TIP, tip("preset:N", "preset"),
                 tip("cost_per_mtok:Q", f"cost per 1M tokens ({currency})", NUM),
                 tip("cost_lo:Q", "90% interval, low", NUM), tip("cost_hi:Q", "90% interval, high", NUM)])
    whisk = alt.Chart().mark_rule(color="#111827").encode(y=y, x="cost_lo:Q", x2="cost_hi:Q")
    layered = alt.layer(bars, whisk).properties(width=CHART_WIDTH - 160, height=alt.Step(22))
    chart = alt.FacetChart(data=_data(rows, keep), spec=layered, columns=1,
                           facet=alt.Facet("preset:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left",
                                                                                        labelFontWeight=600)))
    return _spec(chart.resolve_scale(x="independent", y="independent"))


def _levels(costs: list[float], n: int = 4) -> list[float]:
    """The lines of equal cost to draw: each target's own cost (up to `n`, cheapest first), else round
    1-2-5 steps around them."""
    if len(set(costs)) <= n:
        return sorted(set(costs))
    lo, hi = min(costs), max(costs)
    out = [m * 10.0 ** e for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
           for m in (1, 2, 5) if lo <= m * 10.0 ** e <= hi]
    while len(out) > n:
        out = out[::2]
    return out or [lo, hi]


def price_throughput(rows: Rows, preset: str, currency: str, colors: dict[str, str]) -> dict:
    """Each target at (tokens/s after reruns X/R, price per instance-hour P), log-log, with lines of
    equal cost per 1M tokens C = P / (3600 X/R) 1e6: a point on a line costs that much."""
    pts = [dict(r, net=r["tokens_per_s"] / r["R"]) for r in rows if r.get("cost_per_mtok") is not None]
    xs, ys = [r["net"] for r in pts], [r["price_per_hour"] for r in pts]
    x0, x1 = min(xs) / 1.6, max(xs) * 1.6
    y0, y1 = min(ys) / 1.6, max(ys) * 1.6
    lines, labels = [], []
    for c in _levels([r["cost_per_mtok"] for r in pts]):
        a, b = max(x0, y0 * 1e6 / (3600 * c)), min(x1, y1 * 1e6 / (3600 * c))  # the part inside the box
        if a >= b:
            continue
        lines += [{"level": c, "x": x, "y": c * 3600 * x / 1e6} for x in (a, b)]
        labels.append({"level": c, "x": b, "y": c * 3600 * b / 1e6, "text": f"{float(f'{c:.3g}'):g} {currency}/1M"})
    xs_ = alt.Scale(type="log", domain=[x0, x1], nice=False)
    ys_ = alt.Scale(type="log", domain=[y0, y1], nice=False)
    x_title, y_title = "tokens/s after reruns (X ÷ R)", f"price per instance-hour ({currency})"
    x_axis = alt.Axis(format="~s", tickCount=4, labelOverlap="greedy")
    y_axis = alt.Axis(format=",.3~r", tickCount=4, labelOverlap="greedy")
    iso = alt.Chart(alt.Data(values=lines)).mark_line(color=MUTED, strokeDash=[3, 3], strokeWidth=1, clip=True).encode(
        x=alt.X("x:Q", scale=xs_, title=x_title, axis=x_axis), y=alt.Y("y:Q", scale=ys_, title=y_title, axis=y_axis),
        detail="level:N")
    text = alt.Chart(alt.Data(values=labels)).mark_text(align="right", baseline="bottom", dx=-2, dy=-2, fontSize=10,
                                                        color=MUTED).encode(
        x=alt.X("x:Q", scale=xs_), y=alt.Y("y:Q", scale=ys_), text="text:N")
    dots = alt.Chart(_data(pts, ("target", "price_per_hour", "tokens_per_s", "R", "net", "cost_per_mtok", "runs"))
                     ).mark_point(filled=True, size=90, opacity=1).encode(
        x=alt.X("net:Q", scale=xs_, title=x_title, axis=x_axis),
        y=alt.Y("price_per_hour:Q", scale=ys_, title=y_title, axis=y_axis), color=color(colors, legend=False),
        tooltip=[TARGET_TIP, tip("cost_per_mtok:Q", f"cost per 1M tokens ({currency})", NUM),
                 tip("price_per_hour:Q", f"price per instance-hour ({currency})", NUM),
                 tip("tokens_per_s:Q", "tokens/s, measured median", THOUSANDS), tip("R:Q", "rerun factor R", NUM),
                 tip("net:Q", "tokens/s after reruns", THOUSANDS), tip("runs:Q", "runs")])
    names = alt.Chart(_data(pts, ("target", "net", "price_per_hour"))).mark_text(
        align="left", dx=7, fontSize=11, color="#1f2933").encode(
        x=alt.X("net:Q", scale=xs_), y=alt.Y("price_per_hour:Q", scale=ys_), text="target:N")
    return _spec(alt.layer(iso, text, dots, names).properties(
        width=SMALL_WIDTH, height=SMALL_HEIGHT + 40, title=alt.Title(preset, subtitle="lower right is cheaper; grey: equal cost per 1M tokens")))


def throughput_lines(rows: Rows, preset: str, colors: dict[str, str]) -> dict:
    """Tokens/s per period for one preset (the cost model's X: median over the period's runs)."""
    chart = alt.Chart(_data(rows, ("period_end", "target", "tokens_per_s", "runs"))).mark_line(point=True).encode(
        x=alt.X("period_end:T", title="window ending", axis=alt.Axis(format="%b %d", labelAngle=0)),
        y=alt.Y("tokens_per_s:Q", title="tokens/s (median over the window)",
                scale=padded([r.get("tokens_per_s") for r in rows])),
        color=color(colors, shown=sorted({r["target"] for r in rows})),
        tooltip=[TARGET_TIP, PERIOD_TIP, tip("tokens_per_s:Q", "tokens/s (median)", THOUSANDS), tip("runs:Q", "runs")])
    return _spec(chart.properties(width=SMALL_WIDTH, height=SMALL_HEIGHT, title=preset))


def price_steps(rows: Rows, currency: str, colors: dict[str, str]) -> dict:
    """The blended price per instance-hour each period (what the cost used), as steps."""
    chart = alt.Chart(_data(rows, ("period_end", "target", "price_per_hour"))).mark_line(interpolate="step-before",
                                                                                        point=True).encode(
        x=alt.X("period_end:T", title="window ending", axis=alt.Axis(format="%b %d", labelAngle=0)),
        y=alt.Y("price_per_hour:Q", title=f"price per instance-hour ({currency})",
                scale=padded([r.get("price_per_hour") for r in rows]), axis=alt.Axis(format=",.3~r")),
        color=color(colors, legend=False),
        tooltip=[TARGET_TIP, PERIOD_TIP, tip("price_per_hour:Q", f"price per instance-hour ({currency})", NUM)])
    return _spec(chart.properties(width=SMALL_WIDTH, height=SMALL_HEIGHT - 40, title="price used"))


def term_waterfall(steps: Rows, title: str) -> dict:
    """What moved ln(C_A/C_B) between two windows: the three terms (in log points, each in its term colour
    from reports.theme.TERM_COLORS, the one palette for them) stacked from 0, then the net change in grey."""
    rows, running = [], 0.0
    for i, s in enumerate(steps):
        total = bool(s.get("total"))
        start = 0.0 if total else running
        end = s["value"] if total else running + s["value"]
        running = end
        rows.append({"order": i, "label": s["label"], "start": start, "end": end, "value": s["value"]})
    domain = [*TERM_COLORS, "net change"]
    base = alt.Chart(_data(rows, ("order", "label", "start", "end", "value")))
    x = alt.X("label:N", sort=[r["label"] for r in rows], title=None, axis=alt.Axis(labelAngle=0))
    bars = base.mark_bar(size=46).encode(
        x=x, y=alt.Y("start:Q", title="log points (≈ % of the cost ratio)"), y2="end:Q",
        color=alt.Color("label:N", scale=alt.Scale(domain=domain, range=[*TERM_COLORS.values(), "#64748b"]), legend=None),
        tooltip=[tip("label:N", "term"), tip("value:Q", "log points", POINTS)])
    text = base.mark_text(dy=-8, fontSize=12).encode(x=x, y="end:Q", text=alt.Text("value:Q", format=POINTS))
    zero = alt.Chart(alt.Data(values=[{"y": 0}])).mark_rule(color=MUTED).encode(y="y:Q")
    return _spec(alt.layer(bars, text, zero).properties(width=420, height=220, title=title))


def efficiency_bars(eff: Rows, colors: dict[str, str]) -> dict:
    """Achieved / peak per target for GEMM, HBM and PCIe figures (a roofline-style summary)."""
    rows = [dict(r, figure=f"{r['family']}: {r['metric']}") for r in eff
            if r.get("efficiency") is not None and r.get("family") in ("GEMM", "HBM", "PCIe")]
    base = alt.Chart(_data(rows, ("figure", "family", "target", "efficiency", "value", "peak", "unit", "n")))
    bars = base.mark_bar().encode(
        y=alt.Y("figure:N", title=None, axis=alt.Axis(labelLimit=280)),
        yOffset="target:N",
        x=alt.X("efficiency:Q", title="achieved ÷ peak", axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1.1])),
        color=color(colors),
        tooltip=[TARGET_TIP, tip("figure:N", "figure"), tip("efficiency:Q", "achieved ÷ peak", SHARE),
                 tip("value:Q", "achieved (median)", NUM), tip("peak:Q", "datasheet peak", NUM), tip("unit:N", "unit"),
                 tip("n:Q", "runs")],
    )
    one = alt.Chart(alt.Data(values=[{"x": 1.0}])).mark_rule(color=MUTED, strokeDash=[4, 3]).encode(x="x:Q")
    n_targets = len({r["target"] for r in rows}) or 1
    height = max(80, 16 * n_targets * len({r["figure"] for r in rows}))
    return _spec(alt.layer(bars, one).properties(width=CHART_WIDTH, height=height))


def telemetry_lines(tel: Rows, colors: dict[str, str]) -> dict:
    """Median power and SM clock per target and week (from NVML samples reduced in DuckDB)."""
    data = _data(tel, ("target", "week", "power_w_median", "sm_clock_mhz_median", "temp_c_max", "samples"))
    common = dict(x=alt.X("week:T", title="week"), color=color(colors))
    tips = [TARGET_TIP, tip("week:T", "week of", "%Y-%m-%d"), tip("power_w_median:Q", "median power (W)", THOUSANDS),
            tip("sm_clock_mhz_median:Q", "median SM clock (MHz)", THOUSANDS), tip("temp_c_max:Q", "hottest (°C)", THOUSANDS),
            tip("samples:Q", "NVML samples", THOUSANDS)]
    power = alt.Chart(data).mark_line(point=True).encode(
        y=alt.Y("power_w_median:Q", title="median power (W)", scale=padded([r.get("power_w_median") for r in tel])),
        tooltip=tips, **common)
    clock = alt.Chart(data).mark_line(point=True).encode(
        y=alt.Y("sm_clock_mhz_median:Q", title="median SM clock (MHz)",
                scale=padded([r.get("sm_clock_mhz_median") for r in tel])), tooltip=tips, **common)
    return _spec(alt.vconcat(power.properties(width=CHART_WIDTH, height=160), clock.properties(width=CHART_WIDTH, height=160)))


def failure_kind_bars(kinds: Rows, colors: dict[str, str]) -> dict:
    """Failed fine-tune attempts of each kind as a share of the target's attempts: rates, not counts."""
    chart = alt.Chart(_data(kinds, ("target", "error_kind", "failures", "attempts", "rate"))).mark_bar().encode(
        y=alt.Y("error_kind:N", title=None), yOffset="target:N",
        x=alt.X("rate:Q", title="share of the target's fine-tune attempts", axis=alt.Axis(format="%")),
        color=color(colors),
        tooltip=[TARGET_TIP, tip("error_kind:N", "failure kind"), tip("rate:Q", "share of attempts", SHARE),
                 tip("failures:Q", "failed attempts"), tip("attempts:Q", "fine-tune attempts")])
    return _spec(chart.properties(width=CHART_WIDTH - 120, height=max(60, 18 * len(kinds))))


def validation_bars(daily: Rows) -> dict:
    rows = [{"day": r["day"], "result": k, "n": r[k]} for r in daily for k in ("passed", "failed")]
    chart = alt.Chart(_data(rows, ("day", "result", "n"))).mark_bar().encode(
        x=alt.X("day:T", title=None), y=alt.Y("sum(n):Q", title="expectations evaluated"),
        color=alt.Color("result:N", scale=alt.Scale(domain=["passed", "failed"], range=[GOOD, BAD])),
        tooltip=[tip("day:T", "day", "%Y-%m-%d"), tip("result:N", "result"), tip("sum(n):Q", "expectations")])
    return _spec(chart.properties(width=CHART_WIDTH, height=200))
