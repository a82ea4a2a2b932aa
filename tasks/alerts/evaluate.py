"""The decisions on a warehouse: what changed (for the site), what is news (for the alerts), what was told.

    python -c "import duckdb; from tasks.alerts import recent_changes; print(recent_changes(duckdb.connect('costgap.duckdb', read_only=True)))"

`evaluate(con, cfg, now)` reads the figures from the one cost model (tasks.cost.table.costs over the
overview's windows and over the gap-over-time periods, gap_history against the report's baseline,
changepoint.detect) plus dispatches, price periods and quarantine, and hands them to tasks.alerts.decide.
- `decisions(con, cfg, now)`: the one evaluation both of the following read, so the site and the
  alerts never disagree;
- `recent_changes(con)` / `recent`: those decisions, newest first, for the overview's "Recent changes" list;
- `pending(con, cfg, now, link)`: what is news (tasks.alerts.policy) as events to emit;
- `record(con, alerts, now, source, event_ids)`: what was emitted, into alerts_sent.
Every function takes an open connection (only flows/ and the CLI open the warehouse).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone

import duckdb

from tasks.alerts.config import AlertConfig, Change
from tasks.alerts.decide import (changepoint_shifts, cheapest_changes, failure_streaks, gap_shifts, iso,
                                 price_changes, quarantined)
from tasks.alerts.policy import Alert, due, events
from tasks.cost import rules
from tasks.cost.changepoint import detect
from tasks.cost.inputs import Span, known_targets
from tasks.cost.table import cheapest_first, costs, env_changes, gap_history
from tasks.errors import UserError
from warehouse import sql

KIND = {"costgap.cheapest.changed": "cheapest", "costgap.gap.shifted": "gap", "costgap.target.failed": "failed",
        "costgap.price.changed": "price", "costgap.data.quarantined": "quarantined"}


@dataclass
class Evaluation:
    """Every decision over the span read, and what could not be decided."""

    changes: list[Change] = field(default_factory=list)
    end: datetime | None = None  # the newest run: the last window and period end here
    since: datetime | None = None  # the start of the periods read
    baseline: str | None = None  # the gap's reference target
    errors: list[str] = field(default_factory=list)  # decisions skipped, one line each (e.g. a missing FX rate)


def _utc(t: datetime) -> datetime:
    return t.astimezone(timezone.utc)


def evaluate(con: duckdb.DuckDBPyConnection, cfg: AlertConfig, now: datetime, *, standing: dict[str, str] | None = None,
             windows: int | None = None, periods: int | None = None) -> Evaluation:
    """All decisions: `windows` overview windows for the cheapest (from `standing`), `periods` weekly periods
    for gap shifts and change points; failures, price changes and quarantine over the same stretch."""
    ev = Evaluation()
    wspan = rules.window(con, None, cfg.window_days, windows or cfg.windows)
    if wspan is not None:
        hspan = Span(wspan.end, cfg.period_days, periods or cfg.periods)
        ev.end, ev.since = wspan.end, min(wspan.start, hspan.start)
        try:
            _cost_changes(con, cfg, now, wspan, hspan, standing, ev)
        except UserError as e:  # e.g. a missing FX rate: the other kinds are still decided
            ev.errors.append(f"cheapest/gap alerts not decided: {e}")
    ev.changes += failure_streaks(sql.rows(con, "alerts_dispatches"))
    ev.changes += price_changes(sql.rows(con, "alerts_price_changes", {"billing": cfg.cost.billing}))
    ev.changes += quarantined(sql.rows(con, "alerts_quarantine", {"since": ev.since or now - timedelta(
        days=cfg.news_max_age_days)}))
    return ev


def _cost_changes(con, cfg: AlertConfig, now: datetime, wspan: Span, hspan: Span, standing, ev: Evaluation) -> None:
    rows, figs = costs(con, wspan, cfg.cost, today=now)
    ev.changes += cheapest_changes(rows, figs, standing)
    if cfg.baseline is not None and cfg.baseline not in known_targets(con):
        raise UserError(f"baseline = {cfg.baseline!r}: no such target in the warehouse")
    priced = [r for r in cheapest_first([r for r in rows if r["period"] == 0]) if r["cost_per_mtok"] is not None]
    ev.baseline = cfg.baseline or (priced[0]["target"] if priced else None)  # the report's rule (reports/data.py)
    if ev.baseline is not None:
        hrows, hfigs = costs(con, hspan, cfg.cost, today=now)
        shifts = gap_shifts(gap_history(hrows, hfigs, ev.baseline), hspan.end, cfg.period_days, cfg.min_gap_move)
        ev.changes += [_with_env(con, c) for c in shifts]
    ev.changes += changepoint_shifts(detect(con, since=hspan.start, until=hspan.end))


def _with_env(con, c: Change) -> Change:
    """A gap shift with the environment fields that changed between its two periods (target and baseline)."""
    p = c.payload
    w1 = (datetime.fromisoformat(p["previous_period_start"]), datetime.fromisoformat(p["previous_period_end"]))
    w2 = (datetime.fromisoformat(p["period_start"]), datetime.fromisoformat(p["period_end"]))
    found = [{"target": t, **{k: (None if e[k] is None else str(e[k])) for k in ("field", "before", "after")}}
             for t in (p["target"], p["baseline"]) for e in env_changes(con, t, w1, w2)]
    if not found:
        return c
    what = ", ".join(f"{e['target']} {e['field']} {e['before']} -> {e['after']}" for e in found)
    return replace(c, payload={**p, "env_changes": found}, summary=f"{c.summary}; environment: {what}")


def sent(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Rows of alerts_sent, payload parsed."""
    got = sql.rows(con, "alerts_sent")
    for r in got:
        r["payload"] = json.loads(r["payload"]) if r["payload"] else {}
    return got


def decisions(con: duckdb.DuckDBPyConnection, cfg: AlertConfig, now: datetime) -> Evaluation:
    """The one evaluation both the alerts (pending) and the site's list (recent_changes) read: `cfg.windows`
    overview windows for the cheapest, and the weekly periods that cover them for gap shifts."""
    span_days = cfg.window_days * cfg.windows
    return evaluate(con, cfg, now, windows=cfg.windows, periods=max(cfg.periods, int(span_days // cfg.period_days)))


def pending(con: duckdb.DuckDBPyConnection, cfg: AlertConfig, now: datetime,
            link: str | None) -> tuple[list[Alert], Evaluation]:
    """The events to emit now (news only: tasks.alerts.policy), and the evaluation behind them."""
    ev = decisions(con, cfg, now)
    return events(due(ev.changes, sent(con), now=now, cfg=cfg), link), ev


def record(con: duckdb.DuckDBPyConnection, alerts: list[Alert], now: datetime, source: str,
           event_ids: list[str | None]) -> int:
    """Record emitted alerts (one row per change told) in one transaction; returns the rows written."""
    q = sql.load_query("alerts_insert_sent")
    n = 0
    con.execute("begin transaction")
    try:
        for a, event_id in zip(alerts, event_ids):
            for c in a.changes:
                con.execute(q, [c.key, c.fingerprint, c.episode, c.event, c.target, c.at, now, event_id, source,
                                json.dumps(c.payload, default=str)])
                n += 1
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    return n


RECENT_LIMIT = 20  # rows in the overview's list


def recent(con: duckdb.DuckDBPyConnection, cfg: AlertConfig | None = None, *, now: datetime | None = None,
           limit: int = RECENT_LIMIT) -> tuple[list[dict], list[str]]:
    """The "Recent changes" list and the decisions that could not be made (one line each): every decision
    of `decisions` (the same the alerts read) that happened, or was learned of, within its windows,
    newest first.

    Each row: at (datetime, UTC: when it happened in the data), event (costgap.*), kind (cheapest | gap |
    failed | price | quarantined), target, preset (None where it does not apply), related (other targets:
    the previous cheapest, the baseline), summary (one line), payload (the event's figures). Rows at the same
    moment come in the order cheapest, gap, failed, price, quarantined."""
    cfg = cfg or AlertConfig()
    now = now or rules.today()
    ev = decisions(con, cfg, now)
    since = ev.since or now - timedelta(days=cfg.window_days * cfg.windows)
    rows = [{"at": _utc(c.at), "event": c.event, "kind": KIND[c.event], "target": c.target,
             "preset": c.payload.get("preset"), "related": list(c.related), "summary": c.summary,
             "payload": {**c.payload, "at": iso(c.at)}}
            for c in ev.changes if _utc(c.at) >= since or (c.noticed_at is not None and _utc(c.noticed_at) >= since)]
    rows.sort(key=lambda r: (-r["at"].timestamp(), list(KIND.values()).index(r["kind"]), r["target"] or ""))
    return rows[:limit], ev.errors


def recent_changes(con: duckdb.DuckDBPyConnection, cfg: AlertConfig | None = None, *, now: datetime | None = None,
                   limit: int = RECENT_LIMIT) -> list[dict]:
    """The rows of `recent` (its docstring says what each holds)."""
    return recent(con, cfg, now=now, limit=limit)[0]
