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

from reports.theme import BAD, CHART_WIDTH, MUTED, SMALL_HEIGHT, SMALL_WIDTH, VEGA_CONFIG

Rows = list[dict[str, Any]]


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


def cost_bars(cost: Rows, currency: str, colors: dict[str, str]) -> dict:
    """Effective cost per 1M tokens per target, one row of bars per preset (each its own scale), with
    the 90% interval as whiskers; the baseline's bar is outlined."""
    rows = [r for r in cost if r.get("cost_per_mtok") is not None]
    keep = ("target", "preset", "cost_per_mtok", "cost_lo", "cost_hi", "is_baseline")
    y = alt.Y("target:N", title=None, axis=alt.Axis(labelLimit=220))
    bars = alt.Chart().mark_bar(height={"band": 0.7}).encode(
        y=y, x=alt.X("cost_per_mtok:Q", title=f"effective cost per 1M tokens ({currency})"), color=color(colors),
        stroke=alt.condition("datum.is_baseline", alt.value("#111827"), alt.value(None)),
        tooltip=["target:N", "preset:N", alt.Tooltip("cost_per_mtok:Q", format=".4~g"),
                 alt.Tooltip("cost_lo:Q", title="90% low", format=".4~g"),
                 alt.Tooltip("cost_hi:Q", title="90% high", format=".4~g")])
    whisk = alt.Chart().mark_rule(color="#111827").encode(y=y, x="cost_lo:Q", x2="cost_hi:Q")
    layered = alt.layer(bars, whisk).properties(width=CHART_WIDTH - 160, height=alt.Step(22))
    chart = alt.FacetChart(data=_data(rows, keep), spec=layered, columns=1,
                           facet=alt.Facet("preset:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left",
                                                                                        labelFontWeight=600)))
    return _spec(chart.resolve_scale(x="independent", y="independent"))


def throughput_lines(rows: Rows, preset: str, colors: dict[str, str]) -> dict:
    """Tokens/s per period for one preset (the cost model's X: median over the period's runs)."""
    chart = alt.Chart(_data(rows, ("period_end", "target", "tokens_per_s", "runs"))).mark_line(point=True).encode(
        x=alt.X("period_end:T", title="window ending", axis=alt.Axis(format="%b %d", labelAngle=0)),
        y=alt.Y("tokens_per_s:Q", title="tokens/s (median over the window)", scale=alt.Scale(zero=False)),
        color=color(colors, shown=sorted({r["target"] for r in rows})),
        tooltip=["target:N", alt.Tooltip("period_end:T", title="window ending"), alt.Tooltip("tokens_per_s:Q", format=",.0f"),
                 "runs:Q"])
    return _spec(chart.properties(width=SMALL_WIDTH, height=SMALL_HEIGHT, title=preset))


def price_steps(rows: Rows, currency: str, colors: dict[str, str]) -> dict:
    """The blended price per instance-hour each period (what the cost used), as steps."""
    chart = alt.Chart(_data(rows, ("period_end", "target", "price_per_hour"))).mark_line(interpolate="step-before",
                                                                                        point=True).encode(
        x=alt.X("period_end:T", title="window ending", axis=alt.Axis(format="%b %d", labelAngle=0)),
        y=alt.Y("price_per_hour:Q", title=f"price per instance-hour ({currency})", scale=alt.Scale(zero=False)),
        color=color(colors, legend=False),
        tooltip=["target:N", alt.Tooltip("period_end:T", title="window ending"), alt.Tooltip("price_per_hour:Q", format=".4~g")])
    return _spec(chart.properties(width=SMALL_WIDTH, height=SMALL_HEIGHT - 40, title="price used"))


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
        tooltip=["target:N", "figure:N", alt.Tooltip("efficiency:Q", format=".1%"), alt.Tooltip("value:Q", format=",.1f"),
                 alt.Tooltip("peak:Q", format=",.1f"), "unit:N", alt.Tooltip("n:Q", title="runs")],
    )
    one = alt.Chart(alt.Data(values=[{"x": 1.0}])).mark_rule(color=MUTED, strokeDash=[4, 3]).encode(x="x:Q")
    n_targets = len({r["target"] for r in rows}) or 1
    height = max(80, 16 * n_targets * len({r["figure"] for r in rows}))
    return _spec(alt.layer(bars, one).properties(width=CHART_WIDTH, height=height))


def telemetry_lines(tel: Rows, colors: dict[str, str]) -> dict:
    """Median power and SM clock per target and week (from NVML samples reduced in DuckDB)."""
    data = _data(tel, ("target", "week", "power_w_median", "sm_clock_mhz_median", "temp_c_max", "samples"))
    common = dict(x=alt.X("week:T", title="week"), color=color(colors))
    tip = ["target:N", "week:T", "power_w_median:Q", "sm_clock_mhz_median:Q", "temp_c_max:Q", "samples:Q"]
    power = alt.Chart(data).mark_line(point=True).encode(y=alt.Y("power_w_median:Q", title="median power (W)"), tooltip=tip, **common)
    clock = alt.Chart(data).mark_line(point=True).encode(
        y=alt.Y("sm_clock_mhz_median:Q", title="median SM clock (MHz)", scale=alt.Scale(zero=False)), tooltip=tip, **common)
    return _spec(alt.vconcat(power.properties(width=CHART_WIDTH, height=160), clock.properties(width=CHART_WIDTH, height=160)))


def failure_kind_bars(kinds: Rows, colors: dict[str, str]) -> dict:
    """Failed fine-tune attempts of each kind as a share of the target's attempts: rates, not counts."""
    chart = alt.Chart(_data(kinds, ("target", "error_kind", "failures", "attempts", "rate"))).mark_bar().encode(
        y=alt.Y("error_kind:N", title=None), yOffset="target:N",
        x=alt.X("rate:Q", title="share of the target's fine-tune attempts", axis=alt.Axis(format="%")),
        color=color(colors),
        tooltip=["target:N", "error_kind:N", alt.Tooltip("rate:Q", format=".1%"), "failures:Q", "attempts:Q"])
    return _spec(chart.properties(width=CHART_WIDTH - 120, height=max(60, 18 * len(kinds))))


def validation_bars(daily: Rows) -> dict:
    rows = [{"day": r["day"], "result": k, "n": r[k]} for r in daily for k in ("passed", "failed")]
    chart = alt.Chart(_data(rows, ("day", "result", "n"))).mark_bar().encode(
        x=alt.X("day:T", title=None), y=alt.Y("sum(n):Q", title="expectations evaluated"),
        color=alt.Color("result:N", scale=alt.Scale(domain=["passed", "failed"], range=["#10b981", BAD])),
        tooltip=["day:T", "result:N", alt.Tooltip("sum(n):Q", title="count")])
    return _spec(chart.properties(width=CHART_WIDTH, height=200))
