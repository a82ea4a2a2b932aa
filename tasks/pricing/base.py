"""One price row and the small interface every price source implements.

    .venv/bin/pytest -q tests/test_pricing.py

A source (CSV/YAML price book, SkyPilot catalog, Azure Retail Prices API, ...) is anything with a
`name` and a `fetch() -> list[PriceRow]`. `tasks.pricing.book.import_rows` lands the rows. A row
that cannot be a price (zero or negative amount, unknown currency or billing mode) fails here,
naming where it came from (file and line, or URL), the field, the value and what was expected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from tasks.errors import UserError

# Hours a quoted period covers (DESIGN.md "Cost model": monthly /730 h, yearly /8760 h).
PERIOD_HOURS = {"hour": 1.0, "month": 730.0, "year": 8760.0}
BILLING_MODES = ("on_demand", "monthly", "yearly", "spot")
# The period each billing mode is normally quoted in (a source may say otherwise per row).
DEFAULT_PERIOD = {"on_demand": "hour", "spot": "hour", "monthly": "month", "yearly": "year"}
# ISO 4217 codes costgap accepts (ISO 4217 list, 2026-12). A code outside this set is a typo, not a
# currency; add one here (and a dated rate in deploy/fx_rates.csv) to use it.
CURRENCIES = frozenset(
    "USD EUR CNY GBP JPY KRW INR SGD HKD AUD CAD CHF SEK NOK DKK PLN BRL TWD IDR MYR THB AED ZAR".split()
)


class PriceError(UserError):
    """A price row or price file that cannot be used; the message says where, what and why."""


def file_fetched_at(path: Path, what: str) -> datetime:
    """A local price file's modification time (UTC, whole seconds), after checking it exists."""
    if not path.is_file():
        raise PriceError(f"{path}: no such {what}")
    return datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc).replace(microsecond=0)


def utc(value: datetime | str, *, where: str, field: str) -> datetime:
    """A timezone-aware UTC datetime from a datetime or ISO string; a bare date means 00:00 UTC."""
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            raise PriceError(f"{where}: field '{field}' = {value!r}: expected an ISO date or time") from None
    if not isinstance(value, datetime):
        raise PriceError(f"{where}: field '{field}' = {value!r}: expected an ISO date or time")
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


@dataclass(frozen=True)
class PriceRow:
    """One quoted price for one key over one period. Validated on construction."""

    provider: str  # joins targets.provider, e.g. "lambda", "azure"
    region: str  # joins targets.region
    instance_type: str  # joins targets.instance_type
    billing_mode: str  # on_demand | monthly | yearly | spot
    currency: str  # ISO 4217 code, as quoted
    original_amount: float  # the quoted figure, per `original_period`
    original_period: str  # hour | month | year
    effective_from: datetime  # start of the period (inclusive, UTC)
    source: str  # URL or file:line the row came from: every price carries its source
    fetched_at: datetime  # when the source was read
    effective_to: datetime | None = None  # end (exclusive); None = open until a new price arrives
    where: str = field(default="", compare=False, repr=False)  # file:line for error messages; default source

    def __post_init__(self) -> None:
        where = self.where or self.source or "<price row without a source>"
        if not self.source:
            raise PriceError(f"{where}: field 'source' is empty: every price needs its URL or file")
        for name in ("provider", "region", "instance_type"):
            if not str(getattr(self, name)).strip():
                raise PriceError(f"{where}: field '{name}' is empty: expected a name")
        if self.billing_mode not in BILLING_MODES:
            raise PriceError(f"{where}: field 'billing_mode' = {self.billing_mode!r}: expected one of {BILLING_MODES}")
        if self.currency not in CURRENCIES:
            raise PriceError(f"{where}: field 'currency' = {self.currency!r}: unknown currency "
                             f"(expected an ISO 4217 code from tasks.pricing.base.CURRENCIES)")
        if self.original_period not in PERIOD_HOURS:
            raise PriceError(f"{where}: field 'period' = {self.original_period!r}: expected hour, month or year")
        amount = self.original_amount
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not amount == amount:
            raise PriceError(f"{where}: field 'price' = {amount!r}: expected a number")
        if amount <= 0 or amount == float("inf"):
            raise PriceError(f"{where}: field 'price' = {amount!r}: expected a positive, finite price")
        if self.effective_to is not None and self.effective_to <= self.effective_from:
            raise PriceError(f"{where}: field 'effective_to' = {self.effective_to.isoformat()}: "
                             f"must be after effective_from {self.effective_from.isoformat()}")

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.provider, self.region, self.instance_type, self.billing_mode)

    @property
    def price_per_hour(self) -> float:
        return float(self.original_amount) / PERIOD_HOURS[self.original_period]


class PriceSource(Protocol):
    """A plug-in: `name` goes into price_imports.source_kind; `fetch` returns validated rows."""

    name: str
    location: str  # the file or URL, for price_imports.source

    def fetch(self) -> list[PriceRow]: ...
