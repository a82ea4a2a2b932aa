"""Helpers for tests/test_fuzz_importers.py: damage a file (cut, one cell mutated) and read it plainly.

    .venv/bin/python -m pytest -q tests/test_fuzz_importers.py

The reference readers here use only the csv/yaml modules and float(), independently of tasks/readers.py:
where an importer accepts a damaged file, what it read must equal what these read from the same bytes.
"""

from __future__ import annotations

import csv
import io
import random
from datetime import date

import yaml

from tasks.pricing.base import CURRENCIES, DEFAULT_PERIOD

LETTERS = "xeZ"  # a letter added to a cell: an exponent-like 'e' and two plain ones


def line_end_offsets(data: bytes) -> set[int]:
    """Offsets k where data[:k] ends right after a line end."""
    return {i + 1 for i, b in enumerate(data) if b in (10, 13)}


def cut_offsets(data: bytes, rng: random.Random, n: int, skip_header: bool = True) -> list[int]:
    """n distinct cut points inside the file (after the header line), plus every line end among them."""
    start = data.index(b"\n") + 1 if skip_header and b"\n" in data else 1
    span = range(start, len(data))
    picked = set(rng.sample(span, min(n, len(span))))
    ends = sorted(line_end_offsets(data) & set(span))
    picked |= set(rng.sample(ends, min(len(ends), max(3, n // 10))))
    return sorted(picked)


def field_spans(line: str) -> list[tuple[int, int]]:
    """(start, end) of each field of one CSV line (quotes included), RFC 4180 quoting."""
    spans, start, quoted = [], 0, False
    for i, ch in enumerate(line):
        if ch == '"':
            quoted = not quoted
        elif ch == "," and not quoted:
            spans.append((start, i))
            start = i + 1
    spans.append((start, len(line.rstrip("\r\n"))))
    return spans


def mutate_cell(cell: str, kind: str, rng: random.Random) -> str | None:
    """One cell damaged one way; None where that damage does not apply to this cell."""
    q = cell.startswith('"') and cell.endswith('"') and len(cell) >= 2
    body = cell[1:-1] if q else cell
    wrap = (lambda s: f'"{s}"') if q else (lambda s: s)
    if kind == "drop_digit":
        digits = [i for i, ch in enumerate(body) if ch.isdigit()]
        if not digits:
            return None
        i = rng.choice(digits)
        return wrap(body[:i] + body[i + 1:])
    if kind == "add_letter":
        i = rng.randrange(len(body) + 1)
        return wrap(body[:i] + rng.choice(LETTERS) + body[i:])
    if kind == "flip_sign":
        return wrap(body[1:] if body.startswith("-") else "-" + body)
    if kind == "open_quote":
        return '"' + cell
    raise ValueError(kind)


KINDS = ("drop_digit", "add_letter", "flip_sign", "open_quote")


def mutate_csv(data: bytes, rng: random.Random, skip_lines: int = 1) -> tuple[bytes, int, int, str, str]:
    """The file with one cell of one data row damaged: (bytes, line number, field index, kind, new cell)."""
    lines = data.decode().splitlines(keepends=True)
    while True:
        n = rng.randrange(skip_lines, len(lines))
        spans = field_spans(lines[n])
        j = rng.randrange(len(spans))
        a, b = spans[j]
        kind = rng.choice(KINDS)
        new = mutate_cell(lines[n][a:b], kind, rng)
        if new is None or (kind == "flip_sign" and lines[n][a:b] in ("", '""')):
            continue
        lines[n] = lines[n][:a] + new + lines[n][b:]
        return "".join(lines).encode(), n + 1, j, kind, new


# Reference readers: what a plain reading of the same bytes says the file holds (or ValueError).

def _csv(data: bytes) -> list[list[str]]:
    text = data.decode("utf-8-sig")
    return [r for r in csv.reader(io.StringIO(text, newline=""), strict=True) if any(c.strip() for c in r)]


def ref_fx(data: bytes) -> list[tuple]:
    rows = _csv(data)
    head = rows[0]
    out = []
    for r in rows[1:]:
        d = dict(zip(head, r, strict=True))
        out.append((d["currency"].strip().upper(), date.fromisoformat(d["rate_date"].strip()),
                    float(d["units_per_usd"]), d["source"].strip()))
    return out


def ref_ecb(data: bytes) -> list[tuple]:
    rows = _csv(data)
    head = [h.strip() for h in rows[0]]
    out = []
    for r in rows[1:]:
        d = dict(zip(head, r, strict=True))
        if d["USD"] == "N/A":
            continue
        usd = float(d["USD"])
        day = date.fromisoformat(d["Date"])
        out.append(("EUR", day, 1.0 / usd))
        for c in head[1:]:
            if c and c != "USD" and c in CURRENCIES and d[c] != "N/A":
                out.append((c, day, float(d[c]) / usd))
    return out


def _price_key(d: dict) -> tuple:
    mode = str(d["billing_mode"]).strip()
    return (str(d["provider"]).strip(), str(d["region"]).strip(), str(d["instance_type"]).strip(), mode,
            str(d["currency"]).strip().upper(), float(d["price"]),
            str(d.get("period") or DEFAULT_PERIOD.get(mode, "hour")).strip(),
            date.fromisoformat(str(d["effective_from"]).strip()[:10]), str(d["source"]).strip())


def ref_price_csv(data: bytes) -> list[tuple]:
    rows = _csv(data)
    return [_price_key(dict(zip(rows[0], r, strict=True))) for r in rows[1:]]


def ref_price_yaml(data: bytes) -> list[tuple]:
    doc = yaml.safe_load(data.decode())
    defaults = {k: v for k, v in doc.items() if k != "rows"}
    return [_price_key({**defaults, **r}) for r in doc["rows"]]


def ref_skypilot(data: bytes) -> list[tuple]:
    rows = _csv(data)
    out = []
    for r in rows[1:]:
        d = dict(zip(rows[0], r, strict=True))
        for col, mode in (("Price", "on_demand"), ("SpotPrice", "spot")):
            if d.get(col, "").strip():
                out.append((d["InstanceType"].strip(), d["Region"].strip(), mode, float(d[col])))
    return out
