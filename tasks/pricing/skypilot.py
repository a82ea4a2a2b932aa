"""Source plug-in: a SkyPilot catalog file (v7 `vms.csv`), one on-demand (and spot) price per row.

    costgap prices import tests/fixtures/skypilot/lambda-vms.csv --format skypilot --provider lambda

Columns used: InstanceType, Price, SpotPrice, Region (AcceleratorName, AcceleratorCount, vCPUs,
MemoryGiB and GpuInfo are descriptive). SkyPilot quotes USD per instance-hour. A row with an empty
Price is not offered there and is skipped (counted in `skipped`); a Price that is not a positive number
fails naming the file and line. The catalog is a snapshot: every row takes effect at `effective_from`
(default: the file's modification time, which is when the catalog was fetched).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from tasks.pricing.base import PriceError, PriceRow, file_fetched_at

REQUIRED = ("InstanceType", "Price", "Region")  # the v7 columns a price cannot do without
CURRENCY = "USD"  # SkyPilot catalogs quote USD (skypilot-catalog README, v7, 2026-12)


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
        with path.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            absent = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
            if absent:
                raise PriceError(f"{path}:1: column '{absent[0]}' is missing: not a SkyPilot v7 vms.csv")
            for rec in reader:
                where = f"{path}:{reader.line_num}"
                if None in rec:
                    raise PriceError(f"{where}: {len(rec) + len(rec[None]) - 1} fields, header has "
                                     f"{len(reader.fieldnames)}: malformed row")
                if any(rec.get(c) is None for c in REQUIRED):
                    raise PriceError(f"{where}: row has fewer fields than the header: malformed row")
                itype, region = rec["InstanceType"].strip(), rec["Region"].strip()
                if not itype or not region:
                    raise PriceError(f"{where}: field '{'InstanceType' if not itype else 'Region'}' is empty")
                for column, mode in (("Price", "on_demand"), ("SpotPrice", "spot")):
                    text = (rec.get(column) or "").strip()
                    if not text:
                        self.skipped += column == "Price"
                        continue
                    try:
                        amount = float(text)
                    except ValueError:
                        raise PriceError(f"{where}: field '{column}' = {text!r}: expected a number") from None
                    if not amount > 0:
                        raise PriceError(f"{where}: field '{column}' = {text!r}: expected a positive price")
                    rows.append(PriceRow(provider, region, itype, mode, CURRENCY, amount, "hour", start,
                                         source=where, fetched_at=fetched, where=where))
        return rows
