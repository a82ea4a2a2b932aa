"""The change decisions, table-driven: figures come from the cost model (tasks.cost.model.figure), the
decisions only compare them. Noise that stays inside the interval is no change.

    .venv/bin/pytest -q tests/test_alerts_decide.py
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from tasks.alerts.config import CHEAPEST_CHANGED, GAP_SHIFTED, TARGET_FAILED
from tasks.alerts.decide import (changepoint_shifts, cheapest_changes, failure_streaks, gap_shifts, price_changes,
                                 quarantined)
from tasks.cost.model import CostOptions, figure, row_rng

END = datetime(2026, 11, 30, tzinfo=timezone.utc)
OPTS = CostOptions(draws=400)


def _costs(windows: list[dict[str, tuple[float, list[float]] | None]], preset: str = "1b"):
    """rows + figs as tasks.cost.table.costs returns them, for windows given newest first:
    [{target: (price per hour, tokens/s of each run)}]; None = no cost (no price)."""
    rows, figs = [], {}
    for period, targets in enumerate(windows):
        for target, spec in targets.items():
            price, samples = spec if spec else (None, [1000.0])
            fig = figure(price, np.array(samples), 0, len(samples), 0.01, OPTS, row_rng(OPTS, target, preset))
            figs[(period, target, preset)] = fig
            end = END - timedelta(days=30 * period)
            rows.append({"period": period, "target": target, "preset": preset, "currency": "USD",
                         "window_start": end - timedelta(days=30), "window_end": end, "runs": len(samples),
                         "cost_now_per_mtok": fig.cost_per_mtok,
                         **{k: getattr(fig, k) for k in ("cost_per_mtok", "cost_lo", "cost_hi", "price_per_hour",
                                                         "tokens_per_s", "p", "R", "failed_attempts", "attempts")}})
    return rows, figs


STEADY = [1000.0, 1010.0, 990.0]
FAST = [2000.0, 2020.0, 1980.0]
NOISE = [1004.0, 1012.0, 995.0]  # a hair faster than STEADY: well inside the interval


@pytest.mark.parametrize("name, windows, standing, expected", [
    ("a stays cheapest", [{"a": (1.0, STEADY), "b": (1.5, STEADY)}, {"a": (1.0, STEADY), "b": (1.5, STEADY)}],
     None, []),
    ("b becomes clearly cheaper", [{"a": (1.0, STEADY), "b": (1.0, FAST)}, {"a": (1.0, STEADY), "b": (1.5, STEADY)}],
     None, [("a", "b", 0)]),
    ("b cheaper by noise only", [{"a": (1.0, STEADY), "b": (1.0, NOISE)}, {"a": (1.0, STEADY), "b": (1.01, STEADY)}],
     None, []),
    ("the standing target has no cost this window: hold", [{"b": (1.0, STEADY)}, {"a": (1.0, STEADY), "b": (1.5, STEADY)}],
     None, []),
    ("the standing target has no price this window: hold", [{"a": None, "b": (1.0, STEADY)},
                                                             {"a": (1.0, STEADY), "b": (1.5, STEADY)}], None, []),
    ("a missing week does not flip it there and back", [{"a": (1.0, STEADY), "b": (1.5, STEADY)}, {"b": (1.5, STEADY)},
                                                        {"a": (1.0, STEADY), "b": (1.5, STEADY)}], None, []),
    ("told b, a is clearly cheaper now", [{"a": (1.0, STEADY), "b": (2.0, STEADY)}, {"a": (1.0, STEADY), "b": (2.0, STEADY)}],
     {"1b": "b"}, [("b", "a", 1)]),
    ("told a, and a still is", [{"a": (1.0, STEADY), "b": (2.0, STEADY)}], {"1b": "a"}, []),
    ("a -> b -> a over three windows", [{"a": (1.0, STEADY), "b": (2.0, STEADY)}, {"a": (1.0, STEADY), "b": (1.0, FAST)},
                                        {"a": (1.0, STEADY), "b": (2.0, STEADY)}], None, [("a", "b", 1), ("b", "a", 0)]),
])
def test_cheapest_changes(name, windows, standing, expected):
    rows, figs = _costs(windows)
    got = cheapest_changes(rows, figs, standing)
    assert [(c.payload["old_target"], c.payload["new_target"], c.period) for c in got] == expected, name
    for c in got:
        assert c.event == CHEAPEST_CHANGED and c.key == "cheapest/1b" and c.fingerprint == c.target
        assert c.payload["gap_hi"] < 0 and c.payload["gap_lo"] <= c.payload["gap"] <= c.payload["gap_hi"]
        assert c.payload["new_cost_per_mtok"] < c.payload["old_cost_per_mtok"]
        assert c.related == (c.payload["old_target"],) and "cheapest target is now" in c.summary


def _gap_row(period: int, gap: float, half: float, target: str = "a", preset: str = "1b") -> dict:
    end = END - timedelta(days=7 * period)
    return {"period_start": end - timedelta(days=7), "period_end": end, "preset": preset, "target": target,
            "baseline": "base", "gap": gap, "gap_lo": gap - half, "gap_hi": gap + half, "cost_per_mtok": 1 + gap,
            "baseline_cost_per_mtok": 1.0, "ln_price": 0.0, "ln_throughput": float(np.log1p(gap)),
            "ln_reliability": 0.0, "currency": "USD"}


@pytest.mark.parametrize("name, history, expected", [
    ("steady gap", [_gap_row(1, 0.10, 0.03), _gap_row(0, 0.10, 0.03)], []),
    ("noise inside the previous interval", [_gap_row(1, 0.10, 0.03), _gap_row(0, 0.12, 0.03)], []),
    ("left the interval", [_gap_row(1, 0.10, 0.03), _gap_row(0, 0.25, 0.03)], [0]),
    ("left a narrow interval by less than min_move", [_gap_row(1, 0.100, 0.002), _gap_row(0, 0.110, 0.002)], []),
    ("a week without data: compared with the one before", [_gap_row(3, 0.10, 0.03), _gap_row(0, -0.20, 0.03)], [0]),
    ("a shift two periods back, stable since", [_gap_row(2, 0.10, 0.03), _gap_row(1, 0.30, 0.03),
                                                _gap_row(0, 0.31, 0.03)], [1]),
])
def test_gap_shifts(name, history, expected):
    got = gap_shifts(history, END, 7.0, 0.02)
    assert [c.period for c in got] == expected, name
    for c in got:
        assert c.event == GAP_SHIFTED and c.key == "gap/1b/a/base" and c.related == ("base",)
        assert c.payload["reason"] == "interval" and c.payload["main_term"] == "throughput"
        assert not c.payload["previous_gap_lo"] <= c.payload["gap"] <= c.payload["previous_gap_hi"]


def test_changepoint_findings_become_shifts_with_the_environment_change():
    f = {"target": "a", "preset": "1b", "at": "2026-11-20T00:00:00+00:00", "run_before": "r1", "run_after": "r2",
         "runs_before": 3, "runs_after": 3, "tokens_per_s_before": 1000.0, "tokens_per_s_after": 900.0,
         "shift": -0.1, "shift_lo": -0.12, "shift_hi": -0.08, "p_value": 0.001, "confidence": 0.999,
         "significant": True, "changed": [{"field": "driver", "before": "550", "after": "560"}],
         "summary": "a/1b at 2026-11-20: driver 550 -> 560: tokens/s -10.0%"}
    (c,) = changepoint_shifts([f])
    assert (c.event, c.key, c.fingerprint, c.target) == (GAP_SHIFTED, "shift/a/1b/r2", "r2", "a")
    assert c.payload["env_changes"] == [{"field": "driver", "before": "550", "after": "560"}]
    assert c.payload["reason"] == "changepoint" and c.summary == f["summary"]


def _dispatches(target: str, statuses: str) -> list[dict]:
    """'LFFC' = landed, failed, failed, crashed (T = timeout, Q = quarantined, M = missing), one a day."""
    code = {"L": "landed", "F": "failed", "C": "crashed", "T": "timeout", "Q": "quarantined", "M": "missing",
            "D": "duplicate"}
    return [{"target": target, "compare_run_id": f"run{i}", "status": code[s], "message": f"m{i}",
             "ended_at": END + timedelta(days=i)} for i, s in enumerate(statuses)]


@pytest.mark.parametrize("statuses, expected", [
    ("LLL", []),
    ("LF", [(1, True)]),
    ("LFFC", [(3, True)]),
    ("FFLT", [(2, False), (1, True)]),
    ("FQF", [(1, False), (1, True)]),  # a quarantined bundle means the target ran: the streak is broken
    ("T", [(1, True)]),
    ("LM", []),  # an empty inbox is not a failure of the target
])
def test_failure_streaks(statuses, expected):
    got = failure_streaks(_dispatches("c", statuses))
    assert [(c.payload["consecutive_failures"], c.payload["ongoing"]) for c in got] == expected
    for c in got:
        assert c.event == TARGET_FAILED and c.key == "failed/c"
        assert c.fingerprint == f"{c.episode}#{c.payload['consecutive_failures']}"


def test_failure_streaks_are_per_target():
    got = failure_streaks(_dispatches("a", "LF") + _dispatches("b", "FF"))
    assert sorted((c.target, c.payload["consecutive_failures"]) for c in got) == [("a", 1), ("b", 2)]


def test_price_changes_and_quarantine():
    (p,) = price_changes([{"target": "a", "provider": "x", "region": "r", "instance_type": "i",
                           "billing_mode": "on_demand", "currency": "USD", "previous_price": 2.0, "price_per_hour": 1.5,
                           "effective_from": END, "source": "file.csv", "imported_at": END}])
    assert (p.key, p.fingerprint) == ("price/a/on_demand", "2026-11-30T00:00:00Z")
    assert p.payload["relative_change"] == pytest.approx(-0.25) and "2 USD/h -> 1.5 USD/h (-25.0%)" in p.summary
    (q,) = quarantined([{"bundle_id": "f" * 64, "kind": "rejected", "target": None, "source_uri": "x.json",
                         "reason": "not JSON", "field": None, "quarantined_at": END}])
    assert (q.key, q.target) == ("quarantine/" + "f" * 64, None) and "unknown target" in q.summary
