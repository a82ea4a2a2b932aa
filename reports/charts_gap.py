"""The gap's story as charts: the gap over time with its band and labelled events, the three log terms
that add up to it, cost per preset over time and the rerun rate (the waterfall of what moved the gap is charts.term_waterfall).

    python -c "from reports.charts_gap import terms_bars; print(terms_bars([], 'a', 'b', {'a': '#000'})['mark'])"

Every chart colours a target with its one site-wide colour (reports.theme.target_colors); points sit
at each period's end (a period is (start, end]); axes carry units and the reporting currency.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import altair as alt

from reports.charts import Rows, _data, _spec, color
from reports.theme import BAD, MUTED, SMALL_HEIGHT, SMALL_WIDTH, TERM_COLORS, WARN

LABEL_PX = 14  # vertical step between stacked event labels
MAX_LANES = 5  # event labels stack in at most this many rows; the rest are in the table below the chart
CHAR_PX = 6.2  # average width of one character of an 11 px label
LABEL_LIMIT_PX = 270  # a label is cut (with an ellipsis) past this width


def event_lanes(events: Rows, t0: datetime, t1: datetime, width_px: float) -> Rows:
    """Give each event a label row (`lane`) so that no two labels overlap on the chart: an event takes
    the first row whose previous label ends left of where this one starts (labels run rightwards)."""
    span_s = max((t1 - t0).total_seconds(), 1.0)
    ends: list[float] = [float("-inf")] * MAX_LANES
    out = []
    for e in sorted(events, key=lambda e: e["at"]):
        x = (e["at"] - t0).total_seconds() / span_s * width_px
        lane = next((i for i, end in enumerate(ends) if end + 6 < x), None)
        if lane is None:
            continue
        ends[lane] = x + min(len(e["short"]) * CHAR_PX, LABEL_LIMIT_PX)
        out.append(dict(e, lane=lane, y_px=4 + LABEL_PX * lane))
    return out


BAND_REACH = 2.0  # a band reaching further than this many times the lines' own spread past them is cut ...
CLIP_MARK = "▲"  # ... and its cut end is marked with its value, so the axis never hides a band silently


def gap_domain(rows: Rows, points: Rows = ()) -> tuple[list[float], list[dict]]:
    """The y domain of the gap chart and the band ends it cuts: every band whole (and the 0 line), unless a
    band of a thin window reaches further than BAND_REACH times the lines' spread; then the axis stops there
    and each cut end is returned as a marker {period_end, target, y (the axis end), value, label}."""
    gaps = [r["gap"] for r in rows] + [p["gap"] for p in points] + [0.0]
    core_lo, core_hi = min(gaps), max(gaps)
    reach = BAND_REACH * max(core_hi - core_lo, 0.1)
    limit_lo, limit_hi = core_lo - reach, core_hi + reach
    lo = max(min([r["gap_lo"] for r in rows] + [core_lo]), limit_lo)
    hi = min(max([r["gap_hi"] for r in rows] + [core_hi]), limit_hi)
    pad = 0.05 * (hi - lo)
    domain = [lo - pad, hi + pad]
    marks = []
    for r in rows:
        for key, edge, cut in (("gap_hi", domain[1], r["gap_hi"] > hi), ("gap_lo", domain[0], r["gap_lo"] < lo)):
            if cut:
                marks.append({"period_end": r["period_end"], "target": r["target"], "y": edge, "value": r[key],
                              "label": f"{CLIP_MARK if key == 'gap_hi' else '▼'} {r[key]:+.0%}"})
    return domain, marks


def gap_chart(rows: Rows, events: Rows, baseline: str, preset: str, colors: dict[str, str],
              points: Rows = ()) -> dict:
    """The gap of each target against the baseline per window (points at the window's end), its whole 90% band
    (a band cut by the axis has its end marked with its value), a zero line for the baseline, each day's runs
    as faint dots behind the line (tasks.cost.run_points: a step shows on the day it happened), and each price
    or environment change labelled with before -> after."""
    keep = ("period_end", "target", "gap", "gap_lo", "gap_hi", "runs", "baseline_runs")
    base = alt.Chart(_data(rows, keep))
    width = SMALL_WIDTH + 80
    x = alt.X("period_end:T", title="window ending", axis=alt.Axis(format="%b %d", labelAngle=0))
    t0 = min((r["period_end"] for r in rows), default=None)
    pts = [p for p in points if t0 is None or p["at"] >= t0 - timedelta(days=7)]
    domain, cut = gap_domain(rows, pts)
    y_scale = alt.Scale(domain=domain, nice=False)
    layers = []
    if pts:
        layers.append(alt.Chart(_data(pts, ("at", "target", "gap", "runs"))).mark_circle(size=26, opacity=0.5, clip=True)
                      .encode(x=alt.X("at:T"), y=alt.Y("gap:Q", scale=y_scale), color=color(colors, legend=False),
                              tooltip=[alt.Tooltip("target:N", title="target"), alt.Tooltip("at:T", title="day", format="%b %d"),
                                       alt.Tooltip("gap:Q", title="gap of that day's runs", format="+.1%"),
                                       alt.Tooltip("runs:Q", title="runs that day")]))
    band = base.mark_area(opacity=0.16, clip=True).encode(x=x, y=alt.Y("gap_lo:Q", scale=y_scale), y2="gap_hi:Q",
                                                          color=color(colors, legend=False))
    line = base.mark_line(point=True, clip=True).encode(
        x=x, y=alt.Y("gap:Q", title=f"gap vs {baseline} (cost ratio − 1)", axis=alt.Axis(format="+.0%"), scale=y_scale),
        color=color(colors, shown=sorted({r["target"] for r in rows})),
        tooltip=[alt.Tooltip("target:N", title="target"), alt.Tooltip("period_end:T", title="window ending"),
                 alt.Tooltip("gap:Q", title="gap", format="+.1%"),
                 alt.Tooltip("gap_lo:Q", title="90% low", format="+.1%"),
                 alt.Tooltip("gap_hi:Q", title="90% high", format="+.1%"),
                 alt.Tooltip("runs:Q", title="runs"), alt.Tooltip("baseline_runs:Q", title=f"runs of {baseline}")])
    zero = alt.Chart(alt.Data(values=[{"y": 0}])).mark_rule(color=MUTED).encode(y=alt.Y("y:Q", scale=y_scale))
    layers += [band, zero, line]
    if cut:
        marker = alt.Chart(_data(cut, ("period_end", "target", "y", "value", "label")))
        tip = [alt.Tooltip("target:N", title="target"), alt.Tooltip("value:Q", title="band end (off the axis)", format="+.1%")]
        layers.append(marker.mark_text(fontSize=10, dy=0, baseline="middle").encode(
            x=x, y=alt.Y("y:Q", scale=y_scale), text="label:N", color=color(colors, legend=False), tooltip=tip))
    if rows and events:
        t1 = max(r["period_end"] for r in rows)
        placed = event_lanes([e for e in events if t0 <= e["at"] <= t1], t0, t1, width)
        if placed:
            ev = alt.Chart(_data(placed, ("at", "label", "short", "kind", "lane", "y_px")))
            layers.append(ev.mark_rule(strokeDash=[4, 3], strokeWidth=1.2).encode(
                x="at:T", color=alt.Color("kind:N", scale=alt.Scale(domain=["price", "environment"], range=[WARN, MUTED]),
                                          legend=None), tooltip=["label:N", alt.Tooltip("at:T", title="when")]))
            layers.append(ev.mark_text(align="left", baseline="top", dx=3, fontSize=11, limit=LABEL_LIMIT_PX).encode(
                x="at:T", y=alt.Y("y_px:Q", scale=None), text="short:N", tooltip=["label:N"],
                color=alt.Color("kind:N", scale=alt.Scale(domain=["price", "environment"], range=[WARN, "#374151"]),
                                legend=None)))
    chart = alt.layer(*layers).resolve_scale(color="independent")
    return _spec(chart.properties(width=width, height=SMALL_HEIGHT + 60,
                                  title=alt.Title(f"{preset}: gap vs {baseline}",
                                                  subtitle="line: 30-day window, one a week, 90% band; dots: each day's runs")))


def terms_bars(rows: Rows, target: str, baseline: str, colors: dict[str, str]) -> dict:
    """Per period, the three exact log terms (price, throughput, reliability) stacked; they add up to
    ln(1 + gap), drawn as a black tick. In log points (x100): about the % the term moves the cost ratio."""
    long = [{"period_end": r["period_end"], "term": k, "log_points": 100 * r[f"ln_{k}"],
             "total": 100 * (r["ln_price"] + r["ln_throughput"] + r["ln_reliability"])}
            for r in rows for k in ("price", "throughput", "reliability")]
    x = alt.X("period_end:T", title="window ending", axis=alt.Axis(format="%b %d", labelAngle=0))
    bars = alt.Chart(_data(long, ("period_end", "term", "log_points", "total"))).mark_bar(opacity=0.9).encode(
        x=x, y=alt.Y("log_points:Q", title="log points (≈ % of the cost ratio)", stack="zero"),
        color=alt.Color("term:N", title="what moved it", scale=alt.Scale(domain=list(TERM_COLORS),
                                                                          range=list(TERM_COLORS.values()))),
        tooltip=[alt.Tooltip("period_end:T", title="window ending"), "term:N",
                 alt.Tooltip("log_points:Q", format="+.2f"), alt.Tooltip("total:Q", title="ln(1 + gap) x100", format="+.2f")])
    net = alt.Chart(_data(rows, ("period_end", "gap"))).transform_calculate(
        net="100 * log(1 + datum.gap)").mark_tick(color="#111827", thickness=2, size=12).encode(
        x=x, y="net:Q", tooltip=[alt.Tooltip("net:Q", title="ln(1 + gap) x100", format="+.2f")])
    zero = alt.Chart(alt.Data(values=[{"y": 0}])).mark_rule(color=MUTED).encode(y="y:Q")
    return _spec(alt.layer(bars, zero, net).properties(
        width=SMALL_WIDTH, height=SMALL_HEIGHT + 40,
        title=alt.Title(f"{target} vs {baseline}: what moved the gap", subtitle="bars add up to the black tick",
                        color=colors.get(target))))


def cost_lines(rows: Rows, preset: str, currency: str, colors: dict[str, str]) -> dict:
    """Cost per 1M tokens per target over time for one preset (its own scale), with its 90% band."""
    keep = ("period_end", "target", "cost_per_mtok", "cost_lo", "cost_hi", "price_per_hour", "tokens_per_s", "runs")
    base = alt.Chart(_data(rows, keep))
    x = alt.X("period_end:T", title="window ending", axis=alt.Axis(format="%b %d", labelAngle=0))
    band = base.mark_area(opacity=0.14).encode(x=x, y="cost_lo:Q", y2="cost_hi:Q", color=color(colors, legend=False))
    line = base.mark_line(point=True).encode(
        x=x, y=alt.Y("cost_per_mtok:Q", title=f"cost per 1M tokens ({currency})", scale=alt.Scale(zero=False)),
        color=color(colors, shown=sorted({r["target"] for r in rows})),
        tooltip=["target:N", alt.Tooltip("period_end:T", title="window ending"),
                 alt.Tooltip("cost_per_mtok:Q", format=".4~g"), alt.Tooltip("price_per_hour:Q", format=".4~g"),
                 alt.Tooltip("tokens_per_s:Q", format=",.0f"), "runs:Q"])
    return _spec(alt.layer(band, line).properties(width=SMALL_WIDTH, height=SMALL_HEIGHT,
                                                  title=alt.Title(preset, subtitle="one window a week; 90% band")))


def rerun_rate_lines(rows: Rows, preset: str, colors: dict[str, str]) -> dict:
    """The fine-tune failed-attempt rate p that enters R, per period, with its 90% interval and k/n."""
    keep = ("period_end", "target", "p", "p_lo", "p_hi", "failed_attempts", "attempts", "R")
    base = alt.Chart(_data(rows, keep))
    x = alt.X("period_end:T", title="window ending", axis=alt.Axis(format="%b %d", labelAngle=0))
    bars = base.mark_rule(strokeWidth=2, opacity=0.5).encode(x=x, y="p_lo:Q", y2="p_hi:Q", color=color(colors, legend=False))
    pts = base.mark_line(point=True).encode(
        x=x, y=alt.Y("p:Q", title="failed fine-tune attempts (p)", axis=alt.Axis(format="%")),
        color=color(colors, shown=sorted({r["target"] for r in rows})),
        tooltip=["target:N", alt.Tooltip("period_end:T", title="window ending"), alt.Tooltip("p:Q", format=".1%"),
                 alt.Tooltip("failed_attempts:Q", title="failed (k)"), alt.Tooltip("attempts:Q", title="attempts (n)"),
                 alt.Tooltip("p_lo:Q", format=".1%"), alt.Tooltip("p_hi:Q", format=".1%"), alt.Tooltip("R:Q", format=".3f")])
    return _spec(alt.layer(bars, pts).properties(width=SMALL_WIDTH, height=SMALL_HEIGHT, title=preset))
