"""`costgap server status|start|stop`: this machine's local Prefect server, which every command reuses.

    costgap server status        # running or not: pid, port, database, uptime, log
    costgap server start         # start it now (the first command that needs an API does this anyway)
    costgap server stop

The server is Prefect's own (`prefect server start`), on 127.0.0.1:$COSTGAP_SERVER_PORT (default 4210)
and the user's PREFECT_HOME; its database is Prefect's SQLite file there, or
PREFECT_SERVER_DATABASE_CONNECTION_URL (PostgreSQL in production: docs/deploy.md). With PREFECT_API_URL
set, costgap uses that server instead and this one is never started (runtime/server.py).
"""

from __future__ import annotations

import json
import os
from typing import Optional

import typer

from cli.commands import EXIT_FAILED, say

server_app = typer.Typer(help="This machine's local Prefect server: status, start, stop.", no_args_is_help=True)


def _describe(found, state: str) -> dict:
    from runtime import server

    doc = {"state": state, "url": found.url, "pid": found.pid, "port": found.port, "database": found.database,
           "since": found.since, "uptime_s": round(found.uptime_s()), "log": str(server.home() / server.LOG)}
    doc["warm"] = _warm(server.home())
    return doc


def _warm(home) -> str:
    """The warm process beside the server (runtime/warm.py): commands fork from it, with no import cost."""
    from runtime import warm

    found = warm.read(home)
    if found and warm.answering(home):
        return f"pid {found['pid']}: commands fork from it (log {home / warm.LOG})"
    if warm.starting(home):
        return f"starting: its imports take a few seconds, then commands fork from it (log {home / warm.LOG})"
    return "not running (the next command starts it)"


def _print(doc: dict) -> None:
    typer.echo(f"Prefect's local server: {doc['state']}")
    for key in ("url", "pid", "port", "database", "since", "uptime_s", "log", "warm"):
        if key in doc:
            typer.echo(f"  {key:9} {doc[key]}")


@server_app.command("status")
def status_cmd(as_json: bool = typer.Option(False, "--json", help="One JSON object instead of lines.")) -> None:
    """Whether the local server runs, and where (pid, port, database, uptime, log).

    Exit 0 when it runs, 1 when it does not (a stale record is reported as
    such and left for the next command, which replaces it)."""
    from runtime import server

    home = server.home()
    found = server.read(home)
    running = server.running(home)
    if running:
        doc = _describe(running, "running")
    elif found:
        doc = _describe(found, "stale (its process is gone or does not answer; the next command replaces it)")
    else:
        doc = {"state": "not running", "port": server.port(), "database": server.masked(server.database_url())}
    if os.environ.get("PREFECT_API_URL"):
        doc["note"] = f"PREFECT_API_URL={os.environ['PREFECT_API_URL']} is set: commands use that server, not this one"
    if as_json:
        typer.echo(json.dumps(doc, indent=1))
    else:
        _print(doc)
        if "note" in doc:
            typer.echo(f"  note      {doc['note']}")
    if not running:
        raise typer.Exit(EXIT_FAILED)


@server_app.command("start")
def start_cmd(
    database: Optional[str] = typer.Option(
        None, "--database", help="Database URL for a server started now, e.g. postgresql+asyncpg://user@host:5432/db "
        "(default: $PREFECT_SERVER_DATABASE_CONNECTION_URL, then Prefect's SQLite file in PREFECT_HOME)."),
) -> None:
    """Start the local server now, or say that it already runs (idempotent).

    A server already running on another database is left running: stop it
    first to switch."""
    from runtime import server, warm
    from runtime.api import START_TIMEOUT_ENV, START_TIMEOUT_S, TICK_S, ApiUnavailable
    from warehouse.db import env_seconds

    if database:
        os.environ[server.DATABASE_ENV] = database
    running = server.running()
    if running and database and running.database != server.masked(database):
        say(f"the local server already runs on {running.database}; `costgap server stop` first to use {server.masked(database)}")
        raise typer.Exit(EXIT_FAILED)
    try:
        found = running or server.start(env_seconds(START_TIMEOUT_ENV, START_TIMEOUT_S, allow_zero=False), say,
                                        tick_s=TICK_S)
    except server.ServerError as e:
        raise ApiUnavailable(str(e)) from None
    warm.spawn(server.home())
    _print(_describe(found, "running"))


@server_app.command("stop")
def stop_cmd() -> None:
    """Stop the local server (SIGTERM, then SIGKILL after 20 s); the next command that needs it starts it again."""
    from runtime import server

    stopped = server.stop(say)
    typer.echo(f"stopped Prefect's local server (pid {stopped.pid}, port {stopped.port})" if stopped
               else "Prefect's local server was not running")


def register(app: typer.Typer) -> None:
    app.add_typer(server_app, name="server")
