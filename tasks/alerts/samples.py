"""One sample of each costgap event, for `costgap alerts test`: made by the same decision functions as
real ones, from figures of the same cost model, so a sample has exactly a real event's shape.

    python -c "from tasks.alerts.samples import samples; print([a.summary for a in samples('https://example.org')])"
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

from tasks.alerts.config import EVENTS, AlertConfig
from tasks.alerts.decide import failure_streaks, price_changes, quarantined
from tasks.alerts.moves import Facts, decide
from tasks.alerts.policy import Alert, events
from tasks.cost.grid import STEP_DAYS, stride
from tasks.cost.model import CostOptions, figure, row_rng

A, B, C = "sample-a10", "sample-v100", "sample-h100"  # clearly not real targets
PREFIX = "[costgap sample] "  # every sample's summary says it is one
WINDOW_DAYS = 30.0


def spread(level: float, n: int = 10, rel: float = 0.005) -> list[float]:
    """n runs' tokens/s around `level`, evenly spread by +-rel (a tight, repeatable target)."""
    return [level * (1 + rel * (2 * i / max(n - 1, 1) - 1)) for i in range(n)]


def world(spec: dict, end: datetime, opts: CostOptions | None = None) -> tuple[list[dict], dict, dict]:
    """rows, figs and run samples as tasks.cost.table.costs and the grid give them, from
    {preset: [{target: (price per hour, [tokens/s per run], failed attempts, attempts)}, ...]} with the
    windows newest first (period j ends j grid strides before `end`)."""
    opts = opts or CostOptions(draws=400)
    rows, figs, samples = [], {}, {}
    back = timedelta(days=stride(WINDOW_DAYS) * STEP_DAYS)
    for preset, windows in spec.items():
        for period, targets in enumerate(windows):
            w_end = end - back * period
            for target, (price, runs, failed, attempts) in targets.items():
                fig = figure(price, np.sort(np.array(runs, dtype=float)), failed, attempts, 0.005, opts,
                             row_rng(opts, target, preset))
                figs[(period, target, preset)] = fig
                samples[(period, target, preset)] = list(runs)
                rows.append({"period": period, "target": target, "preset": preset, "currency": opts.currency,
                             "window_start": w_end - timedelta(days=WINDOW_DAYS), "window_end": w_end,
                             "runs": len(runs), "cost_now_per_mtok": fig.cost_per_mtok,
                             **{k: getattr(fig, k) for k in ("cost_per_mtok", "cost_lo", "cost_hi", "price_per_hour",
                                                             "tokens_per_s", "p", "R", "failed_attempts", "attempts")}})
    return rows, figs, samples


# One preset per kind. A noisy partner (3 runs, +-30%) keeps the gap's interval wide, so a throughput or a
# failure-rate shift is told as itself rather than as a gap shift (one told change per cause).
NOISY = [700.0, 1000.0, 1300.0]
SPEC = {
    "sample-1b": [{A: (1.10, spread(1000), 0, 10), B: (1.20, spread(1800), 0, 10)},
                  {A: (1.10, spread(1000), 0, 10), B: (1.20, spread(900), 0, 10)}],
    "sample-8b": [{A: (1.60, spread(1000), 0, 10), B: (1.00, spread(1000), 0, 10)},
                  {A: (1.10, spread(1000), 0, 10), B: (1.00, spread(1000), 0, 10)}],
    "sample-13b": [{A: (1.00, spread(1060), 0, 10), C: (1.60, NOISY, 0, 3)},
                   {A: (1.00, spread(1000), 0, 10), C: (1.60, NOISY, 0, 3)}],
    "sample-70b": [{A: (1.00, spread(1000), 12, 52), C: (1.60, NOISY, 0, 3)},
                   {A: (1.00, spread(1000), 1, 41), C: (1.60, NOISY, 0, 3)}],
}


def cost_samples(now: datetime):
    """The four cost-based sample changes (cheapest, gap, throughput, failure rate), from the real decisions."""
    rows, figs, runs = world(SPEC, now)
    facts = Facts(price_periods=[], env=lambda *_: [], steps=[], samples=runs)
    return decide(rows, figs, facts, AlertConfig())


def samples(link: str | None, now: datetime | None = None) -> list[Alert]:
    """One Alert per costgap event, in EVENTS order, each summary starting with PREFIX."""
    now = now or datetime.now(timezone.utc)
    changes = cost_samples(now)
    changes += failure_streaks([{"target": C, "compare_run_id": f"sample-run-{i}", "status": "crashed",
                                 "message": "crash: no live worker on work pool 'sample-pool'", "ended_at": now - timedelta(days=2 - i)}
                                for i in range(3)])
    changes += price_changes([{"target": A, "provider": "sample-cloud", "region": "sample-region",
                               "instance_type": "sample.gn7i", "billing_mode": "on_demand", "currency": "USD",
                               "previous_price": 1.10, "price_per_hour": 0.99, "effective_from": now,
                               "source": "sample price file", "imported_at": now}])
    changes += quarantined([{"bundle_id": "0" * 64, "kind": "quarantined", "target": B, "source_uri": "inbox/sample.json",
                             "reason": "expectation failed: tokens_per_s > 0", "field": "finetune.tokens_per_s",
                             "quarantined_at": now}])
    alerts = sorted(events(changes, link), key=lambda a: EVENTS.index(a.event))
    for a in alerts:
        a.summary = PREFIX + a.summary
        a.payload["summary"] = a.summary
        a.payload["sample"] = True
    return alerts
