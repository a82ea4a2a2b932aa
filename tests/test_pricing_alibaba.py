"""Alibaba Cloud ECS prices against recorded answers parsed by the SDK's own models (tests/fixtures/alibaba).

    .venv/bin/python -m pytest -q tests/test_pricing_alibaba.py

Where the shapes come from: tests/fixtures/alibaba/README.md. Success bodies follow the DescribePrice and
DescribeSpotPriceHistory response examples of the API reference and are parsed by
alibabacloud_ecs20140526.models.*Response().from_map (the replay refuses a field the model drops); error
bodies are the RPC error body (RequestId, HostId, Code, Message, Recommend), raised as the SDK's client
raises them (alibabacloud_tea_openapi.exceptions.ClientException / ThrottlingException).
"""

from __future__ import annotations

import json
import random
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tasks.pricing import cloud
from tasks.pricing.alibaba import AlibabaConfig, AlibabaEcsPrices, ReplayEcs, classify
from tasks.pricing.book import import_fetched
from tests.cloud_targets import GN7I
from tests.cloud_targets import GN7I_BEIJING as BEIJING
from tests.cost_support import warehouse

RECORDED = Path(__file__).parent / "fixtures" / "alibaba"
WHEN = datetime(2026, 12, 4, 6, tzinfo=timezone.utc)
HOUR_KEY = ("cn-hangzhou DescribePrice InstanceType=ecs.gn7i-c8g1.2xlarge Period=1 PriceUnit=Hour "
            "RegionId=cn-hangzhou ResourceType=instance")
FAST = AlibabaConfig(backoff_s=0.5)


def _source(directory=RECORDED, targets=(GN7I,), when=WHEN, credentials=None, sleeps=None, jitter=lambda: 1.0):
    """jitter 1.0: each wait at the top of its jitter range, backoff_s * 2**n (tasks/pricing/retry.py)."""
    sleeps = [] if sleeps is None else sleeps
    return AlibabaEcsPrices(ReplayEcs(str(directory), credentials), list(targets), FAST, credentials, when,
                            sleep=sleeps.append, jitter=jitter)


def _copy(tmp_path) -> Path:
    d = tmp_path / "alibaba"
    shutil.copytree(RECORDED, d)
    return d


def _answer(d: Path, key: str, files: list[str]) -> None:
    index = json.loads((d / "index.json").read_text())
    index[key] = files
    (d / "index.json").write_text(json.dumps(index))


def test_three_billing_modes_and_spot_from_the_sdk_models():
    src = _source()
    rows = {r.billing_mode: r for r in src.fetch()}
    got = {m: (r.currency, r.original_amount, r.original_period) for m, r in rows.items()}
    # the instanceType item's TradePrice: the default system disk (0.042/h) is another item, not counted
    assert got == {"on_demand": ("CNY", 10.88, "hour"), "monthly": ("CNY", 4712.0, "month"),
                   "yearly": ("CNY", 48062.4, "year"), "spot": ("CNY", 1.632, "hour")}
    assert rows["monthly"].price_per_hour == 4712.0 / 730 and rows["yearly"].price_per_hour == 48062.4 / 8760
    assert rows["on_demand"].effective_from == WHEN and "RequestId=5D2E4A1C" in rows["on_demand"].source
    # spot: the cheapest zone's LATEST point (cn-hangzhou-i at 11:00, not its 10:00 price), effective then
    assert rows["spot"].effective_from == datetime(2026, 12, 3, 11, tzinfo=timezone.utc)
    assert "zone cn-hangzhou-i (cheapest zone)" in rows["spot"].source
    assert src.failures == [] and not src.skipped


def test_a_recorded_field_the_sdk_does_not_know_is_refused(tmp_path):
    d = _copy(tmp_path)
    doc = json.loads((d / "gn7i-hour.json").read_text())
    doc["body"]["PriceInfo"]["Price"]["HourlyPrice"] = 10.88  # not a field of the SDK's model
    (d / "gn7i-hour.json").write_text(json.dumps(doc))
    with pytest.raises(cloud.RecordingError, match="field .PriceInfo.Price.HourlyPrice. is unknown to the SDK"):
        _source(d).fetch()


def test_unchanged_price_is_a_no_op_and_a_change_opens_a_new_period(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    src = _source()
    first = import_fetched(con, src, src.fetch())
    assert (first.rows_new, first.rows_closed) == (4, 0)
    later = _source(when=WHEN + timedelta(days=1))  # the same answers a day later: nothing new
    again = import_fetched(con, later, later.fetch())
    assert (again.rows_new, again.rows_unchanged, again.rows_closed) == (0, 4, 0)
    assert con.execute("select count(*) from prices").fetchall() == [(4,)]
    assert con.execute("select max(last_seen_at) from prices where billing_mode = 'on_demand'").fetchall()[0][0] \
        == WHEN + timedelta(days=1)

    d = _copy(tmp_path)  # two days later the hourly price drops
    doc = json.loads((d / "gn7i-hour.json").read_text())
    item = doc["body"]["PriceInfo"]["Price"]["DetailInfos"]["DetailInfo"][0]
    item.update(OriginalPrice=9.79, TradePrice=9.79)
    (d / "gn7i-hour.json").write_text(json.dumps(doc))
    cut = _source(d, when=WHEN + timedelta(days=2))
    third = import_fetched(con, cut, cut.fetch())
    assert (third.rows_new, third.rows_unchanged, third.rows_closed) == (1, 3, 1)
    hist = con.execute("select original_amount, effective_from, effective_to from prices "
                       "where billing_mode = 'on_demand' order by effective_from").fetchall()
    assert [(a, f.astimezone(timezone.utc), t and t.astimezone(timezone.utc)) for a, f, t in hist] == [
        (10.88, WHEN, WHEN + timedelta(days=2)), (9.79, WHEN + timedelta(days=2), None)]


def test_throttling_is_retried_with_backoff_then_lands(tmp_path):
    d = _copy(tmp_path)
    _answer(d, HOUR_KEY, ["errors/throttling.json", "errors/throttling.json", "gn7i-hour.json"])
    sleeps: list[float] = []
    rows = _source(d, sleeps=sleeps).fetch()
    assert len(rows) == 4 and sleeps == [0.5, 1.0]  # backoff_s * 2**n


def test_the_backoff_is_jittered_between_half_and_all_of_each_step(tmp_path):
    d = _copy(tmp_path)
    _answer(d, HOUR_KEY, ["errors/throttling.json"] * 3 + ["gn7i-hour.json"])
    low, high, real = [], [], []
    for sleeps, jitter in ((low, lambda: 0.0), (high, lambda: 0.999)):
        _source(d, sleeps=sleeps, jitter=jitter).fetch()
    _source(d, sleeps=real, jitter=random.Random(44).random).fetch()
    assert low == [0.25, 0.5, 1.0] and high == pytest.approx([0.5, 1.0, 2.0], abs=0.01)
    assert all(lo <= w <= hi for lo, w, hi in zip(low, real, high)) and len(set(real)) == 3


def _throttled_with_retry_after(d: Path, ms: str) -> None:
    doc = json.loads((d / "errors" / "throttling.json").read_text())
    doc["headers"]["x-acs-retry-after"] = ms  # what the SDK reads into ThrottlingException.retry_after
    (d / "errors" / "retry-after.json").write_text(json.dumps(doc))
    _answer(d, HOUR_KEY, ["errors/retry-after.json", "gn7i-hour.json"])


def test_alibabas_retry_after_is_waited_for(tmp_path):
    d = _copy(tmp_path)
    _throttled_with_retry_after(d, "7000")  # milliseconds
    sleeps: list[float] = []
    assert len(_source(d, sleeps=sleeps, jitter=lambda: 0.0).fetch()) == 4
    assert sleeps == [7.0]  # the server's 7 s, not the backoff's 0.25-0.5 s
    sleeps.clear()
    _source(d, sleeps=sleeps, jitter=lambda: 0.5).fetch()
    assert sleeps == [7.25]  # plus up to backoff_s of jitter


def test_a_retry_after_longer_than_costgap_waits_fails_the_source_now(tmp_path):
    d = _copy(tmp_path)
    _throttled_with_retry_after(d, "3600000")  # an hour
    sleeps: list[float] = []
    with pytest.raises(cloud.SourceFailed) as got:
        _source(d, sleeps=sleeps).fetch()
    assert sleeps == [] and "asked to retry after 3,600 s, longer than costgap waits: 120 s" in str(got.value)


def test_throttling_that_persists_stops_the_source(tmp_path):
    d = _copy(tmp_path)
    _answer(d, HOUR_KEY, ["errors/throttling.json"])
    sleeps: list[float] = []
    with pytest.raises(cloud.SourceFailed) as got:
        _source(d, sleeps=sleeps).fetch()
    line = str(got.value)
    assert line.startswith("alibaba: target alibaba-gn7i-c8g1-2xlarge (cn-hangzhou ecs.gn7i-c8g1.2xlarge): "
                           "throttled: on_demand: Throttling.User")
    assert "after 4 attempts" in line and "nothing from this source was landed" in line
    assert sleeps == [0.5, 1.0, 2.0]


def test_auth_error_stops_the_source_and_never_shows_the_key(tmp_path):
    d = _copy(tmp_path)
    _answer(d, HOUR_KEY, ["errors/signature.json"])
    creds = cloud.Credentials("LTAI5tKeyIdPlanted", "planted-secret-value", origin="test")
    sleeps: list[float] = []
    with pytest.raises(cloud.SourceFailed) as got:
        _source(d, credentials=creds, sleeps=sleeps).fetch()
    line = str(got.value)
    assert "auth: on_demand: SignatureDoesNotMatch" in line and "AccessKeyId%3D***" in line
    assert "LTAI5tKeyIdPlanted" not in line and "planted-secret-value" not in line
    assert sleeps == []  # credentials refused: never retried
    assert "planted" not in repr(creds) and "planted" not in f"{creds}"


def test_instance_type_the_region_does_not_sell_fails_that_target_only():
    src = _source(targets=(BEIJING, GN7I))
    rows = src.fetch()
    assert {r.region for r in rows} == {"cn-hangzhou"} and len(rows) == 4
    assert [f.line() for f in src.failures] == [
        "alibaba: target alibaba-gn7i-beijing (cn-beijing ecs.gn7i-c8g1.2xlarge): not sold: every billing mode: "
        "InvalidInstanceType.ValueNotSupported: code: 400, The specified InstanceType does not exist or beyond "
        "the permitted range. request id: 7A1B2C3D-0000-4000-8000-000000000003"]


def test_no_spot_history_is_not_offered_and_skipped(tmp_path):
    d = _copy(tmp_path)
    doc = json.loads((d / "gn7i-spot.json").read_text())
    doc["body"]["SpotPrices"]["SpotPriceType"] = []
    (d / "gn7i-spot.json").write_text(json.dumps(doc))
    src = _source(d)
    assert sorted(r.billing_mode for r in src.fetch()) == ["monthly", "on_demand", "yearly"]
    assert dict(src.skipped) == {"spot not offered": 1} and src.failures == []


@pytest.mark.parametrize("status, code, headers, kind", [
    (400, "Throttling.User", {}, cloud.THROTTLED),
    (400, "Whatever", {"x-acs-retry-after": "3"}, cloud.THROTTLED),  # the SDK's ThrottlingException
    (503, "ServiceUnavailable", {}, cloud.THROTTLED),
    (500, "InternalError", {}, cloud.SERVER),
    (404, "InvalidAccessKeyId.NotFound", {}, cloud.AUTH),
    (403, "Forbidden.RAM", {}, cloud.AUTH),
    (400, "InvalidInstanceType.ValueNotSupported", {}, cloud.NOT_SOLD),
    (403, "PriceNotFound", {}, cloud.NOT_SOLD),
    (400, "InvalidParameter", {}, cloud.REJECTED),
])
def test_classify_sdk_errors(tmp_path, status, code, headers, kind):
    (tmp_path / "e.json").write_text(json.dumps({"statusCode": status, "headers": headers, "body": {
        "RequestId": "r", "HostId": "ecs.aliyuncs.com", "Code": code, "Message": "m"}}))
    (tmp_path / "index.json").write_text(json.dumps({HOUR_KEY: ["e.json"]}))
    from tasks.pricing.alibaba import _price_request

    with pytest.raises(Exception) as got:
        ReplayEcs(str(tmp_path)).describe_price(_price_request(GN7I, "Hour"))
    assert classify(got.value)[0] == kind
    assert classify(ValueError("a bug")) is None and classify(ConnectionError("reset"))[0] == cloud.NETWORK
