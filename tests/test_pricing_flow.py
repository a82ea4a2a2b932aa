"""The daily price-refresh flow on a real Prefect test server: recorded Azure pages + the SkyPilot catalog.

    .venv/bin/pytest -q tests/test_pricing_flow.py
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cost_support import warehouse

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.slow
def test_refresh_flow_lands_then_changes_nothing(prefect_harness, tmp_path):
    from flows.prices import refresh_prices

    wh = str(tmp_path / "w.duckdb")
    kwargs = dict(names=["azure-gpu"], catalogs=[str(FIXTURES / "skypilot" / "lambda-vms.csv")], warehouse=wh,
                  results=str(tmp_path / "results"),
                  replay=str(FIXTURES / "azure"))
    first = refresh_prices(**kwargs)
    assert [(s["source_kind"], s["rows_new"]) for s in first] == [("azure", 5), ("skypilot", 323)]
    second = refresh_prices(**kwargs)
    assert all(s["rows_new"] == 0 and s["rows_closed"] == 0 for s in second)
    con = warehouse(wh)
    assert con.execute("select count(*) from prices").fetchall() == [(328,)]
    assert con.execute("select count(*) from price_imports").fetchall() == [(3,)]  # azure twice, catalog once
    assert len(list((tmp_path / "results" / "_prices").glob("*.jsonl"))) == 3  # every distinct import archived
