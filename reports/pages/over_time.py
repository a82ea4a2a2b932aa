"""The gap over time: per preset, each target's gap against the baseline per week with its 90% band and
the price and environment changes labelled on the chart, and beside it the three log terms that add
up to ln(1 + gap), so a reader sees which term moved when. Also cost per 1M tokens per preset.

    costgap demo && open .costgap/demo-site/over-time.html

`data/gap_history.csv` holds one row per (period, preset, target) against the baseline; a period is
the window (period_start, period_end], so `costgap gap T B --preset P --as-of <period_end> --window 7d
--json` reproduces a row's cost, baseline cost and gap (docs/report.md lists the columns).
"""

from __future__ import annotations

from reports import charts, charts_gap
from reports.data import ReportData, Section
from reports.pages.html import Markup, Sorted, escape
from reports.pages.page import Page, _section, _target_link, interval_cell, pct_cell, row
from tasks.cost.grid import STEP_DAYS, stride

GAP_CSV = ("period_start", "period_end", "preset", "target", "baseline", "currency", "cost_per_mtok",
           "baseline_cost_per_mtok", "gap", "gap_lo", "gap_hi", "ln_price", "ln_throughput", "ln_reliability",
           "price_per_hour", "baseline_price_per_hour", "tokens_per_s", "baseline_tokens_per_s", "p",
           "failed_attempts", "attempts", "R", "baseline_p", "baseline_failed_attempts", "baseline_attempts",
           "baseline_R", "runs", "baseline_runs")


def over_time(data: ReportData) -> Page:
    p = Page("over-time.html", "The gap over time",
             f"Each target's cost against {data.baseline or 'the baseline'} over the {data.cost_window_days:g}-day "
             "window, recomputed every week (each point sits at its window's end), with its whole 90% band; the "
             "faint dots are each day's runs. Price changes (orange) and environment changes (grey: driver, CUDA, "
             "cuDNN, torch, image) are labelled on the charts with before → after. Beside each gap, the price, "
             "throughput and reliability terms of that window: they add up exactly to ln(1 + gap). The newest point "
             "is the overview's figure.")
    gaps = data.gap_history.rows
    p.h2(f"Gap vs {data.baseline or 'the baseline'}, and what moved it")
    p.parts.append(Markup("<p>{}</p>").format(absorb_note(data.cost_window_days)))

    def story() -> Markup:
        out = [p.table("gap_history", [("period_end", "Window ending"), ("preset", "Preset"), ("target", "Target"),
                                       ("gap", "Gap"), ("ci", "90% interval"), ("ln_price", "Price (log points)"),
                                       ("ln_throughput", "Throughput (log points)"),
                                       ("ln_reliability", "Reliability (log points)")],
                       [dict(r, target=_target_link(r["target"]), gap=pct_cell(r["gap"]),
                             ci=interval_cell(r["gap_lo"], r["gap_hi"], as_pct=True),
                             **{k: Sorted(escape(f"{100 * r[k]:+.2f}"), sort=r[k]) for k in ("ln_price", "ln_throughput",
                                                                                  "ln_reliability")})
                        for r in gaps[::-1][:60]],
                       numeric=("gap", "ln_price", "ln_throughput", "ln_reliability"),
                       csv=[{k: r.get(k) for k in GAP_CSV} for r in gaps])]
        for preset in sorted({r["preset"] for r in gaps}):
            rows = [r for r in gaps if r["preset"] == preset]
            involved = {r["target"] for r in rows} | {data.baseline}
            events = [e for e in data.events if e["target"] in involved]
            dots = [d for d in data.run_points if d["preset"] == preset]
            parts = [p.chart(f"gap-{_key(preset)}", lambda r=rows, e=events, s=preset, d=dots: charts_gap.gap_chart(
                r, e, data.baseline, s, data.colors, d), f"{preset}: the gap per window with its 90% band; dots: each "
                "day's runs against the baseline's nearest run.",
                rows=[{k: r[k] for k in ("period_start", "period_end", "target", "gap", "gap_lo", "gap_hi")} for r in rows])]
            for t in sorted({r["target"] for r in rows}):
                mine = [r for r in rows if r["target"] == t]
                parts.append(p.chart(f"terms-{_key(preset)}-{_key(t)}", lambda r=mine, t=t: charts_gap.terms_bars(
                    r, t, data.baseline, data.colors), f"{t}: price + throughput + reliability = ln(1 + gap).",
                    rows=[{k: r[k] for k in ("period_end", "ln_price", "ln_throughput", "ln_reliability", "gap")}
                          for r in mine]))
            out.append(Markup("<h3>{}</h3>").format(preset) + row(parts))
        shown = min(len(gaps), 60)
        return (Markup("").join(out[1:]) + Markup("<h3>Every window, newest first ({} of {} rows; all in the CSV)</h3>")
                .format(shown, len(gaps)) + out[0])

    p.card(_section(data.gap_history, story, "windows in which a target and the baseline both have a cost",
                    none="No window yet in which another target and the baseline both have a cost on a shared preset."))
    p.h2("Cost per 1M tokens per preset")
    hist = [r for r in data.history.rows if r.get("cost_per_mtok") is not None]
    p.card(_section(data.history, lambda: row(
        p.chart(f"cost-{_key(s)}", lambda s=s: charts_gap.cost_lines(
            [r for r in hist if r["preset"] == s], s, data.currency, data.colors),
            f"{s}: cost per window with its 90% band.",
            rows=[{k: r[k] for k in ("period_start", "period_end", "target", "preset", "cost_per_mtok", "cost_lo",
                                     "cost_hi", "price_per_hour", "tokens_per_s", "R", "runs")}
                  for r in hist if r["preset"] == s])
        for s in sorted({r["preset"] for r in hist})), "cost history"))
    p.h2("Measured throughput per preset")
    p.card(_section(data.history, lambda: row(
        p.chart(f"throughput-{_key(s)}", lambda s=s: charts.throughput_lines(
            [r for r in data.history.rows if r["preset"] == s], s, data.colors), "Tokens/s: the cost model's X.",
            rows=[{k: r[k] for k in ("period_end", "target", "preset", "tokens_per_s", "runs")}
                  for r in data.history.rows if r["preset"] == s])
        for s in sorted({r["preset"] for r in data.history.rows})), "fine-tune runs"))
    p.h2("Price and environment changes")
    p.card(_section(Section(rows=data.events), lambda: p.table(
        "changes", [("at", "When"), ("kind", "Kind"), ("target", "Target"), ("label", "What changed")],
        [dict(e, target=_target_link(e["target"]), at=e["at"]) for e in data.events[::-1]]),
        "price or environment changes"))
    return p


def absorb_note(window_days: float) -> str:
    """What the page says about when a line moves (the issue's "labels sit weeks away from the step")."""
    return (f"Read the line as a {window_days:g}-day average: a step in price, tokens/s or failures on one day moves "
            f"it a little every week until the step is {window_days:g} days old, so the line can rise for weeks "
            "after a labelled change. The dots are the runs themselves: they jump on the day the step happened. "
            "Why it moved and Recent changes compare two of these weekly windows that share no run "
            f"({grid_step_days(window_days):g} days apart), so every figure they quote is a point here.")


def grid_step_days(window_days: float) -> float:
    return stride(window_days) * STEP_DAYS


def _key(text: str) -> str:
    """A file-safe chart id part."""
    return "".join(c if c.isalnum() else "-" for c in str(text).lower()).strip("-") or "x"

