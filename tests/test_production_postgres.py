"""The production topology, run for real: a `prefect server` on this machine's PostgreSQL (and, in the
second run, Prefect's Redis messaging on this machine's Redis), deployments from deploy/prefect.yaml
(rendered for two test targets), two process work pools with a worker each and the control pool's
worker, a *scheduled* compare fan-out, landing, the report, an alert through a real automation, and
then `costgap rebuild` of the same warehouse.

    .venv/bin/pytest -q tests/test_production_postgres.py

Needs PostgreSQL on 127.0.0.1:5432 (trust auth; each run creates and drops its own database) and Redis
on 127.0.0.1:6379 (each run takes one logical database and empties it), as every machine of this
project and CI has (.ci/run checks both first and says so). Where either is missing the test fails,
naming it: production is never tested against a mock.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from datetime import datetime, timedelta, timezone

import duckdb
import pytest

from tests.factories import write_raw
from tests.pool_harness import Harness
from tests.test_alerts_notify import BLOCK, Receiver, _save_block

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]  # servers, workers and flows: minutes on a busy 2-core box
PG = "postgresql+asyncpg://postgres@127.0.0.1:5432/{db}"
REDIS = "redis://127.0.0.1:6379/{db}"
FIRE_IN_S = 20  # the weekly schedule is moved to fire this long after the move
TARGETS = """
[[target]]
id = "cpu-a"
provider = "test"
region = "r1"
instance_type = "type-a"
dispatch = "pool"
work_pool = "pool-a"
timeout_s = 240
skip = ["finetune", "storage", "gemm_sustained", "feed", "hostdev"]

[[target]]
id = "cpu-b"
provider = "test"
region = "r1"
instance_type = "type-b"
dispatch = "pool"
work_pool = "pool-b"
timeout_s = 240
skip = ["finetune", "storage", "gemm_sustained", "feed", "hostdev"]

[[target]]
id = "drop"
provider = "test"
region = "r1"
instance_type = "type-drop"
dispatch = "import"
inbox = "{inbox}"
"""


def _pg(sql: str, db: str = "postgres"):
    import asyncpg

    async def go():
        con = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:5432/{db}", timeout=10)
        try:
            return await con.fetchval(sql)
        finally:
            await con.close()

    try:
        return asyncio.run(go())
    except OSError as e:
        pytest.fail(f"PostgreSQL on 127.0.0.1:5432 is not reachable ({e}); every machine of this project runs it")


def _pg_count(url: str, table: str) -> int:
    return _pg(f"select count(*) from {table}", db=url.rsplit("/", 1)[1])


@pytest.fixture
def database():
    name = f"costgap_it_{uuid.uuid4().hex[:12]}"
    _pg(f'create database "{name}"')
    yield PG.format(db=name)
    _pg(f'drop database if exists "{name}" with (force)')


@pytest.fixture
def redis_db():
    import redis

    db = random.randint(1, 15)
    client = redis.Redis.from_url(REDIS.format(db=db))
    try:
        client.flushdb()
    except redis.ConnectionError as e:
        pytest.fail(f"Redis on 127.0.0.1:6379 is not reachable ({e}); every machine of this project runs it")
    yield REDIS.format(db=db)
    client.flushdb()


def _redis_env(url: str) -> dict[str, str]:
    """Prefect's multi-server setup (docs/deploy.md): events, ordering, leases and docket on Redis."""
    return {"PREFECT_MESSAGING_BROKER": "prefect_redis.messaging", "PREFECT_MESSAGING_CACHE": "prefect_redis.messaging",
            "PREFECT_REDIS_MESSAGING_URL": url, "PREFECT_SERVER_EVENTS_CAUSAL_ORDERING": "prefect_redis.ordering",
            "PREFECT_SERVER_CONCURRENCY_LEASE_STORAGE": "prefect_redis.lease_storage",
            "PREFECT_SERVER_DOCKET_URL": url, "PREFECT_SERVER_DOCKET_NAME": f"costgap-it-{uuid.uuid4().hex[:8]}"}


def _weekly_quick(yaml_text: str) -> str:
    """The rendered prefect.yaml with compare/weekly on the quick profile (the standard one is for GPUs)."""
    head, weekly = yaml_text.split("  - name: weekly\n", 1)
    weekly, rest = weekly.split("  - name: adhoc\n", 1)
    assert "profile: standard" in weekly, weekly
    return head + "  - name: weekly\n" + weekly.replace("profile: standard", "profile: quick") + "  - name: adhoc\n" + rest


def _fire_soon(api: str, name: str) -> None:
    """Replace the deployment's cron by a daily interval whose first run is FIRE_IN_S from now (through the
    API, as `prefect deployment schedule create --replace` does, without a CLI start on a busy box)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import DeploymentScheduleCreate
    from prefect.client.schemas.schedules import IntervalSchedule
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: api}), get_client(sync_client=True) as c:
        deployment = c.read_deployment_by_name(name)
        for old in c.read_deployment_schedules(deployment.id):
            c.delete_deployment_schedule(deployment.id, old.id)
        at = datetime.now(timezone.utc) + timedelta(seconds=FIRE_IN_S)
        c.create_deployment_schedules(deployment.id, [
            DeploymentScheduleCreate(schedule=IntervalSchedule(interval=timedelta(days=1), anchor_date=at), active=True)])


def _scheduled_run(api: str, timeout_s: float):
    """The compare/weekly flow run the scheduler created, once it is final."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterName
    from prefect.settings import PREFECT_API_URL, temporary_settings

    deadline = time.monotonic() + timeout_s
    with temporary_settings({PREFECT_API_URL: api}), get_client(sync_client=True) as c:
        while time.monotonic() < deadline:
            runs = c.read_flow_runs(deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=["weekly"])))
            done = [r for r in runs if r.state and r.state.is_final()]
            if done:
                return done[0], runs
            time.sleep(1)
    raise AssertionError(f"no compare/weekly run finished within {timeout_s} s (runs: "
                         f"{[(r.name, r.state_name, r.auto_scheduled) for r in runs]})")


def _counts(wh) -> dict[str, int]:
    with duckdb.connect(str(wh), read_only=True) as con:
        return {t: con.execute(f"select count(*) from {t}").fetchone()[0]
                for t in ("runs", "measurements", "attempts", "environments", "dispatches")}


@pytest.mark.parametrize("messaging", ["postgres", "postgres+redis"])
def test_scheduled_compare_on_postgres_lands_reports_alerts_and_rebuilds(messaging, database, tmp_path, request):
    inbox = tmp_path / "inbox"
    write_raw(inbox, "broken.json", "{not json")  # the import target's drop: quarantined, and told
    targets = tmp_path / "targets.toml"
    targets.write_text(TARGETS.format(inbox=inbox))
    wh, site, results = tmp_path / "wh.duckdb", tmp_path / "site", tmp_path / "results"
    env = {"COSTGAP_TARGETS": str(targets), "COSTGAP_WAREHOUSE": str(wh), "COSTGAP_SITE": str(site),
           "COSTGAP_RESULTS": str(results), "PREFECT_SERVER_DATABASE_CONNECTION_URL": database,
           "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "2"}
    if messaging == "postgres+redis":
        env.update(_redis_env(request.getfixturevalue("redis_db")))
    recv = Receiver()
    with Harness(tmp_path / "h", env) as h:
        for pool in ("pool-a", "pool-b", "costgap-control"):
            h.worker(pool)
        _save_block(h.api, recv.url)
        h.run(["costgap", "alerts", "apply", "--block", BLOCK])
        rendered = h.run(["python", "-m", "deploy.render", "--targets-file", str(targets)]).stdout
        yaml_file = tmp_path / "prefect.yaml"
        yaml_file.write_text(_weekly_quick(rendered))
        h.run(["prefect", "--no-prompt", "deploy", "--all", "--prefect-file", str(yaml_file)])
        h.wait_workers(["pool-a", "pool-b", "costgap-control"])
        _fire_soon(h.api, "compare/weekly")

        run, all_runs = _scheduled_run(h.api, timeout_s=420)
        assert run.auto_scheduled and run.state.type.value == "COMPLETED", (
            f"{run.state}\n{h.tail('worker-costgap-control')}")
        with duckdb.connect(str(wh), read_only=True) as con:
            disp = dict(con.execute("select target, status from dispatches where compare_run_id = ?",
                                    [str(run.id)]).fetchall())
            sent = con.execute("select count(distinct event_id) from alerts_sent").fetchone()[0]
        assert disp["cpu-a"] == "landed" and disp["cpu-b"] == "landed", disp
        assert (site / "index.html").is_file()
        assert sent >= 1
        told = recv.take(sent, h, wh)  # every emitted event reached the webhook through its automation
        assert any("rejected" in m["body"] for m in told), [m["subject"] for m in told]  # the broken drop

        # rebuilt from the results store alone: the same facts (the refused drop was never archived, so
        # its quarantine row is a record of this warehouse, not a fact a rebuild can know)
        before = _counts(wh)
        h.run(["costgap", "rebuild", "--from", str(results)])
        assert _counts(wh) == before and before["runs"] >= 2
    # the server's state was in PostgreSQL, not in a SQLite file
    assert _pg_count(database, "flow_run") >= 4  # the weekly compare and its two probes, at least
