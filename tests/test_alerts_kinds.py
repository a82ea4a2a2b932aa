"""Every told change is true: one change of each kind planted in a real DuckDB warehouse is told once, with
its kind; nothing is told for a preset one target ran; and every figure a Recent changes row quotes is what
`costgap gap A B --between <before> --and <after>` prints for its two windows of the one grid.

    .venv/bin/pytest -q tests/test_alerts_kinds.py

Facts go in through tests/cost_support.py (each target its own preset, so causes do not mix):
- p-cheap: c2 doubles its tokens/s: the cheapest changes from c1 to c2;
- p-gap: g1 slows 20% against g2, the cheapest: the gap shifts (the slow-down is its evidence, not a
  throughput shift of its own);
- p-speed: s1 speeds up 6% (tight runs); its partner s2 is so noisy that the gap stays inside its interval:
  a throughput shift;
- p-fail: f1's failed attempts go 1/41 -> 12/52 (partner noisy): a failure-rate shift;
- a new price period for g2 that starts after the newest run (no window sees it yet): a price change;
- a quarantined bundle; and tiny, run by `solo` only, with a big throughput and failure step: nothing.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone

import pytest
from typer.testing import CliRunner

from cli.main import app
from tasks.alerts import AlertConfig, pending, recent_changes
from tasks.alerts.config import (CHEAPEST_CHANGED, DATA_QUARANTINED, FAILURE_RATE_SHIFTED, GAP_SHIFTED,
                                 PRICE_CHANGED, THROUGHPUT_SHIFTED)
from tasks.alerts.samples import NOISY, spread
from tests.cost_support import T0, add_env, add_price, add_run, add_target, warehouse

NOW = datetime.now(timezone.utc)
END = T0 - timedelta(days=1)  # the newest run: the grid's windows end here, 35 days apart
BEFORE = [END - timedelta(days=50 - i) for i in range(10)]  # inside the window (END - 65 d, END - 35 d]
AFTER = [END - timedelta(days=18 - 2 * i) for i in range(10)]  # inside (END - 30 d, END]; the last one is END


def _runs(con, target: str, preset: str, when: list[datetime], tokens: list[float], failed: list[int] | None = None,
          completed: int = 4) -> None:
    for i, (t, x) in enumerate(zip(when, tokens)):
        add_run(con, f"{target}-{preset}-{t:%m%d%H}", target, t, x, preset=preset, failed=(failed or [0] * 10)[i],
                completed=completed)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    path = tmp_path_factory.mktemp("kinds") / "w.duckdb"
    con = warehouse(path)
    prices = {"c1": 1.0, "c2": 1.0, "g1": 1.2, "g2": 1.0, "s1": 1.0, "s2": 1.6, "f1": 1.0, "f2": 1.6, "solo": 0.1}
    for t, amount in prices.items():
        add_target(con, t, "cloud", "r1", f"type-{t}")
        add_price(con, "cloud", "r1", f"type-{t}", amount)
    add_env(con, "env0")
    _runs(con, "c1", "p-cheap", BEFORE, spread(1000)), _runs(con, "c1", "p-cheap", AFTER, spread(1000))
    _runs(con, "c2", "p-cheap", BEFORE, spread(800)), _runs(con, "c2", "p-cheap", AFTER, spread(1600))
    _runs(con, "g1", "p-gap", BEFORE, spread(1000)), _runs(con, "g1", "p-gap", AFTER, spread(800))
    _runs(con, "g2", "p-gap", BEFORE, spread(1000)), _runs(con, "g2", "p-gap", AFTER, spread(1000))
    _runs(con, "s1", "p-speed", BEFORE, spread(1000)), _runs(con, "s1", "p-speed", AFTER, spread(1060))
    _runs(con, "f1", "p-fail", BEFORE, spread(1000), [1] + [0] * 9)
    _runs(con, "f1", "p-fail", AFTER, spread(1000), [2, 2, 2, 1, 1, 1, 1, 1, 1, 0])
    for partner, preset in (("s2", "p-speed"), ("f2", "p-fail")):
        _runs(con, partner, preset, BEFORE[:3], NOISY, completed=1), _runs(con, partner, preset, AFTER[:3], NOISY, completed=1)
    _runs(con, "solo", "tiny", BEFORE, spread(1000), [0] * 10)
    _runs(con, "solo", "tiny", AFTER, spread(1500), [3] * 10)
    add_price(con, "cloud", "r1", "type-g2", 0.9, effective_from=END + timedelta(days=1), seen=NOW)
    con.execute("insert into quarantine (bundle_id, source_uri, target, reason, failed, raw, quarantined_at, kind) "
                "values (?, 'inbox/x.json', 'g1', 'expectation failed', null, null, ?, 'quarantined')", ["q" * 64, NOW])
    con.execute("checkpoint")
    con.close()
    return path


def test_each_planted_change_is_told_once_with_its_kind(planted):
    with warehouse(planted) as con:
        alerts, ev = pending(con, AlertConfig(), NOW, "https://costgap.example/")
        rows = recent_changes(con, now=NOW)
    assert ev.errors == []
    told = sorted((c.event, c.target, c.payload.get("preset")) for a in alerts for c in a.changes)
    assert told == [(CHEAPEST_CHANGED, "c2", "p-cheap"), (DATA_QUARANTINED, "g1", None),
                    (FAILURE_RATE_SHIFTED, "f1", "p-fail"), (GAP_SHIFTED, "g1", "p-gap"),
                    (PRICE_CHANGED, "g2", None), (THROUGHPUT_SHIFTED, "s1", "p-speed")]
    assert sorted(r["kind"] for r in rows) == ["cheapest", "failure_rate", "gap", "price", "quarantined", "throughput"]
    assert not [r for r in rows if r["target"] == "solo" or r["preset"] == "tiny"]  # one target: no pair, no gap
    by = {r["kind"]: r["payload"] for r in rows}
    assert by["gap"]["main_term"] == "throughput" and by["gap"]["cheapest"] == "g2"
    assert by["cheapest"]["old_target"] == "c1" and by["cheapest"]["new_target"] == "c2"
    for r in rows:
        for item in r["payload"].get("evidence", []):  # only what moved, each term by more than 1 log point
            assert abs(item["log_points"]) > 1 and item["lines"], (r["kind"], item)


def _cli(*args: str) -> dict:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def _same(a, b) -> bool:
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-15)


def test_every_recent_change_row_equals_costgap_gap_between_its_windows(planted):
    path = planted
    with warehouse(path) as con:
        rows = [r for r in recent_changes(con, now=NOW) if "before" in r["payload"]]
    assert len(rows) == 4
    for r in rows:
        p = r["payload"]
        between = f"{p['before']['start']}..{p['before']['end']}"
        and_ = f"{p['after']['start']}..{p['after']['end']}"
        for key, side in (("before", "window1"), ("after", "window2")):
            w = p[key]
            res = _cli("gap", w["a"], w["b"], "--preset", p["preset"], "--between", between, "--and", and_, "--json",
                       "--warehouse", str(path))[side]
            assert (res["window"]["start"], res["window"]["end"]) == (
                datetime.fromisoformat(w["start"]).isoformat(), datetime.fromisoformat(w["end"]).isoformat())
            for mine, theirs in (("cost_a", "cost_a"), ("cost_b", "cost_b"), ("gap", "gap"), ("gap_lo", "gap_lo"),
                                 ("gap_hi", "gap_hi")):
                assert _same(w[mine], res[theirs]), (r["kind"], key, mine)
            for t in ("price", "throughput", "reliability"):
                assert _same(w["terms"][t], res["terms"][t]), (r["kind"], key, t)
            for s in ("a", "b"):
                for k in ("price_per_hour", "tokens_per_s", "failed_attempts", "attempts", "R"):
                    assert _same(w["figures"][s][k], res["components"][s][k]), (r["kind"], key, s, k)
            assert w["gap"] > 0 or r["kind"] != "cheapest"  # the dearer against the cheapest, in each window
        # the windows are two of the chart's: 30 days each, ending on the weekly grid, sharing no run
        ends = [datetime.fromisoformat(p[k]["end"]) for k in ("before", "after")]
        assert all((e - datetime.fromisoformat(p[k]["start"])) == timedelta(days=30) for e, k in zip(ends, ("before", "after")))
        assert all((END - e) % timedelta(days=7) == timedelta(0) for e in ends) and ends[0] <= datetime.fromisoformat(p["after"]["start"])
        assert f"{p['after']['gap']:+.1%}" in r["summary"] and f"{p['before']['gap']:+.1%}" in r["summary"]
