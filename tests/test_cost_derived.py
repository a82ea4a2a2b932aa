"""Derived figures, per-tier recommendation, repeatability, and the CLI as a user drives it.

    .venv/bin/pytest -q tests/test_cost_derived.py
"""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tasks.cost.derived import derived, repeatability
from tasks.estimate.tiers import tier_recommendations
from tests.cost_support import T0, add_env, add_price, add_run, add_target, warehouse

AS_OF = T0 + timedelta(days=5)
REPO = Path(__file__).resolve().parent.parent


def _two_instances(con) -> None:
    # an 8-GPU type whose interconnect is published (instance_fabrics.csv: NVSwitch, EFA) and a one-GPU type
    add_target(con, "h100x8", "aws", "us-east-1", "p5.48xlarge", gpu_count=8)
    add_target(con, "a10", "p", "r", "a10", gpu_model="A10")
    add_env(con, "e80", gpu_memory_gib=80.0, gpu_count=8)
    add_env(con, "e24", gpu_memory_gib=24.0)
    add_price(con, "aws", "us-east-1", "p5.48xlarge", 24.0, seen=T0)
    add_price(con, "p", "r", "a10", 0.75, seen=T0)
    for i, (x, y) in enumerate([(59000.0, 7900.0), (60000.0, 8000.0), (61000.0, 8100.0)]):
        add_run(con, f"h{i}", "h100x8", T0 + timedelta(days=i + 1), x, environment_id="e80", mfu=0.46,
                kwh_per_mtok=0.0031)
        add_run(con, f"a{i}", "a10", T0 + timedelta(days=i + 1), y, environment_id="e24")


def test_derived_figures(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    _two_instances(con)
    d = {r["target"]: r for r in derived(con, as_of=AS_OF, train_tokens=1e9, price_per_kwh=0.2).to_dicts()}
    h = d["h100x8"]
    assert h["tokens_per_gpu_day"] == pytest.approx(60000 * 86400 / 8)
    assert h["hours_to_train"] == pytest.approx(1e9 / 60000 / 3600)  # R = 1: no failures
    assert h["cost_to_train"] == pytest.approx(24.0 / (3600 * 60000) * 1e6 * 1000)  # C per 1M x 1000
    assert h["electricity_cost_per_mtok"] == pytest.approx(0.0031 * 0.2)
    assert "scaling_assumed" not in h  # every derived figure is the instance's own, measured
    assert d["a10"]["electricity_cost_per_mtok"] is None  # not measured: NULL, not a guess


def test_tiers_compare_within_a_mode_and_predict_past_one_card_from_the_interconnect(tmp_path):
    from tasks.estimate.at_size import flops_per_token

    con = warehouse(tmp_path / "w.duckdb")
    _two_instances(con)
    t = tier_recommendations(con, as_of=AS_OF, today=AS_OF)
    rows = {(r["tier"], r["mode"], r["target"]): r for r in t.to_dicts()}
    small = rows[("<=7B", "full", "h100x8")]
    assert small["fits"] and small["strategy"] == "ddp" and small["recommended"]
    assert small["scaling_label"].startswith("predicted from nvswitch") and "busbw" in small["scaling_label"]
    assert small["fabric"] == "nvswitch" and small["scaling_lo"] <= small["scaling"] <= small["scaling_hi"] < 1
    # 60,000 tokens/s on one GPU scaled to 7B by FLOPs per token, times 8 GPUs at the predicted efficiency
    x1 = 60000 * 6e9 / flops_per_token(7e9, "full", False)
    assert small["tokens_per_s"] == pytest.approx(x1 * 8 * small["scaling"])
    assert small["cost_per_mtok"] == pytest.approx(24.0 / (3600 * small["tokens_per_s"]) * 1e6)
    assert "ASSUMED 0.9" not in " ".join(r["reason"] or "" for r in t.to_dicts())
    a10_full, a10_lora = rows[("<=7B", "full", "a10")], rows[("<=7B", "lora", "a10")]
    assert a10_full["fits"] is False and "needs" in a10_full["reason"] and not a10_full["recommended"]
    assert a10_lora["fits"] and a10_lora["cost_per_mtok"] is not None  # LoRA is compared with LoRA only
    for (tier, mode), group in t.group_by("tier", "mode"):
        assert group["recommended"].sum() <= 1  # one recommendation per tier and mode
    big = rows[(">13B", "lora", "h100x8")]
    assert big["fits"] and big["strategy"] == "fsdp"  # 70B LoRA: sharded over the 8 GPUs
    # a measured multi-GPU run wins over the prediction
    con.execute("update finetunes set scaling_efficiency = 0.8, n_gpus = 8 where run_id like 'h%'")
    measured = {(r["tier"], r["mode"], r["target"]): r for r in tier_recommendations(con, as_of=AS_OF, today=AS_OF).to_dicts()}
    m = measured[("<=7B", "full", "h100x8")]
    assert m["scaling"] == 0.8 and m["scaling_label"] == "measured on this type" and not m["predicted"]
    assert m["tokens_per_s"] == pytest.approx(60000 / 8 / 0.8 * 6e9 / flops_per_token(7e9, "full", False) * 8 * 0.8)


def test_repeatability_per_environment(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    _two_instances(con)
    r = {x["target"]: x for x in repeatability(con).to_dicts()}
    assert r["h100x8"]["runs"] == 3 and r["h100x8"]["cv"] == pytest.approx(1000 / 60000)
    assert r["h100x8"]["torch"] == "2.5.1"


def test_repeatability_never_mixes_measurement_methods(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    _two_instances(con)
    for seq, (rid, version, value) in enumerate([("h0", "3", 816.0), ("h1", "3", 826.0), ("h2", "4", 824.0)]):
        con.execute("insert into measurements (run_id, seq, benchmark, benchmark_version, metric, value, unit,"
                    " repeats, statistic) values (?, 0, 'gemm', ?, 'bf16_tflops', ?, 'TFLOP/s', 100, 'median')",
                    [rid, version, value])
    rows = {(x["method_version"], x["runs"]): x for x in repeatability(con, target="h100x8").to_dicts()
            if x["metric"] == "bf16_tflops"}
    assert set(rows) == {("3", 2), ("4", 1)}
    assert rows[("3", 2)]["cv"] == pytest.approx(7.0710678 / 821.0)
    assert rows[("4", 1)]["cv"] is None  # one run: no spread yet


def test_cli_targets_and_errors(tmp_path):
    path = tmp_path / "w.duckdb"
    con = warehouse(path)
    _two_instances(con)
    con.close()
    out = CliRunner().invoke(app, ["targets", "--window", "3650d", "--warehouse", str(path)])
    assert out.exit_code == 0, out.output
    lines = out.output.strip().splitlines()
    assert lines[0].startswith("window ") and "ends at the newest run" in lines[0]
    rows = [ln for ln in lines if ln.startswith(("  a10 ", "  h100x8 "))]  # grouped by preset, cheapest first
    assert rows[0].startswith("  a10 ") and rows[1].startswith("  h100x8 ") and "USD/1M tokens" in rows[0]
    assert "today: " in rows[0] and "STALE" in rows[0]  # today's price beside it, where it is stale
    assert any(ln.startswith("preset 1b: a10 is cheapest") and ln.endswith(": clear") for ln in lines)
    tiers = CliRunner().invoke(app, ["tiers", "--window", "3650d", "--warehouse", str(path)])
    assert tiers.exit_code == 0, tiers.output
    assert "<=7B (7B), full fine-tune:" in tiers.output
    assert any(ln.strip().startswith("*") and "p5.48xlarge (aws, 8x H100-SXM)" in ln for ln in tiers.output.splitlines())
    assert "predicted from nvswitch" in tiers.output and "busbw" in tiers.output and "does not fit" in tiers.output
    assert "tokens/GPU-day" in tiers.output and "ASSUMED 0.9" not in tiers.output
    costgap = [sys.executable, "-c", "from cli.main import main; main()"]
    bad = subprocess.run(costgap + ["gap", "a10", "nope", "--warehouse", str(path)], capture_output=True, text=True,
                         cwd=REPO)
    assert bad.returncode == 2 and "target 'nope': unknown" in bad.stderr and "Traceback" not in bad.stderr
    book = tmp_path / "book.csv"
    book.write_text("provider,region,instance_type,billing_mode,currency,price,effective_from,source\n"
                    "p,r,a10,on_demand,USD,-1,2026-01-01,test\n")
    bad = subprocess.run(costgap + ["prices", "import", str(book), "--warehouse", str(path)], capture_output=True,
                         text=True, cwd=REPO)
    assert bad.returncode == 2 and "book.csv:2: field 'price'" in bad.stderr
