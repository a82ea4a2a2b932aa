"""`costgap ingest`: land bundle files or directories into the warehouse.

    costgap ingest results/ --warehouse costgap.duckdb

Prints landed / duplicates / quarantined / rejected, one line per problem naming the file, the
field, the value and the reason. Exit 0 when everything landed or was already there, 2 when
anything was quarantined or rejected (the rest still landed), as cli/commands/__init__.py says.
Then what changed is told (flows/alerts.py after_landing: one line per Prefect event, on stderr).
"""

from __future__ import annotations

from typing import List, Optional

import typer

from cli.commands import EXIT_REFUSED, say
from runtime.settings import warehouse_path


def ingest(
    paths: List[str] = typer.Argument(..., help="Bundle files or directories (searched recursively "
                                      "for *.json); local paths or fsspec URLs."),
    warehouse: Optional[str] = typer.Option(
        None, "--warehouse", help="DuckDB file (default: $COSTGAP_WAREHOUSE, then ./costgap.duckdb)."),
    lock_timeout_s: float = typer.Option(
        60.0, "--lock-timeout", help="Seconds to wait for another costgap process to release the "
        "warehouse file before giving up with a clear message."),
    batch_size: int = typer.Option(
        500, "--batch-size", min=1, help="Bundles per transaction (validated together, committed "
        "together; the write slot is released between batches)."),
) -> None:
    """Land bundles: validated, idempotent (same bundle twice adds nothing), atomic per batch."""
    from flows.alerts import after_landing
    from flows.landing import land_into

    summary = land_into(warehouse_path(warehouse), paths, source="cli", timeout_s=lock_timeout_s,
                        batch_size=batch_size, progress=say)
    typer.echo(summary.as_text())
    after_landing(warehouse_path(warehouse), None, "ingest", progress=say)  # what changed, told once
    if not summary.ok:
        raise typer.Exit(code=EXIT_REFUSED)


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest)
