"""Rows that do not come from a bundle: Prefect's attempts and minimal target rows.

    .venv/bin/pytest -q tests/test_land.py -k prefect

Re-exported by tasks.landing.land (the interface other areas import). A Prefect attempt row is keyed by
(source_id, task, attempt, target), so a compare flow re-run after a crash adds no duplicates.
"""

from __future__ import annotations

from datetime import datetime, timezone

import duckdb

from warehouse.sql import load_query


def upsert_target_stub(con: duckdb.DuckDBPyConnection, target: str, *, gpu_model: str | None = None,
                       gpu_count: int | None = None, first_seen: datetime | None = None) -> bool:
    """Create a minimal targets row for an unknown target. Returns True if one was created."""
    exists = con.execute("select count(*) from targets where target = ?", [target]).fetchall()[0][0]
    if exists:
        return False
    now = datetime.now(timezone.utc)
    con.execute(
        "insert into targets (target, gpu_model, gpu_count, first_seen, updated_at) values (?, ?, ?, ?, ?)",
        [target, gpu_model, gpu_count, first_seen or now, now])
    return True


ATTEMPT_FIELDS = ("run_id", "target", "task", "attempt", "state", "error_kind", "message",
                  "duration_s", "started_at", "source_id")


def record_prefect_attempts(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> int:
    """Insert attempts seen by Prefect (source='prefect'); a row already recorded (same
    source_id, task, attempt) is skipped, so a re-run flow adds no duplicates. Returns rows added."""
    added = 0
    con.execute("begin transaction")
    try:
        for r in rows:
            missing = [k for k in ("target", "task", "attempt", "state") if r.get(k) is None]
            if missing:
                raise ValueError(f"prefect attempt row {r!r}: missing {missing}")
            values = [r.get(k) for k in ATTEMPT_FIELDS]
            n = con.execute(load_query("land_insert_prefect_attempt"), values).fetchall()[0][0]
            added += n
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    return added
