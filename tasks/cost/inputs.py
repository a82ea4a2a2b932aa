"""The cost model's inputs from the warehouse. SQL returns inputs only, never R or C.

    .venv/bin/pytest -q tests/test_cost_model.py

A `Span` is `periods` windows of `period_days` each, their ends `step_days` apart, the newest ending
at `end`: window k is (end - k step - period, end - k step]. One window (`costgap targets`, `costgap
gap`, the overview) is a span of one; the gap over time is 30-day windows stepped by a week. Both
run the same queries, so a window of the history equals `costgap gap --as-of <its end> --window 30d`.
- warehouse/queries/cost_priced_runs.sql: each successful run priced as of its start (FX at dated
  rates), with its period; kept as temp table _cost_runs for the queries below;
- cost_inputs.sql: per (period, target, preset) the runs' tokens/s (sorted), P, the attempt counts
  k and n (what counts is the view finetune_attempts, migration 055), the run-to-run CV, and the
  price period that priced the latest run;
- cost_price_now.sql: the price in force today, for "today's price" beside the window's blend.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import duckdb

from tasks.cost.model import CostOptions
from tasks.errors import UserError
from tasks.pricing.fx import FxError
from warehouse import sql

@dataclass(frozen=True)
class Span:
    """`periods` windows of `period_days`, their ends `step_days` apart (default: back to back), the
    newest ending at `end` (UTC)."""

    end: datetime
    period_days: float
    periods: int = 1
    step_days: float | None = None

    def __post_init__(self) -> None:
        if not self.period_days > 0:
            raise UserError(f"window = {self.period_days!r} days: expected a positive window")
        if self.periods < 1:
            raise UserError(f"periods = {self.periods!r}: expected at least 1")
        if self.step_days is not None and not self.step_days > 0:
            raise UserError(f"step = {self.step_days!r} days: expected a positive step")
        object.__setattr__(self, "end", self.end.astimezone(timezone.utc))

    @property
    def period_us(self) -> int:
        return round(self.period_days * 86400e6)

    @property
    def step_us(self) -> int:
        return self.period_us if self.step_days is None else round(self.step_days * 86400e6)

    def bounds(self, period: int = 0) -> tuple[datetime, datetime]:
        """(start, end] of one window."""
        end = self.end - timedelta(microseconds=period * self.step_us)
        return end - timedelta(microseconds=self.period_us), end

    @property
    def start(self) -> datetime:
        return self.bounds(self.periods - 1)[0]


def _params(span: Span, opts: CostOptions, targets: list[str] | None) -> dict:
    return {"start": span.start, "end": span.end, "billing": opts.billing, "currency": opts.currency,
            "targets": targets}


def price_runs(con: duckdb.DuckDBPyConnection, span: Span, opts: CostOptions, targets: list[str] | None = None) -> None:
    """Materialise temp table _cost_runs (cost_priced_runs.sql) and fail on any missing FX rate."""
    # Row order of the scratch table does not matter (every reader sorts); not keeping it makes the
    # materialisation ~2x faster. The caller's setting is put back afterwards.
    keep = con.execute("select current_setting('preserve_insertion_order')").fetchall()[0][0]
    con.execute("set preserve_insertion_order = false")
    con.execute(f"create or replace temp table _cost_windows as {sql.load_query('cost_windows')}",
                {"end": span.end, "period_us": span.period_us, "step_us": span.step_us, "periods": span.periods})
    try:
        con.execute(f"create or replace temp table _cost_runs as {sql.load_query('cost_priced_runs')}",
                    _params(span, opts, targets))
    finally:
        con.execute(f"set preserve_insertion_order = {'true' if keep else 'false'}")
    missing = sql.rows(con, "cost_fx_missing")
    if missing:
        m = missing[0]
        raise FxError(f"no FX rate for {m['currency']} on or before {m['first_date']} ({m['runs']} runs need it): add a "
                      "dated rate to fx_rates (costgap prices import deploy/fx_rates.csv --format fx); a missing "
                      "rate is never 1.0")


def window_inputs(con: duckdb.DuckDBPyConnection, span: Span, opts: CostOptions,
                  targets: list[str] | None = None) -> list[dict]:
    """One dict per (period, target, preset) with runs in the span: P, X, samples, k, n, cv_within, ..."""
    price_runs(con, span, opts, targets)
    params = _params(span, opts, targets)
    del params["billing"], params["currency"]
    return sql.rows(con, "cost_inputs", params)


def price_now(con: duckdb.DuckDBPyConnection, today: datetime, opts: CostOptions) -> dict[str, dict]:
    """Per target: the price in force at `today` in the reporting currency (cost_price_now.sql)."""
    got = sql.rows(con, "cost_price_now", {"today": today, "billing": opts.billing, "currency": opts.currency})
    for r in got:
        if r["fx_missing"]:
            raise FxError(f"no FX rate for {r['price_currency']} or {opts.currency} on or before {today.date()} "
                          f"(today's price of {r['target']}): add a dated rate to fx_rates; a missing rate is never 1.0")
    return {r["target"]: r for r in got}


def latest_run(con: duckdb.DuckDBPyConnection) -> datetime | None:
    """When the newest run in the warehouse started (the default end of every window)."""
    got = con.execute("select max(started_at) from runs").fetchone()[0]
    return got.astimezone(timezone.utc) if got is not None else None


def known_targets(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {t for (t,) in con.execute("select target from targets union select target from runs").fetchall()}
