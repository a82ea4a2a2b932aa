"""The gap per run, for the points drawn behind the gap-over-time line: a step shows on the day it happened.

    python -c "import duckdb; from reports.data import load; print(load(duckdb.connect('.costgap/demo.duckdb', read_only=True)).run_points[:2])"

A 30-day window moves a little each week until a change is 30 days old, so the line alone puts a step
weeks late. Each point is one day of one target's runs against the baseline:
- each priced run's cost C = P / (3600 X) 1e6 R (tasks.cost.model.effective_cost) from its own as-of
  price P and tokens/s X, with R = the target's rerun factor in the grid window the run falls in first
  (the window ending at the next weekly point: a failure rate is a rate over runs, not a run's);
- its gap against the baseline's run nearest in time on the same preset (tasks.cost.model.gap);
- per (target, preset, UTC day): the median of those gaps, at noon, and how many runs it has.
Bounded: one point per target, preset and day of the history (never raw runs on a page).
"""

from __future__ import annotations

from datetime import timedelta

import duckdb
import numpy as np
import polars as pl

from tasks.cost.inputs import Span, price_runs
from tasks.cost.model import CostOptions, Figure, effective_cost, gap
from warehouse import sql


def run_gaps(con: duckdb.DuckDBPyConnection, hspan: Span, opts: CostOptions, baseline: str | None,
             figs: dict[tuple, Figure]) -> list[dict]:
    """[{target, preset, at, gap, runs}] over `hspan` (tasks.cost.rules.history), against `baseline`; `figs`
    are the history's figures (tasks.cost.table.costs over hspan: period k = grid window k)."""
    if baseline is None or not figs:
        return []
    whole = Span(hspan.end, (hspan.end - hspan.start).total_seconds() / 86400.0)
    price_runs(con, whole, opts)
    runs = sql.frame_numpy(con, "cost_run_points")
    if runs.is_empty():
        return []
    step_us = hspan.step_us
    r = pl.DataFrame([{"k": k, "target": t, "preset": p, "R": f.R} for (k, t, p), f in figs.items() if f.R is not None],
                     schema={"k": pl.Int64, "target": pl.String, "preset": pl.String, "R": pl.Float64})
    end = pl.lit(hspan.end).cast(pl.Datetime("us", "UTC"))
    runs = (runs.with_columns(((end - pl.col("started_at")).dt.total_microseconds() // step_us).cast(pl.Int64).alias("k"))
            .join(r, on=["k", "target", "preset"], how="inner"))
    runs = runs.with_columns(pl.Series("cost", effective_cost(runs["price_per_hour"].to_numpy(),
                                                              runs["tokens_per_s"].to_numpy(), runs["R"].to_numpy())))
    base = (runs.filter(pl.col("target") == baseline).select("preset", "started_at", pl.col("cost").alias("base_cost"))
            .sort("started_at"))
    mine = runs.filter(pl.col("target") != baseline).sort("started_at")
    if base.is_empty() or mine.is_empty():
        return []
    # both sides are sorted by time above (polars cannot check it per `by` group, so it is not asked to)
    paired = mine.join_asof(base, on="started_at", by="preset", strategy="nearest",
                            check_sortedness=False).drop_nulls("base_cost")
    paired = paired.with_columns(pl.Series("gap", gap(paired["cost"].to_numpy(), paired["base_cost"].to_numpy())),
                                 pl.col("started_at").dt.truncate("1d").alias("day"))
    daily = (paired.group_by("target", "preset", "day").agg(pl.col("gap").median(), pl.len().alias("runs"))
             .sort("preset", "target", "day"))
    return [{"target": d["target"], "preset": d["preset"], "at": d["day"] + timedelta(hours=12),
             "gap": float(d["gap"]), "runs": int(d["runs"])} for d in daily.iter_rows(named=True)
            if np.isfinite(d["gap"])]
