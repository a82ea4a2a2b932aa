"""The cost model (DESIGN.md "Cost model"): effective cost per million tokens, gaps and what moved them.

    costgap targets --window 30d        # cost_table, cheapest first
    costgap gap A B --json              # gap with its interval and the exact log decomposition

For a target T and preset over a window (start, end]:
  P  price per instance-hour in the reporting currency: each run priced as of its start (ASOF JOIN on
     effective_from, FX at dated rates), averaged over the window's successful runs;
  X  median tokens/s over successful runs (each run's figure is its median step time after warm-up);
  p  failed fine-tune attempts / counted attempts on T (attempts table, source bundle and prefect);
  R  = 1 + f p / (1 - p);   C = P / (3600 X) * 1e6 * R;   gap(A, B) = C_A / C_B - 1;
  ln(C_A/C_B) = ln(P_A/P_B) - ln(X_A/X_B) + ln(R_A/R_B)  (price, throughput, reliability terms).
90% intervals: bootstrap over runs for X (smoothed by the run-to-run CV), Beta posterior for p
(Jeffreys prior; a target with no attempt records at all keeps R = 1 in every draw).
X takes one figure per (run, preset): the row that used the most GPUs (the instance-level figure).
Relational work is SQL (warehouse/queries/cost_*.sql); the statistics are numpy (tasks.cost.stats).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import duckdb
import numpy as np
import polars as pl

from tasks.errors import UserError
from tasks.cost import stats
from tasks.cost.changepoint import ENV_FIELDS, detect
from tasks.cost.derived import TierConfig, derived, repeatability, tier_recommendations  # noqa: F401 (API)
from tasks.pricing.fx import FxError
from tasks.pricing.base import BILLING_MODES, CURRENCIES
from warehouse import sql

FINETUNE_TASK = "finetune"  # attempts.task prefix whose failures drive p: "finetune", "finetune:<preset>"
PREFECT_PROBE_TASK = "probe_child"  # Prefect task running the probe process (flows/probe.py): a failed try
                                    # left no bundle, so it counts as a failed attempt (cost_summary.sql)
COLUMNS = ["target", "preset", "price_per_hour", "currency", "price_effective_from", "price_age_days", "price_stale",
           "tokens_per_s", "runs", "attempts", "failed_attempts", "p", "R", "cost_per_mtok", "cost_lo", "cost_hi",
           "last_run_at"]

_EMPTY_TYPES = {"target": pl.String, "preset": pl.String, "currency": pl.String, "price_stale": pl.Boolean,
                "price_effective_from": pl.Datetime("us", "UTC"), "last_run_at": pl.Datetime("us", "UTC"),
                "runs": pl.Int64, "attempts": pl.Int64, "failed_attempts": pl.Int64}


@dataclass(frozen=True)
class CostOptions:
    """What a cost figure depends on besides the data; bad values fail naming the option."""

    billing: str | None = "on_demand"  # which price row applies; None = each target's own billing_mode
    currency: str = "USD"  # reporting currency; every price is converted at dated rates
    f: float = 0.5  # fraction of an attempt's work lost per failure (checkpoints every c: f = c/2)
    stale_after_days: float = 30.0  # a price last confirmed longer ago than this is flagged stale
    draws: int = stats.DEFAULT_DRAWS  # bootstrap / posterior draws for the 90% intervals
    seed: int = 0  # fixed so a figure can be reproduced exactly

    def __post_init__(self) -> None:
        if self.billing is not None and self.billing not in BILLING_MODES:
            raise UserError(f"billing = {self.billing!r}: expected one of {BILLING_MODES}")
        if self.currency not in CURRENCIES:
            raise UserError(f"currency = {self.currency!r}: unknown currency (ISO 4217)")
        if not 0.0 <= self.f <= 1.0:
            raise UserError(f"f = {self.f!r}: the fraction of work lost per failure must be in [0, 1]")
        if self.stale_after_days < 0:
            raise UserError(f"stale_after_days = {self.stale_after_days!r}: expected >= 0")
        if self.draws < 100:
            raise UserError(f"draws = {self.draws!r}: expected >= 100 for a 90% interval")


def effective_cost(price_per_hour: float, tokens_per_s: float, rerun: float) -> float:
    """C = P / (3600 X) * 1e6 * R: cost per 1M tokens (DESIGN.md)."""
    return price_per_hour / (3600.0 * tokens_per_s) * 1e6 * rerun


def decompose(a: tuple[float, float, float], b: tuple[float, float, float]) -> tuple[float, dict]:
    """ln(C_A/C_B) and its price, throughput and reliability terms, for (P, X, R) of A and of B."""
    (pa, xa, ra), (pb, xb, rb) = a, b
    terms = {"price": math.log(pa / pb), "throughput": -math.log(xa / xb), "reliability": math.log(ra / rb)}
    return math.log(effective_cost(pa, xa, ra) / effective_cost(pb, xb, rb)), terms


def window_bounds(as_of: datetime | None, window_days: float) -> tuple[datetime, datetime]:
    if window_days <= 0:
        raise UserError(f"window = {window_days!r} days: expected a positive window")
    end = (as_of or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return end - timedelta(days=window_days), end


def price_runs(con: duckdb.DuckDBPyConnection, start: datetime, end: datetime, opts: CostOptions,
               targets: list[str] | None = None, preset: str | None = None) -> None:
    """Materialise temp table _cost_runs (cost_runs.sql) and fail on any missing FX rate."""
    params = {"start": start, "end": end, "billing": opts.billing, "currency": opts.currency}
    query = sql.load_query("cost_runs")
    # Row order of the scratch table does not matter (every reader sorts); not keeping it makes the
    # materialisation ~2x faster. The caller's setting is put back afterwards.
    keep = con.execute("select current_setting('preserve_insertion_order')").fetchall()[0][0]
    con.execute("set preserve_insertion_order = false")
    try:
        con.execute(f"create or replace temp table _cost_runs as {query}", params)
    finally:
        con.execute(f"set preserve_insertion_order = {'true' if keep else 'false'}")
    if targets is not None or preset is not None:
        con.execute("delete from _cost_runs where not (($targets is null or list_contains($targets, target))"
                    " and ($preset is null or preset = $preset))", {"targets": targets, "preset": preset})
    missing = con.execute(sql.load_query("cost_fx_missing")).fetchall()
    if missing:
        cur, day, n = missing[0]
        raise FxError(f"no FX rate for {cur} on or before {day} ({n} runs need it): add a dated rate to fx_rates "
                      f"(costgap prices import deploy/fx_rates.csv --format fx); a missing rate is never 1.0")


def _costs(con, start: datetime, end: datetime, opts: CostOptions, targets=None, preset=None):
    """(frame with every column, cost draws [rows, draws]) for the window."""
    price_runs(con, start, end, opts, targets, preset)
    summary = sql.frame(con, "cost_summary",
                                {"start": start, "end": end, "task": FINETUNE_TASK, "billing": opts.billing,
                                 "prefect_task": PREFECT_PROBE_TASK})
    if targets is not None:
        summary = summary.filter(pl.col("target").is_in(targets))
    samples = sql.columns(con, "cost_samples")
    rng = np.random.default_rng(opts.seed)
    n = summary.height
    sizes = summary["runs"].to_numpy().astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    values = np.asarray(samples["tokens_per_s"], dtype=float)
    if values.size != offsets[-1]:  # both queries read _cost_runs in (target, preset) order
        raise RuntimeError(f"cost_samples has {values.size} runs, cost_summary counts {offsets[-1]}")
    x_draws = stats.bootstrap_medians(values, offsets, opts.draws, rng)
    cv = summary["cv_within"].fill_null(float("nan")).to_numpy().astype(float)
    x_draws = stats.smooth(x_draws, cv, sizes, rng)
    attempts = summary["attempts"].to_numpy().astype(float)
    failed = summary["failed_attempts"].to_numpy().astype(float)
    p_draws = stats.failure_rate_draws(failed, attempts, opts.draws, rng)
    p_draws[attempts == 0] = 0.0  # no attempt records: nothing to infer p from; R = 1 as in the point figure
    r_draws = 1.0 + opts.f * p_draws / (1.0 - p_draws)
    price = summary["price_per_hour"].fill_null(float("nan")).to_numpy().astype(float)
    c_draws = price[:, None] / (3600.0 * x_draws) * 1e6 * r_draws
    rows = summary.to_dicts()
    points = np.full(n, np.nan)
    for i, row in enumerate(rows):
        p = row["failed_attempts"] / row["attempts"] if row["attempts"] else 0.0
        r = stats.rerun_factor(p, opts.f) if p < 1.0 else None
        P, X = row["price_per_hour"], row["tokens_per_s"]
        cost = effective_cost(P, X, r) if P is not None and r is not None and X else None
        row.update(p=p, R=r, cost_per_mtok=cost, currency=opts.currency)
        if cost is None:
            c_draws[i] = np.nan
        else:
            points[i] = cost
        seen = row["price_last_seen_at"]
        age = (end - seen.astimezone(timezone.utc)).total_seconds() / 86400.0 if seen is not None else None
        row.update(price_age_days=age, price_stale=(age > opts.stale_after_days) if age is not None else None)
    costed = np.isfinite(points)
    lo, hi = np.full(n, np.nan), np.full(n, np.nan)
    if costed.any():
        lo[costed], hi[costed] = stats.interval(c_draws[costed], points[costed])
    for i, row in enumerate(rows):
        row.update(cost_lo=float(lo[i]) if costed[i] else None, cost_hi=float(hi[i]) if costed[i] else None)
    extra = [c for c in (rows[0].keys() if rows else []) if c not in COLUMNS]
    frame = pl.DataFrame(rows, schema_overrides={"R": pl.Float64, "cost_per_mtok": pl.Float64,
                                                 "cost_lo": pl.Float64, "cost_hi": pl.Float64,
                                                 "price_age_days": pl.Float64, "price_stale": pl.Boolean},
                         infer_schema_length=None) if rows else None
    if frame is None:
        return pl.DataFrame(schema={c: _EMPTY_TYPES.get(c, pl.Float64) for c in COLUMNS}), c_draws
    return frame.select(COLUMNS + extra), c_draws


def cost_table(con: duckdb.DuckDBPyConnection, *, as_of: datetime | None = None, window_days: float = 30,
               billing: str | None = "on_demand", currency: str = "USD", f: float = 0.5,
               stale_after_days: float = 30, preset: str | None = None, draws: int = stats.DEFAULT_DRAWS,
               seed: int = 0, targets: list[str] | None = None) -> pl.DataFrame:
    """One row per (target, preset): P, X, p, R, C with its 90% interval; cheapest first, nulls last."""
    opts = CostOptions(billing, currency, f, stale_after_days, draws, seed)
    start, end = window_bounds(as_of, window_days)
    frame, _ = _costs(con, start, end, opts, targets, preset)
    return frame.sort(["cost_per_mtok", "target", "preset"], nulls_last=True)


def _pick_preset(frame: pl.DataFrame, a: str, b: str, preset: str | None) -> str:
    have = {t: set(frame.filter(pl.col("target") == t)["preset"].to_list()) for t in (a, b)}
    shared = sorted(have[a] & have[b])
    if preset is not None:
        if preset not in shared:
            raise UserError(f"preset {preset!r}: not run by both {a} ({sorted(have[a]) or 'no runs'}) and "
                            f"{b} ({sorted(have[b]) or 'no runs'}) in the window; compare only presets both ran")
        return preset
    if not shared:
        raise UserError(f"{a} ({sorted(have[a]) or 'no successful runs'}) and {b} "
                        f"({sorted(have[b]) or 'no successful runs'}) share no preset in the window: "
                        f"cost per token is workload-specific, so they cannot be compared")
    runs = {p: frame.filter(pl.col("preset") == p)["runs"].sum() for p in shared}
    return max(shared, key=lambda p: (runs[p], p))


def gap_window(con, a: str, b: str, start: datetime, end: datetime, opts: CostOptions,
               preset: str | None = None, changes: bool = True) -> dict:
    """gap(A, B) over (start, end]: costs, gap, 90% interval, exact decomposition, change findings."""
    known = {t for (t,) in con.execute("select target from targets union select target from runs").fetchall()}
    for t in (a, b):
        if t not in known:
            raise UserError(f"target {t!r}: unknown; known targets: {', '.join(sorted(known)) or 'none'}")
    frame, draws = _costs(con, start, end, opts, [a, b], None)
    chosen = _pick_preset(frame, a, b, preset)
    idx = {(r["target"], r["preset"]): i for i, r in enumerate(frame.iter_rows(named=True))}
    ra, rb = (frame.row(idx[(t, chosen)], named=True) for t in (a, b))
    for r in (ra, rb):
        if r["cost_per_mtok"] is None:
            why = "no price as of its runs" if r["price_per_hour"] is None else "every attempt failed"
            raise UserError(f"target {r['target']!r}: no cost for preset {chosen!r}: {why} "
                            f"(billing {opts.billing or 'per target'}); see `costgap prices import`")
    ca, cb = ra["cost_per_mtok"], rb["cost_per_mtok"]
    gap_draws = draws[idx[(a, chosen)]] / draws[idx[(b, chosen)]] - 1.0
    lo, hi = stats.interval(gap_draws[None, :], np.array([ca / cb - 1.0]))
    ln_ratio, terms = decompose((ra["price_per_hour"], ra["tokens_per_s"], ra["R"]),
                                (rb["price_per_hour"], rb["tokens_per_s"], rb["R"]))
    keep = ("price_per_hour", "price_effective_from", "price_age_days", "price_stale", "price_source", "tokens_per_s",
            "runs", "attempts", "failed_attempts", "p", "R", "cost_per_mtok", "cost_lo", "cost_hi", "cv_within",
            "last_run_at")
    found = detect(con, targets=[a, b], preset=chosen, until=end) if changes else []
    return {"a": a, "b": b, "preset": chosen, "currency": opts.currency, "billing": opts.billing,
            "window": {"start": start.isoformat(), "end": end.isoformat()},
            "cost_a": ca, "cost_b": cb, "gap": ca / cb - 1.0, "gap_lo": float(lo[0]), "gap_hi": float(hi[0]),
            "ln_ratio": ln_ratio, "terms": terms,
            "stale": bool(ra["price_stale"] or rb["price_stale"]),
            "components": {"a": {k: ra[k] for k in keep}, "b": {k: rb[k] for k in keep}}, "changes": found}


def gap(con: duckdb.DuckDBPyConnection, a: str, b: str, *, window_days: float = 30,
        billing: str | None = "on_demand", currency: str = "USD", f: float = 0.5, as_of: datetime | None = None,
        preset: str | None = None, stale_after_days: float = 30, draws: int = stats.DEFAULT_DRAWS,
        seed: int = 0) -> dict:
    """gap(A, B) = C_A / C_B - 1 over the last `window_days`, with terms summing to ln(C_A/C_B)."""
    opts = CostOptions(billing, currency, f, stale_after_days, draws, seed)
    start, end = window_bounds(as_of, window_days)
    return gap_window(con, a, b, start, end, opts, preset)


def cost_history(con: duckdb.DuckDBPyConnection, *, bucket: str = "week", billing: str | None = "on_demand",
                 currency: str = "USD", f: float = 0.5, since: datetime | None = None,
                 until: datetime | None = None, stale_after_days: float = 30) -> pl.DataFrame:
    """C per (target, preset, bucket): the same model, each bucket its own window (SQL only)."""
    if bucket not in ("day", "week", "month"):
        raise UserError(f"bucket = {bucket!r}: expected day, week or month")
    opts = CostOptions(billing, currency, f, stale_after_days)
    start = since or datetime(1970, 1, 1, tzinfo=timezone.utc)
    end = until or datetime.now(timezone.utc)
    price_runs(con, start, end, opts)
    params = {"bucket": bucket, "f": f, "task": FINETUNE_TASK, "prefect_task": PREFECT_PROBE_TASK,
              "start": start, "end": end, "stale_days": stale_after_days}
    return sql.frame_numpy(con, "cost_history", params)


def env_changes(con: duckdb.DuckDBPyConnection, target: str, window1: tuple, window2: tuple) -> list[dict]:
    """Environment fields (driver, CUDA, cuDNN, torch, image) whose values differ between two windows."""
    def values(w) -> dict[str, list]:
        got = sql.frame(con, "cost_env_history",
                    {"since": w[0], "until": w[1], "targets": [target], "preset": None})
        return {f: sorted({v for v in got[f].to_list()} - {None}) if got.height else [] for f in ENV_FIELDS}

    v1, v2 = values(window1), values(window2)
    return [{"field": f, "before": ", ".join(map(str, v1[f])) or None, "after": ", ".join(map(str, v2[f])) or None}
            for f in ENV_FIELDS if v1[f] != v2[f]]


def gap_between_windows(con: duckdb.DuckDBPyConnection, a: str, b: str, window1: tuple, window2: tuple, *,
                        billing: str | None = "on_demand", currency: str = "USD", f: float = 0.5,
                        preset: str | None = None, stale_after_days: float = 30,
                        draws: int = stats.DEFAULT_DRAWS, seed: int = 0) -> dict:
    """How the gap moved from window1 to window2, split into the same three terms (exactly).

    delta.ln_ratio = delta.price + delta.throughput + delta.reliability; env_changes lists, per target,
    the environment fields that differ between the windows (read against the throughput term).
    """
    opts = CostOptions(billing, currency, f, stale_after_days, draws, seed)
    (s1, e1), (s2, e2) = window1, window2
    g1 = gap_window(con, a, b, s1, e1, opts, preset, changes=False)
    g2 = gap_window(con, a, b, s2, e2, opts, preset or g1["preset"], changes=False)
    delta_terms = {k: g2["terms"][k] - g1["terms"][k] for k in g1["terms"]}
    return {"a": a, "b": b, "preset": g1["preset"], "currency": currency, "billing": billing,
            "window1": g1, "window2": g2,
            "delta": {"gap": g2["gap"] - g1["gap"], "ln_ratio": g2["ln_ratio"] - g1["ln_ratio"], "terms": delta_terms},
            "env_changes": {"a": env_changes(con, a, window1, window2), "b": env_changes(con, b, window1, window2)},
            "changes": detect(con, targets=[a, b], preset=g1["preset"], since=s1, until=e2)}
