"""`costgap alerts apply|test|recent`: the automations that turn costgap's events into notifications.

    costgap alerts apply --block slack-webhook/costgap-alerts     # create or update them (idempotent)
    costgap alerts test --block slack-webhook/costgap-alerts      # one sample of each event through the block
    costgap alerts recent --warehouse costgap.duckdb              # what changed lately (the site's list)

apply and test need a Prefect server (PREFECT_API_URL): automations and blocks live there. An unknown
block or a bad automation file is refused (exit 2) naming the block or the file, automation and field;
a block that cannot send is exit 1 naming the block and the service's answer.
"""

from __future__ import annotations

import json
from typing import Optional

import typer

from cli.commands import EXIT_FAILED, say
from runtime.settings import warehouse_path
from tasks.alerts.automations import BLOCK_ENV, DEFAULT_FILE

alerts_app = typer.Typer(help="Notifications, one kind per cause: the cheapest target changed, a gap shifted, a "
                              "target's throughput or failure rate shifted, a target failed, a price changed, data "
                              "was refused. The compare and price flows emit Prefect events "
                              "(costgap.*); the automations in deploy/automations/costgap.yaml turn them into "
                              "messages through a Prefect notification block. Once per Prefect server "
                              "(PREFECT_API_URL): create the block (Slack, Teams, email, custom webhook), run "
                              "`costgap alerts apply --block <type>/<name>`, then `costgap alerts test` to check the "
                              "channel. See docs/deploy.md, section Alerts. Exit 0 done, 1 internal failure (the "
                              "block could not send, no API), 2 input refused (unknown block, bad automation file).",
                         no_args_is_help=True)
BLOCK_HELP = (f"Notification block, <type>/<name> or a unique name (default: ${BLOCK_ENV}, then the file's "
              "`block:`).")
FILE_HELP = f"Automation file (default: {DEFAULT_FILE})."


@alerts_app.command("apply")
def apply_cmd(
    block: Optional[str] = typer.Option(None, "--block", help=BLOCK_HELP),
    file: str = typer.Option(DEFAULT_FILE, "--file", help=FILE_HELP),
) -> None:
    """Create or update costgap's automations on the Prefect server, by name; running it again changes nothing.
    Automations made from an older costgap are migrated: their templates are replaced, new kinds created."""
    from flows.alerts import apply_automations

    say(f"applying {file}")
    done = apply_automations(file, block, progress=say)
    changed = sum(1 for _, what in done if what != "unchanged")
    typer.echo(f"automations: {len(done)} in {file}, {changed} created or updated")


@alerts_app.command("test")
def test_cmd(
    block: Optional[str] = typer.Option(None, "--block", help=BLOCK_HELP),
    file: str = typer.Option(DEFAULT_FILE, "--file", help=FILE_HELP),
    link: Optional[str] = typer.Option(None, "--link", help="Report address in the samples (default: "
                                       "$COSTGAP_SITE_LINK, then the site's index.html)."),
) -> None:
    """Send one sample of each costgap event through the block, rendered by each automation's template."""
    from flows.alerts import send_samples

    try:
        sent = send_samples(file, block, link, progress=say)
    except RuntimeError as e:
        say(f"costgap: error: {e}")
        raise typer.Exit(EXIT_FAILED)
    typer.echo(f"sent {len(sent)} sample notification(s)")


@alerts_app.command("recent")
def recent_cmd(
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help="DuckDB file (default: $COSTGAP_WAREHOUSE, "
                                            "then ./costgap.duckdb)."),
    limit: int = typer.Option(20, "--limit", min=1, help="Rows to show."),
    as_json: bool = typer.Option(False, "--json", help="One JSON list (the rows the report's list is built from)."),
) -> None:
    """What changed lately, newest first: the same decisions the alerts make."""
    from tasks.alerts import recent_changes
    from warehouse.db import reading

    with reading(warehouse_path(warehouse)) as con:
        rows = recent_changes(con, limit=limit)
    if as_json:
        typer.echo(json.dumps(rows, default=str, indent=1))
        return
    for r in rows:
        typer.echo(f"{r['at']:%Y-%m-%d %H:%M}  {r['kind']:<11} {r['summary']}")
    if not rows:
        typer.echo("no changes in the recent windows")


def register(app: typer.Typer) -> None:
    app.add_typer(alerts_app, name="alerts")
