"""The daily price refresh: fetch each named public price source, land what changed, one writer at a time.

    prefect deployment run 'prices/daily'
    python -c "from flows.prices import refresh_prices; refresh_prices(replay='tests/fixtures/azure')"

Sources are named recipes (tasks/pricing/sources.py, e.g. `azure-gpu`); `catalogs` are price files kept
in sync by other means (a SkyPilot catalog checkout, a contract price book). Fetching happens outside
the warehouse lock; landing holds the global concurrency limit `warehouse-write` like the compare flow.
A markdown artifact `costgap-prices` lists what each source changed.
"""

from __future__ import annotations

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows import settings
from flows.compare import ensure_write_limit, write_slot
from tasks.pricing import sources


@task(name="fetch-prices", retries=2, retry_delay_seconds=30, cache_policy=NO_CACHE)
def fetch(name: str, replay: str | None) -> list:
    return sources.fetch_named(name, replay)


@task(name="land-prices", cache_policy=NO_CACHE)
def land(warehouse: str, name: str, rows: list, results: str) -> dict:
    return sources.land_named(warehouse, name, rows, results)


@task(name="land-price-file", cache_policy=NO_CACHE)
def land_file(warehouse: str, path: str, fmt: str, results: str) -> dict:
    return sources.land_catalog(warehouse, path, fmt, results)


@flow(name="prices")
def refresh_prices(names: list[str] | None = None, catalogs: list[str] | None = None, catalog_format: str = "skypilot",
                   warehouse: str | None = None, results: str | None = None,
                   replay: str | None = None) -> list[dict]:
    """Refresh prices: every named source (default: azure-gpu), then every catalog file.
    Each import is archived in the results store, so `costgap rebuild` can replay the price book."""
    wh, store = settings.warehouse_path(warehouse), settings.results_url(results)
    ensure_write_limit()
    done = []
    for name in names if names is not None else ["azure-gpu"]:
        rows = fetch(name, replay)
        with write_slot():
            done.append(land(wh, name, rows, store))
    for path in catalogs or []:
        with write_slot():
            done.append(land_file(wh, path, catalog_format, store))
    create_markdown_artifact(key="costgap-prices", markdown=sources.summaries_markdown(done),
                             description="price book refresh: what each source changed")
    return done
