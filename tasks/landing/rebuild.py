"""Rebuild the warehouse from the results store alone (bundles are the source of truth).

    costgap rebuild --from results/ --warehouse costgap.duckdb

The new warehouse is built in a temporary file next to the target (same filesystem), landed
with exactly the code incremental ingest uses (tasks.landing.land), then prices/FX are replayed from
their stored imports (tasks.pricing.replay_imports, where the pricing package provides it), and
finally the file is swapped in with os.replace while holding the old file's write lock: a
reader sees the old warehouse or the new one, never a half-built one. A crash before the swap
leaves the old warehouse untouched (and a stray *.rebuild-* file that the next rebuild removes).

Records no bundle holds are carried over from the old warehouse (CARRY_OVER): Prefect's view
of attempts whose bundle never arrived, the compare flow's dispatch log, provenance labels and
the targets.toml facts of each target. The price book is replayed from the imports the pricing
area archives in the results store (<store>/_prices/*.jsonl); only if that replay is missing are
the price tables carried over instead, so a rebuild never loses prices.
"""

from __future__ import annotations

import glob
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from tasks.landing.land import BATCH_SIZE, LandSummary, land_paths
from warehouse.db import DEFAULT_TIMEOUT_S, WarehouseBusy, connect, writing


# (table, filter): operational rows that come from Prefect or the user, not from any bundle
CARRY_OVER = (
    ("attempts", "source = 'prefect'"),
    ("dispatches", "true"),
    ("provenance", "true"),
    ("targets", "true"),  # targets.toml facts (provider, region, ...): merged into the stubs
)
# The price book, carried over only while tasks.pricing offers no replay of its stored imports.
PRICE_TABLES = ("price_imports", "prices", "fx_rates")
TARGET_FACTS = ("provider", "region", "instance_type", "gpu_model", "gpu_count", "billing_mode",
                "work_pool", "dispatch")


@dataclass
class RebuildResult:
    summary: LandSummary
    prices_replayed: str  # what the price replay did, or why it did not run
    carried: dict[str, int]  # table -> rows carried over from the old warehouse
    old_unreadable: str | None = None  # why nothing could be carried over, if so


def _price_replay():
    import tasks.pricing as pricing  # owned by the pricing area

    return getattr(pricing, "replay_imports", None)


def _replay_prices(con, results_url: str, carried: dict[str, int]) -> str:
    replay = _price_replay()
    if replay is None:
        rows = ", ".join(f"{t} {carried.get(t, 0)}" for t in PRICE_TABLES)
        return f"prices carried over from the old warehouse ({rows}): no tasks.pricing.replay_imports"
    return f"prices replayed: {replay(con, results_url)}"


def _readable(path: Path, timeout_s: float) -> str | None:
    """None if the old warehouse opens; else why not (a busy lock is raised, never skipped)."""
    try:
        with writing(str(path), timeout_s=timeout_s):
            return None
    except WarehouseBusy:
        raise
    except Exception as e:  # corrupt or foreign file: the very case a rebuild exists for
        return f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"


def _carry_over(old_path: Path, timeout_s: float) -> dict:
    """Read the CARRY_OVER rows of the old warehouse (as pandas frames, per table)."""
    frames = {}
    with writing(str(old_path), timeout_s=timeout_s) as old:
        tables = {r[0] for r in old.execute(
            "select table_name from information_schema.tables").fetchall()}
        wanted = list(CARRY_OVER)
        if _price_replay() is None:
            wanted += [(t, "true") for t in PRICE_TABLES]
        for table, where in wanted:
            if table in tables:
                frames[table] = old.execute(f"select * from {table} where {where}").df()
    return frames


def _merge_targets(con, df) -> int:
    """Old targets rows: their targets.toml facts fill the rebuilt stubs; unseen targets are added."""
    if not len(df):
        return 0
    con.register("carry_targets", df)
    try:
        sets = ", ".join(f"{c} = coalesce(o.{c}, t.{c})" for c in TARGET_FACTS)
        con.execute(f"update targets as t set {sets} from carry_targets as o where o.target = t.target")
        con.execute("insert into targets by name select * from carry_targets "
                    "where target not in (select target from targets)")
    finally:
        con.unregister("carry_targets")
    return len(df)


def _insert_frames(con, frames: dict) -> dict[str, int]:
    carried = {}
    for table, df in frames.items():
        if table == "targets":
            carried[table] = _merge_targets(con, df)
            continue
        if len(df):
            con.register("carry_frame", df)
            try:
                con.execute(f"insert into {table} by name select * from carry_frame")
            finally:
                con.unregister("carry_frame")
        carried[table] = len(df)
    return carried


def rebuild(results_url: str, warehouse: str, *, batch_size: int = BATCH_SIZE,
            timeout_s: float = DEFAULT_TIMEOUT_S) -> RebuildResult:
    """Build a fresh warehouse from every bundle under `results_url`, then swap it in."""
    target = Path(warehouse).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in glob.glob(f"{glob.escape(str(target))}.rebuild-*"):
        os.remove(stale)
    tmp = Path(f"{target}.rebuild-{uuid.uuid4().hex[:8]}")
    try:
        broken = _readable(target, timeout_s) if target.exists() else "no old warehouse"
        frames = _carry_over(target, timeout_s) if broken is None else {}
        con = connect(str(tmp))
        try:
            summary = land_paths(con, [results_url], source="rebuild", batch_size=batch_size)
            carried = _insert_frames(con, frames)
            prices = _replay_prices(con, results_url, carried)
            con.execute("checkpoint")
        finally:
            con.close()
        if broken is None:
            with writing(str(target), timeout_s=timeout_s) as old:
                old.execute("checkpoint")  # nothing of the old file left in a WAL beside it
                os.replace(tmp, target)
        else:
            wal = Path(f"{target}.wal")
            if wal.exists():  # a WAL of the unreadable file must not be replayed into the new one
                wal.unlink()
            os.replace(tmp, target)
    finally:
        for leftover in (tmp, Path(f"{tmp}.wal")):
            if leftover.exists():
                leftover.unlink()
    return RebuildResult(summary, prices, carried, broken)
