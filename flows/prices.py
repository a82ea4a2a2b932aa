"""Prices into the warehouse through the one write path, and the daily price refresh flow.

    prefect deployment run 'prices/daily'
    python -c "from flows.prices import refresh_prices; refresh_prices(['azure-gpu'], replay='tests/fixtures/azure')"

`land_prices` and `land_fx` are what `costgap prices import|refresh`, `costgap fx import|refresh` and the
flow call: the import and its archive copy in the results store (so `costgap rebuild` can replay it)
happen while the `warehouse-write` slot is held, like every other write. Fetching happens before,
outside the slot. Sources are named recipes (tasks/pricing/sources.py: `azure-gpu`, the SDK sources
`alibaba` and `tencent`, the FX source `ecb`); `catalogs` are price files kept in sync by other means.
Called without source arguments (the prices/daily deployment), the flow refreshes what the sources
file's [daily] lists (deploy/prices/sources.toml). The SDK sources read their key pair from the Prefect
Secret blocks the sources file names, inside the fetch task; the values never leave it.
A source that fails is one line naming source, target and reason; the others still land; the flow
then ends Failed with those lines. A markdown artifact `costgap-prices` lists what each source changed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Callable

from types import SimpleNamespace

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from runtime import settings
from flows.alerts import after_landing
from runtime.write_slot import writer
from tasks.pricing import cloud, config, sources
from tasks.pricing.archive import archive_fx, archive_prices
from tasks.pricing.book import ImportSummary, import_fetched
from tasks.pricing.fx import insert_rates
from tasks.pricing.http import FetchError


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
    """Insert the FX rows (tasks.pricing.fx) the table lacks and archive those, holding the write slot."""
    with writer(warehouse, progress=progress) as con:
        got = insert_rates(con, rows)
        if results:
            archive_fx(results, got["landed"], got["new"])
    del got["landed"]
    return got


def block_credentials(name: str, cfg: config.SourcesConfig, replay: str | None) -> cloud.Credentials | None:
    """An SDK source's key pair from the Prefect Secret blocks the sources file names ([<name>].secret_blocks).
    A missing block fails the source (auth), except under replay, which needs no credentials."""
    from prefect.blocks.system import Secret

    blocks = dict(getattr(cfg, name).secret_blocks)
    values = {}
    for part, block in blocks.items():
        try:
            values[part] = str(Secret.load(block).get())
        except ValueError:
            if replay:
                return None
            raise cloud.SourceFailed(cloud.Failure(
                name, None, cloud.AUTH, f"Prefect Secret block {block!r} ({part}) not found: create it "
                                        f"(README.md, section 'Prices and FX')")) from None
    return cloud.Credentials(values["key_id"], values["secret"], values.get("token"),
                             origin=f"Prefect Secret blocks {', '.join(blocks.values())}")


def _transient(task, task_run, state) -> bool:
    """Retry the fetch task only where waiting can help: throttled, network or server failures."""
    exc = state.result(raise_on_failure=False)
    if isinstance(exc, cloud.SourceFailed):
        return exc.failure.kind in cloud.RETRIED
    return isinstance(exc, FetchError)


def _as_dict(summary: ImportSummary) -> dict:
    return {**summary.__dict__, "text": summary.as_text()}


def _line(name: str, e: BaseException) -> str:
    text = str(e)
    return text if text.startswith(f"{name}:") else f"{name}: {text}"


@task(name="fetch-prices", retries=2, retry_delay_seconds=30, retry_condition_fn=_transient, cache_policy=NO_CACHE)
def fetch(name: str, replay: str | None, sources_file: str | None = None,
          targets_file: str | None = None) -> sources.Fetched:
    cfg = config.load(sources_file)
    creds = block_credentials(name, cfg, replay) if name in sources.SDK_SOURCES else None
    return sources.fetch(name, replay=replay, credentials=creds, config=cfg,
                         targets_file=settings.targets_path(targets_file))


@task(name="land-prices", cache_policy=NO_CACHE)
def land(warehouse: str, got: sources.Fetched, results: str) -> dict:
    src = SimpleNamespace(name=got.name, location=got.location)
    return _as_dict(land_prices(warehouse, src, got.rows, results, progress=None))


@task(name="fetch-fx", retries=2, retry_delay_seconds=30, retry_condition_fn=_transient, cache_policy=NO_CACHE)
def fetch_fx(name: str, replay: str | None) -> sources.Fetched:
    return sources.fetch_fx(name, replay=replay)


@task(name="land-fx", cache_policy=NO_CACHE)
def land_rates(warehouse: str, got: sources.Fetched, results: str) -> dict:
    n = land_fx(warehouse, got.rows, results, progress=None)
    text = f"fx {got.name} {got.location}: {n['rows']} rates, {n['new']} new, {n['unchanged']} unchanged"
    return {"source_kind": got.name, "source": got.location, "rows_in": n["rows"], "rows_new": n["new"],
            "rows_unchanged": n["unchanged"], "rows_closed": 0, "text": text}


@task(name="land-price-file", cache_policy=NO_CACHE)
def land_file(warehouse: str, path: str, fmt: str, results: str) -> dict:
    src = sources.catalog_source(path, fmt)
    return _as_dict(land_prices(warehouse, src, src.fetch(), results, progress=None))


class PricesIncomplete(Exception):
    """Some sources failed (each named on its own line); everything else landed."""


@flow(name="prices")
def refresh_prices(names: list[str] | None = None, catalogs: list[str] | None = None, catalog_format: str = "skypilot",
                   warehouse: str | None = None, results: str | None = None,
                   replay: str | dict[str, str] | None = None, fx: list[str] | None = None,
                   sources_file: str | None = None, targets_file: str | None = None) -> list[dict]:
    """Refresh prices: every named source, every FX source, then every catalog file. With none of `names`,
    `catalogs` and `fx` given, what the sources file's [daily] lists. `replay` is one recorded directory
    for all sources, or {source: directory}. Each import is archived in the results store, so `costgap
    rebuild` can replay the price book."""
    wh, store = settings.warehouse_path(warehouse), settings.results_url(results)
    cfg = config.load(sources_file)
    if names is None and catalogs is None and fx is None:
        names, fx, files = cfg.daily.sources, cfg.daily.fx, [(c.path, c.format) for c in cfg.daily.catalogs]
    else:
        files = [(path, catalog_format) for path in catalogs or []]
    done: list[dict] = []
    failed: list[str] = []
    for name in names or []:
        try:
            got = fetch(name, _replay_for(replay, name), sources_file, targets_file)
            failed += got.failures
            if got.rows:
                done.append(land(wh, got, store))
        except Exception as e:  # noqa: BLE001 (one line per failed source; the others still land)
            failed.append(_line(name, e))
    for name in fx or []:
        try:
            done.append(land_rates(wh, fetch_fx(name, _replay_for(replay, name)), store))
        except Exception as e:  # noqa: BLE001
            failed.append(_line(name, e))
    for path, fmt in files:
        try:
            done.append(land_file(wh, path, fmt, store))
        except Exception as e:  # noqa: BLE001
            failed.append(_line(path, e))
    markdown = sources.summaries_markdown(done)
    if failed:
        markdown += "\n\n**Failed** (nothing half-written; the rows above landed):\n" + "".join(
            f"\n- {line}" for line in failed)
    create_markdown_artifact(key="costgap-prices", markdown=markdown,
                             description="price book refresh: what each source changed")
    after_landing(wh, None, "prices")  # events for what changed (a new price period, ...)
    if failed:
        raise PricesIncomplete(f"{len(failed)} source(s) or target(s) failed:\n" + "\n".join(failed))
    return done


def _replay_for(replay: str | dict[str, str] | None, name: str) -> str | None:
    return replay.get(name) if isinstance(replay, dict) else replay
