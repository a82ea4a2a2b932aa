"""Prices into the warehouse through the one write path, and the daily price refresh flow.

    prefect deployment run 'prices/daily'
    python -c "from flows.prices import refresh_prices; refresh_prices(replay='tests/fixtures/azure')"

`land_prices` and `land_fx` are what `costgap prices import|refresh` and the flow call: the import
and its archive copy in the results store (so `costgap rebuild` can replay it) happen while the
`warehouse-write` slot is held, like every other write. Fetching happens before, outside the slot.
Sources are named recipes (tasks/pricing/sources.py, e.g. `azure-gpu`); `catalogs` are price files
kept in sync by other means (a SkyPilot catalog checkout, a contract price book). A markdown
artifact `costgap-prices` lists what each source changed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Callable

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows import settings
from flows.write_slot import writer
from tasks.pricing import sources
from tasks.pricing.archive import archive_fx, archive_prices
from tasks.pricing.book import ImportSummary, import_fetched
from tasks.pricing.fx import insert_rates


def _fetched(rows) -> datetime:
    return max((r.fetched_at for r in rows), default=None) or datetime.now().astimezone()


def land_prices(warehouse: str, src, rows: list, results: str | None,
                progress: Callable[[str], None] | None = print) -> ImportSummary:
    """Import fetched price rows and archive them in `results`, holding the write slot."""
    with writer(warehouse, progress=progress) as con:
        summary = import_fetched(con, src, rows)
        if results:
            archive_prices(results, summary, rows, _fetched(rows))
    return summary


def land_fx(warehouse: str, rows: list[tuple], results: str | None,
            progress: Callable[[str], None] | None = print) -> dict:
    """Insert validated FX rows (tasks.pricing.fx) and archive the new ones, holding the write slot."""
    with writer(warehouse, progress=progress) as con:
        got = insert_rates(con, rows)
        if results:
            archive_fx(results, rows, got["new"])
    return got


def _as_dict(summary: ImportSummary) -> dict:
    return {**summary.__dict__, "text": summary.as_text()}


@task(name="fetch-prices", retries=2, retry_delay_seconds=30, cache_policy=NO_CACHE)
def fetch(name: str, replay: str | None) -> list:
    return sources.fetch_named(name, replay)


@task(name="land-prices", cache_policy=NO_CACHE)
def land(warehouse: str, name: str, rows: list, results: str) -> dict:
    return _as_dict(land_prices(warehouse, sources.build_source(name, client=None), rows, results, progress=None))


@task(name="land-price-file", cache_policy=NO_CACHE)
def land_file(warehouse: str, path: str, fmt: str, results: str) -> dict:
    src = sources.catalog_source(path, fmt)
    return _as_dict(land_prices(warehouse, src, src.fetch(), results, progress=None))


@flow(name="prices")
def refresh_prices(names: list[str] | None = None, catalogs: list[str] | None = None, catalog_format: str = "skypilot",
                   warehouse: str | None = None, results: str | None = None,
                   replay: str | None = None) -> list[dict]:
    """Refresh prices: every named source (default: azure-gpu), then every catalog file.
    Each import is archived in the results store, so `costgap rebuild` can replay the price book."""
    wh, store = settings.warehouse_path(warehouse), settings.results_url(results)
    done = [land(wh, name, fetch(name, replay), store) for name in (names if names is not None else ["azure-gpu"])]
    done += [land_file(wh, path, catalog_format, store) for path in catalogs or []]
    create_markdown_artifact(key="costgap-prices", markdown=sources.summaries_markdown(done),
                             description="price book refresh: what each source changed")
    return done
