"""Source plug-in: the Azure Retail Prices API (no credentials), following NextPageLink paging.

    costgap prices refresh --source azure-gpu --replay tests/fixtures/azure

API: GET https://prices.azure.com/api/retail/prices?$filter=... returns {"BillingCurrency",
"CustomerEntityId", "CustomerEntityType", "Items": [...], "NextPageLink": url | null, "Count"}
(learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices, read 2026-12-02).
Each item: currencyCode, retailPrice, unitPrice, armRegionName, effectiveStartDate, armSkuName,
skuName, productName, serviceName, unitOfMeasure, type (Consumption | Reservation | DevTestConsumption),
reservationTerm ("1 Year" | "3 Years"), tierMinimumUnits.
Mapped: Consumption -> on_demand (spot when the SKU says "Spot"), 1-year Reservation -> yearly
(unitPrice is the whole term). Skipped and counted: Windows and Low Priority meters, DevTest, 3-year
reservations (not a billing mode here), tiered meters and meters not priced per hour.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from urllib.parse import quote

from tasks.pricing.base import PriceError, PriceRow, utc
from tasks.pricing.http import HttpClient

API_URL = "https://prices.azure.com/api/retail/prices"
MAX_PAGES = 500  # the whole VM catalogue is ~1,300 pages of 100; a filtered GPU query is < 50


def filter_url(odata_filter: str, currency: str = "USD") -> str:
    return f"{API_URL}?currencyCode='{currency}'&$filter={quote(odata_filter, safe='')}"


def map_item(item: dict, *, where: str, fetched_at: datetime) -> PriceRow | str:
    """One API item -> PriceRow, or the reason it was skipped."""
    sku, product = str(item.get("skuName", "")), str(item.get("productName", ""))
    kind = item.get("type")
    if "Windows" in product:
        return "windows"
    if "Low Priority" in sku:
        return "low_priority"
    if float(item.get("tierMinimumUnits") or 0) > 0:
        return "tiered"
    if kind == "Consumption":
        if item.get("unitOfMeasure") != "1 Hour":
            return "not_hourly"
        mode, period, amount = ("spot" if "Spot" in sku else "on_demand"), "hour", item.get("retailPrice")
    elif kind == "Reservation":
        if item.get("reservationTerm") != "1 Year":
            return "reservation_term"
        mode, period, amount = "yearly", "year", item.get("unitPrice")
    else:
        return "other_type"
    try:
        return PriceRow(
            provider="azure", region=str(item.get("armRegionName") or ""),
            instance_type=str(item.get("armSkuName") or ""), billing_mode=mode,
            currency=str(item.get("currencyCode") or ""), original_amount=amount, original_period=period,
            effective_from=utc(str(item.get("effectiveStartDate") or ""), where=where, field="effectiveStartDate"),
            source=where, fetched_at=fetched_at)
    except PriceError as e:
        raise PriceError(f"{where}: item {item.get('meterId', '?')}: {e}") from None


@dataclass
class AzureRetailPrices:
    """Fetch every page of one filtered query through an injected HTTP client."""

    client: HttpClient  # LiveClient live, ReplayClient for recorded responses
    odata_filter: str = "serviceName eq 'Virtual Machines'"  # narrow it: the full catalogue is huge
    currency: str = "USD"  # Microsoft prices in USD; other currencies are estimates (API docs)
    fetched_at: datetime | None = None  # default: now
    skipped: Counter = field(default_factory=Counter, init=False)

    name = "azure"

    @property
    def location(self) -> str:
        return filter_url(self.odata_filter, self.currency)

    def fetch(self) -> list[PriceRow]:
        when = (self.fetched_at or datetime.now(timezone.utc)).astimezone(timezone.utc)
        url: str | None = self.location
        seen: dict[tuple, PriceRow] = {}
        self.skipped = Counter()
        for page in range(MAX_PAGES):
            if url is None:
                break
            body = self.client.get_json(url)
            if not isinstance(body, dict) or not isinstance(body.get("Items"), list):
                raise PriceError(f"{url}: field 'Items' is missing: not an Azure Retail Prices response")
            for item in body["Items"]:
                got = map_item(item, where=url, fetched_at=when)
                if isinstance(got, str):
                    self.skipped[got] += 1
                    continue
                ident = (got.key, got.effective_from)
                if ident in seen:
                    self.skipped["duplicate_meter"] += 1
                    continue
                seen[ident] = got
            url = body.get("NextPageLink") or None
        else:
            raise PriceError(f"{self.location}: more than {MAX_PAGES} pages; narrow the filter")
        return list(seen.values())
