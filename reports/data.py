"""Everything the report shows, gathered from one connection (one read snapshot) into small tables.

    python -c "import duckdb; from reports.data import load; print(load(duckdb.connect('costgap.duckdb', read_only=True)).cost.rows[:1])"

Every cost figure comes from the cost model (tasks.cost.table over tasks.cost.model), and every
"which figure" choice (the window, its end, today's price) from tasks.cost.rules, so the site
shows what `costgap targets` and `costgap gap` print. Relational summaries come from
warehouse/queries/report_*.sql. Nothing here swallows an error: a bug fails the build loudly and
the published site stays as it was (reports.site.publish). Every table is bounded (periods x
targets, or a LIMIT); nothing returns raw telemetry rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import duckdb

from tasks.alerts import AlertConfig, recent
from tasks.cost import rules
from tasks.cost.changepoint import detect
from tasks.estimate.tiers import tier_recommendations
from tasks.cost.grid import compare_span
from tasks.cost.run_points import run_gaps
from tasks.cost.inputs import Span
from reports.reader import reader_inputs
from reports.theme import target_colors
from tasks.cost.model import CostOptions, failure_rate_interval, gap_figure
from tasks.cost.shared import shared_costs
from tasks.cost.table import cheapest_first, costs, gap_history, leaders
from tasks.cost.well_used import verdicts
from tasks.errors import UserError
from warehouse import sql

Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class ReportConfig:
    """What the report computes. Every default is the cost model's (tasks.cost.rules, tasks.cost.model)."""

    baseline: str | None = None  # target the gap is measured against; None = the cheapest row
    window_days: float = rules.WINDOW_DAYS  # cost window, and the length of each "why it moved" window
    billing: str = "on_demand"  # price basis shown; the headline is comparable only within one mode
    currency: str = "USD"  # reporting currency (FX-converted by the cost model)
    runs_per_target: int = 200  # raw run rows on a target page: bounds page weight at any scale
    list_limit: int = 200  # quarantine / throttled rows listed (the total is shown beside)
    why_max_pairs: int = 8  # waterfalls drawn on "why it moved": one per target vs the baseline
    history_periods: int = rules.HISTORY_PERIODS  # weekly periods on the over-time charts
    as_of: datetime | None = None  # end of the cost window; None = the newest run (tasks.cost.rules.window)
    today: datetime | None = None  # when "today's price" is read; None = now

    def __post_init__(self) -> None:
        for name in ("runs_per_target", "list_limit", "why_max_pairs", "history_periods"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"ReportConfig.{name} = {value!r}: expected a positive integer")
        if not self.window_days > 0:
            raise ValueError(f"ReportConfig.window_days = {self.window_days!r}: expected a positive number of days")


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
    cost: Section  # one row per (target, preset) over the window: tasks.cost.table.costs, with the gap;
    #                extra["unmeasured"]: the presets whose fine-tunes all failed or were not applicable (no cost, why)
    leaders: Section  # per preset: the cheapest target now and the runner-up's gap to it
    tiers: Section
    history: Section  # cost per (period, target, preset): the cost window stepped back a week at a time
    gap_history: Section  # gap vs the baseline per (period, preset, target), with the three log terms
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
    as_of: datetime | None  # the window's end
    generated_at: datetime
    cost_window_days: float = rules.WINDOW_DAYS
    today: datetime | None = None
    window: tuple[datetime, datetime] | None = None  # (start, end] of the cost window
    colors: dict[str, str] = field(default_factory=dict)  # one fixed colour per target, every chart
    events: Rows = field(default_factory=list)  # price and environment changes, labelled, for the charts
    currency: str = "USD"
    # what changed lately: the alerts' own decisions (tasks.alerts.recent), so the site and the alerts agree
    recent_changes: Section = field(default_factory=Section)
    # the gap per run and day against the baseline (tasks.cost.run_points), drawn behind the window line
    run_points: Rows = field(default_factory=list)
    # the picker's inputs per (currency, billing mode): reports.reader, what `costgap targets` reads
    reader: dict = field(default_factory=dict)
    # what measuring cost per target and month beside keeping it up, and the budget skips (tasks.cost.measuring)
    measuring: Section = field(default_factory=Section)
    # per (target, preset) the newest fine-tune's configuration: how it was found and every candidate (issue 35)
    configs: Section = field(default_factory=Section)
    # "Is this server well used?": per target its verdicts (tasks.cost.well_used, as `costgap targets --json`)
    well_used: dict[str, list[dict]] = field(default_factory=dict)
    # the shared cost per 1M tokens per (target, preset) where two fine-tunes shared a card (tasks.cost.shared)
    shared: Section = field(default_factory=Section)


def alert_config(cfg: ReportConfig) -> AlertConfig:
    """The alerts' decisions on the report's figures: same window, currency and billing mode (a told gap is
    always the dearer target against the preset's cheapest, as the headline says it)."""
    return AlertConfig(cost=CostOptions(billing=cfg.billing, currency=cfg.currency), window_days=cfg.window_days)


def recent_changes(con, cfg: ReportConfig, today: datetime) -> Section:
    """The overview's "Recent changes" list: tasks.alerts.recent, with what could not be decided as a note."""
    rows, errors = recent(con, alert_config(cfg), now=today)
    return Section(rows=rows, extra={"errors": errors})


def _sql(con, name: str, params: dict | None = None) -> Section:
    return Section(rows=sql.rows(con, name, params or {}))


def pick_baseline(cost: Rows, wanted: str | None, known: list[str]) -> str | None:
    """The chosen baseline, or the cheapest priced row's target. Unknown names are a user error."""
    if wanted is not None:
        if wanted not in known:
            shown = ", ".join(known[:12]) or "none"
            raise UserError(f"--baseline {wanted!r}: no such target in the warehouse (known: {shown})")
        return wanted
    priced = [r for r in cost if r.get("cost_per_mtok") is not None]
    return (priced or cost or [{}])[0].get("target")


def add_gaps(cost: Rows, figs: dict, baseline: str | None) -> None:
    """gap = C / C_baseline - 1 with its 90% interval, on the same preset (cost per token is workload-specific)."""
    base = {r["preset"]: r for r in cost if r["target"] == baseline and r["cost_per_mtok"] is not None}
    for r in cost:
        b = base.get(r["preset"])
        r["is_baseline"] = r["target"] == baseline
        r["gap"] = r["gap_lo"] = r["gap_hi"] = None
        if b is not None and r["cost_per_mtok"] is not None and not r["is_baseline"]:
            g = gap_figure(figs[(r["period"], r["target"], r["preset"])], figs[(b["period"], baseline, r["preset"])])
            r.update(gap=g.gap, gap_lo=g.gap_lo, gap_hi=g.gap_hi)


def with_p_interval(rows: Rows) -> Rows:
    """Each row with p's 90% interval (p_lo, p_hi) from its k/n, as the cost interval draws it."""
    for r in rows:
        r["p_lo"], r["p_hi"] = failure_rate_interval(r["failed_attempts"], r["attempts"])
    return rows


def events(price_changes: Rows, env_changes: Rows) -> Rows:
    """Price and environment changes as chart annotations: when, which target, before -> after (`label`),
    and a `short` label for the chart itself (the first change, and how many more)."""
    out = []
    for r in price_changes:
        label = f"{r['target']}: price {r['previous_price']:.4g} → {r['price_per_hour']:.4g} {r['currency']}/h"
        out.append({"at": r["changed_at"], "target": r["target"], "kind": "price", "label": label, "short": label})
    for r in env_changes:
        parts = r["change"].split("; ")
        more = f" (+{len(parts) - 1} more)" if len(parts) > 1 else ""
        out.append({"at": r["changed_at"], "target": r["target"], "kind": "environment",
                    "label": f"{r['target']}: {r['change']}", "short": f"{r['target']}: {parts[0]}{more}"})
    return sorted(out, key=lambda e: (e["at"], e["target"]))


def _why(con, span: Span, opts: CostOptions, cfg: ReportConfig, cost: Rows, baseline: str | None,
         changes: Rows, today: datetime) -> Section:
    """How each target's gap against the baseline moved from the previous window to the latest one.

    Both windows come from one cost-model call over two windows of the one grid (tasks.cost.grid: the
    overview's window and the newest chart window that shares no run with it); the terms are the model's
    exact decomposition in each window, and their change is what moved the gap."""
    if baseline is None:
        return Section(note="no data yet: needs priced runs of at least two targets")
    two = compare_span(span.end, span.period_days, 2)
    rows, figs = costs(con, two, opts, today=today)
    by_key = {(r["period"], r["target"], r["preset"]): r for r in rows}
    w2, w1 = two.bounds(0), two.bounds(1)
    out = []
    for r in cost:
        a, preset = r["target"], r["preset"]
        if a == baseline or any(o["a"] == a and o["preset"] == preset for o in out):
            continue
        keys = [((k, a, preset), (k, baseline, preset)) for k in (1, 0)]
        if not all(by_key.get(x) and by_key[x]["cost_per_mtok"] is not None for pair in keys for x in pair):
            continue
        one, two_ = (gap_figure(figs[ka], figs[kb]) for ka, kb in keys)
        delta = {k: two_.terms[k] - one.terms[k] for k in ("price", "throughput", "reliability")}
        found = [c for c in changes if c.get("target") in (a, baseline) and c.get("preset") == preset
                 and w1[0] < datetime.fromisoformat(c["at"]) <= w2[1]]
        # the figures behind each side in each window: "a1" = A in window 1 (the previous), "b2" = B in window 2
        sides = {f"{side}{w}": by_key[(period, t, preset)]
                 for side, t in (("a", a), ("b", baseline)) for w, period in ((1, 1), (2, 0))}
        out.append({"a": a, "b": baseline, "preset": preset, "windows": sides,
                    "result": {"delta": delta, "gap_1": one.gap, "gap_2": two_.gap, "changes": found}})
        if len(out) >= cfg.why_max_pairs:
            break
    if not out:
        return Section(note="no data yet: no target has priced runs on the baseline's preset in both windows")
    return Section(rows=out, extra={"window1": w1, "window2": w2})


def _measuring(con, currency: str, today) -> Section:
    """What measuring cost per target and month (tasks/cost/measuring.py) and the budget skips of the last
    62 days (extra["skips"]): the lines the overview shows."""
    from datetime import timedelta

    from tasks.cost import measuring
    from tasks.errors import UserError

    skips = sql.rows(con, "measuring_skips", {"since": today - timedelta(days=62)})
    try:
        rows = measuring.monthly(measuring.priced_runs(con, currency))
    except UserError as e:  # a missing FX rate: said on the page, the rest of the site still builds
        return Section(note=str(e), extra={"skips": skips})
    return Section(rows=rows, extra={"skips": skips, "lines": measuring.lines(rows, currency)})


def load(con: duckdb.DuckDBPyConnection, cfg: ReportConfig | None = None) -> ReportData:
    """Gather every table the pages need from one connection (ideally one read snapshot)."""
    cfg = cfg or ReportConfig()
    con.execute("set TimeZone = 'UTC'")
    targets = sql.rows(con, "report_targets")
    known = [t["target"] for t in targets]
    opts = CostOptions(billing=cfg.billing, currency=cfg.currency)
    today = cfg.today or rules.today()
    span = rules.window(con, cfg.as_of, cfg.window_days)
    changes = Section(rows=detect(con))
    if span is None:
        cost, lead, figs, baseline = Section(), Section(), {}, pick_baseline([], cfg.baseline, known)
        history, gaps, why = Section(), Section(), Section(note="no data yet: no runs in this warehouse")
        since, points = None, []
    else:
        rows, figs = costs(con, span, opts, today=today, unmeasured=True)
        unmeasured = [r for r in rows if r["tokens_per_s"] is None]
        rows = [r for r in rows if r["tokens_per_s"] is not None]
        cost = Section(rows=with_p_interval(cheapest_first(rows)), extra={"unmeasured": unmeasured})
        lead = Section(rows=leaders(rows, figs))
        baseline = pick_baseline(cost.rows, cfg.baseline, known)
        add_gaps(cost.rows, figs, baseline)
        hspan = rules.history(span.end, cfg.window_days, cfg.history_periods)
        hrows, hfigs = costs(con, hspan, opts, today=today)
        history = Section(rows=with_p_interval([dict(r, period_start=r["window_start"], period_end=r["window_end"])
                                                for r in hrows]))
        gaps = Section(rows=gap_history(hrows, hfigs, baseline) if baseline else [])
        why = _why(con, span, opts, cfg, cost.rows, baseline, changes.rows, today)
        points = run_gaps(con, hspan, opts, baseline, hfigs)
        since = hspan.start
    tiers = tier_recommendations(con, as_of=span.end if span else None, window_days=cfg.window_days,
                                 billing=cfg.billing, currency=cfg.currency, today=today)
    since = since or datetime.now().astimezone() - timedelta(weeks=cfg.history_periods)
    window = span.bounds(0) if span else None
    price_changes = _sql(con, "report_price_changes", {"billing": cfg.billing})
    env_changes = _sql(con, "report_env_changes", {"since": since, "limit": cfg.list_limit})
    return ReportData(
        measuring=_measuring(con, cfg.currency, today),
        targets=targets,
        cost=cost,
        leaders=lead,
        tiers=Section(rows=tiers.to_dicts()),
        history=history,
        gap_history=gaps,
        why=why,
        changes=changes,
        price_changes=price_changes,
        env_changes=env_changes,
        throughput=_sql(con, "report_throughput_weekly", {"since": since}),
        efficiency=_sql(con, "report_efficiency", {"days": cfg.window_days}),
        throttled=_sql(con, "report_throttled", {"limit": cfg.list_limit}),
        telemetry=_sql(con, "report_telemetry_summary", {"since": since}),
        reliability=_sql(con, "report_reliability_weekly", {"since": since}),
        failure_kinds=(_sql(con, "report_failure_kinds", {"start": window[0], "end": window[1]}) if window
                       else Section()),
        validation=_sql(con, "report_validation"),
        validation_daily=_sql(con, "report_validation_daily", {"since": since}),
        quarantine=_sql(con, "report_quarantine", {"limit": cfg.list_limit}),
        env_history=_sql(con, "report_env_history"),
        runs=_sql(con, "report_runs_latest", {"limit": cfg.runs_per_target}),
        configs=_sql(con, "report_finetune_configs"),
        well_used=verdicts(con, cfg.as_of),
        shared=Section(rows=shared_costs(con, opts, cfg.as_of)),
        provenance=_sql(con, "report_provenance"),
        baseline=baseline,
        as_of=span.end if span else None,
        generated_at=datetime.now().astimezone(),
        cost_window_days=cfg.window_days,
        today=today,
        window=window,
        colors=target_colors(known),
        events=events(price_changes.rows, env_changes.rows),
        currency=cfg.currency,
        recent_changes=recent_changes(con, cfg, today),
        run_points=points,
        reader=(reader_inputs(con, span, today, cfg.currency, cfg.billing, {(cfg.currency, cfg.billing): cost.rows})
                if span else {}),
    )
