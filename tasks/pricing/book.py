"""The price book: land validated PriceRows as dated, never-overlapping periods per key.

    costgap prices import deploy/prices/example.csv --format csv

Key = (provider, region, instance_type, billing_mode). For each incoming row, in effective_from order:
- it matches the period that covers its start (same amount, period and currency): unchanged, and the
  period's last_seen_at advances (so an unchanged re-import adds no period);
- it starts after the start of the key's open period with a different price: the open period is closed at
  the new start and a new period opens ("a changed price opens a new period");
- an open-ended row that starts before a later existing period is closed at that period's start;
- anything else overlaps an existing period: the whole import is rejected, naming both rows.
The import runs in one transaction: all of it lands, or none of it. Re-running an identical import
(same source, fetched_at and rows) is recognised by its import_id and changes nothing at all.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timezone

import duckdb
import pandas as pd

from tasks.pricing.base import PriceError, PriceRow
from warehouse.sql import rows

MAX_CONFLICTS_SHOWN = 5  # a bad file can conflict on every row; the first few say enough


@dataclass(frozen=True)
class ImportSummary:
    import_id: str
    source_kind: str
    source: str
    rows_in: int
    rows_new: int
    rows_unchanged: int
    rows_closed: int
    repeat: bool = False  # the identical import had already landed

    def as_text(self) -> str:
        head = "already imported; nothing changed" if self.repeat else "imported"
        return (f"{self.source_kind} {self.source}: {head}: {self.rows_in} rows, {self.rows_new} new periods, "
                f"{self.rows_unchanged} unchanged, {self.rows_closed} periods closed (import {self.import_id[:12]})")


def _iso(t: datetime | None) -> str:
    return "open" if t is None else t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _describe(p: dict) -> str:
    return (f"{'/'.join(p['key'])} {_iso(p['effective_from'])}..{_iso(p['effective_to'])} "
            f"{p['original_amount']:g} {p['currency']}/{p['original_period']} (from {p['source']})")


def _import_id(source_kind: str, source: str, fetched_at: datetime, rows: list[PriceRow]) -> str:
    h = hashlib.sha256(f"{source_kind}\n{source}\n{_iso(fetched_at)}\n".encode())
    for r in rows:
        h.update(repr((r.key, r.currency, r.original_amount, r.original_period, _iso(r.effective_from),
                       _iso(r.effective_to))).encode())
    return h.hexdigest()


def _existing(con: duckdb.DuckDBPyConnection, keys: list[tuple]) -> dict[tuple, list[dict]]:
    if not keys:
        return {}
    wanted = pd.DataFrame(keys, columns=["provider", "region", "instance_type", "billing_mode"])
    con.register("_wanted_price_keys", wanted)
    try:
        got = rows(con, "price_periods_for_keys")
    finally:
        con.unregister("_wanted_price_keys")
    state: dict[tuple, list[dict]] = {}
    for rec in got:
        rec["key"] = (rec["provider"], rec["region"], rec["instance_type"], rec["billing_mode"])
        for f in ("effective_from", "effective_to", "fetched_at", "last_seen_at"):
            if rec[f] is not None:
                rec[f] = rec[f].astimezone(timezone.utc)
        rec["_status"] = "db"
        state.setdefault(rec["key"], []).append(rec)
    return state


def _as_period(row: PriceRow, import_id: str) -> dict:
    return {"key": row.key, "provider": row.provider, "region": row.region, "instance_type": row.instance_type,
            "billing_mode": row.billing_mode, "currency": row.currency, "price_per_hour": row.price_per_hour,
            "original_amount": float(row.original_amount), "original_period": row.original_period,
            "effective_from": row.effective_from, "effective_to": row.effective_to, "source": row.source,
            "fetched_at": row.fetched_at, "last_seen_at": row.fetched_at, "import_id": import_id,
            "_status": "new"}


def _same_price(a: dict, b: dict) -> bool:
    return (a["currency"], a["original_amount"], a["original_period"]) == (
        b["currency"], b["original_amount"], b["original_period"])


def _place(periods: list[dict], new: dict, counts: dict) -> str | None:
    """Fit `new` into one key's periods (mutating them); return a conflict message or None."""
    start, end = new["effective_from"], new["effective_to"]
    overlapping = [p for p in periods if (end is None or p["effective_from"] < end)
                   and (p["effective_to"] is None or p["effective_to"] > start)]
    covering = [p for p in overlapping if p["effective_from"] <= start]
    if not overlapping:
        periods.append(new)
        counts["new"] += 1
        return None
    if len(covering) == 1 and _same_price(covering[0], new) and (end is None or end == covering[0]["effective_to"]):
        cur = covering[0]
        if new["fetched_at"] > cur["last_seen_at"]:
            cur["last_seen_at"] = new["fetched_at"]
            cur["_dirty"] = True
        counts["unchanged"] += 1
        return None
    if not covering and end is None:
        # an open-ended row before later periods: it ends where the next known period starts
        new["effective_to"] = min(p["effective_from"] for p in overlapping)
        periods.append(new)
        counts["new"] += 1
        return None
    if (len(overlapping) == 1 and len(covering) == 1 and covering[0]["effective_to"] is None
            and covering[0]["effective_from"] < start):
        cur = covering[0]
        cur["effective_to"] = start
        cur["_dirty"] = True
        periods.append(new)
        counts["new"] += 1
        counts["closed"] += 1
        return None
    return f"{_describe(new)} overlaps {_describe(overlapping[0])}"


def import_rows(con: duckdb.DuckDBPyConnection, rows: list[PriceRow], *, source_kind: str, source: str,
                fetched_at: datetime) -> ImportSummary:
    """Land `rows` from one source read; raise PriceError naming both rows of any overlap."""
    rows = sorted(rows, key=lambda r: (r.key, r.effective_from))
    import_id = _import_id(source_kind, source, fetched_at, rows)
    if con.execute("select count(*) from price_imports where import_id = ?", [import_id]).fetchall()[0][0]:
        return ImportSummary(import_id, source_kind, source, len(rows), 0, len(rows), 0, repeat=True)
    state = _existing(con, sorted({r.key for r in rows}))
    counts = {"new": 0, "unchanged": 0, "closed": 0}
    conflicts: list[str] = []
    for r in rows:
        msg = _place(state.setdefault(r.key, []), _as_period(r, import_id), counts)
        if msg:
            conflicts.append(msg)
    if conflicts:
        more = f" (and {len(conflicts) - MAX_CONFLICTS_SHOWN} more)" if len(conflicts) > MAX_CONFLICTS_SHOWN else ""
        raise PriceError(f"{source}: import rejected, periods would overlap: "
                         + "; ".join(conflicts[:MAX_CONFLICTS_SHOWN]) + more)
    periods = [p for ps in state.values() for p in ps]
    fresh = [p for p in periods if p["_status"] == "new"]
    dirty = [p for p in periods if p["_status"] == "db" and p.get("_dirty")]
    cols = ["provider", "region", "instance_type", "billing_mode", "currency", "price_per_hour", "original_amount",
            "original_period", "effective_from", "effective_to", "source", "fetched_at", "last_seen_at", "import_id"]
    con.execute("begin transaction")
    try:
        con.execute("insert into price_imports values (?, ?, ?, ?, now(), ?, ?, ?, ?)",
                    [import_id, source_kind, source, fetched_at, len(rows), counts["new"], counts["unchanged"],
                     counts["closed"]])
        if fresh:
            frame = pd.DataFrame([{c: p[c] for c in cols} for p in fresh], columns=cols)
            con.register("_new_prices", frame)
            con.execute(f"insert into prices ({', '.join(cols)}) select {', '.join(cols)} from _new_prices")
            con.unregister("_new_prices")
        for p in dirty:
            con.execute("update prices set effective_to = ?, last_seen_at = ? where provider = ? and region = ?"
                        " and instance_type = ? and billing_mode = ? and effective_from = ?",
                        [p["effective_to"], p["last_seen_at"], *p["key"], p["effective_from"]])
        con.execute("commit")
    except Exception:
        con.execute("rollback")
        raise
    return ImportSummary(import_id, source_kind, source, len(rows), counts["new"], counts["unchanged"],
                         counts["closed"])


def import_fetched(con: duckdb.DuckDBPyConnection, source, rows: list[PriceRow],
                   fetched_at: datetime | None = None) -> ImportSummary:
    """Land rows already fetched from `source` (fetch first, then take the warehouse lock briefly)."""
    when = fetched_at or (max(r.fetched_at for r in rows) if rows else datetime.now(timezone.utc))
    return import_rows(con, rows, source_kind=source.name, source=source.location, fetched_at=when)


def import_source(con: duckdb.DuckDBPyConnection, source, fetched_at: datetime | None = None) -> ImportSummary:
    """Fetch a PriceSource and land its rows."""
    return import_fetched(con, source, source.fetch(), fetched_at)
