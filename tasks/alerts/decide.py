"""What counts as a change that is not a cost comparison: failures, prices, refused data (pure functions).

    .venv/bin/pytest -q tests/test_alerts_decide.py

The cost-based kinds (cheapest changed, gap shifted, throughput shifted, failure rate shifted) are
tasks.alerts.moves, over the one window grid. Here:
- failure_streaks: consecutive failed, crashed or timed-out dispatches of a target; one per streak.
- price_changes: a price period that follows an earlier one (per target and billing mode).
- quarantined: a bundle that was refused.
"""

from __future__ import annotations

from datetime import datetime, timezone

from tasks.alerts.config import DATA_QUARANTINED, FAILED_STATUSES, PRICE_CHANGED, TARGET_FAILED, Change


def iso(t: datetime | None) -> str | None:
    return None if t is None else t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.1%}"


def _money(x: float | None, currency: str) -> str:
    return "n/a" if x is None else f"{x:.4g} {currency}"


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
