"""The measuring budget at dispatch time: which targets a compare run skips, and telling it.

    prefect deployment run 'compare/weekly' --param max_spend='{"total": 500, "aws-p5-48xlarge": 150}'
    costgap run --targets all --max-spend 500 --max-spend aws-p5-48xlarge=150

Before the compare flow dispatches, `budget_gate` prices each chosen target's next run
(tasks/cost/measuring.py plan) against this month's spend. A target whose run would exceed its budget
or the total is not dispatched: it gets a dispatches row with status 'skipped', a dispatch_skips row
(the site's line), a Prefect event `costgap.dispatch.skipped` on resource `costgap.target.<id>`, and a
line in the flow's log and message. A skip is never a failure: the flow still ends Completed.
"""

from __future__ import annotations

from datetime import datetime, timezone

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from runtime.write_slot import writer
from tasks.dispatch import fanout
from tasks.dispatch.fanout import Outcome
from tasks.dispatch.targets import Target

SKIP_EVENT = "costgap.dispatch.skipped"
DISPATCHED = ("local", "pool", "kubernetes")  # modes that hold an instance; import costs nothing here


def _emit(d, currency: str, month: str) -> str | None:
    from prefect.events import emit_event

    ev = emit_event(event=SKIP_EVENT, resource={"prefect.resource.id": f"costgap.target.{d.target}",
                                                "prefect.resource.name": d.target},
                    payload={"target": d.target, "scope": d.scope, "month": month, "currency": currency,
                             "budget": d.budget, "spent": round(d.spent, 6), "expected": round(d.expected, 6),
                             "message": d.message})
    return str(ev.id) if ev is not None else None


@task(name="budget-gate", cache_policy=NO_CACHE)
def budget_gate(warehouse: str, chosen: list[Target], max_spend: dict | None, currency: str,
                compare_run_id: str) -> tuple[list[Target], list[Outcome]]:
    """(targets to dispatch, outcomes of the targets skipped for the budget), in the targets' order."""
    from tasks.cost import measuring
    from tasks.dispatch import targets as targets_mod
    from warehouse.sql import rows

    budget = measuring.parse_budget(max_spend, currency)
    if not budget:
        return chosen, []
    log = get_run_logger()
    now = datetime.now(timezone.utc)
    held = [t for t in chosen if t.dispatch in DISPATCHED]
    with writer(warehouse) as con:
        targets_mod.sync_targets(con, chosen)  # the price keys of targets new to this warehouse
        runs = measuring.priced_runs(con, currency)
        prices = {r["target"]: r["price_per_hour"] for r in rows(con, "cost_price_now",
                                                                 {"today": now, "billing": None, "currency": currency})
                  if r["price_per_hour"] is not None and not r["fx_missing"]}
        decisions = {d.target: d for d in measuring.plan(runs, [(t.id, t.timeout_s) for t in held], prices,
                                                         budget, now)}
        skipped: list[Outcome] = []
        for t in chosen:
            d = decisions.get(t.id)
            if d is None or not d.skip:
                if d is not None and d.message:
                    log.warning("%s: %s", t.id, d.message)
                continue
            o = Outcome(t.id, t.dispatch, fanout.SKIPPED, message=d.message, started_at=now, finished_at=now)
            measuring.record_skip(con, compare_run_id, d, currency, now)
            fanout.record_dispatches(con, fanout.dispatch_rows(compare_run_id, [o]))
            sent = _emit(d, currency, f"{measuring.month_of(now):%Y-%m}")
            log.warning("%s%s", d.message, "" if sent else " (no Prefect event: events are off in this process)")
            skipped.append(o)
    names = {o.target for o in skipped}
    return [t for t in chosen if t.id not in names], skipped
