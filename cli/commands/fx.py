"""`costgap fx refresh|import|rate`: dated FX rates (table fx_rates, USD pivot).

    costgap fx refresh --source ecb [--replay tests/fixtures/ecb]
    costgap fx import tests/fixtures/ecb/eurofxref-hist.zip     # --format told from the file
    costgap fx import deploy/fx_rates.csv
    costgap fx rate CNY --on 2026-10-30

Only (currency, date) pairs the table lacks land; a pair already stored with another rate is refused
(exit 2), naming both, and nothing lands. A file that is cut or malformed anywhere (tasks/readers.py)
is refused the same way, naming file, line, field and value. A download that fails is one line and exit 1.
What a landing changed is then told (flows/alerts.py after_landing: one line per Prefect event, on stderr).
"""

from __future__ import annotations

from typing import Optional

import typer

from cli import format as fmt
from cli.commands import EXIT_FAILED, say
from runtime.settings import results_url, warehouse_path
from tasks.errors import UserError

fx_app = typer.Typer(help="FX rates: the ECB's daily reference rates, or a CSV of dated rates.",
                     no_args_is_help=True)
WAREHOUSE_HELP = "DuckDB file (default: $COSTGAP_WAREHOUSE, then ./costgap.duckdb)."
RESULTS_HELP = ("Results store the new rates are archived in, so `costgap rebuild` can replay them (default: "
                "$COSTGAP_RESULTS, then ./results).")


def _land(rows: list, what: str, skipped: dict, warehouse: Optional[str], results: Optional[str],
          command: str) -> None:
    from flows.alerts import after_landing
    from flows.prices import land_fx

    got = land_fx(warehouse_path(warehouse), rows, results_url(results), progress=say)
    typer.echo(f"fx {what}: {got['rows']} rates, {got['new']} new, {got['unchanged']} unchanged")
    for reason, n in sorted(skipped.items()):
        typer.echo(f"  skipped {n}: {reason}")
    after_landing(warehouse_path(warehouse), None, command, progress=say)  # a new rate can move a cost


@fx_app.command("refresh")
def refresh_cmd(
    source: str = typer.Option("ecb", "--source", help="ecb: the ECB's euro reference rates, full history "
                               "(eurofxref-hist.zip; public, no credentials)."),
    replay: Optional[str] = typer.Option(None, "--replay", help="Serve the download from this directory "
                                         "(index.json maps the URL to a file) instead of the network."),
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
    results: Optional[str] = typer.Option(None, "--results", help=RESULTS_HELP),
) -> None:
    """Download the ECB's reference-rate history; land the days fx_rates lacks.

    The ECB quotes per euro; costgap stores units per USD, so each day
    becomes cross rates: X per USD = X per EUR / USD per EUR, and
    EUR per USD = 1 / USD per EUR. "N/A" cells are skipped, never filled
    in. Every row keeps its date and the ECB as its source. Exit 1 when
    the download fails."""
    from tasks.pricing.http import FetchError
    from tasks.pricing.sources import fetch_fx

    try:
        got = fetch_fx(source, replay=replay)
    except FetchError as e:
        say(f"costgap: error: {source}: {e}")
        raise typer.Exit(EXIT_FAILED) from None
    _land(got.rows, f"{got.name} {got.location}", got.skipped, warehouse, results, "fx refresh")


@fx_app.command("import")
def import_cmd(
    file: str = typer.Argument(..., help="eurofxref-hist.zip or eurofxref-hist.csv (--format ecb), or a CSV "
                               "with currency, rate_date, units_per_usd, source (--format csv)."),
    fmt: Optional[str] = typer.Option(None, "--format", help="ecb | csv (default: told from the file's extension "
                                      "and header line)."),
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
    results: Optional[str] = typer.Option(None, "--results", help=RESULTS_HELP),
) -> None:
    """Land a downloaded FX file offline: the ECB history (its zip or CSV), or costgap's own CSV."""
    from tasks.pricing import fx
    from tasks.pricing.sources import fetch_fx

    from tasks.pricing.formats import fx_format

    if fx_format(file, fmt) == "csv":
        _land(fx.read_fx_csv(file), file, {}, warehouse, results, "fx import")
        return
    got = fetch_fx("ecb", path=file)
    _land(got.rows, f"{got.name} {file}", got.skipped, warehouse, results, "fx import")


@fx_app.command("rate")
def rate_cmd(
    currency: str = typer.Argument(..., help="ISO 4217 code, e.g. CNY."),
    on: Optional[str] = typer.Option(None, "--on", help="Day (YYYY-MM-DD; default: today, UTC)."),
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
) -> None:
    """The rate in force on a day: units of CURRENCY per USD, its date and its source."""
    from datetime import date, datetime, timezone

    from tasks.pricing import fx
    from warehouse.db import reading

    try:
        day = date.fromisoformat(on) if on else datetime.now(timezone.utc).date()
    except ValueError:
        raise UserError(f"--on {on!r}: expected YYYY-MM-DD") from None
    cur = currency.strip().upper()
    with reading(warehouse_path(warehouse)) as con:
        value = fx.rate(con, cur, day)
        got = con.execute("select rate_date, source from fx_rates where currency = ? and rate_date <= ? "
                          "order by rate_date desc limit 1", [cur, day]).fetchall()
    dated = f" (rate of {got[0][0]}, {got[0][1]})" if got else " (the pivot)"
    typer.echo(f"{cur} on {day}: {fmt.num(value, 6)} {cur} per USD{dated}")


def register(app: typer.Typer) -> None:
    app.add_typer(fx_app, name="fx")
