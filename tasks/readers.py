"""One reader discipline for every outside file costgap imports: checked to the byte before anything lands.

    .venv/bin/python -m pytest -q tests/test_readers.py tests/test_fuzz_importers.py

Price books (CSV, YAML), costgap's FX CSV, the ECB history (zip or CSV) and SkyPilot catalogs are read
here; recorded SDK answers and bundles are JSON, which `read_json` (and tasks/bundle.py) parse whole.
A file is refused, naming the file, the line, the field and the value, when:
- it does not end with a line end: the last row was cut (every file costgap ships or downloads ends
  with one; a file that ends inside a row cannot be told from a complete row otherwise);
- a quoted field is never closed, a quote stands inside an unquoted field, or text follows a closing
  quote (RFC 4180);
- a row has fewer or more fields than its header (the ECB's trailing comma on each line makes this
  a whole-row check there: a row cut anywhere loses it);
- a cell of a numeric column, used or not, is not a plain decimal (`-?digits[.digits]`: no exponent,
  no `inf`/`nan`, no letters) or breaks its column's sign rule; a date column is not YYYY-MM-DD;
- it is not UTF-8, or a zip's member fails its CRC.
Every importer reads the whole file first and lands afterwards, so a refusal leaves the warehouse and
the results store exactly as they were.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from datetime import date

from tasks.errors import UserError

NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")  # a plain decimal: what every shipped file writes
SHOWN = 60  # characters of a value quoted in an error


class ReadError(UserError):
    """An outside file that is malformed; the message names file, line, field and value."""


def _show(value: str) -> str:
    return repr(value if len(value) <= SHOWN else value[:SHOWN] + "...")


@dataclass(frozen=True)
class Column:
    """What a column's cells must be. Every column the header names is checked, used or not."""

    kind: str = "text"  # text | number | date | literal (a Python literal, e.g. SkyPilot's GpuInfo)
    sign: str = "any"  # number only: any | nonneg | positive
    blank: bool = True  # an empty cell is allowed (it means "none" to the importer)
    missing: tuple[str, ...] = ()  # markers that mean "no value", e.g. the ECB's "N/A"
    required: bool = False  # the header must have it
    what: str = ""  # what a cell is, for errors: "a rate", "a price" (default: from kind)

    def check(self, value: str) -> str | None:
        """Why `value` is not a cell of this column, or None when it is."""
        text = value.strip()
        if text == "" or text in self.missing:
            return None if self.blank or text in self.missing else f"empty: expected {self.what or 'a value'}"
        if self.kind == "number":
            what = self.what or "a number"
            if not NUMBER.fullmatch(text):
                alt = "".join(f" or {m}" for m in self.missing)
                return f"expected {what}{alt} (a plain decimal like 1.25)"
            x = float(text)
            if self.sign == "positive" and not x > 0:
                return f"expected {what.replace('a ', 'a positive ', 1) if what.startswith('a ') else what + ' > 0'}"
            if self.sign == "nonneg" and x < 0:
                return f"expected {what} >= 0"
        elif self.kind == "date":
            try:
                date.fromisoformat(text)
            except ValueError:
                return "expected a date YYYY-MM-DD"
        elif self.kind == "literal":
            import ast

            try:
                ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return "expected a well-formed literal like {'Gpus': [...]}"
        return None


@dataclass(frozen=True)
class Row:
    """One data row: the line it starts on and its cells by header name."""

    origin: str
    line: int
    cells: dict[str, str]

    @property
    def where(self) -> str:
        return f"{self.origin}:{self.line}"

    def __getitem__(self, name: str) -> str:
        return self.cells[name]

    def get(self, name: str, default: str = "") -> str:
        return self.cells.get(name, default)

    def number(self, name: str) -> float | None:
        """A numeric cell (already checked by its Column) as a float; None when empty or a missing marker."""
        text = self.cells.get(name, "").strip()
        return float(text) if NUMBER.fullmatch(text) else None


def decode(data: bytes, origin: str, error: type[UserError] = ReadError) -> str:
    """UTF-8 text (a BOM dropped), not empty, without NUL bytes; refused otherwise (read_csv and
    require_line_end check that it ends with a line end)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise error(f"{origin}: byte {e.start}: {data[e.start:e.start + 8]!r}: not UTF-8 text") from None
    if not text.strip():
        raise error(f"{origin}: empty file")
    if "\x00" in text:
        raise error(f"{origin}: line {text.count(chr(10), 0, text.index(chr(0))) + 1}: a NUL byte: not a text file")
    return text


def _records(text: str, origin: str, error) -> list[tuple[int, list[str]]]:
    """(start line, fields) of every record, by the csv module in strict mode (RFC 4180 quoting)."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    out: list[tuple[int, list[str]]] = []
    prev = 0
    try:
        for rec in reader:
            out.append((prev + 1, rec))
            prev = reader.line_num
    except csv.Error as e:
        rest = "".join(text.splitlines(keepends=True)[prev:])
        fields = next(csv.reader(io.StringIO(rest + '"\n', newline="")), [""])
        head = out[0][1] if out else []
        name = head[len(fields) - 1].strip() if prev and len(fields) <= len(head) else f"#{len(fields)}"
        why = ("a quoted field is never closed: the file ends inside it" if "end of data" in str(e)
               else f"malformed quoting ({e})")
        raise error(f"{origin}:{prev + 1}: field '{name}' = {_show(fields[-1])}: {why}") from None
    return out


def read_csv(data: bytes | str, origin: str, columns: dict[str, Column], *, error: type[UserError] = ReadError,
             extra: Column = Column(), trailing_empty: bool = False) -> tuple[list[str], list[Row]]:
    """The header and the data rows of a CSV file, every row and every declared column checked.

    `columns` types the columns by name (others in the header are checked as `extra`); `trailing_empty`:
    the header and every row end with an empty field (the ECB's trailing comma). Blank lines are skipped.
    Raises `error` naming file, line, field and value at the first fault."""
    text = data if isinstance(data, str) else decode(data, origin, error)
    records = _records(text, origin, error)
    if not records:
        raise error(f"{origin}: empty file")
    header = [h.strip() for h in records[0][1]]
    for i, name in enumerate(header):
        if name == "" and not (trailing_empty and i == len(header) - 1):
            raise error(f"{origin}:1: column {i + 1} of the header has no name")
        if name and header.index(name) != i:
            raise error(f"{origin}:1: column '{name}' appears twice in the header")
    if trailing_empty and header[-1] != "":
        raise error(f"{origin}:1: the header does not end with a comma: not the expected format")
    absent = [n for n, c in columns.items() if c.required and n not in header]
    if absent:
        raise error(f"{origin}:1: column '{absent[0]}' is missing from the header; expected at least "
                    f"{', '.join(n for n, c in columns.items() if c.required)}")
    if not text.endswith(("\n", "\r")):
        line, rec = records[-1]
        name = header[len(rec) - 1] if len(rec) <= len(header) else f"#{len(rec)}"
        raise error(f"{origin}:{line}: field '{name or '#' + str(len(rec))}' = {_show(rec[-1])}: the file ends "
                    f"inside this row (no line end after it): cut short? nothing landed")
    rows: list[Row] = []
    kinds = [(i, n, columns.get(n, extra)) for i, n in enumerate(header) if n]
    for line, rec in records[1:]:
        if len(rec) <= 1 and not "".join(rec).strip():
            continue  # a blank line
        if len(rec) != len(header):
            i = min(len(rec), len(header)) - 1
            name = header[i] or f"#{i + 1}"
            raise error(f"{origin}:{line}: {len(rec)} fields, the header has {len(header)}: field '{name}' = "
                        f"{_show(rec[i])} is the {'last one present' if len(rec) < len(header) else 'last one the header names'}"
                        f"{'' if not trailing_empty else ' (every line ends with a comma)'}: a cut or malformed row")
        if trailing_empty and rec[-1] != "":
            raise error(f"{origin}:{line}: field #{len(rec)} = {_show(rec[-1])}: expected the empty field after "
                        f"the trailing comma")
        for i, name, col in kinds:
            why = col.check(rec[i])
            if why:
                raise error(f"{origin}:{line}: field '{name}' = {_show(rec[i])}: {why}")
            if '"' in rec[i] and _unquoted_quote(text, rec[i]):
                raise error(f"{origin}:{line}: field '{name}' = {_show(rec[i])}: a quote inside an unquoted field "
                            f"(quote the field and double the quote)")
        rows.append(Row(origin, line, {n: rec[i] for i, n, _ in kinds}))
    return header, rows


def _unquoted_quote(text: str, cell: str) -> bool:
    """Whether a cell holding a quote was written unquoted (the csv module keeps such a quote as text)."""
    return '"' + cell.replace('"', '""') + '"' not in text


def require_line_end(text: str, origin: str, error: type[UserError] = ReadError) -> None:
    """Refuse a text file whose last line has no line end: it was cut inside that line."""
    if not text.endswith(("\n", "\r")):
        last = text.splitlines()[-1] if text.splitlines() else ""
        raise error(f"{origin}:{len(text.splitlines())}: {_show(last[-SHOWN:])}: the file ends inside this line "
                    f"(no line end after it): cut short? nothing landed")


def read_json(data: bytes, origin: str, error: type[UserError] = ReadError):
    """A whole JSON document (recorded answers): UTF-8, valid to the last byte, no NaN/Infinity."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise error(f"{origin}: byte {e.start}: not UTF-8 text") from None

    def constant(name: str):
        raise ValueError(f"{name} is not a number JSON allows")

    try:
        return json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as e:
        raise error(f"{origin}:{e.lineno}: column {e.colno}: {_show(text[e.pos:e.pos + 20])}: not valid JSON "
                    f"({e.msg}): cut short or malformed") from None
    except ValueError as e:
        raise error(f"{origin}: {e}") from None
