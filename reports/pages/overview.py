"""The report's summary pages: Overview and Why it moved (the gap over time is reports/pages/over_time.py).

    python -c "import duckdb; from reports.data import load; from reports.pages.overview import all_pages; print([p.filename for p in all_pages(load(duckdb.connect('costgap.duckdb', read_only=True)))])"

Every figure comes from reports.data (the cost model's rows), shown to 3-4 significant figures with
its unit; every table is sortable, filterable and downloadable as CSV (full precision).
"""

from __future__ import annotations

from reports import charts
from reports.pages import story
from reports.data import ReportData, Rows, Section
from reports.pages.html import Markup, Sorted, badge, empty, fmt, interval_text, p_text, pct, sig
from reports.pages.page import (PICKER_JS, Page, _section, _target_link, changes_table, pct_cell, row,
                                unstable_badge)
from reports.pages.answer import answer, glossary, picker, price_throughput
from reports.pages.detail import hardware, quality, reliability
from reports.pages.target import target_pages
from reports.pages.over_time import over_time
from reports.pages.well_used import side_by_side
from tasks.cost.table import COLUMNS

COST_CSV = COLUMNS + ["gap", "gap_lo", "gap_hi", "is_baseline", "p_lo", "p_hi"]


def _cost_cell(r: dict) -> Sorted | None:
    if r.get("cost_per_mtok") is None:  # no price, every attempt failed, or a fine-tune that failed / did not apply
        why = r.get("no_cost_reason") or "no cost"
        return badge(why, "warn" if r.get("price_per_hour") is None and r.get("tokens_per_s") is not None else "bad")
    return Sorted(Markup('{}<span class="sub">{}</span>{}').format(
        sig(r["cost_per_mtok"]), interval_text(r["cost_lo"], r["cost_hi"]), unstable_badge(r)), sort=r["cost_per_mtok"])


def _gap_cell(r: dict, base_presets: set) -> Sorted | None:
    if r.get("is_baseline"):
        return badge("baseline", "good")
    if r.get("gap") is None:
        return (Sorted(Markup('<span class="empty">no shared preset</span>'), sort=None)
                if r["preset"] not in base_presets else None)
    return Sorted(Markup('{}<span class="sub">{}</span>').format(
        pct(r["gap"]), interval_text(r["gap_lo"], r["gap_hi"], as_pct=True)), sort=r["gap"])


def _price_cell(r: dict) -> Sorted | None:
    if r.get("price_now_per_hour") is None:
        return None
    stale = Markup(" {}").format(badge("stale", "warn")) if r.get("price_stale") else ""
    return Sorted(Markup('{}{}<span class="sub">confirmed {} d ago</span>').format(
        sig(r["price_now_per_hour"]), stale, r["price_age_days"]), sort=r["price_now_per_hour"])


def _measuring(data: ReportData) -> Markup:
    """The cost of measuring per target and month beside keeping the instance up, and every budget skip."""
    sec = data.measuring
    out = [Markup('<p class="skip">{} ({} UTC)</p>').format(s["message"], fmt(s["skipped_at"]))
           for s in sec.extra.get("skips", [])]
    if sec.note:
        out.append(empty(sec.note))
    elif not sec.rows:
        out.append(empty("no dispatched probe run recorded yet: its instance-seconds are priced here"))
    out += [Markup("<p>{}</p>").format(line) for line in sec.extra.get("lines", [])]
    return Markup("").join(out)


def overview(data: ReportData) -> Page:
    p = Page("index.html", "What a training token really costs",
             "Effective cost per 1M training tokens on each instance type: the price per instance-hour divided by "
             "measured throughput, times the rerun factor R = 1 + f·p/(1−p) from failed fine-tune attempts. "
             "Compared only on presets both targets ran: cost per token is workload-specific.")
    cur = data.currency
    if data.window:
        p.parts.append(Markup('<p class="exports">Window: the {:g} days to {} UTC (the newest run); each run at its '
                              "price as of the run. Today's prices read {} UTC.</p>").format(
            data.cost_window_days, fmt(data.window[1]), fmt(data.today)))
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

    def costs() -> Markup:
        cols = [("target", "Target"), ("cost", f"Cost / 1M tokens ({cur}, window)"),
                ("gap", f"vs {data.baseline}"), ("price_now", f"Price today ({cur}/h)"),
                ("cost_now", f"Cost at today's price ({cur})"), ("p", "Failed attempts p"), ("x", "Tokens/s")]
        out = [Markup('<p class="exports">One table per preset: cost per token is workload-specific. All presets: '
                      '<a href="data/overview-costs.csv" download>CSV</a></p>')]
        p.data["overview-costs"] = [{k: r.get(k) for k in COST_CSV} for r in data.cost.rows + unmeasured]
        for preset in sorted(set(presets) | {r["preset"] for r in unmeasured}):
            mine = [r for r in data.cost.rows + unmeasured if r["preset"] == preset]
            rows = [{"target": _target_link(r["target"]), "cost": _cost_cell(r),
                     "gap": _gap_cell(r, base_presets), "price_now": _price_cell(r),
                     "cost_now": r.get("cost_now_per_mtok"),
                     "p": (Sorted(Markup('{}<span class="sub">R {}</span>').format(
                         p_text(r["failed_attempts"], r["attempts"]), fmt(r.get("R"))), sort=r["p"])
                           if r.get("attempts") is not None else None),
                     "x": Sorted(Markup('{}<span class="sub">{} runs</span>').format(fmt(r.get("tokens_per_s")), r["runs"]),
                                 sort=r.get("tokens_per_s")),
                     "_base": r.get("is_baseline")} for r in mine]
            out.append(Markup("<h3>{}</h3>").format(preset) + p.table(
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
        return Markup("").join(out)

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


def _recent(p: Page, sec: Section) -> Markup:
    """The alerts' decisions, newest first (reports.data.recent_changes): what a notification said or would say."""
    notes = Markup("").join(empty(e) for e in sec.extra.get("errors", []))
    if not sec.rows:
        return notes + empty("no changes in the recent windows: the cheapest target held, no gap left its interval, "
                             "no target failed, no price changed and no data was refused")
    rows = [{"at": r["at"], "kind": badge(RECENT_KIND[r["kind"]], "bad" if r["kind"] in ("failed", "quarantined")
                                          else "warn"),
             "target": _target_link(r["target"]) if r["target"] else None, "preset": r["preset"],
             "summary": r["summary"]} for r in sec.rows]
    return notes + p.table("overview-recent", [("at", "When"), ("kind", "What"), ("target", "Target"),
                                               ("preset", "Preset"), ("summary", "Change")], rows,
                           csv=[{k: r[k] for k in ("at", "event", "kind", "target", "preset", "summary")}
                                for r in sec.rows])


def _basis(r: dict, params: dict) -> Sorted | None:
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
    return Sorted(Markup(" ").join(parts), sort=r.get("status") or "")


def _tiers(p: Page, data: ReportData, cur: str) -> Markup:
    """Per model-size tier and training mode: the cheapest type that fits (highlighted), then the others, with why."""
    params = {(r["target"], r["preset"]): r.get("params_total") for r in data.cost.rows}
    shown = []
    for r in data.tiers.rows:
        tier = Sorted(Markup("{} {}").format(r.get("tier"), badge("recommended", "good") if r.get("recommended") else ""),
                      sort=r.get("tier"))
        stale = Markup(" {}").format(badge("stale price", "warn")) if r.get("price_stale") else ""
        shown.append(dict(
            r, tier=tier, target=_target_link(r["target"]) if r.get("target") else r.get("instance_type"),
            cost_per_mtok=(Sorted(Markup('{}<span class="sub">{}</span>{}{}').format(
                sig(r["cost_per_mtok"]), interval_text(r["cost_lo"], r["cost_hi"]), stale, unstable_badge(r)),
                sort=r["cost_per_mtok"]) if r.get("cost_per_mtok") is not None else None),
            fits=(badge(f"fits ({r['strategy']})", "good") if r.get("fits") else badge("does not fit", "bad")
                  if r.get("fits") is False else badge("not assessed", "warn")),
            basis=_basis(r, params), _rec=r.get("recommended")))
    return (Markup('<p>Cost per 1M tokens at each tier\'s representative model size, compared within one training '
                   'mode (full against full, LoRA against LoRA). "Measured" only where that size was run; "scaled from" '
                   'a preset where tokens/s was scaled from another model size by FLOPs per token at the measured MFU; '
                   '"estimate" for a type not measured. Past one card the scaling efficiency is measured where the '
                   'distributed probe ran, else PREDICTED from the interconnect (fabric inside the node, busbw).</p>')
            + p.table(
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

    def body() -> Markup:
        w1, w2 = data.why.extra["window1"], data.why.extra["window2"]
        out = [Markup('<p class="exports">Window 1: {} – {}; window 2: {} – {} UTC.</p>').format(
            fmt(w1[0]), fmt(w1[1]), fmt(w2[0]), fmt(w2[1]))]
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
            out.append(Markup('<h2>{} vs {} · {}</h2><p class="headline">{}</p><p>Gap {} in window 1, {} in window 2.</p>')
                       .format(a, b, item["preset"], sentence, pct_cell(res["gap_1"]), pct_cell(res["gap_2"]))
                       + row([chart, table]))
        return Markup("").join(out)

    p.card(_section(data.why, body, "windows to compare"))
    return p


def all_pages(data: ReportData) -> list[Page]:
    return [overview(data), over_time(data), why(data), hardware(data), reliability(data), quality(data),
            *target_pages(data)]
