"""The costgap command line: parses arguments, builds config, calls a task or a flow.

    costgap --help

Each command group lives in cli/commands/<name>.py and exposes `register(app)`. Exit codes are
one contract for every command (cli/commands/__init__.py): 0 done or nothing to do, 1 an internal
failure, 2 user input refused. A user error (bad bundle, bad price file, bad config) is printed as
one line naming file, field and value; a Prefect API that cannot be reached or started is one line
too (exit 1). Never a bare traceback for either; a bug still fails loudly with its traceback.
"""

from __future__ import annotations

import logging
import os
import sys

import typer

app = typer.Typer(
    name="costgap",
    help=(
        "What a training token really costs on each GPU instance type, and why the gap moves.\n\n"
        "Defaults: --warehouse from COSTGAP_WAREHOUSE or ./costgap.duckdb, --site from "
        "COSTGAP_SITE or ./site, results store from COSTGAP_RESULTS or ./results."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# One module per command group, each adding its commands to `app`, in the order --help lists them.
from cli.commands import alerts, estimate, export, fx, gap, ingest, prices, rebuild, report, run, scaling, server  # noqa: E402,E501

for _mod in (run, ingest, prices, fx, gap, report, rebuild, alerts, estimate, scaling, export, server):
    _mod.register(app)


def main() -> None:
    from runtime.api import ApiUnavailable
    from cli.commands import EXIT_FAILED, EXIT_REFUSED
    from tasks.errors import UserError

    # The ephemeral Prefect server would otherwise try to phone home (and log an error offline).
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # The write slot emits Prefect events; at exit Prefect's event queue drains them and warns
    # "Still processing items: 1 items remaining..." on stderr. The events are still sent.
    logging.getLogger("EventsWorker").setLevel(logging.ERROR)

    try:
        app()
    except UserError as e:
        typer.echo(f"costgap: error: {e}", err=True)
        sys.exit(EXIT_REFUSED)
    except ApiUnavailable as e:
        typer.echo(f"costgap: error: {e}", err=True)
        sys.exit(EXIT_FAILED)


if __name__ == "__main__":
    main()
