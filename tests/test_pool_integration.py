"""Fan-out through real Prefect work pools: a server, two process pools standing in for two
instance types, a worker each, deployments from deploy/prefect.yaml (rendered for test targets).

    .venv/bin/pytest -q -m slow tests/test_pool_integration.py

1. `prefect deployment run 'compare/adhoc' --param targets='["cpu-a","cpu-b"]' --watch` (on a
   control worker) and `costgap run --targets cpu-a,cpu-b` both land both bundles with attempts
   and Prefect run ids, and leave warehouse rows of the same shape.
2. Worker b is killed (its whole process tree, by pid) while its probe runs: cpu-a still lands,
   cpu-b is a crashed attempt, the compare run ends Completed named "Partial", and the rerun rate
   of cpu-b reflects the crash.
"""

from __future__ import annotations

import sys
import time
from collections import Counter

import duckdb
import pytest

from tests.pool_harness import Harness, kill_tree
from warehouse.sql import load_query

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]  # servers, workers and flows: minutes on a busy 2-core box

TARGETS = """
[[target]]
id = "cpu-a"
provider = "test"
instance_type = "cpu-a"
dispatch = "pool"
work_pool = "pool-a"
timeout_s = 240
skip = ["finetune", "storage", "gemm_sustained", "feed", "hostdev"]  # lean: the fan-out is tested, not the probe

[[target]]
id = "cpu-b"
provider = "test"
instance_type = "cpu-b"
dispatch = "pool"
work_pool = "pool-b"
timeout_s = 240
skip = ["finetune", "storage", "gemm_sustained", "feed", "hostdev"]  # lean: the fan-out is tested, not the probe
"""


def _client(api: str):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    class _Ctx:
        def __enter__(self):
            self._s = temporary_settings({PREFECT_API_URL: api})
            self._s.__enter__()
            self._c = get_client(sync_client=True)
            return self._c.__enter__()

        def __exit__(self, *exc):
            self._c.__exit__(*exc)
            self._s.__exit__(*exc)

    return _Ctx()




def _running_probe(api: str, deployment: str, after, timeout_s: float = 180):
    """The first probe flow run of `deployment` created after `after` that is Running."""
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterName

    flow, name = deployment.split("/")
    deadline = time.monotonic() + timeout_s
    with _client(api) as c:
        while time.monotonic() < deadline:
            runs = c.read_flow_runs(deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=[name])))
            for r in runs:
                if r.created and r.created > after and r.state and r.state.is_running():
                    return r
            time.sleep(0.5)
    raise AssertionError(f"no running {deployment} flow run within {timeout_s} s")


def _shape(con, compare_run_id: str) -> dict:
    """What one compare run left in the warehouse, without ids and timings."""
    disp = con.execute("select target, dispatch, status, probe_flow_run_id is not null, run_id is not null "
                       "from dispatches where compare_run_id = ? order by target", [compare_run_id]).fetchall()
    flow_ids = [r[0] for r in con.execute(
        "select probe_flow_run_id from dispatches where compare_run_id = ?", [compare_run_id]).fetchall()]
    runs = con.execute("select target, status, origin_kind, flow_run_id is not null from runs "
                       "where flow_run_id in (select unnest(?)) order by target", [flow_ids]).fetchall()
    attempts = Counter(con.execute(
        "select target, task, attempt, state, run_id is not null from attempts where source = 'prefect' "
        "and (source_id in (select unnest(?)) or run_id in (select run_id from dispatches where compare_run_id = ?))",
        [flow_ids, compare_run_id]).fetchall())
    bundle_attempts = con.execute(
        "select count(*) from attempts where source = 'bundle' and run_id in "
        "(select run_id from dispatches where compare_run_id = ?)", [compare_run_id]).fetchone()[0]
    return {"dispatches": disp, "runs": runs, "prefect_attempts": attempts, "has_bundle_attempts": bundle_attempts > 0}


def _compare_runs(con) -> list[str]:
    return [r[0] for r in con.execute(
        "select compare_run_id from dispatches group by 1 order by min(recorded_at)").fetchall()]


def test_pool_fanout_lands_both_then_survives_a_dead_worker(tmp_path):
    targets = tmp_path / "targets.toml"
    targets.write_text(TARGETS)
    wh = tmp_path / "wh.duckdb"
    env = {"COSTGAP_TARGETS": str(targets), "COSTGAP_WAREHOUSE": str(wh), "COSTGAP_SITE": str(tmp_path / "site"),
           "COSTGAP_RESULTS": str(tmp_path / "results")}
    with Harness(tmp_path / "h", env) as h:
        for pool in ("pool-a", "pool-b", "costgap-control"):
            h.worker(pool)
        yaml_file = tmp_path / "prefect.yaml"
        h.run([sys.executable, "-m", "deploy.render", "--targets-file", str(targets), "--out", str(yaml_file)])
        h.run(["prefect", "--no-prompt", "deploy", "--all", "--prefect-file", str(yaml_file)])
        h.wait_workers(["pool-a", "pool-b", "costgap-control"])

        # 1a. ad hoc through Prefect: a control worker runs compare/adhoc, which fans out to the pools
        r = h.run(["prefect", "deployment", "run", "compare/adhoc", "--param", 'targets=["cpu-a","cpu-b"]',
                   "--watch"], timeout=400, check=False)
        assert r.returncode == 0, f"{r.stdout[-2000:]}\n{r.stderr[-2000:]}\n{h.tail('worker-costgap-control')}"
        # 1b. the same from the CLI (compare in this process tree, probes on the pools)
        r = h.run(["costgap", "run", "--targets", "cpu-a,cpu-b"], timeout=400, check=False)
        assert r.returncode == 0, f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        with duckdb.connect(str(wh), read_only=True) as con:
            adhoc, cli = _compare_runs(con)
            s_adhoc, s_cli = _shape(con, adhoc), _shape(con, cli)
        assert s_adhoc == s_cli
        assert s_cli["dispatches"] == [("cpu-a", "pool", "landed", True, True), ("cpu-b", "pool", "landed", True, True)]
        assert s_cli["runs"] == [("cpu-a", "ok", "pool", True), ("cpu-b", "ok", "pool", True)]
        assert s_cli["prefect_attempts"][("cpu-a", "probe_flow", 1, "completed", True)] == 1
        assert s_cli["prefect_attempts"][("cpu-b", "probe_child", 1, "completed", True)] == 1
        assert s_cli["has_bundle_attempts"]

        # 2. kill worker b (and the probe it runs) mid-run; a survives, b is a crashed attempt
        from datetime import datetime, timezone

        t0 = datetime.now(timezone.utc)
        h.start("compare-kill", ["costgap", "run", "--targets", "cpu-a,cpu-b"])
        victim = _running_probe(h.api, "probe/cpu-b", t0)
        killed = kill_tree(h.procs["worker-pool-b"].pid)
        assert killed, "worker b was not running"
        rc = h.procs["compare-kill"].wait(timeout=300)
        assert rc == 1, h.tail("compare-kill")  # partial: exit 1
        with duckdb.connect(str(wh), read_only=True) as con:
            last = _compare_runs(con)[-1]
            disp = dict(con.execute("select target, status from dispatches where compare_run_id = ?", [last]).fetchall())
            crashed = con.execute(
                "select state, error_kind, message from attempts where source = 'prefect' and task = 'probe_flow' "
                "and source_id = ?", [str(victim.id)]).fetchall()
            rates = {r[0]: r for r in con.execute(load_query("rerun_rate"), [30, None]).fetchall()}
        assert disp == {"cpu-a": "landed", "cpu-b": "crashed"}
        assert [(s, k) for s, k, _ in crashed] == [("crashed", "crash")] and "pool-b" in crashed[0][2]
        # rerun_rate columns: target, window_start, window_end, attempts, reruns, rerun_rate, flow_attempts,
        # flow_reruns, flow_crashed, ...: b crashed 1 of its 3 probe flow runs, a none of 3
        assert rates["cpu-a"][6:9] == (3, 0, 0) and rates["cpu-a"][5] == 0.0
        assert rates["cpu-b"][6:9] == (3, 1, 1) and rates["cpu-b"][5] > 0.0
        with _client(h.api) as c:
            state = c.read_flow_run(last).state
        assert state.type.value == "COMPLETED" and state.name == "Partial" and "cpu-b (crashed)" in state.message
