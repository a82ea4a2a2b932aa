"""One sample of each costgap event, for `costgap alerts test`: made by the same decision functions as
real ones, from figures of the same cost model, so a sample has exactly a real event's shape.

    python -c "from tasks.alerts.samples import samples; print([a.summary for a in samples('https://example.org')])"
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

from tasks.alerts.decide import (cheapest_changes, failure_streaks, gap_shifts, price_changes, quarantined)
from tasks.alerts.policy import Alert, events
from tasks.cost.model import CostOptions, figure, row_rng
from tasks.cost.table import gap_history

A, B, C = "sample-a10", "sample-v100", "sample-h100"  # clearly not real targets
PRESET = "sample-1b"
PREFIX = "[costgap sample] "  # every sample's summary says it is one


def _figures(now: datetime):
    """Two windows of two targets' costs (B becomes clearly cheaper in the newest), from the cost model."""
    opts = CostOptions(draws=400)
    rows, figs = [], {}
    for period, spec in enumerate(({A: (1.10, 1000.0), B: (1.20, 1800.0)}, {A: (1.10, 1000.0), B: (1.20, 900.0)})):
        end = now - timedelta(days=30 * period)
        for target, (price, tps) in spec.items():
            fig = figure(price, np.array([tps * 0.99, tps, tps * 1.01]), 0, 3, 0.01, opts, row_rng(opts, target, PRESET))
            figs[(period, target, PRESET)] = fig
            rows.append({"period": period, "target": target, "preset": PRESET, "cost_per_mtok": fig.cost_per_mtok,
                         "cost_lo": fig.cost_lo, "cost_hi": fig.cost_hi, "currency": "USD",
                         "window_start": end - timedelta(days=30), "window_end": end, "runs": 3,
                         "cost_now_per_mtok": fig.cost_per_mtok,
                         **{k: getattr(fig, k) for k in ("price_per_hour", "tokens_per_s", "p", "R", "failed_attempts",
                                                         "attempts")}})
    return rows, figs


def samples(link: str | None, now: datetime | None = None) -> list[Alert]:
    """One Alert per costgap event, in EVENTS order, each summary starting with PREFIX."""
    now = now or datetime.now(timezone.utc)
    rows, figs = _figures(now)
    changes = cheapest_changes(rows, figs)[-1:]
    changes += gap_shifts(gap_history(rows, figs, B), now, 30.0, 0.02)[-1:]
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
    alerts = events(changes, link)
    for a in alerts:
        a.summary = PREFIX + a.summary
        a.payload["summary"] = a.summary
        a.payload["sample"] = True
    return alerts
