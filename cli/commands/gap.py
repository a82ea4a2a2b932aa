"""`costgap gap A B` and `costgap targets`: the cost model from the command line.

    costgap targets --window 30d          # the cost of measuring per target and month, the cost table, then
                                          # whether each server is well used (--json: per row, all three)
    costgap gap lambda-gpu-1x-a10 lambda-gpu-1x-h100-sxm5 --window 30d --billing on_demand --json
    costgap gap A B --between 2026-10-01..2026-10-31 --and 2026-11-01..2026-11-30
    costgap tiers --tokens 1e10 --kwh-price 0.12 [--currency EUR --billing monthly --f 0.25] [--catalog vms.csv]

`gap` prints both costs per 1M tokens, the gap with its 90% interval, and the price, throughput and
reliability terms, which sum exactly to ln(C_A/C_B); then the significant throughput shifts at
environment changes for either target. `--json` prints the same dict as tasks.cost.table.gap.
A cost built on a price last confirmed more than the stale limit before the window's end says so on
its own line ("STALE price: confirmed N d before the window's end"); today's price has its own flag on
the "today" line. The ages come from tasks.cost.rules.price_ages, named for what they are judged against.
A cost built on runs whose steady-state rule did not converge says so on its line too ("UNSTABLE: n of m
runs did not settle, window spread s%"); a row without a cost says why (no price, every attempt failed,
or a fine-tune that failed or was not applicable).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import List, Optional

import typer

from runtime.settings import warehouse_path
from tasks.cost.model import F_LOST
from tasks.cost.rules import WINDOW_DAYS
from tasks.errors import UserError

WAREHOUSE_HELP = "DuckDB file (default: $COSTGAP_WAREHOUSE, then ./costgap.duckdb)."
BILLING_HELP = "on_demand | monthly | yearly | spot, or 'target' for each target's own billing_mode."


def parse_window(text: str) -> float:
    """'30d' -> 30.0 days, '2w' -> 14.0; a bare number is days."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([dw]?)\s*", text or "")
    if not m or float(m.group(1)) <= 0:
        raise UserError(f"--window {text!r}: expected a positive number of days like 30d or 2w")
    return float(m.group(1)) * (7 if m.group(2) == "w" else 1)


def _range(text: str, name: str) -> tuple[datetime, datetime]:
    from tasks.pricing.base import utc

    parts = (text or "").split("..")
    if len(parts) != 2:
        raise UserError(f"{name} {text!r}: expected START..END, e.g. 2026-10-01..2026-10-31")
    start, end = (utc(p, where=name, field=name) for p in parts)
    if end <= start:
        raise UserError(f"{name} {text!r}: END must be after START")
    return start, end


def _billing(text: str) -> Optional[str]:
    return None if text == "target" else text


def _lost_fraction(checkpoint_every: Optional[float], f: float) -> float:
    from tasks.cost.model import lost_fraction

    try:
        return lost_fraction(checkpoint_every, f)
    except ValueError as e:
        raise UserError(f"--checkpoint-every: {e}") from None


WINDOW_DEFAULT = f"{WINDOW_DAYS:g}d"
WINDOW_HELP = ("Trailing window: 30d, 2w, ... It ends at --as-of, else at the newest run in the warehouse "
               "(as the report's does).")
F_HELP = (f"Fraction of an attempt's work lost per failure (default {F_LOST:g}: half, on average, without "
          "checkpoints; c/2 with checkpoints every c of the job).")


def _pct(x: float) -> str:
    return f"{x:+.1%}"


def _show_gap(res: dict) -> None:
    a, b = res["components"]["a"], res["components"]["b"]
    cur = res["currency"]
    typer.echo(f"gap {res['a']} vs {res['b']}  preset {res['preset']}  billing {res['billing'] or 'per target'}  "
               f"window {res['window']['start'][:10]}..{res['window']['end'][:10]}")
    for name, c in ((res["a"], a), (res["b"], b)):
        typer.echo(f"  {name}: {c['cost_per_mtok']:.4g} {cur}/1M tokens (90% {c['cost_lo']:.4g}..{c['cost_hi']:.4g})"
                   f"  P {c['price_per_hour']:.4g} {cur}/h (window blend)  X {c['tokens_per_s']:.4g} tokens/s "
                   f"({c['runs']} runs)  p {c['p']:.3f} ({c['failed_attempts']}/{c['attempts']})  R {c['R']:.4f}"
                   f"{_window_flag(c)}{_unstable_flag(c)}")
        typer.echo(f"    {_today(c, cur)}")
    typer.echo(f"  gap C_A/C_B - 1 = {_pct(res['gap'])}  (90% {_pct(res['gap_lo'])}..{_pct(res['gap_hi'])})")
    t = res["terms"]
    typer.echo(f"  ln(C_A/C_B) = {res['ln_ratio']:.6f} = price {t['price']:.6f} + throughput {t['throughput']:.6f}"
               f" + reliability {t['reliability']:.6f}")
    for ch in res.get("changes", []):
        typer.echo(f"  change: {ch['summary']}")


def _window_flag(c: dict) -> str:
    """The stale flag of the price a window's cost is built on, for the line that shows that cost."""
    if not c.get("price_stale_at_window_end"):
        return ""
    return f"  STALE price: confirmed {c['price_age_days_at_window_end']} d before the window's end"


def _unstable_flag(c: dict) -> str:
    """The flag of a cost built on fine-tunes whose steady-state rule did not converge, with their window spread."""
    if not c.get("unstable"):
        return ""
    spread = f", window spread {c['window_spread']:.1%}" if c.get("window_spread") is not None else ""
    return f"  UNSTABLE: {c['unstable_runs']} of {c['runs']} runs did not settle{spread}"


def _today(c: dict, cur: str) -> str:
    """Today's price and the cost at it, labelled, with the price's age and stale flag."""
    if c.get("price_now_per_hour") is None:
        return "today: no price in force"
    stale = " STALE" if c["price_stale"] else ""
    return (f"today: {c['price_now_per_hour']:.4g} {cur}/h -> {c['cost_now_per_mtok']:.4g} {cur}/1M tokens "
            f"(price confirmed {c['price_age_days']} d ago{stale})")


def gap_cmd(
    a: str = typer.Argument(..., help="Target A (the one whose gap is reported)."),
    b: str = typer.Argument(..., help="Target B (the reference)."),
    window: str = typer.Option(WINDOW_DEFAULT, "--window", help=WINDOW_HELP),
    billing: str = typer.Option("on_demand", "--billing", help=BILLING_HELP),
    currency: str = typer.Option("USD", "--currency", help="Reporting currency (dated FX rates)."),
    f: float = typer.Option(F_LOST, "--f", help=F_HELP),
    checkpoint_every: Optional[float] = typer.Option(None, "--checkpoint-every", help="Checkpoint interval as a "
                                                     "fraction c of the job: sets f = c/2 (overrides --f)."),
    preset: Optional[str] = typer.Option(None, "--preset", help="Workload preset (default: the shared one with "
                                         "the most runs)."),
    as_of: Optional[str] = typer.Option(None, "--as-of", help="End of the window (default: the newest run)."),
    between: Optional[str] = typer.Option(None, "--between", help="Window 1 START..END: with --and, splits the "
                                          "change of the gap between two windows."),
    and_: Optional[str] = typer.Option(None, "--and", help="Window 2 START..END (with --between)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
) -> None:
    """Effective cost per 1M tokens of A and B, the gap, its interval, and what it is made of."""
    from tasks.cost import table as cost
    from tasks.pricing.base import utc
    from warehouse.db import reading

    f = _lost_fraction(checkpoint_every, f)
    with reading(warehouse_path(warehouse)) as con:
        if between or and_:
            if not (between and and_):
                raise UserError("--between and --and: give both windows, e.g. --between 2026-10-01..2026-10-31 "
                                "--and 2026-11-01..2026-11-30")
            res = cost.gap_between_windows(con, a, b, _range(between, "--between"), _range(and_, "--and"),
                                           billing=_billing(billing), currency=currency, f=f, preset=preset)
        else:
            end = utc(as_of, where="--as-of", field="as_of") if as_of else None
            res = cost.gap(con, a, b, window_days=parse_window(window), billing=_billing(billing),
                           currency=currency, f=f, preset=preset, as_of=end)
    if as_json:
        typer.echo(json.dumps(res, indent=2, default=str, sort_keys=True))
    elif between:
        for key in ("window1", "window2"):
            typer.echo(f"[{key}]")
            _show_gap(res[key])
        d = res["delta"]
        typer.echo(f"change of ln(C_A/C_B): {d['ln_ratio']:+.6f} = price {d['terms']['price']:+.6f} + throughput "
                   f"{d['terms']['throughput']:+.6f} + reliability {d['terms']['reliability']:+.6f}")
        for side in ("a", "b"):
            for ch in res["env_changes"][side]:
                typer.echo(f"  throughput term: {res[side]} {ch['field']}: {ch['before']} -> {ch['after']}")
    else:
        _show_gap(res)


def targets_cmd(
    window: str = typer.Option(WINDOW_DEFAULT, "--window", help=WINDOW_HELP),
    billing: str = typer.Option("on_demand", "--billing", help=BILLING_HELP),
    currency: str = typer.Option("USD", "--currency", help="Reporting currency (dated FX rates)."),
    f: float = typer.Option(F_LOST, "--f", help=F_HELP),
    checkpoint_every: Optional[float] = typer.Option(None, "--checkpoint-every", help="Checkpoint interval as a "
                                                     "fraction c of the job: sets f = c/2 (overrides --f)."),
    as_of: Optional[str] = typer.Option(None, "--as-of", help="End of the window (default: the newest run)."),
    as_json: bool = typer.Option(False, "--json", help="Print rows as JSON."),
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
) -> None:
    """Effective cost per 1M tokens per (target, preset) over the window, cheapest first, with today's price."""
    from tasks.cost.measuring import monthly as measuring_monthly
    from tasks.cost.measuring import priced_runs as measuring_runs
    from tasks.cost.shared import shared_costs
    from tasks.cost.table import COLUMNS, cost_table, options
    from tasks.cost.well_used import verdicts
    from tasks.pricing.base import utc
    from warehouse.db import reading

    f = _lost_fraction(checkpoint_every, f)
    end = utc(as_of, where="--as-of", field="as_of") if as_of else None
    with reading(warehouse_path(warehouse)) as con:
        frame = cost_table(con, window_days=parse_window(window), billing=_billing(billing), currency=currency, f=f,
                           as_of=end)
        measured = measuring_monthly(measuring_runs(con, currency))
        judged = verdicts(con, end)
        shared = shared_costs(con, options(_billing(billing), currency, f), end)
    rows = frame.select(COLUMNS).to_dicts()
    if as_json:  # each row also carries its target's verdicts, shared cost and cost of measuring (issue 45)
        for r in rows:
            r.update(well_used=judged.get(r["target"], []), shared=[x for x in shared if x["target"] == r["target"]],
                     measuring=[m for m in measured if m["target"] == r["target"]])
        typer.echo(json.dumps(rows, indent=2, default=str))
        return
    _measuring_block(measured, currency)
    if not rows:
        typer.echo("no successful fine-tune runs in the window: costgap run, or costgap ingest PATH")
    else:
        first = rows[0]
        typer.echo(f"window {first['window_start']:%Y-%m-%d %H:%M}..{first['window_end']:%Y-%m-%d %H:%M} UTC "
                   f"(ends at the newest run unless --as-of); cost from each run's price as of the run")
    for r in rows:
        if r["cost_per_mtok"] is None:
            x = f"   X {r['tokens_per_s']:.4g} tokens/s" if r["tokens_per_s"] is not None else ""
            typer.echo(f"{r['target']:<28} {r['preset']:<10} no cost: {r['no_cost_reason']}{x}{_unstable_flag(r)}")
            continue
        typer.echo(f"{r['target']:<28} {r['preset']:<10} {r['cost_per_mtok']:>10.4g} {currency}/1M tokens "
                   f"(90% {r['cost_lo']:.4g}..{r['cost_hi']:.4g})  P {r['price_per_hour']:.4g}/h  "
                   f"X {r['tokens_per_s']:.4g} tok/s  p {r['p']:.3f} ({r['failed_attempts']}/{r['attempts']})  "
                   f"R {r['R']:.3f}{_window_flag(r)}{_unstable_flag(r)}")
        typer.echo(f"{'':<39} {_today(r, currency)}")
    _well_used_lines(judged)


def _measuring_block(measured: list[dict], currency: str) -> None:
    """What measuring cost per target and month (tasks/cost/measuring.py), printed before the cost table."""
    from tasks.cost.measuring import lines

    if measured:
        typer.echo("cost of measuring (each probe run's instance-seconds at the price in force then), "
                   "beside keeping the instance up all month:")
        for line in lines(measured, currency):
            typer.echo(f"  {line}")
        typer.echo("")


def _well_used_lines(judged: dict[str, list[dict]]) -> None:
    """One line per target: "Is this server well used?" as pass / fail / not measured counts (--json: each rule)."""
    from tasks.cost.well_used import FAIL, PASS

    if judged:
        typer.echo("\nis each server well used? (--json: each rule's value, threshold and source figure)")
    for target, vs in judged.items():
        failed = [v["rule"] for v in vs if v["verdict"] == FAIL]
        passed = sum(v["verdict"] == PASS for v in vs)
        which = f" ({', '.join(failed)})" if failed else ""
        typer.echo(f"  {target}: {passed} pass, {len(failed)} fail{which}, {len(vs) - passed - len(failed)} not measured")


def tiers_cmd(
    window: str = typer.Option(WINDOW_DEFAULT, "--window", help=WINDOW_HELP),
    billing: str = typer.Option("on_demand", "--billing", help=BILLING_HELP),
    currency: str = typer.Option("USD", "--currency", help="Reporting currency (dated FX rates)."),
    f: float = typer.Option(F_LOST, "--f", help=F_HELP),
    checkpoint_every: Optional[float] = typer.Option(None, "--checkpoint-every", help="Checkpoint interval as a "
                                                     "fraction c of the job: sets f = c/2 (overrides --f)."),
    train_tokens: float = typer.Option(1e9, "--tokens", help="Tokens to train, for hours and cost to train."),
    kwh_price: float = typer.Option(0.15, "--kwh-price", help="Electricity price per kWh in the reporting "
                                    "currency (default 0.15: an ASSUMED round tariff)."),
    catalog: Optional[List[str]] = typer.Option(None, "--catalog", help="A SkyPilot v7 vms.csv whose GPU instance "
                                                "types join the candidates (repeatable)."),
    targets_file: Optional[str] = typer.Option(None, "--targets-file", help="Targets file (default: "
                                               "$COSTGAP_TARGETS, then deploy/targets.toml where present)."),
    as_json: bool = typer.Option(False, "--json", help="Print rows as JSON."),
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
) -> None:
    """Per model-size tier (<=7B, 7-13B, >13B) and training mode (full, LoRA): which instance types fit, at what
    cost; past one card measured, else predicted from the interconnect. Plus derived figures per measurement."""
    from cli.commands.estimate import _extra
    from tasks.cost.derived import derived
    from tasks.estimate.tiers import tier_recommendations
    from warehouse.db import reading

    kw = dict(window_days=parse_window(window), billing=_billing(billing), currency=currency,
              f=_lost_fraction(checkpoint_every, f))
    extra = _extra(targets_file, catalog or [])
    with reading(warehouse_path(warehouse)) as con:
        tiers = tier_recommendations(con, extra=extra, train_tokens=train_tokens, **kw).to_dicts()
        extra_rows = derived(con, train_tokens=train_tokens, price_per_kwh=kwh_price, **kw).to_dicts()
    if as_json:
        typer.echo(json.dumps({"tiers": tiers, "derived": extra_rows}, indent=2, default=str))
        return
    _tier_lines(tiers, currency, train_tokens)
    for r in extra_rows:
        if r["tokens_per_s"] is None:  # a preset whose fine-tunes all failed or were not applicable
            typer.echo(f"  {r['target']}/{r['preset']}: no cost: {r['no_cost_reason']}")
            continue
        kwh = (f"{r['kwh_per_mtok']:.4g} kWh/1M tokens = {r['electricity_cost_per_mtok']:.4g} {currency}"
               if r["kwh_per_mtok"] is not None else "energy not measured")
        hours = f"{r['hours_to_train']:,.1f} h" if r["hours_to_train"] is not None else "?"
        money = f"{r['cost_to_train']:,.2f} {currency}" if r["cost_to_train"] is not None else "no price"
        stale = _window_flag(r) if r["cost_to_train"] is not None else ""  # the cost to train is C x N
        typer.echo(f"  {r['target']}/{r['preset']}: {r['tokens_per_gpu_day']:,.0f} tokens/GPU-day; {train_tokens:,.0f} "
                   f"tokens in {hours}, {money}; {kwh}{stale}{_unstable_flag(r)} (measured)")


def _tier_lines(tiers: list[dict], currency: str, train_tokens: float) -> None:
    """Per (tier, mode): the cheapest fitting type first (*), each row labelled measured or predicted."""
    from tasks.estimate.evidence import sig

    group = None
    for r in tiers:
        if (r["tier"], r["mode"]) != group:
            group = (r["tier"], r["mode"])
            typer.echo(f"{r['tier']} ({r['tier_params'] / 1e9:,.0f}B), {r['mode']} fine-tune:")
        where = f"{r['instance_type']} ({r['provider']}, {r['gpus']}x {r['gpu']})"
        if r["cost_per_mtok"] is None:
            typer.echo(f"    {where}: {'does not fit' if r['fits'] is False else 'no cost'}: {r['reason']}")
            continue
        scaling = ""
        if r["gpus"] > 1 and r["scaling"] is not None:
            scaling = (f"; {r['strategy'] or ''} efficiency {r['scaling']:.2f} (90% {r['scaling_lo']:.2f}.."
                       f"{r['scaling_hi']:.2f}), {r['scaling_label']}")
        flags = (f"; {_window_flag(r).strip()}" if _window_flag(r) else "") + (
            f"; {_unstable_flag(r).strip()}" if r.get("unstable") else "")
        typer.echo(f"  {'*' if r['recommended'] else ' '} {where}: {sig(r['cost_per_mtok'])} {currency}/1M tokens "
                   f"(90% {sig(r['cost_lo'])}..{sig(r['cost_hi'])}), "
                   f"{'from its measured tokens/s' if r['status'] == 'measured' else 'ESTIMATED tokens/s'}"
                   f"{' (MFU ASSUMED equal)' if r['assumed'] else ''}"
                   f"{scaling}; {train_tokens:,.0f} tokens in {r['hours_to_train']:,.1f} h for "
                   f"{r['cost_to_train']:,.2f} {currency}{flags}")


def register(app: typer.Typer) -> None:
    app.command("gap")(gap_cmd)
    app.command("targets")(targets_cmd)
    app.command("tiers")(tiers_cmd)
