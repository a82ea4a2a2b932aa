"""The report's summary pages: Overview and Why it moved (the gap over time is reports/pages/over_time.py).

    python -c "import duckdb; from reports.data import load; from reports.pages.overview import all_pages; print([p.filename for p in all_pages(load(duckdb.connect('costgap.duckdb', read_only=True)))])"

Every figure comes from reports.data (the cost model's rows), shown to 3-4 significant figures with
its unit; every table is sortable, filterable and downloadable as CSV (full precision).
"""

from __future__ import annotations

from reports import charts
from reports.pages import story
from reports.data import ReportData, Rows, Section
from reports.pages.html import Raw, badge, empty, esc, fmt, interval_text, p_text, pct, sig
from reports.pages.page import (PICKER_JS, Page, _section, _target_link, changes_table, pct_cell,
                          unstable_badge)
from reports.pages.answer import answer, glossary, picker, price_throughput
from reports.pages.detail import hardware, quality, reliability
from reports.pages.target import target_pages
from reports.pages.over_time import over_time
from reports.pages.well_used import side_by_side
from tasks.cost.table import COLUMNS

COST_CSV = COLUMNS + ["gap", "gap_lo", "gap_hi", "is_baseline", "p_lo", "p_hi"]


def _cost_cell(r: dict) -> Raw | None:
    if r.get("cost_per_mtok") is None:  # no price, every attempt failed, or a fine-tune that failed / did not apply
        why = r.get("no_cost_reason") or "no cost"
        return badge(why, "warn" if r.get("price_per_hour") is None and r.get("tokens_per_s") is not None else "bad")
    return Raw(f"{sig(r['cost_per_mtok'])}<span class=\"sub\">{esc(interval_text(r['cost_lo'], r['cost_hi']))}</span>"
               f"{unstable_badge(r)}", sort=r["cost_per_mtok"])


def _gap_cell(r: dict, base_presets: set) -> Raw | None:
    if r.get("is_baseline"):
        return badge("baseline", "good")
    if r.get("gap") is None:
        return Raw('<span class="empty">no shared preset</span>', sort=None) if r["preset"] not in base_presets else None
    return Raw(f"{esc(pct(r['gap']))}<span class=\"sub\">{esc(interval_text(r['gap_lo'], r['gap_hi'], as_pct=True))}"
               "</span>", sort=r["gap"])


def _price_cell(r: dict) -> Raw | None:
    if r.get("price_now_per_hour") is None:
        return None
    stale = f" {badge('stale', 'warn')}" if r.get("price_stale") else ""
    return Raw(f"{sig(r['price_now_per_hour'])}{stale}<span class=\"sub\">confirmed {r['price_age_days']} d ago</span>",
               sort=r["price_now_per_hour"])


def _measuring(data: ReportData) -> str:
    """The cost of measuring per target and month beside keeping the instance up, and every budget skip."""
    sec = data.measuring
    out = [f'<p class="skip">{esc(s["message"])} ({fmt(s["skipped_at"])} UTC)</p>' for s in sec.extra.get("skips", [])]
    if sec.note:
        out.append(empty(sec.note))
    elif not sec.rows:
        out.append(empty("no dispatched probe run recorded yet: its instance-seconds are priced here"))
    out += [f"<p>{esc(line)}</p>" for line in sec.extra.get("lines", [])]
    return "".join(out)


def overview(data: ReportData) -> Page:
    p = Page("index.html", "What a training token really costs",
             "Effective cost per 1M training tokens on each instance type: the price per instance-hour divided by "
             "measured throughput, times the rerun factor R = 1 + f·p/(1−p) from failed fine-tune attempts. "
             "Compared only on presets both targets ran: cost per token is workload-specific.")
    cur = data.currency
    if data.window:
        p.parts.append(f'<p class="exports">Window: the {data.cost_window_days:g} days to {fmt(data.window[1])} UTC '
                       f"(the newest run); each run at its price as of the run. Today's prices read "
                       f"{fmt(data.today)} UTC.</p>")
    p.h2("The answer, per preset")
    presets = sorted({r["preset"] for r in data.cost.rows})
    unmeasured = data.cost.extra.get("unmeasured", [])
    p.card(_section(data.leaders, lambda: answer(p, data) + glossary(presets), "priced runs"))
    p.h2("Is each server well used? Side by side", anchor="well-used")
    p.card(side_by_side(p, data))
    p.h2("Your workload: cost and time", anchor="your-workload")
    if data.reader.get("inputs"):
        p.scripts.append(PICKER_JS)
        p.card(picker(p, data))
    else:
        p.card(empty("no data yet: no fine-tune runs in the window to cost"))
    p.h2("Price against throughput")
    p.card(_section(data.cost, lambda: price_throughput(p, data), "priced runs"))
    p.h2("Recent changes")
    p.card(_recent(p, data.recent_changes))
    p.h2("What measuring cost", anchor="measuring")
    p.card(_measuring(data))
    base_presets = {r["preset"] for r in data.cost.rows if r.get("is_baseline")}

    def costs() -> str:
        cols = [("target", "Target"), ("cost", f"Cost / 1M tokens ({cur}, window)"),
                ("gap", f"vs {data.baseline}"), ("price_now", f"Price today ({cur}/h)"),
                ("cost_now", f"Cost at today's price ({cur})"), ("p", "Failed attempts p"), ("x", "Tokens/s")]
        out = [f'<p class="exports">One table per preset: cost per token is workload-specific. All presets: '
               f'<a href="data/overview-costs.csv" download>CSV</a></p>']
        p.data["overview-costs"] = [{k: r.get(k) for k in COST_CSV} for r in data.cost.rows + unmeasured]
        for preset in sorted(set(presets) | {r["preset"] for r in unmeasured}):
            mine = [r for r in data.cost.rows + unmeasured if r["preset"] == preset]
            rows = [{"target": _target_link(r["target"]), "cost": _cost_cell(r),
                     "gap": _gap_cell(r, base_presets), "price_now": _price_cell(r),
                     "cost_now": r.get("cost_now_per_mtok"),
                     "p": (Raw(f"{esc(p_text(r['failed_attempts'], r['attempts']))}<span class=\"sub\">"
                               f"R {fmt(r.get('R'))}</span>", sort=r["p"]) if r.get("attempts") is not None else None),
                     "x": Raw(f"{fmt(r.get('tokens_per_s'))}<span class=\"sub\">{r['runs']} runs</span>",
                              sort=r.get("tokens_per_s")),
                     "_base": r.get("is_baseline")} for r in mine]
            out.append(f"<h3>{esc(preset)}</h3>" + p.table(
                f"overview-costs-{charts.key(preset)}", cols, rows,
                numeric=("cost", "gap", "price_now", "cost_now", "p", "x"),
                row_class=lambda r: "base" if r.get("_base") else "",
                csv=[{k: r.get(k) for k in COST_CSV} for r in mine]))
        priced = [r for r in data.cost.rows if r.get("cost_per_mtok") is not None]
        if priced:
            out.append(p.chart("overview-cost", lambda: charts.cost_bars(priced, cur, data.colors),
                               "Cost per 1M tokens per preset; whiskers: 90% interval; outlined: the baseline.",
                               rows=[{k: r.get(k) for k in ("target", "preset", "cost_per_mtok", "cost_lo", "cost_hi")}
                                     for r in priced]))
        return "".join(out)

    p.h2(f"Cost per 1M tokens by preset, gap to {data.baseline or 'the baseline'}")
    p.card(_section(Section(rows=data.cost.rows + unmeasured, note=data.cost.note), costs, "priced runs"))
    p.h2("Recommendation by model-size tier")
    p.card(_section(data.tiers, lambda: _tiers(p, data, cur), "tier recommendations"))
    p.h2("Throughput shifts found (change-point test)")
    p.card(_section(data.changes, lambda: changes_table(p, "overview-shifts", data.changes.rows),
                    "significant change-point findings"))
    p.h2("Targets")
    p.card(_section(Section(rows=data.targets), lambda: p.table("targets", [
        ("target", "Target"), ("provider", "Provider"), ("instance_type", "Instance type"), ("gpu_model", "GPU"),
        ("gpu_count", "GPUs"), ("runs", "Runs"), ("runs_labelled", "Not measured"), ("last_run_at", "Last run")],
        [dict(t, target=_target_link(t["target"]),
              runs_labelled=badge(str(t["runs_labelled"]), "warn") if t.get("runs_labelled") else 0) for t in data.targets],
        numeric=("gpu_count", "runs", "runs_labelled")), "targets"))
    return p


RECENT_KIND = {"cheapest": "cheapest changed", "gap": "gap shifted", "throughput": "throughput shifted",
               "failure_rate": "failure rate shifted", "failed": "target failed",
               "price": "price changed", "quarantined": "data refused"}


def _recent(p: Page, sec: Section) -> str:
    """The alerts' decisions, newest first (reports.data.recent_changes): what a notification said or would say."""
    notes = "".join(f'<p class="empty">{esc(e)}</p>' for e in sec.extra.get("errors", []))
    if not sec.rows:
        return notes + '<p class="empty">no changes in the recent windows: the cheapest target held, no gap left ' \
                       "its interval, no target failed, no price changed and no data was refused</p>"
    rows = [{"at": r["at"], "kind": badge(RECENT_KIND[r["kind"]], "bad" if r["kind"] in ("failed", "quarantined")
                                          else "warn"),
             "target": _target_link(r["target"]) if r["target"] else None, "preset": r["preset"],
             "summary": r["summary"]} for r in sec.rows]
    return notes + p.table("overview-recent", [("at", "When"), ("kind", "What"), ("target", "Target"),
                                               ("preset", "Preset"), ("summary", "Change")], rows,
                           csv=[{k: r[k] for k in ("at", "event", "kind", "target", "preset", "summary")}
                                for r in sec.rows])


def _basis(r: dict, params: dict) -> Raw | None:
    """'measured' only where the tier's size is the size measured; 'scaled from <preset>' where the figure came
    from another model size (tasks/estimate/at_size.py scales tokens/s by FLOPs per token); 'estimate' for a type
    not measured; past one card 'predicted from <fabric>, busbw <x> GB/s' (or 'measured scaling')."""
    if r.get("cost_per_mtok") is None:
        return None
    measured = params.get((r["target"], r["preset"])) if r.get("target") else None
    scaled = measured is None or abs(measured - r["tier_params"]) > 0.005 * r["tier_params"]
    parts = ([badge("estimate", "warn")] if r.get("status") == "estimate" else
             [badge(f"scaled from {r['preset']}", "warn") if scaled else badge("measured", "good")])
    if r.get("assumed"):
        parts.append(badge("MFU assumed", "warn"))
    if (r.get("gpus") or 1) > 1 and r.get("scaling_label"):
        parts.append(badge(f"{r['scaling_label']}, efficiency {r['scaling']:.2f}",
                           "good" if r["scaling_label"].startswith("measured") else "warn"))
    return Raw(" ".join(str(x) for x in parts), sort=r.get("status") or "")


def _tiers(p: Page, data: ReportData, cur: str) -> str:
    """Per model-size tier and training mode: the cheapest type that fits (highlighted), then the others, with why."""
    params = {(r["target"], r["preset"]): r.get("params_total") for r in data.cost.rows}
    shown = []
    for r in data.tiers.rows:
        tier = Raw(f"{esc(r.get('tier'))} " + (str(badge("recommended", "good")) if r.get("recommended") else ""),
                   sort=r.get("tier"))
        stale = f" {badge('stale price', 'warn')}" if r.get("price_stale") else ""
        shown.append(dict(
            r, tier=tier, target=_target_link(r["target"]) if r.get("target") else r.get("instance_type"),
            cost_per_mtok=(Raw(f"{sig(r['cost_per_mtok'])}<span class=\"sub\">{esc(interval_text(r['cost_lo'], r['cost_hi']))}"
                               f"</span>{stale}{unstable_badge(r)}", sort=r["cost_per_mtok"])
                           if r.get("cost_per_mtok") is not None else None),
            fits=(badge(f"fits ({r['strategy']})", "good") if r.get("fits") else badge("does not fit", "bad")
                  if r.get("fits") is False else badge("not assessed", "warn")),
            basis=_basis(r, params), _rec=r.get("recommended")))
    return ('<p>Cost per 1M tokens at each tier\'s representative model size, compared within one training mode '
            '(full against full, LoRA against LoRA). "Measured" only where that size was run; "scaled from" a preset '
            'where tokens/s was scaled from another model size by FLOPs per token at the measured MFU; "estimate" for '
            'a type not measured. Past one card the scaling efficiency is measured where the distributed probe ran, '
            'else PREDICTED from the interconnect (fabric inside the node, busbw).</p>' + p.table(
                "tiers", [("tier", "Tier"), ("mode", "Mode"), ("target", "Target or type"), ("preset", "From"),
                          ("gpus", "GPUs"), ("cost_per_mtok", f"Cost / 1M tokens ({cur})"), ("fits", "Memory"),
                          ("basis", "Basis"), ("reason", "Why")],
                shown, numeric=("gpus", "cost_per_mtok"), row_class=lambda r: "base" if r.get("_rec") else "",
                csv=data.tiers.rows))


def why(data: ReportData) -> Page:
    p = Page("why.html", "Why it moved",
             "How each target's gap against the baseline changed between the previous window and the latest one, "
             "split exactly into a price, a throughput and a reliability term: ln(C_A/C_B) = ln(P_A/P_B) − "
             "ln(X_A/X_B) + ln(R_A/R_B), so the change of ln(C_A/C_B) is the sum of the three terms' changes. "
             "In log points (×100 ≈ % of the cost ratio).")

    def body() -> str:
        w1, w2 = data.why.extra["window1"], data.why.extra["window2"]
        out = [f'<p class="exports">Window 1: {fmt(w1[0])} – {fmt(w1[1])}; window 2: {fmt(w2[0])} – {fmt(w2[1])} UTC.</p>']
        for i, item in enumerate(data.why.rows):
            res, a, b = item["result"], item["a"], item["b"]
            sentence = story.why_sentence(item, (w1, w2), data.price_changes.rows, data.env_changes.rows,
                                          data.failure_kinds.rows)
            steps = [{"label": k, "value": 100 * res["delta"][k]} for k in ("price", "throughput", "reliability")]
            steps.append({"label": "net change", "value": sum(s["value"] for s in steps), "total": True})
            chart = p.chart(f"why-{i}", lambda s=steps, t=f"{a} vs {b} · {item['preset']}": charts.term_waterfall(s, t),
                            "What moved ln(C_A/C_B) between the windows.", rows=steps)
            figures = [{"side": f"{t} · window {w}", "P": item["windows"][f"{side}{w}"]["price_per_hour"],
                        "X": item["windows"][f"{side}{w}"]["tokens_per_s"],
                        "k": item["windows"][f"{side}{w}"]["failed_attempts"], "n": item["windows"][f"{side}{w}"]["attempts"],
                        "R": item["windows"][f"{side}{w}"]["R"], "C": item["windows"][f"{side}{w}"]["cost_per_mtok"]}
                       for side, t in (("a", a), ("b", b)) for w in (1, 2)]
            table = p.table(f"why-{i}-figures", [("side", "Target · window"), ("P", f"Price ({data.currency}/h)"),
                                                 ("X", "Tokens/s"), ("k", "Failed"), ("n", "Attempts"), ("R", "R"),
                                                 ("C", f"Cost / 1M tokens ({data.currency})")],
                            figures, numeric=("P", "X", "k", "n", "R", "C"))
            out.append(f"<h2>{esc(a)} vs {esc(b)} · {esc(item['preset'])}</h2>"
                       f'<p class="headline">{esc(sentence)}</p>'
                       f"<p>Gap {pct_cell(res['gap_1'])} in window 1, {pct_cell(res['gap_2'])} in window 2.</p>"
                       f'<div class="row"><div>{chart}</div><div>{table}</div></div>')
        return "".join(out)

    p.card(_section(data.why, body, "windows to compare"))
    return p


def all_pages(data: ReportData) -> list[Page]:
    return [overview(data), over_time(data), why(data), hardware(data), reliability(data), quality(data),
            *target_pages(data)]
