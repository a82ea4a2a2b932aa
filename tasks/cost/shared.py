"""The cost per 1M tokens when a card is shared by two fine-tunes, labelled "shared", never mixed with the single-job figure.

    costgap targets --json            # each row's "shared": these figures for its target

From the newest sharing measurement per (target, preset) on a GPU host (tasks/probe/finetune/sharing.py: one job alone,
then `jobs` plain processes at once at the same settings): the same formula as every cost
(tasks.cost.model.effective_cost, C = P / (3600 X) * 1e6 * R) with
  P  the instance's price per hour in force at that run's start (cost_price_now.sql at the run's time,
     the ASOF rule every run is priced by), in the reporting currency;
  X  the aggregate tokens/s of the jobs together ("shared"), and beside it the one job alone at the same
     settings ("alone"), so the two differ by the sharing gain alone;
  R  from the sharing part's own attempts (well_used_sharing_attempts.sql), p = k/n, with the options' f.
These rows are their own figures: they never enter the cost table, a gap, a tier or an alert, whose X is
the steady-state fine-tune's.
"""

from __future__ import annotations

import json
from datetime import datetime

from tasks.cost.inputs import price_now
from tasks.cost.model import CostOptions, effective_cost, failure_rate, rerun_factor
from warehouse import sql

LABEL = "shared"


def shared_costs(con, opts: CostOptions, as_of: datetime | None = None) -> list[dict]:
    """One row per (target, preset) with a sharing measurement: label, jobs, aggregate and alone tokens/s,
    gain, price, R, and the cost per 1M tokens shared and alone (None with `no_cost_reason` where unpriced)."""
    rows = [r for r in sql.rows(con, "well_used_facts", {"as_of": as_of, "metrics": ["sharing/sharing_gain"]})
            if r["gpu_count"]]  # a CPU host's sharing run (CI's tiny) is no card to share
    tries = {(a["target"], a["preset"]): a for a in sql.rows(con, "well_used_sharing_attempts", {"as_of": as_of})}
    prices: dict[datetime, dict] = {}
    out = []
    for r in rows:
        p = json.loads(r["params"]) if isinstance(r["params"], str) else dict(r["params"] or {})
        if r["started_at"] not in prices:
            prices[r["started_at"]] = price_now(con, r["started_at"], opts)
        price = (prices[r["started_at"]].get(r["target"]) or {}).get("price_per_hour")
        k = tries.get((r["target"], p["preset"]), {})
        failed, attempts = k.get("failed", 0), k.get("attempts", 0)
        rate = failure_rate(failed, attempts)
        rerun = rerun_factor(rate, opts.f) if rate < 1.0 else None
        agg, alone = p["aggregate_tokens_per_s"], p["alone_tokens_per_s"]
        priced = price is not None and rerun is not None
        out.append({
            "target": r["target"], "preset": p["preset"], "label": LABEL, "jobs": p["jobs"],
            "aggregate_tokens_per_s": agg, "alone_tokens_per_s": alone, "gain": r["value"],
            "micro_batch": p.get("micro_batch"), "currency": opts.currency, "price_per_hour": price,
            "failed_attempts": failed, "attempts": attempts, "R": rerun,
            "cost_per_mtok_shared": effective_cost(price, agg, rerun) if priced else None,
            "cost_per_mtok_alone": effective_cost(price, alone, rerun) if priced else None,
            "no_cost_reason": None if priced else ("no price as of its run" if price is None
                                                   else "every attempt failed"),
            "run_id": r["run_id"], "started_at": r["started_at"],
        })
    return out
