"""Load SQL from warehouse/queries/<name>.sql (one query per file, CTE style) and fetch its result.

    python -c "from warehouse.sql import load_query; print(load_query('price_book'))"

`frame`, `columns` and `frame_numpy` run a named query with bound parameters on a connection the
caller opened (only flows/ and the CLI open the warehouse) and return polars or numpy results.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import numpy as np
import polars as pl


@lru_cache(maxsize=None)
def load_query(name: str) -> str:
    """Return the text of warehouse/queries/<name>.sql. Parameters inside are bound, never formatted."""
    return resources.files("warehouse.queries").joinpath(f"{name}.sql").read_text(encoding="utf-8")


def _execute(con, name: str, params=None):
    sql = load_query(name)
    return con.execute(sql, params) if params is not None else con.execute(sql)


def frame(con, name: str, params=None) -> pl.DataFrame:
    """Run a named query and return a polars DataFrame (rows; no pyarrow needed)."""
    cur = _execute(con, name, params)
    cols = [d[0] for d in cur.description]
    rows = cur.fetchall()
    if not rows:
        return pl.DataFrame(schema=cols)
    return pl.DataFrame(rows, schema=cols, orient="row", infer_schema_length=None)


def rows(con, name: str, params=None) -> list[dict]:
    """Run a named query and return its rows as dicts."""
    cur = _execute(con, name, params)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def columns(con, name: str, params=None) -> dict:
    """Run a named query and return {column: numpy array}: the fast path for large numeric results."""
    return _execute(con, name, params).fetchnumpy()


def frame_numpy(con, name: str, params=None) -> pl.DataFrame:
    """`frame` for large results: numpy columns (NULLs via masks), timestamptz kept as UTC."""
    cur = _execute(con, name, params)
    kinds = {d[0]: str(d[1]) for d in cur.description}
    series = []
    for col, arr in cur.fetchnumpy().items():
        mask = np.ma.getmaskarray(arr) if isinstance(arr, np.ma.MaskedArray) else None
        values = arr.data if isinstance(arr, np.ma.MaskedArray) else arr
        s = pl.Series(col, values.tolist() if values.dtype == object else values)
        if mask is not None and mask.any() and s.dtype != pl.Null:
            s = s.scatter(np.nonzero(mask)[0], None)
        if "TIME ZONE" in kinds[col].upper() and s.dtype == pl.Datetime:
            s = s.dt.replace_time_zone("UTC")
        series.append(s)
    return pl.DataFrame(series)
