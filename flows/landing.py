"""Land bundle files into the warehouse file, batch by batch, through the one write path.

    costgap ingest results/ --warehouse costgap.duckdb

Each batch is parsed and validated first (tasks.landing.land.prepare: no lock held), then committed
in one transaction while holding the `warehouse-write` slot and the file (runtime.write_slot.writer);
both are released between batches, so another writer waits at most one batch.
"""

from __future__ import annotations

from typing import Callable

from runtime.write_slot import writer
from tasks.landing.land import BATCH_SIZE, LandSummary, batches, commit, expand, prepare
from warehouse.db import DEFAULT_TIMEOUT_S


def land_into(warehouse: str, paths: list[str], *, source: str = "cli", batch_size: int = BATCH_SIZE,
              timeout_s: float = DEFAULT_TIMEOUT_S,
              progress: Callable[[str], None] | None = print) -> LandSummary:
    """Land every bundle under `paths` into `warehouse`; returns what landed and what was refused."""
    files, missing = expand(paths)
    summary = LandSummary(rejected=list(missing))
    if not files:
        with writer(warehouse, timeout_s, progress):  # still create/migrate the file
            return summary
    for batch, done in batches(files, batch_size):
        prepared = prepare(batch)
        with writer(warehouse, timeout_s, progress) as con:
            got = commit(con, prepared, source=source)
            if got.landed:  # an estimate is scored when its measurement lands (issue 37.6)
                from tasks.estimate.estimate_track import score

                scored = score(con)
                if scored and progress:
                    progress(f"estimate: scored {len(scored)} recorded estimate(s) against this landing")
            summary.merge(got)
        if progress and len(files) > batch_size:
            progress(done)
    return summary
