"""Fan-out bookkeeping: wait for a pool probe run, notice a dead worker, sum up the targets.

    python -c "from tasks.dispatch.fanout import Outcome, overall; print(overall([Outcome('a', 'pool', 'landed')]))"

`wait_for_run` polls a probe flow run that run_deployment created, until it ends, its per-target
timeout passes (the run is cancelled: error kind timeout), or its work pool has had no live worker
for `worker_grace_s` while the run was picked up (the run is marked Crashed: the instance or the
worker died). A worker is live while its last heartbeat is within 3 heartbeat intervals, the rule
Prefect's own foreman service applies (prefect/server/schemas/responses.py, 3.9.1).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Callable

HEARTBEAT_MULTIPLE = 3  # Prefect 3.9.1 INACTIVITY_HEARTBEAT_MULTIPLE
DEFAULT_HEARTBEAT_S = 30  # Prefect 3.9.1 DEFAULT_HEARTBEAT_INTERVAL_SECONDS
OK_STATUSES = frozenset({"landed", "duplicate"})  # what counts as a target that landed
SKIPPED = "skipped"  # not dispatched: the run would have exceeded a measuring budget (tasks/cost/measuring.py)


@dataclass
class Outcome:
    """What happened to one target in one compare run (one row of the dispatches table)."""

    target: str
    dispatch: str  # local | pool | import
    status: str  # landed | duplicate | failed | crashed | timeout | cancelled | missing | quarantined
    probe_flow_run_id: str | None = None
    bundle_uris: list[str] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)  # bundles landed (or already there)
    attempts: list[dict] = field(default_factory=list)  # Prefect attempt rows (tasks.dispatch.prefect_runs)
    message: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    refused: list[tuple[str, str]] = field(default_factory=list)  # (file, why): files landing refused
    # the probe flow run's own start and end as Prefect recorded them: the instance-seconds of measuring
    span: tuple[datetime, datetime] | None = None

    @property
    def ok(self) -> bool:
        return self.status in OK_STATUSES

    @property
    def label(self) -> str:
        """The outcome in words: 'landed', or 'landed, 2 refused' where files were refused beside it."""
        return f"{self.status}, {len(self.refused)} refused" if self.refused else self.status


def worker_live(worker, now: datetime) -> bool:
    """True while a worker's last heartbeat is recent (Prefect's foreman rule, see module doc)."""
    beat = getattr(worker, "last_heartbeat_time", None)
    if beat is None:
        return False
    interval = getattr(worker, "heartbeat_interval_seconds", None) or DEFAULT_HEARTBEAT_S
    return now - beat <= timedelta(seconds=interval * HEARTBEAT_MULTIPLE)


def _typ(state) -> str:
    return getattr(state.type, "value", str(state.type)).upper() if state is not None else "SCHEDULED"


def wait_for_run(client, flow_run_id, *, work_pool: str, timeout_s: float, worker_grace_s: float = 0.0,
                 poll_s: float = 1.0, progress: Callable[[str], None] | None = None) -> tuple[str, str | None]:
    """Wait for a probe flow run (sync client). Returns (status, message); status is the final
    Prefect state type lowercased (completed, failed, crashed, cancelled) or timeout."""
    from prefect.states import Crashed

    t0 = time.monotonic()
    dead_since: float | None = None
    last_seen = None
    while True:
        run = client.read_flow_run(flow_run_id)
        typ = _typ(run.state)
        if typ != last_seen and progress:
            progress(f"{run.name}: {typ.lower()}")
        last_seen = typ
        if typ in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
            return typ.lower(), run.state.message
        elapsed = time.monotonic() - t0
        if typ in ("PENDING", "RUNNING", "CANCELLING"):
            now = datetime.now(timezone.utc)
            live = any(worker_live(w, now) for w in client.read_workers_for_work_pool(work_pool))
            dead_since = None if live else (dead_since or time.monotonic())
            if dead_since is not None and time.monotonic() - dead_since >= worker_grace_s:
                msg = (f"crash: no live worker on work pool '{work_pool}' while the run was {typ.lower()}"
                       f" (worker died or lost its instance) after {elapsed:.0f} s")
                client.set_flow_run_state(flow_run_id, Crashed(message=msg), force=True)
                return "crashed", msg
        if elapsed >= timeout_s:
            msg = f"timeout: no result within {timeout_s:.0f} s (state {typ.lower()}); run cancelled"
            _cancel(client, flow_run_id, msg, wait_s=15.0 if typ in ("RUNNING", "CANCELLING") else 0.0)
            return "timeout", msg
        time.sleep(poll_s)


def _cancel(client, flow_run_id, msg: str, wait_s: float = 15.0) -> None:
    """Ask the worker to stop the run (Cancelling); if nobody does within wait_s, force Cancelled.
    A run that never started (wait_s = 0) has no process to stop: it is Cancelled at once."""
    from prefect.states import Cancelled, Cancelling

    if wait_s > 0:
        client.set_flow_run_state(flow_run_id, Cancelling(message=msg), force=True)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if _typ(client.read_flow_run(flow_run_id).state) == "CANCELLED":
                return
            time.sleep(1.0)
    client.set_flow_run_state(flow_run_id, Cancelled(message=msg), force=True)


def overall(outcomes: list[Outcome]) -> tuple[str, str]:
    """('completed' | 'partial' | 'failed', a one-line message) for a compare run: 'failed' only when no
    target landed; a target that landed beside refused files landed, and makes the run partial. A target
    skipped for its measuring budget (status 'skipped') is told at the end, never counted as missing."""
    skipped = [o.target for o in outcomes if o.status == SKIPPED]
    if skipped:
        ran = [o for o in outcomes if o.status != SKIPPED]
        tail = f"; skipped for the measuring budget: {', '.join(skipped)}"
        if not ran:
            return "completed", f"no target dispatched{tail}"
        status, message = overall(ran)
        return status, message + tail
    ok = [o for o in outcomes if o.ok]
    bad = [o for o in outcomes if not o.ok]
    refused = [o for o in ok if o.refused]
    lost = ", ".join(f"{o.target} ({o.status})" for o in bad)
    if not ok:
        return "failed", f"no target landed: {lost}"
    message = f"{len(ok)} of {len(outcomes)} targets landed"
    if not bad and not refused:
        return "completed", message
    if refused:
        message += (f", {sum(len(o.refused) for o in refused)} file(s) refused: "
                    + ", ".join(f"{o.target} ({len(o.refused)})" for o in refused))
    return "partial", message + (f"; missing: {lost}" if bad else "")


def measuring_rows(compare_run_id: str, o: Outcome) -> list[dict]:
    """The measuring_runs row of a dispatched probe run whose span Prefect recorded (none for import)."""
    if o.span is None or not o.probe_flow_run_id:
        return []
    start, end = o.span
    return [{"compare_run_id": compare_run_id, "target": o.target, "dispatch": o.dispatch,
             "probe_flow_run_id": o.probe_flow_run_id, "span_source": "prefect", "started_at": start,
             "finished_at": end, "instance_seconds": max((end - start).total_seconds(), 0.0)}]


def apply_landing(o: Outcome, summary) -> Outcome:
    """Set an outcome's status from a tasks.landing.land.LandSummary of its bundles: landed (or duplicate)
    when any bundle landed (or was already there), each refused file kept with its reason; quarantined
    when every file was refused."""
    o.run_ids = list(summary.landed) + list(summary.duplicates)
    o.refused = [(f, why) for f, _bundle, why in summary.quarantined] + [(f, why) for f, why in summary.rejected]
    if summary.landed:
        o.status = "landed"
    elif summary.duplicates:
        o.status = "duplicate"
    elif o.refused:
        o.status = "quarantined"
    if o.refused:
        o.message = summary.as_text()
    return o


def attempt_rows(o: Outcome) -> list[dict]:
    """The outcome's Prefect attempt rows, pointed at its bundle when exactly one landed."""
    run_id = o.run_ids[0] if len(o.run_ids) == 1 else None
    return [{**r, "run_id": r.get("run_id") or run_id} for r in o.attempts]


def outcome_dict(o: Outcome) -> dict:
    """A JSON-able view of an outcome (the compare flow's result)."""
    return {"target": o.target, "dispatch": o.dispatch, "status": o.status,
            "probe_flow_run_id": o.probe_flow_run_id, "run_ids": list(o.run_ids),
            "bundle_uris": list(o.bundle_uris), "attempts": len(o.attempts), "message": o.message,
            "label": o.label, "refused": [{"file": f, "reason": why} for f, why in o.refused],
            "duration_s": (o.finished_at - o.started_at).total_seconds()
            if (o.started_at and o.finished_at) else None}


def outcome_lines(outcomes: list[dict]) -> list[str]:
    """`costgap run`'s per-target lines (outcome_dict views): the outcome in words, the probe flow run, and
    why it did not land; then each refused file with its reason."""
    lines = []
    for o in outcomes:
        landed = o["status"] in OK_STATUSES
        tail = f": {o['message']}" if o["message"] and not landed and not o["refused"] else ""
        lines.append(f"  {o['target']:<28} {o['label']:<11} {o['probe_flow_run_id'] or ''}{tail}".rstrip())
        lines += [f"      refused {r['file']}: {r['reason']}" for r in o["refused"]]
    return lines


def dispatch_rows(compare_run_id: str, outcomes: list[Outcome]) -> list[dict]:
    """Rows for the dispatches table (warehouse/migrations/030_dispatches.sql)."""
    return [
        {"compare_run_id": compare_run_id, "target": o.target, "dispatch": o.dispatch, "status": o.status,
         "probe_flow_run_id": o.probe_flow_run_id, "run_id": o.run_ids[0] if o.run_ids else None,
         "message": (o.message or None) and o.message[:4000], "started_at": o.started_at,
         "finished_at": o.finished_at}
        for o in outcomes
    ]


def outcomes_markdown(outcomes: list[Outcome]) -> str:
    """The per-target part of the compare artifact."""
    lines = ["| target | dispatch | status | probe flow run | attempts | message |",
             "|---|---|---|---|---|---|"]
    for o in outcomes:
        msg = (o.message or "").replace("|", "/").replace("\n", " ")[:160]
        lines.append(f"| {o.target} | {o.dispatch} | {o.label} | {o.probe_flow_run_id or ''} | "
                     f"{len(o.attempts)} | {msg} |")
    return "\n".join(lines)


def record_dispatches(con, rows: list[dict]) -> int:
    """Insert dispatches rows (one per target of a compare run) in one transaction."""
    from warehouse.sql import load_query

    sql = load_query("dispatches_insert")
    keys = ("compare_run_id", "target", "dispatch", "status", "probe_flow_run_id", "run_id", "message",
            "started_at", "finished_at")
    con.execute("begin transaction")
    try:
        for r in rows:
            con.execute(sql, [r[k] for k in keys])
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    return len(rows)
