"""The report's summary pages: Overview, Over time and Why it moved (one function per page).

    python -c "import duckdb; from reports.data import load; from reports.pages import all_pages; print([p.filename for p in all_pages(load(duckdb.connect('costgap.duckdb', read_only=True)))])"
"""

from __future__ import annotations

from reports import charts
from reports.data import ReportData, Rows, Section
from reports.html import Raw, badge, empty, esc, fmt, table
from reports.page import Page, _pct, _section, _target_link, changes_table
from reports.pages_detail import hardware, quality, reliability, target_pages

def _age(days: float) -> str:
    return "< 1 d" if days < 1 else f"{days:,.0f} d"


def overview(data: ReportData) -> Page:
    p = Page("index.html", "What a training token really costs",
             "Effective cost per 1M training tokens on each target: the price per instance-hour divided by measured "
             "throughput, times the rerun factor from failed attempts. Cheapest first; the interval comes from the "
             "run-to-run spread and the failure rate's uncertainty.")
    labelled = {t["target"]: t["runs_labelled"] for t in data.targets if t.get("runs_labelled")}

    base_presets = {r.get("preset") for r in data.cost.rows if r.get("is_baseline")}

    def headline() -> str:
        rows = []
        for r in data.cost.rows:
            name = _target_link(r["target"])
            if labelled.get(r["target"]):
                name = Raw(f"{name} {badge('incl. synthetic runs', 'warn')}")
            lo, hi = r.get("cost_lo"), r.get("cost_hi")
            stale = r.get("price_stale")
            rows.append({
                "target": name, "preset": r.get("preset"),
                "cost": r.get("cost_per_mtok"),
                "interval": Raw(f"{fmt(lo)} – {fmt(hi)}") if lo is not None else None,
                "gap": badge("baseline", "good") if r.get("is_baseline") else (
                    _pct(r["gap"]) if r.get("gap") is not None else
                    Raw('<span class="empty">no shared preset</span>') if r.get("preset") not in base_presets else None),
                "price": Raw(f"{fmt(r.get('price_per_hour'))} {esc(r.get('currency') or '')}/h") if r.get("price_per_hour") is not None else badge("no price", "warn"),
                "price_now": Raw(f"{fmt(r.get('price_now_per_hour'))} {esc(r.get('currency') or '')}/h") if r.get("price_now_per_hour") is not None else None,
                "cost_now": r.get("cost_now_per_mtok"),
                "age": Raw(_age(r.get("price_age_days")) + (" " + str(badge("stale", "warn")) if stale else ""))
                if r.get("price_age_days") is not None else None,
                "rerun": Raw(f"{fmt((r.get('p') or 0) * 100, 1)}% ({r.get('failed_attempts')}/{r.get('attempts')}; R {fmt(r.get('R'))})") if r.get("p") is not None else None,
                "runs": r.get("runs"), "last": r.get("last_run_at"), "_base": r.get("is_baseline"),
            })
        cols = [("target", "Target"), ("preset", "Preset"), ("cost", f"Cost / 1M tok ({data.cost.rows[0].get('currency') or ''})"),
                ("interval", "90% interval"), ("gap", f"Gap vs {data.baseline}"), ("price", "Price (window blend)"),
                ("price_now", "Price today"), ("cost_now", "Cost at today's price"), ("age", "Price age"),
                ("rerun", "Rerun rate"), ("runs", "Runs"), ("last", "Last run")]
        out = table(cols, rows, numeric=("cost", "interval", "gap", "price", "price_now", "cost_now", "age", "rerun", "runs"),
                    row_class=lambda r: "base" if r.get("_base") else "")
        if any(r.get("cost_per_mtok") is not None for r in data.cost.rows):
            out += p.chart("overview-cost", lambda: charts.cost_bars(data.cost.rows, data.baseline),
                           "Cost per 1M tokens; whiskers show the interval.")
        return out

    p.h2("Headline: effective cost per 1M tokens")
    if data.as_of:
        p.parts.append(f'<p class="exports">Runs of the {data.cost_window_days} days up to {fmt(data.as_of)} UTC '
                       "(the latest run); prices as of each run.</p>")
    p.card(_section(data.cost, headline, "priced runs"))
    p.h2("Recommendation by model-size tier")
    p.card(_section(data.tiers, lambda: _tiers(data.tiers.rows), "tier recommendations"))
    p.h2("Throughput shifts found (change-point test)")
    p.card(_section(data.changes, lambda: changes_table(data.changes.rows), "significant change-point findings"))
    p.h2("Targets")
    p.card(_section(Section(rows=data.targets), lambda: table(
        [("target", "Target"), ("provider", "Provider"), ("instance_type", "Instance type"), ("gpu_model", "GPU"),
         ("gpu_count", "GPUs"), ("runs", "Runs"), ("runs_ok", "OK"), ("runs_labelled", "Not measured"), ("last_run_at", "Last run")],
        [dict(t, target=_target_link(t["target"]),
              runs_labelled=badge(str(t["runs_labelled"]), "warn") if t.get("runs_labelled") else 0) for t in data.targets],
        numeric=("gpu_count", "runs", "runs_ok", "runs_labelled")),
        "targets"))
    return p


def _tiers(rows: Rows) -> str:
    """Per model-size tier: the cheapest target that fits (highlighted), then the others, with why."""
    shown = []
    for r in rows:
        tier = Raw(f"{esc(r.get('tier'))} " + (str(badge("recommended", "good")) if r.get("recommended") else ""))
        shown.append(dict(
            r, tier=tier, target=_target_link(r["target"]) if r.get("target") else None,
            fits=(badge("fits", "good") if r.get("fits") else badge("does not fit", "bad") if r.get("fits") is False
                  else badge("not assessed", "warn")),
            assumed=badge("assumed", "warn") if r.get("assumed") else "measured",
            _rec=r.get("recommended")))
    return ('<p>Cost per 1M tokens at each tier\'s representative model size, from the measured throughput and MFU; '
            '"assumed" marks figures that were scaled rather than measured.</p>' + table(
                [("tier", "Tier"), ("target", "Target"), ("preset", "Measured on"), ("mode", "Mode"), ("gpus", "GPUs"),
                 ("cost_per_mtok", "Cost / 1M tok"), ("fits", "Memory"), ("assumed", "Basis"), ("reason", "Why")],
                shown, numeric=("gpus", "cost_per_mtok"), row_class=lambda r: "base" if r.get("_rec") else ""))


def over_time(data: ReportData) -> Page:
    p = Page("over-time.html", "Over time",
             "Effective cost per 1M tokens per week. Dashed orange rules mark price changes; grey rules mark "
             "environment changes (driver, CUDA, cuDNN, torch, image). Hover a rule for what changed.")
    p.h2("Cost per 1M tokens")
    p.card(_section(data.history, lambda: p.chart("time-cost", lambda: charts.history_lines(
        data.history.rows, data.price_changes.rows, data.env_changes.rows)), "cost history"))
    p.h2("Measured throughput")
    p.card(_section(data.throughput, lambda: p.chart("time-throughput", lambda: charts.throughput_lines(
        data.throughput.rows, data.env_changes.rows), "Median fine-tune tokens/s per week."), "fine-tune runs"))
    p.h2("Throughput shifts at environment changes")
    p.card(_section(data.changes, lambda: changes_table(data.changes.rows), "significant change-point findings"))
    p.h2("Environment changes")
    p.card(_section(data.env_changes, lambda: table(
        [("changed_at", "When"), ("target", "Target"), ("change", "What changed")],
        [dict(r, target=_target_link(r["target"])) for r in data.env_changes.rows[:100]]), "environment changes"))
    p.h2("Price changes")
    p.card(_section(data.price_changes, lambda: table(
        [("changed_at", "Effective from"), ("target", "Target"), ("previous_price", "Before / h"), ("price_per_hour", "After / h"),
         ("currency", "Currency"), ("source", "Source")],
        [dict(r, target=_target_link(r["target"])) for r in data.price_changes.rows[-100:]],
        numeric=("previous_price", "price_per_hour")), "price changes"))
    return p


def _terms(res: dict) -> dict | None:
    for key in ("delta", "delta_terms", "terms"):
        t = res.get(key)
        if isinstance(t, dict) and {"price", "throughput", "reliability"} <= set(t):
            return t
    return res if {"price", "throughput", "reliability"} <= set(res) else None


def why(data: ReportData) -> Page:
    p = Page("why.html", "Why it moved",
             "The change of each target's cost ratio against the baseline between the previous and the latest window, "
             "split exactly into a price term, a throughput term and a reliability term: "
             "ln(C_A/C_B) = ln(P_A/P_B) − ln(X_A/X_B) + ln(R_A/R_B), so the change of ln(C_A/C_B) between the windows "
             "is the sum of the three terms' changes. Shown in log points (×100 ≈ %).")

    def body() -> str:
        out = []
        for i, item in enumerate(data.why.rows):
            res, terms = item["result"], _terms(item["result"])
            head = f"<h2>{esc(item['a'])} vs {esc(item['b'])} · {esc(item.get('preset'))}</h2>"
            if not terms:
                out.append(head + empty("the decomposition returned no price/throughput/reliability terms"))
                continue
            steps = [{"label": k, "value": 100 * float(terms[k] or 0.0)} for k in ("price", "throughput", "reliability")]
            steps.append({"label": "net change", "value": sum(s["value"] for s in steps), "total": True})
            chart = p.chart(f"why-{i}", lambda s=steps, t=f"{item['a']} vs {item['b']}": charts.waterfall(s, t))
            lo, hi = data.why.extra["window1"][0], data.why.extra["window2"][1]
            env = [dict(r, target=_target_link(r["target"])) for r in data.env_changes.rows
                   if r["target"] in (item["a"], item["b"]) and lo <= r["changed_at"] < hi]
            env_html = table([("changed_at", "When"), ("target", "Target"), ("change", "What changed")], env) if env \
                else empty("no environment change on either target between the windows")
            gaps = ""
            if res.get("gap_1") is not None and res.get("gap_2") is not None:
                gaps = (f"<p>Gap {esc(item['a'])} vs {esc(item['b'])}: {_pct(res['gap_1'])} in window 1, "
                        f"{_pct(res['gap_2'])} in window 2.</p>")
            found = res.get("changes") or []
            cp = ("<h3>Throughput shifts found in these windows</h3>" + changes_table(found)) if found else ""
            out.append(head + gaps + chart + "<h3>Environment changes in these windows (throughput term)</h3>"
                       + env_html + cp)
        w1, w2 = data.why.extra["window1"], data.why.extra["window2"]
        note = f'<p class="lede">Window 1: {fmt(w1[0])} – {fmt(w1[1])}; window 2: {fmt(w2[0])} – {fmt(w2[1])}.</p>'
        return note + "".join(out)

    p.card(_section(data.why, body, "windows to compare"))
    return p


def all_pages(data: ReportData) -> list[Page]:
    return [overview(data), over_time(data), why(data), hardware(data), reliability(data), quality(data), *target_pages(data)]

