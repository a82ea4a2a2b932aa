"""Every command that lands data tells what changed, once (flows/alerts.py after_landing), on the shared
Prefect test server; and where the API is only the command's own one-shot server, it lands and says so.

    .venv/bin/python -m pytest -q tests/test_alerts_landing.py

1. `costgap ingest` of bundles that make b the cheapest of two presets emits exactly one
   costgap.cheapest.changed per preset; the same ingest again emits nothing.
2. `costgap prices import` of a file that raises a's price emits one costgap.price.changed; again, nothing.
Events are read back from the server by their resource (costgap.target.<tag>-...: this test's targets
only, the server is shared); "nothing" is checked against a marker event emitted after the command.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest

from tests import prefect_template
from tests.conftest import COSTGAP, REPO
from tests.factories import BASE_TIME, bundle_doc, write_bundle

pytestmark = pytest.mark.slow  # costgap commands in subprocesses; the one-shot test starts its own server

WAIT_S = 60.0  # the server's event persister flushes every few seconds
PRESETS = ("tiny", "small")
CHEAPEST, PRICE = "costgap.cheapest.changed", "costgap.price.changed"
MARKER = "costgap-test.marker"


def _costgap(*args: str) -> subprocess.CompletedProcess:
    got = subprocess.run([*COSTGAP, *args], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert got.returncode == 0, f"costgap {' '.join(args)}: exit {got.returncode}\n{got.stdout}\n{got.stderr}"
    return got


def _bundles(inbox: Path, target: str, days_ago: tuple[int, ...], tokens_per_s: float) -> None:
    for i, d in enumerate(days_ago):
        doc = bundle_doc(target=target, started_at=BASE_TIME - timedelta(days=d), tokens_per_s=tokens_per_s + i, seq=d)
        doc = bundle_doc(target=target, started_at=BASE_TIME - timedelta(days=d), seq=d,
                         finetune=[{**doc["finetune"][0], "preset": p, "tokens_per_s": tokens_per_s * k + i}
                                   for p, k in zip(PRESETS, (1.0, 0.5))])
        write_bundle(inbox, doc)


def _events(tag: str) -> list:
    """This test's costgap events stored on the server so far (its targets' resources), oldest first."""
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventOccurredFilter, EventResourceFilter
    from prefect.types._datetime import now

    flt = EventFilter(occurred=EventOccurredFilter(since=now("UTC") - timedelta(hours=1), until=now("UTC")),
                      resource=EventResourceFilter(id_prefix=[f"costgap.target.{tag}-"]))
    with get_client(sync_client=True) as c:
        page = c.read_events(flt, limit=50)
        return sorted(page.events, key=lambda e: e.occurred)


def _sent(wh: Path) -> int:
    with duckdb.connect(str(wh), read_only=True) as con:
        return con.execute("select count(distinct event_id) from alerts_sent").fetchone()[0]


def _settle(tag: str, wh: Path) -> list:
    """Every event costgap recorded as emitted is on the server, and nothing after it: a marker emitted now
    (after the command exited, its events drained) is stored once everything before it is."""
    from prefect.events import emit_event
    from prefect.events.worker import EventsWorker

    marker = str(uuid.uuid4())
    emit_event(event=MARKER, resource={"prefect.resource.id": f"costgap.target.{tag}-marker"}, payload={"m": marker})
    EventsWorker.drain_all()
    deadline = time.monotonic() + WAIT_S
    while True:
        got = _events(tag)
        ours = [e for e in got if e.event != MARKER]
        if any(e.payload.get("m") == marker for e in got) and len({e.id for e in ours}) >= _sent(wh):
            return ours
        assert time.monotonic() < deadline, f"events not stored within {WAIT_S:.0f} s: {[e.event for e in got]}"
        time.sleep(0.5)


def test_ingest_and_price_import_tell_once(tmp_path):
    from runtime.write_slot import writer
    from tasks.dispatch.targets import load_targets, sync_targets

    tag = f"t{uuid.uuid4().hex[:8]}"
    a, b = f"{tag}-a", f"{tag}-b"
    targets = tmp_path / "targets.toml"
    targets.write_text("".join(f'[[target]]\nid = "{t}"\nprovider = "test"\nregion = "r1"\ninstance_type = "type-{t}"\n'
                               f'dispatch = "import"\ninbox = "{tmp_path / t}"\n\n' for t in (a, b)))
    wh = tmp_path / "wh.duckdb"
    where = ["--warehouse", str(wh), "--results", str(tmp_path / "results")]
    with writer(str(wh), progress=None) as con:  # as a compare of these import targets would have left it
        sync_targets(con, load_targets(targets))
    header = "provider,region,instance_type,billing_mode,currency,price,period,effective_from,source\n"
    prices = tmp_path / "prices.csv"
    prices.write_text(header + "".join(f"test,r1,type-{t},on_demand,USD,2.0,hour,2026-08-01,test: stated here\n"
                                       for t in (a, b)))
    _costgap("prices", "import", str(prices), "--format", "csv", *where)
    # weeks ago a (1000 tokens/s) is cheaper than b (600) on both presets
    _bundles(tmp_path / "old", a, (40, 39, 38), 1000.0)
    _bundles(tmp_path / "old", b, (40, 39, 38), 600.0)
    _costgap("ingest", str(tmp_path / "old"), "--warehouse", str(wh))
    before = len(_settle(tag, wh))

    # this week b runs twice as fast as a: the cheapest changes on both presets, told by the ingest itself
    _bundles(tmp_path / "new", a, (3, 2, 1), 1000.0)
    _bundles(tmp_path / "new", b, (3, 2, 1), 2000.0)
    got = _costgap("ingest", str(tmp_path / "new"), "--warehouse", str(wh))
    told = _settle(tag, wh)[before:]
    cheapest = [e for e in told if e.event == CHEAPEST]
    assert sorted(e.payload["preset"] for e in cheapest) == sorted(PRESETS), [(e.event, e.payload) for e in told]
    assert {e.resource.id for e in cheapest} == {f"costgap.target.{b}"}
    assert got.stderr.count(f"alert: {CHEAPEST}") == len(PRESETS), got.stderr
    again = _costgap("ingest", str(tmp_path / "new"), "--warehouse", str(wh))
    assert len(_settle(tag, wh)) == before + len(told) and "alert:" not in again.stderr, again.stderr

    # a's price rises: one price change, told by the import
    before = before + len(told)
    raised = tmp_path / "prices-raised.csv"
    raised.write_text(header + f"test,r1,type-{a},on_demand,USD,2.5,hour,2026-11-20,test: a rise\n")
    got = _costgap("prices", "import", str(raised), "--format", "csv", *where)
    told = _settle(tag, wh)[before:]
    price = [e for e in told if e.event == PRICE]
    assert len(price) == 1 and price[0].resource.id == f"costgap.target.{a}", [(e.event, e.payload) for e in told]
    assert f"alert: {PRICE}" in got.stderr, got.stderr
    again = _costgap("prices", "import", str(raised), "--format", "csv", *where)
    assert len(_settle(tag, wh)) == before + len(told) and "alert:" not in again.stderr, again.stderr


def test_a_one_shot_server_lands_and_leaves_the_telling_to_the_next_command(tmp_path):
    """COSTGAP_API=ephemeral: the command's own server dies with it, so nothing is emitted or recorded; one
    line says so, and the next landing command on a lasting server tells it."""
    import os
    import sys

    from runtime.write_slot import writer
    from tasks.dispatch.targets import load_targets, sync_targets

    tag = f"t{uuid.uuid4().hex[:8]}"
    a, b = f"{tag}-a", f"{tag}-b"
    targets = tmp_path / "targets.toml"
    targets.write_text("".join(f'[[target]]\nid = "{t}"\nprovider = "test"\nregion = "r1"\ninstance_type = "type-{t}"\n'
                               f'dispatch = "import"\ninbox = "{tmp_path / t}"\n\n' for t in (a, b)))
    wh = tmp_path / "wh.duckdb"
    with writer(str(wh), progress=None) as con:
        sync_targets(con, load_targets(targets))
    prices = tmp_path / "prices.csv"
    prices.write_text("provider,region,instance_type,billing_mode,currency,price,period,effective_from,source\n"
                      + "".join(f"test,r1,type-{t},on_demand,USD,2.0,hour,2026-08-01,test: stated here\n" for t in (a, b)))
    _costgap("prices", "import", str(prices), "--format", "csv", "--warehouse", str(wh), "--results", str(tmp_path / "r"))
    _bundles(tmp_path / "in", a, (40, 39, 38, 3, 2, 1), 1000.0)
    _bundles(tmp_path / "in", b, (40, 39, 38), 600.0)
    _bundles(tmp_path / "in", b, (3, 2, 1), 2000.0)

    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(COSTGAP_API="ephemeral", PREFECT_HOME=str(tmp_path / "prefect-home"))
    prefect_template.seed(tmp_path / "prefect-home" / "prefect.db")  # a one-shot server, not a first start, is tested
    one_shot = subprocess.run([sys.executable, "-m", "cli.main", "ingest", str(tmp_path / "in"), "--warehouse", str(wh)],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert one_shot.returncode == 0, one_shot.stderr
    assert "landed 12," in one_shot.stdout, one_shot.stdout
    untold = [line for line in one_shot.stderr.splitlines() if line.startswith("alerts: ")]
    assert len(untold) == 1 and "one-shot server" in untold[0] and "the next costgap command" in untold[0], one_shot.stderr
    assert "alert: " not in one_shot.stderr and _sent(wh) == 0

    later = _costgap("ingest", str(tmp_path / "in"), "--warehouse", str(wh))  # nothing new lands; it tells
    assert later.stderr.count(f"alert: {CHEAPEST}") == len(PRESETS), later.stderr
    assert _sent(wh) >= len(PRESETS)


def test_a_rebuild_carries_what_was_told(tmp_path):
    """A rebuild tells nothing and keeps alerts_sent, so the next landing command tells only what is news."""
    from tasks.landing.rebuild import carry_over, insert_carried
    from warehouse.db import connect

    old, new = connect(str(tmp_path / "old.duckdb")), connect(str(tmp_path / "new.duckdb"))
    old.execute("insert into alerts_sent values ('cheapest/tiny', 'b', null, ?, 'b', now(), now(), 'e1', 'ingest', "
                "'{}')", [CHEAPEST])
    assert insert_carried(new, carry_over(old))["alerts_sent"] == 1
    assert new.execute("select key, fingerprint, source from alerts_sent").fetchall() == [("cheapest/tiny", "b", "ingest")]
