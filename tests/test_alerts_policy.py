"""No event storms, table-driven: what is news given what was already sent, and the events it makes.

    .venv/bin/pytest -q tests/test_alerts_policy.py
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tasks.alerts.config import (CHEAPEST_CHANGED, DATA_QUARANTINED, FAILURE_RATE_SHIFTED, GAP_SHIFTED,
                                 PRICE_CHANGED, TARGET_FAILED, THROUGHPUT_SHIFTED, AlertConfig, Change)
from tasks.alerts.policy import due, events, told_cheapest

NOW = datetime(2026, 12, 1, 12, tzinfo=timezone.utc)
CFG = AlertConfig()
H = timedelta(hours=1)


def cheapest(old: str, new: str, period: int = 0) -> Change:
    return Change(CHEAPEST_CHANGED, "cheapest/1b", new, new, NOW - timedelta(days=30 * period), f"{old}->{new}",
                  {"preset": "1b", "old_target": old, "new_target": new}, (old,), period=period)


def shift(period: int, at: datetime | None = None, event: str = GAP_SHIFTED) -> Change:
    at = at or NOW - timedelta(days=35 * period)
    return Change(event, f"{event}/1b/a/base", at.isoformat(), "a", at, "shift", {}, ("base",), period=period)


def failing(n: int, first: datetime = NOW - 10 * H, ongoing: bool = True) -> Change:
    return Change(TARGET_FAILED, "failed/c", f"{first.isoformat()}#{n}", "c", NOW, f"c failed x{n}",
                  {"consecutive_failures": n, "ongoing": ongoing}, episode=first.isoformat())


def price(noticed: datetime) -> Change:
    return Change(PRICE_CHANGED, "price/a/on_demand", "2026-12-01", "a", noticed, "price", {}, noticed_at=noticed)


def sent(c: Change, at: datetime) -> dict:
    return {"key": c.key, "fingerprint": c.fingerprint, "episode": c.episode, "event": c.event, "target": c.target,
            "occurred_at": c.at, "sent_at": at, "payload": c.payload}


@pytest.mark.parametrize("name, changes, log, expected", [
    ("a new cheapest", [cheapest("a", "b")], [], ["b"]),
    ("already told", [cheapest("a", "b")], [sent(cheapest("a", "b"), NOW - H)], []),
    ("only the latest change per preset", [cheapest("a", "b", 1), cheapest("b", "c", 0)], [], ["c"]),
    ("flipped back to what was told", [cheapest("a", "b", 1), cheapest("b", "a", 0)],
     [sent(cheapest("x", "a"), NOW - H)], []),
    ("told b before, a now", [cheapest("b", "a")], [sent(cheapest("a", "b"), NOW - H)], ["a"]),
])
def test_cheapest_is_told_when_it_differs_from_what_was_told(name, changes, log, expected):
    assert [c.fingerprint for c in due(changes, log, now=NOW, cfg=CFG)] == expected, name


@pytest.mark.parametrize("event", [GAP_SHIFTED, THROUGHPUT_SHIFTED, FAILURE_RATE_SHIFTED])
@pytest.mark.parametrize("name, periods, log, expected", [
    ("a shift into the newest window", [0], [], 1),
    ("a shift into an older window is history", [1], [], 0),
    ("the same shift again (re-run)", [0], [(0, None, H)], 0),
    ("the weekly window slid by a day over the same shift", [0], [(0, 1, 24 * H)], 0),
    ("a new shift a window length later", [0], [(0, 30, 30 * 24 * H)], 1),
])
def test_a_shift_is_told_once_per_window(event, name, periods, log, expected):
    changes = [shift(p, event=event) for p in periods]
    told = [sent(shift(p, None if days is None else NOW - timedelta(days=days), event), NOW - ago)
            for p, days, ago in log]
    assert len(due(changes, told, now=NOW, cfg=CFG)) == expected, name


@pytest.mark.parametrize("name, change, log, expected", [
    ("first failure", failing(1), [], True),
    ("second failure an hour later", failing(2), [sent(failing(1), NOW - H)], False),
    ("still failing a day later", failing(5), [sent(failing(1), NOW - 25 * H)], True),
    ("a day later but no new failure (re-read)", failing(1), [sent(failing(1), NOW - 25 * H)], False),
    ("told again today already", failing(6), [sent(failing(1), NOW - 50 * H), sent(failing(5), NOW - 2 * H)], False),
    ("a new streak after recovering", failing(1, first=NOW - H),
     [sent(failing(3, first=NOW - 48 * H), NOW - 3 * H)], True),
    ("a streak that ended", failing(2, ongoing=False), [], False),
])
def test_a_failing_target_is_told_at_once_then_at_most_daily(name, change, log, expected):
    assert bool(due([change], log, now=NOW, cfg=CFG)) is expected, name


@pytest.mark.parametrize("name, change, log, expected", [
    ("a price that landed an hour ago", price(NOW - H), [], True),
    ("already told", price(NOW - H), [sent(price(NOW - H), NOW - H)], False),
    ("landed long ago: history, not news", price(NOW - timedelta(days=30)), [], False),
])
def test_price_changes_are_news_once(name, change, log, expected):
    assert bool(due([change], log, now=NOW, cfg=CFG)) is expected, name


def test_told_cheapest_is_the_last_told_per_preset():
    log = [sent(cheapest("a", "b"), NOW - 2 * H), sent(cheapest("b", "a"), NOW - H)]
    assert told_cheapest(log) == {"1b": "a"}


def test_events_group_quarantined_bundles_per_target_and_carry_the_link():
    qs = [Change(DATA_QUARANTINED, f"quarantine/{i}", i, t, NOW, f"bundle {i}",
                 {"bundle_id": i * 12, "kind": "quarantined", "reason": "bad"}, noticed_at=NOW)
          for i, t in (("1", "a"), ("2", "a"), ("3", None))]
    got = events([cheapest("a", "b"), *qs], "https://costgap.example/index.html")
    assert [(a.event, a.target, len(a.changes)) for a in got] == [
        (CHEAPEST_CHANGED, "b", 1), (DATA_QUARANTINED, "a", 2), (DATA_QUARANTINED, None, 1)]
    assert all(a.payload["link"] == "https://costgap.example/index.html" for a in got)
    assert got[0].resource == {"prefect.resource.id": "costgap.target.b", "prefect.resource.name": "b"}
    assert got[0].related_resources[0]["prefect.resource.role"] == "previous-cheapest"
    assert got[2].resource["prefect.resource.id"] == "costgap.target.unknown" and got[1].payload["count"] == 2
