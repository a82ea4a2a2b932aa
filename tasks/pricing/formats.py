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
KINDS = {"price book": "a price book", "yaml": "a price book in YAML", "skypilot": "a SkyPilot catalog",
         "fx csv": "costgap's FX rates CSV", "ecb": "the ECB's reference rates"}


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


def _told(path: str, given: str | None, formats: tuple[str, ...], mine: dict[str, str], other: str,
          what: str) -> str:
    """The format given (checked against `formats`), else the one `mine` maps the file's kind to. A kind that
    `mine` lacks but the other command reads names that command; none at all names the flag and the formats."""
    if given is not None:
        if given not in formats:
            raise UserError(f"--format {given!r}: expected one of {', '.join(formats)}")
        return given
    if not Path(path).is_file():
        raise UserError(f"{path}: no such file")
    kind = _kind(Path(path))
    if kind in mine:
        return mine[kind]
    if kind is not None:
        raise UserError(f"{path}: {KINDS[kind]}, not what this command reads: {other} {path}")
    raise UserError(f"{path}: cannot tell its format from the name and the header line; pass --format "
                    f"{'|'.join(formats)} ({what})")


def price_format(path: str, given: str | None) -> str:
    """The --format of `prices import`: the one given, else told from the file."""
    return _told(path, given, PRICE_FORMATS, {"price book": "csv", "yaml": "yaml", "skypilot": "skypilot",
                                               "fx csv": "fx"}, "costgap fx import",
                 f"csv: a price book with {', '.join(sorted(PRICE_BOOK_HEADER))}; yaml: the same as YAML; "
                 "skypilot: a SkyPilot vms.csv; fx: costgap's FX rates CSV")


def fx_format(path: str, given: str | None) -> str:
    """The --format of `fx import`: the one given, else told from the file."""
    return _told(path, given, FX_FORMATS, {"ecb": "ecb", "fx csv": "csv"}, "costgap prices import",
                 f"ecb: eurofxref-hist.zip or its CSV; csv: costgap's FX rates with "
                 f"{', '.join(sorted(FX_CSV_HEADER))}, source")
