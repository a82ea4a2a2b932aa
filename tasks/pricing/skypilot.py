"""Source plug-in: a SkyPilot catalog file (v7 `vms.csv`), one on-demand (and spot) price per row.

    costgap prices import tests/fixtures/skypilot/aws-vms-excerpt.csv     # the cloud from the name: aws

Columns used: InstanceType, Price, SpotPrice, Region; a catalog with AvailabilityZone is priced per region
at its lowest zone (lowest_per_region). AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB and GpuInfo
are descriptive, and checked all the same (tasks/readers.py refuses the whole file
for a row longer or shorter than the header, a quote never closed, a number that is cut or malformed in
any column, or a last row without its line end). SkyPilot quotes USD per instance-hour. A row with an
empty Price is not offered there and is skipped (counted in `skipped`). The catalog is a snapshot: every
row takes effect at `effective_from` (default: the file's modification time, when it was fetched).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from tasks.pricing.base import PriceError, PriceRow, file_fetched_at
from tasks.readers import Column, read_csv

ZONE = "AvailabilityZone"  # AWS's and GCP's catalogs list a row per zone; Lambda's has no such column
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
    """catalogs/v7/<cloud>/vms.csv -> <cloud>; a file name holding one SkyPilot cloud as a word (aws-vms-excerpt.csv,
    newcomer-aws-vms.csv -> aws); else <name>-vms.csv -> <name>. Anything else asks for --provider."""
    from tasks.dispatch.skypilot import SKY_CLOUDS

    if path.name == "vms.csv":
        return path.parent.name
    words = set(re.split(r"[^a-z0-9]+", path.stem.lower()))
    clouds = sorted(words & set(SKY_CLOUDS))
    if len(clouds) == 1:
        return clouds[0]
    if path.name.endswith("-vms.csv") and not clouds:
        return path.name[: -len("-vms.csv")]
    raise PriceError(f"{path}: cannot tell the cloud from the file name ({' or '.join(clouds) or 'none named'}); "
                     f"pass --provider, e.g. --provider aws (SkyPilot's clouds: {', '.join(sorted(SKY_CLOUDS))})")


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
        header, table = read_csv(path.read_bytes(), str(path), COLUMNS, error=PriceError)
        for rec in table:
            itype, region = rec["InstanceType"].strip(), rec["Region"].strip()
            for column, mode in (("Price", "on_demand"), ("SpotPrice", "spot")):
                amount = rec.number(column)
                if amount is None:
                    self.skipped += column == "Price"
                    continue
                rows.append(PriceRow(provider, region, itype, mode, CURRENCY, amount, "hour", start,
                                     source=rec.where, fetched_at=fetched, where=rec.where))
        return lowest_per_region(rows) if ZONE in header else rows


def lowest_per_region(rows: list[PriceRow]) -> list[PriceRow]:
    """A catalog with one row per availability zone (AWS's) prices a (region, type, mode) once: its lowest
    zone's price, the zone SkyPilot's optimizer launches in first; the row keeps that zone's file:line."""
    best: dict[tuple, PriceRow] = {}
    for r in rows:
        key = (r.region, r.instance_type, r.billing_mode)
        if key not in best or r.original_amount < best[key].original_amount:
            best[key] = r
    return list(best.values())
