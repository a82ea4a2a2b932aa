"""What an alert is: the event names (one kind per cause), the resource each one names, and the knobs.

    .venv/bin/pytest -q tests/test_alerts_decide.py

Every event names one target as its resource, `costgap.target.<id>`, so an automation can match
`costgap.target.*` (or one target) and a notification can say which instance type it is about.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from tasks.cost.changepoint import DetectConfig
from tasks.cost.model import CostOptions
from tasks.cost.rules import WINDOW_DAYS
from tasks.errors import UserError

CHEAPEST_CHANGED = "costgap.cheapest.changed"  # a preset's cheapest target changed beyond noise
GAP_SHIFTED = "costgap.gap.shifted"  # a dearer target's gap against the cheapest left its interval
THROUGHPUT_SHIFTED = "costgap.throughput.shifted"  # a target's tokens/s shifted between two windows
FAILURE_RATE_SHIFTED = "costgap.failure_rate.shifted"  # a target's failed-attempt rate shifted
TARGET_FAILED = "costgap.target.failed"  # a target's probe failed, crashed or timed out (dispatch)
PRICE_CHANGED = "costgap.price.changed"  # a new price period in the price book
DATA_QUARANTINED = "costgap.data.quarantined"  # bundles refused by validation
EVENTS = (CHEAPEST_CHANGED, GAP_SHIFTED, THROUGHPUT_SHIFTED, FAILURE_RATE_SHIFTED, TARGET_FAILED, PRICE_CHANGED,
          DATA_QUARANTINED)
# the site's and `costgap alerts recent`'s short name of each event (the order rows at one moment take)
KIND = {CHEAPEST_CHANGED: "cheapest", GAP_SHIFTED: "gap", THROUGHPUT_SHIFTED: "throughput",
        FAILURE_RATE_SHIFTED: "failure_rate", TARGET_FAILED: "failed", PRICE_CHANGED: "price",
        DATA_QUARANTINED: "quarantined"}

RESOURCE_PREFIX = "costgap.target."  # + target id: the resource of every costgap event
UNKNOWN_TARGET = "unknown"  # the resource of a rejected file that never said which target it came from
FAILED_STATUSES = ("failed", "crashed", "timeout")  # dispatch statuses that count as a failure of the target


def resource_id(target: str | None) -> str:
    return RESOURCE_PREFIX + (target or UNKNOWN_TARGET)


@dataclass(frozen=True)
class AlertConfig:
    """When a change is worth telling a person; bad values fail naming the field.

    Every cost-based decision compares two windows of the one grid (tasks.cost.grid): the overview's
    window and its non-overlapping predecessors, 35 days apart, each a point of the gap-over-time chart."""

    # cost figures as the overview shows them (reporting currency, billing mode, f, draws, seed)
    cost: CostOptions = field(default_factory=CostOptions)
    # the overview's cost window: "the cheapest" is the cheapest there, exactly as the site says
    window_days: float = WINDOW_DAYS
    # grid windows compared, newest first (0, 5, 10, 15 steps back): four cover about four months
    windows: int = 4
    # a change of the cheapest is news only when it happened in the newest this many windows (older is history)
    cheapest_windows: int = 2
    # smallest move of the gap (0.02 = 2 points) worth telling: a narrow interval can be left by less
    min_gap_move: float = 0.02
    # "failure rate shifted": two-sided Fisher exact test on k/n of the two windows at this level ...
    failure_alpha: float = 0.05
    # ... and the rerun factor R moved by at least this many log units (0.01 = 1 log point of cost)
    min_reliability_move: float = 0.01
    # "throughput shifted": the change-point test between two windows' runs (its alpha, min_shift, min_runs)
    throughput: DetectConfig = field(default_factory=DetectConfig)
    # a target that keeps failing is told again at most this often (the first failure is told at once)
    failure_repeat_hours: float = 24.0
    # price changes and quarantined bundles older than this (when they landed) are history, not news:
    # a first `alerts` run on an old warehouse does not replay years of them
    news_max_age_days: float = 7.0

    def __post_init__(self) -> None:
        for name in ("window_days", "failure_repeat_hours", "news_max_age_days"):
            if not getattr(self, name) > 0:
                raise UserError(f"{name} = {getattr(self, name)!r}: expected a positive number")
        if not 1 <= self.cheapest_windows <= self.windows or self.windows < 2:
            raise UserError(f"windows = {self.windows!r}, cheapest_windows = {self.cheapest_windows!r}: expected "
                            "windows >= 2 (now and before) and 1 <= cheapest_windows <= windows")
        if not 0 <= self.min_gap_move < 1:
            raise UserError(f"min_gap_move = {self.min_gap_move!r}: expected a gap difference in [0, 1)")
        if not 0 < self.failure_alpha < 1:
            raise UserError(f"failure_alpha = {self.failure_alpha!r}: expected a level in (0, 1)")
        if self.min_reliability_move < 0:
            raise UserError(f"min_reliability_move = {self.min_reliability_move!r}: expected >= 0")


@dataclass(frozen=True)
class Change:
    """One decision: something changed that a person may want to hear about.

    `key` says what it is about (one preset's cheapest, one target's failures, one price key...) and
    `fingerprint` which state of it this is (the new cheapest target, the failure count, the new period);
    `episode` groups repeats of one condition (a failure streak: its first failure), which are rate-limited.
    """

    event: str  # one of EVENTS
    key: str  # what it is about: cheapest/<preset>, gap/<preset>/<target>/<cheapest>, failed/<target>, ...
    fingerprint: str  # which state of it: sent once per (key, fingerprint)
    target: str | None  # the event's resource (costgap.target.<target>)
    at: datetime  # when it happened in the data (a window's end, a failure, a price's effective date)
    summary: str  # one line for a person
    payload: dict  # the figures, JSON-able
    related: tuple[str, ...] = ()  # other targets involved (the previous cheapest, the cheapest)
    period: int | None = None  # cost-based changes: the later window's index, 0 = the overview's window
    noticed_at: datetime | None = None  # when the warehouse learned of it (import, quarantine, dispatch end)
    episode: str | None = None  # repeats of one condition share it (a failure streak's first failure)
