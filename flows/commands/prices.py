"""`costgap prices import|refresh|list`: the price book and FX rates.

    costgap prices import deploy/prices/lambda.csv --format csv
    costgap prices import tests/fixtures/skypilot/lambda-vms.csv --format skypilot
    costgap prices import deploy/fx_rates.csv --format fx
    costgap prices refresh --source azure-gpu [--replay tests/fixtures/azure]
    costgap prices list

An import that would overlap an existing period is rejected as a whole (exit 2), naming both rows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Optional

import typer

from tasks.errors import UserError
from flows.settings import results_url, warehouse_path

prices_app = typer.Typer(help="The price book (dated, sourced prices) and FX rates.", no_args_is_help=True)
FORMATS = ("csv", "yaml", "skypilot", "fx")
WAREHOUSE_HELP = "DuckDB file (default: $COSTGAP_WAREHOUSE, then ./costgap.duckdb)."
RESULTS_HELP = ("Results store the import is archived in, so `costgap rebuild` can replay it (default: "
                "$COSTGAP_RESULTS, then ./results).")


def _say(line: str) -> None:
    typer.echo(line, err=True)


def _when(text: Optional[str], name: str) -> Optional[datetime]:
    if text is None:
        return None
    from tasks.pricing.base import utc

    return utc(text, where=f"--{name}", field=name)


@prices_app.command("import")
def import_cmd(
    file: str = typer.Argument(..., help="Price book (csv/yaml), SkyPilot v7 vms.csv, or FX rates csv."),
    fmt: str = typer.Option("csv", "--format", help="csv | yaml | skypilot | fx"),
    provider: Optional[str] = typer.Option(None, "--provider", help="SkyPilot only: the cloud (default: from "
                                           "the file name, e.g. lambda-vms.csv -> lambda)."),
    effective_from: Optional[str] = typer.Option(None, "--effective-from", help="SkyPilot only: when the "
                                                 "catalog's prices took effect (default: the file's mtime)."),
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
    results: Optional[str] = typer.Option(None, "--results", help=RESULTS_HELP),
) -> None:
    """Land a price file: unchanged prices change nothing, a changed price opens a new period."""
    from flows.prices import land_fx, land_prices
    from tasks.pricing import fx
    from tasks.pricing.pricebook_file import PriceBookFile
    from tasks.pricing.skypilot import SkyPilotCatalog

    if fmt not in FORMATS:
        raise UserError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if fmt == "fx":
        rows = fx.read_fx_csv(file)
        got = land_fx(warehouse_path(warehouse), rows, results_url(results), progress=_say)
        typer.echo(f"fx {file}: {got['rows']} rates, {got['new']} new, {got['unchanged']} unchanged")
        return
    source = (SkyPilotCatalog(file, provider, _when(effective_from, "effective-from")) if fmt == "skypilot"
              else PriceBookFile(file, fmt))
    rows = source.fetch()  # read and validated before the warehouse is touched
    summary = land_prices(warehouse_path(warehouse), source, rows, results_url(results), progress=_say)
    typer.echo(summary.as_text())
    skipped = getattr(source, "skipped", 0)
    if skipped:
        typer.echo(f"  {skipped} catalog rows without a price skipped")


@prices_app.command("refresh")
def refresh_cmd(
    source: str = typer.Option(..., "--source", help="A named source (tasks/pricing/sources.py), e.g. azure-gpu."),
    replay: Optional[str] = typer.Option(None, "--replay", help="Serve recorded responses from this directory "
                                         "(index.json + pages) instead of the network."),
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
    results: Optional[str] = typer.Option(None, "--results", help=RESULTS_HELP),
) -> None:
    """Fetch a public price API (no credentials) and land what changed."""
    from flows.prices import land_prices
    from tasks.pricing.http import ReplayClient, UrllibClient
    from tasks.pricing.sources import build_source

    src = build_source(source, ReplayClient(replay) if replay else UrllibClient())
    rows = src.fetch()  # the network part, before the write slot is taken
    summary = land_prices(warehouse_path(warehouse), src, rows, results_url(results), progress=_say)
    typer.echo(summary.as_text())
    for reason, n in sorted(getattr(src, "skipped", {}).items()):
        typer.echo(f"  skipped {n} items: {reason}")


@prices_app.command("list")
def list_cmd(
    all_periods: bool = typer.Option(False, "--all", help="Every period, not only the open ones."),
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
) -> None:
    """Print the price book: key, price per hour, original amount, period, source."""
    from warehouse.db import reading
    from warehouse.sql import frame

    with reading(warehouse_path(warehouse)) as con:
        book = frame(con, "price_book", {"all": all_periods})
    for r in book.iter_rows(named=True):
        until = r["effective_to"].date().isoformat() if r["effective_to"] else "open"
        typer.echo(f"{r['provider']}/{r['region']}/{r['instance_type']} {r['billing_mode']}: "
                   f"{r['price_per_hour']:.4f} {r['currency']}/h ({r['original_amount']:g}/{r['original_period']}) "
                   f"{r['effective_from'].date()}..{until}  [{r['source']}]")
    if book.is_empty():
        typer.echo("no prices yet: costgap prices import FILE --format csv|skypilot")


def register(app: typer.Typer) -> None:
    app.add_typer(prices_app, name="prices")
