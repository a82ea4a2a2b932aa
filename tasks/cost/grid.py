"""The one window grid: every window the report and the alerts compare is a window of the gap-over-time chart.

    python -c "from datetime import datetime, timezone; from tasks.cost.grid import compare_span; print(compare_span(datetime(2026, 12, 4, tzinfo=timezone.utc), 30.0, 2).bounds(1))"

The chart's grid (tasks.cost.rules.history): windows of WINDOW_DAYS whose ends step back a week
(HISTORY_STEP_DAYS) from the newest run; window k is (end - 7k - 30 d, end - 7k]. "Before" and "after"
are always two windows of that grid that share no run: the newest one before window k that does not
overlap it is window k + STRIDE (STRIDE = ceil(30 / 7) = 5 steps, 35 days back), so
- "Why it moved" compares window 5 with window 0 (the overview's window);
- "Recent changes" and the alerts compare windows 0, 5, 10, ... each with the next older one;
- every figure they quote is a point of the chart and a row of gap_history.csv, and
  `costgap gap A B --between <before> --and <after>` reproduces it (tests/test_alerts_kinds.py).
A 30-day window takes weeks to absorb a change: a step in tokens/s or price on day d moves the window
line a little each week until d is 30 days back. The chart shows each run behind the line for that.
"""

from __future__ import annotations

import math
from datetime import datetime

from tasks.cost import rules
from tasks.cost.inputs import Span

STEP_DAYS = rules.HISTORY_STEP_DAYS  # the chart's step: one window a week


def stride(window_days: float = rules.WINDOW_DAYS) -> int:
    """Grid steps from a window back to the newest one that shares no run with it (5 for 30-day windows)."""
    return max(1, math.ceil(window_days / STEP_DAYS - 1e-9))


def compare_span(end: datetime, window_days: float = rules.WINDOW_DAYS, windows: int = 2) -> Span:
    """`windows` grid windows, each the non-overlapping predecessor of the next: grid windows 0, 5, 10, ...
    Period j of this span is grid window j * stride."""
    return Span(end, window_days, windows, stride(window_days) * STEP_DAYS)


def grid_index(period: int, window_days: float = rules.WINDOW_DAYS) -> int:
    """The grid window (the chart's step count back from the newest) of a compare_span period."""
    return period * stride(window_days)
