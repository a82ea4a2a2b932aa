"""The one write path: every warehouse write holds a Prefect global concurrency limit, the write slot.

    python -c "from runtime.write_slot import slot_name; print(slot_name('costgap.duckdb'))"

Flows (compare, prices, rebuild) and the CLI's writers (ingest, prices import/refresh, rebuild) all
write through `writer(warehouse)`: the slot first, then DuckDB's file lock. The slot has 1 place, so
writers queue in Prefect (visible in its UI, up to WRITE_WAIT_S) instead of racing for the file;
the file lock stays as the last guard. The holder is recorded beside the warehouse
(`<warehouse>.writer`: pid, lease id, since when) BEFORE it asks for the slot, and its lease id as soon
as it has one, so a holder that died without releasing the slot (SIGKILL, OOM), even between taking the
slot and recording its lease, is freed by the next writer at once. There is one slot per warehouse file, named
`warehouse-write-<file stem>-<hash of its absolute path>` (DuckDB's lock is per file too, so two
warehouses never wait on each other); it is created on first use. The slot's lease is renewed
while it is held; on a server that runs Prefect's lease repossessor a dead holder's lease also ends
after WRITE_LEASE_S. A renewal that fails is one warning line (the write goes on), not a thread's traceback.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import socket
import sys
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Callable, Iterator
from uuid import UUID

import duckdb

from runtime.api import ensure_api
from runtime.procs import alive, process_started
from warehouse.db import DEFAULT_TIMEOUT_S, env_seconds, writing

WRITE_LIMIT = "warehouse-write"  # the prefix of every write slot's name
WRITE_SLOTS = 1  # one writer at a time: DuckDB allows one read-write process per file
# A holder killed mid-write frees the slot after this long (Prefect's minimum lease), so a re-run
# waits ~1 min instead of the 300 s default.
WRITE_LEASE_S = 60.0
WRITE_WAIT_S = 1800.0  # give up waiting for the slot after this (TimeoutError naming the holder)
WAIT_ENV = "COSTGAP_WRITE_WAIT_S"
POLL_S = 0.25  # between attempts while the slot is taken
RENEW_EVERY_S = WRITE_LEASE_S / 3  # a lease renewed this often survives two failed renewals in a row
WAIT_TICK_S = 10.0  # a progress line this often while waiting
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


def holder_file(warehouse: str) -> Path:
    """Beside the warehouse: who holds its slot (pid, lease), and the lock that orders its acquirers."""
    path = Path(str(warehouse)).expanduser().resolve()
    return path.with_name(path.name + ".writer")


@contextmanager
def _ordered(path: Path) -> Iterator[IO[str]]:
    """The holder file, opened and exclusively flock-ed: acquirers on this host take turns here."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            f.seek(0)
            yield f
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _record(f: IO[str], doc: dict | None) -> None:
    f.seek(0)
    f.truncate()
    if doc is not None:
        f.write(json.dumps(doc))
    f.flush()


def _me(name: str, lease: UUID | None) -> dict:
    """This process as the slot's holder; lease None while it is still asking for the slot."""
    return {"pid": os.getpid(), "started": process_started(os.getpid()), "host": socket.gethostname(),
            "lease_id": str(lease) if lease else None, "slot": name,
            "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def _take(client, name: str) -> UUID | None:
    """Ask the server for the slot: the lease id, or None while it is taken (423)."""
    from prefect.exceptions import PrefectHTTPStatusError

    try:
        response = client.increment_concurrency_slots_with_lease(
            names=[name], slots=1, mode="concurrency", lease_duration=WRITE_LEASE_S)
    except PrefectHTTPStatusError as e:
        if e.response.status_code == 423:  # locked: the slot is taken
            return None
        raise
    return UUID(response.json()["lease_id"])


def _free_dead(client, name: str, held: dict, say: Callable[[str], None]) -> None:
    """Release the slot of a recorded holder that is gone: by its lease where it recorded one; by the
    limit's count where it died before recording it (or its lease went with a server since stopped)."""
    if held.get("lease_id"):
        client.release_concurrency_slots_with_lease(UUID(held["lease_id"]))
    limit = client.read_global_concurrency_limit_by_name(name)
    if limit.active_slots >= limit.limit:
        since = datetime.fromisoformat(held["since"])
        held_s = max((datetime.now(timezone.utc) - since).total_seconds(), 1.0)  # the API wants > 0
        client.release_concurrency_slots(names=[name], slots=1, occupancy_seconds=held_s)
    how = "" if held.get("lease_id") else ", before it recorded its lease"
    say(f"freed the write slot of pid {held['pid']}, which ended without releasing it "
        f"(it asked for the slot at {held['since']}{how})")


def _try_acquire(client, name: str, f: IO[str], say: Callable[[str], None]) -> UUID | None:
    """One attempt (under the holder file's lock): the lease id, or None while a live writer holds it.

    The holder file names this process before the slot is asked for, and its lease once granted: a
    writer killed at any point is recorded with its pid. A recorded holder that died without releasing
    (SIGKILL, OOM, power) has its slot freed here at once, instead of after its lease runs out, which
    only a server that runs Prefect's lease repossessor would notice (the ephemeral server does not)."""
    text = f.read().strip()
    held = json.loads(text) if text else None
    if held and held.get("host") == socket.gethostname() and not alive(held["pid"], held.get("started")):
        _free_dead(client, name, held, say)
        held = None
    if held:  # a live holder (or one on another host): its record stays unless the slot turns out free
        lease = _take(client, name)
        if lease is not None:
            _record(f, _me(name, lease))
        return lease
    _record(f, _me(name, None))  # claimed before asking: a kill from here on leaves this pid recorded
    lease = None
    try:
        lease = _take(client, name)
    finally:
        _record(f, _me(name, lease) if lease is not None else None)
    return lease


def _renew(lease: UUID, stop: threading.Event, warn: Callable[[str], None], warehouse: str) -> None:
    """Keep the lease alive while the slot is held. A failed renewal is one warning line, not a traceback
    from this thread; later failures of the same lease stay quiet, and the write goes on."""
    from prefect.client.orchestration import get_client

    warned = False
    try:
        with get_client(sync_client=True) as client:
            while not stop.wait(RENEW_EVERY_S):
                try:
                    client.renew_concurrency_lease(lease, lease_duration=WRITE_LEASE_S)
                except Exception as e:  # noqa: BLE001 (reported as one line; the holder keeps writing)
                    if not warned:
                        warned = True
                        warn(_renew_failed(warehouse, lease, e))
    except Exception as e:  # noqa: BLE001 (the client itself failed to open or close)
        if not warned:
            warn(_renew_failed(warehouse, lease, e))


def _renew_failed(warehouse: str, lease: UUID, e: BaseException) -> str:
    reason = " ".join(str(e).split())[:200] or type(e).__name__
    return (f"costgap: warning: could not renew the write slot's lease of {warehouse} (lease {lease}): "
            f"{type(e).__name__}: {reason}; the write goes on, but a server that repossesses leases may let "
            f"another writer in after {WRITE_LEASE_S:.0f} s")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextmanager
def write_slot(warehouse: str, progress: Callable[[str], None] | None = print) -> Iterator[None]:
    """Hold the warehouse's one-writer slot (the Prefect API is started first where it is not running).

    Waits up to COSTGAP_WRITE_WAIT_S (default WRITE_WAIT_S) with a line every WAIT_TICK_S that says who
    holds it; then TimeoutError names the slot and the holder."""
    from prefect.client.orchestration import get_client

    say = progress or (lambda _line: None)
    name = slot_name(warehouse)
    ensure_write_limit(name, progress=progress)
    path = holder_file(warehouse)
    wait_s = env_seconds(WAIT_ENV, WRITE_WAIT_S)
    t0 = time.monotonic()
    next_tick = t0 + WAIT_TICK_S
    with get_client(sync_client=True) as client:
        while True:
            with _ordered(path) as f:
                lease = _try_acquire(client, name, f, say)
                f.seek(0)
                holder = f.read().strip()
            if lease is not None:
                break
            waited = time.monotonic() - t0
            if waited >= wait_s:
                raise TimeoutError(f"{warehouse}: the write slot {name} stayed taken for {waited:.0f} s "
                                   f"(holder: {holder or 'not recorded'}); raise {WAIT_ENV} or wait for that writer")
            if time.monotonic() >= next_tick:
                next_tick += WAIT_TICK_S
                say(f"  waiting for the write slot of {warehouse} ({waited:.0f} s; holder: {holder or 'not recorded'})")
            time.sleep(min(POLL_S, max(0.0, wait_s - waited)))
    stop = threading.Event()
    renewer = threading.Thread(target=_renew, args=(lease, stop, progress or _stderr, str(warehouse)),
                               name="costgap-slot-lease", daemon=True)
    renewer.start()
    try:
        yield
    finally:
        stop.set()
        renewer.join()
        with get_client(sync_client=True) as client, _ordered(path) as f:
            client.release_concurrency_slots_with_lease(lease)
            text = f.read().strip()
            if text and json.loads(text).get("lease_id") == str(lease):
                _record(f, None)


@contextmanager
def writer(warehouse: str, timeout_s: float = DEFAULT_TIMEOUT_S,
           progress: Callable[[str], None] | None = print) -> Iterator[duckdb.DuckDBPyConnection]:
    """The slot, then a short-lived writer connection to the warehouse file; both released on every path."""
    with write_slot(warehouse, progress), writing(warehouse, timeout_s=timeout_s) as con:
        yield con
