"""Load SQL from warehouse/queries/<name>.sql (one query per file, CTE style).

    python -c "from warehouse.sql import load_query; print(load_query('runs'))"
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=None)
def load_query(name: str) -> str:
    """Return the text of warehouse/queries/<name>.sql. Parameters inside are bound, never formatted."""
    return resources.files("warehouse.queries").joinpath(f"{name}.sql").read_text(encoding="utf-8")
