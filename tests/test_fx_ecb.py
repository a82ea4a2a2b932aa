"""Real FX: the ECB's reference-rate history (a real copy, tests/fixtures/ecb) into fx_rates, and costs in CNY.

    .venv/bin/python -m pytest -q tests/test_fx_ecb.py

The file is the ECB's own eurofxref-hist.zip (1999-01-04 .. 2026-10-30; provenance in
tests/fixtures/ecb/README.md). The expected counts and values below are read from it here with the csv
module, independently of tasks/pricing/ecb.py.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tasks.pricing import ecb, fx
from tasks.pricing.alibaba import AlibabaEcsPrices, ReplayEcs
from tasks.pricing.book import import_fetched
from tasks.pricing.cloud import PricedTarget
from tests.cost_support import T0, add_env, add_price, add_run, add_target, warehouse

ECB_DIR = Path(__file__).parent / "fixtures" / "ecb"
HIST = ECB_DIR / "eurofxref-hist.zip"
ALIBABA = Path(__file__).parent / "fixtures" / "alibaba"


def _table() -> tuple[list[str], list[list[str]]]:
    with zipfile.ZipFile(HIST) as zf:
        text = zf.read("eurofxref-hist.csv").decode()
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], [r for r in rows[1:] if r]


def _cells(currency: str) -> dict[str, tuple[float, float]]:
    """date -> (units per EUR, USD per EUR) for every day the file has both."""
    header, rows = _table()
    c, u = header.index(currency) if currency != "EUR" else None, header.index("USD")
    out = {}
    for r in rows:
        if r[u] != "N/A" and (c is None or r[c] != "N/A"):
            out[r[0]] = (1.0 if c is None else float(r[c]), float(r[u]))
    return out


def _cli(*args: str):
    return CliRunner().invoke(app, [*args])


def test_real_history_lands_every_cny_eur_gbp_jpy_rate(tmp_path):
    wh, results = str(tmp_path / "w.duckdb"), str(tmp_path / "results")
    got = _cli("fx", "import", str(HIST), "--format", "ecb", "--warehouse", wh, "--results", results)
    assert got.exit_code == 0, got.output
    assert "skipped 11260: N/A cells" in got.output
    con = warehouse(wh)
    for cur in ("CNY", "EUR", "GBP", "JPY"):
        expected = _cells(cur)
        stored = {d.isoformat(): (r, s) for d, r, s in con.execute(
            "select rate_date, units_per_usd, source from fx_rates where currency = ?", [cur]).fetchall()}
        assert set(stored) == set(expected), cur  # every day of the file, and no other day
        for day, (per_eur, usd_per_eur) in expected.items():  # the cross rate, to the last bit
            assert stored[day][0] == per_eur / usd_per_eur, (cur, day)
        assert all("ECB euro reference rates" in s for _, s in stored.values())
    assert len(_cells("CNY")) == 5527 and len(_cells("EUR")) == 7126  # CNY is quoted from 2005-04-01 on
    assert fx.rate(con, "CNY", date(2026, 10, 30)) == 7.4326 / 1.1172
    con.close()
    again = _cli("fx", "refresh", "--source", "ecb", "--replay", str(ECB_DIR), "--warehouse", wh, "--results", results)
    assert again.exit_code == 0, again.output
    assert "131260 rates, 0 new, 131260 unchanged" in again.output  # land only what changed: nothing
    archived = list((tmp_path / "results" / "_prices").glob("*-fx-*.jsonl.gz"))
    assert len(archived) == 1  # the unchanged refresh archives nothing


def test_only_days_not_yet_stored_land(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    header, rows = _table()
    older = tmp_path / "eurofxref-hist.csv"  # the file as it was on 2026-09-30
    with older.open("w", newline="") as fh:
        csv.writer(fh).writerows([header, *[r for r in rows if r[0] < "2026-10-01"]])
    first = fx.insert_rates(con, ecb.from_file(str(older)).rows())
    october = [r for r in rows if r[0] >= "2026-10-01"]
    full = ecb.from_file(str(HIST)).rows()
    second = fx.insert_rates(con, full)
    assert second["new"] == len(full) - first["new"] == 20 * len(october)  # 20 costgap currencies a day
    assert {d for _, d, *_ in second["landed"]} == {date.fromisoformat(r[0]) for r in october}


def test_na_cells_are_skipped_never_filled_in(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    fx.insert_rates(con, ecb.from_file(str(HIST)).rows())
    assert con.execute("select min(rate_date) from fx_rates where currency = 'CNY'").fetchall() == [
        (date(2005, 4, 1),)]
    with pytest.raises(fx.FxError, match="no FX rate for CNY on or before 2005-03-31"):
        fx.rate(con, "CNY", date(2005, 3, 31))
    bad = tmp_path / "bad.csv"
    bad.write_text("Date,USD,JPY,CNY,\n2026-01-02,N/A,160.1,7.9,\n2026-01-05,1.1,abc,7.9,\n")
    rates = ecb.from_file(str(bad))
    with pytest.raises(fx.FxError, match=r"bad.csv:3: field 'JPY' = 'abc': expected a rate or N/A \(a plain decimal"):
        rates.rows()
    bad.write_text("Date,USD,JPY,CNY,\n2026-01-02,N/A,160.1,7.9,\n2026-01-05,1.1,N/A,7.7,\n")
    rates = ecb.from_file(str(bad))
    assert [(c, d.isoformat(), r) for c, d, r, *_ in rates.rows()] == [
        ("EUR", "2026-01-05", 1 / 1.1), ("CNY", "2026-01-05", 7.7 / 1.1)]
    assert dict(rates.skipped) == {"days without a USD rate": 1, "N/A cells": 1}
    bad.write_text("Currency,Rate\nUSD,1.1\n")
    with pytest.raises(fx.FxError, match="expected Date,USD,JPY"):
        ecb.from_file(str(bad)).rows()


def _two_targets(con, runs_at: datetime) -> None:
    """A: the Alibaba gn7i, priced in CNY from the recorded DescribePrice answers; B: a Lambda A10 in USD."""
    add_target(con, "A", "alibaba", "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge", gpu_model="A10")
    add_target(con, "B", "lambda", "us-east-1", "gpu_1x_a10", gpu_model="A10")
    add_env(con, "env0")
    for i, (xa, xb) in enumerate([(2100.0, 2000.0), (2150.0, 1950.0), (2050.0, 2050.0)]):
        add_run(con, f"a{i}", "A", runs_at + timedelta(hours=i), xa, failed=int(i == 0))
        add_run(con, f"b{i}", "B", runs_at + timedelta(hours=i), xb)


def test_gap_in_cny_equals_the_usd_result_times_the_days_rate(tmp_path):
    path = tmp_path / "w.duckdb"
    con = warehouse(path)
    src = AlibabaEcsPrices(ReplayEcs(str(ALIBABA)), [PricedTarget("A", "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge")],
                           fetched_at=datetime(2026, 10, 1, tzinfo=timezone.utc))
    import_fetched(con, src, src.fetch())  # 10.88 CNY/h on demand, from 2026-10-01
    add_price(con, "lambda", "us-east-1", "gpu_1x_a10", 0.75, seen=T0)  # USD
    _two_targets(con, T0 + timedelta(days=2))
    con.close()
    assert _cli("fx", "import", str(HIST), "--warehouse", str(path), "--results", str(tmp_path / "r")).exit_code == 0
    as_of = (T0 + timedelta(days=3)).isoformat()
    out = {}
    for cur in ("USD", "CNY"):
        got = _cli("gap", "A", "B", "--json", "--currency", cur, "--as-of", as_of, "--warehouse", str(path))
        assert got.exit_code == 0, got.output
        out[cur] = json.loads(got.output)
    con = warehouse(path)
    day_rate = fx.rate(con, "CNY", (T0 + timedelta(days=2)).date())  # in force on the runs' day: 2026-10-30's
    assert day_rate == 7.4326 / 1.1172
    usd, cny = out["USD"], out["CNY"]
    for side in ("a", "b"):
        for key in ("cost_per_mtok", "price_per_hour"):
            assert cny["components"][side][key] == pytest.approx(usd["components"][side][key] * day_rate, rel=1e-12)
    assert cny["cost_a"] == pytest.approx(usd["cost_a"] * day_rate, rel=1e-12)
    assert cny["cost_b"] == pytest.approx(usd["cost_b"] * day_rate, rel=1e-12)
    assert cny["gap"] == pytest.approx(usd["gap"], rel=1e-12)  # a ratio: the same in any currency
    assert cny["components"]["a"]["price_per_hour"] == 10.88  # A is quoted in CNY: no conversion at all


def test_a_missing_fx_rate_for_the_runs_day_is_a_clear_error(tmp_path):
    path = tmp_path / "w.duckdb"
    con = warehouse(path)
    early = datetime(2005, 3, 14, tzinfo=timezone.utc)  # before the ECB quoted CNY (N/A until 2005-03-31)
    add_price(con, "alibaba", "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge", 10.0, currency="CNY",
              effective_from=datetime(2005, 1, 1, tzinfo=timezone.utc))
    add_price(con, "lambda", "us-east-1", "gpu_1x_a10", 0.75, effective_from=datetime(2005, 1, 1, tzinfo=timezone.utc))
    _two_targets(con, early)
    fx.insert_rates(con, ecb.from_file(str(HIST)).rows())
    con.close()
    got = _cli("gap", "A", "B", "--currency", "USD", "--as-of", (early + timedelta(days=1)).isoformat(),
               "--warehouse", str(path))
    # a UserError: `costgap` (cli.main.main) prints it as one line and exits 2
    assert isinstance(got.exception, fx.FxError)
    assert "no FX rate for CNY on or before 2005-03-14 (3 runs need it)" in str(got.exception)
    con = warehouse(path)
    assert con.execute("select count(*) from fx_rates where currency = 'CNY' and rate_date < '2005-04-01'"
                       ).fetchall() == [(0,)]  # no made-up rate
