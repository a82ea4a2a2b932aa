"""The compare flow: probe every target concurrently, land what came back, rebuild the report.

    costgap run --targets local --profile quick          # embedded default (ephemeral Prefect API)
    prefect deployment run 'compare/adhoc' --param targets='["a","b"]' --watch

Per target (deploy/targets.toml), concurrently on a thread pool:
- `local`: the probe flow as a subflow; the probe itself runs in a child process;
- `pool`: run_deployment("probe/<id>") as a subflow on the target's work pool, watched until it
  ends, its timeout passes or its pool loses every live worker (tasks.dispatch.fanout.wait_for_run);
- `import`: the bundles in the target's inbox.
Bundles are read from the results store and each target lands as soon as its run ends, so a slow
target never holds up the others. Landing (validated by tasks.landing.land) holds the warehouse's write
slot, a Prefect global concurrency limit of 1 (runtime/write_slot.py): concurrent compare runs and
targets queue for the warehouse instead of failing on DuckDB's lock. Each probe flow run's history
is read back from Prefect and landed as attempts. The flow ends Completed when every target
landed, Completed named "Partial" (message lists what is missing, and how many files were refused
beside what landed: such a target is "landed, 1 refused") when some did, and Failed when none did;
the summary dict is the flow's result either way. Each dispatched probe run's span (its flow
run's start to end in Prefect) is recorded as the instance-seconds measuring cost (measuring_runs); with
`max_spend`, a target whose run would exceed its monthly budget is skipped and told (flows/budget.py).
"""

from __future__ import annotations

import os
import threading
from datetime import datetime, timezone
from pathlib import Path

from prefect import flow, get_run_logger, runtime, task
from prefect.cache_policies import NO_CACHE
from prefect.states import Completed, Failed
from prefect.task_runners import ThreadPoolTaskRunner

from runtime import settings
from flows.alerts import after_landing
from flows.budget import budget_gate
from flows.probe import probe
from flows.report import report_and_artifacts
from runtime.write_slot import ensure_write_limit, slot_name, writer
from tasks.cost.measuring import record_runs as record_measuring
from tasks.dispatch import fanout, prefect_runs
from tasks.dispatch.fanout import Outcome
from tasks.dispatch.results import ResultsStore
from tasks.dispatch.targets import Target, load_targets_or_local, select

MAX_PARALLEL = 32  # targets dispatched at once; each waits on a remote worker, not on this CPU


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _client():
    from prefect.client.orchestration import get_client

    return get_client(sync_client=True)


def _history(o: Outcome) -> Outcome:
    """Fill in the probe flow run's attempts as Prefect recorded them."""
    if o.probe_flow_run_id:
        with _client() as client:
            o.attempts = prefect_runs.read_probe_attempts(client, o.probe_flow_run_id, target=o.target)
            o.span = prefect_runs.read_span(client, o.probe_flow_run_id)  # the instance-seconds of measuring
    return o


def _run_local(t: Target, profile: str, results: str, skip: list[str]) -> Outcome:
    o = Outcome(t.id, "local", "failed", started_at=_now())
    state = probe(target=t.id, profile=profile, results=results, skip=sorted(set(skip) | set(t.skip)),
                  timeout_s=t.timeout_s, kind="local", return_state=True)
    o.probe_flow_run_id = str(state.state_details.flow_run_id)
    o.status, o.message = state.type.value.lower(), state.message
    if state.is_completed():
        o.bundle_uris = ResultsStore(results).list_bundles(t.id, o.probe_flow_run_id)
    o.finished_at = _now()
    return _history(o)


def _run_pool(t: Target, profile: str, results: str, skip: list[str], worker_grace_s: float) -> Outcome:
    from prefect.deployments import run_deployment

    log = get_run_logger()
    o = Outcome(t.id, t.dispatch, "failed", started_at=_now())  # pool or kubernetes
    params = {"target": t.id, "profile": profile, "results": results,
              "skip": sorted(set(skip) | set(t.skip)), "timeout_s": t.timeout_s, "kind": "pool"}
    try:
        run = run_deployment(t.deployment, parameters=params, timeout=0, as_subflow=True)
    except Exception as e:  # no such deployment, API down: this target is lost, the others go on
        o.message = f"run_deployment({t.deployment!r}) failed: {e}"
        o.finished_at = _now()
        return o
    o.probe_flow_run_id = str(run.id)
    with _client() as client:
        o.status, o.message = fanout.wait_for_run(
            client, run.id, work_pool=t.work_pool, timeout_s=t.wait_s,  # + the node's scale-up on Kubernetes
            worker_grace_s=worker_grace_s, progress=lambda m: log.info("%s: %s", t.id, m))
    if o.status == "completed":
        o.bundle_uris = ResultsStore(results).list_bundles(t.id, o.probe_flow_run_id)
    o.finished_at = _now()
    return _history(o)


def _run_import(t: Target) -> Outcome:
    import fsspec

    from tasks.dispatch.child import inbox_bundles

    o = Outcome(t.id, "import", "missing", started_at=_now())
    fs, root = fsspec.core.url_to_fs(t.inbox)
    o.bundle_uris = [p if "file" in fs.protocol else fs.unstrip_protocol(p) for p in inbox_bundles(fs, root)]
    o.status = "completed" if o.bundle_uris else "missing"
    o.message = None if o.bundle_uris else f"no bundle in inbox {t.inbox}"
    o.finished_at = _now()
    return o


@task(name="dispatch", cache_policy=NO_CACHE)
def dispatch_target(t: Target, profile: str, results: str, skip: list[str], worker_grace_s: float,
                    warehouse: str, compare_run_id: str) -> Outcome:
    """Probe one target and land what came back at once: a slow target never holds up the rest."""
    get_run_logger().info("%s: dispatching (%s)", t.id, t.dispatch)
    if t.dispatch == "local":
        o = _run_local(t, profile, results, skip)
    elif t.dispatch in ("pool", "kubernetes"):  # a Kubernetes pool is a work pool whose worker makes a Job
        o = _run_pool(t, profile, results, skip, worker_grace_s)
    else:
        o = _run_import(t)
    if o.status == "completed" and not o.bundle_uris:
        o.status, o.message = "missing", f"run completed but no bundle under {results}/{t.id}/"
    get_run_logger().info("%s: %s, %d bundle(s), %d Prefect attempt(s)", t.id, o.status,
                          len(o.bundle_uris), len(o.attempts))
    return land(warehouse, o, compare_run_id)


def land(warehouse: str, o: Outcome, compare_run_id: str) -> Outcome:
    """Land one target's bundles, Prefect attempts and dispatches row, holding warehouse-write."""
    from tasks.estimate.estimate_track import score as score_estimates
    from tasks.landing.land import land_paths, record_prefect_attempts

    log = get_run_logger()
    with writer(warehouse) as con:
        if o.bundle_uris:
            inbox_of = o.target if o.dispatch == "import" else None  # a refused file is told under its inbox
            summary = land_paths(con, o.bundle_uris, source="flow", target=inbox_of)
            fanout.apply_landing(o, summary)
            if summary.landed:  # an estimate is scored when its measurement lands (issue 37.6)
                score_estimates(con)
            log.info("%s: %s", o.target, summary.as_text())
        added = record_prefect_attempts(con, fanout.attempt_rows(o))
        fanout.record_dispatches(con, fanout.dispatch_rows(compare_run_id, [o]))
        record_measuring(con, fanout.measuring_rows(compare_run_id, o))
    log.info("%s: %d Prefect attempt(s) recorded", o.target, added)
    return o


@task(name="sync-targets", cache_policy=NO_CACHE)
def sync_targets(warehouse: str, targets: list[Target]) -> None:
    """The targets file's facts (provider, region, instance type...) into the targets table."""
    from tasks.dispatch import targets as targets_mod

    with writer(warehouse) as con:
        targets_mod.sync_targets(con, targets)


def _preload_landing() -> None:
    import tasks.landing.land  # noqa: F401  (Great Expectations: seconds to import)


@flow(name="compare", task_runner=ThreadPoolTaskRunner(max_workers=MAX_PARALLEL), log_prints=True)
def compare(targets: list[str] | None = None, profile: str = "quick", warehouse: str | None = None,
            site: str | None = None, results: str | None = None, skip: list[str] | None = None,
            targets_file: str | None = None, worker_grace_s: float = 0.0, max_spend: dict[str, float] | None = None,
            currency: str = "USD"):
    """Probe `targets` (all in the targets file when None), land, report. See module docstring."""
    log = get_run_logger()
    warehouse = settings.warehouse_path(warehouse)
    site = settings.site_url(site)
    results = settings.results_url(results)
    if "://" not in results:  # workers elsewhere on this host must find the same directory
        results = str(Path(results).resolve())
    file = settings.targets_path(targets_file)
    explicit = bool(targets_file or os.environ.get("COSTGAP_TARGETS", "").strip())
    chosen = select(load_targets_or_local(file, explicit=explicit), targets, str(file))
    log.info("comparing %d target(s): %s (profile %s)", len(chosen), ", ".join(t.id for t in chosen), profile)
    ensure_write_limit(slot_name(warehouse))
    threading.Thread(target=_preload_landing, daemon=True).start()  # GX imports take seconds:
    # load them while the probes run, not after
    run_id = str(runtime.flow_run.id or "cli")
    synced = sync_targets.submit(warehouse, chosen)
    # a measuring budget ({"total": 500, "<target>": 150} per month in `currency`) skips what would exceed it
    go, skipped = budget_gate(warehouse, chosen, max_spend, currency, run_id) if max_spend else (chosen, [])
    futures = [dispatch_target.submit(t, profile, results, list(skip or []), worker_grace_s, warehouse, run_id)
               for t in go]
    done = {o.target: o for o in [*skipped, *(f.result() for f in futures)]}
    outcomes = [done[t.id] for t in chosen]
    synced.result()
    status, message = fanout.overall(outcomes)
    summary = {"status": status, "message": message, "warehouse": warehouse, "site": site,
               "results": results, "outcomes": [fanout.outcome_dict(o) for o in outcomes]}
    summary.update(report_and_artifacts(warehouse, site, fanout.outcomes_markdown(outcomes), message))
    summary["alerts"] = after_landing(warehouse, summary["index"] or site, "compare")  # events for what changed
    if summary["errors"]:  # the bundles landed, but the report is stale: say so in the state
        status = "partial" if status == "completed" else status
        message = f"{message}; {'; '.join(summary['errors'])}"
        summary.update(status=status, message=message)
    log.info(message)
    if status == "completed":
        return Completed(message=message, data=summary)
    if status == "partial":
        return Completed(name="Partial", message=message, data=summary)
    return Failed(message=message, data=summary)
