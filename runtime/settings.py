"""Where things live by default: flags first, then COSTGAP_* environment variables, then ./paths.

    python -c "from runtime.settings import warehouse_path; print(warehouse_path(None))"
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_WAREHOUSE = "costgap.duckdb"  # a local DuckDB file: the embedded default
DEFAULT_SITE = "site"  # the static report directory
DEFAULT_RESULTS = "results"  # the results store: a directory or any fsspec URL
DEFAULT_TARGETS = "deploy/targets.toml"  # one entry per instance type


def _pick(flag: str | None, env: str, default: str) -> str:
    if flag:
        return flag
    value = os.environ.get(env, "").strip()
    return value or default


def warehouse_path(flag: str | None = None) -> str:
    return _pick(flag, "COSTGAP_WAREHOUSE", DEFAULT_WAREHOUSE)


def site_url(flag: str | None = None) -> str:
    return _pick(flag, "COSTGAP_SITE", DEFAULT_SITE)


def results_url(flag: str | None = None) -> str:
    return _pick(flag, "COSTGAP_RESULTS", DEFAULT_RESULTS)


def targets_path(flag: str | None = None) -> Path:
    return Path(_pick(flag, "COSTGAP_TARGETS", DEFAULT_TARGETS))


def profile_name(flag: str | None = None) -> str:
    return _pick(flag, "COSTGAP_PROFILE", "quick")
