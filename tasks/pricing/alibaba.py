"""Source plug-in: Alibaba Cloud ECS prices through the official SDK (alibabacloud-ecs20140526).

    costgap prices refresh --source alibaba --replay tests/fixtures/alibaba

For every target whose provider is "alibaba" (deploy/targets.toml), in its region:
- DescribePrice (ResourceType=instance, Period=1) with PriceUnit=Hour -> on_demand per hour, PriceUnit=Month
  -> monthly per month, PriceUnit=Year -> yearly per year (the price book divides by 730 / 8760 h and
  keeps the quoted amount). The amount is the TradePrice (after discounts) of the `instanceType` item of
  PriceInfo.Price.DetailInfos: the instance alone, without the default system disk or an image; the
  whole quote's TradePrice where the answer has no items. Currency: PriceInfo.Price.Currency (CNY on
  the China site, USD on the international one). Effective from when it was read.
- DescribeSpotPriceHistory (NetworkType=vpc, OSType=linux, the last 3 hours by default) -> spot: the
  latest SpotPrice in the zone set in config (`spot_zones`), else the cheapest zone's latest price; it is
  effective from its Timestamp, and the source names the zone. No history = spot not offered (skipped).
API reference: DescribePrice help.aliyun.com/document_detail/107829.html, DescribeSpotPriceHistory
help.aliyun.com/document_detail/60400.html (read 2026-12-04); shapes as the SDK 7.11.8 models parse them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from pydantic import Field

from tasks.pricing import cloud
from tasks.pricing.base import PriceError, PriceRow, utc
from tasks.pricing.cloud import Credentials, PricedTarget

PROVIDER = "alibaba"  # joins targets.provider
ENV_ID, ENV_SECRET, ENV_TOKEN = (  # the variables Alibaba's SDKs and CLI read (alibabacloud-credentials)
    "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN")
PRICE_UNITS = {"on_demand": ("Hour", "hour"), "monthly": ("Month", "month"), "yearly": ("Year", "year")}
# Error codes (ECS error centre and the DescribePrice reference, read 2026-12-04): prefix match.
AUTH_CODES = ("InvalidAccessKeyId", "SignatureDoesNotMatch", "IncompleteSignature", "Forbidden", "NoPermission",
              "InvalidSecurityToken", "MissingSecurityToken", "InvalidAccessKeySecret")
NOT_SOLD_CODES = ("InvalidInstanceType", "PriceNotFound", "Zone.NotOnSale", "InvalidZoneId", "InvalidRegionId")
THROTTLE_CODES = ("Throttling", "ServiceUnavailable", "Flow.Limited")
MAX_SPOT_PAGES = 10  # the default 3-hour window is one page; a stuck NextOffset must not loop forever


class AlibabaConfig(cloud.CloudConfig):
    """[alibaba] in deploy/prices/sources.toml."""

    spot_zones: dict[str, str] = {}  # region -> zone for spot; unset: the cheapest zone's latest price
    secret_blocks: dict[str, str] = {  # Prefect Secret blocks the prices flow reads the key pair from
        "key_id": "alibaba-access-key-id", "secret": "alibaba-access-key-secret"}
    timeout_ms: int = Field(default=15000, gt=0)  # read timeout per call; DescribePrice answers in < 1 s


class EcsApi(Protocol):
    """What the fetcher needs: the SDK client's two calls (one client per region behind it)."""

    where: str  # the endpoint or the replay directory, for every row's source

    def describe_price(self, request): ...

    def describe_spot_price_history(self, request): ...


class LiveEcs:
    """The real SDK clients, one per region, built from the credentials passed in."""

    def __init__(self, credentials: Credentials, timeout_ms: int = 15000):
        self._credentials, self._timeout_ms, self._clients = credentials, timeout_ms, {}
        self.where = "ecs.aliyuncs.com (alibabacloud-ecs20140526)"

    def _client(self, region: str):
        if region not in self._clients:
            from alibabacloud_ecs20140526.client import Client
            from alibabacloud_tea_openapi.utils_models import Config

            c = self._credentials
            self._clients[region] = Client(Config(access_key_id=c.key_id, access_key_secret=c.secret,
                                                  security_token=c.token, region_id=region,
                                                  read_timeout=self._timeout_ms, connect_timeout=5000))
        return self._clients[region]

    def describe_price(self, request):
        return self._client(request.region_id).describe_price(request)

    def describe_spot_price_history(self, request):
        return self._client(request.region_id).describe_spot_price_history(request)


class ReplayEcs:
    """Recorded answers (cloud.Recording) parsed by the SDK's own models, errors raised as the SDK's
    client raises them (alibabacloud_tea_openapi.client.Client.call_api: a x-acs-retry-after header ->
    ThrottlingException, 4xx -> ClientException, 5xx -> ServerException). A recorded field the SDK model
    does not know is refused. `${AccessKeyId}` in a recorded message stands for the caller's key id, as
    a real SignatureDoesNotMatch message quotes the string it signed."""

    def __init__(self, directory: str, credentials: Credentials | None = None):
        self._rec, self._credentials = cloud.Recording(directory), credentials
        self.where = f"replay of {directory}"

    def _answer(self, action: str, request, model):
        path, rec = self._rec.answer(request.region_id, action, request.to_map())
        status, headers, body = int(rec.get("statusCode", 200)), rec.get("headers") or {}, rec.get("body") or {}
        if status >= 400:
            from alibabacloud_tea_openapi import exceptions as ex

            key_id = self._credentials.key_id if self._credentials else "LTAI****"
            message = str(body.get("Message", "")).replace("${AccessKeyId}", key_id)
            kw = dict(status_code=status, code=f"{body.get('Code')}", data=body, request_id=f"{body.get('RequestId')}",
                      message=f"code: {status}, {message} request id: {body.get('RequestId')}")
            if headers.get("x-acs-retry-after"):
                raise ex.ThrottlingException(retry_after=int(headers["x-acs-retry-after"]), **kw)
            raise (ex.ClientException if status < 500 else ex.ServerException)(**kw)
        parsed = model().from_map({"statusCode": status, "headers": headers, "body": body})
        unknown = cloud.unknown_fields(body, parsed.body.to_map())
        if unknown:
            raise cloud.RecordingError(f"{path}: field '{unknown[0]}' is unknown to the SDK's {model.__name__}: "
                             f"recordings must hold only fields the SDK parses")
        return parsed

    def describe_price(self, request):
        from alibabacloud_ecs20140526.models import DescribePriceResponse

        return self._answer("DescribePrice", request, DescribePriceResponse)

    def describe_spot_price_history(self, request):
        from alibabacloud_ecs20140526.models import DescribeSpotPriceHistoryResponse

        return self._answer("DescribeSpotPriceHistory", request, DescribeSpotPriceHistoryResponse)


def classify(e: BaseException) -> tuple[str, str, str] | None:
    """An SDK exception -> (kind, code, message); None for anything that is not a call failure (a bug)."""
    from alibabacloud_tea_openapi.exceptions import AlibabaCloudException, ThrottlingException
    from darabonba.exceptions import UnretryableException

    if isinstance(e, AlibabaCloudException):
        code, status = str(e.code or ""), int(e.status_code or 0)
        if isinstance(e, ThrottlingException) or code.startswith(THROTTLE_CODES):
            return cloud.THROTTLED, code, e.message
        if code.startswith(AUTH_CODES) or status in (401, 403) and not code.startswith(NOT_SOLD_CODES):
            return cloud.AUTH, code, e.message
        if status >= 500:
            return cloud.SERVER, code, e.message
        if code.startswith(NOT_SOLD_CODES):
            return cloud.NOT_SOLD, code, e.message
        return cloud.REJECTED, code, e.message
    if isinstance(e, (UnretryableException, OSError)) or type(e).__module__.startswith(("requests", "urllib3")):
        return cloud.NETWORK, type(e).__name__, str(e)
    return None


def retry_after_s(e: BaseException) -> float | None:
    """The wait a ThrottlingException asks for: its `retry_after`, the x-acs-retry-after header in milliseconds
    (alibabacloud_tea_openapi Client.call_api raises it; darabonba's backoff sleeps it as milliseconds: SDK
    source, read 2026-12-07), in seconds; None for any other error or where it is absent."""
    ms = getattr(e, "retry_after", None)
    return ms / 1000 if isinstance(ms, (int, float)) and not isinstance(ms, bool) and ms > 0 else None


def _price_request(t: PricedTarget, unit: str):
    from alibabacloud_ecs20140526.models import DescribePriceRequest

    return DescribePriceRequest(region_id=t.region, resource_type="instance", instance_type=t.instance_type,
                                price_unit=unit, period=1)


def _spot_request(t: PricedTarget, zone: str | None, offset: int | None = None):
    from alibabacloud_ecs20140526.models import DescribeSpotPriceHistoryRequest

    return DescribeSpotPriceHistoryRequest(region_id=t.region, instance_type=t.instance_type, network_type="vpc",
                                           ostype="linux", zone_id=zone, offset=offset)


@dataclass
class AlibabaEcsPrices(cloud.CloudPrices):
    """A PriceSource over the injected API (LiveEcs or ReplayEcs) for the targets passed in."""

    api: EcsApi  # LiveEcs(credentials) or ReplayEcs(directory)
    config: AlibabaConfig = field(default_factory=AlibabaConfig)

    name = PROVIDER
    classify = staticmethod(classify)
    retry_after = staticmethod(retry_after_s)

    @property
    def location(self) -> str:
        return f"ECS DescribePrice/DescribeSpotPriceHistory via {self.api.where}"

    def fetch(self) -> list[PriceRow]:
        when = self._start()
        rows: list[PriceRow] = []
        for t in self.targets:
            rows += self._each_mode(t, lambda mode, t=t: self._spot(t, when) if mode == "spot"
                                    else self._listed(t, mode, when))
        return rows

    def _listed(self, t: PricedTarget, mode: str, when: datetime) -> PriceRow:
        unit, period = PRICE_UNITS[mode]
        resp = self._call(lambda: self.api.describe_price(_price_request(t, unit)))
        price = resp.body.price_info.price if resp.body.price_info else None
        if price is None:
            raise PriceError("the answer has no PriceInfo.Price")
        items = price.detail_infos.detail_info if price.detail_infos else []
        instance = [d for d in items or [] if d.resource == "instanceType"]
        amount = instance[0].trade_price if instance else price.trade_price
        what = "instanceType item" if instance else "whole quote"
        source = (f"{self.api.where}: DescribePrice {t.region} {t.instance_type} PriceUnit={unit} Period=1 "
                  f"TradePrice ({what}) RequestId={resp.body.request_id}")
        return PriceRow(PROVIDER, t.region, t.instance_type, mode, str(price.currency or ""), amount, period,
                        when, source=source, fetched_at=when)

    def _spot(self, t: PricedTarget, when: datetime) -> PriceRow | None:
        zone = self.config.spot_zones.get(t.region)
        latest: dict[str, object] = {}
        offset = None
        for _ in range(MAX_SPOT_PAGES):  # "NextOffset: the next page starts there" (API reference)
            resp = self._call(lambda: self.api.describe_spot_price_history(_spot_request(t, zone, offset)))
            points = resp.body.spot_prices.spot_price_type if resp.body.spot_prices else []
            for p in points or []:
                if p.spot_price is not None and (p.zone_id not in latest or p.timestamp > latest[p.zone_id].timestamp):
                    latest[p.zone_id] = p
            nxt = resp.body.next_offset
            if not nxt or nxt <= (offset or 0):
                break
            offset = nxt
        if not latest:
            return None
        best = min(latest.values(), key=lambda p: (p.spot_price, p.zone_id))
        start = utc(best.timestamp, where=f"DescribeSpotPriceHistory {t.region} {t.instance_type}", field="Timestamp")
        source = (f"{self.api.where}: DescribeSpotPriceHistory {t.region} {t.instance_type} zone {best.zone_id} "
                  f"{'(configured)' if zone else '(cheapest zone)'} at {best.timestamp} "
                  f"RequestId={resp.body.request_id}")
        return PriceRow(PROVIDER, t.region, t.instance_type, "spot", str(resp.body.currency or ""), best.spot_price,
                        "hour", min(start, when), source=source, fetched_at=when)
