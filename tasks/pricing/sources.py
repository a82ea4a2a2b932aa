"""Named price sources for `costgap prices refresh --source NAME` and the daily price flow.

    costgap prices refresh --source azure-gpu --replay tests/fixtures/azure

A recipe names a fetcher and its query, so a refresh is reproducible from its name alone. Live
fetchers take the HTTP client as an argument (tasks.pricing.http); nothing here opens a socket.
"""

from __future__ import annotations

from datetime import datetime
from typing import Callable

from tasks.pricing.azure import AzureRetailPrices
from tasks.pricing.base import PriceError, PriceSource
from tasks.pricing.http import HttpClient

# GPU VM sizes costgap compares on Azure (Azure VM size docs, NC/ND series, read 2026-12-02).
AZURE_GPU_SKUS = (
    "Standard_NC24ads_A100_v4", "Standard_NC40ads_H100_v5", "Standard_ND96isr_H100_v5",
    "Standard_ND96isr_H200_v5", "Standard_NV36ads_A10_v5", "Standard_NC4as_T4_v3",
)
AZURE_GPU_FILTER = "serviceName eq 'Virtual Machines' and (" + " or ".join(
    f"armSkuName eq '{s}'" for s in AZURE_GPU_SKUS) + ")"

RECIPES: dict[str, Callable[[HttpClient, datetime | None], PriceSource]] = {
    # Azure Retail Prices API, the GPU sizes above, every region, USD, on-demand/spot/1-year.
    "azure-gpu": lambda client, when: AzureRetailPrices(client, AZURE_GPU_FILTER, "USD", when),
}


def build_source(name: str, client: HttpClient, fetched_at: datetime | None = None) -> PriceSource:
    if name not in RECIPES:
        raise PriceError(f"--source {name!r}: unknown price source; expected one of {sorted(RECIPES)}")
    return RECIPES[name](client, fetched_at)


def refresh(con, name: str, client: HttpClient, fetched_at: datetime | None = None):
    """Fetch the named source through `client` and land it (tasks.pricing.book.import_source)."""
    from tasks.pricing.book import import_source

    return import_source(con, build_source(name, client, fetched_at), fetched_at)


def fetch_named(name: str, replay: str | None = None) -> list:
    """Rows of a named source, live (urllib) or from recorded responses in `replay`."""
    from tasks.pricing.http import ReplayClient, UrllibClient

    return build_source(name, ReplayClient(replay) if replay else UrllibClient()).fetch()


def catalog_source(path: str, fmt: str = "skypilot") -> PriceSource:
    """A price file kept in sync by other means: a SkyPilot catalog, or a CSV/YAML price book."""
    from tasks.pricing.pricebook_file import PriceBookFile
    from tasks.pricing.skypilot import SkyPilotCatalog

    return SkyPilotCatalog(path) if fmt == "skypilot" else PriceBookFile(path, fmt)


def summaries_markdown(summaries: list[dict]) -> str:
    """The price-refresh artifact: one row per source."""
    lines = ["| source | kind | rows | new periods | unchanged | closed |", "|---|---|---:|---:|---:|---:|"]
    for s in summaries:
        where = s["source"] if len(s["source"]) <= 60 else s["source"][:57] + "..."
        lines.append(f"| {where} | {s['source_kind']} | {s['rows_in']} | {s['rows_new']} | {s['rows_unchanged']} |"
                     f" {s['rows_closed']} |")
    return "\n".join(lines)
