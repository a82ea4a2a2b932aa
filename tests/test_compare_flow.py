"""The compare flow on a real Prefect test server: a local target (real probe in a child process,
heavy parts skipped), an import target (inbox), a failing target, and `costgap run` from the CLI.

    .venv/bin/pytest -q tests/test_compare_flow.py
"""

from __future__ import annotations

import duckdb
import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.factories import bundle_doc, write_bundle

FAST_SKIP = ["finetune", "storage", "gemm_sustained"]  # the real probe, minus its slow parts


def _targets(tmp_path, local_skip: list[str] | None = None):
    inbox = tmp_path / "inbox"
    write_bundle(inbox, bundle_doc(target="airgap"))
    f = tmp_path / "targets.toml"
    f.write_text(f"""
[[target]]
id = "here"
dispatch = "local"
timeout_s = 300
skip = {local_skip or []!r}

[[target]]
id = "airgap"
dispatch = "import"
inbox = "{inbox}"
""".replace("'", '"'))
    return f


def _kw(tmp_path):
    return {"warehouse": str(tmp_path / "wh.duckdb"), "site": str(tmp_path / "site"),
            "results": str(tmp_path / "results")}


@pytest.mark.slow  # a whole compare: probe processes, landing, report
def test_local_and_import_targets_land_with_prefect_attempts(prefect_harness, tmp_path):
    from prefect.client.orchestration import get_client

    from flows.compare import compare

    state = compare(targets=None, profile="quick", skip=FAST_SKIP, targets_file=str(_targets(tmp_path)),
                    return_state=True, **_kw(tmp_path))
    summary = state.result()
    assert state.is_completed() and state.name == "Completed", state.message
    assert {o["target"]: o["status"] for o in summary["outcomes"]} == {"here": "landed", "airgap": "landed"}
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    try:
        runs = dict(con.execute("select target, origin_kind from runs").fetchall())
        flow_run_id = con.execute("select flow_run_id from runs where target = 'here'").fetchone()[0]
        attempts = con.execute("select task, attempt, state, source_id from attempts where source = 'prefect' "
                               "and target = 'here' order by task").fetchall()
        targets = dict(con.execute("select target, dispatch from targets").fetchall())
    finally:
        con.close()
    assert runs == {"here": "local", "airgap": "cli"}
    assert [(t, a, s) for t, a, s, _ in attempts] == [
        ("probe_child", 1, "completed"), ("probe_flow", 1, "completed"), ("publish", 1, "completed")]
    assert dict((t, i) for t, _, _, i in attempts)["probe_flow"] == flow_run_id
    assert targets == {"here": "local", "airgap": "import"}
    assert (tmp_path / "site" / "index.html").exists() and summary["index"]
    with get_client(sync_client=True) as c:
        keys = {a.key for a in c.read_artifacts()}
    assert {"costgap-headline", "costgap-report"} <= keys

    # the same import bundle again is a duplicate, still a target that landed
    again = compare(targets=["airgap"], targets_file=str(tmp_path / "targets.toml"), return_state=True, **_kw(tmp_path))
    assert again.is_completed() and again.result()["outcomes"][0]["status"] == "duplicate"


@pytest.mark.slow  # a whole compare: probe processes, landing, report
def test_a_failing_target_is_retried_recorded_and_the_run_is_partial(prefect_harness, tmp_path):
    from flows.compare import compare

    # an unknown probe part makes the real probe exit 2: both tries fail, the import target lands
    f = _targets(tmp_path, local_skip=["no-such-part"])
    state = compare(targets=["here", "airgap"], targets_file=str(f), return_state=True, **_kw(tmp_path))
    assert state.is_completed() and state.name == "Partial"
    assert "here (failed)" in state.message
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    try:
        tries = con.execute("select task, attempt, state, error_kind, run_id from attempts "
                            "where source = 'prefect' and target = 'here' order by task, attempt").fetchall()
        disp = con.execute("select target, status, run_id is null from dispatches order by target").fetchall()
    finally:
        con.close()
    assert [t[:4] for t in tries] == [("probe_child", 1, "failed", "other"), ("probe_child", 2, "failed", "other"),
                                      ("probe_flow", 1, "failed", "other")]
    assert all(t[4] is None for t in tries)  # no bundle arrived
    assert disp == [("airgap", "landed", False), ("here", "failed", True)]


@pytest.mark.slow  # a whole compare: probe processes, landing, report
def test_costgap_run_cli_prints_table_and_report_path(prefect_harness, tmp_path):
    f = _targets(tmp_path)
    kw = _kw(tmp_path)
    res = CliRunner().invoke(app, ["run", "--targets", "airgap", "--targets-file", str(f), "--warehouse",
                                   kw["warehouse"], "--site", kw["site"], "--results", kw["results"]])
    assert res.exit_code == 0, res.output
    assert "report:" in res.output and "index.html" in res.output and "airgap" in res.output
    bad = CliRunner().invoke(app, ["run", "--targets", "nope", "--targets-file", str(f), "--warehouse", kw["warehouse"]])
    assert bad.exit_code != 0 and "no target 'nope'" in (bad.output + str(bad.exception))


@pytest.mark.parametrize("flag", ["--targets", "--profile", "--warehouse", "--site", "--results", "--skip"])
def test_run_help_explains_options(flag):
    res = CliRunner().invoke(app, ["run", "--help"])
    assert res.exit_code == 0 and flag in res.output


@pytest.mark.slow  # a whole compare: probe processes, landing, report
def test_pool_target_nobody_picks_up_times_out_and_is_recorded(prefect_harness, tmp_path):
    """A pool whose instance never came up: the run is cancelled at the target's timeout, the
    others land, and the cancelled flow run counts as an attempt (error kind timeout)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import DeploymentCreate, WorkPoolCreate

    from flows.compare import compare
    from runtime.write_slot import slot_name

    with get_client(sync_client=True) as c:
        c.create_work_pool(WorkPoolCreate(name="pool-nobody", type="process"), overwrite=True)
        flow_id = c.create_flow_from_name("probe")
        c.create_deployment(flow_id=flow_id, name="ghost", work_pool_name="pool-nobody",
                            entrypoint="flows/probe.py:probe", path=".")
    f = _targets(tmp_path)
    f.write_text(f.read_text() + '\n[[target]]\nid = "ghost"\ndispatch = "pool"\nwork_pool = "pool-nobody"\ntimeout_s = 3\n')
    state = compare(targets=["ghost", "airgap"], targets_file=str(f), return_state=True, **_kw(tmp_path))
    assert state.name == "Partial" and "ghost (timeout)" in state.message
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    try:
        rows = con.execute("select task, state, error_kind from attempts where source = 'prefect' "
                           "and target = 'ghost'").fetchall()
    finally:
        con.close()
    assert rows == [("probe_flow", "cancelled", "timeout")]
    with get_client(sync_client=True) as c:
        limit = c.read_global_concurrency_limit_by_name(slot_name(str(tmp_path / "wh.duckdb")))
    assert limit.limit == 1 and limit.active_slots == 0  # created if missing, released after landing


@pytest.mark.slow
def test_two_compare_processes_take_turns_on_the_warehouse(prefect_harness, tmp_path):
    """Two `costgap run` processes at once, one warehouse file: their landings take turns (queued on
    the warehouse's write slot, never overlapping) and both land everything, neither fails on the lock."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from prefect.settings import PREFECT_API_URL

    body = ""
    for n in (1, 2):
        inbox = tmp_path / f"inbox-{n}"
        for i in range(8):
            write_bundle(inbox, bundle_doc(target=f"box-{n}", seq=i))
        body += f'[[target]]\nid = "box-{n}"\ndispatch = "import"\ninbox = "{inbox}"\n\n'
    (tmp_path / "targets.toml").write_text(body)
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "COSTGAP_TARGETS": str(tmp_path / "targets.toml"),
           "COSTGAP_WAREHOUSE": str(tmp_path / "wh.duckdb"), "COSTGAP_SITE": str(tmp_path / "site"),
           "COSTGAP_RESULTS": str(tmp_path / "results")}
    exe = str(Path(sys.executable).parent / "costgap")
    procs = [subprocess.Popen([exe, "run", "--targets", f"box-{n}"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for n in (1, 2)]
    outs = [p.communicate(timeout=240)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n".join(o[-2000:] for o in outs)
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    try:
        batches = con.execute("select started_at, finished_at, landed from land_batches where source = 'flow' "
                              "order by started_at").fetchall()
        runs = con.execute("select target, count(*) from runs group by 1 order by 1").fetchall()
    finally:
        con.close()
    assert runs == [("box-1", 8), ("box-2", 8)]
    assert [b[2] for b in batches] == [8, 8]
    assert batches[0][1] <= batches[1][0], f"landings overlapped: {batches}"
