"""The warehouse file: migrations applied once, in order, in transactions; read-only opens;
rebuild from the results store gives the same fact tables as incremental landing."""

from __future__ import annotations

import subprocess
from datetime import timedelta

import duckdb
import pytest

from flows.landing import land_into
from flows.rebuild import rebuild
from tasks.landing.land import land_paths, record_prefect_attempts
from tests.conftest import COSTGAP, REPO
from tests.factories import BASE_TIME, bundle_doc, write_bundle, write_raw
from warehouse import db
from warehouse.db import WarehouseNotReady, connect, migrations


def test_migrations_recorded_once_in_order(warehouse_file):
    con = connect(str(warehouse_file))
    rows = con.execute("select version, name from schema_migrations order by version").fetchall()
    shipped = [(v, n) for v, n, _ in migrations()]
    assert rows == shipped and rows[0] == (1, "core") and (10, "landing") in rows
    con.close()
    con = connect(str(warehouse_file))  # re-open: nothing re-applied
    assert db.migrate(con) == []
    assert con.execute("select count(*) from schema_migrations").fetchall() == [(len(shipped),)]


def test_failing_migration_rolls_back(warehouse_file, monkeypatch):
    con = connect(str(warehouse_file))
    good = migrations()
    broken = good + [(998, "half", "create table half_done (i integer); select * from no_such_table;")]
    monkeypatch.setattr(db, "migrations", lambda: broken)
    with pytest.raises(duckdb.CatalogException):
        db.migrate(con)
    tables = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
    assert "half_done" not in tables
    assert con.execute("select max(version) from schema_migrations").fetchall() == [(good[-1][0],)]


def test_read_only_open_needs_a_migrated_file(tmp_path):
    with pytest.raises(WarehouseNotReady, match="no such file"):
        connect(str(tmp_path / "missing.duckdb"), read_only=True)
    duckdb.connect(str(tmp_path / "raw.duckdb")).close()
    with pytest.raises(WarehouseNotReady, match="missing migrations"):
        connect(str(tmp_path / "raw.duckdb"), read_only=True)
    assert not (tmp_path / "missing.duckdb").exists()


def _store(tmp_path):
    """A results store laid out as the flows write it: <target>/<run_key>/<bundle_id>.json."""
    store = tmp_path / "results"
    docs = []
    for i in range(12):
        target = ("local", "aws-g5-xlarge", "gcp-a2")[i % 3]
        doc = bundle_doc(target=target, seq=i, failed_attempts=i % 2, driver="550.1" if i > 6 else None,
                         started_at=BASE_TIME + timedelta(days=i))
        write_bundle(store / target / f"run-{i}", doc)
        docs.append(doc)
    bad = bundle_doc(seq=99, measurements=[{"benchmark": "gemm", "metric": "fp32_tflops", "value": 9.0,
                                            "unit": "TFLOP/s", "peak": 1.0, "repeats": 1, "statistic": "median"}])
    write_bundle(store / "local" / "run-bad", bad)
    write_raw(store / "local" / "run-broken", "broken.json", "{")
    write_raw(store / "local" / "run-x", ".tmp.json.part", "{")  # in-flight upload: ignored
    return store


COMPARE = {
    "runs": "select * exclude (landed_at) from runs order by run_id",
    "environments": "select * from environments order by environment_id",
    "targets": "select * exclude (updated_at) from targets order by target",
    "attempts": "select * from attempts order by run_id, task, attempt, source, source_id",
    "measurements": "select * from measurements order by run_id, seq",
    "finetunes": "select * from finetunes order by run_id, seq",
    "telemetry": "select * from telemetry order by run_id, gpu, t",
    "quarantine": "select bundle_id, source_uri, target, kind, field, reason, raw from quarantine order by bundle_id",
    "validation": "select run_id, suite, expectation, column_name, success, observed from validation_results "
                  "where run_id is not null order by all",
}


def _snapshot(path) -> dict[str, list]:
    con = connect(str(path), read_only=True)
    try:
        return {name: con.execute(sql).fetchall() for name, sql in COMPARE.items()}
    finally:
        con.close()


def test_rebuild_equals_incremental_landing(tmp_path):
    store = _store(tmp_path)
    incremental = tmp_path / "incremental.duckdb"
    land_into(str(incremental), [str(store / "gcp-a2")], batch_size=2)  # in pieces, out of order
    land_into(str(incremental), [str(store / "local")], batch_size=3)
    land_into(str(incremental), [str(store)], batch_size=5)  # everything again: duplicates
    con = connect(str(incremental))
    record_prefect_attempts(con, [{"target": "gcp-a2", "task": "probe", "attempt": 1, "state": "crashed",
                                   "error_kind": "crash", "duration_s": 1.0, "source_id": "fr-9"}])
    con.close()

    rebuilt = tmp_path / "rebuilt.duckdb"
    write_bundle(tmp_path / "junk", bundle_doc(seq=555))  # a stale file to be replaced entirely
    land_into(str(rebuilt), [str(tmp_path / "junk")])
    con = connect(str(rebuilt))
    record_prefect_attempts(con, [{"target": "gcp-a2", "task": "probe", "attempt": 1, "state": "crashed",
                                   "error_kind": "crash", "duration_s": 1.0, "source_id": "fr-9"}])
    con.close()
    result = rebuild(str(store), str(rebuilt), batch_size=4)
    assert len(result.summary.landed) == 12 and len(result.summary.quarantined) == 1
    assert len(result.summary.rejected) == 1 and result.carried["attempts"] == 1
    assert "prices" in result.prices_replayed

    a, b = _snapshot(incremental), _snapshot(rebuilt)
    assert len(a["runs"]) == 12 and len(a["quarantine"]) == 2
    for name in COMPARE:
        assert a[name] == b[name], name
    assert not list(tmp_path.glob("rebuilt.duckdb.rebuild-*"))


def test_rebuild_cli_missing_store_leaves_warehouse(tmp_path):
    wh = tmp_path / "wh.duckdb"
    write_bundle(tmp_path / "in", bundle_doc(seq=3))
    con = connect(str(wh))
    land_paths(con, [str(tmp_path / "in")])
    con.close()
    r = subprocess.run([*COSTGAP, "rebuild", "--from", str(tmp_path / "nope"),
                        "--warehouse", str(wh)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "no such file or directory" in r.stderr
    assert "Traceback" not in r.stderr
    con = connect(str(wh), read_only=True)
    assert con.execute("select count(*) from runs").fetchall() == [(1,)]


def test_rebuild_keeps_price_book_and_target_facts(tmp_path):
    """What no bundle holds survives a rebuild: targets.toml facts, and the price book (replayed
    from the imports archived in the results store)."""
    from tasks.pricing import PriceRow, import_rows
    from tasks.pricing.archive import archive_prices

    store = tmp_path / "results"
    write_bundle(store / "aws-g5" / "r1", bundle_doc(target="aws-g5", seq=1))
    wh = tmp_path / "wh.duckdb"
    land_into(str(wh), [str(store)])
    con = connect(str(wh))
    con.execute("update targets set provider = 'aws', region = 'us-east-1', instance_type = 'g5.xlarge' "
                "where target = 'aws-g5'")
    row = PriceRow(provider="aws", region="us-east-1", instance_type="g5.xlarge", billing_mode="on_demand",
                   currency="USD", original_amount=1.006, original_period="hour",
                   effective_from=BASE_TIME - timedelta(days=30), source="test:1", fetched_at=BASE_TIME)
    summary = import_rows(con, [row], source_kind="csv", source="test.csv", fetched_at=BASE_TIME)
    archive_prices(str(store), summary, [row], BASE_TIME)
    prices_before = con.execute("select * exclude (import_id) from prices").fetchall()
    con.close()
    result = rebuild(str(store), str(wh))
    con = connect(str(wh), read_only=True)
    assert con.execute("select provider, region, instance_type from targets").fetchall() == [
        ("aws", "us-east-1", "g5.xlarge")]
    assert result.prices_replayed.startswith("prices replayed: 1 price imports")
    assert con.execute("select * exclude (import_id) from prices").fetchall() == prices_before
    con.close()


def test_rebuild_replaces_a_corrupt_warehouse(tmp_path):
    store = tmp_path / "results"
    write_bundle(store / "local" / "r1", bundle_doc(seq=31))
    wh = tmp_path / "wh.duckdb"
    wh.write_bytes(b"this is not a duckdb file" * 100)
    result = rebuild(str(store), str(wh))
    assert result.old_unreadable and len(result.summary.landed) == 1
    con = connect(str(wh), read_only=True)
    assert con.execute("select count(*) from runs").fetchall() == [(1,)]
    con.close()
