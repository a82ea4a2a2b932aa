"""`costgap rebuild`: rebuild the warehouse from the bundles in a results store.

    costgap rebuild --from results/ --warehouse costgap.duckdb

Builds into a temporary file and swaps it in atomically (flows/rebuild.py), holding the write slot
the whole time; the fact tables come out identical to incremental `costgap ingest` of the same
bundles. Exit 2 when some bundles were quarantined or rejected (the rebuilt warehouse is still
swapped in, with them recorded in `quarantine`).
"""

from __future__ import annotations

from typing import Optional

import typer

from cli.commands import EXIT_REFUSED, say
from runtime.settings import results_url, warehouse_path


def rebuild(
    source: Optional[str] = typer.Option(
        None, "--from", help="Results store URL or directory (default: $COSTGAP_RESULTS, then ./results)."),
    warehouse: Optional[str] = typer.Option(
        None, "--warehouse", help="DuckDB file to replace (default: $COSTGAP_WAREHOUSE, then ./costgap.duckdb)."),
    lock_timeout_s: float = typer.Option(
        60.0, "--lock-timeout", help="Seconds to wait for the warehouse file at the start and at the swap."),
) -> None:
    """Rebuild the warehouse from bundles alone (prices/FX from their archived imports)."""
    from flows.rebuild import rebuild as run_rebuild
    from tasks.errors import UserError
    from tasks.landing.land import expand

    url = results_url(source)
    files, missing = expand([url])
    if missing:
        raise UserError(f"results store {url}: no such file or directory")
    say(f"rebuilding {warehouse_path(warehouse)} from {url} ({len(files)} files)")
    result = run_rebuild(url, warehouse_path(warehouse), timeout_s=lock_timeout_s, progress=say)
    typer.echo(f"rebuilt {warehouse_path(warehouse)} from {url} ({len(files)} files)")
    typer.echo(result.summary.as_text())
    typer.echo(result.prices_replayed)
    if result.old_unreadable and result.old_unreadable != "no old warehouse":
        typer.echo(f"old warehouse was unreadable, nothing carried over: {result.old_unreadable}")
    if any(result.carried.values()):
        typer.echo("carried over (not in any bundle): "
                   + ", ".join(f"{t} {n}" for t, n in result.carried.items() if n))
    if not result.summary.ok:
        raise typer.Exit(code=EXIT_REFUSED)


def register(app: typer.Typer) -> None:
    app.command("rebuild")(rebuild)
