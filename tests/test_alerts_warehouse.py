"""The decisions on a real DuckDB warehouse: what is pending, told once, and the site's recent changes.

    .venv/bin/pytest -q tests/test_alerts_warehouse.py

Facts go in through tests/cost_support.py; every figure comes from the cost model (tasks.cost.table).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tasks.alerts import AlertConfig, pending, recent_changes, record
from tasks.alerts.config import CHEAPEST_CHANGED, DATA_QUARANTINED, PRICE_CHANGED, TARGET_FAILED
from tasks.dispatch.fanout import record_dispatches
from tests.cost_support import T0, add_env, add_price, add_run, add_target, warehouse

NOW = datetime.now(timezone.utc)
LINK = "https://costgap.example/index.html"


def _dispatch(con, run: str, target: str, status: str, at: datetime) -> None:
    record_dispatches(con, [{"compare_run_id": run, "target": target, "dispatch": "pool", "status": status,
                             "probe_flow_run_id": None, "run_id": None, "message": f"{status} in {run}",
                             "started_at": at - timedelta(minutes=5), "finished_at": at}])


@pytest.fixture
def con(tmp_path):
    """a and b on one preset: a is cheaper five weeks ago, b (twice as fast) in the last days; c fails."""
    con = warehouse(tmp_path / "w.duckdb")
    for t in ("a", "b", "c"):
        add_target(con, t, "cloud", "r1", f"type-{t}")
        add_price(con, "cloud", "r1", f"type-{t}", 2.0)
    add_env(con, "env0")
    for i, day in enumerate((37, 36, 35)):
        add_run(con, f"a-old{i}", "a", T0 - timedelta(days=day), 1000.0 + i)
        add_run(con, f"b-old{i}", "b", T0 - timedelta(days=day), 600.0 + i)
    for i, day in enumerate((3, 2, 1)):
        add_run(con, f"a-new{i}", "a", T0 - timedelta(days=day), 1000.0 + i)
        add_run(con, f"b-new{i}", "b", T0 - timedelta(days=day), 2000.0 + i)
    _dispatch(con, "run1", "c", "landed", NOW - timedelta(hours=3))
    _dispatch(con, "run2", "c", "failed", NOW - timedelta(hours=2))
    yield con
    con.close()


def _kinds(alerts) -> list[tuple[str, str | None]]:
    return sorted((a.event, a.target) for a in alerts)


def test_pending_tells_each_change_once(con):
    add_price(con, "cloud", "r1", "type-a", 1.5, effective_from=T0 + timedelta(days=1), seen=NOW)  # a new period
    con.execute("insert into quarantine (bundle_id, source_uri, target, reason, failed, raw, quarantined_at, kind) "
                "values (?, 'inbox/x.json', 'b', 'expectation failed', null, null, ?, 'quarantined')", ["q" * 64, NOW])
    alerts, ev = pending(con, AlertConfig(), NOW, LINK)
    assert ev.errors == []
    # b's speed-up is one cause: told as the cheapest change (with the throughput term as evidence), not also
    # as a gap or throughput shift
    assert _kinds(alerts) == [(CHEAPEST_CHANGED, "b"), (DATA_QUARANTINED, "b"), (PRICE_CHANGED, "a"),
                              (TARGET_FAILED, "c")]
    by = {a.event: a for a in alerts}
    cheap = by[CHEAPEST_CHANGED].payload
    assert (cheap["preset"], cheap["old_target"], cheap["new_target"]) == ("1b", "a", "b")
    assert cheap["gap_lo"] > 0 and cheap["link"] == LINK and cheap["main_term"] == "throughput"
    assert cheap["after"]["cost_b"] < cheap["after"]["cost_a"] and cheap["before"]["cost_b"] < cheap["before"]["cost_a"]
    assert by[TARGET_FAILED].payload["consecutive_failures"] == 1
    assert (by[PRICE_CHANGED].payload["old_price_per_hour"], by[PRICE_CHANGED].payload["new_price_per_hour"]) == (2.0, 1.5)
    assert record(con, alerts, NOW, "test", [f"id{i}" for i in range(len(alerts))]) == 4

    again, _ = pending(con, AlertConfig(), NOW + timedelta(minutes=5), LINK)
    assert again == []  # the same compare again: nothing new

    _dispatch(con, "run3", "c", "timeout", NOW + timedelta(hours=1))
    assert pending(con, AlertConfig(), NOW + timedelta(hours=2), LINK)[0] == []  # failing again, within a day
    later, _ = pending(con, AlertConfig(), NOW + timedelta(hours=25), LINK)
    assert [(a.event, a.payload["consecutive_failures"], a.payload["status"]) for a in later] == [
        (TARGET_FAILED, 2, "timeout")]


def test_noise_inside_the_interval_tells_nothing(con):
    con.execute("delete from dispatches")
    for i, day in enumerate((3, 2, 1)):  # b's new runs back at its old level, a hair faster: noise
        con.execute("update finetunes set tokens_per_s = ? where run_id = ?", [601.0 + i, f"b-new{i}"])
    alerts, ev = pending(con, AlertConfig(), NOW, LINK)
    assert alerts == [] and ev.errors == []


def test_recent_changes_rows_for_the_report(con):
    rows = recent_changes(con, now=NOW)
    assert [r["kind"] for r in rows] == ["failed", "cheapest"]  # newest first
    for r in rows:
        assert set(r) == {"at", "event", "kind", "target", "preset", "related", "summary", "payload"}
        assert r["at"].tzinfo is not None and r["summary"]
    cheap = rows[1]
    assert (cheap["target"], cheap["preset"], cheap["related"]) == ("b", "1b", ["a"])
    assert cheap["at"] == T0 - timedelta(days=1)  # the window ends at the newest run


def test_a_missing_fx_rate_skips_the_cost_decisions_with_a_line_and_keeps_the_rest(con):
    add_target(con, "d", "yuan-cloud", "r1", "type-d")
    add_price(con, "yuan-cloud", "r1", "type-d", 10.0, currency="CNY")
    add_run(con, "d0", "d", T0 - timedelta(days=2), 1000.0)
    alerts, ev = pending(con, AlertConfig(), NOW, LINK)
    assert len(ev.errors) == 1 and "FX" in ev.errors[0] and "cheapest/gap/throughput/failure-rate alerts not decided" in ev.errors[0]
    assert _kinds(alerts) == [(TARGET_FAILED, "c")]


def test_the_site_lists_what_the_alerts_tell(con):
    """The overview's "Recent changes" and the alerts read the same decisions: every change an alert tells
    is a row of the site's list, word for word, and the rendered overview shows it."""
    from html import unescape

    from reports.data import load
    from reports.pages.page import render
    from reports.pages.overview import overview

    add_price(con, "cloud", "r1", "type-a", 1.5, effective_from=T0 + timedelta(days=1), seen=NOW)
    alerts, _ = pending(con, AlertConfig(), NOW, LINK)
    told = [(c.event, c.target, c.summary) for a in alerts for c in a.changes]
    assert {e for e, _, _ in told} == {CHEAPEST_CHANGED, PRICE_CHANGED, TARGET_FAILED}

    data = load(con)
    listed = [(r["event"], r["target"], r["summary"]) for r in data.recent_changes.rows]
    assert set(told) <= set(listed) and data.recent_changes.extra["errors"] == []
    assert listed == [(r["event"], r["target"], r["summary"]) for r in recent_changes(con, now=data.today)]
    page = overview(data)
    html = unescape(render(page, data))
    assert "Recent changes" in html and all(s in html for _, _, s in told)
    assert [r["summary"] for r in page.data["overview-recent"]] == [s for _, _, s in listed]


def test_an_empty_warehouse_lists_no_changes(tmp_path):
    con = warehouse(tmp_path / "empty.duckdb")
    assert recent_changes(con, now=NOW) == []
    con.close()
