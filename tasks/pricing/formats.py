"""Which format a price or FX file is in, told from its name and its header line, so no --format is needed.

    costgap prices import deploy/prices/examples/contract-example.yaml     # yaml, from the extension
    costgap fx import deploy/fx_rates.csv                                   # csv, from the header

`prices import` reads a price book (csv, yaml), a SkyPilot v7 vms.csv (skypilot) or costgap's FX CSV (fx);
`fx import` reads the ECB's history (ecb: its zip, or the CSV inside it) or costgap's FX CSV (csv). A file
whose header is neither, or that belongs to the other command, is refused with one line that names the
flag, the formats, and the command that reads it. Only the name and the first line are read here; the
reader of the chosen format then checks the whole file (tasks/readers.py).
"""

from __future__ import annotations

from pathlib import Path

from tasks.errors import UserError

PRICE_FORMATS = ("csv", "yaml", "skypilot", "fx")
FX_FORMATS = ("ecb", "csv")
PRICE_BOOK_HEADER = {"provider", "region", "instance_type", "billing_mode", "currency", "price"}
SKYPILOT_HEADER = {"InstanceType", "Price", "Region"}
FX_CSV_HEADER = {"currency", "rate_date", "units_per_usd"}
ECB_FIRST = "Date"  # eurofxref-hist.csv: Date,USD,JPY,...


def _header(path: Path) -> set[str]:
    """The first line's column names (a byte-order mark and spaces stripped); empty for an unreadable file."""
    try:
        with path.open(encoding="utf-8-sig", errors="replace") as fh:
            first = fh.readline()
    except OSError:
        return set()
    return {c.strip().strip('"') for c in first.split(",")} - {""}


def _kind(path: Path) -> str | None:
    """'price book', 'skypilot', 'fx csv', 'ecb' or 'yaml' from the name and header; None when it cannot tell."""
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return "yaml"
    if suffix == ".zip":
        return "ecb"
    head = _header(path)
    if PRICE_BOOK_HEADER <= head:
        return "price book"
    if SKYPILOT_HEADER <= head:
        return "skypilot"
    if FX_CSV_HEADER <= head:
        return "fx csv"
    if ECB_FIRST in head and "USD" in head:
        return "ecb"
    return None


def _missing(path: str) -> None:
    if not Path(path).is_file():
        raise UserError(f"{path}: no such file")


def price_format(path: str, given: str | None) -> str:
    """The --format of `prices import`: the one given, else told from the file."""
    if given is not None:
        if given not in PRICE_FORMATS:
            raise UserError(f"--format {given!r}: expected one of {', '.join(PRICE_FORMATS)}")
        return given
    _missing(path)
    kind = _kind(Path(path))
    if kind == "ecb":
        raise UserError(f"{path}: the ECB's reference rates, not prices: costgap fx import {path}")
    found = {"price book": "csv", "yaml": "yaml", "skypilot": "skypilot", "fx csv": "fx"}.get(kind)
    if found is None:
        raise UserError(f"{path}: cannot tell its format from the name and the header line; pass --format "
                        f"{'|'.join(PRICE_FORMATS)} (csv: a price book with {', '.join(sorted(PRICE_BOOK_HEADER))}; "
                        "skypilot: a SkyPilot vms.csv; fx: costgap's FX rates CSV)")
    return found


def fx_format(path: str, given: str | None) -> str:
    """The --format of `fx import`: the one given, else told from the file."""
    if given is not None:
        if given not in FX_FORMATS:
            raise UserError(f"--format {given!r}: expected one of {', '.join(FX_FORMATS)}")
        return given
    _missing(path)
    kind = _kind(Path(path))
    if kind in ("price book", "yaml", "skypilot"):
        raise UserError(f"{path}: a price file, not FX rates: costgap prices import {path}")
    found = {"ecb": "ecb", "fx csv": "csv"}.get(kind)
    if found is None:
        raise UserError(f"{path}: cannot tell its format from the name and the header line; pass --format "
                        f"{'|'.join(FX_FORMATS)} (ecb: eurofxref-hist.zip or its CSV; csv: costgap's FX rates "
                        f"with {', '.join(sorted(FX_CSV_HEADER))}, source)")
    return found
