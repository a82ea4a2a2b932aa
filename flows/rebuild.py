"""Rebuild the warehouse file from the results store alone, holding the write slot for the whole run.

    costgap rebuild --from results/ --warehouse costgap.duckdb

The new warehouse is built in a temporary file next to the old one (same filesystem): every bundle
is landed with the code incremental ingest uses, the price book is replayed from its archived
imports, and what no bundle holds is carried over (tasks.landing.rebuild). Then the file is swapped
in with os.replace while the old file's lock is held: a reader sees the old warehouse or the new
one, never a half-built one. The `warehouse-write` slot is held from the first read of the old file
to the swap, so an ingest, a price import or a compare that starts meanwhile waits and then lands
into the new file: nothing landed during a rebuild is lost. A crash before the swap leaves the old
warehouse untouched (and a stray *.rebuild-* file that the next rebuild removes).
"""

from __future__ import annotations

import glob
import os
import uuid
from pathlib import Path
from typing import Callable

from runtime.write_slot import write_slot
from tasks.landing.land import BATCH_SIZE, land_paths
from tasks.landing.rebuild import RebuildResult, carry_over, insert_carried
from tasks.pricing import replay_imports
from warehouse.db import DEFAULT_TIMEOUT_S, WarehouseBusy, connect, writing


def _unreadable(path: Path, timeout_s: float) -> str | None:
    """None if the old warehouse opens; else why not (a busy lock is raised, never skipped)."""
    try:
        with writing(str(path), timeout_s=timeout_s):
            return None
    except WarehouseBusy:
        raise
    except Exception as e:  # corrupt or foreign file: the very case a rebuild exists for
        return f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"


def rebuild(results_url: str, warehouse: str, *, batch_size: int = BATCH_SIZE,
            timeout_s: float = DEFAULT_TIMEOUT_S, progress: Callable[[str], None] | None = print) -> RebuildResult:
    """Build a fresh warehouse from every bundle under `results_url`, then swap it in."""
    target = Path(warehouse).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(f"{target}.rebuild-{uuid.uuid4().hex[:8]}")
    with write_slot(str(target), progress):
        for stale in glob.glob(f"{glob.escape(str(target))}.rebuild-*"):
            os.remove(stale)
        try:
            broken = _unreadable(target, timeout_s) if target.exists() else "no old warehouse"
            con = connect(str(tmp))
            try:
                summary = land_paths(con, [results_url], source="rebuild", batch_size=batch_size, progress=progress)
                prices = f"prices replayed: {replay_imports(con, results_url)}"
                if broken is None:
                    with writing(str(target), timeout_s=timeout_s) as old:
                        carried = insert_carried(con, carry_over(old))
                else:
                    carried = {}
                con.execute("checkpoint")
            finally:
                con.close()
            if broken is None:
                with writing(str(target), timeout_s=timeout_s) as old:
                    old.execute("checkpoint")  # nothing of the old file left in a WAL beside it
                    os.replace(tmp, target)
            else:
                Path(f"{target}.wal").unlink(missing_ok=True)  # a WAL of the unreadable file must not be replayed
                os.replace(tmp, target)
        finally:
            for leftover in (tmp, Path(f"{tmp}.wal")):
                leftover.unlink(missing_ok=True)
    return RebuildResult(summary, prices, carried, broken)
