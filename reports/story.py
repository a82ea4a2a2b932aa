"""The report's sentences: what a person choosing an instance type should read first, generated from
the cost model's figures (never computed here: reports.data hands them over).

    python -c "from reports.story import describe_gap; print(describe_gap(0.105), describe_gap(-0.039))"

- `headline`: per preset, the cheapest target now and the runner-up's gap with its 90% interval;
- `why_sentence`: how a target's gap against the baseline moved between two windows, and which of
  the three exact terms moved it most, with the evidence (a price change, an environment change,
  the fine-tune failures k/n).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reports.html import esc, pct, sig

Rows = list[dict[str, Any]]
TERM_WORDS = {"price": "price", "throughput": "throughput", "reliability": "reliability (reruns)"}


def describe_gap(gap: float) -> str:
    """'10.5% dearer' / '3.9% cheaper' / 'the same cost'."""
    if abs(gap) < 0.0005:
        return "the same cost"
    return f"{abs(gap) * 100:.1f}% {'dearer' if gap > 0 else 'cheaper'}"


def _day(t: datetime) -> str:
    return f"{t:%b} {t.day}"


def headline(lead: dict, window: tuple[datetime, datetime] | None) -> str:
    """One sentence (HTML) for one preset: the cheapest target now, and what the runner-up costs more."""
    cur = lead["currency"]
    when = f" over the {(window[1] - window[0]).total_seconds() / 86400:g} days to {_day(window[1])}" if window else ""
    text = (f"For <b>{esc(lead['preset'])}</b>, <b>{esc(lead['cheapest'])}</b> is cheapest: "
            f"{sig(lead['cost_per_mtok'])} {esc(cur)} per 1M tokens (90%: {sig(lead['cost_lo'])}–{sig(lead['cost_hi'])})"
            f"{esc(when)}")
    if lead.get("cost_now_per_mtok") is not None:
        text += f", {sig(lead['cost_now_per_mtok'])} at today's price"
    if lead.get("runner_up") is None:
        return text + f". No other target ran {esc(lead['preset'])} in the window."
    return (text + f". <b>{esc(lead['runner_up'])}</b> costs {describe_gap(lead['gap']).replace('dearer', 'more')} "
            f"(90%: {pct(lead['gap_lo'])} to {pct(lead['gap_hi'])}).")


def _dominant(delta: dict) -> str:
    net = sum(delta.values())
    same = {k: v for k, v in delta.items() if (v > 0) == (net > 0) and v != 0} or delta
    return max(same, key=lambda k: abs(same[k]))


def _in(t: datetime, window: tuple[datetime, datetime]) -> bool:
    return window[0] < t <= window[1]


def _evidence(term: str, item: dict, span: tuple[datetime, datetime], price_changes: Rows, env_changes: Rows,
              kinds: Rows) -> str:
    a, b, w = item["a"], item["b"], item["windows"]
    if term == "price":
        moved = [f"{r['target']} {r['previous_price']:.4g} → {r['price_per_hour']:.4g} {r['currency']}/h"
                 for r in price_changes if r["target"] in (a, b) and _in(r["changed_at"], span)]
        if moved:
            return "price change " + "; ".join(moved[:2])
        return (f"blended price {a} {sig(w['a1']['price_per_hour'])} → {sig(w['a2']['price_per_hour'])}, "
                f"{b} {sig(w['b1']['price_per_hour'])} → {sig(w['b2']['price_per_hour'])} per hour")
    if term == "throughput":
        env = [f"{r['target']} {r['change']}" for r in env_changes if r["target"] in (a, b) and _in(r["changed_at"], span)]
        speed = (f"{a} {sig(w['a1']['tokens_per_s'], 3)} → {sig(w['a2']['tokens_per_s'], 3)} tokens/s, "
                 f"{b} {sig(w['b1']['tokens_per_s'], 3)} → {sig(w['b2']['tokens_per_s'], 3)}")
        return speed + (f"; {'; '.join(env[:2])}" if env else "")
    kind = next((k["error_kind"] for k in kinds if k["target"] == a), None)
    runs = (f"{a}'s failed fine-tune attempts {w['a1']['failed_attempts']}/{w['a1']['attempts']} → "
            f"{w['a2']['failed_attempts']}/{w['a2']['attempts']}")
    return runs + (f", mostly {kind}" if kind else "") + (
        f"; {b}'s {w['b2']['failed_attempts']}/{w['b2']['attempts']}")


def why_sentence(item: dict, windows: tuple, price_changes: Rows, env_changes: Rows, kinds: Rows) -> str:
    """e.g. 'h200-dev became 10.5% dearer than h200-sxm-1x for 1b since Nov 2 (it was 3.9% cheaper), mostly
    through price: price change h200-sxm-1x 3.8 → 3.23 USD/h.' (plain text; the page escapes it)"""
    res = item["result"]
    (w1, w2) = windows
    term = _dominant(res["delta"])
    span = (w1[0], w2[1])
    moved = f"{term_points(res['delta'])}"
    return (f"{item['a']} became {describe_gap(res['gap_2'])} than {item['b']} for {item['preset']} since {_day(w1[1])} "
            f"(it was {describe_gap(res['gap_1'])}), mostly through {TERM_WORDS[term]}: "
            f"{_evidence(term, item, span, price_changes, env_changes, kinds)}. Terms: {moved}.")


def term_points(delta: dict) -> str:
    """'price +14.2, throughput -1.3, reliability +3.0 log points'."""
    return ", ".join(f"{k} {100 * v:+.1f}" for k, v in delta.items()) + " log points"
