"""The warm process's entry point: costgap's imports done once, then every command forked from here.

    python -m cli.warm_serve ~/.prefect                   # started by costgap beside its local server
    python -m cli.warm_serve HOME --beside PID            # lives as long as process PID (tests/conftest.py)

runtime/warm.py is the machinery (socket, fork, replies) and knows nothing of costgap; this module gives it
what to import (the CLI and everything a command loads on its way) and what a forked command runs (the
CLI, with Prefect's settings re-read from the command's own environment). It stands above the CLI, so
nothing below imports it: runtime/server.py and runtime/api.py start it by module name.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from runtime import warm
from runtime.procs import alive


def preload() -> None:
    """Everything a command imports on its way: the CLI and its commands, Prefect's client and flows,
    Great Expectations (bundle validation), DuckDB, polars, pandas, the report's Altair."""
    import flows.alerts  # noqa: F401  (every landing command tells: tasks.alerts and the cost model)
    import cli.main  # noqa: F401  (every command module)
    import flows.landing  # noqa: F401
    import runtime.write_slot  # noqa: F401
    import great_expectations  # noqa: F401
    import prefect.client.orchestration  # noqa: F401
    import prefect.flows  # noqa: F401
    import tasks.landing.validate  # noqa: F401


def run() -> None:
    """In a forked child whose argv, environment and working directory are the command's: run it."""
    from prefect.context import refresh_global_settings_context

    refresh_global_settings_context()  # logging was set up at import, from the same settings (warm._same_logging)
    from cli.main import main

    main()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m cli.warm_serve", description="Serve costgap commands of "
                                     "one PREFECT_HOME from one process that did their imports (started by costgap).")
    parser.add_argument("home", type=Path, help="the PREFECT_HOME whose commands it serves")
    parser.add_argument("--beside", type=int, metavar="PID",
                        help="live as long as this process (default: as long as the home's local server)")
    args = parser.parse_args(argv)
    home = args.home.expanduser().resolve()
    if args.beside:
        return warm.serve(home, preload=preload, run=run, companion=f"process {args.beside}",
                          companion_alive=lambda: alive(args.beside, None))
    from runtime import server

    def server_alive() -> bool:
        found = server.read(home)
        return found is not None and alive(found.pid, found.started)

    return warm.serve(home, preload=preload, run=run, companion="the local server", companion_alive=server_alive)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
