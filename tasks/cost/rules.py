"""Which figure: one set of rules that every surface follows (overview, CLI, artifact, alerts).

    costgap targets --json      # the default window, today's price, p with k/n: what the overview shows

- Window: WINDOW_DAYS ending at the newest run in the warehouse (or `as_of`), so a report read
  later, or the demo, still shows its data, and the overview and `costgap gap` use the same window.
- Preset for a pair: among the presets both targets ran in the window, the one with the most runs
  together (ties: by name). Cost per token is workload-specific: no other preset is compared.
- p: the fine-tune failed-attempt rate k/n in the window (tasks.cost.inputs says what counts).
- Price: C uses the window's blended price (each run priced as of its start); today's price, its
  age, its stale flag and the cost at today's price stand beside it, each labelled for what it is.
- Price age (price_ages): whole days since a price was last confirmed, judged twice and named so:
  `price_age_days_at_window_end` for the price that priced the window's newest run, against the
  window's end (the cost C is built on it: its line carries the flag), and `price_age_days_today` for
  today's price, against today. Stale = older than stale_after_days (model.is_stale); no price at all
  gives null, never false. `price_age_days`/`price_stale` are today's, kept for the report.
- Gap over time: the same window (WINDOW_DAYS), stepped back a week at a time (HISTORY_STEP_DAYS)
  from the window's end; a point sits at its window's end, and the newest point is the overview's
  figure.
"""

from __future__ import annotations

from datetime import datetime, timezone

import duckdb

from tasks.cost.inputs import Span, latest_run
from tasks.errors import UserError

WINDOW_DAYS = 30.0  # the cost window: long enough for a weekly schedule to give several runs
HISTORY_STEP_DAYS = 7.0  # one point per week on the over-time charts, each over a WINDOW_DAYS window
HISTORY_PERIODS = 104  # two years of weekly points: bounds every chart at any history length


def history(end: datetime, window_days: float = WINDOW_DAYS, periods: int = HISTORY_PERIODS) -> Span:
    """The over-time span: `periods` windows of `window_days`, stepped back a week from `end`."""
    return Span(end, window_days, periods, HISTORY_STEP_DAYS)


def today() -> datetime:
    """The moment 'today's price' is read for (now, UTC)."""
    return datetime.now(timezone.utc)


def window(con: duckdb.DuckDBPyConnection, as_of: datetime | None = None,
           window_days: float = WINDOW_DAYS, periods: int = 1) -> Span | None:
    """The default window (or `periods` of them back to back), ending at `as_of` or the newest run.
    None when the warehouse has no run and no `as_of` was given."""
    end = as_of or latest_run(con)
    return None if end is None else Span(end, window_days, periods)


def price_age_days(last_seen: datetime | None, at: datetime) -> int | None:
    """Whole days since a price was last confirmed (whole days, so two surfaces read the same age)."""
    if last_seen is None:
        return None
    return (at.astimezone(timezone.utc).date() - last_seen.astimezone(timezone.utc).date()).days


def price_ages(window_last_seen: datetime | None, window_end: datetime, now_last_seen: datetime | None,
               today_at: datetime, opts) -> dict:
    """The price-age fields of one cost row (see the module docstring); `opts` is a model.CostOptions.
    A price confirmed after the window's end was in force at it: age 0 there."""
    from tasks.cost.model import is_stale

    at_end = price_age_days(window_last_seen, window_end)
    at_end = None if at_end is None else max(at_end, 0)
    now = price_age_days(now_last_seen, today_at)
    return {"price_age_days_at_window_end": at_end, "price_stale_at_window_end": is_stale(at_end, opts),
            "price_age_days_today": now, "price_stale_today": is_stale(now, opts),
            "price_age_days": now, "price_stale": is_stale(now, opts)}


def pick_preset(runs_by_preset: dict[str, dict[str, int]], a: str, b: str, preset: str | None = None) -> str:
    """The preset to compare A and B on. runs_by_preset: {target: {preset: runs in the window}}."""
    have = {t: runs_by_preset.get(t, {}) for t in (a, b)}
    shared = sorted(set(have[a]) & set(have[b]))
    if preset is not None:
        if preset not in shared:
            raise UserError(f"preset {preset!r}: not run by both {a} ({sorted(have[a]) or 'no runs'}) and "
                            f"{b} ({sorted(have[b]) or 'no runs'}) in the window; compare only presets both ran")
        return preset
    if not shared:
        raise UserError(f"{a} ({sorted(have[a]) or 'no successful runs'}) and {b} "
                        f"({sorted(have[b]) or 'no successful runs'}) share no preset in the window: "
                        f"cost per token is workload-specific, so they cannot be compared")
    return max(shared, key=lambda p: (have[a][p] + have[b][p], p))
