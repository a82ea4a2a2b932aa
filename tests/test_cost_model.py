"""The cost model end to end: a hand-worked example through `costgap gap --json`, ASOF pricing, FX,
staleness, reliability from both attempt sources, windows and history. Real DuckDB files.

    .venv/bin/pytest -q tests/test_cost_model.py
"""

from __future__ import annotations

import json
import math
from datetime import date, timedelta

import pytest
from typer.testing import CliRunner

from cli.main import app
from tasks.errors import UserError
from tasks.cost import table as cost
from tasks.pricing.fx import FxError
from tests.cost_support import T0, add_env, add_price, add_run, add_target, warehouse

AS_OF = T0 + timedelta(days=10)


def _hand_worked(con) -> None:
    """Two targets, known prices, tokens/s and failure counts (the arithmetic is in the test below)."""
    add_target(con, "A", "lambda", "us-east-1", "gpu_1x_h100_sxm5")
    add_target(con, "B", "alibaba", "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge")
    add_env(con, "env0")
    con.execute("insert into fx_rates values ('CNY', '2026-01-01', 8.0, 'test: rate stated in the test')")
    add_price(con, "lambda", "us-east-1", "gpu_1x_h100_sxm5", 2.25, seen=T0)
    add_price(con, "alibaba", "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge", 10.0, currency="CNY", seen=T0)
    add_run(con, "a0", "A", T0 + timedelta(days=1), 900.0, failed=1, completed=1)
    add_run(con, "a1", "A", T0 + timedelta(days=2), 1000.0)
    add_run(con, "a2", "A", T0 + timedelta(days=3), 1100.0)
    con.execute("insert into attempts values (null, 'A', 'finetune', 1, 'completed', null, null, 5.0, ?, 'prefect',"
                " 'flow-run-1')", [T0 + timedelta(days=4)])
    con.execute("insert into attempts values (null, 'A', 'finetune', 2, 'skipped', null, null, 0.0, ?, 'prefect',"
                " 'flow-run-2')", [T0 + timedelta(days=4)])
    for i, x in enumerate([600.0, 625.0, 650.0]):
        add_run(con, f"b{i}", "B", T0 + timedelta(days=i + 1), x)


def test_hand_worked_example_matches_costgap_gap_json(tmp_path):
    # A: P = 2.25 USD/h. X = median(900, 1000, 1100) = 1000 tokens/s.
    #    Fine-tune attempts: run a0 1 failed + 1 completed, a1 1, a2 1, one Prefect completed = 5 counted
    #    (the Prefect 'skipped' one is excluded), 1 failed -> p = 1/5 = 0.2.
    #    R = 1 + f p/(1-p) = 1 + 0.5 * 0.2/0.8 = 1.125.
    #    C_A = P/(3600 X) * 1e6 * R = 2.25/3.6e6 * 1e6 * 1.125 = 0.625 * 1.125 = 0.703125 USD per 1M tokens.
    # B: P = 10.00 CNY/h at 8.0 CNY per USD = 1.25 USD/h. X = median(600, 625, 650) = 625. p = 0/3, R = 1.
    #    C_B = 1.25/(3600 * 625) * 1e6 = 1.25/2.25 = 0.5555... USD per 1M tokens.
    # gap = C_A/C_B - 1 = (2.25/1.25) * (625/1000) * 1.125 - 1 = 1.8 * 0.625 * 1.125 - 1 = 1.265625 - 1 = 0.265625.
    # ln(C_A/C_B) = ln 1.8 - ln 1.6 + ln 1.125 = 0.587787 - 0.470004 + 0.117783 = 0.235566 = ln 1.265625.
    path = tmp_path / "w.duckdb"
    con = warehouse(path)
    _hand_worked(con)
    con.close()
    got = CliRunner().invoke(app, ["gap", "A", "B", "--json", "--window", "30d", "--as-of", AS_OF.isoformat(),
                                   "--warehouse", str(path)])
    assert got.exit_code == 0, got.output
    out = json.loads(got.output)
    assert out["cost_a"] == 2.25 / (3600 * 1000.0) * 1e6 * 1.125 == pytest.approx(0.703125, rel=1e-15)
    assert out["cost_b"] == 1.25 / (3600 * 625.0) * 1e6 * 1.0 == pytest.approx(1.25 / 2.25, rel=1e-15)
    assert out["gap"] == pytest.approx(0.265625, rel=1e-12)
    a, b = out["components"]["a"], out["components"]["b"]
    assert (a["price_per_hour"], a["tokens_per_s"], a["attempts"], a["failed_attempts"], a["p"], a["R"]) == (
        2.25, 1000.0, 5, 1, 0.2, 1.125)
    assert (b["price_per_hour"], b["tokens_per_s"], b["attempts"], b["failed_attempts"], b["p"], b["R"]) == (
        1.25, 625.0, 3, 0, 0.0, 1.0)
    assert out["terms"]["price"] == pytest.approx(math.log(1.8), abs=1e-12)
    assert out["terms"]["throughput"] == pytest.approx(-math.log(1.6), abs=1e-12)
    assert out["terms"]["reliability"] == pytest.approx(math.log(1.125), abs=1e-12)
    assert abs(sum(out["terms"].values()) - out["ln_ratio"]) <= 1e-9
    assert out["ln_ratio"] == pytest.approx(math.log(1.265625), abs=1e-12)
    assert out["gap_lo"] <= out["gap"] <= out["gap_hi"]
    # stale refers to today's price: last confirmed at T0, so stale once T0 is more than 30 days ago
    assert out["stale"] == (a["price_age_days"] > 30) and a["price_age_days"] == (date.today() - T0.date()).days
    text = CliRunner().invoke(app, ["gap", "A", "B", "--as-of", AS_OF.isoformat(), "--warehouse", str(path)])
    assert "+26.6%" in text.output and "reliability +11.8" in text.output  # ln(1.125) = 0.1178: 11.8 log points


def test_cost_table_rows_flags_and_order(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    _hand_worked(con)
    add_target(con, "C", "nowhere", "r", "unpriced")
    add_run(con, "c0", "C", T0 + timedelta(days=2), 5000.0)
    table = cost.cost_table(con, as_of=AS_OF)
    assert table.columns[:len(cost.COLUMNS)] == cost.COLUMNS
    assert table["target"].to_list() == ["B", "A", "C"]  # cheapest first, unpriced last
    c = table.row(2, named=True)
    assert c["price_per_hour"] is None and c["cost_per_mtok"] is None and c["price_stale"] is None
    stale = cost.cost_table(con, as_of=AS_OF, stale_after_days=5, today=AS_OF)  # today's price, read at AS_OF
    assert stale.filter(stale["target"] == "A")["price_stale"].to_list() == [True]
    assert stale.filter(stale["target"] == "A")["price_age_days"].to_list() == [10]
    fresh = cost.cost_table(con, as_of=AS_OF, today=AS_OF)
    a = fresh.filter(fresh["target"] == "A").row(0, named=True)
    assert not a["price_stale"] and a["price_now_per_hour"] == 2.25 and a["cost_now_per_mtok"] == a["cost_per_mtok"]
    yearly = cost.cost_table(con, as_of=AS_OF, billing="yearly")
    assert yearly["cost_per_mtok"].null_count() == 3  # no yearly prices: no cost, not a guess


def test_each_run_is_priced_as_of_its_own_time(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    _hand_worked(con)
    add_price(con, "lambda", "us-east-1", "gpu_1x_h100_sxm5", 4.5, effective_from=T0 + timedelta(days=2, hours=12),
              seen=T0 + timedelta(days=3), source="test: a price rise between runs a1 and a2")
    row = cost.cost_table(con, as_of=AS_OF).filter(cost.pl.col("target") == "A").row(0, named=True)
    assert row["price_per_hour"] == pytest.approx((2.25 + 2.25 + 4.5) / 3)  # a0, a1 old price; a2 the new one
    assert row["price_effective_from"].day == 3  # the latest run's price period


def test_missing_fx_rate_is_an_error_not_one(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    _hand_worked(con)
    with pytest.raises(FxError, match="no FX rate for EUR"):
        cost.cost_table(con, as_of=AS_OF, currency="EUR")
    con.execute("delete from fx_rates")
    with pytest.raises(FxError, match="no FX rate for CNY on or before 2026-11-02"):
        cost.gap(con, "A", "B", as_of=AS_OF)
    con.execute("insert into fx_rates values ('EUR', '2026-01-01', 0.5, 't'), ('CNY', '2026-01-01', 8.0, 't')")
    eur = cost.cost_table(con, as_of=AS_OF, currency="EUR")
    assert eur.filter(eur["target"] == "B")["price_per_hour"].to_list() == [10.0 / 8.0 * 0.5]


def test_targets_compared_only_on_presets_both_ran(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    _hand_worked(con)
    add_run(con, "a9", "A", T0 + timedelta(days=5), 300.0, preset="8b-lora")
    with pytest.raises(UserError, match="preset '8b-lora': not run by both"):
        cost.gap(con, "A", "B", as_of=AS_OF, preset="8b-lora")
    assert cost.gap(con, "A", "B", as_of=AS_OF)["preset"] == "1b"
    with pytest.raises(UserError, match="target 'Z': unknown"):
        cost.gap(con, "A", "Z", as_of=AS_OF)
    with pytest.raises(UserError, match="share no preset"):
        cost.gap(con, "A", "B", as_of=T0 - timedelta(days=5))


def test_gap_between_windows_splits_exactly_and_lists_env_changes(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    _hand_worked(con)
    add_env(con, "env1", torch="2.6.0", cuda_runtime="12.6")
    for i, x in enumerate([800.0, 820.0, 810.0]):  # A slows down on a new stack in the second window
        add_run(con, f"a2{i}", "A", T0 + timedelta(days=20 + i), x, environment_id="env1")
        add_run(con, f"b2{i}", "B", T0 + timedelta(days=20 + i), 625.0)
    w1, w2 = (T0, T0 + timedelta(days=10)), (T0 + timedelta(days=15), T0 + timedelta(days=25))
    res = cost.gap_between_windows(con, "A", "B", w1, w2)
    d = res["delta"]
    assert abs(sum(d["terms"].values()) - d["ln_ratio"]) <= 1e-9
    assert d["terms"]["throughput"] == pytest.approx(-math.log(810 / 625) + math.log(1000 / 625), abs=1e-12)
    assert {c["field"]: (c["before"], c["after"]) for c in res["env_changes"]["a"]} == {
        "torch": ("2.5.1", "2.6.0"), "cuda_runtime": ("12.4", "12.6"), "cuda_driver": ("12.4", "12.6")}
    assert res["env_changes"]["b"] == []


def test_each_period_of_a_history_is_the_window_of_the_same_length(tmp_path):
    """A span of many periods is the same model as one window: period k equals `costgap gap --as-of <its end>`."""
    from tasks.cost.inputs import Span
    from tasks.cost.model import CostOptions
    from tasks.cost.table import costs

    con = warehouse(tmp_path / "w.duckdb")
    _hand_worked(con)
    for i, x in enumerate([800.0, 820.0, 810.0]):
        add_run(con, f"a2{i}", "A", T0 + timedelta(days=8 + i), x, failed=i == 1)
        add_run(con, f"b2{i}", "B", T0 + timedelta(days=8 + i), 620.0 + i)
    rows, _ = costs(con, Span(AS_OF, 7.0, 3), CostOptions(), today=AS_OF)
    assert sorted({r["period"] for r in rows}) == [0, 1]
    for r in rows:
        one = cost.cost_table(con, as_of=r["window_end"], window_days=7.0, today=AS_OF)
        same = one.filter((one["target"] == r["target"]) & (one["preset"] == r["preset"])).row(0, named=True)
        for k in ("cost_per_mtok", "cost_lo", "cost_hi", "price_per_hour", "tokens_per_s", "p", "R", "attempts"):
            assert same[k] == r[k], (r["period"], r["target"], k)
    # period 1 = (T0 - 4d, T0 + 3d]: the hand-worked runs of A without the Prefect attempt at T0 + 4d: p = 1/4
    a1 = next(r for r in rows if r["period"] == 1 and r["target"] == "A")
    assert (a1["runs"], a1["attempts"], a1["failed_attempts"]) == (3, 4, 1)
    assert a1["cost_per_mtok"] == pytest.approx(0.625 * (1 + 0.5 * 0.25 / 0.75), rel=1e-12)


def test_checkpoint_interval_sets_f_on_the_command_line(tmp_path):
    path = tmp_path / "w.duckdb"
    con = warehouse(path)
    _hand_worked(con)
    con.close()
    # checkpoints every 10% of the job: f = 0.05; R_A = 1 + 0.05 * 0.2/0.8 = 1.0125
    got = CliRunner().invoke(app, ["gap", "A", "B", "--json", "--checkpoint-every", "0.1", "--as-of",
                                   AS_OF.isoformat(), "--warehouse", str(path)])
    assert got.exit_code == 0, got.output
    assert json.loads(got.output)["components"]["a"]["R"] == pytest.approx(1.0125)


def test_attempts_per_preset_and_instance_level_throughput(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    add_target(con, "M", "p", "r", "8x", gpu_count=8)
    add_env(con, "env0")
    add_price(con, "p", "r", "8x", 8.0, seen=T0)
    t = T0 + timedelta(days=1)
    add_run(con, "m0", "M", t, 1000.0, completed=0)  # the n=1 baseline of the multi-GPU probe ...
    con.execute("insert into finetunes (run_id, seq, preset, status, mode, precision, n_gpus, tokens_per_s,"
                " scaling_efficiency) values ('m0', 1, '1b', 'ok', 'full', 'bf16', 8, 7200.0, 0.9)")  # ... and n=8
    con.execute("insert into finetunes (run_id, seq, preset, status, mode, precision, n_gpus, tokens_per_s)"
                " values ('m0', 2, '8b-lora', 'ok', 'lora', 'bf16', 1, 500.0)")
    rows = [("finetune:1b", "failed", "bundle"), ("finetune:1b", "completed", "bundle"),
            ("finetune:8b-lora", "completed", "bundle"), ("finetune_ddp:1b:n8", "failed", "bundle"),
            ("finetune", "skipped", "bundle"), ("probe_child", "crashed", "prefect"),
            ("probe_child", "completed", "prefect"), ("probe_flow", "failed", "prefect")]
    for i, (task, state, source) in enumerate(rows):
        con.execute("insert into attempts values (?, 'M', ?, ?, ?, ?, null, 1.0, ?, ?, null)",
                    [None if source == "prefect" else "m0", task, i + 1, state,
                     None if state in ("completed", "skipped") else "oom", t, source])
    got = {r["preset"]: r for r in cost.cost_table(con, as_of=AS_OF).to_dicts()}
    # 1b: finetune:1b (1 failed, 1 completed) + the crashed probe process = 3 attempts, 2 failed;
    # the DDP try, the skipped step, the completed probe process and the flow row are not fine-tune attempts
    assert (got["1b"]["attempts"], got["1b"]["failed_attempts"]) == (3, 2)
    assert (got["8b-lora"]["attempts"], got["8b-lora"]["failed_attempts"]) == (2, 1)
    assert got["1b"]["tokens_per_s"] == 7200.0 and got["1b"]["runs"] == 1  # the n=8 row, not the baseline
    assert got["1b"]["scaling_efficiency"] == 0.9 and got["1b"]["n_gpus"] == 8
