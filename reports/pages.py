"""The report's pages as HTML strings: one function per page, over reports.data.ReportData.

    python -c "from reports.pages import slug; print(slug('<script>alert(1)</script>'))"

Every value is escaped (reports.html). Charts are Vega-Lite dicts placed in one JSON block per page
and drawn by the shared local assets/vega.js; each chart also links its PNG and SVG export.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from dataclasses import dataclass, field
from typing import Any, Callable

from reports import charts
from reports.data import ReportData, Rows, Section
from reports.html import Raw, badge, empty, esc, fmt, link, script_json, table
from reports.theme import CSS

NAV = [("index.html", "Overview"), ("over-time.html", "Over time"), ("why.html", "Why it moved"),
       ("hardware.html", "Hardware efficiency"), ("reliability.html", "Reliability"), ("quality.html", "Data quality")]
ASSET_JS = "assets/vega.js"
_EMBED = """
(function(){var specs=JSON.parse(document.getElementById('chart-specs').textContent);
Object.keys(specs).forEach(function(id){var el=document.getElementById('c-'+id);
vegaEmbed(el,specs[id],{actions:false,renderer:'svg'}).then(function(){el.setAttribute('data-rendered','1');})
.catch(function(e){el.setAttribute('data-error',String(e));console.error('chart '+id+': '+e);});});})();
"""


def slug(target: str) -> str:
    """A file-safe, collision-free page name for any (free-text) target id."""
    base = re.sub(r"[^a-z0-9]+", "-", str(target).lower()).strip("-")[:40] or "target"
    return f"target-{base}-{hashlib.sha1(str(target).encode()).hexdigest()[:8]}.html"


@dataclass
class Page:
    filename: str
    title: str
    lede: str
    parts: list[str] = field(default_factory=list)
    charts: dict[str, dict] = field(default_factory=dict)

    def h2(self, text: str) -> None:
        self.parts.append(f"<h2>{esc(text)}</h2>")

    def card(self, html: str) -> None:
        self.parts.append(f'<section class="card">{html}</section>')

    def chart(self, chart_id: str, build: Callable[[], dict], caption: str = "") -> str:
        self.charts[chart_id] = build()
        cap = f"<div class=\"exports\">{esc(caption)} " if caption else '<div class="exports">'
        return (f'<div class="chart" id="c-{esc(chart_id)}" role="img" aria-label="{esc(caption or chart_id)}"></div>'
                f'{cap}Export: <a href="charts/{esc(chart_id)}.png">PNG</a> · '
                f'<a href="charts/{esc(chart_id)}.svg">SVG</a></div>')


def render(page: Page, data: ReportData) -> str:
    here = page.filename
    nav = "".join(f'<a href="{h}" class="{"here" if h == here else ""}">{esc(t)}</a>' for h, t in NAV)
    specs = script_json(page.charts)
    scripts = (f'<script src="{ASSET_JS}"></script><script type="application/json" id="chart-specs">{specs}</script>'
               f"<script>{_EMBED}</script>") if page.charts else ""
    return (
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(page.title)} · costgap</title><style>{CSS}</style></head><body>"
        f"<header><span class=\"brand\">costgap</span><nav>{nav}</nav></header><main>"
        f"<h1>{esc(page.title)}</h1><p class=\"lede\">{esc(page.lede)}</p>"
        f"{_provenance_banner(data)}{''.join(page.parts)}</main>"
        f"<footer>Generated {esc(data.generated_at.strftime('%Y-%m-%d %H:%M %Z'))} from the costgap warehouse. "
        "Bundles are the source of truth; every figure here is derived from them.</footer>"
        f"{scripts}</body></html>"
    )


_SCOPES = {"run": "run(s)", "price_import": "price import(s)", "target": "target description(s)"}


def _provenance_banner(data: ReportData) -> str:
    if not data.provenance.rows:
        return ""
    items = "".join(f"<li><b>{esc(r['label'].capitalize())}: {esc(r['items'])} {esc(_SCOPES.get(r['scope'], r['scope']))}</b>"
                    f" — {esc(r['note'])}</li>" for r in data.provenance.rows)
    return f'<div class="banner"><b>Not everything here was measured.</b><ul>{items}</ul></div>'


def _section(sec: Section, html: Callable[[], str], what: str) -> str:
    if sec.note:
        return empty(sec.note)
    if not sec.rows:
        return empty(f"no data yet: no {what} in this warehouse")
    return html()


def _target_link(t: Any) -> Raw:
    return link(slug(t), t)


def _pct(v: Any, digits: int = 1) -> Any:
    return None if v is None else Raw(esc(f"{v * 100:+.{digits}f}%"))


def _age(days: float) -> str:
    return "< 1 d" if days < 1 else f"{days:,.0f} d"


def overview(data: ReportData) -> Page:
    p = Page("index.html", "What a training token really costs",
             "Effective cost per 1M training tokens on each target: the price per instance-hour divided by measured "
             "throughput, times the rerun factor from failed attempts. Cheapest first; the interval comes from the "
             "run-to-run spread and the failure rate's uncertainty.")
    for w in data.warnings:
        p.parts.append(f'<div class="banner">{esc(w)}</div>')

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
                "age": Raw(_age(r.get("price_age_days")) + (" " + str(badge("stale", "warn")) if stale else ""))
                if r.get("price_age_days") is not None else None,
                "rerun": Raw(f"{fmt((r.get('p') or 0) * 100, 1)}% (R {fmt(r.get('R'))})") if r.get("p") is not None else None,
                "runs": r.get("runs"), "last": r.get("last_run_at"), "_base": r.get("is_baseline"),
            })
        cols = [("target", "Target"), ("preset", "Preset"), ("cost", f"Cost / 1M tok ({data.cost.rows[0].get('currency') or ''})"),
                ("interval", "90% interval"), ("gap", f"Gap vs {data.baseline}"), ("price", "Price"), ("age", "Price age"),
                ("rerun", "Rerun rate"), ("runs", "Runs"), ("last", "Last run")]
        out = table(cols, rows, numeric=("cost", "interval", "gap", "price", "age", "rerun", "runs"),
                    row_class=lambda r: "base" if r.get("_base") else "")
        if any(r.get("cost_per_mtok") is not None for r in data.cost.rows):
            out += p.chart("overview-cost", lambda: charts.cost_bars(data.cost.rows, data.baseline),
                           "Cost per 1M tokens; whiskers show the interval.")
        return out

    p.h2("Headline: effective cost per 1M tokens")
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
            fits=badge("fits", "good") if r.get("fits") else badge("does not fit", "bad") if r.get("fits") is False else None,
            assumed=badge("assumed", "warn") if r.get("assumed") else "measured",
            _rec=r.get("recommended")))
    return ('<p>Cost per 1M tokens at each tier\'s representative model size, from the measured throughput and MFU; '
            '"assumed" marks figures that were scaled rather than measured.</p>' + table(
                [("tier", "Tier"), ("target", "Target"), ("preset", "Measured on"), ("mode", "Mode"), ("gpus", "GPUs"),
                 ("cost_per_mtok", "Cost / 1M tok"), ("fits", "Memory"), ("assumed", "Basis"), ("reason", "Why")],
                shown, numeric=("gpus", "cost_per_mtok"), row_class=lambda r: "base" if r.get("_rec") else ""))


def changes_table(rows: Rows, limit: int = 30) -> str:
    """Change-point findings (tasks.changepoint.detect): size, confidence and what changed at that point."""
    shown = []
    for r in rows[-limit:][::-1]:
        changed = r.get("changed") or []
        what = "; ".join(f"{c.get('field')} {c.get('before')} → {c.get('after')}" for c in changed if isinstance(c, dict))
        lo, hi = r.get("shift_lo"), r.get("shift_hi")
        at = r.get("at")
        if isinstance(at, str):
            try:
                at = datetime.fromisoformat(at)
            except ValueError:
                pass
        shown.append({
            "at": at, "target": _target_link(r["target"]) if r.get("target") else None, "preset": r.get("preset"),
            "shift": badge(f"{r['shift'] * 100:+.1f}%", "bad" if r["shift"] < 0 else "good") if r.get("shift") is not None else None,
            "ci": Raw(f"{_pct(lo)} … {_pct(hi)}") if lo is not None and hi is not None else None,
            "p_value": r.get("p_value"), "confidence": r.get("confidence"), "changed": what or r.get("summary"),
            "n": Raw(f"{esc(r.get('runs_before'))} / {esc(r.get('runs_after'))}"),
        })
    more = f'<p class="empty">newest {limit} of {len(rows)} shown</p>' if len(rows) > limit else ""
    return table([("at", "At"), ("target", "Target"), ("preset", "Preset"), ("shift", "Tokens/s shift"),
                  ("ci", "90% interval"), ("p_value", "p"), ("confidence", "Confidence"),
                  ("changed", "Environment change at that point"), ("n", "Runs before / after")],
                 shown, numeric=("shift", "ci", "p_value", "confidence", "n")) + more


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


def hardware(data: ReportData) -> Page:
    p = Page("hardware.html", "Hardware efficiency",
             "Achieved ÷ theoretical peak for GEMM, memory (HBM) and PCIe figures, median over the latest window. "
             "A figure far below its peak is where the list price stops meaning what it says.")
    eff = data.efficiency.rows
    peaked = [r for r in eff if r.get("efficiency") is not None and r["family"] in ("GEMM", "HBM", "PCIe")]
    p.h2("Achieved ÷ peak")
    p.card(_section(Section(rows=peaked, note=data.efficiency.note), lambda: p.chart(
        "hw-efficiency", lambda: charts.efficiency_bars(peaked), "Dashed line: the datasheet peak."), "measurements with a known peak"))
    p.h2("All hardware figures")
    p.card(_section(data.efficiency, lambda: table(
        [("family", "Family"), ("target", "Target"), ("benchmark", "Benchmark"), ("metric", "Metric"), ("value", "Value"),
         ("unit", "Unit"), ("peak", "Peak"), ("efficiency", "Achieved ÷ peak"), ("n", "Runs"), ("throttled_runs", "Ran throttled")],
        [dict(r, target=_target_link(r["target"]),
              efficiency=Raw(esc(f"{r['efficiency']:.1%}")) if r.get("efficiency") is not None else None,
              throttled_runs=badge(str(r["throttled_runs"]), "warn") if r.get("throttled_runs") else 0)
         for r in eff if r["family"] != "Feed"], numeric=("value", "peak", "efficiency", "n", "throttled_runs"), scroll=True),
        "measurements"))
    feed = [r for r in eff if r["family"] == "Feed"]
    p.h2("DataLoader and storage feed")
    p.card(_section(Section(rows=feed, note=data.efficiency.note), lambda: table(
        [("target", "Target"), ("benchmark", "Benchmark"), ("metric", "Metric"), ("value", "Value"), ("unit", "Unit"), ("n", "Runs")],
        [dict(r, target=_target_link(r["target"])) for r in feed], numeric=("value", "n")), "DataLoader or storage figures"))
    p.h2("Measurements that ran throttled")
    th = data.throttled

    def throttled() -> str:
        total = th.rows[0]["total"]
        rows = [dict(r, target=_target_link(r["target"]), reasons=badge(", ".join(r.get("throttle_reasons") or []) or "flagged", "warn"))
                for r in th.rows]
        return (f"<p>{esc(total)} measurement(s) ran under a clock-event reason (power cap, thermal, HW slowdown) "
                f"or were flagged; newest {len(rows)} shown.</p>" + table(
                    [("started_at", "Run"), ("target", "Target"), ("benchmark", "Benchmark"), ("metric", "Metric"),
                     ("value", "Value"), ("unit", "Unit"), ("reasons", "Reasons"), ("flags", "Flags"),
                     ("sm_clock_mhz_min", "SM clock min"), ("sm_clock_mhz_median", "SM clock median"),
                     ("power_w_median", "Power median (W)")], rows,
                    numeric=("value", "sm_clock_mhz_min", "sm_clock_mhz_median", "power_w_median"), scroll=True))
    p.card(_section(th, throttled, "throttled measurements"))
    p.h2("Power and clocks (NVML telemetry, weekly)")
    p.card(_section(data.telemetry, lambda: p.chart("hw-telemetry", lambda: charts.telemetry_lines(data.telemetry.rows),
                                                    "Each run's mean over its NVML samples, then the median over the week's runs (reduced in DuckDB)."), "NVML telemetry"))
    return p


def reliability(data: ReportData) -> Page:
    p = Page("reliability.html", "Reliability",
             "Every try of every task is kept. Failed attempts raise the rerun factor R = 1 + f·p/(1−p) "
             "that multiplies the cost per token.")
    wk = data.reliability
    p.h2("Failed-attempt share per week")
    p.card(_section(wk, lambda: p.chart("rel-rate", lambda: charts.failure_rate_lines(wk.rows)), "attempts"))
    p.h2("Attempts by outcome")
    p.card(_section(wk, lambda: p.chart("rel-outcomes", lambda: charts.outcome_bars(wk.rows)), "attempts"))
    p.h2("Failure kinds per target")
    fk = data.failure_kinds
    p.card(_section(fk, lambda: p.chart("rel-kinds", lambda: charts.failure_kind_bars(fk.rows)) + table(
        [("target", "Target"), ("error_kind", "Kind"), ("failures", "Failures"), ("task", "Most often in"), ("example", "Example message")],
        [dict(r, target=_target_link(r["target"])) for r in fk.rows], numeric=("failures",)), "failed attempts"))
    return p


def quality(data: ReportData) -> Page:
    p = Page("quality.html", "Data quality",
             "Every landed batch is validated by Great Expectations. A bundle that fails goes to quarantine with the "
             "failed expectations and never reaches the fact tables.")
    p.h2("Validation results over time")
    p.card(_section(data.validation_daily, lambda: p.chart("dq-daily", lambda: charts.validation_bars(data.validation_daily.rows)),
                    "validation results"))
    p.h2("Expectations")
    p.card(_section(data.validation, lambda: table(
        [("suite", "Suite"), ("expectation", "Expectation"), ("column_name", "Column"), ("checked", "Checked"),
         ("failed", "Failed"), ("failed_example", "Observed when failing"), ("last_validated_at", "Last")],
        [dict(r, failed=badge(str(r["failed"]), "bad") if r["failed"] else 0) for r in data.validation.rows],
        numeric=("checked", "failed"), scroll=True), "validation results"))
    p.h2("Quarantine")
    q = data.quarantine
    p.card(_section(q, lambda: f"<p>{esc(q.rows[0]['total'])} bundle(s) in quarantine; newest {len(q.rows)} shown.</p>" + table(
        [("quarantined_at", "When"), ("kind", "Kind"), ("target", "Target"), ("bundle_id", "Bundle"), ("reason", "Reason"),
         ("field", "Field"), ("source_uri", "Source"), ("failed", "Failed checks")],
        [dict(r, bundle_id=Raw(f'<span class="mono">{esc(str(r["bundle_id"])[:16])}…</span>'),
              failed=(r["failed"] or "")[:300]) for r in q.rows], scroll=True), "quarantined bundles (none so far)"))
    return p


def target_pages(data: ReportData) -> list[Page]:
    by = lambda rows, t: [r for r in rows if r.get("target") == t]  # noqa: E731
    pages = []
    for i, t in enumerate(data.targets):
        name = t["target"]
        p = Page(slug(name), f"Target {name}",
                 " · ".join(str(v) for v in (t.get("provider"), t.get("region"), t.get("instance_type"), t.get("gpu_model")) if v)
                 or "A target first seen in a bundle (not configured in targets.toml).")
        tp, env = by(data.throughput.rows, name), by(data.env_changes.rows, name)
        p.h2("Throughput over time")
        p.card(_section(Section(rows=tp, note=data.throughput.note), lambda: p.chart(
            f"target-{i}-throughput", lambda: charts.throughput_lines(tp, env)), "fine-tune runs"))
        ch = by(data.changes.rows, name)
        p.h2("Throughput shifts found")
        p.card(_section(Section(rows=ch, note=data.changes.note), lambda: changes_table(ch), "significant change-point findings for this target"))
        eh = by(data.env_history.rows, name)
        p.h2("Environment history")
        p.card(_section(Section(rows=eh, note=data.env_history.note), lambda: table(
            [("first_used_at", "First used"), ("last_used_at", "Last used"), ("runs", "Runs"), ("gpu_name", "GPU"),
             ("gpu_count", "GPUs"), ("driver", "Driver"), ("cuda_runtime", "CUDA"), ("cudnn", "cuDNN"), ("torch", "torch"),
             ("python", "Python"), ("kernel", "Kernel"), ("cpu_model", "CPU"), ("pcie_gen_current", "PCIe gen"),
             ("power_limit_w", "Power limit (W)"), ("container_image", "Image")], eh, numeric=("runs", "gpu_count")),
            "environments"))
        runs = by(data.runs.rows, name)
        p.h2("Runs")

        def run_table(runs: Rows = runs) -> str:
            total = runs[0]["total"]
            rows = [dict(r, run_id=Raw(f'<span class="mono">{esc(str(r["run_id"])[:12])}</span>'),
                         steady=badge("unstable", "warn") if r.get("steady") is False else r.get("steady"),
                         environment_id=Raw(f'<span class="mono">{esc(str(r["environment_id"])[:8])}</span>'),
                         provenance=badge(r["provenance"], "warn") if r.get("provenance") else "measured")
                    for r in runs]
            return (f"<p>{esc(total)} run(s); newest {len(rows)} shown.</p>" + table(
                [("started_at", "Started"), ("run_id", "Run"), ("profile", "Profile"), ("status", "Status"),
                 ("presets", "Presets"), ("tokens_per_s", "Tokens/s"), ("mfu", "MFU"), ("steady", "Steady"), ("attempts", "Attempts"),
                 ("failed_attempts", "Failed"), ("environment_id", "Env"), ("origin_kind", "Origin"),
                 ("provenance", "Data")], rows, numeric=("tokens_per_s", "mfu", "attempts", "failed_attempts"), scroll=True))
        p.card(_section(Section(rows=runs, note=data.runs.note), run_table, "runs"))
        pages.append(p)
    return pages


def all_pages(data: ReportData) -> list[Page]:
    return [overview(data), over_time(data), why(data), hardware(data), reliability(data), quality(data), *target_pages(data)]

