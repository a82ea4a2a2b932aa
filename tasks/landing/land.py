"""Land bundle files into the warehouse: validated, idempotent, atomic per batch.

    costgap ingest results/ --warehouse costgap.duckdb

Files (any fsspec URL; directories are searched recursively for *.json) are read in batches.
Each batch is parsed (tasks.bundle: a file that is not a valid bundle is *rejected*), checked
against the warehouse (a bundle already landed is a *duplicate* and adds nothing), validated by
Great Expectations (tasks.landing.validate: a bundle failing any expectation is *quarantined* with its
failures and raw text, never landed) and then written in ONE transaction: runs, environments,
targets, attempts, measurements, finetunes, telemetry, validation_results, quarantine and a
land_batches row. A crash anywhere before COMMIT leaves the warehouse at its previous state;
re-running lands the rest. Rejected files are recorded in `quarantine` too (kind 'rejected',
bundle_id = sha256 of the raw bytes; for a file over the size limit, of its first 64 KiB and
size) so the audit trail shows everything that was refused; they never reach a fact table.
A refused file's quarantine row (and so its alert) names the target whose inbox or results it came from
when the caller knows it (`target=`, the compare flow's dispatch), else the target the file itself names
(a JSON object with a well-formed `target`), else none.

Crash-test hook: COSTGAP_CRASH_AT=<point>[:<n>] SIGKILLs this process the n-th time it reaches
<point>, one of CRASH_POINTS. It exists for tests/test_crash.py and is inert when unset.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Iterator
from urllib.parse import urlsplit, urlunsplit

import duckdb
import fsspec

from tasks.bundle import FUTURE_SKEW, ID_PATTERN, MAX_BUNDLE_BYTES, BundleError, parse_bundle
from tasks.landing.attempts import record_prefect_attempts, upsert_target_stub  # noqa: F401 (interface)
from tasks.landing.frames import FrameBatch, check_ranges
from tasks.landing.validate import describe, validate_frames
from warehouse.sql import load_query

BATCH_SIZE = 500  # bundles per transaction: big enough to amortise GX and inserts, small enough
#                   that another writer waits at most ~seconds between batches
RAW_MAX_CHARS = 1_000_000  # raw text kept in quarantine; longer is truncated with a marker
CRASH_POINTS = ("parsed", "validated", "in_transaction", "before_commit", "committed")
FACT_TABLES = ("environments", "targets", "runs", "attempts", "measurements", "finetunes", "telemetry")
_crash_hits: Counter = Counter()


@dataclass
class LandSummary:
    """What a landing did. `ok` is False when anything was quarantined or rejected."""

    landed: list[str] = field(default_factory=list)  # run_ids
    duplicates: list[str] = field(default_factory=list)  # bundle_ids already in the warehouse
    quarantined: list[tuple[str, str, str]] = field(default_factory=list)  # (file, bundle_id, why)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (file, why)

    @property
    def ok(self) -> bool:
        return not self.quarantined and not self.rejected

    def merge(self, other: "LandSummary") -> "LandSummary":
        for name in ("landed", "duplicates", "quarantined", "rejected"):
            getattr(self, name).extend(getattr(other, name))
        return self

    def as_text(self) -> str:
        lines = [f"landed {len(self.landed)}, duplicates {len(self.duplicates)}, "
                 f"quarantined {len(self.quarantined)}, rejected {len(self.rejected)}"]
        lines += [f"  quarantined {f} (bundle {b[:12]}): {why}" for f, b, why in self.quarantined]
        lines += [f"  rejected {f}: {why}" for f, why in self.rejected]
        return "\n".join(lines)


def _crash(point: str) -> None:
    spec = os.environ.get("COSTGAP_CRASH_AT", "")
    if not spec:
        return
    name, _, nth = spec.partition(":")
    if name != point:
        return
    _crash_hits[point] += 1
    if _crash_hits[point] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)


def safe_uri(url: str) -> str:
    """The URL as it may be shown or stored: no user:password@ and no query (SAS tokens,
    signatures). Credentials come from the environment or Prefect Secret blocks, never a URL
    that lands in the warehouse, a log or the report."""
    if "://" not in url:
        return url
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def expand(paths: Iterable[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """(bundle files in sorted order, [(path, why)] for paths that do not exist)."""
    files, missing = [], []
    for p in paths:
        fs, root = fsspec.core.url_to_fs(str(p))
        local = "://" not in str(p)
        if fs.isdir(root):
            found = sorted(f for f in fs.find(root)
                           if f.endswith(".json") and not f.rsplit("/", 1)[-1].startswith("."))
            files += found if local else [fs.unstrip_protocol(f) for f in found]
        elif fs.exists(root):
            files.append(str(p))
        else:
            missing.append((safe_uri(str(p)), "no such file or directory"))
    return files, missing


def _read(url: str) -> bytes:
    fs, path = fsspec.core.url_to_fs(url)
    size = fs.size(path)
    if size is not None and size > MAX_BUNDLE_BYTES:
        with fs.open(path, "rb") as fh:
            head = fh.read(65536)
        digest = hashlib.sha256(head + str(size).encode()).hexdigest()
        raise _Oversize(digest, BundleError(safe_uri(url), "<file>", f"{size} bytes",
                                            f"larger than the {MAX_BUNDLE_BYTES}-byte limit; not parsed"))
    return fs.cat_file(path)


class _Oversize(Exception):
    def __init__(self, digest: str, error: BundleError):
        self.digest, self.error = digest, error


def _reason(e: BundleError) -> str:
    shown = repr(e.value)
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    return f"field '{e.field}' = {shown}: {e.reason}"


@dataclass
class Prepared:
    """A batch parsed and validated, not yet written (no warehouse access needed so far)."""

    frames: dict[str, Any]
    outcome: Any  # tasks.landing.validate.Outcome or None when nothing parsed
    batch: FrameBatch
    targets: dict[str, str]  # run_id -> target
    rejected: list[dict[str, Any]]  # quarantine rows of kind 'rejected'
    in_batch_duplicates: list[str]
    started_at: datetime
    files: int
    source_target: str | None = None  # the target whose inbox or results the files came from, when known


def named_target(raw: bytes | str) -> str | None:
    """The target a refused file names: its `target`, when it is a JSON object with a well-formed id."""
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    t = doc.get("target") if isinstance(doc, dict) else None
    return t if isinstance(t, str) and re.fullmatch(ID_PATTERN, t) else None


def prepare(files: list[str], *, now: datetime | None = None, target: str | None = None) -> Prepared:
    """Parse and validate one batch of files. Pure apart from reading the files. `target`: the target
    whose inbox or results the files came from, when known (what a refused file is told under)."""
    now = now or datetime.now(timezone.utc)
    batch = FrameBatch(landed_at=now, skew=FUTURE_SKEW)
    rejected, seen, dupes, targets = [], set(), [], {}
    for url in files:
        shown = safe_uri(url)
        try:
            raw = _read(url)
            bundle = parse_bundle(raw, file=shown, now=now)
            check_ranges(bundle, shown)
        except _Oversize as o:
            rejected.append(_reject_row(shown, o.digest, o.error, "", now, target))
            continue
        except BundleError as e:
            rejected.append(_reject_row(shown, hashlib.sha256(raw).hexdigest(), e, raw, now,
                                        target or named_target(raw)))
            continue
        except OSError as e:
            err = BundleError(shown, "<file>", shown, f"cannot be read ({e.strerror or type(e).__name__})")
            rejected.append(_reject_row(shown, hashlib.sha256(shown.encode()).hexdigest(), err, "", now, target))
            continue
        if bundle.bundle_id in seen:
            dupes.append(bundle.bundle_id)
            continue
        seen.add(bundle.bundle_id)
        targets[bundle.bundle_id] = bundle.target
        batch.add(bundle, shown, raw.decode("utf-8"))
    _crash("parsed")
    frames = batch.frames()
    outcome = validate_frames(frames, now=now) if seen else None
    _crash("validated")
    return Prepared(frames, outcome, batch, targets, rejected, dupes, now, len(files), target)


def _reject_row(url: str, digest: str, e: BundleError, raw: bytes | str, now: datetime,
                target: str | None) -> dict:
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    return {"bundle_id": digest, "source_uri": url, "target": target, "reason": _reason(e),
            "failed": json.dumps({"field": e.field, "value": repr(e.value)[:500], "reason": e.reason}),
            "raw": _truncate(text), "quarantined_at": now, "kind": "rejected", "field": e.field,
            "file": url}


def _truncate(text: str) -> str:
    if len(text) <= RAW_MAX_CHARS:
        return text
    return text[:RAW_MAX_CHARS] + f"\n...[truncated: {len(text)} characters in all]"


def commit(con: duckdb.DuckDBPyConnection, p: Prepared, *, source: str = "cli") -> LandSummary:
    """Write a prepared batch in one transaction: nothing of it lands unless all of it does."""
    s = LandSummary(duplicates=list(p.in_batch_duplicates))
    s.rejected = [(r["file"], r["reason"]) for r in p.rejected]
    ids = list(p.targets)
    known = {row[0]: (row[1], row[2]) for row in
             con.execute(load_query("land_known_ids"), [ids]).fetchall()} if ids else {}
    failed = p.outcome.failed if p.outcome else {}
    fresh, quarantine_rows = [], []
    for rid in ids:
        file = p.batch.file[rid]
        if rid in known:
            state, why = known[rid]
            if state == "landed":
                s.duplicates.append(rid)
            else:  # quarantined before: still not landed, say so again, add nothing
                s.quarantined.append((file, rid, f"already quarantined: {why}"))
        elif rid in failed:
            why = describe(failed[rid])
            s.quarantined.append((file, rid, why))
            first = failed[rid][0]
            quarantine_rows.append({
                "bundle_id": rid, "source_uri": file, "target": p.source_target or p.targets[rid], "reason": why,
                "failed": json.dumps(failed[rid], default=str), "raw": _truncate(p.batch.raw[rid]),
                "quarantined_at": p.started_at, "kind": "quarantined",
                "field": f"{first['suite'].removeprefix('costgap.')}.{first['column']}"})
        else:
            fresh.append(rid)
    s.landed = fresh
    _write(con, p, fresh, [r for r in quarantine_rows] + p.rejected, s, source)
    return s


def _write(con, p: Prepared, fresh: list[str], quarantine_rows: list[dict], s: LandSummary,
           source: str) -> None:
    import pandas as pd

    batch_id = p.outcome.validation_id if p.outcome else str(uuid.uuid4())
    new_ids = set(fresh) | {r["bundle_id"] for r in quarantine_rows if r["kind"] == "quarantined"}
    registered = []

    def register(name: str, df) -> None:
        con.register(name, df)
        registered.append(name)

    con.execute("begin transaction")
    try:
        _crash("in_transaction")
        if fresh:
            keep = set(fresh)
            for table in FACT_TABLES:
                df = p.frames.get(table)
                if df is None or not len(df):
                    continue
                register(f"batch_{table}", df[df["run_id"].isin(keep)])
                con.execute(load_query(f"land_insert_{table}"))
        if p.outcome is not None and new_ids:
            rows = p.outcome.rows
            register("batch_validation", rows[rows["run_id"].isna() | rows["run_id"].isin(new_ids)])
            con.execute(load_query("land_insert_validation"))
        if quarantine_rows:
            qdf = pd.DataFrame([{k: v for k, v in r.items() if k != "file"} for r in quarantine_rows])
            qdf["batch_id"] = batch_id
            register("batch_quarantine", qdf)
            con.execute(load_query("land_insert_quarantine"))
        con.execute(
            "insert into land_batches values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [batch_id, source, p.files, len(s.landed), len(s.duplicates), len(s.quarantined),
             len(s.rejected), p.started_at, datetime.now(timezone.utc)])
        _crash("before_commit")
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    finally:
        for name in registered:
            con.unregister(name)
    _crash("committed")


def batches(files: list[str], batch_size: int) -> Iterator[tuple[list[str], str]]:
    """The files in landing batches, each with a progress line ("n of N files")."""
    for i in range(0, len(files), batch_size):
        yield files[i : i + batch_size], f"  {min(i + batch_size, len(files))} of {len(files)} files"


def land_paths(con: duckdb.DuckDBPyConnection, paths: list[str], *, source: str = "cli",
               batch_size: int = BATCH_SIZE, progress: Callable[[str], None] | None = None,
               target: str | None = None) -> LandSummary:
    """Land every bundle under `paths` through an open writer connection, batch by batch. `target`: the
    target whose inbox or results `paths` are, when known (see prepare)."""
    files, missing = expand(paths)
    summary = LandSummary(rejected=list(missing))
    for batch, done in batches(files, batch_size):
        summary.merge(commit(con, prepare(batch, target=target), source=source))
        if progress and len(files) > batch_size:
            progress(done)
    return summary

