"""The decisions on a warehouse: what changed (for the site), what is news (for the alerts), what was told.

    python -c "import duckdb; from tasks.alerts import recent_changes; print(recent_changes(duckdb.connect('costgap.duckdb', read_only=True)))"

`evaluate(con, cfg, now)` reads the figures from the one cost model (tasks.cost.table.costs over windows
of the one grid, tasks.cost.grid.compare_span: the overview's window and its non-overlapping
predecessors), each run's tokens/s, the environment and change-point findings, plus dispatches, price
periods and quarantine, and hands them to tasks.alerts.moves (cost-based kinds) and tasks.alerts.decide.
- `decisions(con, cfg, now)`: the one evaluation both of the following read, so the site and the
  alerts never disagree;
- `recent_changes(con)` / `recent`: those decisions, newest first, for the overview's "Recent changes" list;
- `pending(con, cfg, now, link)`: what is news (tasks.alerts.policy) as events to emit;
- `record(con, alerts, now, source, event_ids)`: what was emitted, into alerts_sent.
Every function takes an open connection (only flows/ and the CLI open the warehouse).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import duckdb

from tasks.alerts.config import KIND, AlertConfig, Change
from tasks.alerts.decide import failure_streaks, iso, price_changes, quarantined
from tasks.alerts.moves import Facts, decide
from tasks.alerts.policy import Alert, due, events
from tasks.cost import rules
from tasks.cost.changepoint import detect
from tasks.estimate.evidence import env_shift
from tasks.cost.grid import compare_span
from tasks.cost.inputs import Span, latest_run, window_inputs
from tasks.cost.table import costs
from tasks.errors import UserError
from warehouse import sql


@dataclass
class Evaluation:
    """Every decision over the span read, and what could not be decided."""

    changes: list[Change] = field(default_factory=list)
    end: datetime | None = None  # the newest run: the newest window ends here
    since: datetime | None = None  # the start of the oldest window read
    errors: list[str] = field(default_factory=list)  # decisions skipped, one line each (e.g. a missing FX rate)


def _utc(t: datetime) -> datetime:
    return t.astimezone(timezone.utc)


def evaluate(con: duckdb.DuckDBPyConnection, cfg: AlertConfig, now: datetime) -> Evaluation:
    """All decisions: `cfg.windows` grid windows for the cost-based kinds; failures, price changes and
    quarantine over the same stretch."""
    ev = Evaluation()
    end = latest_run(con)
    prices = sql.rows(con, "alerts_price_changes", {"billing": cfg.cost.billing})
    if end is not None:
        span = compare_span(end, cfg.window_days, cfg.windows)
        ev.end, ev.since = span.end, span.start
        try:
            ev.changes += _cost_changes(con, cfg, now, span, prices)
        except UserError as e:  # e.g. a missing FX rate: the other kinds are still decided
            ev.errors.append(f"cheapest/gap/throughput/failure-rate alerts not decided: {e}")
    ev.changes += failure_streaks(sql.rows(con, "alerts_dispatches"))
    ev.changes += price_changes(prices)
    ev.changes += quarantined(sql.rows(con, "alerts_quarantine", {"since": ev.since or now - timedelta(
        days=cfg.news_max_age_days)}))
    return ev


def _cost_changes(con, cfg: AlertConfig, now: datetime, span: Span, prices: list[dict]) -> list[Change]:
    rows, figs = costs(con, span, cfg.cost, today=now)
    samples = {(r["period"], r["target"], r["preset"]): r["samples"] for r in window_inputs(con, span, cfg.cost)}
    facts = Facts(
        price_periods=[{"target": r["target"], "at": r["effective_from"], "old": r["previous_price"],
                        "new": r["price_per_hour"], "currency": r["currency"]} for r in prices],
        env=lambda t, preset, w1, w2: env_shift(con, t, preset, w1, w2),
        steps=detect(con, since=span.start, until=span.end), samples=samples)
    return decide(rows, figs, facts, cfg)


def sent(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Rows of alerts_sent, payload parsed."""
    got = sql.rows(con, "alerts_sent")
    for r in got:
        r["payload"] = json.loads(r["payload"]) if r["payload"] else {}
    return got


def decisions(con: duckdb.DuckDBPyConnection, cfg: AlertConfig, now: datetime) -> Evaluation:
    """The one evaluation both the alerts (pending) and the site's list (recent_changes) read."""
    return evaluate(con, cfg, now)


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

    Each row: at (datetime, UTC: when it happened in the data: a window's end, a failure, a price's
    effective date), event (costgap.*), kind (tasks.alerts.config.KIND: cheapest | gap | throughput |
    failure_rate | failed | price | quarantined), target, preset (None where it does not apply), related
    (other targets: the previous cheapest, the cheapest), summary (one line), payload (the event's figures;
    cost-based kinds carry `before` and `after`, each window's bounds, pair a against b and figures, which
    `costgap gap a b --between <before> --and <after>` reproduces). Rows at the same moment come in KIND's
    order."""
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
