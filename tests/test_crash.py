"""Crash safety: a real `costgap ingest` SIGKILLed at each landing point leaves the warehouse at
its last committed state; re-running lands the rest, with no duplicate rows.

The kill points are chosen by the COSTGAP_CRASH_AT hook in tasks/landing/land.py (CRASH_POINTS). The
ingests go through the `costgap` entry point, so each is a child forked from the session's warm process
(runtime/warm.py) that dies of the SIGKILL mid-transaction, exactly as a fresh process would, and its client
dies of the same signal; so is the killed `costgap run`."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from flows.landing import land_into
from tasks.landing.land import CRASH_POINTS
from tests.conftest import COSTGAP, REPO
from tests.factories import bundle_doc, write_bundle
from warehouse.db import connect

BATCH = 4  # bundles per transaction in these tests; 10 bundles = 3 batches
N = 10

# (hook value, runs committed when the process dies)
POINTS = [(p, 0) for p in CRASH_POINTS if p != "committed"] + [("committed", BATCH),
                                                                ("before_commit:2", BATCH)]


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bundles")
    for i in range(N):
        tel = {"t": [0.0, 1.0], "gpu": [0, 0], "util": [10.0, 20.0], "mem_util": [1.0, 1.0],
               "power_w": [50.0, 60.0], "sm_clock_mhz": [900.0, 900.0], "temp_c": [40.0, 41.0]}
        write_bundle(folder, bundle_doc(seq=i, telemetry=tel))
    return folder


def facts(wh: str) -> dict[str, int]:
    con = connect(wh, read_only=True)
    try:
        out = {t: con.execute(f"select count(*) from {t}").fetchall()[0][0]
               for t in ("runs", "attempts", "measurements", "finetunes", "telemetry",
                         "land_batches", "validation_results")}
        out["orphans"] = con.execute(
            "select count(*) from measurements m anti join runs r using (run_id)").fetchall()[0][0]
        return out
    finally:
        con.close()


@pytest.fixture(scope="module")
def crashed(bundles, tmp_path_factory):
    """Every kill point at once (one warehouse each, processes in parallel: the box is small)."""
    procs = {}
    for point, _ in POINTS:
        wh = str(tmp_path_factory.mktemp("crash") / "wh.duckdb")
        connect(wh).close()  # the previous committed state: an empty, migrated warehouse
        env = dict(os.environ, COSTGAP_CRASH_AT=point)
        procs[point] = (wh, subprocess.Popen(  # the `costgap` entry point: forked from the session's warm
            [*COSTGAP, "ingest", str(bundles), "--warehouse", wh,  # process, it dies of SIGKILL and so does its client
             "--batch-size", str(BATCH)], cwd=REPO, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
    out = {}
    for point, (wh, proc) in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        out[point] = (wh, proc.returncode, stdout + stderr)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("point, committed", POINTS, ids=[p for p, _ in POINTS])
def test_sigkill_leaves_last_committed_state(bundles, crashed, point, committed):
    wh, returncode, output = crashed[point]
    assert returncode == -signal.SIGKILL, (returncode, output)
    state = facts(wh)
    assert state["runs"] == committed
    assert state["measurements"] == 2 * committed and state["telemetry"] == 2 * committed
    assert state["attempts"] == 2 * committed and state["orphans"] == 0
    assert state["land_batches"] == committed // BATCH
    summary = land_into(wh, [str(bundles)], batch_size=BATCH)  # the re-run lands the rest
    assert summary.ok and len(summary.landed) == N - committed
    assert len(summary.duplicates) == committed
    final = facts(wh)
    assert final["runs"] == N and final["measurements"] == 2 * N and final["telemetry"] == 2 * N
    assert final["attempts"] == 2 * N and final["finetunes"] == N


@pytest.mark.slow
def test_compare_flow_killed_while_landing_reruns_without_duplicates(tmp_path):
    """`costgap run` SIGKILLed inside its landing transaction, then run again: one run, and no
    attempt or dispatch row twice.

    Both runs go through the `costgap` entry point on the session's Prefect server, as a person's two
    commands on one machine do (the first forked from the session's warm process dies of the SIGKILL, and
    so does its client). The killed run still holds its warehouse's write slot (runtime/write_slot.py): the
    re-run finds the holder recorded beside the warehouse dead and frees the slot at once, instead of
    waiting for the lease to expire."""
    inbox = tmp_path / "inbox"
    write_bundle(inbox, bundle_doc(target="airgap", seq=3))
    targets = tmp_path / "targets.toml"
    targets.write_text(f'[[target]]\nid = "airgap"\ndispatch = "import"\ninbox = "{inbox}"\n')
    wh = str(tmp_path / "wh.duckdb")
    args = [*COSTGAP, "run", "--targets", "airgap", "--targets-file", str(targets),
            "--warehouse", wh, "--site", str(tmp_path / "site"), "--results", str(tmp_path / "results")]
    env = dict(os.environ)
    log = tmp_path / "run1.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(args, cwd=REPO, env=dict(env, COSTGAP_CRASH_AT="before_commit"),
                                stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=300)
        finally:
            try:  # a fresh process (the warm one not ready yet) dies with everything it started
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    out = log.read_text()
    assert proc.returncode == -signal.SIGKILL, out[-2000:]
    con = connect(wh, read_only=True)
    assert con.execute("select count(*) from runs").fetchall() == [(0,)]
    con.close()
    log2 = tmp_path / "run2.log"
    with open(log2, "w") as fh:
        again = subprocess.Popen(args, cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        try:
            again.wait(timeout=300)
        finally:
            try:
                os.killpg(again.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert again.returncode == 0, log2.read_text()[-3000:]
    con = connect(wh, read_only=True)
    try:
        assert con.execute("select count(*), count(distinct run_id) from runs").fetchall() == [(1, 1)]
        dup_attempts = con.execute(
            "select count(*) from (select source, source_id, task, attempt, target, count(*) as n "
            "from attempts group by all having n > 1)").fetchall()[0][0]
        assert dup_attempts == 0
        tables = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
        if "dispatches" in tables:
            assert con.execute("select count(*) from dispatches where status = 'landed'").fetchall() == [(1,)]
    finally:
        con.close()
