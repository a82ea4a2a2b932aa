"""The daily price-refresh flow on a real Prefect test server: recorded Azure pages + the SkyPilot catalog,
and the configured daily set (Alibaba, Tencent, the ECB, a price book) with Secret blocks and failures.

    .venv/bin/pytest -q tests/test_pricing_flow.py

Recorded answers: tests/fixtures/{alibaba,tencent,ecb}/README.md say where each shape comes from.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cloud_targets import GN7I, GN7I_BEIJING, GN10XP, GN10XP_SHANGHAI, targets_toml
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


TARGETS = targets_toml(GN7I, GN7I_BEIJING, GN10XP, GN10XP_SHANGHAI)


def _sources_file(tmp_path, blocks: str = "flowtest") -> str:
    path = tmp_path / "sources.toml"
    path.write_text(f"""
[daily]
sources = ["alibaba", "tencent"]
fx = ["ecb"]
catalogs = [{{ path = "{FIXTURES.parent.parent / 'deploy' / 'prices' / 'lambda.csv'}", format = "csv" }}]
[alibaba]
backoff_s = 0
secret_blocks = {{ key_id = "{blocks}-ali-id", secret = "{blocks}-ali-secret" }}
[tencent]
backoff_s = 0
image_id = "img-487zeit5"
secret_blocks = {{ key_id = "{blocks}-tc-id", secret = "{blocks}-tc-secret" }}
[tencent.zones]
"ap-guangzhou" = "ap-guangzhou-3"
"ap-shanghai" = "ap-shanghai-2"
""")
    return str(path)


REPLAY = {"alibaba": str(FIXTURES / "alibaba"), "tencent": str(FIXTURES / "tencent"), "ecb": str(FIXTURES / "ecb")}


@pytest.mark.slow
def test_daily_flow_refreshes_every_configured_source_and_isolates_failures(prefect_harness, tmp_path):
    """No source arguments: what [daily] lists. Two targets are not sold where asked: each is one line,
    everything else lands, and the flow ends Failed naming them."""
    from flows.prices import PricesIncomplete, refresh_prices

    targets = tmp_path / "targets.toml"
    targets.write_text(TARGETS)
    wh = str(tmp_path / "w.duckdb")
    with pytest.raises(PricesIncomplete) as got:
        refresh_prices(warehouse=wh, results=str(tmp_path / "results"), replay=REPLAY,
                       sources_file=_sources_file(tmp_path), targets_file=str(targets))
    lines = str(got.value).splitlines()
    assert lines[0] == "2 source(s) or target(s) failed:"
    assert lines[1].startswith("alibaba: target alibaba-gn7i-beijing (cn-beijing ecs.gn7i-c8g1.2xlarge): not sold: "
                               "every billing mode: InvalidInstanceType.ValueNotSupported")
    assert lines[2].startswith("tencent: target tencent-gn10xp-shanghai (ap-shanghai GN10Xp.2XLARGE40): not sold: "
                               "every billing mode: ResourceNotFound.InvalidZoneInstanceType")
    con = warehouse(wh)
    assert con.execute("select provider, count(*) from prices group by all order by all").fetchall() == [
        ("alibaba", 4), ("lambda", 2), ("tencent", 4)]  # lambda.csv: 2 rows
    assert con.execute("select count(*) from fx_rates").fetchall() == [(131260,)]
    con.close()


@pytest.mark.slow
def test_flow_reads_secret_blocks_and_a_refused_key_is_one_redacted_line(prefect_harness, tmp_path):
    from prefect.blocks.system import Secret

    from flows.prices import PricesIncomplete, refresh_prices

    planted = "LTAI5tFlowPlantedKey"
    for name in ("blocktest-ali-id", "blocktest-ali-secret", "blocktest-tc-id", "blocktest-tc-secret"):
        Secret(value=planted).save(name, overwrite=True)
    refused = tmp_path / "alibaba"
    shutil.copytree(FIXTURES / "alibaba", refused)
    index = json.loads((refused / "index.json").read_text())
    index = {k: ["errors/signature.json"] for k in index}  # every call: SignatureDoesNotMatch, quoting the key
    (refused / "index.json").write_text(json.dumps(index))
    targets = tmp_path / "targets.toml"
    targets.write_text(targets_toml(GN7I, GN10XP))
    wh = str(tmp_path / "w.duckdb")
    with pytest.raises(PricesIncomplete) as got:
        refresh_prices(names=["alibaba", "tencent"], warehouse=wh, results=str(tmp_path / "results"),
                       replay={"alibaba": str(refused), "tencent": REPLAY["tencent"]},
                       sources_file=_sources_file(tmp_path, "blocktest"), targets_file=str(targets))
    text = str(got.value)
    assert "alibaba: target alibaba-gn7i-c8g1-2xlarge (cn-hangzhou ecs.gn7i-c8g1.2xlarge): auth: on_demand: " \
           "SignatureDoesNotMatch" in text and "AccessKeyId%3D***" in text and "nothing from this source" in text
    assert planted not in text
    con = warehouse(wh)
    assert con.execute("select provider, count(*) from prices group by all").fetchall() == [("tencent", 4)]
    con.close()
    # live (no replay) without the blocks: one line naming the missing block, and no call is made
    with pytest.raises(PricesIncomplete, match="tencent: auth: Prefect Secret block 'nosuch-tc-id' .key_id. not found"):
        refresh_prices(names=["tencent"], warehouse=wh, sources_file=_sources_file(tmp_path, "nosuch"),
                       targets_file=str(targets))
