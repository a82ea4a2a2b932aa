"""One source of truth: the site's figures equal the CLI's, and the gap over time is exact and reproducible.

    .venv/bin/pytest -q tests/test_consistency.py

Over the demo warehouse (the committed H200 and CPU samples plus the labelled synthetic history):
- every (target, preset) of the overview's table (site/data/overview-costs.csv, full precision) has
  the same cost, interval, blended and today's price, cost at today's price, p with k/n, R and
  tokens/s as `costgap targets --json`, and its gap and interval as `costgap gap T B --json`;
- site/data/gap_history.csv keeps its identities (the three log terms add up to ln(1 + gap), the gap
  is the ratio of the two costs) and `costgap gap T B --preset P --as-of <period_end> --window 30d`
  reproduces its rows.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.demo_world import shared_demo, shared_demo_site

REL = 1e-9
FIGURES = ("cost_per_mtok", "cost_lo", "cost_hi", "price_per_hour", "price_now_per_hour", "cost_now_per_mtok", "p",
           "R", "tokens_per_s", "failed_attempts", "attempts", "runs", "price_age_days")

pytestmark = pytest.mark.slow  # the session's `costgap demo` (shared) and the CLI over it


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, Path]:
    """The session's one demo build (tests/demo_world.py), read only here: its warehouse and its site."""
    wh, _ = shared_demo(tmp_path_factory)
    return wh, shared_demo_site(wh)


def _csv(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _num(text: str) -> float | None:
    return None if text == "" else float(text)


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=REL, abs_tol=1e-15)


def _cli(*args: str) -> dict | list:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_overview_figures_equal_costgap_targets_and_gap(demo):
    wh, site = demo
    shown = _csv(site / "data" / "overview-costs.csv")
    assert len(shown) >= 4
    cli = {(r["target"], r["preset"]): r for r in _cli("targets", "--json", "--warehouse", str(wh))}
    assert set(cli) == {(r["target"], r["preset"]) for r in shown}
    gaps = 0
    for row in shown:
        mine = cli[(row["target"], row["preset"])]
        for k in FIGURES:
            assert _same(_num(row[k]), mine[k]), (row["target"], row["preset"], k, row[k], mine[k])
        assert row["window_end"] == mine["window_end"].replace(" ", "T")
        if row["gap"]:
            baseline = next(r["target"] for r in shown if r["is_baseline"] == "True")
            res = _cli("gap", row["target"], baseline, "--preset", row["preset"], "--json", "--warehouse", str(wh))
            assert res["window"]["end"] == row["window_end"]
            for mine_k, theirs in (("gap", res["gap"]), ("gap_lo", res["gap_lo"]), ("gap_hi", res["gap_hi"]),
                                   ("cost_per_mtok", res["cost_a"])):
                assert _same(_num(row[mine_k]), theirs), (row["target"], mine_k)
            for k in ("p", "R", "tokens_per_s", "price_per_hour", "attempts", "failed_attempts", "cost_lo", "cost_hi"):
                assert _same(_num(row[k]), res["components"]["a"][k]), (row["target"], k)
            gaps += 1
    assert gaps >= 2


def test_gap_history_keeps_its_identities_and_the_cli_reproduces_it(demo):
    wh, site = demo
    rows = _csv(site / "data" / "gap_history.csv")
    assert len(rows) >= 10
    required = {"period_start", "period_end", "preset", "target", "baseline", "cost_per_mtok", "baseline_cost_per_mtok",
                "gap", "gap_lo", "gap_hi", "ln_price", "ln_throughput", "ln_reliability"}
    assert required <= set(rows[0])
    for r in rows:
        gap, c, cb = float(r["gap"]), float(r["cost_per_mtok"]), float(r["baseline_cost_per_mtok"])
        terms = float(r["ln_price"]) + float(r["ln_throughput"]) + float(r["ln_reliability"])
        assert abs(terms - math.log1p(gap)) <= 1e-12, r
        assert _same(gap, c / cb - 1.0)
        assert float(r["gap_lo"]) <= gap <= float(r["gap_hi"])
    for r in (rows[0], rows[len(rows) // 2], rows[-1]):
        res = _cli("gap", r["target"], r["baseline"], "--preset", r["preset"], "--as-of", r["period_end"],
                   "--window", "30d", "--json", "--warehouse", str(wh))
        assert res["window"] == {"start": r["period_start"], "end": r["period_end"]}
        for mine, theirs in (("cost_per_mtok", "cost_a"), ("baseline_cost_per_mtok", "cost_b"), ("gap", "gap"),
                             ("gap_lo", "gap_lo"), ("gap_hi", "gap_hi")):
            assert _same(float(r[mine]), res[theirs]), (r["period_end"], mine)
        t = res["terms"]
        for k in ("price", "throughput", "reliability"):
            assert _same(float(r[f"ln_{k}"]), t[k]), (r["period_end"], k)
