"""Source plug-in: a CSV or YAML price book of contracted or list prices, one dated price per row.

    costgap prices import deploy/prices/example.csv --format csv

CSV columns (header required): provider, region, instance_type, billing_mode, currency, price, source,
effective_from, and optionally period (hour | month | year; default from billing_mode), effective_to,
fetched_at (default: the file's modification time). YAML: a mapping with `rows:` (a list of mappings
with the same keys) and optional top-level defaults for any key (e.g. `source:`, `provider:`).
Every row must say where its figure came from (`source`) and from when (`effective_from`).
An error names the file, the line (CSV) or row number (YAML), the field and the value.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import yaml

from tasks.pricing.base import DEFAULT_PERIOD, PriceError, PriceRow, file_fetched_at, utc

REQUIRED = ("provider", "region", "instance_type", "billing_mode", "currency", "price", "source", "effective_from")


def row_from_mapping(rec: dict, *, where: str, fetched_default: datetime) -> PriceRow:
    """Build one PriceRow from a flat mapping; errors start with `where` (file:line)."""
    missing = [k for k in REQUIRED if rec.get(k) in (None, "")]
    if missing:
        raise PriceError(f"{where}: field '{missing[0]}' is missing: every row needs {', '.join(REQUIRED)}")
    raw_price = rec["price"]
    try:
        amount = float(raw_price)
    except (TypeError, ValueError):
        raise PriceError(f"{where}: field 'price' = {raw_price!r}: expected a number") from None
    mode = str(rec["billing_mode"]).strip()
    return PriceRow(
        provider=str(rec["provider"]).strip(), region=str(rec["region"]).strip(),
        instance_type=str(rec["instance_type"]).strip(), billing_mode=mode,
        currency=str(rec["currency"]).strip().upper(), original_amount=amount,
        original_period=str(rec.get("period") or DEFAULT_PERIOD.get(mode, "hour")).strip(),
        effective_from=utc(str(rec["effective_from"]), where=where, field="effective_from"),
        effective_to=(utc(str(rec["effective_to"]), where=where, field="effective_to")
                      if rec.get("effective_to") not in (None, "") else None),
        source=str(rec["source"]).strip(),
        fetched_at=(utc(str(rec["fetched_at"]), where=where, field="fetched_at")
                    if rec.get("fetched_at") not in (None, "") else fetched_default),
        where=where,
    )


@dataclass
class PriceBookFile:
    """A CSV (`fmt='csv'`) or YAML (`fmt='yaml'`) price book."""

    path: str  # the file to read
    fmt: str = "csv"  # csv | yaml

    @property
    def name(self) -> str:
        return self.fmt

    @property
    def location(self) -> str:
        return str(self.path)

    def fetch(self) -> list[PriceRow]:
        path = Path(self.path)
        fetched = file_fetched_at(path, "price file")
        if self.fmt == "yaml":
            return self._yaml(path, fetched)
        if self.fmt != "csv":
            raise PriceError(f"{path}: format {self.fmt!r}: expected csv or yaml")
        rows: list[PriceRow] = []
        with path.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            absent = [c for c in REQUIRED if c not in header]
            if absent:
                raise PriceError(f"{path}:1: column '{absent[0]}' is missing from the header; "
                                 f"expected at least {', '.join(REQUIRED)}")
            for rec in reader:
                if not any((v or "").strip() for v in rec.values() if isinstance(v, str)):
                    continue
                rows.append(row_from_mapping(rec, where=f"{path}:{reader.line_num}", fetched_default=fetched))
        return rows

    def _yaml(self, path: Path, fetched: datetime) -> list[PriceRow]:
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as e:
            raise PriceError(f"{path}: not valid YAML: {e}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
            raise PriceError(f"{path}: field 'rows' is missing: expected a mapping with a list under 'rows'")
        defaults = {k: v for k, v in doc.items() if k != "rows"}
        out = []
        for i, rec in enumerate(doc["rows"], start=1):
            if not isinstance(rec, dict):
                raise PriceError(f"{path}: row {i}: expected a mapping, got {rec!r}")
            out.append(row_from_mapping({**defaults, **rec}, where=f"{path}: row {i}", fetched_default=fetched))
        return out
