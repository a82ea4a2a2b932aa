"""What a rebuild carries from the old warehouse into the new one (flows/rebuild.py runs the rebuild).

    costgap rebuild --from results/ --warehouse costgap.duckdb

Bundles are the source of truth, so a rebuild lands every bundle again (tasks.landing.land) and
replays the price and FX imports archived in the results store (tasks.pricing.replay_imports).
What no bundle holds is read from the old warehouse and inserted into the new one (CARRY_OVER):
Prefect's view of attempts whose bundle never arrived, the compare flow's dispatch log, provenance
labels, each target's targets.toml facts, merged into the stubs that landing created, and what the
alerts told (alerts_sent: a rebuild tells nothing, and the next landing command tells only what is news).
Everything here takes open connections; opening files and swapping them is flows/rebuild.py's job.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from tasks.landing.land import LandSummary

# (table, filter): operational rows that come from Prefect or the user, not from any bundle
CARRY_OVER = (
    ("attempts", "source = 'prefect'"),
    ("dispatches", "true"),
    ("measuring_runs", "true"),  # each probe run's instance span, read from Prefect: what measuring cost
    ("dispatch_skips", "true"),  # the targets a measuring budget skipped
    ("provenance", "true"),
    ("targets", "true"),  # targets.toml facts (provider, region, ...): merged into the stubs
    ("alerts_sent", "true"),  # what was told: a rebuild replays history, so the next landing tells nothing old
)
TARGET_FACTS = ("provider", "region", "instance_type", "gpu_model", "gpu_count", "billing_mode",
                "work_pool", "dispatch")


@dataclass
class RebuildResult:
    summary: LandSummary
    prices_replayed: str  # what the price replay did
    carried: dict[str, int]  # table -> rows carried over from the old warehouse
    old_unreadable: str | None = None  # why nothing could be carried over, if so


def carry_over(old: duckdb.DuckDBPyConnection) -> dict:
    """The CARRY_OVER rows of the old warehouse, as pandas frames per table."""
    tables = {r[0] for r in old.execute("select table_name from information_schema.tables").fetchall()}
    return {table: old.execute(f"select * from {table} where {where}").df()
            for table, where in CARRY_OVER if table in tables}


def _merge_targets(con: duckdb.DuckDBPyConnection, df) -> int:
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


def insert_carried(con: duckdb.DuckDBPyConnection, frames: dict) -> dict[str, int]:
    """Insert carry_over's frames into the new warehouse; returns rows per table."""
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
