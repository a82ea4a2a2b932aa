"""Named price sources for `costgap prices refresh --source NAME` and the daily price flow.

    costgap prices refresh --source azure-gpu --replay tests/fixtures/azure
    costgap prices refresh --source alibaba --replay tests/fixtures/alibaba

A recipe names a fetcher and its query, so a refresh is reproducible from its name alone. Live
fetchers take the HTTP client, or the credentials for an SDK client, as an argument (tasks.pricing.http,
tasks.pricing.cloud); nothing here opens a socket or reads a credential.
- HTTP recipes (RECIPES): public APIs without credentials, e.g. azure-gpu;
- SDK recipes (SDK_SOURCES): alibaba, tencent: the targets of that provider in the targets file, asked
  through the provider's SDK with the key pair passed in (or a recorded replay directory);
- FX_SOURCES: ecb (tasks/pricing/ecb.py), landed into fx_rates by `costgap fx refresh`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

from tasks.pricing.azure import AzureRetailPrices
from tasks.pricing.base import PriceError, PriceSource
from tasks.pricing.cloud import Credentials, PricedTarget
from tasks.pricing.http import HttpClient

# GPU VM sizes costgap compares on Azure (Azure VM size docs, NC/ND series, read 2026-12-02).
AZURE_GPU_SKUS = (
    "Standard_NC24ads_A100_v4", "Standard_NC40ads_H100_v5", "Standard_ND96isr_H100_v5",
    "Standard_ND96isr_H200_v5", "Standard_NV36ads_A10_v5", "Standard_NC4as_T4_v3",
)
AZURE_GPU_FILTER = "serviceName eq 'Virtual Machines' and (" + " or ".join(
    f"armSkuName eq '{s}'" for s in AZURE_GPU_SKUS) + ")"

RECIPES: dict[str, Callable[[HttpClient, datetime | None], PriceSource]] = {
    # Azure Retail Prices API, the GPU sizes above, every region, USD, on-demand/spot/1-year.
    "azure-gpu": lambda client, when: AzureRetailPrices(client, AZURE_GPU_FILTER, "USD", when),
}


SDK_SOURCES = ("alibaba", "tencent")  # the provider name in the targets file is the recipe name
FX_SOURCES = ("ecb",)  # FX rates, not prices: `costgap fx refresh --source ecb`


def known_sources() -> list[str]:
    return sorted([*RECIPES, *SDK_SOURCES])


def build_source(name: str, client: HttpClient | None = None, fetched_at: datetime | None = None, *,
                 replay: str | None = None, credentials: Credentials | None = None,
                 targets: list[PricedTarget] | None = None, config=None,
                 sleep: Callable[[float], None] = time.sleep) -> PriceSource:
    """The named source. HTTP recipes use `client`; SDK recipes use `credentials` (live) or `replay` (a
    recorded directory), `targets` (priced_targets) and `config` (tasks.pricing.config.SourcesConfig)."""
    if name in FX_SOURCES:
        raise PriceError(f"--source {name!r}: an FX source; use `costgap fx refresh --source {name}`")
    if name in SDK_SOURCES:
        return _sdk_source(name, fetched_at, replay, credentials, targets or [], config, sleep)
    if name not in RECIPES:
        raise PriceError(f"--source {name!r}: unknown price source; expected one of {known_sources()}")
    return RECIPES[name](client, fetched_at)


def _sdk_source(name, fetched_at, replay, credentials, targets, config, sleep) -> PriceSource:
    from tasks.pricing import alibaba, tencent
    from tasks.pricing.config import SourcesConfig

    cfg = config or SourcesConfig()
    if replay is None and credentials is None:
        raise PriceError(f"{name}: no credentials; see README.md, section 'Prices and FX' (Secret blocks for the flow, "
                         f"environment variables for the CLI)")
    if name == "alibaba":
        api = alibaba.ReplayEcs(replay, credentials) if replay else alibaba.LiveEcs(credentials, cfg.alibaba.timeout_ms)
        return alibaba.AlibabaEcsPrices(api, targets, cfg.alibaba, credentials, fetched_at, sleep)
    api = (tencent.ReplayCvm(replay, credentials) if replay
           else tencent.LiveCvm(credentials, cfg.tencent.endpoint, cfg.tencent.timeout_s))
    return tencent.TencentCvmPrices(api, targets, cfg.tencent, credentials, fetched_at, sleep)


def env_credentials(name: str, environ) -> Credentials | None:
    """The SDK's standard environment variables for an SDK source (the CLI's way; the flow uses blocks)."""
    from tasks.pricing import alibaba, tencent
    from tasks.pricing.cloud import env_credentials as from_env

    if name == "alibaba":
        return from_env(environ, alibaba.ENV_ID, alibaba.ENV_SECRET, alibaba.ENV_TOKEN)
    return from_env(environ, tencent.ENV_ID, tencent.ENV_SECRET)


def credential_names(name: str, config) -> dict:
    """Where an SDK source's key pair comes from: environment variable names and Secret block names."""
    from tasks.pricing import alibaba, tencent

    env = (alibaba.ENV_ID, alibaba.ENV_SECRET) if name == "alibaba" else (tencent.ENV_ID, tencent.ENV_SECRET)
    return {"env": env, "blocks": dict(getattr(config, name).secret_blocks)}


def priced_targets(targets_file: str | Path, provider: str) -> list[PricedTarget]:
    """The targets of one provider in the targets file, as a cloud source prices them."""
    from tasks.dispatch.targets import load_targets

    return [PricedTarget(t.id, t.region, t.instance_type) for t in load_targets(targets_file)
            if t.provider == provider]


def refresh(con, name: str, client: HttpClient, fetched_at: datetime | None = None):
    """Fetch the named source through `client` and land it (tasks.pricing.book.import_source)."""
    from tasks.pricing.book import import_source

    return import_source(con, build_source(name, client, fetched_at), fetched_at)


@dataclass
class Fetched:
    """One source read: its rows (PriceRows, or FX rate tuples) and what it could not price."""

    name: str  # the recipe's source kind (price_imports.source_kind), e.g. alibaba, azure, ecb
    location: str  # the URL, endpoint or replay directory (price_imports.source)
    rows: list  # validated rows, fetched before the warehouse is touched
    failures: list[str] = field(default_factory=list)  # one line per target that could not be priced
    skipped: dict = field(default_factory=dict)  # reason -> count (modes not offered, N/A cells, ...)


def fetch(name: str, *, replay: str | None = None, credentials: Credentials | None = None, config=None,
          targets_file: str | Path | None = None, fetched_at: datetime | None = None,
          sleep: Callable[[float], None] = time.sleep) -> Fetched:
    """Read one named price source (HTTP recipe or SDK source) live, or from a `replay` directory.
    Raises SourceFailed when the whole source failed (nothing from it may land)."""
    if name in SDK_SOURCES:
        if targets_file is None:
            raise PriceError(f"{name}: no targets file: the SDK sources price the targets of their provider")
        targets = priced_targets(targets_file, name)
        src = build_source(name, None, fetched_at, replay=replay, credentials=credentials, targets=targets,
                           config=config, sleep=sleep)
        rows = src.fetch()
    else:
        with http_client(replay) as client:  # one connection for every page of the source, closed after it
            src = build_source(name, client, fetched_at)
            rows = src.fetch()
    return Fetched(src.name, src.location, rows, [f.line() for f in getattr(src, "failures", [])],
                   dict(getattr(src, "skipped", {})))


def fetch_fx(name: str, *, replay: str | None = None, path: str | None = None) -> Fetched:
    """Read one named FX source: from the network, a `replay` directory, or a downloaded file."""
    from tasks.pricing import ecb

    if name not in FX_SOURCES:
        raise PriceError(f"--source {name!r}: unknown FX source; expected one of {list(FX_SOURCES)}")
    if path:
        rates = ecb.from_file(path)
    else:
        with http_client(replay) as client:
            rates = ecb.from_url(client)
    rows = rates.rows()
    skipped = dict(rates.skipped)
    if rates.ignored:
        skipped[f"currencies costgap does not price in ({', '.join(sorted(rates.ignored))})"] = len(rates.ignored)
    return Fetched(rates.name, rates.origin, rows, [], skipped)


def fetch_named(name: str, replay: str | None = None) -> list:
    """Rows of a named source, live (httpx) or from recorded responses in `replay`."""
    with http_client(replay) as client:
        return build_source(name, client).fetch()


def http_client(replay: str | None = None):
    """The HTTP client for one source run: the recorded responses in `replay`, else the live one (a context
    manager either way: the live one's kept-alive connection is closed when the run ends)."""
    from tasks.pricing.http import LiveClient, ReplayClient

    return ReplayClient(replay) if replay else LiveClient()


def catalog_source(path: str, fmt: str = "skypilot") -> PriceSource:
    """A price file kept in sync by other means: a SkyPilot catalog, or a CSV/YAML price book."""
    from tasks.pricing.pricebook_file import PriceBookFile
    from tasks.pricing.skypilot import SkyPilotCatalog

    return SkyPilotCatalog(path) if fmt == "skypilot" else PriceBookFile(path, fmt)


def summaries_markdown(summaries: list[dict]) -> str:
    """The price-refresh artifact: one row per source."""
    lines = ["| source | kind | rows | new periods | unchanged | closed |", "|---|---|---:|---:|---:|---:|"]
    for s in summaries:
        where = s["source"] if len(s["source"]) <= 60 else s["source"][:57] + "..."
        lines.append(f"| {where} | {s['source_kind']} | {s['rows_in']} | {s['rows_new']} | {s['rows_unchanged']} |"
                     f" {s['rows_closed']} |")
    return "\n".join(lines)
