"""Rerun accounting from Prefect itself: a probe flow run's history, turned into attempt rows.

    python -c "from tasks.dispatch.prefect_runs import attempts_from_states; help(attempts_from_states)"

After each probe run the compare flow reads, from the Prefect API, the flow run's state history
and every task run's `run_count` and state history. Each Running state opens an attempt; the next
Completed / Failed / Crashed / Cancelled / AwaitingRetry state closes it. A flow run that crashed
or was cancelled (its worker died, it timed out) counts as an attempt too, and task runs left open
by it are closed as crashed. The rows match the `attempts` table with source = 'prefect' and
source_id = the Prefect flow or task run id; tasks.landing.land.record_prefect_attempts lands them.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any, Iterable
from uuid import UUID

from tasks.dispatch.child import classify_error

FLOW_TASK = "probe_flow"  # attempts.task for the probe flow run itself (one row per flow attempt)
_CLOSING = {"COMPLETED": "completed", "FAILED": "failed", "CRASHED": "crashed", "CANCELLED": "cancelled"}
TERMINAL = frozenset(_CLOSING)


def _typ(state: Any) -> str:
    t = state.type
    return getattr(t, "value", str(t)).upper()


def _closing_state(state: Any) -> str | None:
    """The attempt state a Prefect state ends an attempt with, or None if it does not end one."""
    typ = _typ(state)
    if typ in _CLOSING:
        return _CLOSING[typ]
    if typ == "SCHEDULED" and (state.name or "").lower() == "awaitingretry":
        return "failed"  # a failed try that Prefect is about to retry
    return None


def attempts_from_states(states: Iterable[Any], *, task: str, target: str, source_id: str,
                         run_id: str | None = None, open_as: tuple[str, str] | None = None) -> list[dict]:
    """Attempt rows from one run's state history (oldest first after sorting by timestamp).

    `open_as` = (state, message) closes an attempt still Running at the end (its flow crashed);
    without it an open attempt is left out (it is still running, nothing to count yet).
    A run that was ended before it ever ran (e.g. cancelled while Scheduled) is one attempt.
    """
    rows: list[dict] = []
    start: Any = None
    reclosable = False  # the last row was closed and nothing ran since: a later close amends it
    ordered = sorted(states, key=lambda s: s.timestamp)
    for s in ordered:
        typ = _typ(s)
        if typ == "RUNNING":
            start, reclosable = s, False
            continue
        closed = _closing_state(s)
        if closed is None:
            continue
        if start is None and closed == "completed":
            continue  # e.g. a cached result: nothing ran
        if start is None and reclosable:  # e.g. Cancelled by the server, then forced Cancelled
            first = rows.pop()
            row = _row(task, target, source_id, run_id, first["attempt"], closed, None, s)
            row["started_at"], row["duration_s"] = first["started_at"], first["duration_s"]
            rows.append(row)
            continue
        rows.append(_row(task, target, source_id, run_id, len(rows) + 1, closed, start, s))
        start, reclosable = None, True
    if start is not None and open_as is not None:
        state, message = open_as
        rows.append(_row(task, target, source_id, run_id, len(rows) + 1, state, start, None, message))
    return rows


def _row(task, target, source_id, run_id, attempt, state, start, end, message=None) -> dict:
    t0: datetime | None = start.timestamp if start is not None else (end.timestamp if end is not None else None)
    t1: datetime | None = end.timestamp if end is not None else None
    msg = message if message is not None else (end.message if end is not None else None)
    duration = max((t1 - t0).total_seconds(), 0.0) if (t0 and t1) else 0.0
    return {
        "run_id": run_id,
        "target": target,
        "task": task,
        "attempt": attempt,
        "state": state,
        "error_kind": None if state == "completed" else classify_error(msg or state),
        "message": (msg or None) and msg[:4000],
        "duration_s": duration,
        "started_at": t0,
        "source": "prefect",
        "source_id": source_id,
    }


def flow_attempts(flow_states, task_histories, *, target: str, flow_run_id: str,
                  run_id: str | None = None) -> list[dict]:
    """All attempt rows of one probe flow run: the flow itself, then each task run.

    task_histories: list of (task_name, task_run_id, states). When the flow ended crashed/cancelled,
    task runs still Running are closed with the flow's state and message.
    """
    flow_rows = attempts_from_states(flow_states, task=FLOW_TASK, target=target,
                                     source_id=flow_run_id, run_id=run_id)
    last = flow_rows[-1] if flow_rows else None
    open_as = (last["state"], last["message"] or f"flow run {last['state']}") if (
        last and last["state"] in ("crashed", "cancelled", "failed")) else None
    rows = list(flow_rows)
    for name, task_run_id, states in task_histories:
        rows += attempts_from_states(states, task=name, target=target, source_id=task_run_id,
                                     run_id=run_id, open_as=open_as)
    return rows


def read_probe_attempts(client, flow_run_id: str | UUID, *, target: str, run_id: str | None = None,
                        settle_s: float = 10.0) -> list[dict]:
    """Read a finished probe flow run's history from the Prefect API (sync client) as attempt rows.

    Task run states reach the API through events, a moment after the flow run ends: wait up to
    `settle_s` for every task run to show a terminal state before reading their histories.
    """
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    fid = UUID(str(flow_run_id))
    flow_states = client.read_flow_run_states(fid)
    flow_terminal = bool(flow_states) and _typ(max(flow_states, key=lambda s: s.timestamp)) in TERMINAL
    deadline = time.monotonic() + settle_s
    while True:
        task_runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[fid])))
        settled = all(tr.state is not None and _typ(tr.state) in TERMINAL for tr in task_runs)
        if settled or not flow_terminal or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    histories = []
    for tr in sorted(task_runs, key=lambda t: t.expected_start_time or t.created or datetime.min):
        states = client.read_task_run_states(tr.id)
        histories.append((tr.name.rsplit("-", 1)[0] if tr.name else tr.task_key, str(tr.id), states))
    return flow_attempts(flow_states, histories, target=target, flow_run_id=str(fid), run_id=run_id)


def run_span(flow_run) -> tuple[datetime, datetime] | None:
    """A finished flow run's (start_time, end_time) as Prefect recorded them; None if it never ran."""
    start, end = getattr(flow_run, "start_time", None), getattr(flow_run, "end_time", None)
    if start is None or end is None or end < start:
        return None
    return start, end


def read_span(client, flow_run_id: str | UUID) -> tuple[datetime, datetime] | None:
    """The probe flow run's span from the Prefect API (sync client): the instance-seconds of measuring."""
    return run_span(client.read_flow_run(UUID(str(flow_run_id))))
