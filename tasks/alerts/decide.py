"""What counts as a change: plain functions over figures the cost model already computed.

    .venv/bin/pytest -q tests/test_alerts_decide.py

No SQL and no arithmetic on costs here: every cost and gap comes from tasks.cost.table (costs, leaders,
gap_history) and tasks.cost.changepoint (detect); these functions only compare them.
- cheapest_changes: per preset, the cheapest target of each window (leaders: the overview's headline),
  folded oldest first from a standing one. A different target takes over only when its gap against the standing one is below 0
  over its whole 90% interval (gap_hi < 0); cheaper by noise is no change, and a window in which the
  standing target has no cost (it failed that week) holds the standing one.
- gap_shifts: a target's gap against the baseline left the previous period's 90% interval, and moved by
  at least `min_move` (a narrow interval can be left by less than what matters for cost).
- changepoint_shifts: the change detector's significant shifts (with the environment change at the cut).
- failure_streaks: consecutive failed, crashed or timed-out dispatches of a target; one per streak.
- price_changes / quarantined: a price period that follows an earlier one; a bundle that was refused.
"""

from __future__ import annotations

from datetime import datetime, timezone

from tasks.alerts.config import (CHEAPEST_CHANGED, DATA_QUARANTINED, FAILED_STATUSES, GAP_SHIFTED,
                                 PRICE_CHANGED, TARGET_FAILED, Change)
from tasks.cost.table import gap_history, leaders

TERMS = ("price", "throughput", "reliability")  # the gap's exact log decomposition (tasks.cost.model)


def iso(t: datetime | None) -> str | None:
    return None if t is None else t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.1%}"


def _money(x: float | None, currency: str) -> str:
    return "n/a" if x is None else f"{x:.4g} {currency}"


# -- the cheapest target ------------------------------------------------------------------------------

def cheapest_changes(rows: list[dict], figs: dict, standing: dict[str, str] | None = None) -> list[Change]:
    """Changes of the cheapest target per preset over the windows in `rows` (tasks.cost.table.costs).

    The cheapest of each window is the overview's (tasks.cost.table.leaders); the gap of the new cheapest
    against the standing one, with its 90% interval, is tasks.cost.table.gap_history's. `standing` =
    {preset: target} to start from; else the oldest window's cheapest. Each change: old -> new, both costs
    in the window where it happened, the gap of new against old with its 90% interval."""
    lead = {(r["preset"], r["period"]): r for r in leaders(rows, figs)}
    by_key = {(r["period"], r["target"], r["preset"]): r for r in rows}
    out = []
    for preset in sorted({p for p, _ in lead}):
        held = (standing or {}).get(preset)
        for period in sorted((k for p, k in lead if p == preset), reverse=True):  # oldest window first
            best = lead[(preset, period)]["cheapest"]
            if held is None:
                held = best
                continue
            old = by_key.get((period, held, preset))
            if best == held or old is None or old["cost_per_mtok"] is None:
                continue  # no challenger, or the standing target has no cost here: hold
            window = [r for r in rows if r["period"] == period and r["preset"] == preset and r["target"] in (best, held)]
            (g,) = gap_history(window, figs, held)
            if g["gap_hi"] >= 0:
                continue  # cheaper only inside the interval: noise, not a change
            out.append(_cheapest(preset, period, old, by_key[(period, best, preset)], g))
            held = best
    return out


def _cheapest(preset: str, period: int, old: dict, new: dict, g: dict) -> Change:
    cur = new["currency"]
    payload = {
        "preset": preset, "old_target": old["target"], "new_target": new["target"], "currency": cur,
        "old_cost_per_mtok": old["cost_per_mtok"], "old_cost_lo": old["cost_lo"], "old_cost_hi": old["cost_hi"],
        "new_cost_per_mtok": new["cost_per_mtok"], "new_cost_lo": new["cost_lo"], "new_cost_hi": new["cost_hi"],
        "gap": g["gap"], "gap_lo": g["gap_lo"], "gap_hi": g["gap_hi"],
        "window_start": iso(new["window_start"]), "window_end": iso(new["window_end"]),
    }
    summary = (f"{preset}: the cheapest target is now {new['target']} at {_money(new['cost_per_mtok'], cur)} per 1M "
               f"tokens, was {old['target']} at {_money(old['cost_per_mtok'], cur)}; gap {_pct(g['gap'])} "
               f"(90% interval {_pct(g['gap_lo'])} to {_pct(g['gap_hi'])})")
    return Change(CHEAPEST_CHANGED, f"cheapest/{preset}", new["target"], new["target"], new["window_end"], summary,
                  payload, related=(old["target"],), period=period, noticed_at=new["window_end"])


# -- the gap against the baseline -----------------------------------------------------------------------

def gap_shifts(history: list[dict], end: datetime, period_days: float, min_move: float) -> list[Change]:
    """Periods whose gap left the previous period's 90% interval; `history` from tasks.cost.table.gap_history,
    `end` the end of period 0 (the span's end)."""
    series: dict[tuple, list[dict]] = {}
    for r in history:
        series.setdefault((r["preset"], r["target"], r["baseline"]), []).append(r)
    out = []
    for (preset, target, baseline), rs in sorted(series.items()):
        rs = sorted(rs, key=lambda r: r["period_end"])
        for prev, cur in zip(rs, rs[1:]):  # the previous period that has a gap figure
            outside = cur["gap"] < prev["gap_lo"] or cur["gap"] > prev["gap_hi"]
            if outside and abs(cur["gap"] - prev["gap"]) >= min_move:
                period = round((end - cur["period_end"]).total_seconds() / (period_days * 86400.0))
                out.append(_shift(preset, target, baseline, prev, cur, period))
    return out


def _shift(preset: str, target: str, baseline: str, prev: dict, cur: dict, period: int) -> Change:
    terms = {t: cur[f"ln_{t}"] - prev[f"ln_{t}"] for t in TERMS}
    main = max(TERMS, key=lambda t: abs(terms[t]))
    cur_ = cur["currency"]
    payload = {
        "reason": "interval", "preset": preset, "target": target, "baseline": baseline, "currency": cur_,
        "gap": cur["gap"], "gap_lo": cur["gap_lo"], "gap_hi": cur["gap_hi"],
        "previous_gap": prev["gap"], "previous_gap_lo": prev["gap_lo"], "previous_gap_hi": prev["gap_hi"],
        "cost_per_mtok": cur["cost_per_mtok"], "baseline_cost_per_mtok": cur["baseline_cost_per_mtok"],
        "previous_cost_per_mtok": prev["cost_per_mtok"],
        "previous_baseline_cost_per_mtok": prev["baseline_cost_per_mtok"],
        "terms": terms, "main_term": main,
        "period_start": iso(cur["period_start"]), "period_end": iso(cur["period_end"]),
        "previous_period_start": iso(prev["period_start"]), "previous_period_end": iso(prev["period_end"]),
        "env_changes": [],
    }
    summary = (f"{target} against {baseline} on {preset}: gap {_pct(prev['gap'])} -> {_pct(cur['gap'])} "
               f"(90% interval {_pct(cur['gap_lo'])} to {_pct(cur['gap_hi'])}), outside the previous period's "
               f"{_pct(prev['gap_lo'])} to {_pct(prev['gap_hi'])}; mostly {main}; cost "
               f"{_money(cur['cost_per_mtok'], cur_)} vs {_money(cur['baseline_cost_per_mtok'], cur_)} per 1M tokens")
    return Change(GAP_SHIFTED, f"gap/{preset}/{target}/{baseline}", iso(cur["period_end"]), target,
                  cur["period_end"], summary, payload, related=(baseline,), period=period,
                  noticed_at=cur["period_end"])


def changepoint_shifts(findings: list[dict]) -> list[Change]:
    """Significant shifts of tokens/s at an environment change (tasks.cost.changepoint.detect)."""
    out = []
    for f in findings:
        at = datetime.fromisoformat(f["at"])
        payload = {"reason": "changepoint", "preset": f["preset"], "target": f["target"], "at": iso(at),
                   "shift": f["shift"], "shift_lo": f["shift_lo"], "shift_hi": f["shift_hi"], "p_value": f["p_value"],
                   "tokens_per_s_before": f["tokens_per_s_before"], "tokens_per_s_after": f["tokens_per_s_after"],
                   "run_before": f["run_before"], "run_after": f["run_after"],
                   "env_changes": [{k: (None if c[k] is None else str(c[k])) for k in ("field", "before", "after")}
                                   for c in f["changed"]]}
        out.append(Change(GAP_SHIFTED, f"shift/{f['target']}/{f['preset']}/{f['run_after']}", f["run_after"],
                          f["target"], at, f["summary"], payload, noticed_at=at))
    return out


# -- failures, prices, quarantine -----------------------------------------------------------------------

def failure_streaks(dispatches: list[dict]) -> list[Change]:
    """One change per streak of consecutive failed dispatches of a target (`ongoing` when it has not ended).
    `dispatches`: target, compare_run_id, status, message, ended_at; any order."""
    per: dict[str, list[dict]] = {}
    for d in sorted(dispatches, key=lambda d: (d["target"], d["ended_at"], d["compare_run_id"])):
        per.setdefault(d["target"], []).append(d)
    out = []
    for target, ds in per.items():
        streak: list[dict] = []
        for d in ds + [None]:  # None closes the last streak
            if d is not None and d["status"] in FAILED_STATUSES:
                streak.append(d)
                continue
            if streak:
                out.append(_streak(target, streak, ongoing=d is None))
            streak = []
    return out


def _streak(target: str, streak: list[dict], ongoing: bool) -> Change:
    first, last, n = streak[0], streak[-1], len(streak)
    payload = {"target": target, "status": last["status"], "message": last["message"],
               "consecutive_failures": n, "first_failed_at": iso(first["ended_at"]), "last_failed_at": iso(last["ended_at"]),
               "compare_run_id": last["compare_run_id"], "ongoing": ongoing}
    what = "failed" if last["status"] == "failed" else last["status"].replace("timeout", "timed out")
    summary = (f"{target} {what}" + (f" ({n} compares in a row, since {first['ended_at']:%Y-%m-%d %H:%M} UTC)" if n > 1
                                     else " (first failure)") + (f": {last['message']}" if last["message"] else ""))
    return Change(TARGET_FAILED, f"failed/{target}", f"{iso(first['ended_at'])}#{n}", target, last["ended_at"], summary,
                  payload, noticed_at=last["ended_at"], episode=iso(first["ended_at"]))


def price_changes(rows: list[dict]) -> list[Change]:
    """A price period that follows an earlier one for a target's key (warehouse/queries/alerts_price_changes.sql)."""
    out = []
    for r in rows:
        rel = r["price_per_hour"] / r["previous_price"] - 1.0 if r["previous_price"] else None
        payload = {"target": r["target"], "provider": r["provider"], "region": r["region"],
                   "instance_type": r["instance_type"], "billing_mode": r["billing_mode"], "currency": r["currency"],
                   "old_price_per_hour": r["previous_price"], "new_price_per_hour": r["price_per_hour"],
                   "relative_change": rel, "effective_from": iso(r["effective_from"]), "source": r["source"]}
        summary = (f"{r['target']}: {r['billing_mode']} price {_money(r['previous_price'], r['currency'])}/h -> "
                   f"{_money(r['price_per_hour'], r['currency'])}/h ({_pct(rel)}) from "
                   f"{r['effective_from']:%Y-%m-%d} ({r['source']})")
        out.append(Change(PRICE_CHANGED, f"price/{r['target']}/{r['billing_mode']}", iso(r["effective_from"]),
                          r["target"], r["effective_from"], summary, payload, noticed_at=r["imported_at"]))
    return out


def quarantined(rows: list[dict]) -> list[Change]:
    """One change per quarantined or rejected bundle (warehouse/queries/alerts_quarantine.sql)."""
    out = []
    for r in rows:
        payload = {"bundle_id": r["bundle_id"], "kind": r["kind"], "target": r["target"], "reason": r["reason"],
                   "field": r["field"], "source_uri": r["source_uri"], "quarantined_at": iso(r["quarantined_at"])}
        summary = (f"{r['target'] or 'a file of unknown target'}: bundle {r['bundle_id'][:12]} {r['kind']}: "
                   f"{r['reason']}" + (f" (field {r['field']})" if r["field"] else ""))
        out.append(Change(DATA_QUARANTINED, f"quarantine/{r['bundle_id']}", r["bundle_id"], r["target"],
                          r["quarantined_at"], summary, payload, noticed_at=r["quarantined_at"]))
    return out
