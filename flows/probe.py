"""The probe flow: runs on a target's worker (or locally), writes the bundle to the results store.

    prefect deployment run 'probe/local' --param profile=quick      # via a worker (deploy/prefect.yaml)
    python -c "from flows.probe import probe; print(probe('local', 'quick', 'results'))"

The probe itself runs in a child process (tasks.dispatch.child), so a torch crash or an OOM kill fails a
task run, which Prefect retries and records (run_count, state history: tasks.dispatch.prefect_runs reads
them back). The bundle lands in <results>/<target>/<flow_run_id>/, where the compare flow looks.
"""

from __future__ import annotations

import tempfile

from prefect import flow, get_run_logger, runtime, task

from tasks.dispatch import child
from tasks.dispatch.results import ResultsStore

PROBE_RETRIES = 1  # one retry absorbs a transient failure (a flaky driver, an OOM on a busy GPU)


class ProbeFailed(RuntimeError):
    """The probe child failed; the message starts with its error kind (oom, crash, ...)."""


@task(retries=PROBE_RETRIES, retry_delay_seconds=2)
def probe_child(profile: str, target: str, out_dir: str, skip: list[str], origin: dict,
                timeout_s: float) -> str:
    log = get_run_logger()
    res = child.run_probe_child(profile, target, out_dir, skip=skip, origin=origin,
                                timeout_s=timeout_s, log=log.info)
    if not res.ok:
        raise ProbeFailed(f"{res.error_kind}: probe exited {res.returncode}: {res.stderr_tail[-1500:]}")
    log.info("probe wrote %s in %.1f s", res.bundle, res.duration_s)
    return str(res.bundle)


@task
def publish(results: str, target: str, run_key: str, bundle_path: str) -> str:
    return ResultsStore(results).put_bundle(target, run_key, bundle_path)


@flow(name="probe", log_prints=True)
def probe(target: str = "local", profile: str = "quick", results: str = "results",
          skip: list[str] | None = None, timeout_s: float = 3600.0, kind: str = "pool") -> str:
    """Probe `target` with `profile`; returns the bundle's URI in the results store."""
    run_key = str(runtime.flow_run.id or "cli")
    origin = {"kind": kind, "flow_run_id": runtime.flow_run.id}  # the bundle's origin (tasks.bundle.Origin)
    with tempfile.TemporaryDirectory(prefix="costgap-probe-") as tmp:
        bundle = probe_child(profile, target, tmp, sorted(skip or []), origin, timeout_s)
        return publish(results, target, run_key, bundle)
