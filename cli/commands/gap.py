"""`costgap gap A B`, `costgap targets` and `costgap tiers`: the cost model from the command line.

    costgap targets --window 30d          # the cost table grouped by preset, the cost of measuring, then
                                          # whether each server is well used (--json: per row, all three)
    costgap gap lambda-gpu-1x-a10 lambda-gpu-1x-h100-sxm5 --window 30d --billing on_demand --json
    costgap gap A B --between 2026-10-01..2026-10-31 --and 2026-11-01..2026-11-30
    costgap tiers --tokens 1e10 --kwh-price 0.12 [--currency EUR --billing monthly --f 0.25] [--catalog vms.csv]

`gap` prints both costs per 1M tokens, the gap with its 90% interval and its verdict (tasks/cost/verdict.py,
as on the site), and the price, throughput and reliability terms in log points, which sum exactly to
100 x ln(C_A/C_B); then the significant throughput shifts at environment changes for either target.
`--json` prints the same dict as tasks.cost.table.gap. The text of all three is cli/cost_text.py (figures
through cli/format.py). A cost built on a price last confirmed more than the stale limit before the window's
end says so ("STALE price: confirmed N d before the window's end"); today's price has its own flag. A cost
built on runs whose steady-state rule did not converge says so too ("UNSTABLE: n of m runs did not settle,
window spread s%"); a row without a cost says why (no price, every attempt failed, or a fine-tune that failed
or was not applicable). Arguments are refused in the user's words: the flag, the value, what is allowed.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import List, Optional

import typer

from cli import cost_text as text
from cli import format as fmt
from cli import options as opt
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
    return opt.billing(text)


def _lost_fraction(checkpoint_every: Optional[float], f: float) -> float:
    from tasks.cost.model import lost_fraction

    if checkpoint_every is not None and not 0 < checkpoint_every <= 1:
        raise UserError(f"--checkpoint-every {fmt.num(checkpoint_every)}: expected the checkpoint interval as a "
                        "fraction of the job, more than 0 and at most 1 (0.1: a checkpoint every tenth of the job)")
    return lost_fraction(checkpoint_every, opt.fraction(f))


WINDOW_DEFAULT = f"{WINDOW_DAYS:g}d"
WINDOW_HELP = ("Trailing window: 30d, 2w, ... It ends at --as-of, else at the newest run in the warehouse "
               "(as the report's does).")
F_HELP = (f"Fraction of an attempt's work lost per failure (default {F_LOST:g}: half, on average, without "
          "checkpoints; c/2 with checkpoints every c of the job).")


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

    f, currency = _lost_fraction(checkpoint_every, f), opt.currency(currency)
    if a == b:
        raise UserError(f"gap {a} {b}: A and B are the same target; name two targets to compare "
                        "(costgap targets lists them)")
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
        return
    for line in (text.between_lines(res) if between else text.gap_lines(res)):
        typer.echo(line)


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
    from tasks.cost.table import COLUMNS, cost_rows, frame as cost_frame, options, versus_cheapest
    from tasks.cost.well_used import verdicts
    from tasks.pricing.base import utc
    from warehouse.db import reading

    f, currency = _lost_fraction(checkpoint_every, f), opt.currency(currency)
    end = utc(as_of, where="--as-of", field="as_of") if as_of else None
    with reading(warehouse_path(warehouse)) as con:
        ranked, figs = cost_rows(con, window_days=parse_window(window), billing=_billing(billing), currency=currency,
                                 f=f, as_of=end)
        frame = cost_frame(ranked)
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
    for line in text.targets_lines(rows, versus_cheapest(ranked, figs), currency):
        typer.echo(line)
    _measuring_block(measured, currency)
    _well_used_lines(judged)


def _measuring_block(measured: list[dict], currency: str) -> None:
    """What measuring cost per target and month (tasks/cost/measuring.py), printed after the cost table."""
    from tasks.cost.measuring import lines

    if measured:
        typer.echo("")
        typer.echo("cost of measuring (each probe run's instance-seconds at the price in force then), "
                   "beside keeping the instance up all month:")
        for line in lines(measured, currency):
            typer.echo(f"  {line}")


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
    train_tokens: float = typer.Option(1e9, "--tokens", help="Tokens to train, for hours and cost to train "
                                       "(a positive number, e.g. 2000000000)."),
    kwh_price: float = typer.Option(0.15, "--kwh-price", help="Electricity price per kWh in the reporting "
                                    "currency, 0 or more (default 0.15: an ASSUMED round tariff)."),
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

    currency = opt.currency(currency)
    if not train_tokens > 0:
        raise UserError(f"--tokens {fmt.num(train_tokens)}: expected a positive number of tokens to train, "
                        "e.g. 1000000000")
    if not kwh_price >= 0:
        raise UserError(f"--kwh-price {fmt.num(kwh_price)}: expected an electricity price per kWh of 0 or more, "
                        "e.g. 0.12")
    kw = dict(window_days=parse_window(window), billing=_billing(billing), currency=currency,
              f=_lost_fraction(checkpoint_every, f))
    extra = _extra(targets_file, catalog or [])
    with reading(warehouse_path(warehouse)) as con:
        tiers = tier_recommendations(con, extra=extra, train_tokens=train_tokens, **kw).to_dicts()
        extra_rows = derived(con, train_tokens=train_tokens, price_per_kwh=kwh_price, **kw).to_dicts()
    if as_json:
        typer.echo(json.dumps({"tiers": tiers, "derived": extra_rows}, indent=2, default=str))
        return
    for line in text.tiers_lines(tiers, extra_rows, currency, train_tokens, kwh_price):
        typer.echo(line)


def register(app: typer.Typer) -> None:
    app.command("gap")(gap_cmd)
    app.command("targets")(targets_cmd)
    app.command("tiers")(tiers_cmd)
