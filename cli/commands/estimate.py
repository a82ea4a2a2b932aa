"""`costgap estimate`: estimated cost per 1M tokens for instance types not yet measured, ranked.

    costgap estimate --preset 1b --json
    costgap estimate --preset 8b-lora --gpu A10 --top 5 --catalog tests/fixtures/skypilot/lambda-vms.csv
    costgap estimate --record            # keep the estimates in the warehouse; score those measured since

Every row is labelled: "measured" (the cost model's figure from real runs: the estimate is not shown),
"estimate" (tokens/s and cost with a 90% interval and its assumptions), "does not fit" or "no
estimate" (with the reason). The catalog is the warehouse's targets, the targets file and any
SkyPilot catalog files given. tasks/estimate/candidates.py computes every figure.
"""

from __future__ import annotations

import json
from typing import List, Optional

import typer

from cli.commands import say
from runtime.settings import targets_path, warehouse_path
from tasks.cost.model import F_LOST

WAREHOUSE_HELP = "DuckDB file (default: $COSTGAP_WAREHOUSE, then ./costgap.duckdb)."


def _extra(targets_file: Optional[str], catalogs: List[str]) -> list[dict]:
    from tasks.estimate.candidates import catalog_entries

    path = targets_path(targets_file)
    return catalog_entries(path if (targets_file or path.exists()) else None, catalogs)


def _line(r: dict) -> str:
    cur = r["currency"]
    where = f"{r['instance_type']} ({r['provider']}/{r['region']}, {r['gpu_count']}x {r['gpu_key'] or r['gpu']})"
    if r["status"] == "measured":
        return (f"  measured   {where}: {r['tokens_per_s']:,.0f} tokens/s, "
                + (f"{r['cost_per_mtok']:.4g} {cur}/1M tokens (90% {r['cost_lo']:.4g}..{r['cost_hi']:.4g})"
                   if r["cost_per_mtok"] is not None else "no price"))
    if r["tokens_per_s"] is None:
        return f"  {r['status']:<10} {where}: {r['reason']}"
    cost = (f"{r['cost_per_mtok']:.4g} {cur}/1M tokens (90% {r['cost_lo']:.4g}..{r['cost_hi']:.4g}), R {r['R']:.3f}"
            if r["cost_per_mtok"] is not None else "no price")
    scaling = (f", x{r['gpu_count']} at scaling {r['scaling']:.2f} (90% {r['scaling_lo']:.2f}..{r['scaling_hi']:.2f}) "
               f"{r['scaling_label']}" if r.get("gpu_count", 1) > 1 and r.get("scaling") is not None else "")
    return (f"  estimate   {where}: {r['tokens_per_s']:,.0f} tokens/s (90% {r['lo']:,.0f}..{r['hi']:,.0f}) "
            f"{r['precision']}{scaling}, {cost}")


def estimate_cmd(
    preset: Optional[List[str]] = typer.Option(None, "--preset", help="Workload preset (repeatable; default: "
                                               "every preset measured on a GPU with a datasheet entry)."),
    gpu: Optional[List[str]] = typer.Option(None, "--gpu", help="Only this GPU (gpu_specs.json key or the catalog's "
                                            "name; repeatable)."),
    top: Optional[int] = typer.Option(None, "--top", min=1, help="Show the N cheapest rows per preset."),
    catalog: Optional[List[str]] = typer.Option(None, "--catalog", help="A SkyPilot v7 vms.csv whose GPU instance "
                                                "types join the catalog (repeatable)."),
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
    from tasks.estimate.candidates import candidates
    from tasks.cost.rules import today
    from tasks.cost.table import cost_table, options
    from tasks.errors import UserError
    from warehouse.db import reading

    opts = options(billing, currency, f)
    extra = _extra(targets_file, catalog or [])
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
        typer.echo(f"preset {p}: {len(rows)} instance type(s), cheapest first "
                   "(estimates are not measurements; 'measured' rows are)")
        for r in rows:
            typer.echo(_line(r))
            if r["status"] == "estimate":
                for a in r["assumptions"]:
                    typer.echo(f"      - {a}")


def register(app: typer.Typer) -> None:
    app.command("estimate")(estimate_cmd)
