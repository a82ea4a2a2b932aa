"""`costgap prices import|refresh|list`: the price book and FX rates.

    costgap prices import deploy/prices/lambda.csv          # --format told from the file (tasks/pricing/formats.py)
    costgap prices import tests/fixtures/skypilot/lambda-vms.csv --provider lambda
    costgap prices import deploy/prices/examples/contract-example.yaml
    costgap prices refresh --source azure-gpu [--replay tests/fixtures/azure]
    costgap prices refresh --source alibaba|tencent [--replay tests/fixtures/alibaba]
    costgap prices list

An import that would overlap an existing period is rejected as a whole (exit 2), naming both rows; so is
a file cut or malformed anywhere (tasks/readers.py), naming file, line, field and value.
`refresh` lands what it could fetch; each target it could not price is one line on stderr and the
exit code is 1 (so is a source that failed as a whole: network, throttling, credentials refused).
What a landing changed is then told (flows/alerts.py after_landing: one line per Prefect event, on stderr).
"""

from __future__ import annotations

from datetime import datetime
from typing import Optional

import typer

from tasks.errors import UserError
from tasks.pricing.formats import price_format
from cli import format as fmt
from cli.commands import EXIT_FAILED, say
from runtime.settings import results_url, targets_path, warehouse_path

prices_app = typer.Typer(help="The price book (dated, sourced prices) and FX rates.", no_args_is_help=True)
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
    fmt: Optional[str] = typer.Option(None, "--format", help="csv | yaml | skypilot | fx (default: told from the "
                                      "file's extension and header line)."),
    provider: Optional[str] = typer.Option(None, "--provider", help="SkyPilot only: the cloud (default: from "
                                           "the file name, e.g. lambda-vms.csv -> lambda)."),
    effective_from: Optional[str] = typer.Option(None, "--effective-from", help="SkyPilot only: when the "
                                                 "catalog's prices took effect (default: the file's mtime)."),
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
    results: Optional[str] = typer.Option(None, "--results", help=RESULTS_HELP),
) -> None:
    """Land a price file: unchanged prices change nothing, a changed price opens a new period."""
    from flows.alerts import after_landing
    from flows.prices import land_fx, land_prices
    from tasks.pricing import fx
    from tasks.pricing.pricebook_file import PriceBookFile
    from tasks.pricing.skypilot import SkyPilotCatalog

    fmt = price_format(file, fmt)
    if fmt == "fx":
        rows = fx.read_fx_csv(file)
        got = land_fx(warehouse_path(warehouse), rows, results_url(results), progress=_say)
        typer.echo(f"fx {file}: {got['rows']} rates, {got['new']} new, {got['unchanged']} unchanged")
        after_landing(warehouse_path(warehouse), None, "fx import", progress=_say)
        return
    source = (SkyPilotCatalog(file, provider, _when(effective_from, "effective-from")) if fmt == "skypilot"
              else PriceBookFile(file, fmt))
    rows = source.fetch()  # read and validated before the warehouse is touched
    summary = land_prices(warehouse_path(warehouse), source, rows, results_url(results), progress=_say)
    typer.echo(summary.as_text())
    skipped = getattr(source, "skipped", 0)
    if skipped:
        typer.echo(f"  {skipped} catalog rows without a price skipped")
    after_landing(warehouse_path(warehouse), None, "prices import", progress=_say)


REFRESH_HELP = """Fetch a price source and land what changed.

An unchanged price only confirms its period; a changed one opens a new period.

\b
azure-gpu: Azure Retail Prices API (public, no credentials).
alibaba: ECS DescribePrice per hour/month/year and
  DescribeSpotPriceHistory, for the alibaba targets. Credentials:
  ALIBABA_CLOUD_ACCESS_KEY_ID, ALIBABA_CLOUD_ACCESS_KEY_SECRET
  (+ ALIBABA_CLOUD_SECURITY_TOKEN for STS keys).
tencent: CVM InquiryPriceRunInstances (POSTPAID_BY_HOUR, PREPAID
  1 and 12 months, SPOTPAID), for the tencent targets, in the zone
  and with the image of the sources file. Credentials:
  TENCENTCLOUD_SECRET_ID, TENCENTCLOUD_SECRET_KEY.

With --replay no credentials are needed. Exit 1 when a source or a
target failed (one line each on stderr; the rest landed), 2 when the
input was refused. FX rates: costgap fx refresh. See the README, section "Prices and FX"."""


@prices_app.command("refresh", help=REFRESH_HELP)
def refresh_cmd(
    source: str = typer.Option(..., "--source", help="azure-gpu | alibaba | tencent."),
    replay: Optional[str] = typer.Option(None, "--replay", help="Serve recorded responses from this directory "
                                         "(index.json + responses) instead of the network; no credentials."),
    sources_file: Optional[str] = typer.Option(None, "--sources-file", help="Zones, image, currency, billing "
                                               "modes per cloud (default: deploy/prices/sources.toml)."),
    targets_file: Optional[str] = typer.Option(None, "--targets-file", help="Targets whose prices are asked "
                                               "(default: $COSTGAP_TARGETS, then deploy/targets.toml)."),
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
    results: Optional[str] = typer.Option(None, "--results", help=RESULTS_HELP),
) -> None:
    import os
    from types import SimpleNamespace

    from flows.alerts import after_landing
    from flows.prices import land_prices
    from tasks.pricing import config, sources
    from tasks.pricing.cloud import SourceFailed
    from tasks.pricing.http import FetchError

    cfg = config.load(sources_file)
    creds = None
    if source in sources.SDK_SOURCES:
        creds = sources.env_credentials(source, os.environ)
        if creds is None and not replay:
            env = sources.credential_names(source, cfg)["env"]
            raise UserError(f"--source {source}: no credentials: set {' and '.join(env)} (see README.md, section "
                            f"'Prices and FX'), or pass --replay DIR")
    try:  # the network part, before the write slot is taken
        got = sources.fetch(source, replay=replay, credentials=creds, config=cfg,
                            targets_file=targets_path(targets_file))
    except (SourceFailed, FetchError) as e:
        say(f"costgap: error: {e}")
        raise typer.Exit(EXIT_FAILED) from None
    if got.rows:
        src = SimpleNamespace(name=got.name, location=got.location)
        summary = land_prices(warehouse_path(warehouse), src, got.rows, results_url(results), progress=_say)
        typer.echo(summary.as_text())
        after_landing(warehouse_path(warehouse), None, "prices refresh", progress=_say)
    else:
        typer.echo(f"{got.name} {got.location}: no prices fetched; nothing landed")
    for reason, n in sorted(got.skipped.items()):
        typer.echo(f"  skipped {n} items: {reason}")
    for line in got.failures:
        say(f"costgap: failed: {line}")
    if got.failures:
        raise typer.Exit(EXIT_FAILED)


@prices_app.command("list")
def list_cmd(
    all_periods: bool = typer.Option(False, "--all", help="Every period, not only the open ones."),
    on: Optional[str] = typer.Option(None, "--on", help="Moment the age and stale flag are judged for "
                                     "(YYYY-MM-DD or ISO timestamp; default: now, UTC)."),
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
) -> None:
    """Print the price book: key, price per hour, original amount, period, age, stale flag, source.

    An open period shows how many days ago an import last confirmed it, and
    STALE past the cost model's stale_after_days (the same rule as
    `costgap gap` and the report); a closed period shows "closed"."""
    from tasks.cost import rules
    from tasks.cost.model import CostOptions, is_stale
    from tasks.pricing.base import utc
    from warehouse.db import reading
    from warehouse.sql import frame

    at = utc(on, where="--on", field="on") if on else rules.today()
    opts = CostOptions()
    with reading(warehouse_path(warehouse)) as con:
        book = frame(con, "price_book", {"all": all_periods})
    for r in book.iter_rows(named=True):
        until = r["effective_to"].date().isoformat() if r["effective_to"] else "open"
        if r["effective_to"] is None:
            age = rules.price_age_days(r["last_seen_at"], at)
            flag = f"confirmed {age} d ago{' STALE' if is_stale(age, opts) else ''}"
        else:
            flag = "closed"
        typer.echo(f"{r['provider']}/{r['region']}/{r['instance_type']} {r['billing_mode']}: "
                   f"{fmt.per_hour(r['price_per_hour'], r['currency'])} ({fmt.num(r['original_amount'])} "
                   f"{r['currency']}/{r['original_period']}) "
                   f"{r['effective_from'].date()}..{until} {flag}  [{r['source']}]")
    if book.is_empty():
        typer.echo("no prices yet: costgap prices import FILE (a price book csv/yaml or a SkyPilot vms.csv)")


def register(app: typer.Typer) -> None:
    app.add_typer(prices_app, name="prices")
