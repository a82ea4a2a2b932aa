"""Cost figures from the warehouse: the cost table, the gap between two targets, the gap over time.

    costgap targets --window 30d        # cost_table, cheapest first
    costgap gap A B --json              # gap with its interval and the exact log decomposition

Inputs come from SQL (tasks.cost.inputs), every formula from tasks.cost.model, and every "which
figure" rule (default window, preset for a pair, today's price) from tasks.cost.rules. Every
surface (CLI, report, artifact, tier recommendation) reads its figures from the functions here.
No measurement vanishes (issue 37.5): a fine-tune whose steady-state rule did not converge (status
unstable) counts as an ok one does, flagged `unstable` with its window spread (window_spread(), the
one place it is computed), which widens X's draws and so the interval; a (target, preset) whose
fine-tunes in the window all failed or were not applicable has a row without a cost (`unmeasured`
rows of cost_table) and `no_cost_reason` says why, as it does for a row without a price.
"""

from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl

from tasks.cost import rules
from tasks.cost.changepoint import ENV_FIELDS, detect
from tasks.cost.inputs import Span, known_targets, price_now, window_inputs
from tasks.cost.model import CostOptions, Figure, effective_cost, figure, gap_figure, row_rng
from tasks.cost.verdict import gap_verdict
from tasks.errors import UserError
from tasks.probe.finetune.steady import steady_spread
from warehouse import sql

# The figures of one (target, preset) over a window, in the order the CLI's --json and the headline use.
COLUMNS = ["target", "preset", "cost_per_mtok", "cost_lo", "cost_hi", "no_cost_reason", "currency",
           "price_per_hour", "price_effective_from", "price_source",
           "price_now_per_hour", "cost_now_per_mtok", "price_now_effective_from", "price_age_days", "price_stale",
           "price_age_days_at_window_end", "price_stale_at_window_end", "price_age_days_today", "price_stale_today",
           "tokens_per_s", "runs", "unstable", "unstable_runs", "window_spread",
           "failed_attempts", "attempts", "p", "R", "last_run_at",
           "window_start", "window_end"]
EXTRA = ["period", "priced_runs", "cv_within", "gpu_count", "mfu", "kwh_per_mtok", "scaling_efficiency",
         "params_total", "n_gpus", "mode", "price_last_seen_at"]
_TYPES = {"target": pl.String, "preset": pl.String, "currency": pl.String, "price_source": pl.String,
          "mode": pl.String, "no_cost_reason": pl.String, "unstable": pl.Boolean, "unstable_runs": pl.Int64,
          "price_stale": pl.Boolean, "price_stale_at_window_end": pl.Boolean,
          "price_stale_today": pl.Boolean, "price_age_days_at_window_end": pl.Int64, "price_age_days_today": pl.Int64,
          "runs": pl.Int64, "attempts": pl.Int64,
          "failed_attempts": pl.Int64, "price_age_days": pl.Int64, "period": pl.Int64, "priced_runs": pl.Int64,
          "gpu_count": pl.Int64, "n_gpus": pl.Int64, "params_total": pl.Int64,
          **{c: pl.Datetime("us", "UTC") for c in ("price_effective_from", "price_now_effective_from",
                                                   "last_run_at", "window_start", "window_end",
                                                   "price_last_seen_at")}}


def options(billing: str | None = "on_demand", currency: str = "USD", f: float | None = None,
            stale_after_days: float | None = None, draws: int | None = None, seed: int = 0) -> CostOptions:
    """CostOptions from keyword arguments, the model's defaults where one is not given."""
    given = {k: v for k, v in (("f", f), ("stale_after_days", stale_after_days), ("draws", draws)) if v is not None}
    return CostOptions(billing=billing, currency=currency, seed=seed, **given)


def window_spread(windows: list[float] | None) -> float | None:
    """One fine-tune's window spread: (max - min) / median of its steady part's window tokens/s, the figure
    its steady-state rule bounds at 1% (tasks/probe/finetune/steady.py steady_spread over the bundle's
    window_tokens_per_s). The one place costgap computes it; None below 3 windows."""
    return steady_spread(list(windows or []))


def no_cost_reason(price_per_hour: float | None, rerun: float | None) -> str | None:
    """Why a measured (target, preset) has no cost, in the words every surface shows; None when it has one."""
    if price_per_hour is None:
        return "no price as of its runs"
    return "every attempt failed" if rerun is None else None


def _row(r: dict, fig: Figure, span: Span, now: dict | None, today: datetime, opts: CostOptions,
         spreads: list[float | None]) -> dict:
    start, end = span.bounds(r["period"])
    price_now_ = now["price_per_hour"] if now else None
    known = [x for x in spreads if x is not None]
    return {
        "target": r["target"], "preset": r["preset"], "cost_per_mtok": fig.cost_per_mtok, "cost_lo": fig.cost_lo,
        "cost_hi": fig.cost_hi, "no_cost_reason": no_cost_reason(fig.price_per_hour, fig.R),
        "currency": opts.currency, "price_per_hour": fig.price_per_hour,
        "price_effective_from": r["price_effective_from"], "price_source": r["price_source"],
        "price_now_per_hour": price_now_,
        "cost_now_per_mtok": (effective_cost(price_now_, fig.tokens_per_s, fig.R)
                              if price_now_ is not None and fig.R is not None else None),
        "price_now_effective_from": now["effective_from"] if now else None,
        **rules.price_ages(r.get("price_last_seen_at") if fig.price_per_hour is not None else None, end,
                           now["last_seen_at"] if now else None, today, opts),
        "tokens_per_s": fig.tokens_per_s, "runs": r["runs"], "unstable": bool(r["unstable_runs"]),
        "unstable_runs": r["unstable_runs"], "window_spread": max(known) if known else None,
        "failed_attempts": fig.failed_attempts,
        "attempts": fig.attempts, "p": fig.p, "R": fig.R, "last_run_at": r["last_run_at"],
        "window_start": start, "window_end": end, **{k: r[k] for k in EXTRA if k in r},
    }


def _unmeasured_row(u: dict, span: Span, opts: CostOptions) -> dict:
    """A (target, preset) whose fine-tunes in the window all failed or were not applicable: no cost, and why."""
    start, end = span.bounds(u["period"])
    what = "failed" if u["finetune_status"] == "failed" else "not applicable"
    why = f"fine-tune {what}" + (f": {u['finetune_message']}" if u.get("finetune_message") else "")
    return {**{c: None for c in COLUMNS + EXTRA}, "target": u["target"], "preset": u["preset"],
            "no_cost_reason": why, "currency": opts.currency, "runs": 0, "unstable": False, "unstable_runs": 0,
            "last_run_at": u["last_run_at"], "window_start": start, "window_end": end, "period": u["period"]}


def costs(con: duckdb.DuckDBPyConnection, span: Span, opts: CostOptions, targets: list[str] | None = None,
          today: datetime | None = None, unmeasured: bool = False) -> tuple[list[dict], dict[tuple, Figure]]:
    """Every (period, target, preset) of the span: (rows of COLUMNS + EXTRA, {(period, target, preset): Figure}).
    unmeasured: also a row (no cost, no Figure) per (period, target, preset) whose fine-tunes all failed or were
    not applicable, `no_cost_reason` saying so (cost_unmeasured.sql)."""
    today = today or rules.today()
    inputs = window_inputs(con, span, opts, targets)
    now = price_now(con, today, opts)
    rows, figs = [], {}
    for r in inputs:
        spreads = [window_spread(w) for w in r["unstable_windows"] or []]
        fig = figure(r["price_per_hour"], r["samples"], r["failed_attempts"], r["attempts"], r["cv_within"], opts,
                     row_rng(opts, r["target"], r["preset"]), spreads=[x or 0.0 for x in spreads])
        rows.append(_row(r, fig, span, now.get(r["target"]), today, opts, spreads))
        figs[(r["period"], r["target"], r["preset"])] = fig
    if unmeasured:
        rows += [_unmeasured_row(u, span, opts)
                 for u in sql.rows(con, "cost_unmeasured", {"start": span.start, "end": span.end, "targets": targets})]
    return rows, figs


def frame(rows: list[dict]) -> pl.DataFrame:
    """Rows of COLUMNS + EXTRA as a typed frame (an empty one keeps the columns)."""
    cols = COLUMNS + EXTRA
    schema = {c: _TYPES.get(c, pl.Float64) for c in cols}
    return pl.DataFrame([{c: r.get(c) for c in cols} for r in rows], schema=schema)


def cheapest_first(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r["cost_per_mtok"] is None, r["cost_per_mtok"] or 0.0, r["target"], r["preset"]))


def cost_table(con: duckdb.DuckDBPyConnection, *, as_of: datetime | None = None,
               window_days: float = rules.WINDOW_DAYS, billing: str | None = "on_demand", currency: str = "USD",
               f: float | None = None, stale_after_days: float | None = None, draws: int | None = None,
               seed: int = 0, targets: list[str] | None = None, today: datetime | None = None,
               unmeasured: bool = True) -> pl.DataFrame:
    """One row per (target, preset) over the default window: P, X, p, R, C with its 90% interval, today's
    price and the cost at it; cheapest first, no cost last (with `no_cost_reason`; `unmeasured`: the presets
    whose fine-tunes all failed or were not applicable too)."""
    rows, _ = cost_rows(con, as_of=as_of, window_days=window_days, billing=billing, currency=currency, f=f,
                        stale_after_days=stale_after_days, draws=draws, seed=seed, targets=targets, today=today,
                        unmeasured=unmeasured)
    return frame(rows)


def cost_rows(con: duckdb.DuckDBPyConnection, *, as_of: datetime | None = None,
              window_days: float = rules.WINDOW_DAYS, billing: str | None = "on_demand", currency: str = "USD",
              f: float | None = None, stale_after_days: float | None = None, draws: int | None = None,
              seed: int = 0, targets: list[str] | None = None, today: datetime | None = None,
              unmeasured: bool = True) -> tuple[list[dict], dict[tuple, Figure]]:
    """cost_table's rows (cheapest first) with their figures, for a caller that also needs gaps and verdicts."""
    opts = options(billing, currency, f, stale_after_days, draws, seed)
    span = rules.window(con, as_of, window_days)
    if span is None:
        return [], {}
    rows, figs = costs(con, span, opts, targets, today, unmeasured)
    return cheapest_first(rows), figs


def _check_known(con: duckdb.DuckDBPyConnection, *names: str) -> None:
    known = known_targets(con)
    for t in names:
        if t not in known:
            raise UserError(f"target {t!r}: unknown; known targets: {', '.join(sorted(known)) or 'none'}")


def _costed(row: dict, preset: str, opts: CostOptions) -> None:
    if row["cost_per_mtok"] is None:
        raise UserError(f"target {row['target']!r}: no cost for preset {preset!r}: {row['no_cost_reason']} "
                        f"(billing {opts.billing or 'per target'}); see `costgap prices import`")


KEEP = ("price_per_hour", "price_effective_from", "price_source", "price_now_per_hour", "cost_now_per_mtok",
        "price_now_effective_from", "price_age_days", "price_stale", "price_age_days_at_window_end",
        "price_stale_at_window_end", "price_age_days_today", "price_stale_today", "tokens_per_s", "runs", "attempts",
        "failed_attempts", "p", "R", "cost_per_mtok", "cost_lo", "cost_hi", "cv_within", "last_run_at",
        "unstable", "unstable_runs", "window_spread")


def gap_window(con: duckdb.DuckDBPyConnection, a: str, b: str, span: Span, opts: CostOptions,
               preset: str | None = None, changes: bool = True, today: datetime | None = None) -> dict:
    """gap(A, B) over one window: costs, gap, 90% interval, exact decomposition, change findings."""
    _check_known(con, a, b)
    rows, figs = costs(con, span, opts, [a, b], today)
    runs = {t: {r["preset"]: r["runs"] for r in rows if r["target"] == t} for t in (a, b)}
    chosen = rules.pick_preset(runs, a, b, preset)
    ra, rb = ({**r} for t in (a, b) for r in rows if r["target"] == t and r["preset"] == chosen)
    for r in (ra, rb):
        _costed(r, chosen, opts)
    g = gap_figure(figs[(0, a, chosen)], figs[(0, b, chosen)])
    cheap, dear = cheapest_first([ra, rb])  # the verdict the site's way round: the dearer against the cheaper
    v = gap_figure(figs[(0, dear["target"], chosen)], figs[(0, cheap["target"], chosen)])
    start, end = span.bounds(0)
    found = detect(con, targets=[a, b], preset=chosen, until=end) if changes else []
    return {"a": a, "b": b, "preset": chosen, "currency": opts.currency, "billing": opts.billing,
            "window": {"start": start.isoformat(), "end": end.isoformat()},
            "cost_a": ra["cost_per_mtok"], "cost_b": rb["cost_per_mtok"], "gap": g.gap, "gap_lo": g.gap_lo,
            "gap_hi": g.gap_hi, "ln_ratio": g.ln_ratio, "terms": g.terms, "verdict": gap_verdict(v.gap_lo, v.gap_hi),
            "stale": bool(ra["price_stale"] or rb["price_stale"]),
            "stale_at_window_end": bool(ra["price_stale_at_window_end"] or rb["price_stale_at_window_end"]),
            "unstable": bool(ra["unstable"] or rb["unstable"]),
            "components": {"a": {k: ra[k] for k in KEEP}, "b": {k: rb[k] for k in KEEP}}, "changes": found}


def gap(con: duckdb.DuckDBPyConnection, a: str, b: str, *, window_days: float = rules.WINDOW_DAYS,
        billing: str | None = "on_demand", currency: str = "USD", f: float | None = None,
        as_of: datetime | None = None, preset: str | None = None, stale_after_days: float | None = None,
        draws: int | None = None, seed: int = 0, today: datetime | None = None) -> dict:
    """gap(A, B) = C_A / C_B - 1 over the default window, with terms summing to ln(C_A/C_B)."""
    opts = options(billing, currency, f, stale_after_days, draws, seed)
    span = rules.window(con, as_of, window_days)
    if span is None:
        raise UserError("no runs in the warehouse yet: costgap run, or costgap ingest PATH")
    return gap_window(con, a, b, span, opts, preset, today=today)


def span_of(window: tuple[datetime, datetime]) -> Span:
    """The one-period span (start, end]."""
    start, end = window
    return Span(end, (end - start).total_seconds() / 86400.0)


def env_changes(con: duckdb.DuckDBPyConnection, target: str, window1: tuple, window2: tuple) -> list[dict]:
    """Environment fields (driver, CUDA, cuDNN, torch, image) whose known values differ between two windows
    (a field neither window's runs recorded, or only one did, is not a change)."""
    def values(w) -> dict[str, list]:
        got = sql.frame(con, "cost_env_history", {"since": w[0], "until": w[1], "targets": [target], "preset": None})
        return {f: sorted({v for v in got[f].to_list()} - {None}) if got.height else [] for f in ENV_FIELDS}

    v1, v2 = values(window1), values(window2)
    return [{"field": f, "before": ", ".join(map(str, v1[f])) or None, "after": ", ".join(map(str, v2[f])) or None}
            for f in ENV_FIELDS if v1[f] and v2[f] and v1[f] != v2[f]]


def gap_between_windows(con: duckdb.DuckDBPyConnection, a: str, b: str, window1: tuple, window2: tuple, *,
                        billing: str | None = "on_demand", currency: str = "USD", f: float | None = None,
                        preset: str | None = None, stale_after_days: float | None = None,
                        draws: int | None = None, seed: int = 0) -> dict:
    """How the gap moved from window1 to window2, split into the same three terms (exactly).

    delta.ln_ratio = delta.price + delta.throughput + delta.reliability; env_changes lists, per target,
    the environment fields that differ between the windows (read against the throughput term).
    """
    opts = options(billing, currency, f, stale_after_days, draws, seed)
    g1 = gap_window(con, a, b, span_of(window1), opts, preset, changes=False)
    g2 = gap_window(con, a, b, span_of(window2), opts, preset or g1["preset"], changes=False)
    delta_terms = {k: g2["terms"][k] - g1["terms"][k] for k in g1["terms"]}
    return {"a": a, "b": b, "preset": g1["preset"], "currency": currency, "billing": billing,
            "window1": g1, "window2": g2,
            "delta": {"gap": g2["gap"] - g1["gap"], "ln_ratio": g2["ln_ratio"] - g1["ln_ratio"], "terms": delta_terms},
            "env_changes": {"a": env_changes(con, a, window1, window2), "b": env_changes(con, b, window1, window2)},
            "changes": detect(con, targets=[a, b], preset=g1["preset"], since=window1[0], until=window2[1])}


def leaders(rows: list[dict], figs: dict[tuple, Figure]) -> list[dict]:
    """Per (period, preset): the cheapest costed target and the runner-up's gap to it with its interval
    (cheapest = lowest C over the window; ties by name). One row per (period, preset) with a cost."""
    out = []
    for key in sorted({(r["period"], r["preset"]) for r in rows}):
        ranked = cheapest_first([r for r in rows if (r["period"], r["preset"]) == key and r["cost_per_mtok"] is not None])
        if not ranked:
            continue
        best = ranked[0]
        row = {"period": key[0], "preset": key[1], "cheapest": best["target"], "cost_per_mtok": best["cost_per_mtok"],
               "cost_lo": best["cost_lo"], "cost_hi": best["cost_hi"], "cost_now_per_mtok": best["cost_now_per_mtok"],
               "currency": best["currency"], "runner_up": None, "gap": None, "gap_lo": None, "gap_hi": None,
               "targets": len(ranked)}
        if len(ranked) > 1:
            second = ranked[1]
            g = gap_figure(figs[(key[0], second["target"], key[1])], figs[(key[0], best["target"], key[1])])
            row.update(runner_up=second["target"], runner_up_cost_per_mtok=second["cost_per_mtok"], gap=g.gap,
                       gap_lo=g.gap_lo, gap_hi=g.gap_hi)
        out.append(row)
    return out


def versus_cheapest(rows: list[dict], figs: dict[tuple, Figure]) -> dict[tuple, dict]:
    """Per (period, target, preset) costed: the preset's cheapest target, and for every other one its gap to
    it with the 90% interval and the verdict (tasks.cost.verdict), as leaders() gives the runner-up's."""
    out = {}
    for lead in leaders(rows, figs):
        key = (lead["period"], lead["preset"])
        for r in rows:
            if (r["period"], r["preset"]) != key or r["cost_per_mtok"] is None:
                continue
            row = {"cheapest": lead["cheapest"], "gap": None, "gap_lo": None, "gap_hi": None, "verdict": None}
            if r["target"] != lead["cheapest"]:
                g = gap_figure(figs[(key[0], r["target"], key[1])], figs[(key[0], lead["cheapest"], key[1])])
                row.update(gap=g.gap, gap_lo=g.gap_lo, gap_hi=g.gap_hi, verdict=gap_verdict(g.gap_lo, g.gap_hi))
            out[(key[0], r["target"], key[1])] = row
    return out


def gap_history(rows: list[dict], figs: dict[tuple, Figure], baseline: str) -> list[dict]:
    """The gap of every target against `baseline`, per (period, preset) both costed: one row each, with
    the 90% interval and the three log terms that add up to ln(1 + gap). `rows`/`figs` from `costs`."""
    by_key = {(r["period"], r["target"], r["preset"]): r for r in rows}
    out = []
    for (period, target, preset), r in sorted(by_key.items(), key=lambda kv: (-kv[0][0], kv[0][2], kv[0][1])):
        base = by_key.get((period, baseline, preset))
        if target == baseline or base is None or r["cost_per_mtok"] is None or base["cost_per_mtok"] is None:
            continue
        g = gap_figure(figs[(period, target, preset)], figs[(period, baseline, preset)])
        out.append({
            "period_start": r["window_start"], "period_end": r["window_end"], "preset": preset, "target": target,
            "baseline": baseline, "cost_per_mtok": r["cost_per_mtok"], "baseline_cost_per_mtok": base["cost_per_mtok"],
            "gap": g.gap, "gap_lo": g.gap_lo, "gap_hi": g.gap_hi, "ln_price": g.terms["price"],
            "ln_throughput": g.terms["throughput"], "ln_reliability": g.terms["reliability"],
            "currency": r["currency"], "price_per_hour": r["price_per_hour"],
            "baseline_price_per_hour": base["price_per_hour"], "tokens_per_s": r["tokens_per_s"],
            "baseline_tokens_per_s": base["tokens_per_s"], "p": r["p"], "failed_attempts": r["failed_attempts"],
            "attempts": r["attempts"], "R": r["R"], "baseline_p": base["p"],
            "baseline_failed_attempts": base["failed_attempts"], "baseline_attempts": base["attempts"],
            "baseline_R": base["R"], "runs": r["runs"], "baseline_runs": base["runs"],
        })
    return out
