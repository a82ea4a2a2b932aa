"""Source plug-in: the ECB's euro foreign exchange reference rates, the full history (no credentials).

    costgap fx refresh --source ecb                                   # downloads HIST_URL
    costgap fx import tests/fixtures/ecb/eurofxref-hist.zip --format ecb   # the zip or its CSV, offline

The file (ecb.europa.eu/stats/policy_and_exchange_rates/euro_reference_exchange_rates, read 2026-12-04)
is one CSV, eurofxref-hist.csv, usually inside eurofxref-hist.zip: a header `Date,USD,JPY,...,` (a
trailing comma, so a last empty column), then one line per TARGET business day, newest first, each cell
the units of that currency one euro buys, or "N/A" where the ECB published none (a currency before it
was quoted, or after it joined the euro). costgap pivots on USD (`fx_rates.units_per_usd`), so each day's
rates become cross rates: units_per_usd(X) = X per EUR / USD per EUR, and units_per_usd(EUR) = 1 / USD
per EUR. A day without a USD rate yields nothing; an "N/A" cell is skipped, never filled in. Only the
currencies costgap prices in (tasks.pricing.base.CURRENCIES) are kept; the others are counted.
"""

from __future__ import annotations

import csv
import io
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from tasks.pricing.base import CURRENCIES, PriceError
from tasks.pricing.fx import PIVOT, FxError

HIST_URL = "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-hist.zip"  # the ECB's published full history
CSV_NAME = "eurofxref-hist.csv"  # the one member of the zip
BASE = "EUR"  # every ECB reference rate is quoted per euro
MISSING = "N/A"  # the ECB's mark for "no rate published that day"


def read_bytes(data: bytes, origin: str) -> str:
    """The CSV text of an eurofxref-hist.zip or .csv given as bytes; `origin` names it in errors."""
    if data[:2] == b"PK":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                names = [n for n in zf.namelist() if n.lower().endswith(".csv")]
                if not names:
                    raise FxError(f"{origin}: a zip without a .csv member; expected {CSV_NAME}")
                data = zf.read(CSV_NAME if CSV_NAME in names else names[0])
        except zipfile.BadZipFile as e:
            raise FxError(f"{origin}: not a readable zip: {e}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise FxError(f"{origin}: not UTF-8 text: {e}") from None


@dataclass
class EcbRates:
    """Cross rates (currency, rate_date, units_per_usd, source, where) from one ECB history file."""

    text: str  # the CSV text (read_bytes)
    origin: str  # the URL or file it came from: goes into every row's source
    skipped: Counter = field(default_factory=Counter, init=False)  # cells not landed, by reason
    ignored: set = field(default_factory=set, init=False)  # ECB currencies costgap does not price in

    name = "ecb"

    @property
    def source(self) -> str:
        return f"ECB euro reference rates ({self.origin}), USD cross rate"

    def rows(self) -> list[tuple[str, date, float, str, str]]:
        reader = csv.reader(io.StringIO(self.text))
        header = [h.strip() for h in next(reader, [])]
        if not header or header[0] != "Date" or PIVOT not in header:
            raise FxError(f"{self.origin}:1: header {','.join(header)[:60]!r}: expected Date,USD,JPY,... "
                          f"(the ECB's eurofxref-hist.csv)")
        usd_col = header.index(PIVOT)
        columns = [(i, c) for i, c in enumerate(header) if c and i != 0]
        out: list[tuple[str, date, float, str, str]] = []
        source, self.skipped, self.ignored = self.source, Counter(), set()
        for line, rec in enumerate(reader, start=2):
            if not any(cell.strip() for cell in rec):
                continue
            where = f"{self.origin}:{line}"
            try:
                day = date.fromisoformat(rec[0].strip())
            except ValueError:
                raise FxError(f"{where}: field 'Date' = {rec[0]!r}: expected YYYY-MM-DD") from None
            usd = _rate(rec, usd_col, where, PIVOT)
            if usd is None:
                self.skipped["days without a USD rate"] += 1
                continue
            out.append((BASE, day, 1.0 / usd, source, where))
            for i, cur in columns:
                if cur == PIVOT:
                    continue
                if cur not in CURRENCIES:
                    self.ignored.add(cur)
                    continue
                per_eur = _rate(rec, i, where, cur)
                if per_eur is None:
                    self.skipped["N/A cells"] += 1
                    continue
                out.append((cur, day, per_eur / usd, source, where))
        if not out:
            raise FxError(f"{self.origin}: no rates in the file")
        return out


def _rate(rec: list[str], i: int, where: str, cur: str) -> float | None:
    text = rec[i].strip() if i < len(rec) else ""
    if text in ("", MISSING):
        return None
    try:
        value = float(text)
    except ValueError:
        raise FxError(f"{where}: field '{cur}' = {text!r}: expected a rate or {MISSING}") from None
    if not value > 0 or value == float("inf"):
        raise FxError(f"{where}: field '{cur}' = {text!r}: expected a positive rate")
    return value


def from_file(path: str) -> EcbRates:
    """An eurofxref-hist.zip or eurofxref-hist.csv on disk."""
    p = Path(path)
    if not p.is_file():
        raise FxError(f"{p}: no such ECB history file (eurofxref-hist.zip or .csv)")
    return EcbRates(read_bytes(p.read_bytes(), str(p)), str(p))


def from_url(client, url: str = HIST_URL) -> EcbRates:
    """Download through the injected HTTP client (tasks.pricing.http: live urllib or a recorded replay)."""
    data = client.get_bytes(url)
    if not data:
        raise PriceError(f"{url}: empty answer")
    return EcbRates(read_bytes(data, url), url)
