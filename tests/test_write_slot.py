"""The one write path: a warehouse's write slot serialises its writers, and a rebuild loses nothing.

    .venv/bin/pytest -q tests/test_write_slot.py

Both tests run real `costgap` processes against the session's real Prefect server and real DuckDB
files. The first turns DuckDB's file-lock wait off (COSTGAP_LOCK_TIMEOUT_S=0: a writer that finds
the file locked fails at once) and watches the slot's holders while four writers run at once: with
no conflict and never more than one holder, it is the slot, not the file lock, that serialises
them. The second starts ingests while a rebuild holds the slot and finds every bundle afterwards.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from datetime import timedelta

import pytest

from runtime.write_slot import slot_name
from tests.conftest import COSTGAP, REPO
from tests.factories import BASE_TIME, bundle_doc, write_bundle
from warehouse.db import connect

PRICE_BOOK = "provider,region,instance_type,billing_mode,currency,price,period,effective_from,source\n"


def _popen(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([*COSTGAP, *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env or dict(os.environ))


class SlotWatch:
    """Samples the active holders of one warehouse's write slot from the Prefect API until stopped."""

    def __init__(self, warehouse: str, every_s: float = 0.05):
        self.name = slot_name(warehouse)
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every_s,), daemon=True)

    def _run(self, every_s: float) -> None:
        from prefect.client.orchestration import get_client

        with get_client(sync_client=True) as client:
            while not self._stop.is_set():
                self.samples.append(client.read_global_concurrency_limit_by_name(self.name).active_slots)
                time.sleep(every_s)

    def __enter__(self) -> "SlotWatch":
        from runtime.write_slot import ensure_write_limit

        ensure_write_limit(self.name, progress=None)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _bundles(folder, n: int, offset: int, target: str = "local") -> None:
    for i in range(n):
        write_bundle(folder, bundle_doc(target=target, seq=offset + i,
                                        started_at=BASE_TIME + timedelta(hours=offset + i)))


@pytest.mark.slow
def test_the_slot_not_the_file_lock_serialises_writers(tmp_path):
    wh = str(tmp_path / "wh.duckdb")
    _bundles(tmp_path / "a", 12, 0)
    _bundles(tmp_path / "b", 12, 100)
    book = tmp_path / "book.csv"
    book.write_text(PRICE_BOOK + "aws,us-east-1,g5.xlarge,on_demand,USD,1.006,hour,2026-10-01,test\n")
    env = dict(os.environ, COSTGAP_LOCK_TIMEOUT_S="0")  # no waiting on DuckDB's lock: a clash fails at once
    with SlotWatch(wh) as watch:
        procs = [_popen("ingest", str(tmp_path / "a"), "--warehouse", wh, "--batch-size", "2", env=env),
                 _popen("ingest", str(tmp_path / "b"), "--warehouse", wh, "--batch-size", "2", env=env),
                 _popen("prices", "import", str(book), "--warehouse", wh, "--results", str(tmp_path / "r"), env=env),
                 _popen("prices", "import", str(book), "--warehouse", wh, "--results", str(tmp_path / "r"), env=env)]
        results = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    for out, err, rc in results:
        assert rc == 0, out + err
        assert "is busy" not in err and "Could not set lock" not in err
    assert max(watch.samples) == 1, "more than one writer held the slot at once"
    assert watch.samples.count(1) >= 3, f"the slot was hardly ever seen held: {watch.samples}"
    con = connect(wh, read_only=True)
    try:
        assert con.execute("select count(*) from runs").fetchone()[0] == 24
        assert con.execute("select count(*) from prices").fetchone()[0] == 1
    finally:
        con.close()


@pytest.mark.slow
def test_ingests_during_a_rebuild_are_all_kept(tmp_path):
    store, wh = tmp_path / "results", str(tmp_path / "wh.duckdb")
    _bundles(store / "local", 150, 0)  # enough that the rebuild holds the slot for several seconds
    con = connect(wh)
    con.close()
    late = {name: tmp_path / name for name in ("late-1", "late-2", "late-3")}
    for k, folder in enumerate(late.values()):
        _bundles(folder, 4, 160 + 10 * k, target=f"box-{k}")  # dated after the store's 150, before today
    with SlotWatch(wh, every_s=0.02) as watch:
        rebuild = _popen("rebuild", "--from", str(store), "--warehouse", wh)
        deadline = time.monotonic() + 120
        while not watch.samples or watch.samples[-1] != 1:  # the rebuild holds the slot now
            assert time.monotonic() < deadline and rebuild.poll() is None, rebuild.communicate()
            time.sleep(0.02)
        ingests = [_popen("ingest", str(folder), "--warehouse", wh) for folder in late.values()]
        done = [p.communicate(timeout=300) + (p.returncode,) for p in [rebuild, *ingests]]
    for out, err, rc in done:
        assert rc == 0, out + err
    assert done[0][0].startswith("rebuilt ")
    con = connect(wh, read_only=True)
    try:
        got = dict(con.execute("select target, count(*) from runs group by 1").fetchall())
        batches = con.execute("select source, started_at, finished_at from land_batches order by finished_at").fetchall()
    finally:
        con.close()
    assert got == {"local": 150, "box-0": 4, "box-1": 4, "box-2": 4}
    rebuilt = [b for b in batches if b[0] == "rebuild"]
    assert all(b[2] > rebuilt[-1][2] for b in batches if b[0] == "cli"), "an ingest landed before the swap"
    assert max(watch.samples) == 1
