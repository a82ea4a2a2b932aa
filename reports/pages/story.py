"""The report's sentences: what a person choosing an instance type should read first, generated from
the cost model's figures (never computed here: reports.data hands them over).

    python -c "from reports.pages.story import describe_gap; print(describe_gap(0.105), describe_gap(-0.039))"

- `headline`: per preset, the cheapest target now and the runner-up's gap with its 90% interval;
- `why_sentence`: how a target's gap against the baseline moved between two windows of the chart's
  grid, which of the three exact terms moved it most, and for each term that moved by more than one
  log point only what changed (tasks.estimate.evidence: a price period, tokens/s and an environment change,
  the fine-tune failures k/n).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reports.pages.html import Markup, pct, sig
from tasks.estimate.evidence import evidence, evidence_text, main_term

Rows = list[dict[str, Any]]
TERM_WORDS = {"price": "price", "throughput": "throughput", "reliability": "reliability (reruns)"}


def describe_gap(gap: float) -> str:
    """'10.5% dearer' / '3.9% cheaper' / 'the same cost'."""
    if abs(gap) < 0.0005:
        return "the same cost"
    return f"{abs(gap) * 100:.1f}% {'dearer' if gap > 0 else 'cheaper'}"


def _day(t: datetime) -> str:
    return f"{t:%b} {t.day}"


def headline(lead: dict, window: tuple[datetime, datetime] | None) -> Markup:
    """One sentence (HTML) for one preset: the cheapest target now, and what the runner-up costs more."""
    when = f" over the {(window[1] - window[0]).total_seconds() / 86400:g} days to {_day(window[1])}" if window else ""
    text = Markup("For <b>{}</b>, <b>{}</b> is cheapest: {} {} per 1M tokens (90%: {}–{}){}").format(
        lead["preset"], lead["cheapest"], sig(lead["cost_per_mtok"]), lead["currency"], sig(lead["cost_lo"]),
        sig(lead["cost_hi"]), when)
    if lead.get("cost_now_per_mtok") is not None:
        text += f", {sig(lead['cost_now_per_mtok'])} at today's price"
    if lead.get("runner_up") is None:
        return text + Markup(". No other target ran {} in the window.").format(lead["preset"])
    return text + Markup(". <b>{}</b> costs {} (90%: {} to {}).").format(
        lead["runner_up"], describe_gap(lead["gap"]).replace("dearer", "more"), pct(lead["gap_lo"]), pct(lead["gap_hi"]))


def _in(t: datetime, window: tuple[datetime, datetime]) -> bool:
    return window[0] < t <= window[1]


def why_evidence(item: dict, windows: tuple, price_changes: Rows, env_changes: Rows) -> list[dict]:
    """tasks.estimate.evidence for one "why it moved" item: only the terms that moved by more than one log point,
    and of each only what changed (a price period, tokens/s, an environment change, failures k/n)."""
    (w1, w2) = windows
    span = (w1[0], w2[1])
    w = item["windows"]
    prices = [{"target": r["target"], "at": r["changed_at"], "old": r["previous_price"], "new": r["price_per_hour"],
               "currency": r["currency"]} for r in price_changes]
    env = {t: [{"text": r["change"] + f" on {_day(r['changed_at'])}"} for r in env_changes
               if r["target"] == t and _in(r["changed_at"], span)] for t in (item["a"], item["b"])}
    return evidence({"a": item["a"], "b": item["b"]}, {"a": w["a1"], "b": w["b1"]}, {"a": w["a2"], "b": w["b2"]},
                    item["result"]["delta"], span, price_periods=prices, env=env)


def why_sentence(item: dict, windows: tuple, price_changes: Rows, env_changes: Rows, kinds: Rows = ()) -> str:
    """e.g. 'h200-dev became 18.2% dearer than h200-sxm-1x for 1b in the window to Dec 4 (it was 4.8% cheaper
    in the window to Oct 30), mostly through price. What moved: price +16.3 log points: h200-sxm-1x price
    3.800 → 3.230 USD/h from Oct 30; reliability +11.1 log points: ...' (plain text; the page escapes it).
    Both windows are windows of the gap-over-time chart (tasks.cost.grid); `kinds` is accepted for callers
    and not used: the failure counts k/n are the reliability term's evidence."""
    res = item["result"]
    (w1, w2) = windows
    term = main_term(res["delta"])
    moved = why_evidence(item, windows, price_changes, env_changes)
    text = (f"{item['a']} became {describe_gap(res['gap_2'])} than {item['b']} for {item['preset']} in the window to "
            f"{_day(w2[1])} (it was {describe_gap(res['gap_1'])} in the window to {_day(w1[1])}), mostly through "
            f"{TERM_WORDS[term]}.")
    if moved:
        return text + f" What moved: {evidence_text(moved)}."
    return text + " No term moved by more than one log point."


def term_points(delta: dict) -> str:
    """'price +14.2, throughput -1.3, reliability +3.0 log points'."""
    return ", ".join(f"{k} {100 * v:+.1f}" for k, v in delta.items()) + " log points"
