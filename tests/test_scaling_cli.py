"""`costgap scaling` as a user drives it: the seed's pair on a real warehouse (issue 42).

    .venv/bin/pytest -q tests/test_scaling_cli.py
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from typer.testing import CliRunner

from cli.main import app
from tasks.estimate.collective import load_fit


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    """The committed H200 samples (the estimator's calibration) and one-GPU prices of the seed's two families."""
    from tasks.demo import sample_dir
    from tasks.landing.land import land_paths
    from tasks.pricing.base import PriceRow
    from tasks.pricing.book import import_rows
    from warehouse.db import connect

    path = tmp_path_factory.mktemp("scaling") / "w.duckdb"
    con = connect(str(path))
    land_paths(con, [str(sample_dir() / "h200")], source="test")
    con.execute("insert into targets (target, provider, region, instance_type, gpu_model, gpu_count) values "
                "('gn7i-1', 'alibaba', 'cn-hangzhou', 'ecs.gn7i-c8g1.2xlarge', 'A10', 1), "
                "('gn10xp-1', 'tencent', 'ap-guangzhou', 'GN10Xp.2XLARGE40', 'V100-SXM2-32GB', 1)")
    start = datetime(2026, 11, 1, tzinfo=timezone.utc)
    rows = [PriceRow(p, r, it, "on_demand", "USD", usd, "hour", start, source="test", fetched_at=start)
            for p, r, it, usd in (("alibaba", "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge", 1.80),
                                  ("tencent", "ap-guangzhou", "GN10Xp.2XLARGE40", 1.95))]
    import_rows(con, rows, source_kind="test", source="test", fetched_at=start)
    con.close()
    return path


def test_the_seeds_pair_as_json(warehouse):
    out = CliRunner().invoke(app, ["scaling", "--json", "--warehouse", str(warehouse)])
    assert out.exit_code == 0, out.output
    res = json.loads(out.output)
    a, b, host = res["a"], res["b"], res["b_host"]
    assert (a["gpu"], a["fabric"], b["gpu"], b["fabric"], host["fabric"]) == ("V100-SXM2", "nvlink", "A10", "pcie", "pcie-host")
    for r in (a, b, host):
        assert r["fits"] and r["eff_lo"] <= r["efficiency"] <= r["eff_hi"] and r["cost_lo"] <= r["cost"] <= r["cost_hi"]
        assert r["label"].startswith("predicted from ") and 0 <= r["comm_share"] < 1
        assert "x the per-GPU price" in r.get("price_source", "x the per-GPU price")  # 2-GPU types priced per GPU
    assert host["efficiency"] < b["efficiency"] and host["comm_share"] > b["comm_share"]  # no peer-to-peer: worse
    assert b["strategy"] == "fsdp" and a["strategy"] == "ddp"  # 13B LoRA: one V100 holds it, one A10 does not
    sizes = [r["size"] for r in res["flip"]["rows"]]
    assert sizes == sorted(sizes) and all(c[2] != c[3] for c in res["flip"]["changes"])
    nodes = {(r["tag"], r["network"].split(":")[0]): r for r in res["nodes"]}
    assert set(nodes) == {("a", "rdma"), ("a", "tcp"), ("b", "rdma"), ("b", "tcp")}
    assert nodes[("a", "rdma")]["gpus"] == 8 and nodes[("a", "rdma")]["efficiency"] is not None
    tcp = nodes[("a", "tcp")]  # the fit's TCP rows give an estimate; without them, a bound at TCP's line rate
    if "tcp" in (load_fit() or {}).get("networks", {}):
        assert tcp["efficiency"] is not None and "tcp" in tcp["scaling_reason"] and "tcp_line_rate_bound" not in tcp
        assert tcp["efficiency"] < nodes[("a", "rdma")]["efficiency"]
    else:
        assert tcp.get("efficiency") is None and "tcp" in tcp["reason"]
        assert 0 < tcp["tcp_line_rate_bound"]["efficiency"] <= 1


def test_the_seeds_pair_reads_as_a_prediction(warehouse):
    out = CliRunner().invoke(app, ["scaling", "--nodes", "1", "--warehouse", str(warehouse)])
    assert out.exit_code == 0, out.output
    text = out.output
    assert text.startswith("PREDICTED, not measured: a 13B lora fine-tune (the seed's question)")
    assert "B without peer-to-peer (pcie-host)" in text and "by model size" in text and "cheaper" in text
    assert "over RDMA against TCP" not in text and "e+" not in text and "ASSUMED 0.9" not in text


@pytest.mark.parametrize("args, why", [
    (["--a", "nope/x"], "not in tasks/estimate/data/instance_fabrics.csv"), (["--mode", "qlora"], "expected full or lora"),
    (["--fabric-b", "fast"], "expected one of nvswitch"), (["--size", "1e15"], "--size"),
])
def test_bad_input_is_refused_with_exit_2(warehouse, args, why):
    import subprocess

    from tests.conftest import COSTGAP, REPO

    r = subprocess.run([*COSTGAP, "scaling", *args, "--warehouse", str(warehouse)], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and why in r.stderr and "Traceback" not in r.stderr


def test_a_family_priced_without_a_gpu_count_says_so_and_the_page_draws_no_empty_chart(warehouse, tmp_path,
                                                                                         monkeypatch):
    """Run away from the repository (no ./deploy/targets.toml) on a warehouse whose targets do not name the
    one-GPU types: the book prices the families, but nothing says how many GPUs a price buys. The pair says
    so instead of 'no price', and the Candidates page writes that sentence instead of an empty log-scaled
    chart (which the PNG/SVG export could not size: `costgap demo` failed outside the repository)."""
    import shutil

    import duckdb

    from reports.pages.candidates import _pair_section
    from reports.pages.page import Page

    wh = tmp_path / "w.duckdb"
    shutil.copyfile(warehouse, wh)
    with duckdb.connect(str(wh)) as con:
        con.execute("delete from targets where target in ('gn7i-1', 'gn10xp-1')")
    monkeypatch.setenv("COSTGAP_TARGETS", str(tmp_path / "no-targets-here.toml"))
    out = CliRunner().invoke(app, ["scaling", "--json", "--warehouse", str(wh)])
    assert out.exit_code == 0, out.output
    res = json.loads(out.output)
    for k, priced in (("a", "GN10Xp.2XLARGE40"), ("b", "ecs.gn7i-c8g1.2xlarge")):
        assert res[k].get("cost") is None and priced in res[k]["price_source"]
        assert "GPU count" in res[k]["price_source"]
    page = Page("candidates.html", "Candidates", "")
    _pair_section(page, res)
    html = "".join(page.parts)
    assert "No cost chart: A: the book prices GN10Xp.2XLARGE40" in html and "scaling-pair" not in page.charts
    assert "not known without a price for both" in html and "no change of the cheaper machine" not in html
