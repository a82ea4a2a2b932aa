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
The whole file is checked first (tasks/readers.py): the zip's CRC, then every line against the header,
with the ECB's trailing comma (a row cut anywhere loses it), and every cell of every currency, priced
in or not, a positive decimal or N/A. One bad cell refuses the file: nothing lands.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from tasks.pricing.base import CURRENCIES, PriceError
from tasks.pricing.fx import PIVOT, FxError
from tasks.readers import Column, decode, read_csv

HIST_URL = "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-hist.zip"  # the ECB's published full history
CSV_NAME = "eurofxref-hist.csv"  # the one member of the zip
BASE = "EUR"  # every ECB reference rate is quoted per euro
MISSING = "N/A"  # the ECB's mark for "no rate published that day"
RATE = Column("number", sign="positive", blank=False, missing=(MISSING,), what="a rate")  # every currency column
DAY = Column("date", blank=False, required=True)


def read_bytes(data: bytes, origin: str) -> str:
    """The CSV text of an eurofxref-hist.zip or .csv given as bytes; `origin` names it in errors."""
    return read_member(data, origin)[0]


def read_member(data: bytes, origin: str) -> tuple[str, str]:
    """(CSV text, its name for errors: `origin`, or `origin!member` inside a zip). A zip is checked whole:
    a cut zip has no central directory, a damaged member fails its CRC."""
    if data[:2] == b"PK":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                names = [n for n in zf.namelist() if n.lower().endswith(".csv")]
                if not names:
                    raise FxError(f"{origin}: a zip without a .csv member; expected {CSV_NAME}")
                member = CSV_NAME if CSV_NAME in names else names[0]
                data = zf.read(member)  # raises on a CRC mismatch
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as e:
            raise FxError(f"{origin}: not a readable zip (cut short or damaged): {e}") from None
        origin = f"{origin}!{member}"
    return decode(data, origin, FxError), origin


@dataclass
class EcbRates:
    """Cross rates (currency, rate_date, units_per_usd, source, where) from one ECB history file."""

    text: str  # the CSV text (read_bytes)
    origin: str  # the URL or file it came from: goes into every row's source
    label: str = ""  # the CSV's name in errors (zip!member); default: origin
    skipped: Counter = field(default_factory=Counter, init=False)  # cells not landed, by reason
    ignored: set = field(default_factory=set, init=False)  # ECB currencies costgap does not price in

    name = "ecb"

    @property
    def source(self) -> str:
        return f"ECB euro reference rates ({self.origin}), USD cross rate"

    def rows(self) -> list[tuple[str, date, float, str, str]]:
        label = self.label or self.origin
        first = self.text.split("\n", 1)[0].strip().split(",")
        if not first or first[0] != "Date" or PIVOT not in first:
            raise FxError(f"{label}:1: header {','.join(first)[:60]!r}: expected Date,USD,JPY,... "
                          f"(the ECB's eurofxref-hist.csv)")
        header, table = read_csv(self.text, label, {"Date": DAY}, error=FxError, extra=RATE,
                                 trailing_empty=True)
        out: list[tuple[str, date, float, str, str]] = []
        source, self.skipped, self.ignored = self.source, Counter(), set()
        priced = [c for c in header[1:] if c and c != PIVOT and c in CURRENCIES]
        self.ignored = {c for c in header[1:] if c and c != PIVOT and c not in CURRENCIES}
        for row in table:
            day = date.fromisoformat(row["Date"].strip())
            usd = row.number(PIVOT)
            if usd is None:
                self.skipped["days without a USD rate"] += 1
                continue
            out.append((BASE, day, 1.0 / usd, source, row.where))
            for cur in priced:
                per_eur = row.number(cur)
                if per_eur is None:
                    self.skipped["N/A cells"] += 1
                    continue
                out.append((cur, day, per_eur / usd, source, row.where))
        if not out:
            raise FxError(f"{self.origin}: no rates in the file")
        return out


def from_file(path: str) -> EcbRates:
    """An eurofxref-hist.zip or eurofxref-hist.csv on disk."""
    p = Path(path)
    if not p.is_file():
        raise FxError(f"{p}: no such ECB history file (eurofxref-hist.zip or .csv)")
    text, label = read_member(p.read_bytes(), str(p))
    return EcbRates(text, str(p), label)


def from_url(client, url: str = HIST_URL) -> EcbRates:
    """Download through the injected HTTP client (tasks.pricing.http: live httpx or a recorded replay)."""
    data = client.get_bytes(url)
    if not data:
        raise PriceError(f"{url}: empty answer")
    text, label = read_member(data, url)
    return EcbRates(text, url, label)
