"""Price book: periods, imports, sources (CSV/YAML, SkyPilot) and FX, against a real DuckDB file.

    .venv/bin/pytest -q tests/test_pricing.py
"""

from __future__ import annotations

import csv
import os
import shutil
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from tasks.pricing import fx
from tasks.pricing import PriceError, PriceRow, import_rows, import_source
from tasks.pricing.pricebook_file import PriceBookFile
from tasks.pricing.skypilot import SkyPilotCatalog
from tests.cost_support import warehouse

FIXTURES = Path(__file__).parent / "fixtures"
LAMBDA = FIXTURES / "skypilot" / "lambda-vms.csv"
JAN = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _row(amount=2.0, start=JAN, end=None, mode="on_demand", period="hour", currency="USD", itype="gpu_1x_h100",
         source="test row"):
    return PriceRow("lambda", "us-east-1", itype, mode, currency, amount, period, start, source=source,
                    fetched_at=start, effective_to=end)


def _prices(con):
    return con.execute("select provider, region, instance_type, billing_mode, currency, price_per_hour,"
                       " original_amount, original_period, effective_from, effective_to from prices"
                       " order by all").fetchall()


def test_shared_lambda_catalog_lands_one_price_per_instance_type_and_region(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    first = import_source(con, SkyPilotCatalog(str(LAMBDA)))
    with LAMBDA.open(newline="") as fh:
        expected = {(r["InstanceType"], r["Region"]) for r in csv.DictReader(fh) if r["Price"].strip()}
    got = con.execute("select instance_type, region, count(*) from prices group by all").fetchall()
    assert {(i, r) for i, r, _ in got} == expected and all(n == 1 for *_, n in got)
    assert first.rows_new == len(expected) == 323
    h100 = con.execute("select price_per_hour, currency, source from prices where instance_type = 'gpu_1x_h100_sxm5'"
                       " and region = 'europe-central-1'").fetchall()
    assert h100 == [(3.29, "USD", f"{LAMBDA}:240")]  # the catalog's line 240

    before = _prices(con)
    again = import_source(con, SkyPilotCatalog(str(LAMBDA)))  # the identical file: recognised, nothing changes
    assert again.repeat and _prices(con) == before
    copy = tmp_path / "lambda-vms.csv"  # the same prices fetched a day later: still no new period
    shutil.copy(LAMBDA, copy)
    later = datetime.now(timezone.utc) + timedelta(days=1)
    os.utime(copy, (later.timestamp(), later.timestamp()))
    third = import_source(con, SkyPilotCatalog(str(copy)))
    assert (third.rows_new, third.rows_unchanged, third.rows_closed) == (0, 323, 0) and _prices(con) == before


def test_changed_catalog_price_opens_a_new_period(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    import_source(con, SkyPilotCatalog(str(LAMBDA), effective_from=JAN))
    changed = tmp_path / "lambda-vms.csv"
    text = LAMBDA.read_text().splitlines(keepends=True)
    assert text[239].startswith("gpu_1x_h100_sxm5,H100,1.0,26.0,225.0,3.29,europe-central-1,")
    text[239] = text[239].replace(",3.29,", ",2.99,")
    changed.write_text("".join(text))
    feb = JAN + timedelta(days=31)
    s = import_source(con, SkyPilotCatalog(str(changed), effective_from=feb))
    assert (s.rows_new, s.rows_closed, s.rows_unchanged) == (1, 1, 322)
    hist = con.execute("select price_per_hour, effective_from, effective_to from prices where instance_type ="
                       " 'gpu_1x_h100_sxm5' and region = 'europe-central-1' order by effective_from").fetchall()
    assert [(p, f.astimezone(timezone.utc), t and t.astimezone(timezone.utc)) for p, f, t in hist] == [
        (3.29, JAN, feb), (2.99, feb, None)]
    assert con.execute("select count(*) from prices").fetchall()[0][0] == 324


def test_malformed_skypilot_rows_name_their_line(tmp_path):
    lines = LAMBDA.read_text().splitlines(keepends=True)
    bad = tmp_path / "lambda-vms.csv"
    bad.write_text("".join(lines[:5] + ["gpu_1x_a10,A10,1.0,30.0,200.0,abc,us-east-1,,\n"] + lines[5:8]))
    with pytest.raises(PriceError, match=r"lambda-vms.csv:6: field 'Price' = 'abc': expected a price \(a plain decimal"):
        SkyPilotCatalog(str(bad)).fetch()
    bad.write_text("".join(lines[:3] + ["gpu_1x_a10,A10,1.0,30.0,200.0,-0.5,us-east-1,,\n"]))
    with pytest.raises(PriceError, match=r"lambda-vms.csv:4: .*positive"):
        SkyPilotCatalog(str(bad)).fetch()
    bad.write_text("".join(lines[:2] + ["gpu_1x_a10,A10,1.0\n"]))
    with pytest.raises(PriceError, match=r"lambda-vms.csv:3: .*malformed row"):
        SkyPilotCatalog(str(bad)).fetch()
    bad.write_text("InstanceType,Region\nx,y\n")
    with pytest.raises(PriceError, match=r":1: column 'Price' is missing"):
        SkyPilotCatalog(str(bad)).fetch()


@pytest.mark.parametrize("kwargs, message", [
    ({"amount": 0.0}, "positive"),
    ({"amount": -1.0}, "positive"),
    ({"amount": float("nan")}, "expected a number"),
    ({"currency": "XYZ"}, "unknown currency"),
    ({"currency": "usd"}, "unknown currency"),
    ({"mode": "hourly"}, "billing_mode"),
    ({"period": "week"}, "hour, month or year"),
    ({"end": JAN}, "must be after effective_from"),
    ({"source": ""}, "source"),
])
def test_bad_price_rows_are_rejected_naming_the_field(kwargs, message):
    with pytest.raises(PriceError, match=message):
        _row(**kwargs)


def test_monthly_and_yearly_are_normalised_per_hour_keeping_the_original():
    assert _row(amount=1460.0, mode="monthly", period="month").price_per_hour == 2.0  # 1460 / 730 h
    assert _row(amount=17520.0, mode="yearly", period="year").price_per_hour == 2.0  # 17520 / 8760 h
    assert _row(amount=1460.0, mode="monthly", period="month").original_amount == 1460.0


def test_overlapping_periods_are_rejected_naming_both_rows(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    import_rows(con, [_row(2.0, JAN, JAN + timedelta(days=30), source="book.csv:2")], source_kind="t",
                source="book.csv", fetched_at=JAN)
    before = _prices(con)
    clash = _row(2.5, JAN + timedelta(days=10), JAN + timedelta(days=40), source="other.csv:7")
    with pytest.raises(PriceError) as e:
        import_rows(con, [_row(9.0, JAN + timedelta(days=90), itype="other"), clash], source_kind="t",
                    source="other.csv", fetched_at=JAN)
    assert "other.csv:7" in str(e.value) and "book.csv:2" in str(e.value) and "overlaps" in str(e.value)
    assert _prices(con) == before  # all or nothing: the non-conflicting row did not land either
    with pytest.raises(PriceError, match="a.csv:3.*overlaps.*a.csv:2"):  # within one import as well
        import_rows(con, [_row(3.0, JAN, JAN + timedelta(days=60), itype="x", source="a.csv:2"),
                          _row(3.5, JAN + timedelta(days=5), itype="x", source="a.csv:3")],
                    source_kind="t", source="a.csv", fetched_at=JAN)


def test_open_periods_close_in_order_and_backfill_stops_at_the_next_period(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    mar, may = JAN + timedelta(days=59), JAN + timedelta(days=120)
    import_rows(con, [_row(2.0, mar), _row(2.2, may)], source_kind="t", source="s", fetched_at=mar)
    import_rows(con, [_row(1.8, JAN)], source_kind="t", source="older", fetched_at=mar)  # a backfilled older price
    got = con.execute("select price_per_hour, effective_from, effective_to from prices order by effective_from").fetchall()
    assert [(p, f.astimezone(timezone.utc), t and t.astimezone(timezone.utc)) for p, f, t in got] == [
        (1.8, JAN, mar), (2.0, mar, may), (2.2, may, None)]


def test_csv_and_yaml_price_books(tmp_path):
    book = tmp_path / "book.csv"
    book.write_text("provider,region,instance_type,billing_mode,currency,price,period,effective_from,source\n"
                    "aliyun,cn-hangzhou,ecs.gn7i-c8g1.2xlarge,monthly,CNY,5000,month,2026-01-01,contract 42\n"
                    "aliyun,cn-hangzhou,ecs.gn7i-c8g1.2xlarge,on_demand,CNY,11.5,,2026-01-01,list price page\n")
    rows = PriceBookFile(str(book)).fetch()
    assert [(r.billing_mode, r.original_period, round(r.price_per_hour, 6)) for r in rows] == [
        ("monthly", "month", round(5000 / 730, 6)), ("on_demand", "hour", 11.5)]
    book.write_text(book.read_text() + "aliyun,cn-hangzhou,x,on_demand,RMB,1,,2026-01-01,page\n")
    with pytest.raises(PriceError, match=r"book.csv:4: field 'currency' = 'RMB': unknown currency"):
        PriceBookFile(str(book)).fetch()
    book.write_text("provider,region,instance_type,billing_mode,currency,price,effective_from,source\n"
                    "a,b,c,on_demand,USD,1.0,2026-01-01,\n")
    with pytest.raises(PriceError, match=r"book.csv:2: field 'source' is missing"):
        PriceBookFile(str(book)).fetch()
    book.write_bytes("\ufeffprovider,region,instance_type,billing_mode,currency,price,effective_from,source\n"
                     "a,b,c,on_demand,USD,1.0,2026-01-01,spreadsheet export\n".encode())  # a BOM, as Excel writes
    assert PriceBookFile(str(book)).fetch()[0].provider == "a"
    yml = tmp_path / "book.yaml"
    yml.write_text("source: contract 7 (2026-01)\nprovider: tencent\nrows:\n"
                   "  - {region: ap-shanghai, instance_type: GN10Xp.2XLARGE40, billing_mode: yearly, currency: CNY,"
                   " price: 87600, period: year, effective_from: 2026-01-01}\n"
                   "  - {region: ap-shanghai, instance_type: GN10Xp.2XLARGE40, billing_mode: on_demand, currency: CNY,"
                   " price: 0, effective_from: 2026-01-01}\n")
    with pytest.raises(PriceError, match=r"book.yaml:5: row 2: .*positive"):
        PriceBookFile(str(yml), "yaml").fetch()


def test_fx_rates_are_dated_and_a_missing_rate_is_an_error(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    rates = tmp_path / "fx.csv"
    rates.write_text("currency,rate_date,units_per_usd,source\nCNY,2026-01-01,7.0,test\nCNY,2026-06-01,7.2,test\n"
                     "EUR,2026-01-01,0.9,test\n")
    assert fx.import_fx(con, str(rates)) == {"file": str(rates), "rows": 3, "new": 3, "unchanged": 0}
    assert fx.import_fx(con, str(rates))["new"] == 0
    assert fx.rate(con, "CNY", date(2026, 5, 31)) == 7.0 and fx.rate(con, "CNY", date(2026, 6, 1)) == 7.2
    assert fx.convert(con, 14.4, "CNY", "EUR", date(2026, 7, 1)) == pytest.approx(14.4 / 7.2 * 0.9)
    assert fx.rate(con, "USD", date(2020, 1, 1)) == 1.0  # the pivot
    with pytest.raises(fx.FxError, match="no FX rate for EUR on or before 2025-12-31"):
        fx.rate(con, "EUR", date(2025, 12, 31))
    with pytest.raises(fx.FxError, match="no FX rate for GBP"):
        fx.rate(con, "GBP", date(2026, 7, 1))
    rates.write_text("currency,rate_date,units_per_usd,source\nCNY,2026-01-01,7.1,other\n")
    with pytest.raises(fx.FxError, match="conflicts with the stored rate 7.0"):
        fx.import_fx(con, str(rates))
    rates.write_text("currency,rate_date,units_per_usd,source\nXXX,2026-01-01,7.1,other\n")
    with pytest.raises(fx.FxError, match=r"fx.csv:2: field 'currency' = 'XXX'"):
        fx.import_fx(con, str(rates))


def test_shipped_example_books_and_rates_import(tmp_path):
    from tasks.pricing import config

    con = warehouse(tmp_path / "w.duckdb")
    repo = Path(__file__).parent.parent
    assert fx.import_fx(con, str(repo / "deploy" / "fx_rates.csv"))["new"] == 20  # the ECB's 2026-10-30 rates
    books = sorted((repo / "deploy" / "prices").rglob("*.csv")) + sorted((repo / "deploy" / "prices").rglob("*.yaml"))
    assert [p.relative_to(repo).as_posix() for p in books] == [
        "deploy/prices/examples/illustrative-cn.csv", "deploy/prices/lambda.csv",
        "deploy/prices/examples/contract-example.yaml"]
    for path in books:
        s = import_source(con, PriceBookFile(str(path), "yaml" if path.suffix == ".yaml" else "csv"))
        assert s.rows_new > 0
        if "examples" in path.parts:  # offline examples say what they are on every row
            assert {r[0].startswith("ILLUSTRATIVE") for r in con.execute(
                "select source from prices where import_id = ?", [s.import_id]).fetchall()} == {True}
    assert con.execute("select count(*) from prices where original_period = 'year'").fetchall() == [(1,)]
    assert not con.execute("select count(*) from prices where source = ''").fetchall()[0][0]
    cfg = config.load(str(repo / "deploy" / "prices" / "sources.toml"))  # the real sources, configured
    assert cfg.daily.sources == ["alibaba", "tencent", "azure-gpu"] and cfg.daily.fx == ["ecb"]
    assert cfg.tencent.zones["ap-guangzhou"] and cfg.tencent.image_id


def test_archived_imports_replay_into_an_identical_price_book(tmp_path):
    from typer.testing import CliRunner

    from cli.main import app
    from tasks.pricing import replay_imports

    wh, results = str(tmp_path / "w.duckdb"), str(tmp_path / "results")
    changed = tmp_path / "lambda-vms.csv"
    text = LAMBDA.read_text().splitlines(keepends=True)
    text[239] = text[239].replace(",3.29,", ",2.99,")
    changed.write_text("".join(text))
    runner = CliRunner()
    for args in (["prices", "import", str(LAMBDA), "--format", "skypilot", "--effective-from", "2026-01-01"],
                 ["prices", "import", str(LAMBDA), "--format", "skypilot", "--effective-from", "2026-01-01"],
                 ["prices", "import", str(changed), "--format", "skypilot", "--effective-from", "2026-02-01"],
                 ["prices", "import", str(Path(__file__).parent.parent / "deploy" / "fx_rates.csv"), "--format", "fx"]):
        got = runner.invoke(app, [*args, "--warehouse", wh, "--results", results])
        assert got.exit_code == 0, got.output
    assert len(list((tmp_path / "results" / "_prices").glob("*.jsonl*"))) == 3  # the repeat is not archived
    listing = runner.invoke(app, ["prices", "list", "--all", "--warehouse", wh]).output
    assert "lambda/europe-central-1/gpu_1x_h100_sxm5 on_demand: 3.29 USD/h (3.29 USD/hour) 2026-01-01..2026-02-01" in listing
    con = warehouse(wh)
    fresh = warehouse(tmp_path / "rebuilt.duckdb")
    assert replay_imports(fresh, results).startswith("2 price imports (324 periods), 1 FX files")
    strip = "select * exclude (import_id) from {} order by all"
    assert fresh.execute(strip.format("prices")).fetchall() == con.execute(strip.format("prices")).fetchall()
    assert fresh.execute("select * from fx_rates order by all").fetchall() == con.execute(
        "select * from fx_rates order by all").fetchall()


def test_prices_list_flags_stale_prices_with_the_cost_models_rule(tmp_path):
    """`costgap prices list` shows each open price's age and STALE past CostOptions.stale_after_days,
    judged at --on (the same rules.price_age_days + model.is_stale as `costgap gap` and the report)."""
    from typer.testing import CliRunner

    from cli.main import app
    from tasks.cost.model import STALE_AFTER_DAYS

    wh = tmp_path / "w.duckdb"
    con = warehouse(wh)
    import_rows(con, [_row(3.0, end=JAN + timedelta(days=10)), _row(2.5, start=JAN + timedelta(days=10))],
                source_kind="test", source="stale test", fetched_at=JAN + timedelta(days=10))
    # each row's last_seen_at is its fetched_at: the open one was last confirmed on 2026-01-11
    con.close()
    runner = CliRunner()
    limit = int(STALE_AFTER_DAYS)

    def listing(on: date) -> list[str]:
        got = runner.invoke(app, ["prices", "list", "--all", "--on", on.isoformat(), "--warehouse", str(wh)])
        assert got.exit_code == 0, got.output
        return got.output.splitlines()

    closed, current = listing(date(2026, 1, 11) + timedelta(days=limit))
    assert "2026-01-01..2026-01-11 closed  [test row]" in closed
    assert current.endswith(f"2026-01-11..open confirmed {limit} d ago  [test row]")  # at the limit: not stale
    current = listing(date(2026, 1, 11) + timedelta(days=limit + 1))[1]
    assert current.endswith(f"2026-01-11..open confirmed {limit + 1} d ago STALE  [test row]")
    bad = runner.invoke(app, ["prices", "list", "--on", "yesterday", "--warehouse", str(wh)])
    assert isinstance(bad.exception, PriceError)  # a UserError: cli.main.main exits 2 with it
    assert "--on: field 'on' = 'yesterday': expected an ISO date or time" in str(bad.exception)
