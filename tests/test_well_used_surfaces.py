"""One verdict, two surfaces: "Is this server well used?" reads the same on each target's page, in the overview's
side-by-side table and in `costgap targets --json`, which also carries the shared cost and what measuring cost.

    .venv/bin/pytest -q tests/test_well_used_surfaces.py

The warehouse holds the committed H100 and CPU samples (from before probe 0.5.0: "not measured" where they lack
a figure) and two new-style GPU bundles (tests/test_well_used.py builds them with the probe's own builders).
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from typer.testing import CliRunner

from cli.main import app
from reports.data import load
from reports.pages.overview import overview
from reports.pages.target import target_pages
from reports.pages.well_used import CSV_KEYS
from tasks.cost.measuring import record_runs
from tasks.cost.well_used import NOT_MEASURED, RULES
from tests.test_well_used import NEW_TIME, build_world
from warehouse.db import connect, reading


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("well-used")
    wh = root / "wh.duckdb"
    con = connect(str(wh))
    build_world(con, root / "in")
    start = NEW_TIME + timedelta(hours=1)
    record_runs(con, [{"compare_run_id": "c1", "target": "gpu-a", "dispatch": "pool", "probe_flow_run_id": "f1",
                       "span_source": "prefect", "started_at": start, "finished_at": start + timedelta(minutes=6),
                       "instance_seconds": 360.0}])
    con.close()
    return wh


def _cli(*args: str):
    got = CliRunner().invoke(app, list(args))
    assert got.exit_code == 0, got.output
    return got.output


def _same(shown: dict, mine: dict) -> bool:
    return all(shown[k] == mine[k] for k in CSV_KEYS)


def test_site_and_cli_read_the_same_verdicts(world):
    rows = json.loads(_cli("targets", "--json", "--warehouse", str(world)))
    cli = {r["target"]: r["well_used"] for r in rows}
    assert set(cli) >= {"gpu-a", "gpu-b", "h100-sxm-1x", "local"}
    with reading(str(world)) as con:
        data = load(con)
    pages = {p.filename: p for p in target_pages(data)}
    checked = 0
    for i, t in enumerate(data.targets):
        page = next(p for p in pages.values() if p.title == f"Target {t['target']}")
        shown = page.data[f"t{i}-well-used"]
        assert [r["rule"] for r in shown] == [r.key for r in RULES]
        if t["target"] in cli:
            assert all(_same(a, b) for a, b in zip(shown, cli[t["target"]])), t["target"]
            checked += 1
    assert checked >= 4
    side = overview(data).data["overview-well-used"]
    for r in side:
        mine = next(v for v in cli[r["target"]] if v["rule"] == r["rule"])
        assert _same(r, mine), (r["target"], r["rule"])
    assert {r["target"] for r in side} >= {"gpu-a", "gpu-b"}


def test_cli_json_carries_verdicts_shared_cost_and_measuring_per_row(world):
    rows = json.loads(_cli("targets", "--json", "--warehouse", str(world)))
    for r in rows:
        assert {"well_used", "shared", "measuring"} <= set(r)
        assert [v["rule"] for v in r["well_used"]] == [x.key for x in RULES]
        for v in r["well_used"]:
            assert {"verdict", "value", "value_text", "threshold", "threshold_text", "figure", "reason",
                    "source"} <= set(v)
    a = next(r for r in rows if r["target"] == "gpu-a")
    (shared,) = a["shared"]
    assert shared["label"] == "shared" and shared["cost_per_mtok_shared"] < shared["cost_per_mtok_alone"]
    assert a["cost_per_mtok"] != shared["cost_per_mtok_shared"]  # never mixed with the single-job figure
    (month,) = a["measuring"]  # what measuring it cost: 360 instance-seconds at 3.00 USD/h
    assert month["runs"] == 1 and month["cost"] == pytest.approx(0.3)
    local = next(r for r in rows if r["target"] == "local")
    gpu_rules = [v for v in local["well_used"] if next(x for x in RULES if x.key == v["rule"]).gpu]
    assert gpu_rules and all(v["verdict"] == NOT_MEASURED for v in gpu_rules)
    text = _cli("targets", "--warehouse", str(world))
    assert "  gpu-b: 1 pass, 5 fail (gpu_busy, await, feed, numa, sharing), 0 not measured" in text
    assert "  gpu-a: 6 pass, 0 fail, 0 not measured" in text
