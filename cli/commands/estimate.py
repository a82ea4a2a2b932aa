"""`costgap estimate`: estimated cost per 1M tokens for instance types not yet measured, ranked.

    costgap estimate --preset 1b --json
    costgap estimate --preset 8b-lora --gpu A10 --top 5 --catalog tests/fixtures/skypilot/lambda-vms.csv
    costgap estimate --record            # keep the estimates in the warehouse; score those measured since

One line per instance type, labelled: "measured" (the cost model's figure from real runs: the estimate
is not shown), "estimate" (tokens/s and cost with a 90% interval; `--explain` adds its assumptions),
"does not fit" or "no estimate" (with the reason). A row without a cost says what is missing and the
command that adds it (a price, an FX rate); the other rows still answer. A --gpu that matches no
instance type exits 2 saying why. The catalog is the warehouse's targets, the targets file and any
SkyPilot catalog files given (--provider where the file name does not tell the cloud).
tasks/estimate/candidates.py computes every figure; cli/format.py writes them.
"""

from __future__ import annotations

import json
from typing import List, Optional

import typer

from cli import format as fmt
from cli import options as opt
from cli.commands import say
from runtime.settings import targets_path, warehouse_path
from tasks.cost.model import F_LOST

WAREHOUSE_HELP = "DuckDB file (default: $COSTGAP_WAREHOUSE, then ./costgap.duckdb)."


def _extra(targets_file: Optional[str], catalogs: List[str], provider: Optional[str] = None) -> list[dict]:
    from tasks.estimate.candidates import catalog_entries

    path = targets_path(targets_file)
    return catalog_entries(path if (targets_file or path.exists()) else None, catalogs, provider)


def _cells(r: dict) -> list[str]:
    """One instance type as table cells: status, type, where, GPUs, tokens/s and cost with their intervals, note."""
    cur = r["currency"]
    cells = [r["status"], r["instance_type"], f"{r['provider']}/{r['region']}",
             f"{r['gpu_count']}x {r['gpu_key'] or r['gpu']}"]
    if r["tokens_per_s"] is None:  # does not fit, or no estimate: the reason is the answer
        return cells + ["", "", "", "", r["reason"]]
    span = f"{fmt.num(r['lo'])}..{fmt.num(r['hi'])}" if r["lo"] is not None else ""
    if r["cost_per_mtok"] is None:
        cost, cost_span, note = "no cost", "", r.get("no_cost_reason") or "no price"
    else:
        cost, cost_span = fmt.per_mtok(r["cost_per_mtok"], cur), f"{fmt.num(r['cost_lo'])}..{fmt.num(r['cost_hi'])}"
        if r["status"] == "measured":
            note = f"{r['runs']} runs"
        else:  # a price without a start date came from a --catalog file, not the price book: say which
            note = f"{r['precision']}, R {fmt.fixed(r['R'], 3)}"
            if r["price_effective_from"] is None and r["price_source"]:
                note += f"; price from {r['price_source']}"
    if r.get("gpu_count", 1) > 1 and r.get("scaling") is not None:  # past one card: measured or predicted
        note += (f"; x{r['gpu_count']} at scaling {fmt.fixed(r['scaling'], 2)} "
                 f"({fmt.fixed(r['scaling_lo'], 2)}..{fmt.fixed(r['scaling_hi'], 2)}) {r['scaling_label']}")
    return cells + [fmt.num(r["tokens_per_s"]), span, cost, cost_span, note]


HEAD = ["", "instance type", "where", "GPUs", "tokens/s", "90%", "cost", "90%", ""]


def _lines(preset: str, rows: list[dict], explain: bool) -> list[str]:
    out = [f"preset {preset}: {len(rows)} instance type(s), cheapest first; 'estimate' rows are predictions from the "
           "measured runs, 'measured' rows are the cost model's figures"]
    if not explain:
        return out + fmt.table([_cells(r) for r in rows], HEAD, right=(4, 6))
    for r in rows:  # each row, then its assumptions
        out += fmt.table([_cells(r)], right=(4, 6))
        out += [f"      - {a}" for a in r["assumptions"]] if r["status"] == "estimate" else []
    return out


def estimate_cmd(
    preset: Optional[List[str]] = typer.Option(None, "--preset", help="Workload preset (repeatable; default: "
                                               "every preset measured on a GPU with a datasheet entry)."),
    gpu: Optional[List[str]] = typer.Option(None, "--gpu", help="Only this GPU (gpu_specs.json key or the catalog's "
                                            "name; repeatable)."),
    top: Optional[int] = typer.Option(None, "--top", min=1, help="Show the N cheapest rows per preset."),
    catalog: Optional[List[str]] = typer.Option(None, "--catalog", help="A SkyPilot v7 vms.csv whose GPU instance "
                                                "types join the catalog, with its prices where the price book has "
                                                "none (repeatable)."),
    provider: Optional[str] = typer.Option(None, "--provider", help="The cloud of the --catalog files, where their "
                                           "name does not tell it (aws-vms.csv and catalogs/v7/aws/vms.csv do)."),
    explain: bool = typer.Option(False, "--explain", help="Under each estimate, its assumptions (precision, "
                                 "memory fit, configuration, R)."),
    targets_file: Optional[str] = typer.Option(None, "--targets-file", help="Targets file (default: "
                                               "$COSTGAP_TARGETS, then deploy/targets.toml where present)."),
    billing: str = typer.Option("on_demand", "--billing", help="on_demand | monthly | yearly | spot."),
    currency: str = typer.Option("USD", "--currency", help="Reporting currency (dated FX rates)."),
    f: float = typer.Option(F_LOST, "--f", help="Fraction of an attempt's work lost per failure."),
    record: bool = typer.Option(False, "--record", help="Keep the estimates in the warehouse (write slot) and "
                                "score the earlier ones that have been measured since."),
    as_json: bool = typer.Option(False, "--json", help="Print rows as JSON."),
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
) -> None:
    """Candidates ranked by estimated cost per 1M tokens, each with its interval and assumptions."""
    from tasks.estimate import calibrate as cal_
    from tasks.estimate.candidates import candidates, gpu_matches, no_match
    from tasks.cost.rules import today
    from tasks.cost.table import cost_table, options
    from tasks.errors import UserError
    from warehouse.db import reading

    opts = options(opt.billing(billing, per_target=False), opt.currency(currency), opt.fraction(f))
    extra = _extra(targets_file, catalog or [], provider)
    now = today()
    out: dict[str, list] = {}
    with reading(warehouse_path(warehouse)) as con:
        ws = cal_.workloads(con)
        cal = cal_.calibrate(ws, cal_.efficiencies(con))
        if cal is None:
            raise UserError("no measured fine-tune with GEMM and memory-copy figures on a GPU with a datasheet entry: "
                            "nothing to calibrate the estimator on (costgap ingest warehouse/samples/)")
        measured = cost_table(con, billing=opts.billing, currency=opts.currency, f=opts.f, today=now).to_dicts()
        for p in preset or sorted(cal.reference):
            rows = [r for g in (gpu or [None])
                    for r in candidates(con, p, opts, now, extra=extra, gpu=g, cal=cal, workloads=ws,
                                       measured=measured)]
            rows.sort(key=lambda r: (r["cost_per_mtok"] is None, r["cost_per_mtok"] or 0.0, r["instance_type"]))
            out[p] = rows[:top] if top else rows
        for g in gpu or []:  # a filter that matches nothing is refused, saying why (exit 2)
            if not any(gpu_matches(g, r["gpu_key"], r["gpu"]) for rows in out.values() for r in rows):
                raise UserError(no_match(g, extra))
    if record:
        from runtime.write_slot import writer
        from tasks.estimate.estimate_track import record as keep, score

        with writer(warehouse_path(warehouse), progress=say) as con:
            n = sum(keep(con, rows, now) for rows in out.values())
            scored = score(con, now)
        say(f"estimate: recorded {n} estimate(s); scored {len(scored)} that were measured since")
    if as_json:
        typer.echo(json.dumps([r for rows in out.values() for r in rows], indent=2, default=str))
        return
    for p, rows in out.items():
        for line in _lines(p, rows, explain):
            typer.echo(line)


def register(app: typer.Typer) -> None:
    app.command("estimate")(estimate_cmd)
