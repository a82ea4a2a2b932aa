"""Azure Retail Prices fetcher against recorded responses (tests/fixtures/azure), HTTP client passed in.

    .venv/bin/pytest -q tests/test_pricing_azure.py
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tasks.pricing import PriceError, import_source
from tasks.pricing.azure import AzureRetailPrices
from tasks.pricing.http import ReplayClient
from tasks.pricing.sources import AZURE_GPU_FILTER, build_source
from tests.cost_support import warehouse

RECORDED = Path(__file__).parent / "fixtures" / "azure"
WHEN = datetime(2026, 12, 2, tzinfo=timezone.utc)


class CountingClient(ReplayClient):
    """The replay client, counting the URLs it was asked for (to see the paging)."""

    def __init__(self, directory):
        super().__init__(str(directory))
        self.urls: list[str] = []

    def get_json(self, url):
        self.urls.append(url)
        return super().get_json(url)


def test_follows_next_page_link_and_maps_billing_modes():
    client = CountingClient(RECORDED)
    src = AzureRetailPrices(client, AZURE_GPU_FILTER, fetched_at=WHEN)
    rows = src.fetch()
    assert len(client.urls) == 2 and client.urls[1].endswith("&$skip=100")
    got = sorted((r.instance_type, r.region, r.billing_mode, r.original_amount, r.original_period) for r in rows)
    assert got == [
        ("Standard_NC24ads_A100_v4", "eastus", "on_demand", 3.673, "hour"),
        ("Standard_NC24ads_A100_v4", "eastus", "spot", 0.7346, "hour"),
        ("Standard_NC24ads_A100_v4", "eastus", "yearly", 20270.0, "year"),
        ("Standard_ND96isr_H100_v5", "eastus", "on_demand", 98.32, "hour"),
        ("Standard_ND96isr_H100_v5", "westeurope", "on_demand", 104.5, "hour"),
    ]
    assert dict(src.skipped) == {"low_priority": 1, "windows": 1, "reservation_term": 1, "other_type": 1}
    yearly = next(r for r in rows if r.billing_mode == "yearly")
    assert yearly.price_per_hour == 20270.0 / 8760 and yearly.source.startswith("https://prices.azure.com/")
    assert all(r.effective_from == datetime(2024, 4, 1, tzinfo=timezone.utc) for r in rows)


def test_refresh_lands_and_a_changed_page_opens_a_new_period(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    first = import_source(con, build_source("azure-gpu", ReplayClient(str(RECORDED)), WHEN))
    assert (first.source_kind, first.rows_new) == ("azure", 5)
    again = import_source(con, build_source("azure-gpu", ReplayClient(str(RECORDED)), WHEN))
    assert again.repeat
    changed = tmp_path / "azure"
    shutil.copytree(RECORDED, changed)
    page = json.loads((changed / "page2.json").read_text())
    page["Items"][0].update(retailPrice=90.0, unitPrice=90.0, effectiveStartDate="2026-11-01T00:00:00Z")
    (changed / "page2.json").write_text(json.dumps(page))
    later = import_source(con, build_source("azure-gpu", ReplayClient(str(changed)), WHEN))
    assert (later.rows_new, later.rows_closed, later.rows_unchanged) == (1, 1, 4)
    hist = con.execute("select price_per_hour from prices where instance_type = 'Standard_ND96isr_H100_v5' and"
                       " region = 'eastus' order by effective_from").fetchall()
    assert hist == [(98.32,), (90.0,)]


def test_bad_responses_and_names_fail_clearly(tmp_path):
    with pytest.raises(PriceError, match="unknown price source"):
        build_source("nope", ReplayClient(str(RECORDED)))
    bad = tmp_path / "azure"
    shutil.copytree(RECORDED, bad)
    (bad / "page1.json").write_text(json.dumps({"Error": "throttled"}))
    with pytest.raises(PriceError, match="field 'Items' is missing"):
        AzureRetailPrices(ReplayClient(str(bad)), AZURE_GPU_FILTER).fetch()
    (bad / "page1.json").write_text(json.dumps({"Items": [{"type": "Consumption", "unitOfMeasure": "1 Hour",
        "retailPrice": 1.0, "currencyCode": "ZZZ", "armRegionName": "eastus", "armSkuName": "X",
        "effectiveStartDate": "2026-01-01T00:00:00Z", "meterId": "m9"}], "NextPageLink": None}))
    with pytest.raises(PriceError, match="item m9: .*unknown currency"):
        AzureRetailPrices(ReplayClient(str(bad)), AZURE_GPU_FILTER).fetch()
    with pytest.raises(PriceError, match="no recorded response"):
        AzureRetailPrices(ReplayClient(str(bad)), "serviceName eq 'Storage'").fetch()


def test_cli_refresh_with_recorded_responses(tmp_path):
    from typer.testing import CliRunner

    from cli.main import app

    args = ["prices", "refresh", "--source", "azure-gpu", "--replay", str(RECORDED), "--warehouse",
            str(tmp_path / "w.duckdb"), "--results", str(tmp_path / "results")]
    got = CliRunner().invoke(app, args)
    assert got.exit_code == 0, got.output
    assert "5 new periods" in got.output and "skipped 1 items: windows" in got.output
