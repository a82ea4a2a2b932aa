"""Fan-out's pure parts: Prefect state histories -> attempts, error kinds, outcomes, the results
store and the rerun-rate query.

    .venv/bin/pytest -q tests/test_compare_units.py
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from prefect.states import AwaitingRetry, Completed, Crashed, Failed, Pending, Retrying, Running, Scheduled

from tasks.dispatch import fanout, prefect_runs
from tasks.dispatch.child import classify_error
from tasks.dispatch.fanout import Outcome
from tasks.dispatch.results import ResultsStore, ResultsStoreError

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def _at(state, seconds: float):
    state.timestamp = T0 + timedelta(seconds=seconds)
    return state


@pytest.mark.parametrize("message, rc, kind", [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", 1, "oom"),
    ("RuntimeError: CUDA error: an illegal memory access was encountered", 1, "cuda_error"),
    ("probe timed out after 900 s", None, "timeout"),
    ("Spot instance interruption notice received", 1, "preempted"),
    ("crash: no live worker on work pool 'p'", None, "crash"),
    ("", -9, "crash"),
    ("ValueError: bad input", 1, "other"),
])
def test_classify_error(message, rc, kind):
    assert classify_error(message, rc) == kind


def test_retried_task_is_two_attempts_first_failed():
    states = [_at(Pending(), 0), _at(Running(), 1), _at(AwaitingRetry(message="CUDA out of memory"), 5),
              _at(Retrying(), 7), _at(Completed(), 12)]
    rows = prefect_runs.attempts_from_states(states[::-1], task="probe_child", target="a", source_id="tr1")
    assert [(r["attempt"], r["state"], r["error_kind"]) for r in rows] == [(1, "failed", "oom"), (2, "completed", None)]
    assert [r["duration_s"] for r in rows] == [4.0, 5.0]
    assert all(r["source"] == "prefect" and r["source_id"] == "tr1" for r in rows)


def test_crashed_flow_closes_its_open_task_runs():
    flow = [_at(Scheduled(), 0), _at(Pending(), 1), _at(Running(), 2),
            _at(Crashed(message="crash: no live worker on work pool 'pool-b'"), 30)]
    task = [_at(Pending(), 3), _at(Running(), 3)]
    rows = prefect_runs.flow_attempts(flow, [("probe_child", "tr1", task)], target="b", flow_run_id="fr1")
    assert [(r["task"], r["state"], r["error_kind"]) for r in rows] == [
        ("probe_flow", "crashed", "crash"), ("probe_child", "crashed", "crash")]
    assert rows[1]["message"].startswith("crash: no live worker")


def test_flow_cancelled_before_it_ran_is_one_attempt_and_running_flow_is_none():
    never_ran = [_at(Scheduled(), 0), _at(Failed(message="timeout: no result within 60 s"), 60)]
    rows = prefect_runs.attempts_from_states(never_ran, task="probe_flow", target="a", source_id="f")
    assert [(r["state"], r["error_kind"], r["duration_s"]) for r in rows] == [("failed", "timeout", 0.0)]
    still = [_at(Scheduled(), 0), _at(Running(), 1)]
    assert prefect_runs.attempts_from_states(still, task="probe_flow", target="a", source_id="f") == []


def test_worker_liveness_follows_prefects_rule():
    now = T0
    fresh = SimpleNamespace(last_heartbeat_time=now - timedelta(seconds=5), heartbeat_interval_seconds=2)
    stale = SimpleNamespace(last_heartbeat_time=now - timedelta(seconds=7), heartbeat_interval_seconds=2)
    default = SimpleNamespace(last_heartbeat_time=now - timedelta(seconds=80), heartbeat_interval_seconds=None)
    assert fanout.worker_live(fresh, now) and not fanout.worker_live(stale, now)
    assert fanout.worker_live(default, now)  # 30 s default interval x 3
    assert not fanout.worker_live(SimpleNamespace(last_heartbeat_time=None), now)


@pytest.mark.parametrize("statuses, expected", [
    (["landed", "duplicate"], "completed"),
    (["landed", "crashed"], "partial"),
    (["timeout", "failed"], "failed"),
])
def test_overall(statuses, expected):
    status, message = fanout.overall([Outcome(f"t{i}", "pool", s) for i, s in enumerate(statuses)])
    assert status == expected
    if expected != "completed":
        assert "(" + statuses[-1] + ")" in message


def test_landing_summary_sets_status_and_points_attempts_at_the_bundle():
    o = Outcome("a", "pool", "completed", attempts=[{"run_id": None, "task": "probe_flow"}])
    fanout.apply_landing(o, SimpleNamespace(landed=["r1"], duplicates=[], quarantined=[], rejected=[],
                                            as_text=lambda: ""))
    assert o.status == "landed" and fanout.attempt_rows(o)[0]["run_id"] == "r1"
    q = Outcome("b", "pool", "completed")
    fanout.apply_landing(q, SimpleNamespace(landed=[], duplicates=[], quarantined=[("f", "x", "bad")],
                                            rejected=[], as_text=lambda: "quarantined 1"))
    assert q.status == "quarantined" and q.message == "quarantined 1"



def _landed_beside(target: str, refused: list[tuple[str, str]]) -> Outcome:
    o = Outcome(target, "import", "completed")
    return fanout.apply_landing(o, SimpleNamespace(
        landed=[f"{target}-r1"], duplicates=[], quarantined=[(f, "b" * 64, why) for f, why in refused[:1]],
        rejected=refused[1:], as_text=lambda: "landed 1, ..."))


def test_targets_that_landed_beside_refused_files_are_landed_and_the_run_partial_never_failed():
    a = _landed_beside("a", [("inbox-a/bad.json", "expectation failed")])
    b = _landed_beside("b", [("inbox-b/x.json", "not valid JSON"), ("inbox-b/y.json", "field 'target'")])
    assert (a.status, a.label, a.ok) == ("landed", "landed, 1 refused", True)
    assert b.label == "landed, 2 refused" and b.refused[1] == ("inbox-b/y.json", "field 'target'")
    status, message = fanout.overall([a, b])
    assert status == "partial" and "no target landed" not in message
    assert message == "2 of 2 targets landed, 3 file(s) refused: a (1), b (2)"
    lost = Outcome("c", "pool", "crashed")
    assert fanout.overall([a, lost]) == ("partial", "1 of 2 targets landed, 1 file(s) refused: a (1); missing: c (crashed)")
    nothing = fanout.apply_landing(Outcome("d", "import", "completed"), SimpleNamespace(
        landed=[], duplicates=[], quarantined=[], rejected=[("inbox-d/x.json", "cut")], as_text=lambda: "rejected 1"))
    assert nothing.status == "quarantined"
    assert fanout.overall([nothing, lost])[1].startswith("no target landed: d (quarantined), c (crashed)")
    lines = fanout.outcome_lines([fanout.outcome_dict(o) for o in (a, b, lost)])
    assert lines[0].split()[:4] == ["a", "landed,", "1", "refused"]
    assert "      refused inbox-a/bad.json: expectation failed" in lines
    assert "      refused inbox-b/x.json: not valid JSON" in lines and len(lines) == 6

@pytest.mark.parametrize("url", ["local", "memory://costgap-test"])
def test_results_store_round_trip(tmp_path, url):
    store = ResultsStore(tmp_path / "store" if url == "local" else url)
    src = tmp_path / ("ab" * 32 + ".json")
    src.write_text("{}")
    uri = store.put_bundle("aws-g5-xlarge", "1f0c-run", src)
    assert store.list_bundles("aws-g5-xlarge", "1f0c-run") == [uri]
    assert store.list_bundles("aws-g5-xlarge", "other-run") == []
    assert uri in store.list_bundles()
    if url != "local":
        assert uri.startswith("memory://")
    with pytest.raises(ResultsStoreError, match="not a safe path part"):
        store.put_bundle("../etc", "r", src)


def test_rerun_rate_counts_crashed_and_cancelled_flow_runs(warehouse_file):
    from tasks.landing.land import record_prefect_attempts
    from warehouse.db import connect
    from warehouse.sql import load_query

    now = datetime.now(timezone.utc)
    rows = []
    for i, (target, state) in enumerate([("a", "completed"), ("a", "completed"), ("b", "completed"),
                                         ("b", "crashed"), ("b", "cancelled"), ("b", "completed")]):
        rows.append({"run_id": None, "target": target, "task": "probe_flow", "attempt": 1, "state": state,
                     "error_kind": None if state == "completed" else "crash", "message": None,
                     "duration_s": 1.0, "started_at": now - timedelta(days=1 + 40 * (i == 5)), "source_id": f"f{i}"})
    con = connect(str(warehouse_file))
    try:
        assert record_prefect_attempts(con, rows) == 6
        assert record_prefect_attempts(con, rows) == 0  # idempotent on (source_id, task, attempt)
        got = con.execute(load_query("rerun_rate"), [30, None]).fetchall()
    finally:
        con.close()
    by = {(r[0], r[1] > now - timedelta(days=31)): r for r in got}
    recent_b = by[("b", True)]
    assert recent_b[3:6] == (3, 2, pytest.approx(2 / 3))  # attempts, reruns, rerun_rate in the last 30 days
    assert recent_b[8:10] == (1, 1)  # flow_crashed, flow_cancelled
    assert by[("a", True)][5] == 0.0
    assert by[("b", False)][3:6] == (1, 0, 0.0)  # the older window, on its own


def test_a_run_closed_twice_without_running_again_is_one_attempt():
    states = [_at(Scheduled(), 0), _at(Crashed(message="server side"), 5),
              _at(Crashed(message="crash: no live worker on work pool 'p'"), 6)]
    rows = prefect_runs.attempts_from_states(states, task="probe_flow", target="a", source_id="f")
    assert [(r["attempt"], r["state"], r["message"]) for r in rows] == [
        (1, "crashed", "crash: no live worker on work pool 'p'")]


def test_a_hung_probe_child_is_killed_at_its_timeout(tmp_path):
    from tasks.dispatch.child import run_probe_child

    res = run_probe_child("quick", "local", tmp_path, timeout_s=0.5)  # torch alone takes longer to import
    assert not res.ok and res.returncode is None and res.error_kind == "timeout"
    assert "timed out after" in res.stderr_tail and res.duration_s < 10
