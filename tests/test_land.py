"""Landing against real DuckDB files and real Great Expectations: idempotent, atomic, validated."""

from __future__ import annotations

import subprocess
from datetime import timedelta

import pytest

from tasks.landing.land import FACT_TABLES, land_paths, record_prefect_attempts, upsert_target_stub
from tasks.landing.frames import environment_id
from tasks.bundle import parse_bundle
from tasks.canonical import canonical_json
from tests.conftest import COSTGAP, REPO
from tests.factories import BASE_TIME, bundle_doc, write_bundle, write_raw
from warehouse.db import connect



def counts(con) -> dict[str, int]:
    return {t: con.execute(f"select count(*) from {t}").fetchall()[0][0]
            for t in FACT_TABLES + ("quarantine", "validation_results")}


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*COSTGAP, *args], cwd=REPO, capture_output=True, text=True, env=env,
                          timeout=120)


def test_land_directory_then_reingest_adds_nothing(tmp_path, warehouse_file):
    for i in range(3):
        write_bundle(tmp_path / "in" / f"sub{i % 2}", bundle_doc(seq=i, failed_attempts=i))
    con = connect(str(warehouse_file))
    first = land_paths(con, [str(tmp_path / "in")])
    assert len(first.landed) == 3 and first.ok
    before = counts(con)
    assert before["runs"] == 3 and before["measurements"] == 6 and before["attempts"] == 9
    again = land_paths(con, [str(tmp_path / "in")])
    assert again.landed == [] and sorted(again.duplicates) == sorted(first.landed)
    assert counts(con) == before
    statuses = dict(con.execute("select run_id, status from runs").fetchall())
    assert set(statuses.values()) == {"ok"}  # a failed try that was retried still ends ok


def test_environment_row_keyed_by_canonical_sha256(tmp_path, warehouse_file):
    docs = [bundle_doc(seq=0), bundle_doc(seq=1), bundle_doc(seq=2, driver="550.54")]
    for d in docs:
        write_bundle(tmp_path, d)
    con = connect(str(warehouse_file))
    land_paths(con, [str(tmp_path)])
    env_ids = {r[0] for r in con.execute("select environment_id from environments").fetchall()}
    expected = {environment_id(parse_bundle(canonical_json(d)).environment)[0] for d in docs}
    assert env_ids == expected and len(env_ids) == 2
    targets = con.execute("select target, first_seen from targets").fetchall()
    assert [t for t, _ in targets] == ["local"]


@pytest.mark.parametrize(
    "doc, status",
    [
        (bundle_doc(seq=10), "ok"),
        (bundle_doc(seq=11, attempts=[
            {"task": "gemm", "attempt": 1, "state": "completed", "duration_s": 1.0},
            {"task": "finetune", "attempt": 1, "state": "failed", "error_kind": "oom", "duration_s": 1.0}],
            finetune=[]), "partial"),
        (bundle_doc(seq=12, measurements=[], finetune=[], attempts=[
            {"task": "finetune", "attempt": 1, "state": "crashed", "error_kind": "crash", "duration_s": 1.0}]),
         "failed"),
    ],
)
def test_run_status_from_attempts_and_finetunes(tmp_path, warehouse_file, doc, status):
    write_bundle(tmp_path, doc)
    con = connect(str(warehouse_file))
    land_paths(con, [str(tmp_path)])
    assert con.execute("select status from runs").fetchall() == [(status,)]


def test_failing_bundle_is_quarantined_and_facts_unchanged(tmp_path, warehouse_file):
    con = connect(str(warehouse_file))
    write_bundle(tmp_path / "good", bundle_doc(seq=1))
    land_paths(con, [str(tmp_path / "good")])
    before = counts(con)
    over_peak = bundle_doc(seq=2, measurements=[
        {"benchmark": "gemm", "metric": "fp32_tflops", "value": 12.0, "unit": "TFLOP/s",
         "peak": 10.0, "peak_source": "datasheet", "repeats": 3, "statistic": "median"}])
    path = write_bundle(tmp_path / "bad", over_peak)
    good_too = write_bundle(tmp_path / "bad", bundle_doc(seq=3))
    s = land_paths(con, [str(path), str(good_too)])
    assert not s.ok and s.landed == [bundle_doc(seq=3)["bundle_id"]]
    (file, bid, why), = s.quarantined
    assert file == str(path) and bid == over_peak["bundle_id"]
    assert "measurements.efficiency" in why and "1.05" in why and "1.2" in why
    after = counts(con)
    assert after["runs"] == before["runs"] + 1 and after["measurements"] == before["measurements"] + 2
    assert con.execute("select count(*) from runs where run_id = ?", [bid]).fetchall() == [(0,)]
    assert con.execute("select count(*) from measurements where run_id = ?", [bid]).fetchall() == [(0,)]
    kind, raw, field = con.execute(
        "select kind, raw, field from quarantine where bundle_id = ?", [bid]).fetchall()[0]
    assert kind == "quarantined" and field == "measurements.efficiency"
    assert parse_bundle(raw.encode()).bundle_id == bid  # the raw bundle is kept whole
    failed = con.execute(
        "select expectation, column_name from validation_results where run_id = ? and not success",
        [bid]).fetchall()
    assert failed == [("expect_column_values_to_be_between", "efficiency")]
    passed = con.execute("select count(*) from validation_results where run_id = ? and success",
                         [bundle_doc(seq=3)["bundle_id"]]).fetchall()[0][0]
    assert passed >= 15  # every expectation's result is stored, passes included


def test_telemetry_out_of_range_and_out_of_order(tmp_path, warehouse_file):
    tel = {"t": [0.0, 2.0, 1.0], "gpu": [0, 0, 0], "util": [50.0, 140.0, 10.0],
           "mem_util": [1.0, 1.0, 1.0], "power_w": [100.0, 100.0, 100.0],
           "sm_clock_mhz": [1000.0] * 3, "temp_c": [50.0] * 3}
    write_bundle(tmp_path, bundle_doc(seq=5, telemetry=tel))
    con = connect(str(warehouse_file))
    s = land_paths(con, [str(tmp_path)])
    (_, _, why), = s.quarantined
    assert "telemetry.util" in why and "140" in why and "telemetry.t_step" in why
    assert counts(con)["telemetry"] == 0


def test_malformed_json_via_cli(tmp_path, warehouse_file):
    bad = write_raw(tmp_path, "broken.json", '{"schema_version": 1, "target": ')
    r = cli("ingest", str(bad), "--warehouse", str(warehouse_file))
    assert r.returncode == 2, r.stderr  # user input refused
    assert "rejected 1" in r.stdout and "broken.json" in r.stdout and "not valid JSON" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr
    con = connect(str(warehouse_file), read_only=True)
    c = counts(con)
    assert all(c[t] == 0 for t in FACT_TABLES)
    assert con.execute("select kind, field from quarantine").fetchall() == [("rejected", "<file>")]


def test_cli_good_bundles_exit_zero(tmp_path, warehouse_file):
    write_bundle(tmp_path, bundle_doc(seq=7))
    r = cli("ingest", str(tmp_path), "--warehouse", str(warehouse_file))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("landed 1, duplicates 0, quarantined 0, rejected 0")


def test_prefect_attempts_and_target_stub(warehouse_file):
    con = connect(str(warehouse_file))
    assert upsert_target_stub(con, "aws-g5-xlarge") is True
    assert upsert_target_stub(con, "aws-g5-xlarge") is False
    rows = [{"target": "aws-g5-xlarge", "task": "probe", "attempt": 1, "state": "crashed",
             "error_kind": "crash", "duration_s": 3.0, "started_at": BASE_TIME, "source_id": "fr-1"},
            {"target": "aws-g5-xlarge", "task": "probe", "attempt": 2, "state": "completed",
             "duration_s": 30.0, "started_at": BASE_TIME + timedelta(minutes=1), "source_id": "fr-1"}]
    assert record_prefect_attempts(con, rows) == 2
    assert record_prefect_attempts(con, rows) == 0  # a re-run flow adds no duplicates
    assert con.execute("select count(*) from attempts where source = 'prefect'").fetchall() == [(2,)]
    with pytest.raises(ValueError, match="missing"):
        record_prefect_attempts(con, [{"target": "x", "task": "probe"}])


def test_a_refused_file_is_told_under_its_inbox_target_else_the_one_it_names(tmp_path):
    """The quarantine row of a refused file (what its alert is told under): the target whose inbox held it,
    else the well-formed `target` the file itself names, else none (costgap.target.unknown)."""
    from tasks.landing.land import named_target, prepare

    doc = bundle_doc(target="named-t")
    text = canonical_json(doc).decode()
    files = {
        "cut.json": text[: len(text) // 2],  # a cut file names nothing anyone can read
        "tampered.json": text.replace('"profile":"quick"', '"profile":"full"'),  # parses, names named-t
        "array.json": "[1, 2]",
        "hostile.json": '{"schema_version": 2, "target": "../../etc/passwd"}',
    }
    for name, body in files.items():
        write_raw(tmp_path, name, body)
    paths = [str(tmp_path / n) for n in files]

    def told(target):
        rows = prepare(paths, target=target).rejected
        assert len(rows) == len(files)
        return {r["source_uri"].rsplit("/", 1)[-1]: r["target"] for r in rows}

    assert told(None) == {"cut.json": None, "tampered.json": "named-t", "array.json": None, "hostile.json": None}
    assert told("box") == dict.fromkeys(files, "box")
    assert named_target(b"{not json") is None and named_target('{"target": "a.b-1"}') == "a.b-1"
