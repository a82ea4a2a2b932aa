"""No event storms: which decisions are news, given what was already sent, and the events they make.

    .venv/bin/pytest -q tests/test_alerts_policy.py

`due(changes, sent, now=..., cfg=...)` keeps what has not been told yet (`sent`: rows of the
alerts_sent table, warehouse/migrations/*_alerts.sql):
- cheapest: the latest change per preset, unless its new target is what was last told for that preset
  or it happened before the newest `cheapest_windows` windows;
- gap, throughput and failure-rate shifts: a shift into the newest window (the overview's), at most one
  per key (preset, target and the cheapest) per window length, so a shift that holds while the weekly
  window slides over the same runs is told once;
- failures: an ongoing streak at its first failure, then again at most every `failure_repeat_hours`
  and only when it has failed again since;
- prices and quarantine: each new period / bundle once, and only if it landed within `news_max_age_days`.
`events(due, link)` turns them into what the flow emits: one event per change, except quarantined bundles,
one event per target listing them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tasks.alerts.config import (CHEAPEST_CHANGED, DATA_QUARANTINED, FAILURE_RATE_SHIFTED, GAP_SHIFTED, PRICE_CHANGED,
                                 TARGET_FAILED, THROUGHPUT_SHIFTED, UNKNOWN_TARGET, AlertConfig, Change, resource_id)
from tasks.alerts.decide import iso


SHIFTS = (GAP_SHIFTED, THROUGHPUT_SHIFTED, FAILURE_RATE_SHIFTED)  # told once per window length per key


def told_cheapest(sent: list[dict]) -> dict[str, str]:
    """{preset: the target last told as the cheapest} (the standing state the next decision starts from)."""
    out: dict[str, str] = {}
    for s in sorted((s for s in sent if s["event"] == CHEAPEST_CHANGED), key=lambda s: s["sent_at"]):
        out[s["key"].split("/", 1)[1]] = s["fingerprint"]
    return out


def _latest(changes: list[Change]) -> dict[str, Change]:
    out: dict[str, Change] = {}
    for c in sorted(changes, key=lambda c: c.at):
        out[c.key] = c
    return out


def due(changes: list[Change], sent: list[dict], *, now: datetime, cfg: AlertConfig) -> list[Change]:
    """The changes that are news (module docstring), in the order they happened."""
    done = {(s["key"], s["fingerprint"]) for s in sent}
    by_key: dict[str, list[dict]] = {}
    for s in sorted(sent, key=lambda s: s["sent_at"]):
        by_key.setdefault(s["key"], []).append(s)
    told = told_cheapest(sent)
    fresh = now - timedelta(days=cfg.news_max_age_days)
    out: list[Change] = []
    for c in _latest([c for c in changes if c.event == CHEAPEST_CHANGED]).values():
        recent = c.period is None or c.period < cfg.cheapest_windows
        if recent and told.get(c.key.split("/", 1)[1]) != c.fingerprint:
            out.append(c)
    for c in changes:
        if (c.key, c.fingerprint) in done:
            continue
        if c.event in SHIFTS:
            recent = [s for s in by_key.get(c.key, []) if s["occurred_at"] > c.at - timedelta(days=cfg.window_days)]
            if c.period == 0 and not recent:
                out.append(c)
        elif c.event in (PRICE_CHANGED, DATA_QUARANTINED):
            if c.noticed_at is not None and c.noticed_at >= fresh:
                out.append(c)
    for c in _latest([c for c in changes if c.event == TARGET_FAILED]).values():
        if c.payload["ongoing"] and _failure_due(c, by_key.get(c.key, []), now, cfg):
            out.append(c)
    return sorted(out, key=lambda c: (c.at, c.event, c.key))


def _failure_due(c: Change, sent: list[dict], now: datetime, cfg: AlertConfig) -> bool:
    same = [s for s in sent if s["episode"] == c.episode]
    if not same:
        return True  # the first failure of a streak (or the first we could tell of)
    last = same[-1]
    again = c.payload["consecutive_failures"] > (last["payload"] or {}).get("consecutive_failures", 0)
    return again and now - last["sent_at"] >= timedelta(hours=cfg.failure_repeat_hours)


@dataclass
class Alert:
    """One Prefect event to emit, and the changes it tells (each recorded in alerts_sent once emitted)."""

    event: str
    target: str | None
    summary: str
    payload: dict
    related: tuple[str, ...] = ()
    changes: list[Change] = field(default_factory=list)

    @property
    def resource(self) -> dict[str, str]:
        t = self.target or UNKNOWN_TARGET
        return {"prefect.resource.id": resource_id(t), "prefect.resource.name": t}

    @property
    def related_resources(self) -> list[dict[str, str]]:
        role = {CHEAPEST_CHANGED: "previous-cheapest", GAP_SHIFTED: "cheapest", THROUGHPUT_SHIFTED: "compared-with",
                FAILURE_RATE_SHIFTED: "compared-with"}.get(self.event, "target")
        return [{"prefect.resource.id": resource_id(t), "prefect.resource.role": role,
                 "prefect.resource.name": t} for t in self.related]


def events(changes: list[Change], link: str | None) -> list[Alert]:
    """What to emit: one event per change; quarantined bundles grouped into one event per target."""
    out: list[Alert] = []
    groups: dict[str | None, list[Change]] = {}
    for c in changes:
        if c.event == DATA_QUARANTINED:
            groups.setdefault(c.target, []).append(c)
            continue
        out.append(Alert(c.event, c.target, c.summary, {**c.payload, "summary": c.summary, "link": link,
                                                         "at": c.payload.get("at") or iso(c.at)},
                         c.related, [c]))
    for target, cs in groups.items():
        bundles = [c.payload for c in cs]
        who = target or "a file of unknown target"
        summary = (f"{who}: {len(cs)} bundle(s) refused: "
                   + "; ".join(f"{b['bundle_id'][:12]} {b['kind']} ({b['reason']})" for b in bundles[:5])
                   + ("; ..." if len(bundles) > 5 else ""))
        payload = {"target": target, "count": len(cs), "bundles": bundles, "summary": summary, "link": link,
                   "at": iso(max(c.at for c in cs))}
        out.append(Alert(DATA_QUARANTINED, target, summary, payload, (), cs))
    return out

