"""What an alert is: the five event names, the resource each one names, and the knobs of the decisions.

    .venv/bin/pytest -q tests/test_alerts_decide.py

Every event names one target as its resource, `costgap.target.<id>`, so an automation can match
`costgap.target.*` (or one target) and a notification can say which instance type it is about.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from tasks.cost.model import CostOptions
from tasks.cost.rules import WINDOW_DAYS
from tasks.errors import UserError

CHEAPEST_CHANGED = "costgap.cheapest.changed"
GAP_SHIFTED = "costgap.gap.shifted"
TARGET_FAILED = "costgap.target.failed"
PRICE_CHANGED = "costgap.price.changed"
DATA_QUARANTINED = "costgap.data.quarantined"
EVENTS = (CHEAPEST_CHANGED, GAP_SHIFTED, TARGET_FAILED, PRICE_CHANGED, DATA_QUARANTINED)

RESOURCE_PREFIX = "costgap.target."  # + target id: the resource of every costgap event
UNKNOWN_TARGET = "unknown"  # the resource of a rejected file that never said which target it came from
FAILED_STATUSES = ("failed", "crashed", "timeout")  # dispatch statuses that count as a failure of the target


def resource_id(target: str | None) -> str:
    return RESOURCE_PREFIX + (target or UNKNOWN_TARGET)


@dataclass(frozen=True)
class AlertConfig:
    """When a change is worth telling a person; bad values fail naming the field."""

    # cost figures as the overview shows them (reporting currency, billing mode, f, draws, seed)
    cost: CostOptions = field(default_factory=CostOptions)
    # the overview's cost window: "the cheapest" is the cheapest there, exactly as the site says
    window_days: float = WINDOW_DAYS
    # overview windows folded, oldest first, for "the cheapest changed" (the alerts and the site's list alike)
    windows: int = 4
    # a change of the cheapest is news only in the newest this many of them (older ones are history)
    cheapest_windows: int = 2
    # a gap shift is the overview's window's gap leaving the interval of the window before it (windows back
    # to back, so the newest gap told is the overview's own figure, and one move is told once, not in every
    # overlapping weekly window of the over-time charts)
    period_days: float = WINDOW_DAYS
    # windows read for gap shifts and change points: enough for the detector's 3 + 3 runs
    periods: int = 4
    # smallest move of the gap (0.02 = 2 points) worth telling: a narrow interval can be left by less
    min_gap_move: float = 0.02
    # target the gap is measured against; None = the cheapest priced target of the window (the report's rule)
    baseline: str | None = None
    # a target that keeps failing is told again at most this often (the first failure is told at once)
    failure_repeat_hours: float = 24.0
    # price changes and quarantined bundles older than this (when they landed) are history, not news:
    # a first `alerts` run on an old warehouse does not replay years of them
    news_max_age_days: float = 7.0

    def __post_init__(self) -> None:
        for name in ("window_days", "period_days", "failure_repeat_hours", "news_max_age_days"):
            if not getattr(self, name) > 0:
                raise UserError(f"{name} = {getattr(self, name)!r}: expected a positive number")
        if not 1 <= self.cheapest_windows <= self.windows or self.windows < 2:
            raise UserError(f"windows = {self.windows!r}, cheapest_windows = {self.cheapest_windows!r}: expected "
                            "windows >= 2 (now and before) and 1 <= cheapest_windows <= windows")
        if self.periods < 2:
            raise UserError(f"periods = {self.periods!r}: expected at least 2 (a shift needs a previous period)")
        if not 0 <= self.min_gap_move < 1:
            raise UserError(f"min_gap_move = {self.min_gap_move!r}: expected a gap difference in [0, 1)")


@dataclass(frozen=True)
class Change:
    """One decision: something changed that a person may want to hear about.

    `key` says what it is about (one preset's cheapest, one target's failures, one price key...) and
    `fingerprint` which state of it this is (the new cheapest target, the failure count, the new period);
    `episode` groups repeats of one condition (a failure streak: its first failure), which are rate-limited.
    """

    event: str  # one of EVENTS
    key: str  # what it is about: cheapest/<preset>, gap/<preset>/<target>/<baseline>, failed/<target>, ...
    fingerprint: str  # which state of it: sent once per (key, fingerprint)
    target: str | None  # the event's resource (costgap.target.<target>)
    at: datetime  # when it happened in the data (a window's end, a failure, a price's effective date)
    summary: str  # one line for a person
    payload: dict  # the figures, JSON-able
    related: tuple[str, ...] = ()  # other targets involved (the previous cheapest, the baseline)
    period: int | None = None  # cost-based changes: 0 = the newest period (the one ending at the newest run)
    noticed_at: datetime | None = None  # when the warehouse learned of it (import, quarantine, dispatch end)
    episode: str | None = None  # repeats of one condition share it (a failure streak's first failure)
