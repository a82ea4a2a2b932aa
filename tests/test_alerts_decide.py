"""The change decisions, table-driven: figures come from the cost model (tasks.cost.model.figure), the
decisions only compare them. Noise that stays inside the interval is no change; one cause, one change.

    .venv/bin/pytest -q tests/test_alerts_decide.py
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tasks.alerts.config import (CHEAPEST_CHANGED, FAILURE_RATE_SHIFTED, GAP_SHIFTED, TARGET_FAILED,
                                 THROUGHPUT_SHIFTED, AlertConfig)
from tasks.alerts.decide import failure_streaks, price_changes, quarantined
from tasks.alerts.moves import Facts, decide
from tasks.alerts.samples import NOISY, SPEC, spread, world

END = datetime(2026, 11, 30, tzinfo=timezone.utc)
STEADY, FAST, NOISE = spread(1000), spread(2000), spread(1003)  # NOISE: a hair faster, inside the interval


def _decide(spec: dict, cfg: AlertConfig = AlertConfig()):
    rows, figs, runs = world(spec, END)
    return decide(rows, figs, Facts(price_periods=[], env=lambda *_: [], steps=[], samples=runs), cfg)


def ok(price: float, runs: list[float], failed: int = 0, attempts: int = 10) -> tuple:
    return (price, runs, failed, attempts)


@pytest.mark.parametrize("name, windows, expected", [
    ("a stays cheapest", [{"a": ok(1.0, STEADY), "b": ok(1.5, STEADY)}, {"a": ok(1.0, STEADY), "b": ok(1.5, STEADY)}], []),
    ("b becomes clearly cheaper", [{"a": ok(1.0, STEADY), "b": ok(1.0, FAST)}, {"a": ok(1.0, STEADY), "b": ok(1.5, STEADY)}],
     [("a", "b", 0)]),
    ("b cheaper by noise only", [{"a": ok(1.0, STEADY), "b": ok(1.0, NOISE)}, {"a": ok(1.0, STEADY), "b": ok(1.01, STEADY)}],
     []),
    ("one target in the newest window: no pair, nothing told", [{"b": ok(1.0, FAST)},
                                                                {"a": ok(1.0, STEADY), "b": ok(1.5, STEADY)}], []),
    ("a missing window does not flip it there and back", [{"a": ok(1.0, STEADY), "b": ok(1.5, STEADY)}, {"b": ok(1.5, STEADY)},
                                                          {"a": ok(1.0, STEADY), "b": ok(1.5, STEADY)}], []),
    ("a -> b -> a over three windows", [{"a": ok(1.0, STEADY), "b": ok(2.0, STEADY)}, {"a": ok(1.0, STEADY), "b": ok(1.0, FAST)},
                                        {"a": ok(1.0, STEADY), "b": ok(2.0, STEADY)}], [("a", "b", 1), ("b", "a", 0)]),
])
def test_cheapest_changes(name, windows, expected):
    got = [c for c in _decide({"1b": windows}) if c.event == CHEAPEST_CHANGED]
    assert [(c.payload["old_target"], c.payload["new_target"], c.period) for c in got] == expected, name
    for c in got:
        p, (old, new) = c.payload, (c.payload["old_target"], c.payload["new_target"])
        assert c.key == "cheapest/1b" and c.fingerprint == c.target == new and c.related == (old,)
        # each side in its own window, the headline's way round: the dearer against the cheapest
        assert (p["before"]["a"], p["before"]["b"], p["after"]["a"], p["after"]["b"]) == (new, old, old, new)
        assert p["before"]["gap"] > 0 and 0 < p["after"]["gap_lo"] <= p["after"]["gap"] == p["gap"]
        assert p["before"]["end"] <= p["after"]["start"]  # windows that share no run
        assert p["old_cost_per_mtok"] == p["before"]["cost_b"] and p["new_cost_per_mtok"] == p["after"]["cost_b"]
        assert f"{old} costs {p['after']['gap']:+.1%} more" in c.summary and f"{new} is now the cheapest" in c.summary
        # nothing else is told for the same cause (b's speed-up is the evidence here)
        assert [e["term"] for e in p["evidence"]] and all(abs(e["log_points"]) > 1 for e in p["evidence"])


def _gap(now: float, before: float, runs_b=STEADY) -> dict:
    """b is the cheapest at price 1.0; a's price sets its gap (1 + gap = price ratio)."""
    return {"1b": [{"a": ok(1.0 + now, STEADY), "b": ok(1.0, runs_b)}, {"a": ok(1.0 + before, STEADY), "b": ok(1.0, runs_b)}]}


@pytest.mark.parametrize("name, spec, expected", [
    ("steady gap", _gap(0.10, 0.10), []),
    ("noise inside the earlier interval", _gap(0.102, 0.10), []),
    ("left the interval", _gap(0.25, 0.10), [0]),
    ("left a narrow interval by less than min_move", _gap(0.115, 0.10), []),
])
def test_gap_shifts(name, spec, expected):
    got = _decide(spec, AlertConfig(min_gap_move=0.02))
    assert [c.period for c in got] == expected, name
    for c in got:
        p = c.payload
        assert c.event == GAP_SHIFTED and c.key == "gap/1b/a/b" and c.related == ("b",) and p["cheapest"] == "b"
        assert p["main_term"] == "price" and [e["term"] for e in p["evidence"]] == ["price"]
        assert not p["before"]["gap_lo"] <= p["after"]["gap"] <= p["before"]["gap_hi"]
        assert (p["before"]["a"], p["before"]["b"]) == (p["after"]["a"], p["after"]["b"]) == ("a", "b")


def test_each_cause_is_told_once_with_its_kind():
    got = _decide(SPEC)
    assert sorted((c.event, c.payload["preset"], c.target) for c in got) == [
        (CHEAPEST_CHANGED, "sample-1b", "sample-v100"), (FAILURE_RATE_SHIFTED, "sample-70b", "sample-a10"),
        (GAP_SHIFTED, "sample-8b", "sample-a10"), (THROUGHPUT_SHIFTED, "sample-13b", "sample-a10")]
    by = {c.event: c.payload for c in got}
    assert [e["term"] for e in by[THROUGHPUT_SHIFTED]["evidence"]] == ["throughput"]
    assert [e["term"] for e in by[FAILURE_RATE_SHIFTED]["evidence"]] == ["reliability"]
    assert by[FAILURE_RATE_SHIFTED]["p_value"] < 0.05 and by[THROUGHPUT_SHIFTED]["p_value"] < 0.01


def test_a_preset_one_target_ran_tells_nothing():
    solo = {"tiny": [{"local": ok(0.1, spread(1200), 8, 20)}, {"local": ok(0.2, spread(800), 0, 20)}]}
    assert _decide(solo) == []
    noisy_pair = {"13b": [{"a": ok(1.0, STEADY), "c": ok(1.6, NOISY, 0, 3)}, {"c": ok(1.6, NOISY, 0, 3)}]}
    assert _decide(noisy_pair) == []  # a pair in one window only: nothing to compare


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
