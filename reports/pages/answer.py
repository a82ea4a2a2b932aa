"""The overview's answer: one row per preset (cheapest, runner-up, gap, verdict), the presets' glossary,
the reader's own question (the picker) and price against throughput per preset.

    costgap demo && open .costgap/demo-site/index.html

Every figure is the cost model's (reports.data: the rows `costgap targets --json` prints); the picker
applies the model's formulas in the page (reports/reader.py, assets/picker.js). The verdict ("clear",
"within noise", "only target measured") comes from tasks/cost/verdict.py, as the command line's does.
"""

from __future__ import annotations

from reports import charts
from reports.data import ReportData, Rows
from reports.glossary import PRESETS, TOKEN
from reports.pages.html import MISSING, Raw, badge, esc, interval_text, pct, script_json, sig
from reports.pages.page import Page, _target_link, unstable_badge
from reports.reader import input_rows
from tasks.cost.verdict import CLEAR, ONLY_ONE, WITHIN_NOISE, verdict  # the one place the words are decided

ANSWER_CSV = ("preset", "cheapest", "cost_per_mtok", "cost_lo", "cost_hi", "cost_now_per_mtok", "cheapest_runs",
              "cheapest_unstable", "cheapest_window_spread", "runner_up", "runner_up_cost_per_mtok", "gap", "gap_lo",
              "gap_hi", "runner_up_runs", "runner_up_unstable", "runner_up_window_spread", "verdict", "targets",
              "currency")
BILLING_WORDS = {"on_demand": "on-demand", "monthly": "monthly (per hour: /730)", "yearly": "yearly (per hour: /8760)",
                 "spot": "spot"}
F_WORDS = {0.0: "0: no work lost (checkpoint every step)", 0.5: "0.5: half an attempt (no checkpoints)",
           1.0: "1: the whole attempt"}


def answer_rows(data: ReportData) -> Rows:
    """Per preset of the window: the leaders' figures plus the runs behind each (and whether any did not
    settle: the unstable flag and window spread, issue 37.5) and the verdict."""
    by = {(r["target"], r["preset"]): r for r in data.cost.rows}
    out = []
    for r in sorted((r for r in data.leaders.rows if r["period"] == 0), key=lambda r: r["preset"]):
        row = dict(r, verdict=verdict(r))
        for side in ("cheapest", "runner_up"):
            c = by.get((r[side], r["preset"]), {}) if r.get(side) else {}
            row.update({f"{side}_runs": c.get("runs"), f"{side}_unstable": c.get("unstable"),
                        f"{side}_unstable_runs": c.get("unstable_runs"), f"{side}_window_spread": c.get("window_spread")})
        out.append(row)
    return out


def _flag(r: dict, side: str) -> str:
    return unstable_badge({"unstable": r.get(f"{side}_unstable"), "unstable_runs": r.get(f"{side}_unstable_runs"),
                           "runs": r.get(f"{side}_runs"), "window_spread": r.get(f"{side}_window_spread")})


def answer(p: Page, data: ReportData) -> str:
    rows, cur = answer_rows(data), data.currency
    shown = []
    for r in rows:
        alone = r["runner_up"] is None
        now = r.get("cost_now_per_mtok")
        today = (f'<span class="sub">at today\'s price {sig(now)}</span>'
                 if now is not None and sig(now) != sig(r["cost_per_mtok"]) else "")
        v = r["verdict"]
        shown.append({
            "preset": Raw(f"<b>{esc(r['preset'])}</b>", sort=r["preset"]),
            "cheapest": Raw(f"{_target_link(r['cheapest'])}<span class=\"sub\">"
                            f"{ONLY_ONE if alone else 'cheapest'}</span>", sort=r["cheapest"]),
            "cost": Raw(f"{sig(r['cost_per_mtok'])}<span class=\"sub\">{esc(interval_text(r['cost_lo'], r['cost_hi']))}"
                        f"</span>{today}{_flag(r, 'cheapest')}", sort=r["cost_per_mtok"]),
            "cheapest_runs": r["cheapest_runs"],
            "runner_up": (Raw('<span class="empty">none</span>', sort=None) if alone else
                          Raw(f"{_target_link(r['runner_up'])}{_flag(r, 'runner_up')}", sort=r["runner_up"])),
            "gap": None if alone else Raw(f"{esc(pct(r['gap']))}<span class=\"sub\">"
                                          f"{esc(interval_text(r['gap_lo'], r['gap_hi'], as_pct=True))}</span>",
                                          sort=r["gap"]),
            "runner_up_runs": r["runner_up_runs"],
            "verdict": badge(v, {CLEAR: "good", WITHIN_NOISE: "warn"}.get(v, "")),
        })
    intro = (f'<p>Per preset, the cheapest target over the window and how much more the next one costs, with its '
             f'90% interval. <b>Clear</b>: the interval excludes 0; <b>within noise</b>: it does not, so the two cost '
             f'the same as far as these runs can tell. Figures in {esc(cur)} per 1M tokens, {esc(_billing(data))} '
             f'prices, f = {_f_default(data)}; pick others in <a href="#your-workload">your workload</a>.</p>')
    return intro + p.table("overview-answer", [
        ("preset", "Preset"), ("cheapest", "Cheapest target"), ("cost", f"Cost / 1M tokens ({cur})"),
        ("cheapest_runs", "Runs"), ("runner_up", "Runner-up"), ("gap", "Runner-up costs more by"),
        ("runner_up_runs", "Runs"), ("verdict", "Verdict")], shown,
        numeric=("cost", "cheapest_runs", "gap", "runner_up_runs"),
        csv=[{k: dict(r, currency=cur).get(k) for k in ANSWER_CSV} for r in rows])


def _billing(data: ReportData) -> str:
    return BILLING_WORDS.get(data.reader.get("defaults", {}).get("billing", "on_demand"), "on-demand")


def _f_default(data: ReportData) -> str:
    return f"{data.reader.get('defaults', {}).get('f', 0.5):g}"


def glossary(presets: list[str]) -> str:
    """What each preset shown is (model, sequence, full/LoRA/QLoRA) and what a token is."""
    rows = "".join(
        f"<tr><td><b>{esc(s)}</b></td><td>{esc(n.model)}</td><td class=\"num\">{n.seq_len:,}</td>"
        f"<td>{esc(n.training)}</td></tr>" if (n := PRESETS.get(s)) else
        f"<tr><td><b>{esc(s)}</b></td><td colspan=\"3\" class=\"empty\">not a built-in preset</td></tr>"
        for s in presets)
    return ('<details class="glossary" open><summary>What the presets are</summary><div class="scroll"><table>'
            '<thead><tr><th>Preset</th><th>Model</th><th class="num">Sequence (tokens)</th><th>Training</th></tr>'
            f"</thead><tbody>{rows}</tbody></table></div><p class=\"exports\">{esc(TOKEN)}</p></details>")


def picker(p: Page, data: ReportData) -> str:
    """Controls rendered here; assets/picker.js fills the table from the embedded inputs."""
    r = data.reader
    d = r["defaults"]
    presets = r["presets"]
    first = next((a["preset"] for a in answer_rows(data) if a["runner_up"] is not None), presets[0] if presets else "")

    def select(name: str, label: str, values: list, words, default) -> str:
        opts = "".join(f'<option value="{esc(v)}"{" selected" if v == default else ""}>{esc(words(v))}</option>'
                       for v in values)
        return f'<label>{esc(label)} <select id="pk-{name}">{opts}</select></label>'

    controls = "".join([
        select("preset", "Preset", presets, str, first),
        select("currency", "Currency", r["currencies"], str, d["currency"]),
        select("billing", "Billing", r["billings"], lambda b: BILLING_WORDS.get(b, b), d["billing"]),
        select("f", "Work lost per failure, f", [f"{f:g}" for f in r["f_choices"]],
               lambda f: F_WORDS.get(float(f), f), f"{d['f']:g}"),
        f'<label>Tokens to train <input id="pk-tokens" type="text" inputmode="decimal" value="{int(d["tokens"]):,}" '
        'size="14" aria-describedby="pk-note"></label>'])
    heads = ["Target", 'Cost / 1M tokens (<span data-cur>{c}</span>)', "vs cheapest",
             'Total (<span data-cur>{c}</span>)', "Hours", 'Price (<span data-cur>{c}</span>/h)', "Tokens/s",
             "Failed attempts p", "R", "Runs"]
    head = "".join(f'<th class="{"" if i == 0 else "num"}" scope="col">{h.format(c=esc(d["currency"]))}</th>'
                   for i, h in enumerate(heads))
    p.data["reader-inputs"] = input_rows(r)
    skipped = "".join(f'<p class="empty">Not offered: {esc(s)}</p>' for s in r.get("skipped", []))
    return (
        '<div id="picker" class="picker">'
        f'<p>Your own question: cost per 1M tokens, the cost of your token count and the hours it takes, per '
        f'target, computed in this page from the inputs below with the cost model\'s formulas '
        f'(p = k/n, R = 1 + f·p/(1−p), C = P/(3600·X)·10⁶·R; total = C·(N/10⁶); hours = N/(3600·X)·R). The same '
        f'figures as <code>costgap targets --currency C --billing B --f F --json</code>; total and hours as '
        f'<code>costgap tiers … --tokens N</code>.</p>'
        f'<form class="choices" onsubmit="return false">{controls}</form>'
        '<p class="exports"><span id="pk-note" aria-live="polite"></span> '
        '<a id="pk-link" href="#">Link to this view</a> · Inputs: '
        '<a href="data/reader-inputs.csv" download>CSV</a></p>'
        f'<div class="scroll"><table id="pk-table"><thead><tr>{head}</tr></thead><tbody id="pk-body"></tbody></table>'
        f'</div>{skipped}</div>'
        f'<script type="application/json" id="picker-inputs">{script_json(r)}</script>')


def price_throughput(p: Page, data: ReportData) -> str:
    """Per preset: each target at (tokens/s after reruns, price per hour), with lines of equal cost."""
    priced = [r for r in data.cost.rows if r.get("cost_per_mtok") is not None]
    presets = sorted({r["preset"] for r in priced})
    keep = ("target", "preset", "price_per_hour", "tokens_per_s", "R", "cost_per_mtok", "runs")
    parts = [p.chart(f"overview-pt-{charts.key(s)}", lambda s=s: charts.price_throughput(
        [r for r in priced if r["preset"] == s], s, data.currency, data.colors),
        f"{s}.",
        rows=[{k: r.get(k) for k in keep} for r in priced if r["preset"] == s]) for s in presets]
    return ('<p>Down and to the right is cheaper: further right trains faster, lower rents for less. Each grey line '
            'joins the points of one cost per 1M tokens; tokens/s is the measured median divided by the rerun '
            f'factor R, so a point\'s line is its cost. {esc(data.currency)}, {esc(_billing(data))} prices.</p>'
            '<div class="row">' + "".join(f"<div>{x}</div>" for x in parts) + "</div>") if parts else MISSING
