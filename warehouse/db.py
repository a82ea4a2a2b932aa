"""Open, migrate and share the DuckDB warehouse file between costgap processes.

    python -c "from warehouse.db import connect; print(connect('costgap.duckdb').sql('from schema_migrations'))"

DuckDB lets one process hold a file read-write at a time (other processes cannot even open it
read-only meanwhile). costgap keeps writer connections short (`writing`) and every opener waits
for the lock with backoff up to `timeout_s`, then raises `WarehouseBusy`, a UserError whose one
line says which file, which process holds it and what to do. Migrations are the files
warehouse/migrations/NNN_name.sql, applied in numeric order, each inside its own transaction and
recorded in `schema_migrations`; a failed migration rolls back and leaves the file as it was.
"""

from __future__ import annotations

import os
import re
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Iterator

import duckdb

from tasks.errors import UserError

DEFAULT_TIMEOUT_S = 60.0  # a landing batch commits in well under a second; 60 s means "stuck"
TIMEOUT_ENV = "COSTGAP_LOCK_TIMEOUT_S"  # overrides timeout_s for every opener (tests, slow disks)
_BACKOFF_S = (0.02, 0.5)  # first and largest wait between lock attempts
_MIGRATION_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")
_LOCK_PID = re.compile(r"PID (\d+)")


class WarehouseBusy(UserError):
    """Another process held the warehouse file for longer than the lock timeout."""


class WarehouseNotReady(UserError):
    """A read-only open of a file that is missing or not migrated to this costgap's schema."""


def migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) of every migration shipped with this costgap, in order."""
    found = []
    for entry in resources.files("warehouse.migrations").iterdir():
        m = _MIGRATION_NAME.match(entry.name)
        if m:
            found.append((int(m.group(1)), m.group(2), entry.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"two migrations share a number: {versions}")
    return found


def _applied(con: duckdb.DuckDBPyConnection) -> set[int]:
    has_table = con.execute(
        "select count(*) from information_schema.tables where table_name = 'schema_migrations'"
    ).fetchall()[0][0]
    if not has_table:
        return set()
    return {row[0] for row in con.execute("select version from schema_migrations").fetchall()}


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply pending migrations in order, one transaction each. Returns the names applied."""
    con.execute(
        "create table if not exists schema_migrations ("
        " version integer primary key, name varchar not null, applied_at timestamptz not null)"
    )
    done, applied = _applied(con), []
    for version, name, sql in migrations():
        if version in done:
            continue
        con.execute("begin transaction")
        try:
            con.execute(sql)
            con.execute(
                "insert into schema_migrations values (?, ?, ?)",
                [version, name, datetime.now(timezone.utc)],
            )
            con.execute("commit")
        except Exception:
            con.execute("rollback")
            raise
        applied.append(f"{version:03d}_{name}")
    return applied


def env_seconds(name: str, default: float, *, allow_zero: bool = True) -> float:
    """A number of seconds from environment variable `name`, else `default`; a bad value is a user error."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise UserError(f"{name}={raw!r}: expected a number of seconds") from None
    if value < 0 or (value == 0 and not allow_zero):
        raise UserError(f"{name}={raw!r}: expected seconds {'>=' if allow_zero else '>'} 0")
    return value


def _timeout(timeout_s: float) -> float:
    return env_seconds(TIMEOUT_ENV, timeout_s)


def _is_lock_error(e: Exception) -> bool:
    text = str(e)
    return "Could not set lock" in text or "Conflicting lock" in text


def _open(path: str, read_only: bool, timeout_s: float) -> duckdb.DuckDBPyConnection:
    deadline, wait = time.monotonic() + timeout_s, _BACKOFF_S[0]
    while True:
        try:
            return duckdb.connect(path, read_only=read_only)
        except duckdb.IOException as e:
            if not _is_lock_error(e):
                raise UserError(f"warehouse {path}: cannot be opened ({e})") from None
            if time.monotonic() + wait > deadline:
                holder = _LOCK_PID.search(str(e))
                who = f"process {holder.group(1)}" if holder else "another process"
                raise WarehouseBusy(
                    f"warehouse {path} is busy: {who} has held its lock for more than "
                    f"{timeout_s:g} s; wait for it to finish, or set {TIMEOUT_ENV} to wait longer"
                ) from None
            time.sleep(wait)
            wait = min(wait * 2, _BACKOFF_S[1])


def connect(
    path: str, *, read_only: bool = False, timeout_s: float = DEFAULT_TIMEOUT_S
) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) and migrate the warehouse; read-only opens never migrate."""
    path = str(path)
    timeout_s = _timeout(timeout_s)
    if read_only:
        if not Path(path).exists():
            raise WarehouseNotReady(
                f"warehouse {path}: no such file; land bundles first (costgap ingest PATH)"
            )
        con = _open(path, True, timeout_s)
        missing = sorted({v for v, _, _ in migrations()} - _applied(con))
        if missing:
            con.close()
            raise WarehouseNotReady(
                f"warehouse {path}: schema is missing migrations {missing}; open it read-write "
                "once (e.g. costgap ingest) to migrate it"
            )
        return con
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    con = _open(path, False, timeout_s)
    try:
        migrate(con)
    except Exception:
        con.close()
        raise
    return con


@contextmanager
def writing(path: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short-lived writer connection, closed on every path (so waiting processes get a turn)."""
    con = connect(path, timeout_s=timeout_s)
    try:
        yield con
    finally:
        con.close()


@contextmanager
def reading(path: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection whose queries share one snapshot (one transaction), then closed."""
    con = connect(path, read_only=True, timeout_s=timeout_s)
    try:
        con.execute("begin transaction")
        yield con
    finally:
        con.close()
