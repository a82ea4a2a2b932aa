"""Source plug-in: Tencent Cloud CVM prices through the official SDK (tencentcloud-sdk-python-cvm).

    costgap prices refresh --source tencent --replay tests/fixtures/tencent

For every target whose provider is "tencent" (deploy/targets.toml), InquiryPriceRunInstances for one
instance in the zone configured for its region (`zones`), with the configured public image:
- InstanceChargeType POSTPAID_BY_HOUR -> on_demand: Price.InstancePrice.UnitPriceDiscount per hour
  (ChargeUnit HOUR). Where the answer is stepped (UnitPriceSecondStep...), this is the first step
  (0-96 h), the price a training run starts at;
- PREPAID, InstanceChargePrepaid.Period 1 -> monthly: DiscountPrice for the month (/730 h in the book);
- PREPAID, Period 12 -> yearly: DiscountPrice for the 12 months (/8760 h);
- SPOTPAID (no market options: the current spot price) -> spot: UnitPriceDiscount per hour, where the
  region and type offer spot (UnsupportedOperation.NoInstanceTypeSupportSpot / SpotUnsupportedRegion:
  skipped and counted).
The API answers amounts in 元 and names no currency: CNY for a China-site account, USD for an
international one (`currency` in config). Prices are effective from when they were read.
API reference: cloud.tencent.com/document/api/213/15726 (InquiryPriceRunInstances), data structures
213/15753 (Price, ItemPrice), read 2026-12-04; shapes as SDK 3.1.178's models deserialise them.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from pydantic import Field

from tasks.pricing import cloud
from tasks.pricing.base import CURRENCIES, PriceError, PriceRow
from tasks.pricing.cloud import Credentials, Failure, PricedTarget

PROVIDER = "tencent"  # joins targets.provider
ENV_ID, ENV_SECRET = "TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY"  # what the SDK's env provider reads
ACTION = "InquiryPriceRunInstances"
# Error codes: the SDK's tencentcloud/cvm/v20170312/errorcodes.py and the common error codes
# (cloud.tencent.com/document/api/213/15694, read 2026-12-04).
NOT_SOLD_CODES = frozenset({
    "InvalidInstanceType.Malformed", "InvalidParameterValue.InstanceTypeNotFound",
    "InvalidParameter.InstanceTypeNotSupport", "ResourceNotFound.InvalidZoneInstanceType",
    "ResourcesSoldOut.SpecifiedInstanceType", "ResourceInsufficient.SpecifiedInstanceType",
    "ResourceInsufficient.ZoneSoldOutForSpecifiedInstance", "InvalidZone.MismatchRegion",
    "InvalidParameterValue.InvalidInstanceTypePeriodicContract"})
NOT_OFFERED_CODES = frozenset({"UnsupportedOperation.NoInstanceTypeSupportSpot",
                               "UnsupportedOperation.SpotUnsupportedRegion",
                               "InvalidInstanceNotSupportedPrepaidInstance"})
NETWORK_CODES = frozenset({"ClientNetworkError", "ServerNetworkError", "ConnectionError", "Timeout",
                           "ReadTimeout", "ConnectTimeout", "SSLError"})
MODES = {  # billing mode -> (InstanceChargeType, prepaid months, quoted period)
    "on_demand": ("POSTPAID_BY_HOUR", None, "hour"), "monthly": ("PREPAID", 1, "month"),
    "yearly": ("PREPAID", 12, "year"), "spot": ("SPOTPAID", None, "hour")}


class TencentConfig(cloud.CloudConfig):
    """[tencent] in deploy/prices/sources.toml."""

    zones: dict[str, str] = {}  # region -> zone: the API prices an instance in one zone (Placement.Zone)
    image_id: str = ""  # a public Linux image (free, so the quote is the instance's); required by the API
    currency: str = "CNY"  # the API names none: CNY for a China-site account, USD for international
    endpoint: str = "cvm.tencentcloudapi.com"  # cvm.intl.tencentcloudapi.com for international accounts
    secret_blocks: dict[str, str] = {  # Prefect Secret blocks the prices flow reads the key pair from
        "key_id": "tencentcloud-secret-id", "secret": "tencentcloud-secret-key"}
    timeout_s: int = Field(default=30, gt=0)  # per call; the inquiry answers in about a second


class CvmApi(Protocol):
    where: str  # the endpoint or the replay directory, for every row's source

    def inquiry_price_run_instances(self, region: str, request): ...


class LiveCvm:
    """The real SDK clients, one per region, built from the credentials passed in."""

    def __init__(self, credentials: Credentials, endpoint: str = "cvm.tencentcloudapi.com", timeout_s: int = 30):
        self._credentials, self._endpoint, self._timeout_s, self._clients = credentials, endpoint, timeout_s, {}
        self.where = f"{endpoint} (tencentcloud-sdk-python-cvm)"

    def inquiry_price_run_instances(self, region: str, request):
        if region not in self._clients:
            from tencentcloud.common.credential import Credential
            from tencentcloud.common.profile.client_profile import ClientProfile
            from tencentcloud.common.profile.http_profile import HttpProfile
            from tencentcloud.cvm.v20170312.cvm_client import CvmClient

            c = self._credentials
            profile = ClientProfile(httpProfile=HttpProfile(endpoint=self._endpoint, reqTimeout=self._timeout_s))
            self._clients[region] = CvmClient(Credential(c.key_id, c.secret, c.token), region, profile)
        return self._clients[region].InquiryPriceRunInstances(request)


class ReplayCvm:
    """Recorded wire answers ({"Response": {...}}, cloud.Recording) deserialised by the SDK's own model;
    an error answer raises TencentCloudSDKException(code, message, request id) as the SDK's
    AbstractClient._check_error does. A recorded field the SDK does not know is refused (the SDK warns
    "... fileds are useless"); `${SecretId}` in a recorded message stands for the caller's id."""

    def __init__(self, directory: str, credentials: Credentials | None = None):
        self._rec, self._credentials = cloud.Recording(directory), credentials
        self.where = f"replay of {directory}"

    def inquiry_price_run_instances(self, region: str, request):
        from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException
        from tencentcloud.cvm.v20170312.models import InquiryPriceRunInstancesResponse

        path, rec = self._rec.answer(region, ACTION, request._serialize())
        body = rec.get("Response") or {}
        if "Error" in body:
            key_id = self._credentials.key_id if self._credentials else "AKID****"
            message = str(body["Error"].get("Message", "")).replace("${SecretId}", key_id)
            raise TencentCloudSDKException(body["Error"].get("Code"), message, body.get("RequestId"))
        model = InquiryPriceRunInstancesResponse()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model._deserialize(body)
        unknown = [str(w.message) for w in caught if "useless" in str(w.message)]
        unknown += [k for k in body if k not in ("Price", "RequestId")]
        if unknown:
            raise cloud.RecordingError(f"{path}: {unknown[0]}: a field the SDK's {type(model).__name__} does not know; "
                             f"recordings must hold only fields the SDK parses")
        return model


def classify(e: BaseException) -> tuple[str, str, str] | None:
    """An SDK exception -> (kind, code, message); None for anything that is not a call failure (a bug)."""
    from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException

    if isinstance(e, TencentCloudSDKException):
        code, message = str(e.get_code() or ""), f"{e.get_message()} (RequestId {e.get_request_id()})"
        if code.startswith("RequestLimitExceeded"):
            return cloud.THROTTLED, code, message
        if code in NETWORK_CODES:
            return cloud.NETWORK, code, message
        if code.startswith(("InternalError", "ServiceUnavailable")):
            return cloud.SERVER, code, message
        if code.startswith(("AuthFailure", "UnauthorizedOperation")) or code == "InvalidCredential":
            return cloud.AUTH, code, message
        if code in NOT_SOLD_CODES:
            return cloud.NOT_SOLD, code, message
        if code in NOT_OFFERED_CODES:
            return cloud.NOT_OFFERED, code, message
        return cloud.REJECTED, code, message
    if isinstance(e, OSError):
        return cloud.NETWORK, type(e).__name__, str(e)
    return None


def inquiry_params(t: PricedTarget, mode: str, zone: str, image_id: str) -> dict:
    """The request InquiryPriceRunInstances gets for one target and billing mode (JSON names)."""
    charge, months, _ = MODES[mode]
    params = {"Placement": {"Zone": zone}, "ImageId": image_id, "InstanceType": t.instance_type,
              "InstanceChargeType": charge, "InstanceCount": 1}
    if months:
        params["InstanceChargePrepaid"] = {"Period": months, "RenewFlag": "NOTIFY_AND_MANUAL_RENEW"}
    return params


def _request(params: dict):
    from tencentcloud.cvm.v20170312.models import InquiryPriceRunInstancesRequest

    req = InquiryPriceRunInstancesRequest()
    req.from_json_string(json.dumps(params))
    return req


@dataclass
class TencentCvmPrices(cloud.CloudPrices):
    """A PriceSource over the injected API (LiveCvm or ReplayCvm) for the targets passed in."""

    api: CvmApi  # LiveCvm(credentials) or ReplayCvm(directory)
    config: TencentConfig = field(default_factory=TencentConfig)

    name = PROVIDER
    classify = staticmethod(classify)

    @property
    def location(self) -> str:
        return f"CVM {ACTION} via {self.api.where}"

    def fetch(self) -> list[PriceRow]:
        if self.config.currency not in CURRENCIES:
            raise PriceError(f"[tencent] currency = {self.config.currency!r}: expected an ISO 4217 code (CNY, USD)")
        when = self._start()
        rows: list[PriceRow] = []
        for t in self.targets:
            zone = self.config.zones.get(t.region)
            if not zone or not self.config.image_id:
                missing = f"zones.\"{t.region}\"" if not zone else "image_id"
                self.failures.append(Failure(PROVIDER, t.describe(), cloud.REJECTED,
                                             f"[tencent] {missing} is not set in the sources file: the API prices "
                                             f"an instance in one zone with one image"))
                continue
            rows += self._each_mode(t, lambda mode, t=t, zone=zone: self._price(t, mode, zone, when))
        return rows

    def _price(self, t: PricedTarget, mode: str, zone: str, when: datetime) -> PriceRow:
        params = inquiry_params(t, mode, zone, self.config.image_id)
        return self._row(t, mode, zone, self._call(
            lambda: self.api.inquiry_price_run_instances(t.region, _request(params))), when)

    def _row(self, t: PricedTarget, mode: str, zone: str, resp, when: datetime) -> PriceRow:
        charge, months, period = MODES[mode]
        item = resp.Price.InstancePrice if resp.Price else None
        if item is None:
            raise PriceError("the answer has no Price.InstancePrice")
        if months:
            amount, field_name = item.DiscountPrice, "DiscountPrice"
        else:
            if item.ChargeUnit not in (None, "HOUR"):
                raise PriceError(f"Price.InstancePrice.ChargeUnit = {item.ChargeUnit!r}: expected HOUR")
            amount, field_name = item.UnitPriceDiscount, "UnitPriceDiscount"
        if amount is None:
            raise PriceError(f"the answer has no Price.InstancePrice.{field_name}")
        extra = f" InstanceChargePrepaid.Period={months}" if months else ""
        source = (f"{self.api.where}: {ACTION} {zone} {t.instance_type} InstanceChargeType={charge}{extra} "
                  f"{field_name} RequestId={resp.RequestId}")
        return PriceRow(PROVIDER, t.region, t.instance_type, mode, self.config.currency, float(amount), period,
                        when, source=source, fetched_at=when)
