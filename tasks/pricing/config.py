"""Which price and FX sources the daily refresh runs, and how each cloud API is asked: one TOML file.

    python -c "from tasks.pricing.config import load; print(load('deploy/prices/sources.toml'))"

deploy/prices/sources.toml (or --sources-file / the flow's `sources_file`) holds:
- [daily]: `sources` (named price recipes, tasks/pricing/sources.py), `fx` (FX sources: "ecb") and
  `catalogs` (price files kept in sync by other means, each {path, format}): what `prices/daily` runs;
- [alibaba], [tencent]: the typed settings of tasks/pricing/alibaba.py and tencent.py (zones, image,
  currency, billing modes, the names of the Prefect Secret blocks holding the key pair, retries).
A missing default file means the defaults below; a bad one fails naming the file, the field and the value.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tasks.pricing.alibaba import AlibabaConfig
from tasks.pricing.base import PriceError
from tasks.pricing.tencent import TencentConfig

DEFAULT_FILE = "deploy/prices/sources.toml"  # relative to the checkout, like deploy/targets.toml


class CatalogRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str  # a price file (CSV/YAML price book or SkyPilot vms.csv)
    format: Literal["csv", "yaml", "skypilot"] = "csv"  # how to read it


class Daily(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    sources: list[str] = ["azure-gpu"]  # named price recipes; the one public API that needs no credentials
    fx: list[str] = []  # FX sources, e.g. ["ecb"]
    catalogs: list[CatalogRef] = []  # price files landed as they are


class SourcesConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    daily: Daily = Field(default_factory=Daily)  # what prices/daily refreshes
    alibaba: AlibabaConfig = Field(default_factory=AlibabaConfig)  # tasks/pricing/alibaba.py
    tencent: TencentConfig = Field(default_factory=TencentConfig)  # tasks/pricing/tencent.py
    origin: str = "defaults"  # the file it was read from, for messages (set by load)


def load(path: str | None = None) -> SourcesConfig:
    """The sources file at `path` (None: DEFAULT_FILE, or the defaults where that file does not exist)."""
    p = Path(path or DEFAULT_FILE)
    if not p.is_file():
        if path is None:
            return SourcesConfig()
        raise PriceError(f"{p}: no such sources file (see {DEFAULT_FILE} for the layout)")
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise PriceError(f"{p}: not valid TOML: {e}") from None
    try:
        return SourcesConfig(**doc, origin=str(p))
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        value = f" = {err['input']!r}" if not isinstance(err.get("input"), dict) else ""
        raise PriceError(f"{p}: field '{where}'{value}: {err['msg']}") from None
