"""Tencent Cloud CVM prices against recorded answers deserialised by the SDK (tests/fixtures/tencent).

    .venv/bin/python -m pytest -q tests/test_pricing_tencent.py

Where the shapes come from: tests/fixtures/tencent/README.md. Each recording is the wire answer
{"Response": {...}} of InquiryPriceRunInstances (API reference 213/15726; Price/ItemPrice 213/15753),
deserialised by tencentcloud.cvm.v20170312.models.InquiryPriceRunInstancesResponse._deserialize (the replay
refuses any field the SDK warns "useless" about); errors are raised as TencentCloudSDKException(code,
message, request id), as the SDK's AbstractClient._check_error raises them, with codes from the SDK's
errorcodes.py and the common error codes.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tasks.pricing import cloud
from tasks.pricing.book import import_fetched
from tasks.pricing.tencent import ReplayCvm, TencentConfig, TencentCvmPrices, classify
from tests.cloud_targets import GN10XP
from tests.cloud_targets import GN10XP_SHANGHAI as SHANGHAI
from tests.cost_support import warehouse

RECORDED = Path(__file__).parent / "fixtures" / "tencent"
WHEN = datetime(2026, 12, 4, 6, tzinfo=timezone.utc)
CFG = TencentConfig(zones={"ap-guangzhou": "ap-guangzhou-3", "ap-shanghai": "ap-shanghai-2"},
                    image_id="img-487zeit5", backoff_s=0.25)
HOUR_KEY = ("ap-guangzhou InquiryPriceRunInstances ImageId=img-487zeit5 InstanceChargeType=POSTPAID_BY_HOUR "
            "InstanceCount=1 InstanceType=GN10Xp.2XLARGE40 Placement.Zone=ap-guangzhou-3")
SPOT_KEY = HOUR_KEY.replace("POSTPAID_BY_HOUR", "SPOTPAID")


def _source(directory=RECORDED, targets=(GN10XP,), when=WHEN, cfg=CFG, credentials=None, sleeps=None):
    sleeps = [] if sleeps is None else sleeps
    return TencentCvmPrices(ReplayCvm(str(directory), credentials), list(targets), cfg, credentials, when,
                            sleep=sleeps.append, jitter=lambda: 1.0)  # each wait backoff_s * 2**n


def _copy(tmp_path, answers: dict[str, list[str]] | None = None) -> Path:
    d = tmp_path / "tencent"
    shutil.copytree(RECORDED, d)
    index = json.loads((d / "index.json").read_text())
    index.update(answers or {})
    (d / "index.json").write_text(json.dumps(index))
    return d


def test_three_billing_modes_and_spot_from_the_sdk_models():
    src = _source()
    rows = {r.billing_mode: r for r in src.fetch()}
    got = {m: (r.currency, r.original_amount, r.original_period) for m, r in rows.items()}
    assert got == {"on_demand": ("CNY", 14.43, "hour"), "monthly": ("CNY", 6820.0, "month"),
                   "yearly": ("CNY", 69564.0, "year"), "spot": ("CNY", 2.886, "hour")}
    # PREPAID Period 12 is the whole year's DiscountPrice (the 85% rule applied), /8760 h in the book
    assert rows["yearly"].price_per_hour == 69564.0 / 8760 and rows["monthly"].price_per_hour == 6820.0 / 730
    assert "InstanceChargePrepaid.Period=12 DiscountPrice RequestId=b4c0e1a2" in rows["yearly"].source
    assert all(r.effective_from == WHEN for r in rows.values()) and src.failures == []


def test_a_recorded_field_the_sdk_does_not_know_is_refused(tmp_path):
    d = _copy(tmp_path)
    doc = json.loads((d / "gn10xp-hour.json").read_text())
    doc["Response"]["Price"]["InstancePrice"]["HourlyPrice"] = 14.43  # ItemPrice has no such field
    (d / "gn10xp-hour.json").write_text(json.dumps(doc))
    with pytest.raises(cloud.RecordingError, match="HourlyPrice fileds are useless"):
        _source(d).fetch()


def test_unchanged_price_is_a_no_op_and_a_change_opens_a_new_period(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    first = _source()
    assert import_fetched(con, first, first.fetch()).rows_new == 4
    again = _source(when=WHEN + timedelta(days=1))
    s = import_fetched(con, again, again.fetch())
    assert (s.rows_new, s.rows_unchanged, s.rows_closed) == (0, 4, 0)
    d = _copy(tmp_path)
    doc = json.loads((d / "gn10xp-month.json").read_text())
    doc["Response"]["Price"]["InstancePrice"].update(OriginalPrice=7200.0, DiscountPrice=7200.0)  # a rise
    (d / "gn10xp-month.json").write_text(json.dumps(doc))
    later = _source(d, when=WHEN + timedelta(days=2))
    s = import_fetched(con, later, later.fetch())
    assert (s.rows_new, s.rows_unchanged, s.rows_closed) == (1, 3, 1)
    assert con.execute("select original_amount from prices where billing_mode = 'monthly' "
                       "order by effective_from").fetchall() == [(6820.0,), (7200.0,)]


def test_request_limit_is_retried_with_backoff_then_lands(tmp_path):
    d = _copy(tmp_path, {HOUR_KEY: ["errors/request-limit.json", "gn10xp-hour.json"]})
    sleeps: list[float] = []
    assert len(_source(d, sleeps=sleeps).fetch()) == 4 and sleeps == [0.25]


def test_auth_failure_stops_the_source_without_retrying(tmp_path):
    d = _copy(tmp_path, {HOUR_KEY: ["errors/secret-id-not-found.json"]})
    creds = cloud.Credentials("AKIDplantedid", "plantedkey", origin="test")
    sleeps: list[float] = []
    with pytest.raises(cloud.SourceFailed) as got:
        _source(d, credentials=creds, sleeps=sleeps).fetch()
    line = str(got.value)
    assert line.startswith("tencent: target tencent-gn10xp-2xlarge40 (ap-guangzhou GN10Xp.2XLARGE40): auth: "
                           "on_demand: AuthFailure.SecretIdNotFound: The SecretId is not found")
    assert "planted" not in line and sleeps == []


def test_instance_type_the_zone_does_not_sell_fails_that_target_only():
    src = _source(targets=(SHANGHAI, GN10XP))
    assert {r.region for r in src.fetch()} == {"ap-guangzhou"}
    assert [f.line() for f in src.failures] == [
        "tencent: target tencent-gn10xp-shanghai (ap-shanghai GN10Xp.2XLARGE40): not sold: every billing mode: "
        "ResourceNotFound.InvalidZoneInstanceType: The specified zone does not sell the instance type. "
        "(RequestId c5d1f2b3-0000-4000-8000-000000000003)"]


def test_spot_where_the_api_does_not_offer_it_is_skipped(tmp_path):
    d = _copy(tmp_path, {SPOT_KEY: ["errors/no-spot.json"]})
    src = _source(d)
    assert sorted(r.billing_mode for r in src.fetch()) == ["monthly", "on_demand", "yearly"]
    assert dict(src.skipped) == {"spot not offered": 1} and src.failures == []


def test_a_region_without_a_configured_zone_is_one_clear_line():
    src = _source(cfg=TencentConfig(image_id="img-487zeit5"))
    assert src.fetch() == []
    assert [f.line() for f in src.failures] == [
        "tencent: target tencent-gn10xp-2xlarge40 (ap-guangzhou GN10Xp.2XLARGE40): rejected: [tencent] "
        "zones.\"ap-guangzhou\" is not set in the sources file: the API prices an instance in one zone with one image"]


@pytest.mark.parametrize("code, kind", [
    ("RequestLimitExceeded", cloud.THROTTLED), ("RequestLimitExceeded.UinLimitExceeded", cloud.THROTTLED),
    ("ClientNetworkError", cloud.NETWORK), ("InternalError", cloud.SERVER),
    ("AuthFailure.SignatureFailure", cloud.AUTH), ("UnauthorizedOperation", cloud.AUTH),
    ("InvalidParameterValue.InstanceTypeNotFound", cloud.NOT_SOLD),
    ("ResourcesSoldOut.SpecifiedInstanceType", cloud.NOT_SOLD),
    ("UnsupportedOperation.SpotUnsupportedRegion", cloud.NOT_OFFERED),
    ("InvalidParameter", cloud.REJECTED),
])
def test_classify_sdk_errors(code, kind):
    from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException

    assert classify(TencentCloudSDKException(code, "m", "r"))[0] == kind
    assert classify(KeyError("a bug")) is None
