"""Concurrency: two `costgap ingest` and one `costgap report` at once on one warehouse file.

No lock error reaches the user (writers wait, batch by batch; the reader reads one snapshot),
and a process kept waiting past the lock timeout gets one clear line, exit 2."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import COSTGAP, REPO
from tests.factories import BASE_TIME, bundle_doc, write_bundle
from warehouse.db import connect
from datetime import timedelta

LOCK_WORDS = ("Could not set lock", "Conflicting lock", "IOException", "Traceback")


def _popen(*args, env=None):
    return subprocess.Popen([*COSTGAP, *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env or dict(os.environ))


@pytest.mark.slow
def test_two_ingests_and_a_report_at_once(tmp_path):
    wh, site = str(tmp_path / "wh.duckdb"), str(tmp_path / "site")
    seed = tmp_path / "seed"
    write_bundle(seed, bundle_doc(seq=0))
    con = connect(wh)
    from tasks.landing.land import land_paths
    assert land_paths(con, [str(seed)]).ok
    con.close()
    for name, offset in (("a", 1), ("b", 100)):
        for i in range(24):
            write_bundle(tmp_path / name, bundle_doc(seq=offset + i,
                                                     started_at=BASE_TIME + timedelta(hours=offset + i)))
    procs = [
        _popen("ingest", str(tmp_path / "a"), "--warehouse", wh, "--batch-size", "4"),
        _popen("ingest", str(tmp_path / "b"), "--warehouse", wh, "--batch-size", "4"),
        _popen("report", "--warehouse", wh, "--site", site, "--no-images"),
    ]
    results = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    for out, err, rc in results:
        assert rc == 0, out + err
        for word in LOCK_WORDS:
            assert word not in out + err
    assert results[0][0].startswith("landed 24, duplicates 0")
    assert results[1][0].startswith("landed 24, duplicates 0")
    assert (tmp_path / "site" / "index.html").exists()
    con = connect(wh, read_only=True)
    assert con.execute("select count(*), count(distinct run_id) from runs").fetchall() == [(49, 49)]
    assert con.execute("select count(*) from measurements").fetchall() == [(98,)]
    assert con.execute("select sum(landed) from land_batches").fetchall() == [(49,)]
    con.close()


@pytest.mark.slow
def test_clear_message_after_lock_timeout(tmp_path):
    wh = str(tmp_path / "wh.duckdb")
    write_bundle(tmp_path / "in", bundle_doc(seq=1))
    holder = connect(wh)  # this test process holds the file for longer than the timeout
    try:
        env = dict(os.environ, COSTGAP_LOCK_TIMEOUT_S="1")
        procs = [_popen("ingest", str(tmp_path / "in"), "--warehouse", wh, env=env),
                 _popen("report", "--warehouse", wh, "--site", str(tmp_path / "site"),
                        "--no-images", env=env)]
        results = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    finally:
        holder.close()
    for out, err, rc in results:
        assert rc == 2, out + err
        line = err.strip().splitlines()[-1]
        assert line.startswith("costgap: error: warehouse ") and "is busy" in line
        assert f"process {os.getpid()}" in line and "COSTGAP_LOCK_TIMEOUT_S" in line
        assert "Traceback" not in out + err
    con = connect(wh, read_only=True)
    assert con.execute("select count(*) from runs").fetchall() == [(0,)]
    con.close()
