"""An empty, migrated Prefect SQLite database, made once per venv and Prefect version, that test servers start from.

    .venv/bin/python -m tests.prefect_template      # prints its path, making it first if it is missing

A Prefect server on an empty SQLite file first runs every migration: 15.5 CPU-s for a start on an empty file
against 7.6 on a migrated one on this 2-core box (stop 40's note). The test servers that are not testing a
first start copy this file instead: the session's shared server (tests/conftest.py), the work-pool and
automation harness (tests/pool_harness.py) and the one-shot servers whose database a test then reads
(tests/test_secrets.py, tests/test_alerts_landing.py). The tests of a fresh machine (tests/test_cold_start.py,
tests/test_local_server.py) never use it: creating the database is what they test.

It lives in the venv (.venv/costgap-test-prefect/), so `make clean` removes it and a new Prefect version gets
its own. Made under a file lock, so xdist workers that need it at once make it once.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

BUILD_TIMEOUT_S = 600  # the migrations take ~10 s here; minutes on a busy box
_MIGRATE = ("import asyncio\n"
            "from prefect.server.database import provide_database_interface\n"
            "asyncio.run(provide_database_interface().create_db())\n")


def path() -> Path:
    from importlib.metadata import version

    return Path(sys.prefix) / "costgap-test-prefect" / f"prefect-{version('prefect')}.db"


def ensure() -> Path:
    """The template's path, made first (Prefect's own migrations, in a child process) if it is missing."""
    target = path()
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be making it: wait, then use its file
        if not target.exists():
            _build(target)
    return target


def _build(target: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="costgap-prefect-template-", dir=target.parent) as tmp:
        db = Path(tmp) / "prefect.db"
        env = {**os.environ, "PREFECT_HOME": tmp, "PREFECT_SERVER_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{db}",
               "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "WARNING"}
        env.pop("PREFECT_API_URL", None)
        done = subprocess.run([sys.executable, "-c", _MIGRATE], env=env, capture_output=True, text=True,
                              timeout=BUILD_TIMEOUT_S)
        if done.returncode != 0:
            raise RuntimeError(f"migrating a Prefect template database failed:\n{done.stderr[-3000:]}")
        with sqlite3.connect(db) as con:  # one self-contained file: no write-ahead log beside it
            con.execute("pragma wal_checkpoint(TRUNCATE)")
            con.execute("pragma journal_mode=DELETE")
        os.replace(db, target)  # whole or absent: a reader never sees half a file


def seed(database: Path) -> Path:
    """Copy the template to `database` (a server's SQLite file, not there yet); returns `database`."""
    database = Path(database)
    database.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ensure(), database)
    return database


if __name__ == "__main__":
    print(ensure())
