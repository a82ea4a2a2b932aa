"""`costgap run`: the main job. Probe the targets, land the bundles, rebuild the report.

    costgap run                                    # local target, quick profile, embedded default
    costgap run --targets aws-g5-xlarge,lambda-gpu-1x-a10 --results s3://bucket/costgap
    costgap run --targets all --max-spend 500 --max-spend aws-p5-48xlarge=150   # monthly, in --currency

Runs the compare flow (flows/compare.py). With PREFECT_API_URL unset Prefect starts its ephemeral
API for the run; set it to use a server (and its workers, for `pool` targets). Prints one line per
target ("landed", "landed, 1 refused" with each refused file and its reason below it, "failed: why"),
then the answer per preset (cheapest target, its cost with currency, the runner-up's gap and the
site's verdict), each target and preset without a cost and why, and the report's path; `--wide` adds
the full cost table, `--json` prints it all. Exit 0 when every target landed, 1 when some target is
missing, a file was refused beside what landed, or the report failed (the flow ended Partial or
Failed; the message says which and why), 2 on a user error (cli/commands/__init__.py).
"""

from __future__ import annotations

import json
import os
from typing import List, Optional

import typer

from runtime import settings
from cli.commands import EXIT_FAILED, say


def _split(value: Optional[str]) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def run(
    targets: Optional[str] = typer.Option(
        "local", "--targets", help="Comma-separated target ids from the targets file; 'all' for every one."),
    profile: Optional[str] = typer.Option(
        None, "--profile", help="Probe profile: quick | standard | full (default: $COSTGAP_PROFILE, then quick)."),
    warehouse: Optional[str] = typer.Option(
        None, "--warehouse", help="DuckDB file (default: $COSTGAP_WAREHOUSE, then ./costgap.duckdb)."),
    site: Optional[str] = typer.Option(
        None, "--site", help="Report directory or fsspec URL (default: $COSTGAP_SITE, then ./site)."),
    results: Optional[str] = typer.Option(
        None, "--results", help="Results store, a directory or fsspec URL such as s3://bucket/prefix "
        "(default: $COSTGAP_RESULTS, then ./results)."),
    targets_file: Optional[str] = typer.Option(
        None, "--targets-file", help="Targets file (default: $COSTGAP_TARGETS, then deploy/targets.toml)."),
    skip: Optional[str] = typer.Option(
        None, "--skip", help="Comma-separated probe parts to skip on every target (e.g. finetune)."),
    max_spend: Optional[List[str]] = typer.Option(
        None, "--max-spend", help="Monthly measuring budget in --currency: AMOUNT for all targets together, "
        "TARGET=AMOUNT for one (repeatable). A target whose run would exceed it is skipped and told, not failed."),
    currency: str = typer.Option("USD", "--currency", help="Reporting currency of --max-spend."),
    wide: bool = typer.Option(False, "--wide", help="Also print the full cost table (every target and preset, "
                              "with P, X, p, R and today's price)."),
    as_json: bool = typer.Option(False, "--json", help="Print the answer, the cost table, the targets' outcomes "
                                 "and the report's path as JSON."),
) -> None:
    """Probe targets (concurrently), land and validate their bundles, rebuild the report."""
    from tasks.dispatch.targets import load_targets_or_local, select

    ids = None if (targets or "").strip() == "all" else _split(targets)
    file = settings.targets_path(targets_file)
    explicit = bool(targets_file or os.environ.get("COSTGAP_TARGETS", "").strip())
    select(load_targets_or_local(file, explicit=explicit), ids, str(file))  # fails here, before Prefect starts
    from tasks.cost.measuring import TOTAL, parse_budget

    budget = parse_budget(max_spend or [], currency)  # a bad amount fails here too
    spend = ({**({TOTAL: budget.total} if budget.total is not None else {}), **budget.per_target}
             if budget else None)

    from runtime.api import ensure_api
    from flows.compare import compare

    ensure_api(say)  # a cold Prefect home can take a minute: started here, with progress
    state = compare(targets=ids, profile=settings.profile_name(profile), warehouse=warehouse, site=site,
                    results=results, skip=_split(skip), targets_file=targets_file, max_spend=spend,
                    currency=currency, return_state=True)
    try:
        summary = state.result(raise_on_failure=False)
    except Exception as e:  # the flow crashed before it produced a summary
        typer.echo(f"costgap run: {state.name}: {state.message or e}", err=True)
        raise typer.Exit(code=EXIT_FAILED)
    if not isinstance(summary, dict):  # an exception: a user error raised inside the flow
        _reraise(summary)
        typer.echo(f"costgap run: {state.name}: {state.message}", err=True)
        raise typer.Exit(code=EXIT_FAILED)
    if as_json:
        keep = ("status", "message", "warehouse", "index", "currency", "answer", "cost", "outcomes")
        typer.echo(json.dumps({k: summary.get(k) for k in keep}, indent=2, default=str))
    else:
        _show(summary, state.name, wide)
    if summary["status"] != "completed":
        raise typer.Exit(code=EXIT_FAILED)


def _show(summary: dict, state: str, wide: bool) -> None:
    """The targets' outcomes, the answer per preset (narrow), the full table with --wide, the report's path."""
    from cli.cost_text import answer_lines
    from tasks.dispatch.fanout import outcome_lines

    typer.echo("")
    for line in outcome_lines(summary["outcomes"]):
        typer.echo(line)
    typer.echo("")
    for line in answer_lines(summary.get("answer") or [], summary.get("cost") or [], summary.get("currency")):
        typer.echo(line)
    if wide:
        typer.echo("")
        typer.echo(summary.get("headline") or "(no headline table)")
    typer.echo("")
    typer.echo(f"warehouse: {summary['warehouse']}")
    typer.echo(f"report:    {_here(summary.get('index')) or '(not built)'}")
    typer.echo(f"{state}: {summary['message']}")


def _here(index: Optional[str]) -> Optional[str]:
    """The report's path relative to the working directory where it lies below it (site/index.html)."""
    from pathlib import Path

    if not index or "://" in index:
        return index
    try:
        return str(Path(index).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return index


def _reraise(value) -> None:
    from tasks.errors import UserError

    if isinstance(value, UserError):
        raise value


def register(app: typer.Typer) -> None:
    app.command("run")(run)
