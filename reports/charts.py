"""Altair charts over the small pre-aggregated tables of reports.data; each returns a Vega-Lite dict.

    python -c "from reports.charts import cost_bars; print(cost_bars([{'target':'a','preset':'tiny','cost_per_mtok':1.0}]))"

Data are inlined as `values` (never a URL), dates as ISO strings, and the theme's config is applied,
so the same spec renders in the page (vega-embed) and in the PNG/SVG export (vl-convert).
"""

from __future__ import annotations

import math
from datetime import date, datetime
from typing import Any

import altair as alt

from reports.theme import BAD, CHART_HEIGHT, CHART_WIDTH, MUTED, VEGA_CONFIG, WARN

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


def cost_bars(cost: Rows, baseline: str | None = None) -> dict:
    """Effective cost per 1M tokens per target and preset, cheapest first, with its interval."""
    rows = [dict(r, label=f"{r['target']} · {r.get('preset')}", base=r.get("target") == baseline)
            for r in cost if r.get("cost_per_mtok") is not None]
    keep = ("label", "target", "preset", "cost_per_mtok", "cost_lo", "cost_hi", "base")
    order = [r["label"] for r in rows]
    y = alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=260))
    base = alt.Chart(_data(rows, keep))
    bars = base.mark_bar(height={"band": 0.7}).encode(
        y=y,
        x=alt.X("cost_per_mtok:Q", title="effective cost per 1M tokens"),
        color=alt.condition("datum.base", alt.value("#1d4ed8"), alt.value("#93c5fd")),
        tooltip=["target:N", "preset:N", alt.Tooltip("cost_per_mtok:Q", format=".3f"),
                 alt.Tooltip("cost_lo:Q", format=".3f"), alt.Tooltip("cost_hi:Q", format=".3f")],
    )
    whisk = base.mark_rule(color="#111827").encode(y=y, x="cost_lo:Q", x2="cost_hi:Q")
    return _spec((bars + whisk).properties(width=CHART_WIDTH, height=max(60, 28 * len(rows))))


def _rules(price_changes: Rows, env_changes: Rows) -> list[alt.Chart]:
    layers = []
    if price_changes:
        layers.append(alt.Chart(_data(price_changes, ("target", "changed_at", "price_per_hour", "currency")))
                      .mark_rule(strokeDash=[5, 3], color=WARN, strokeWidth=1.5)
                      .encode(x="changed_at:T", tooltip=["target:N", alt.Tooltip("changed_at:T", title="price change"),
                                                        "price_per_hour:Q", "currency:N"]))
    if env_changes:
        layers.append(alt.Chart(_data(env_changes, ("target", "changed_at", "change")))
                      .mark_rule(color=MUTED, strokeWidth=1.5)
                      .encode(x="changed_at:T", tooltip=["target:N", alt.Tooltip("changed_at:T", title="environment change"),
                                                        "change:N"]))
    return layers


def history_lines(history: Rows, price_changes: Rows, env_changes: Rows) -> dict:
    """Cost per 1M tokens per target over time; price changes dashed, environment changes solid."""
    rows = [dict(r, series=f"{r['target']} · {r.get('preset')}") for r in history if r.get("cost_per_mtok") is not None]
    line = alt.Chart(_data(rows, ("series", "target", "preset", "period_end", "cost_per_mtok"))).mark_line(point=True).encode(
        x=alt.X("period_end:T", title=None),
        y=alt.Y("cost_per_mtok:Q", title="cost per 1M tokens"),
        color=alt.Color("series:N", title="target · preset"),
        tooltip=["series:N", alt.Tooltip("period_end:T", title="week ending"), alt.Tooltip("cost_per_mtok:Q", format=".3f")],
    )
    return _spec(alt.layer(line, *_rules(price_changes, env_changes)).properties(width=CHART_WIDTH, height=CHART_HEIGHT))


def throughput_lines(throughput: Rows, env_changes: Rows = (), title: str = "tokens/s") -> dict:
    """Median fine-tune tokens/s per week for each target and preset, environment changes as rules."""
    rows = [dict(r, series=f"{r['target']} · {r.get('preset')}") for r in throughput]
    line = alt.Chart(_data(rows, ("series", "week", "tokens_per_s", "runs"))).mark_line(point=True).encode(
        x=alt.X("week:T", title=None),
        y=alt.Y("tokens_per_s:Q", title=title, scale=alt.Scale(zero=False)),
        color=alt.Color("series:N", title="target · preset"),
        tooltip=["series:N", alt.Tooltip("week:T"), alt.Tooltip("tokens_per_s:Q", format=",.0f"), "runs:Q"],
    )
    return _spec(alt.layer(line, *_rules([], list(env_changes))).properties(width=CHART_WIDTH, height=CHART_HEIGHT))


def waterfall(steps: Rows, title: str) -> dict:
    """steps: (label, value[, total]) in ln points x100; deltas stack from 0, a `total` step is drawn from 0."""
    rows, running = [], 0.0
    for i, s in enumerate(steps):
        total = bool(s.get("total"))
        start = 0.0 if total else running
        end = s["value"] if total else running + s["value"]
        running = end
        rows.append({"order": i, "label": s["label"], "start": start, "end": end, "value": s["value"],
                     "kind": "total" if total else ("up" if s["value"] >= 0 else "down")})
    base = alt.Chart(_data(rows, ("order", "label", "start", "end", "value", "kind")))
    x = alt.X("label:N", sort=[r["label"] for r in rows], title=None, axis=alt.Axis(labelAngle=0))
    bars = base.mark_bar(size=46).encode(
        x=x, y=alt.Y("start:Q", title="log points (≈ % of the cost ratio)"), y2="end:Q",
        color=alt.Color("kind:N", scale=alt.Scale(domain=["total", "up", "down"], range=["#64748b", BAD, "#059669"]),
                        legend=alt.Legend(title=None, labelExpr="{'total':'net change','up':'A got dearer vs B','down':'A got cheaper vs B'}[datum.label]")),
        tooltip=["label:N", alt.Tooltip("value:Q", format="+.2f")],
    )
    text = base.mark_text(dy=-8, fontSize=12).encode(x=x, y="end:Q", text=alt.Text("value:Q", format="+.1f"))
    zero = alt.Chart(alt.Data(values=[{"y": 0}])).mark_rule(color=MUTED).encode(y="y:Q")
    return _spec(alt.layer(bars, text, zero).properties(width=480, height=220, title=title))


def efficiency_bars(eff: Rows) -> dict:
    """Achieved / peak per target for GEMM, HBM and PCIe figures (a roofline-style summary)."""
    rows = [dict(r, figure=f"{r['family']}: {r['metric']}") for r in eff
            if r.get("efficiency") is not None and r.get("family") in ("GEMM", "HBM", "PCIe")]
    base = alt.Chart(_data(rows, ("figure", "family", "target", "efficiency", "value", "peak", "unit", "n")))
    bars = base.mark_bar().encode(
        y=alt.Y("figure:N", title=None, axis=alt.Axis(labelLimit=280)),
        yOffset="target:N",
        x=alt.X("efficiency:Q", title="achieved ÷ peak", axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1.1])),
        color=alt.Color("target:N"),
        tooltip=["target:N", "figure:N", alt.Tooltip("efficiency:Q", format=".1%"), alt.Tooltip("value:Q", format=",.1f"),
                 alt.Tooltip("peak:Q", format=",.1f"), "unit:N", alt.Tooltip("n:Q", title="runs")],
    )
    one = alt.Chart(alt.Data(values=[{"x": 1.0}])).mark_rule(color=MUTED, strokeDash=[4, 3]).encode(x="x:Q")
    n_targets = len({r["target"] for r in rows}) or 1
    height = max(80, 16 * n_targets * len({r["figure"] for r in rows}))
    return _spec(alt.layer(bars, one).properties(width=CHART_WIDTH, height=height))


def telemetry_lines(tel: Rows) -> dict:
    """Median power and SM clock per target and week (from NVML samples reduced in DuckDB)."""
    data = _data(tel, ("target", "week", "power_w_median", "sm_clock_mhz_median", "temp_c_max", "samples"))
    common = dict(x=alt.X("week:T", title=None), color=alt.Color("target:N"))
    tip = ["target:N", "week:T", "power_w_median:Q", "sm_clock_mhz_median:Q", "temp_c_max:Q", "samples:Q"]
    power = alt.Chart(data).mark_line(point=True).encode(y=alt.Y("power_w_median:Q", title="median power (W)"), tooltip=tip, **common)
    clock = alt.Chart(data).mark_line(point=True).encode(
        y=alt.Y("sm_clock_mhz_median:Q", title="median SM clock (MHz)", scale=alt.Scale(zero=False)), tooltip=tip, **common)
    return _spec(alt.vconcat(power.properties(width=CHART_WIDTH, height=160), clock.properties(width=CHART_WIDTH, height=160)))


def failure_rate_lines(weekly: Rows) -> dict:
    """Failed-attempt share per target and week."""
    agg: dict[tuple, dict] = {}
    for r in weekly:
        a = agg.setdefault((r["target"], r["week"]), {"target": r["target"], "week": r["week"], "attempts": 0, "failed": 0})
        a["attempts"] += r["attempts"]
        a["failed"] += r["attempts"] if r["failed"] else 0
    rows = [dict(a, rate=a["failed"] / a["attempts"]) for a in agg.values() if a["attempts"]]
    chart = alt.Chart(_data(rows, ("target", "week", "attempts", "failed", "rate"))).mark_line(point=True).encode(
        x=alt.X("week:T", title=None), y=alt.Y("rate:Q", title="failed attempts", axis=alt.Axis(format="%")),
        color="target:N", tooltip=["target:N", "week:T", "attempts:Q", "failed:Q", alt.Tooltip("rate:Q", format=".1%")])
    return _spec(chart.properties(width=CHART_WIDTH, height=CHART_HEIGHT - 40))


def outcome_bars(weekly: Rows) -> dict:
    """Attempts per week stacked by outcome (completed or the failure kind), one row per target."""
    weeks = len({r["week"] for r in weekly}) or 1
    chart = alt.Chart().mark_bar(width=max(2, min(14, int(0.6 * CHART_WIDTH / weeks)))).encode(
        x=alt.X("week:T", title=None), y=alt.Y("sum(attempts):Q", title="attempts", axis=alt.Axis(tickMinStep=1, format="d")),
        color=alt.Color("outcome:N", scale=alt.Scale(scheme="tableau10")),
        tooltip=["target:N", "week:T", "outcome:N", alt.Tooltip("sum(attempts):Q", title="attempts")],
    ).properties(width=CHART_WIDTH, height=70)
    faceted = alt.FacetChart(data=_data(weekly, ("target", "week", "outcome", "attempts")), spec=chart,
                             facet=alt.Facet("target:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left",
                                                                                         labelLimit=200)),
                             columns=1).resolve_scale(y="independent")
    return _spec(faceted)


def failure_kind_bars(kinds: Rows) -> dict:
    chart = alt.Chart(_data(kinds, ("target", "error_kind", "failures", "task"))).mark_bar().encode(
        y=alt.Y("target:N", title=None, axis=alt.Axis(labelLimit=260)), x=alt.X("sum(failures):Q", title="failed attempts", axis=alt.Axis(tickMinStep=1, format="d")),
        color=alt.Color("error_kind:N", title="failure kind"), tooltip=["target:N", "error_kind:N", "failures:Q", "task:N"])
    return _spec(chart.properties(width=CHART_WIDTH, height=max(60, 26 * len({k["target"] for k in kinds}))))


def validation_bars(daily: Rows) -> dict:
    rows = [{"day": r["day"], "result": k, "n": r[k]} for r in daily for k in ("passed", "failed")]
    chart = alt.Chart(_data(rows, ("day", "result", "n"))).mark_bar().encode(
        x=alt.X("day:T", title=None), y=alt.Y("sum(n):Q", title="expectations evaluated"),
        color=alt.Color("result:N", scale=alt.Scale(domain=["passed", "failed"], range=["#10b981", BAD])),
        tooltip=["day:T", "result:N", alt.Tooltip("sum(n):Q", title="count")])
    return _spec(chart.properties(width=CHART_WIDTH, height=200))
