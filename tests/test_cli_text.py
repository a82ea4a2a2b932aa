"""The command line as a newcomer reads it, on the demo warehouse: figures without e-notation, the currency on
every price and cost, the site's verdict beside every gap, one row lost (not the answer) to a missing input,
shipped files that import with no --format, and refusals in the user's words.

    .venv/bin/pytest -q tests/test_cli_text.py
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.format import ENOTATION, num
from cli.main import app
from tests.conftest import COSTGAP, REPO
from tests.demo_world import shared_demo

pytestmark = pytest.mark.slow  # one `costgap demo` build, then costgap processes per command

# The price and FX files shipped for people to import (the GCP catalog excerpt prices GPUs on rows of their
# own, apart from the VM, so it is a fixture for SkyPilot's loader only: tests/fixtures/skypilot/README.md).
PRICE_FILES = ["deploy/prices/lambda.csv", "deploy/prices/examples/illustrative-cn.csv",
               "deploy/prices/examples/contract-example.yaml", "deploy/fx_rates.csv",
               "tests/fixtures/skypilot/lambda-vms.csv", "tests/fixtures/skypilot/aws-vms-excerpt.csv"]
FX_FILES = ["deploy/fx_rates.csv", "tests/fixtures/ecb/eurofxref-hist.zip"]
COST_UNIT = re.compile(r"(\S+) ?/(1M tokens|h)\b")  # what stands before "/1M tokens" and "/h"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    return shared_demo(tmp_path_factory)[0]  # read only here; a test that writes copies it


def _cli(*args: str) -> str:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return res.output


def _costgap(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([*COSTGAP, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def _leaders(wh: Path) -> list[dict]:
    """The site's answer rows (reports.pages.answer.answer_rows over reports.data.load), verdict included."""
    from reports.data import load
    from reports.pages.answer import answer_rows
    from warehouse.db import reading

    with reading(str(wh)) as con:
        return answer_rows(load(con))


def test_no_text_output_has_e_notation_and_every_price_and_cost_has_its_currency(demo):
    w = ["--warehouse", str(demo)]
    pairs = [(r["runner_up"], r["cheapest"], r["preset"]) for r in _leaders(demo) if r["runner_up"]]
    outputs = {
        "targets": _cli("targets", *w), "targets monthly": _cli("targets", "--billing", "monthly", *w),
        "tiers": _cli("tiers", *w), "tiers 2e10": _cli("tiers", "--tokens", "20000000000", "--kwh-price", "0.3", *w),
        "estimate": _cli("estimate", *w), "estimate --explain": _cli("estimate", "--explain", "--preset", "1b", *w),
        "estimate catalog": _cli("estimate", "--catalog", "tests/fixtures/skypilot/aws-vms-excerpt.csv", *w),
        "prices list": _cli("prices", "list", "--all", *w),
        "between": _cli("gap", "h100-sxm-1x", "h200-sxm-1x", "--between", "2026-10-01..2026-10-31",
                        "--and", "2026-11-06..2026-12-06", *w),
        **{f"gap {a} {b} {p}": _cli("gap", a, b, "--preset", p, *w) for a, b, p in pairs},
    }
    assert len(pairs) >= 3 and all(outputs.values())
    for name, text in outputs.items():
        assert not ENOTATION.search(text), f"{name}: {ENOTATION.search(text).group(0)!r} in\n{text}"
        for before, unit in COST_UNIT.findall(text):
            assert re.fullmatch(r"[0-9.,]*[A-Z]{3}", before) or before in ("kWh",), f"{name}: {before}/{unit}\n{text}"
    # tokens per GPU-day run to billions: printed in full with separators, never as 5.516e+09
    assert "tokens/GPU-day" in outputs["tiers"] and re.search(r"\b\d{1,3}(,\d{3}){3}\b", outputs["tiers"])
    assert "* = recommended" in outputs["tiers"]  # the legend of the mark
    assert num(1.378e10) == "13,780,000,000" and num(0.0001804) == "0.0001804" and num(159458.3) == "159,458"


def test_gap_prints_the_sites_verdict_for_the_same_pair_in_either_order(demo):
    rows = [r for r in _leaders(demo) if r["runner_up"]]
    assert {r["verdict"] for r in rows} == {"clear", "within noise"}  # the demo has both kinds
    for r in rows:
        for a, b in ((r["runner_up"], r["cheapest"]), (r["cheapest"], r["runner_up"])):
            args = ["gap", a, b, "--preset", r["preset"], "--warehouse", str(demo)]
            res = json.loads(_cli(*args, "--json"))
            assert res["verdict"] == r["verdict"], (a, b, r["preset"])
            line = next(ln for ln in _cli(*args).splitlines() if ln.startswith("gap: "))
            assert f": {r['verdict']} (" in line, line
    text = _cli("targets", "--warehouse", str(demo))
    for r in rows:  # the targets table says the same beside the runner-up, and on the preset's line
        head = next(ln for ln in text.splitlines() if ln.startswith(f"preset {r['preset']}: "))
        assert head.endswith(f": {r['verdict']}") and r["runner_up"] in head, head


def test_windows_are_shown_to_the_minute_and_give_the_same_figures_back(demo):
    w = ["--warehouse", str(demo)]
    gap = _cli("gap", "h100-sxm-1x", "h200-sxm-1x", *w).splitlines()
    window = re.search(r"window (\S+ \S+)\.\.(\S+ \S+) UTC", gap[0])
    assert window, gap[0]
    again = _cli("gap", "h100-sxm-1x", "h200-sxm-1x", "--between", "2026-10-01..2026-10-31", "--and",
                 f"{window.group(1)}..{window.group(2)}", *w)
    assert next(ln for ln in gap if ln.startswith("gap: ")) in again  # the window as shown is the window used


def test_a_price_without_its_fx_rate_costs_its_row_not_the_answer(demo, tmp_path):
    wh = tmp_path / "w.duckdb"
    shutil.copy(demo, wh)
    w = ["--warehouse", str(wh), "--results", str(tmp_path / "results")]
    got = _costgap("prices", "import", "deploy/prices/examples/illustrative-cn.csv", *w)
    assert got.returncode == 0, got.stdout + got.stderr
    h200 = _costgap("estimate", "--gpu", "H200", "--preset", "1b", "--warehouse", str(wh))
    assert h200.returncode == 0 and "h200-dev" in h200.stdout, h200.stdout + h200.stderr
    every = _costgap("estimate", "--preset", "1b", "--json", "--warehouse", str(wh))
    assert every.returncode == 0, every.stderr
    cny = [r for r in json.loads(every.stdout) if r["provider"] in ("alibaba", "tencent")]
    assert cny and all(r["cost_per_mtok"] is None and r["tokens_per_s"] > 0 for r in cny)
    assert all("no FX rate for CNY" in r["no_cost_reason"] and "costgap fx import deploy/fx_rates.csv"
               in r["no_cost_reason"] for r in cny)
    assert any(r["cost_per_mtok"] for r in json.loads(every.stdout) if r["status"] == "measured")  # the rest answers
    assert _costgap("fx", "import", "deploy/fx_rates.csv", *w).returncode == 0  # the mend the row names
    mended = json.loads(_costgap("estimate", "--preset", "1b", "--json", "--warehouse", str(wh)).stdout)
    assert all(r["cost_per_mtok"] > 0 for r in mended if r["provider"] in ("alibaba", "tencent"))


def test_every_shipped_price_and_fx_file_imports_with_no_format(tmp_path):
    w = ["--warehouse", str(tmp_path / "w.duckdb"), "--results", str(tmp_path / "results")]
    for f in PRICE_FILES:
        got = _costgap("prices", "import", f, *w)
        assert got.returncode == 0, f"prices import {f}: {got.stdout}{got.stderr}"
    for f in FX_FILES:
        got = _costgap("fx", "import", f, *w)
        assert got.returncode == 0, f"fx import {f}: {got.stdout}{got.stderr}"
    unsure = tmp_path / "rates.txt"
    unsure.write_text("a,b\n1,2\n")
    for cmd in (["prices", "import"], ["fx", "import"]):
        got = _costgap(*cmd, str(unsure), *w)
        assert got.returncode == 2 and "--format" in got.stderr and "csv" in got.stderr, got.stderr


def test_skypilot_export_without_a_store_the_instances_reach_is_refused(tmp_path):
    got = _costgap("export", "skypilot", "--all", "--out", str(tmp_path / "sky"))
    assert got.returncode == 2 and "--results" in got.stderr and "s3://" in got.stderr, got.stderr
    assert not (tmp_path / "sky").exists()  # nothing written
    kept = _costgap("export", "skypilot", "--all", "--keep-instance", "--out", str(tmp_path / "kept"))
    assert kept.returncode == 0, kept.stderr
    assert "down: false" in (tmp_path / "kept" / "aws-g5-xlarge.sky.yaml").read_text()


@pytest.mark.parametrize("args, words", [
    (["estimate", "--gpu", "NoSuchGPU"], ["--gpu NoSuchGPU", "no GPU of that name in the datasheet", "H100-SXM"]),
    (["estimate", "--gpu", "RTX4090", "--preset", "1b"], ["--gpu RTX4090", "no instance type with that GPU",
                                                          "--catalog"]),  # a datasheet row, but no type rents it
    (["estimate", "--gpu", "L4"], ["--gpu L4", "no instance type with that GPU", "--catalog"]),
    (["gap", "h100-sxm-1x", "h100-sxm-1x"], ["the same target"]),
    (["tiers", "--tokens", "-5"], ["--tokens -5", "positive number of tokens"]),
    (["targets", "--billing", "foo"], ["--billing 'foo'", "on_demand", "target"]),
    (["targets", "--f", "3"], ["--f 3", "from 0 to 1"]),
    (["gap", "h100-sxm-1x", "h200-sxm-1x", "--currency", "XYZ"], ["--currency 'XYZ'", "ISO 4217"]),
])
def test_refusals_name_the_flag_the_value_and_what_is_allowed(demo, args, words):
    got = _costgap(*args, "--warehouse", str(demo))
    assert got.returncode == 2, got.stdout + got.stderr
    assert all(w in got.stderr for w in words), got.stderr
    assert "Traceback" not in got.stderr and "train_tokens" not in got.stderr


def test_a_catalog_row_and_a_targets_file_row_for_one_type_are_one_row_with_its_price_and_one_gpu_name(demo, tmp_path):
    named = tmp_path / "newcomer-aws-vms.csv"  # the cloud is a word of the name
    shutil.copy(REPO / "tests/fixtures/skypilot/aws-vms-excerpt.csv", named)
    rows = json.loads(_cli("estimate", "--preset", "1b", "--json", "--catalog", str(named), "--warehouse", str(demo)))
    p4d = [r for r in rows if r["instance_type"] == "p4d.24xlarge"]
    assert len(p4d) == 1 and p4d[0]["provider"] == "aws", p4d
    assert p4d[0]["gpu"] == "A100-SXM4-40GB" and p4d[0]["gpu_key"] == "A100-SXM-40GB"  # the targets file's name
    assert p4d[0]["cost_per_mtok"] > 0 and p4d[0]["price_source"].startswith(str(named))  # the catalog's price
    assert not any(r["provider"] == "newcomer-aws" for r in rows)
    odd = tmp_path / "prices.csv"
    shutil.copy(named, odd)
    refused = _costgap("estimate", "--catalog", str(odd), "--warehouse", str(demo))
    assert refused.returncode == 2 and "--provider" in refused.stderr, refused.stderr
    given = json.loads(_cli("estimate", "--preset", "1b", "--json", "--catalog", str(odd), "--provider", "aws",
                            "--warehouse", str(demo)))
    assert len([r for r in given if r["instance_type"] == "p4d.24xlarge"]) == 1


def test_estimate_prints_one_line_per_type_and_the_assumptions_on_request(demo):
    w = ["--preset", "1b", "--warehouse", str(demo)]
    plain, explained = _cli("estimate", *w).splitlines(), _cli("estimate", "--explain", *w).splitlines()
    rows = json.loads(_cli("estimate", "--json", *w))
    assert len(plain) == 2 + len(rows)  # the preset's line, the column heads, one line per type
    assert not any(ln.startswith("      - ") for ln in plain)
    assert sum(ln.startswith("      - ") for ln in explained) >= sum(len(r["assumptions"]) for r in rows
                                                                    if r["status"] == "estimate")
