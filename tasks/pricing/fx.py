"""Dated FX rates (table fx_rates): report every cost in one currency; a missing rate is an error.

    costgap fx import deploy/fx_rates.csv --format csv      # same as: costgap prices import FILE --format fx
    costgap fx refresh --source ecb                           # the ECB's daily reference rates (tasks/pricing/ecb.py)

Rates pivot on USD: `units_per_usd` is how many units of the currency one USD buys on `rate_date`, and a
rate applies from its date until the next one (an ASOF join in warehouse/queries/cost_runs.sql).
Converting amount A from currency F to reporting currency Q on day d:
A / units_per_usd(F, d) * units_per_usd(Q, d), with USD = 1 by definition (the pivot, not a default).
CSV columns: currency, rate_date, units_per_usd, source. The file is checked whole first (tasks/readers.py:
every row as long as the header, every cell well-formed, a line end after the last row); errors name the
file, line, field and value, and nothing lands.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import duckdb
import pandas as pd

from tasks.pricing.base import CURRENCIES, PriceError
from tasks.readers import Column, read_csv

PIVOT = "USD"  # every rate is quoted against it


class FxError(PriceError):
    """A bad FX file, or a cost that needs a rate the table does not have."""


FX_COLUMNS = {  # costgap's own FX CSV (deploy/fx_rates.csv)
    "currency": Column(blank=False, required=True),
    "rate_date": Column("date", blank=False, required=True),
    "units_per_usd": Column("number", sign="positive", blank=False, required=True, what="a rate"),
    "source": Column(blank=False, required=True, what="the rate's publisher or URL"),
}


def read_fx_csv(path: str) -> list[tuple[str, date, float, str, str]]:
    """(currency, rate_date, units_per_usd, source, file:line) per row, validated."""
    p = Path(path)
    if not p.is_file():
        raise FxError(f"{p}: no such FX rates file")
    _, table = read_csv(p.read_bytes(), str(p), FX_COLUMNS, error=FxError)
    out = []
    for rec in table:
        where = rec.where
        cur = rec["currency"].strip().upper()
        if cur not in CURRENCIES:
            raise FxError(f"{where}: field 'currency' = {rec['currency']!r}: unknown currency (ISO 4217)")
        if cur == PIVOT:
            raise FxError(f"{where}: field 'currency' = 'USD': USD is the pivot (1 by definition); drop the row")
        out.append((cur, date.fromisoformat(rec["rate_date"].strip()), rec.number("units_per_usd"),
                    rec["source"].strip(), where))
    return out


def insert_rates(con: duckdb.DuckDBPyConnection, rows: list[tuple]) -> dict:
    """Land validated rates (currency, rate_date, units_per_usd, source, where): only the (currency, date)
    pairs the table does not hold yet, in one transaction. A pair stored with another rate is rejected,
    naming both, and nothing lands. Returns counts and `landed`, the rows inserted (for the archive)."""
    have = {(c, d): (r, s) for c, d, r, s in con.execute(
        "select currency, rate_date, units_per_usd, source from fx_rates").fetchall()}
    new: dict[tuple, tuple] = {}
    same, seen = 0, {}
    for cur, day, rate, source, where in rows:
        key = (cur, day)
        if key in seen and seen[key][0] != rate:
            raise FxError(f"{where}: {cur} {day} = {rate} conflicts with {seen[key][1]} ({seen[key][0]})")
        seen[key] = (rate, where)
        if key in have:
            if have[key][0] != rate:
                raise FxError(f"{where}: {cur} {day} = {rate} conflicts with the stored rate {have[key][0]} "
                              f"(from {have[key][1]})")
            same += 1
        elif key not in new:
            new[key] = (cur, day, rate, source, where)
    landed = list(new.values())
    if landed:
        frame = pd.DataFrame([r[:4] for r in landed], columns=["currency", "rate_date", "units_per_usd", "source"])
        con.execute("begin transaction")
        try:
            con.register("_new_fx_rates", frame)
            con.execute("insert into fx_rates (currency, rate_date, units_per_usd, source) "
                        "select currency, cast(rate_date as date), units_per_usd, source from _new_fx_rates")
            con.unregister("_new_fx_rates")
            con.execute("commit")
        except Exception:
            con.execute("rollback")
            raise
    return {"rows": len(rows), "new": len(landed), "unchanged": same, "landed": landed}


def import_fx(con: duckdb.DuckDBPyConnection, path: str) -> dict:
    """Land the dated rates of an FX CSV file (see read_fx_csv)."""
    got = insert_rates(con, read_fx_csv(path))
    got.pop("landed")
    return {"file": str(path), **got}


def rate(con: duckdb.DuckDBPyConnection, currency: str, on: date) -> float:
    """units_per_usd for `currency` as of `on`; raises FxError when no rate is dated on or before it."""
    if currency == PIVOT:
        return 1.0
    if currency not in CURRENCIES:
        raise FxError(f"currency {currency!r}: unknown currency (ISO 4217)")
    got = con.execute("select units_per_usd from fx_rates where currency = ? and rate_date <= ? "
                      "order by rate_date desc limit 1", [currency, on]).fetchall()
    if not got:
        raise FxError(f"no FX rate for {currency} on or before {on}: add one to fx_rates "
                      f"(costgap fx refresh --source ecb, or costgap fx import FILE --format ecb|csv)")
    return float(got[0][0])


def convert(con: duckdb.DuckDBPyConnection, amount: float, frm: str, to: str, on: date) -> float:
    return amount / rate(con, frm, on) * rate(con, to, on)
