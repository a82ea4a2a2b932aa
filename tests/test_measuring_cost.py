"""What measuring costs: instance-seconds at the price in force then, per target and month, and the budget.

    .venv/bin/python -m pytest -q tests/test_measuring_cost.py

The arithmetic in these tests is written out by hand from the stated prices and durations, not with
tasks.cost.measuring's functions, so a slip there shows here.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import duckdb
import pytest

from tasks.cost import measuring
from tasks.errors import UserError
from tests.cost_support import add_price, add_target, warehouse

NOV = datetime(2026, 11, 1, tzinfo=timezone.utc)


def _run(con, n: int, target: str, start: datetime, seconds: float, dispatch: str = "pool") -> None:
    measuring.record_runs(con, [{"compare_run_id": f"c{n}", "target": target, "dispatch": dispatch,
                                 "probe_flow_run_id": f"f{n}", "span_source": "prefect", "started_at": start,
                                 "finished_at": start + timedelta(seconds=seconds), "instance_seconds": seconds}])


def _world(path):
    """Two targets: A at 2.00 USD/h all month; B at 3.60 USD/h, raised to 4.80 USD/h on Nov 20."""
    con = warehouse(path)
    add_target(con, "A", "testcloud", "r1", "small.gpu")
    add_target(con, "B", "testcloud", "r1", "big.gpu")
    add_price(con, "testcloud", "r1", "small.gpu", 2.00, effective_from=NOV - timedelta(days=30))
    add_price(con, "testcloud", "r1", "big.gpu", 3.60, effective_from=NOV - timedelta(days=30))
    add_price(con, "testcloud", "r1", "big.gpu", 4.80, effective_from=NOV + timedelta(days=19))
    _run(con, 1, "A", NOV + timedelta(days=2), 600)
    _run(con, 2, "A", NOV + timedelta(days=9), 900)
    _run(con, 3, "B", NOV + timedelta(days=3), 1200)  # at 3.60
    _run(con, 4, "B", NOV + timedelta(days=25), 300)  # at 4.80: the price in force then, not now
    _run(con, 5, "A", NOV + timedelta(days=31), 1800)  # December
    return con


def test_two_targets_known_prices_and_durations_give_the_exact_cost(tmp_path):
    con = _world(tmp_path / "wh.duckdb")
    rows = {(r["target"], r["month"].month): r for r in measuring.monthly(measuring.priced_runs(con, "USD"))}
    a, b, a_dec = rows[("A", 11)], rows[("B", 11)], rows[("A", 12)]
    # A: 600 s + 900 s = 1500 s = 0.41666.. h at 2.00 USD/h
    assert a["cost"] == pytest.approx(1500 / 3600 * 2.00, rel=1e-12)
    assert a["cost"] == pytest.approx(0.8333333333333334, rel=1e-12)
    # B: 1200 s at 3.60 (= 1.20) plus 300 s at 4.80 (= 0.40)
    assert b["cost"] == pytest.approx(1.60, rel=1e-12)
    assert (a["runs"], a["instance_seconds"], b["runs"], b["instance_seconds"]) == (2, 1500, 2, 1500)
    # kept up all November (30 days = 720 h) at the price in force at the month's latest run
    assert a["kept_up_cost"] == pytest.approx(720 * 2.00) and b["kept_up_cost"] == pytest.approx(720 * 4.80)
    # December: 1800 s at 2.00 = 1.00; kept up 31 days = 744 h
    assert a_dec["cost"] == pytest.approx(1.00) and a_dec["kept_up_cost"] == pytest.approx(744 * 2.00)


def test_costs_in_another_reporting_currency_use_the_rate_of_the_runs_day(tmp_path):
    con = _world(tmp_path / "wh.duckdb")
    con.execute("insert into fx_rates values ('EUR', '2026-10-30', 0.80, 'test'), ('EUR', '2026-11-15', 0.90, 'test')")
    rows = {(r["target"], r["month"].month): r for r in measuring.monthly(measuring.priced_runs(con, "EUR"))}
    # B: 1200 s at 3.60 USD on Nov 4 (0.80 EUR/USD) + 300 s at 4.80 USD on Nov 26 (0.90 EUR/USD)
    assert rows[("B", 11)]["cost"] == pytest.approx(1200 / 3600 * 3.60 * 0.80 + 300 / 3600 * 4.80 * 0.90)


def test_a_budget_the_third_run_would_exceed_skips_it_and_says_why(tmp_path):
    """A ran twice in November (600 s, 900 s: 0.8333 USD). Its third run is expected to hold the instance
    for the median, 750 s, at today's 2.00 USD/h = 0.41667 USD: 1.25 in all, over a 1.20 budget."""
    con = _world(tmp_path / "wh.duckdb")
    runs = measuring.priced_runs(con, "USD")
    now = NOV + timedelta(days=15)
    prices = {"A": 2.00, "B": 3.60}
    d_a, d_b = measuring.plan(runs, [("A", 3600), ("B", 3600)], prices,
                              measuring.parse_budget(["A=1.20"]), now)
    assert d_a.skip and d_a.scope == "target" and not d_b.skip
    assert d_a.spent == pytest.approx(0.8333333333333334) and d_a.expected == pytest.approx(750 / 3600 * 2.00)
    assert "would exceed its budget 1.20 USD" in d_a.message
    # the same run under a 1.25 budget fits exactly (not over): dispatched
    assert not measuring.plan(runs, [("A", 3600)], prices, measuring.parse_budget(["A=1.25"]), now)[0].skip
    # a total budget of 3.00 on Nov 15: spent so far 0.8333 (A) + 1.20 (B's Nov 4 run; its Nov 26 run is
    # yet to come) = 2.0333; A's run (0.41667) fits (2.45); then B's, its one run's 1200 s at 3.60 = 1.20,
    # would make 3.65: B is skipped on the total
    d_a, d_b = measuring.plan(runs, [("A", 3600), ("B", 3600)], prices, measuring.parse_budget(["3.0"]), now)
    assert not d_a.skip and d_b.skip and d_b.scope == "total"
    assert d_b.spent == pytest.approx(1500 / 3600 * 2.00 + 1200 / 3600 * 3.60 + 750 / 3600 * 2.00)
    assert d_b.expected == pytest.approx(1200 / 3600 * 3.60)
    # a target never measured is judged on its timeout (the longest it is let go on)
    (d_c,) = measuring.plan(runs, [("C", 7200)], {"C": 1.00}, measuring.parse_budget(["C=1.5"]), now)
    assert d_c.skip and d_c.expected == pytest.approx(2.00)
    # no price in force: cannot be judged, dispatched, said
    (d_n,) = measuring.plan(runs, [("N", 60)], {}, measuring.parse_budget(["N=0"]), now)
    assert not d_n.skip and "no price in force" in d_n.message


@pytest.mark.parametrize("specs, total, per", [
    (["500"], 500.0, {}),
    (["500", "aws-p5-48xlarge=150"], 500.0, {"aws-p5-48xlarge": 150.0}),
    ({"total": 10, "a": 2}, 10.0, {"a": 2.0}),
    ([], None, {}),
])
def test_parse_budget(specs, total, per):
    b = measuring.parse_budget(specs, "EUR")
    assert (b.total, b.per_target, b.currency) == (total, per, "EUR")


@pytest.mark.parametrize("bad", [["-1"], ["a=x"], ["nan"], ["a=inf"]])
def test_parse_budget_refuses_what_is_not_an_amount(bad):
    with pytest.raises(UserError, match="--max-spend"):
        measuring.parse_budget(bad)


@pytest.mark.slow  # a whole compare flow, landing and report
def test_compare_skips_the_run_a_budget_would_exceed_and_tells_it(prefect_harness, tmp_path):
    """End to end on the shared Prefect server: a target that ran twice this month (0.8333 USD at 2.00 USD/h)
    under a 1.20 budget is not dispatched a third time: the flow completes, and the skip is a dispatches
    row, a dispatch_skips row, a Prefect event and a line on the site."""
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter

    from flows.compare import compare

    now = datetime.now(timezone.utc)
    wh = tmp_path / "wh.duckdb"
    tag = f"budget-{tmp_path.name[-12:]}".replace("_", "-")
    f = tmp_path / "targets.toml"
    f.write_text(f'[[target]]\nid = "{tag}"\nprovider = "testcloud"\nregion = "r1"\ninstance_type = "small.gpu"\n'
                 'dispatch = "local"\ntimeout_s = 300\n\n'
                 f'[[target]]\nid = "{tag}-run"\ndispatch = "local"\ntimeout_s = 300\n'
                 'skip = ["finetune", "storage", "gemm_sustained"]\n')
    con = warehouse(wh)
    add_target(con, tag, "testcloud", "r1", "small.gpu")
    add_price(con, "testcloud", "r1", "small.gpu", 2.00, effective_from=now - timedelta(days=60))
    _run(con, 1, tag, now - timedelta(minutes=40), 600, dispatch="local")
    _run(con, 2, tag, now - timedelta(minutes=20), 900, dispatch="local")
    con.close()
    state = compare(targets=[tag, f"{tag}-run"], profile="quick", warehouse=str(wh), site=str(tmp_path / "site"),
                    results=str(tmp_path / "results"), targets_file=str(f), max_spend={tag: 1.20}, return_state=True)
    summary = state.result()
    assert state.is_completed() and state.name == "Completed", state.message
    assert [o["status"] for o in summary["outcomes"]] == ["skipped", "landed"]
    assert state.message.endswith(f"1 of 1 targets landed; skipped for the measuring budget: {tag}")
    with duckdb.connect(str(wh), read_only=True) as con:
        assert con.execute("select target, status from dispatches order by target").fetchall() == [
            (tag, "skipped"), (f"{tag}-run", "landed")]
        assert con.execute("select count(*) from measuring_runs where target = ?", [tag]).fetchone() == (2,)
        ran = con.execute("select probe_flow_run_id, span_source, started_at, finished_at, instance_seconds "
                          "from measuring_runs where target = ?", [f"{tag}-run"]).fetchone()
        scope, budget, spent, expected = con.execute(
            "select scope, budget, spent, expected from dispatch_skips").fetchone()
    assert (scope, budget) == ("target", 1.20)
    assert spent == pytest.approx(1500 / 3600 * 2.00) and expected == pytest.approx(750 / 3600 * 2.00)
    assert "would exceed its budget 1.20 USD" in (tmp_path / "site" / "index.html").read_text()
    # the dispatched target's instance-seconds are its probe flow run's span as Prefect recorded it
    with get_client(sync_client=True) as c:
        fr = c.read_flow_run(ran[0])
    assert ran[1] == "prefect" and (ran[2], ran[3]) == (fr.start_time, fr.end_time)
    assert ran[4] == pytest.approx((fr.end_time - fr.start_time).total_seconds()) and ran[4] > 0
    flt = EventFilter(event=EventNameFilter(name=["costgap.dispatch.skipped"]),
                      resource=EventResourceFilter(id=[f"costgap.target.{tag}"]))
    import time

    for _ in range(40):  # events are stored a moment after they are emitted
        with get_client(sync_client=True) as c:
            events = list(c.read_events(flt, limit=5).events)
        if events:
            break
        time.sleep(0.5)
    assert events and events[0].payload["scope"] == "target" and events[0].payload["budget"] == 1.20
