"""Source plug-in: a CSV or YAML price book of contracted or list prices, one dated price per row.

    costgap prices import deploy/prices/example.csv --format csv

CSV columns (header required): provider, region, instance_type, billing_mode, currency, price, source,
effective_from, and optionally period (hour | month | year; default from billing_mode), effective_to,
fetched_at (default: the file's modification time). YAML: a mapping with `rows:` (a list of mappings
with the same keys) and optional top-level defaults for any key (e.g. `source:`, `provider:`).
Every row must say where its figure came from (`source`) and from when (`effective_from`).
The whole file is checked before a row is built (tasks/readers.py): a CSV row as long as its header, a
price that is a plain decimal, a line end after the last row (a cut file is refused, not half-read).
An error names the file, the line, the field and the value.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import yaml

from tasks.pricing.base import DEFAULT_PERIOD, PriceError, PriceRow, file_fetched_at, utc
from tasks.readers import NUMBER, Column, decode, read_csv, require_line_end

REQUIRED = ("provider", "region", "instance_type", "billing_mode", "currency", "price", "source", "effective_from")
COLUMNS = {  # a CSV price book's columns; required ones must be in the header (a cell may still be empty)
    **{name: Column(required=True) for name in REQUIRED},
    "price": Column("number", sign="positive", required=True, what="a price"),
}


def row_from_mapping(rec: dict, *, where: str, fetched_default: datetime) -> PriceRow:
    """Build one PriceRow from a flat mapping; errors start with `where` (file:line)."""
    missing = [k for k in REQUIRED if rec.get(k) in (None, "")]
    if missing:
        raise PriceError(f"{where}: field '{missing[0]}' is missing: every row needs {', '.join(REQUIRED)}")
    raw_price = rec["price"]
    if isinstance(raw_price, str) and not NUMBER.fullmatch(raw_price.strip()):
        raise PriceError(f"{where}: field 'price' = {raw_price!r}: expected a price (a plain decimal like 1.25)")
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
        _, table = read_csv(path.read_bytes(), str(path), COLUMNS, error=PriceError)
        return [row_from_mapping(rec.cells, where=rec.where, fetched_default=fetched) for rec in table
                if any(v.strip() for v in rec.cells.values())]

    def _yaml(self, path: Path, fetched: datetime) -> list[PriceRow]:
        text = decode(path.read_bytes(), str(path), PriceError)
        require_line_end(text, str(path), PriceError)
        try:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
            doc = yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            at = f":{mark.line + 1}" if mark is not None else ""
            raise PriceError(f"{path}{at}: not valid YAML ({getattr(e, 'problem', None) or e}): cut short or "
                             f"malformed") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
            raise PriceError(f"{path}: field 'rows' is missing: expected a mapping with a list under 'rows'")
        lines = next((v.value for k, v in node.value if k.value == "rows"), [])
        defaults = {k: v for k, v in doc.items() if k != "rows"}
        out = []
        for i, rec in enumerate(doc["rows"], start=1):
            where = f"{path}:{lines[i - 1].start_mark.line + 1}: row {i}" if i <= len(lines) else f"{path}: row {i}"
            if not isinstance(rec, dict):
                raise PriceError(f"{where}: expected a mapping, got {rec!r}")
            out.append(row_from_mapping({**defaults, **rec}, where=where, fetched_default=fetched))
        return out
