"""Everything the report shows, pre-aggregated in DuckDB into small tables (lists of dicts).

    python -c "import duckdb; from reports.data import load; print(load(duckdb.connect('costgap.duckdb', read_only=True)).targets)"

Relational summaries come from warehouse/queries/report_*.sql. The cost model (tasks.cost.table) and the
change detector (tasks.cost.changepoint) belong to the pricing area: they are called through `_optional`,
so a function that is missing or fails renders as an explicit "no data yet" state, not a crash.
Nothing here returns raw telemetry rows; every table is bounded (weeks x targets, or a LIMIT).
"""

from __future__ import annotations

import importlib
import logging
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import duckdb

from warehouse.sql import load_query

log = logging.getLogger(__name__)

Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class ReportConfig:
    """What the report computes. Defaults match the cost model's defaults (tasks.cost.table)."""

    baseline: str | None = None  # target the gap is measured against; None = the cheapest row
    window_days: int = 30  # cost window, and the length of each "why it moved" window
    billing: str = "on_demand"  # price basis shown; the headline is comparable only within one mode
    currency: str = "USD"  # reporting currency (FX-converted by tasks.cost.table)
    runs_per_target: int = 200  # raw run rows on a target page: bounds page weight at any scale
    list_limit: int = 200  # quarantine / throttled rows listed (the total is shown beside)
    why_max_pairs: int = 8  # waterfalls drawn on "why it moved": one per target vs the baseline
    history_weeks: int = 104  # time series cover the last two years: bounds every chart at any history length
    as_of: datetime | None = None  # end of the cost window; None = just after the latest run, so a report
    #                                read later (or the demo) still shows its data, labelled "as of"

    def __post_init__(self) -> None:
        for name in ("window_days", "runs_per_target", "list_limit", "why_max_pairs", "history_weeks"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"ReportConfig.{name} = {value!r}: expected a positive integer")


@dataclass
class Section:
    """Rows for one part of a page, or the reason there are none yet."""

    rows: Rows = field(default_factory=list)
    note: str | None = None  # set when the data could not be produced (shown on the page)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.note is None and bool(self.rows)


@dataclass
class ReportData:
    targets: Rows
    cost: Section
    tiers: Section
    history: Section
    why: Section
    changes: Section
    price_changes: Section
    env_changes: Section
    throughput: Section
    efficiency: Section
    throttled: Section
    telemetry: Section
    reliability: Section
    failure_kinds: Section
    validation: Section
    validation_daily: Section
    quarantine: Section
    env_history: Section
    runs: Section
    provenance: Section
    baseline: str | None
    as_of: datetime | None
    generated_at: datetime
    warnings: list[str] = field(default_factory=list)
    cost_window_days: int = 30


def _table_exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    sql = "select count(*) from information_schema.tables where table_name = ?"
    return bool(con.execute(sql, [name]).fetchone()[0])


def rows(con: duckdb.DuckDBPyConnection, name: str, params: dict | None = None) -> Rows:
    """Run warehouse/queries/<name>.sql with bound parameters; rows as dicts."""
    cur = con.execute(load_query(name), params or {})
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def _sql(con, name: str, params: dict | None = None, needs: tuple[str, ...] = ()) -> Section:
    missing = [t for t in needs if not _table_exists(con, t)]
    if missing:
        return Section(note=f"no data yet: table {', '.join(missing)} is not in this warehouse")
    return Section(rows=rows(con, name, params))


def _frame_rows(value: Any) -> Rows:
    if value is None:
        return []
    if hasattr(value, "to_dicts"):  # polars
        return value.to_dicts()
    if hasattr(value, "to_dict"):  # pandas
        return value.to_dict("records")
    return list(value)


def _optional(module: str, name: str, *args: Any, **kwargs: Any) -> tuple[Any, str | None]:
    """Call module.name(*args) if it exists; (result, None) or (None, why it is not shown)."""
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None, f"no data yet: {module} is not available in this costgap"
    fn = getattr(mod, name, None)
    if fn is None:
        return None, f"no data yet: {module}.{name} is not available in this costgap"
    try:
        return fn(*args, **kwargs), None
    except Exception as e:  # another area's failure must not take the whole site down
        log.warning("report: %s.%s failed: %s: %s", module, name, type(e).__name__, e)
        if args and isinstance(args[0], duckdb.DuckDBPyConnection):
            _recover(args[0])
        return None, f"could not compute: {module}.{name} raised {type(e).__name__}: {e}"


def _recover(con: duckdb.DuckDBPyConnection) -> None:
    """After a failed query inside the read snapshot, start a fresh one so the other sections still render."""
    try:
        con.execute("select 1").fetchall()
    except duckdb.Error:
        con.execute("rollback")
        con.execute("begin transaction")
        con.execute("set TimeZone = 'UTC'")


def _cost(con, cfg: ReportConfig, as_of: datetime | None) -> Section:
    result, note = _optional(
        "tasks.cost.table", "cost_table", con, as_of=as_of, window_days=cfg.window_days, billing=cfg.billing,
        currency=cfg.currency,
    )
    return Section(rows=_frame_rows(result), note=note)


def pick_baseline(cost: Rows, wanted: str | None, known: list[str]) -> str | None:
    """The chosen baseline, or the cheapest priced row's target. Unknown names are a user error."""
    if wanted is not None:
        if wanted not in known:
            from tasks.errors import UserError

            shown = ", ".join(known[:12]) or "none"
            raise UserError(f"--baseline {wanted!r}: no such target in the warehouse (known: {shown})")
        return wanted
    priced = [r for r in cost if r.get("cost_per_mtok") is not None]
    return (priced or cost or [{}])[0].get("target")


def add_gaps(cost: Rows, baseline: str | None) -> None:
    """gap = C / C_baseline - 1 on the same preset (cost per token is workload-specific)."""
    base = {r["preset"]: r for r in cost if r.get("target") == baseline}
    for r in cost:
        b = base.get(r.get("preset"))
        c, cb = r.get("cost_per_mtok"), (b or {}).get("cost_per_mtok")
        r["gap"] = (c / cb - 1.0) if (c is not None and cb) else None
        r["is_baseline"] = r.get("target") == baseline


def _when(value: Any) -> datetime:
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value if isinstance(value, datetime) else datetime.min.replace(tzinfo=timezone.utc)


def _why(con, cfg: ReportConfig, cost: Rows, baseline: str | None, latest: datetime | None, changes: Rows) -> Section:
    """Gap decomposition between the previous and the latest window, each target vs the baseline.

    One tasks.cost.table.cost_table call per window gives P, X and R for every target at once; the terms
    are the cost model's exact decomposition ln(C_A/C_B) = ln(P_A/P_B) - ln(X_A/X_B) + ln(R_A/R_B)
    in each window (what tasks.cost.table.gap_window computes), and their change is what moved the gap.
    tasks.cost.table.gap_between_windows gives the same terms per pair, but costs ~1 s per pair at 100k runs
    (it re-prices both windows and re-runs the change detector), so 8 pairs would eat the rebuild budget.
    Change-point findings come from the one tasks.cost.changepoint.detect call the report already made.
    """
    if not cost or baseline is None or latest is None:
        return Section(note="no data yet: needs priced runs of at least two targets")
    end2 = latest + timedelta(seconds=1)
    w2 = (end2 - timedelta(days=cfg.window_days), end2)
    w1 = (w2[0] - timedelta(days=cfg.window_days), w2[0])
    windows = []
    for w in (w1, w2):
        res, note = _optional("tasks.cost.table", "cost_table", con, as_of=w[1], window_days=cfg.window_days,
                              billing=cfg.billing, currency=cfg.currency)
        if note:
            return Section(note=note)
        windows.append({(r["target"], r["preset"]): r for r in _frame_rows(res)})
    out = []
    for r in cost:
        a, preset = r.get("target"), r.get("preset")
        if a == baseline or any(o["a"] == a and o["preset"] == preset for o in out):
            continue
        parts = [_decompose(w.get((a, preset)), w.get((baseline, preset))) for w in windows]
        if None in parts:
            continue
        one, two = parts
        delta = {k: two["terms"][k] - one["terms"][k] for k in ("price", "throughput", "reliability")}
        found = [c for c in changes if c.get("target") in (a, baseline) and c.get("preset") == preset
                 and w1[0] <= _when(c.get("at")) < w2[1]]
        out.append({"a": a, "b": baseline, "preset": preset,
                    "result": {"delta": delta, "gap_1": one["gap"], "gap_2": two["gap"], "changes": found}})
        if len(out) >= cfg.why_max_pairs:
            break
    if not out:
        return Section(note="no data yet: no target has priced runs on the baseline's preset in both windows")
    return Section(rows=out, extra={"window1": w1, "window2": w2})


def _decompose(a: dict | None, b: dict | None) -> dict | None:
    need = ("price_per_hour", "tokens_per_s", "R", "cost_per_mtok")
    if not a or not b or any(not x.get(k) for x in (a, b) for k in need):
        return None
    terms = {"price": math.log(a["price_per_hour"] / b["price_per_hour"]),
             "throughput": -math.log(a["tokens_per_s"] / b["tokens_per_s"]),
             "reliability": math.log(a["R"] / b["R"])}
    return {"terms": terms, "gap": a["cost_per_mtok"] / b["cost_per_mtok"] - 1.0,
            "ln_ratio": math.log(a["cost_per_mtok"] / b["cost_per_mtok"])}


def _changes(con, targets: Rows) -> Section:
    result, note = _optional("tasks.cost.changepoint", "detect", con)
    if note:
        return Section(note=note)
    return Section(rows=_frame_rows(result))


def load(con: duckdb.DuckDBPyConnection, cfg: ReportConfig | None = None) -> ReportData:
    """Gather every table the pages need from one connection (ideally one read snapshot)."""
    cfg = cfg or ReportConfig()
    con.execute("set TimeZone = 'UTC'")
    targets = rows(con, "report_targets")
    known = [t["target"] for t in targets]
    latest = max((t["last_run_at"] for t in targets if t.get("last_run_at")), default=None)
    as_of = cfg.as_of or (latest + timedelta(seconds=1) if latest else None)
    cost = _cost(con, cfg, as_of)
    baseline = pick_baseline(cost.rows, cfg.baseline, known)
    add_gaps(cost.rows, baseline)
    since = (latest or datetime.now().astimezone()) - timedelta(weeks=cfg.history_weeks)

    tiers_res, tiers_note = _optional("tasks.cost.table", "tier_recommendations", con, billing=cfg.billing, currency=cfg.currency)
    if tiers_note and "not available" in tiers_note:  # the pricing area keeps it in tasks.cost.derived
        tiers_res, tiers_note = _optional("tasks.cost.derived", "tier_recommendations", con, billing=cfg.billing,
                                          currency=cfg.currency)
    hist_res, hist_note = _optional("tasks.cost.table", "cost_history", con, bucket="week", billing=cfg.billing,
                                    currency=cfg.currency, since=since)
    has_prices = _table_exists(con, "prices")
    changes = _changes(con, targets)
    data = ReportData(
        targets=targets,
        cost=cost,
        tiers=Section(rows=_frame_rows(tiers_res), note=tiers_note),
        history=Section(rows=_frame_rows(hist_res), note=hist_note),
        why=_why(con, cfg, cost.rows, baseline, latest, changes.rows),
        changes=changes,
        price_changes=(_sql(con, "report_price_changes", {"billing": cfg.billing}) if has_prices
                       else Section(note="no data yet: no price book in this warehouse")),
        env_changes=_sql(con, "report_env_changes", {"since": since, "limit": cfg.list_limit}),
        throughput=_sql(con, "report_throughput_weekly", {"since": since}),
        efficiency=_sql(con, "report_efficiency", {"days": cfg.window_days}),
        throttled=_sql(con, "report_throttled", {"limit": cfg.list_limit}),
        telemetry=_sql(con, "report_telemetry_summary", {"since": since}),
        reliability=_sql(con, "report_reliability_weekly", {"since": since}),
        failure_kinds=_sql(con, "report_failure_kinds"),
        validation=_sql(con, "report_validation"),
        validation_daily=_sql(con, "report_validation_daily", {"since": since}),
        quarantine=_sql(con, "report_quarantine", {"limit": cfg.list_limit}),
        env_history=_sql(con, "report_env_history"),
        runs=_sql(con, "report_runs_latest", {"limit": cfg.runs_per_target}),
        provenance=_sql(con, "report_provenance", needs=("provenance",)),
        baseline=baseline,
        as_of=as_of,
        generated_at=datetime.now().astimezone(),
        cost_window_days=cfg.window_days,
    )
    for name in ("cost", "tiers", "history", "why", "changes"):
        note = getattr(data, name).note
        if note and note.startswith("could not compute"):
            data.warnings.append(note)
    return data
