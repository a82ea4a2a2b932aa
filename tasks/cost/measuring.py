"""What measuring costs: each probe run's instance-seconds at the price in force then, and monthly budgets.

    costgap targets                                   # the cost of measuring per target and month
    costgap run --targets all --max-spend 500 --max-spend aws-p5-48xlarge=150 --currency USD

The one place where measuring's money is computed:
- a run's cost = instance_seconds / 3600 x the instance's price per hour in force at the run's start
  (warehouse/queries/measuring_priced.sql: the price book's ASOF join, FX at the run's day);
- a month's cost per target = the sum of its runs' costs started in that UTC month;
- kept up = the hours of that calendar month x the price in force at the month's latest run: what the
  same instance would have cost had it been kept up all month to be ready for the probe;
- a budget (per month, per target or in total, in the reporting currency) skips a dispatch when the
  month's spend in scope plus the run's expected cost would exceed it. The expected cost is the price
  in force now x the median instance-seconds of the target's recorded runs, or its timeout_s (the
  longest a run is let go on) before it has any. A target with no price in force cannot be judged:
  it is dispatched and its cost shows as unpriced.
"""

from __future__ import annotations

import calendar
import statistics
from dataclasses import dataclass, field
from datetime import date, datetime, timezone

from tasks.errors import UserError

TOTAL = "total"  # the key of the all-targets budget in a Budget's per-target map


def run_cost(instance_seconds: float, price_per_hour: float | None) -> float | None:
    """One run's cost: its instance-seconds at the hourly price (None when unpriced)."""
    return None if price_per_hour is None else instance_seconds / 3600.0 * price_per_hour


def month_of(ts: datetime) -> date:
    """The first day of `ts`'s UTC month."""
    u = ts.astimezone(timezone.utc)
    return date(u.year, u.month, 1)


def month_hours(month: date) -> int:
    """Hours in a calendar month (UTC: no daylight-saving changes)."""
    return calendar.monthrange(month.year, month.month)[1] * 24


@dataclass(frozen=True)
class Budget:
    """Monthly spend limits in `currency`: `total` over all targets and/or one per target."""

    currency: str = "USD"
    total: float | None = None
    per_target: dict[str, float] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.total is not None or bool(self.per_target)


def parse_budget(specs: list[str] | dict | None, currency: str = "USD") -> Budget:
    """`["500", "aws-p5-48xlarge=150"]` (CLI) or `{"total": 500, "aws-p5-48xlarge": 150}` (flow parameter)."""
    items: list[tuple[str, object]] = []
    if isinstance(specs, dict):
        items = list(specs.items())
    else:
        for spec in specs or []:
            key, sep, amount = str(spec).rpartition("=")
            items.append((key.strip() if sep else TOTAL, amount))
    total, per = None, {}
    for key, raw in items:
        try:
            amount = float(raw)
        except (TypeError, ValueError):
            amount = float("nan")
        if not amount >= 0 or amount == float("inf"):
            raise UserError(f"--max-spend {key}={raw!r}: expected a non-negative amount in {currency} per month "
                            "(AMOUNT for all targets together, TARGET=AMOUNT for one)")
        if key == TOTAL:
            total = amount
        else:
            per[key] = amount
    return Budget(currency=currency, total=total, per_target=per)


def priced_runs(con, currency: str = "USD", billing: str | None = None) -> list[dict]:
    """Every recorded probe run with its price in force then and its cost, oldest first."""
    from warehouse.sql import rows

    out = rows(con, "measuring_priced", {"currency": currency, "billing": billing})
    missing = [r for r in out if r["fx_missing"]]
    if missing:
        r = missing[0]
        raise UserError(f"fx_rates: no rate for {r['price_currency']} or {currency} on "
                        f"{r['started_at']:%Y-%m-%d} (target {r['target']}): costgap fx refresh")
    for r in out:
        r["cost"] = run_cost(r["instance_seconds"], r["price_per_hour"])
        r["month"] = month_of(r["started_at"])
    return out


def monthly(runs: list[dict]) -> list[dict]:
    """Per (target, month): runs, instance-seconds, the cost of measuring, and the cost of keeping it up."""
    groups: dict[tuple[str, date], list[dict]] = {}
    for r in runs:
        groups.setdefault((r["target"], r["month"]), []).append(r)
    out = []
    for (target, month), rs in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        priced = [r for r in rs if r["cost"] is not None]
        latest = max(priced, key=lambda r: r["started_at"]) if priced else None
        price = latest["price_per_hour"] if latest else None
        out.append({"target": target, "month": month, "runs": len(rs), "unpriced_runs": len(rs) - len(priced),
                    "instance_seconds": sum(r["instance_seconds"] for r in rs),
                    "cost": sum(r["cost"] for r in priced) if priced else None,
                    "price_per_hour": price,
                    "kept_up_cost": None if price is None else month_hours(month) * price})
    return out


@dataclass
class Decision:
    """Whether one target is dispatched under the budget, and the figures that decided it."""

    target: str
    skip: bool
    scope: str | None = None  # target | total: the budget it would exceed
    budget: float | None = None
    spent: float = 0.0
    expected: float | None = None
    message: str = ""


def expected_seconds(runs: list[dict], target: str, timeout_s: float) -> float:
    """What the next run of `target` is expected to hold its instance: its runs' median, else timeout_s."""
    secs = [r["instance_seconds"] for r in runs if r["target"] == target]
    return statistics.median(secs) if secs else float(timeout_s)


def plan(runs: list[dict], targets: list[tuple[str, float]], prices_now: dict[str, float], budget: Budget,
         now: datetime) -> list[Decision]:
    """Decide, in order, which of `targets` ((id, timeout_s)) a run may dispatch this month.

    `runs` are priced_runs' rows, `prices_now` the price per hour in force now per target (reporting
    currency). Targets admitted earlier in the same run count against the total budget of later ones.
    """
    month = month_of(now)
    runs = [r for r in runs if r["started_at"] <= now]  # what had happened by `now`
    spent: dict[str, float] = {}
    for r in runs:
        if r["month"] == month and r["cost"] is not None:
            spent[r["target"]] = spent.get(r["target"], 0.0) + r["cost"]
    total_spent = sum(spent.values())
    cur = budget.currency
    out: list[Decision] = []
    for tid, timeout_s in targets:
        price = prices_now.get(tid)
        if not budget or price is None:
            why = "" if not budget else f"no price in force for {tid}: its cost cannot be judged against the budget"
            out.append(Decision(tid, False, message=why))
            continue
        exp = run_cost(expected_seconds(runs, tid, timeout_s), price)
        mine = spent.get(tid, 0.0)
        limit = budget.per_target.get(tid)
        if limit is not None and mine + exp > limit:
            out.append(Decision(tid, True, "target", limit, mine, exp,
                                f"skipped {tid}: {month:%Y-%m} measuring spend {mine:.2f} + this run's expected "
                                f"{exp:.2f} would exceed its budget {limit:.2f} {cur}"))
            continue
        if budget.total is not None and total_spent + exp > budget.total:
            out.append(Decision(tid, True, TOTAL, budget.total, total_spent, exp,
                                f"skipped {tid}: {month:%Y-%m} measuring spend {total_spent:.2f} (all targets) + "
                                f"this run's expected {exp:.2f} would exceed the total budget {budget.total:.2f} {cur}"))
            continue
        total_spent += exp  # admitted: counts against the next targets' total
        out.append(Decision(tid, False, None, limit, mine, exp))
    return out


def record_runs(con, rows: list[dict]) -> int:
    """Insert measuring_runs rows (warehouse/migrations/085_measuring_cost.sql)."""
    from warehouse.sql import load_query

    sql = load_query("measuring_insert")
    keys = ("compare_run_id", "target", "dispatch", "probe_flow_run_id", "span_source", "started_at",
            "finished_at", "instance_seconds")
    for r in rows:
        con.execute(sql, [r[k] for k in keys])
    return len(rows)


def record_skip(con, compare_run_id: str, d: Decision, currency: str, now: datetime) -> None:
    """One dispatch_skips row for a skipped target."""
    from warehouse.sql import load_query

    con.execute(load_query("measuring_skip_insert"), [compare_run_id, d.target, d.scope, month_of(now), currency,
                                                      d.budget, d.spent, d.expected, d.message, now])


def lines(rows: list[dict], currency: str) -> list[str]:
    """The cost of measuring per target and month beside keeping the instance up, one line each."""
    out = []
    for r in rows:
        hours = r["instance_seconds"] / 3600.0
        if r["cost"] is None:
            out.append(f"{r['month']:%Y-%m} {r['target']:<28} {r['runs']} run(s), {hours:.2f} instance-h: "
                       "no price in force")
            continue
        ratio = f", {r['kept_up_cost'] / r['cost']:,.0f}x" if r["cost"] > 0 else ""
        unpriced = f" ({r['unpriced_runs']} run(s) unpriced)" if r["unpriced_runs"] else ""
        out.append(f"{r['month']:%Y-%m} {r['target']:<28} {r['runs']} run(s), {hours:.2f} instance-h: "
                   f"{r['cost']:.2f} {currency}{unpriced}; kept up all month {r['kept_up_cost']:,.2f} {currency}{ratio}")
    return out
