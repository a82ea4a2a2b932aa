"""Is this server well used? Each rule's verdict on a target's page, the same side by side for the targets
being compared on the overview, and the shared cost per 1M tokens as its own labelled table.

    costgap demo && open .costgap/demo-site/index.html      # the overview's side-by-side table; each target's page

Every verdict, value and threshold is tasks.cost.well_used's (reports.data.load calls `verdicts()`, as
`costgap targets --json` does); every shared cost is tasks.cost.shared's. Nothing is judged here.
"""

from __future__ import annotations

from reports.data import ReportData
from reports.pages.html import Markup, Sorted, badge, sig
from reports.pages.page import Page, _target_link
from tasks.cost.well_used import FAIL, PASS, RULES

KIND = {PASS: "good", FAIL: "bad"}  # "not measured": the neutral badge, never a pass
CSV_KEYS = ("rule", "name", "verdict", "value", "value_text", "threshold", "threshold_text", "figure", "note")


def verdict_badge(v: dict) -> Sorted:
    return badge(v["verdict"], KIND.get(v["verdict"], ""))


def _csv(target: str, verdicts: list[dict]) -> list[dict]:
    return [{"target": target, **{k: v.get(k) for k in CSV_KEYS}} for v in verdicts]


def rules_glossary() -> Markup:
    """Each rule's threshold, why it exists and where the threshold comes from."""
    rows = Markup("").join(Markup("<tr><td><b>{}</b></td><td>{}</td><td>{}</td><td>{}</td></tr>").format(
        r.name, r.threshold_text, r.reason, r.source) for r in RULES)
    return Markup('<details class="glossary"><summary>Why each rule, and where its threshold comes from</summary>'
                  '<div class="scroll"><table><thead><tr><th>Rule</th><th>Threshold</th><th>Why it exists</th>'
                  "<th>Source</th></tr></thead><tbody>{}</tbody></table></div></details>").format(rows)


def target_section(p: Page, data: ReportData, target: str, i: int) -> Markup:
    """One target's verdicts: rule, verdict, measured value, threshold, the figure it comes from; then its shared
    cost where the sharing part ran."""
    verdicts = data.well_used.get(target) or []
    shown = [{"name": Sorted(Markup("<b>{}</b>").format(v["name"]), sort=v["name"]), "verdict": verdict_badge(v),
              "measured": Sorted(Markup("{}{}").format(v["value_text"], Markup('<span class="sub">{}</span>').format(
                  v["note"]) if v["note"] else ""),
                  sort=v["value"] if isinstance(v["value"], (int, float)) else v["value_text"]),
              "threshold": v["threshold_text"], "figure": v["figure"]} for v in verdicts]
    counts = {k: sum(v["verdict"] == k for v in verdicts) for k in (PASS, FAIL)}
    rest = len(verdicts) - counts[PASS] - counts[FAIL]
    unmeasured = f"; {rest} not measured on this target's newest runs" if rest else ""
    intro = Markup("<p>{}</p>").format(
        f"{counts[PASS]} of {len(verdicts)} rules pass, {counts[FAIL]} fail{unmeasured}. Each verdict reads the "
        "newest run that measured its figure; a host without a GPU is not measured on the GPU rules.")
    out = intro + p.table(f"t{i}-well-used", [("name", "Rule"), ("verdict", "Verdict"), ("measured", "Measured"),
                                               ("threshold", "Threshold"), ("figure", "From")],
                          shown, csv=_csv(target, verdicts))
    return out + shared_table(p, data, [target], f"t{i}-shared") + rules_glossary()


def compared_targets(data: ReportData) -> list[str]:
    """The targets the overview's cost tables compare (every target with fine-tunes in the window, cheapest
    first), else every target with a run."""
    seen: list[str] = []
    for r in data.cost.rows + data.cost.extra.get("unmeasured", []):
        if r["target"] not in seen:
            seen.append(r["target"])
    return seen or [t["target"] for t in data.targets if t.get("runs")]


def side_by_side(p: Page, data: ReportData) -> Markup:
    """The rules down, the compared targets across: "same configuration, different cost" beside its why."""
    targets = [t for t in compared_targets(data) if t in data.well_used]
    if not targets:
        return Markup('<p class="empty">no data yet: no target has a run to judge</p>')
    rows = []
    for k, rule in enumerate(RULES):
        row = {"rule": Sorted(Markup('<b>{}</b><span class="sub">{}</span>').format(rule.name, rule.threshold_text),
                              sort=rule.name)}
        for j, t in enumerate(targets):
            v = data.well_used[t][k]
            row[f"t{j}"] = Sorted(Markup('{}<span class="sub">{}</span>').format(verdict_badge(v), v["value_text"]),
                                  sort=v["verdict"])
        rows.append(row)
    cols = [("rule", "Rule")] + [(f"t{j}", t) for j, t in enumerate(targets)]
    links = Markup(" · ").join(_target_link(t) for t in targets)
    csv = [row for t in targets for row in _csv(t, data.well_used[t])]
    return (Markup("<p>Two instance types with the same GPU, cores and memory can train at different costs for reasons "
                   "no configuration page shows. Each rule on each target the cost tables compare ({}), cheapest "
                   "first; the figures and where they come from are on each target's page.</p>").format(links)
            + p.table("overview-well-used", cols, rows, csv=csv) + shared_table(p, data, targets, "overview-shared")
            + rules_glossary())


def shared_table(p: Page, data: ReportData, targets: list[str], name: str) -> Markup:
    """The shared cost per 1M tokens (tasks.cost.shared), labelled, beside one job alone at the same settings."""
    rows = [r for r in data.shared.rows if r["target"] in targets]
    if not rows:
        return Markup("")
    cur = data.currency
    shown = [{"target": _target_link(r["target"]), "preset": r["preset"], "jobs": r["jobs"],
              "x": Sorted(Markup('{}<span class="sub">alone {}</span>').format(
                  sig(r["aggregate_tokens_per_s"]), sig(r["alone_tokens_per_s"])), sort=r["aggregate_tokens_per_s"]),
              "gain": Sorted(Markup("{}").format(f"{r['gain']:+.1%}"), sort=r["gain"]),
              "shared": (Sorted(Markup('{} {}<span class="sub">alone {}</span>').format(
                  badge("shared"), sig(r["cost_per_mtok_shared"]), sig(r["cost_per_mtok_alone"])),
                  sort=r["cost_per_mtok_shared"])
                         if r["cost_per_mtok_shared"] is not None else badge(r["no_cost_reason"], "warn"))}
             for r in rows]
    return (Markup("<h3>Two fine-tunes on one card: the shared cost</h3><p>Labelled <b>shared</b>: the card's price at "
                   "the sharing run over the tokens both jobs trained together, beside one job alone at the same "
                   "settings. It is not the cost per token of the answer and the cost tables, which is one steady "
                   "fine-tune's.</p>")
            + p.table(name, [("target", "Target"), ("preset", "Preset"), ("jobs", "Jobs"),
                             ("x", "Tokens/s together"), ("gain", "Sharing gain"),
                             ("shared", f"Cost / 1M tokens ({cur})")], shown, numeric=("jobs", "x", "gain", "shared"),
                      csv=rows))
