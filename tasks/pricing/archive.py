"""Keep every price and FX import in the results store, so `costgap rebuild` can replay the price book.

    costgap prices import deploy/prices/lambda.csv --results results/   # archives the import
    costgap rebuild --from results/                                      # replays it (tasks/landing/rebuild.py)

Bundles are the source of truth for measurements; prices are not in bundles, so each import that
is not an identical repeat is written to <store>/_prices/<imported_at>-<import_id>.jsonl (a header line, then
one line per row); FX imports hold only the rates they added, gzipped (.jsonl.gz: the first ECB history
is ~130,000 rates). The suffix is never .json, so bundle landing never mistakes one for a bundle.
Replaying the files in name order through the same import logic rebuilds the same periods.
"""

from __future__ import annotations

import gzip
import json
import uuid
from datetime import date, datetime, timezone

import fsspec

from tasks.pricing.base import PriceError, PriceRow, utc

ARCHIVE_DIR = "_prices"  # inside the results store; not a target id (those cannot start with "_")
ARCHIVE_VERSION = 1  # bump when the line layout changes


def _fs(results_url: str):
    fs, root = fsspec.core.url_to_fs(str(results_url))
    return fs, f"{root.rstrip('/')}/{ARCHIVE_DIR}"


def _write(results_url: str, name: str, lines: list[dict]) -> str:
    fs, folder = _fs(results_url)
    fs.makedirs(folder, exist_ok=True)
    final, tmp = f"{folder}/{name}", f"{folder}/.{name}.{uuid.uuid4().hex}.part"
    text = "".join(json.dumps(line, sort_keys=True, default=str) + "\n" for line in lines)
    with fs.open(tmp, "wb") as fh:
        fh.write(gzip.compress(text.encode(), mtime=0) if name.endswith(".gz") else text.encode())
    fs.mv(tmp, final)
    return final


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")


def archive_prices(results_url: str, summary, rows: list[PriceRow], fetched_at: datetime) -> str | None:
    """Archive one landed import (not an identical repeat). Returns the file written."""
    if summary.repeat:
        return None
    head = {"kind": "prices", "version": ARCHIVE_VERSION, "import_id": summary.import_id,
            "source_kind": summary.source_kind, "source": summary.source, "fetched_at": fetched_at.isoformat()}
    body = [{"provider": r.provider, "region": r.region, "instance_type": r.instance_type,
             "billing_mode": r.billing_mode, "currency": r.currency, "original_amount": r.original_amount,
             "original_period": r.original_period, "effective_from": r.effective_from.isoformat(),
             "effective_to": r.effective_to.isoformat() if r.effective_to else None, "source": r.source,
             "fetched_at": r.fetched_at.isoformat()} for r in rows]
    return _write(results_url, f"{_stamp()}-{summary.import_id[:16]}.jsonl", [head, *body])


def archive_fx(results_url: str, rows: list[tuple], new: int) -> str | None:
    """Archive one FX file's validated rows (currency, rate_date, units_per_usd, source, where)."""
    if not new:
        return None
    head = {"kind": "fx", "version": ARCHIVE_VERSION}
    body = [{"currency": c, "rate_date": d.isoformat(), "units_per_usd": r, "source": s} for c, d, r, s, _ in rows]
    return _write(results_url, f"{_stamp()}-fx-{uuid.uuid4().hex[:8]}.jsonl.gz", [head, *body])


def replay_imports(con, results_url: str) -> str:
    """Re-land every archived price and FX import, oldest first. Returns a one-line summary."""
    from tasks.pricing import fx
    from tasks.pricing.book import import_rows

    fs, folder = _fs(results_url)
    if not fs.exists(folder):
        return "no archived price imports"
    names = sorted(p for p in fs.ls(folder, detail=False) if p.endswith((".jsonl", ".jsonl.gz")) and "/." not in p)
    prices = fxs = periods = 0
    for path in names:
        with fs.open(path, "rb") as fh:
            raw = fh.read()
        text = (gzip.decompress(raw) if path.endswith(".gz") else raw).decode("utf-8")
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        head, body = lines[0], lines[1:]
        if head.get("version") != ARCHIVE_VERSION:
            raise PriceError(f"{path}: archive version {head.get('version')!r}: expected {ARCHIVE_VERSION}")
        if head["kind"] == "fx":
            fx.insert_rates(con, [(b["currency"], date.fromisoformat(b["rate_date"]), b["units_per_usd"], b["source"],
                                   f"{path}:{i + 2}") for i, b in enumerate(body)])
            fxs += 1
            continue
        rows = [PriceRow(b["provider"], b["region"], b["instance_type"], b["billing_mode"], b["currency"],
                         b["original_amount"], b["original_period"], utc(b["effective_from"], where=path, field="x"),
                         source=b["source"], fetched_at=utc(b["fetched_at"], where=path, field="fetched_at"),
                         effective_to=utc(b["effective_to"], where=path, field="x") if b["effective_to"] else None,
                         where=f"{path}:{i + 2}") for i, b in enumerate(body)]
        s = import_rows(con, rows, source_kind=head["source_kind"], source=head["source"],
                        fetched_at=utc(head["fetched_at"], where=path, field="fetched_at"))
        prices, periods = prices + 1, periods + s.rows_new
    return f"{prices} price imports ({periods} periods), {fxs} FX files from {folder}"
