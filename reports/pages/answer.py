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
from reports.pages.html import MISSING, Markup, Sorted, badge, interval_text, pct, script_json, sig
from reports.pages.page import Page, _target_link, row, unstable_badge
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


def _flag(r: dict, side: str) -> Markup:
    return unstable_badge({"unstable": r.get(f"{side}_unstable"), "unstable_runs": r.get(f"{side}_unstable_runs"),
                           "runs": r.get(f"{side}_runs"), "window_spread": r.get(f"{side}_window_spread")})


def answer(p: Page, data: ReportData) -> Markup:
    rows, cur = answer_rows(data), data.currency
    shown = []
    for r in rows:
        alone = r["runner_up"] is None
        now = r.get("cost_now_per_mtok")
        today = (Markup('<span class="sub">at today\'s price {}</span>').format(sig(now))
                 if now is not None and sig(now) != sig(r["cost_per_mtok"]) else "")
        v = r["verdict"]
        shown.append({
            "preset": Sorted(Markup("<b>{}</b>").format(r["preset"]), sort=r["preset"]),
            "cheapest": Sorted(Markup('{}<span class="sub">{}</span>').format(
                _target_link(r["cheapest"]), ONLY_ONE if alone else "cheapest"), sort=r["cheapest"]),
            "cost": Sorted(Markup('{}<span class="sub">{}</span>{}{}').format(
                sig(r["cost_per_mtok"]), interval_text(r["cost_lo"], r["cost_hi"]), today, _flag(r, "cheapest")),
                sort=r["cost_per_mtok"]),
            "cheapest_runs": r["cheapest_runs"],
            "runner_up": (Sorted(Markup('<span class="empty">none</span>'), sort=None) if alone else
                          Sorted(Markup("{}{}").format(_target_link(r["runner_up"]), _flag(r, "runner_up")),
                                 sort=r["runner_up"])),
            "gap": None if alone else Sorted(Markup('{}<span class="sub">{}</span>').format(
                pct(r["gap"]), interval_text(r["gap_lo"], r["gap_hi"], as_pct=True)), sort=r["gap"]),
            "runner_up_runs": r["runner_up_runs"],
            "verdict": badge(v, {CLEAR: "good", WITHIN_NOISE: "warn"}.get(v, "")),
        })
    intro = Markup('<p>Per preset, the cheapest target over the window and how much more the next one costs, with its '
                   '90% interval. <b>Clear</b>: the interval excludes 0; <b>within noise</b>: it does not, so the two '
                   'cost the same as far as these runs can tell. Figures in {} per 1M tokens, {} prices, f = {}; pick '
                   'others in <a href="#your-workload">your workload</a>.</p>').format(cur, _billing(data), _f_default(data))
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


def glossary(presets: list[str]) -> Markup:
    """What each preset shown is (model, sequence, full/LoRA/QLoRA) and what a token is."""
    rows = Markup("").join(
        Markup('<tr><td><b>{}</b></td><td>{}</td><td class="num">{:,}</td><td>{}</td></tr>').format(
            s, n.model, n.seq_len, n.training) if (n := PRESETS.get(s)) else
        Markup('<tr><td><b>{}</b></td><td colspan="3" class="empty">not a built-in preset</td></tr>').format(s)
        for s in presets)
    return Markup('<details class="glossary" open><summary>What the presets are</summary><div class="scroll"><table>'
                  '<thead><tr><th>Preset</th><th>Model</th><th class="num">Sequence (tokens)</th><th>Training</th></tr>'
                  '</thead><tbody>{}</tbody></table></div><p class="exports">{}</p></details>').format(rows, TOKEN)


def picker(p: Page, data: ReportData) -> Markup:
    """Controls rendered here; assets/picker.js fills the table from the embedded inputs."""
    r = data.reader
    d = r["defaults"]
    presets = r["presets"]
    first = next((a["preset"] for a in answer_rows(data) if a["runner_up"] is not None), presets[0] if presets else "")

    def select(name: str, label: str, values: list, words, default) -> Markup:
        opts = Markup("").join(Markup('<option value="{}"{}>{}</option>').format(
            v, Markup(" selected") if v == default else "", words(v)) for v in values)
        return Markup('<label>{} <select id="pk-{}">{}</select></label>').format(label, name, opts)

    controls = Markup("").join([
        select("preset", "Preset", presets, str, first),
        select("currency", "Currency", r["currencies"], str, d["currency"]),
        select("billing", "Billing", r["billings"], lambda b: BILLING_WORDS.get(b, b), d["billing"]),
        select("f", "Work lost per failure, f", [f"{f:g}" for f in r["f_choices"]],
               lambda f: F_WORDS.get(float(f), f), f"{d['f']:g}"),
        Markup('<label>Tokens to train <input id="pk-tokens" type="text" inputmode="decimal" value="{:,}" '
               'size="14" aria-describedby="pk-note"></label>').format(int(d["tokens"]))])
    heads = ["Target", 'Cost / 1M tokens (<span data-cur>{c}</span>)', "vs cheapest",
             'Total (<span data-cur>{c}</span>)', "Hours", 'Price (<span data-cur>{c}</span>/h)', "Tokens/s",
             "Failed attempts p", "R", "Runs"]
    head = Markup("").join(Markup('<th class="{}" scope="col">{}</th>').format(
        "" if i == 0 else "num", Markup(h).format(c=d["currency"])) for i, h in enumerate(heads))
    p.data["reader-inputs"] = input_rows(r)
    skipped = Markup("").join(Markup('<p class="empty">Not offered: {}</p>').format(s) for s in r.get("skipped", []))
    return Markup(
        '<div id="picker" class="picker">'
        '<p>Your own question: cost per 1M tokens, the cost of your token count and the hours it takes, per '
        'target, computed in this page from the inputs below with the cost model\'s formulas '
        '(p = k/n, R = 1 + f·p/(1−p), C = P/(3600·X)·10⁶·R; total = C·(N/10⁶); hours = N/(3600·X)·R). The same '
        'figures as <code>costgap targets --currency C --billing B --f F --json</code>; total and hours as '
        '<code>costgap tiers … --tokens N</code>.</p>'
        '<form class="choices" onsubmit="return false">{controls}</form>'
        '<p class="exports"><span id="pk-note" aria-live="polite"></span> '
        '<a id="pk-link" href="#">Link to this view</a> · Inputs: '
        '<a href="data/reader-inputs.csv" download>CSV</a></p>'
        '<div class="scroll"><table id="pk-table"><thead><tr>{head}</tr></thead><tbody id="pk-body"></tbody></table>'
        '</div>{skipped}</div>'
        '<script type="application/json" id="picker-inputs">{inputs}</script>').format(
        controls=controls, head=head, skipped=skipped, inputs=Markup(script_json(r)))  # no '<', '>' or '&' left in it


def price_throughput(p: Page, data: ReportData) -> Markup:
    """Per preset: each target at (tokens/s after reruns, price per hour), with lines of equal cost."""
    priced = [r for r in data.cost.rows if r.get("cost_per_mtok") is not None]
    presets = sorted({r["preset"] for r in priced})
    keep = ("target", "preset", "price_per_hour", "tokens_per_s", "R", "cost_per_mtok", "runs")
    parts = [p.chart(f"overview-pt-{charts.key(s)}", lambda s=s: charts.price_throughput(
        [r for r in priced if r["preset"] == s], s, data.currency, data.colors),
        f"{s}.",
        rows=[{k: r.get(k) for k in keep} for r in priced if r["preset"] == s]) for s in presets]
    return (Markup('<p>Down and to the right is cheaper: further right trains faster, lower rents for less. Each grey '
                   'line joins the points of one cost per 1M tokens; tokens/s is the measured median divided by the '
                   'rerun factor R, so a point\'s line is its cost. {}, {} prices.</p>').format(data.currency, _billing(data))
            + row(parts)) if parts else Markup(MISSING)
