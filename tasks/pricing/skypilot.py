"""Source plug-in: a SkyPilot catalog file (v7 `vms.csv`), one on-demand (and spot) price per row.

    costgap prices import tests/fixtures/skypilot/lambda-vms.csv --format skypilot --provider lambda

Columns used: InstanceType, Price, SpotPrice, Region (AcceleratorName, AcceleratorCount, vCPUs,
MemoryGiB and GpuInfo are descriptive, and checked all the same: tasks/readers.py refuses the whole file
for a row longer or shorter than the header, a quote never closed, a number that is cut or malformed in
any column, or a last row without its line end). SkyPilot quotes USD per instance-hour. A row with an
empty Price is not offered there and is skipped (counted in `skipped`). The catalog is a snapshot: every
row takes effect at `effective_from` (default: the file's modification time, when it was fetched).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from tasks.pricing.base import PriceError, PriceRow, file_fetched_at
from tasks.readers import Column, read_csv

REQUIRED = ("InstanceType", "Price", "Region")  # the v7 columns a price cannot do without
CURRENCY = "USD"  # SkyPilot catalogs quote USD (skypilot-catalog README, v7, 2026-12)
COLUMNS = {  # the v7 vms.csv columns (skypilot-catalog, catalogs/v7/<cloud>/vms.csv, read 2026-12)
    "InstanceType": Column(blank=False, required=True, what="an instance type"),
    "AcceleratorName": Column(),
    "AcceleratorCount": Column("number", sign="nonneg", what="a GPU count"),
    "vCPUs": Column("number", sign="nonneg", what="a vCPU count"),
    "MemoryGiB": Column("number", sign="nonneg", what="a memory size in GiB"),
    "Price": Column("number", sign="positive", required=True, what="a price"),
    "Region": Column(blank=False, required=True, what="a region"),
    "GpuInfo": Column("literal"),
    "SpotPrice": Column("number", sign="positive", what="a spot price"),
}


def provider_from_path(path: Path) -> str:
    """catalogs/v7/<cloud>/vms.csv -> <cloud>; <cloud>-vms.csv -> <cloud>."""
    if path.name == "vms.csv":
        return path.parent.name
    if path.name.endswith("-vms.csv"):
        return path.name[: -len("-vms.csv")]
    raise PriceError(f"{path}: cannot tell the provider from the file name; pass --provider")


@dataclass
class SkyPilotCatalog:
    path: str  # a v7 vms.csv
    provider: str | None = None  # default: from the file name (see provider_from_path)
    effective_from: datetime | None = None  # default: the file's modification time
    skipped: int = field(default=0, init=False)  # rows without a price

    name = "skypilot"

    @property
    def location(self) -> str:
        return str(self.path)

    def fetch(self) -> list[PriceRow]:
        path = Path(self.path)
        fetched = file_fetched_at(path, "SkyPilot catalog file")
        provider = self.provider or provider_from_path(path)
        start = (self.effective_from or fetched).astimezone(timezone.utc)
        rows: list[PriceRow] = []
        self.skipped = 0
        _, table = read_csv(path.read_bytes(), str(path), COLUMNS, error=PriceError)
        for rec in table:
            itype, region = rec["InstanceType"].strip(), rec["Region"].strip()
            for column, mode in (("Price", "on_demand"), ("SpotPrice", "spot")):
                amount = rec.number(column)
                if amount is None:
                    self.skipped += column == "Price"
                    continue
                rows.append(PriceRow(provider, region, itype, mode, CURRENCY, amount, "hour", start,
                                     source=rec.where, fetched_at=fetched, where=rec.where))
        return rows
