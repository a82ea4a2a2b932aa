"""The one write path: every warehouse write holds a Prefect global concurrency limit, the write slot.

    python -c "from flows.write_slot import slot_name; print(slot_name('costgap.duckdb'))"

Flows (compare, prices, rebuild) and the CLI's writers (ingest, prices import/refresh, rebuild) all
write through `writer(warehouse)`: the slot first, then DuckDB's file lock. The slot has 1 place, so
writers queue in Prefect (visible in its UI, up to WRITE_WAIT_S) instead of racing for the file;
the file lock stays as the last guard. There is one slot per warehouse file, named
`warehouse-write-<file stem>-<hash of its absolute path>` (DuckDB's lock is per file too, so two
warehouses never wait on each other); it is created on first use. The slot's lease is renewed
while it is held; a holder killed mid-write frees it after WRITE_LEASE_S.
"""

from __future__ import annotations

import hashlib
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import duckdb

from flows.api import ensure_api
from warehouse.db import DEFAULT_TIMEOUT_S, writing

WRITE_LIMIT = "warehouse-write"  # the prefix of every write slot's name
WRITE_SLOTS = 1  # one writer at a time: DuckDB allows one read-write process per file
# A holder killed mid-write frees the slot after this long (Prefect's minimum lease), so a re-run
# waits ~1 min instead of the 300 s default.
WRITE_LEASE_S = 60.0
WRITE_WAIT_S = 1800.0  # give up waiting for the slot after this, with Prefect's timeout error
_ready: set[tuple[str, str]] = set()  # API URLs on which the limit is known to exist (per process)


def slot_name(warehouse: str) -> str:
    """The write slot of one warehouse file: readable, unique per absolute path, a valid limit name."""
    path = Path(str(warehouse)).expanduser().resolve()
    stem = re.sub(r"[^a-z0-9]+", "-", path.stem.lower()).strip("-")[:40] or "warehouse"
    return f"{WRITE_LIMIT}-{stem}-{hashlib.sha256(str(path).encode()).hexdigest()[:10]}"


def ensure_write_limit(name: str, slots: int = WRITE_SLOTS,
                       progress: Callable[[str], None] | None = print) -> None:
    """Create the global concurrency limit if it does not exist yet (idempotent, race-safe)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

    url = ensure_api(progress)
    if (url, name) in _ready:
        return
    with get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            try:
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=slots))
            except ObjectAlreadyExists:  # another writer created it a moment ago
                pass
    _ready.add((url, name))


@contextmanager
def write_slot(warehouse: str, progress: Callable[[str], None] | None = print) -> Iterator[None]:
    """Hold the warehouse's one-writer slot (the Prefect API is started first where it is not running)."""
    from prefect.concurrency.sync import concurrency

    name = slot_name(warehouse)
    ensure_write_limit(name, progress=progress)
    with concurrency(name, occupy=1, strict=True, lease_duration=WRITE_LEASE_S, timeout_seconds=WRITE_WAIT_S):
        yield


@contextmanager
def writer(warehouse: str, timeout_s: float = DEFAULT_TIMEOUT_S,
           progress: Callable[[str], None] | None = print) -> Iterator[duckdb.DuckDBPyConnection]:
    """The slot, then a short-lived writer connection to the warehouse file; both released on every path."""
    with write_slot(warehouse, progress), writing(warehouse, timeout_s=timeout_s) as con:
        yield con
