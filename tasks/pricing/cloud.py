"""What the SDK price sources (Alibaba Cloud ECS, Tencent Cloud CVM) share: credentials that never print,
retries with backoff, one failure line per source and target, and recorded responses for replay.

    .venv/bin/python -m pytest -q tests/test_pricing_alibaba.py tests/test_pricing_tencent.py

A failed API call is classified into one KIND. Throttling, network and server errors are retried with
exponential backoff and jitter, or after the wait the provider asked for (tasks/pricing/retry.py: Alibaba's
`retry_after`); if they persist, or the credentials are refused, the whole source stops
(`SourceFailed`) and nothing from it lands, because every other call would fail the same way. An
instance type the region does not sell, or any other refusal of one request, fails that target only
(`Failure`): the other targets still land. A billing mode the API does not offer for a target (e.g. no
spot) is skipped and counted. Every message passes through `Credentials.redact` first.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, ClassVar, Mapping, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tasks.errors import UserError
from tasks.pricing.base import BILLING_MODES, PriceError, PriceRow
from tasks.pricing.http import replay_entry
from tasks.pricing.retry import MAX_RETRY_AFTER_S, Jitter, RetryAfter, no_retry_after, too_long, wait_s

THROTTLED = "throttled"  # the API asked us to slow down: retried with backoff
NETWORK = "network"  # no answer (DNS, TCP, TLS, timeout): retried with backoff
SERVER = "server"  # the provider's side failed (HTTP 5xx, InternalError): retried with backoff
AUTH = "auth"  # credentials missing, wrong, expired or without permission: never retried
NOT_SOLD = "not_sold"  # the region does not sell this instance type (or it is sold out): this target fails
NOT_OFFERED = "not_offered"  # this billing mode is not offered for the target (e.g. no spot): skipped
REJECTED = "rejected"  # any other refusal of one request (a bad parameter): this target fails
RETRIED = frozenset({THROTTLED, NETWORK, SERVER})
SOURCE_WIDE = frozenset({THROTTLED, NETWORK, SERVER, AUTH})  # stop the source: the next call fails alike
MAX_REASON_CHARS = 300  # an SDK message can quote a whole request; the start says what went wrong

T = TypeVar("T")


@dataclass(frozen=True)
class Credentials:
    """An access key pair. Its repr never shows a value, and `redact` removes every value from a text."""

    key_id: str  # Alibaba AccessKeyId, Tencent SecretId
    secret: str  # Alibaba AccessKeySecret, Tencent SecretKey
    token: str | None = None  # an STS/session token where the key pair is temporary
    origin: str = "?"  # where they came from (variable or block NAMES only), for error messages

    def __repr__(self) -> str:
        return f"Credentials(<redacted>, from {self.origin})"

    __str__ = __repr__

    def redact(self, text: str) -> str:
        for value in (self.secret, self.token, self.key_id):
            if value:
                text = text.replace(value, "***")
        return text


def check_secret_blocks(blocks: dict[str, str]) -> dict[str, str]:
    """A sources file's secret_blocks: block names for key_id and secret (and optionally token)."""
    missing = [k for k in ("key_id", "secret") if not str(blocks.get(k, "")).strip()]
    extra = sorted(set(blocks) - {"key_id", "secret", "token"})
    if missing or extra:
        raise ValueError(f"expected Secret block names for key_id and secret (optionally token); "
                         f"{'missing ' + ', '.join(missing) if missing else 'unknown ' + ', '.join(extra)}")
    return blocks


class CloudConfig(BaseModel):
    """What every cloud price source's section in deploy/prices/sources.toml checks alike."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    billing_modes: tuple[str, ...] = ("on_demand", "monthly", "yearly", "spot")  # every mode the model knows
    secret_blocks: dict[str, str] = {}  # Prefect Secret blocks the prices flow reads the key pair from
    attempts: int = Field(default=4, ge=1)  # tries per call on throttling/network/server errors
    backoff_s: float = Field(default=1.0, ge=0)  # waits about 1, 2, 4 s between tries (each with jitter: retry.py)

    @field_validator("billing_modes")
    @classmethod
    def _modes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [m for m in value if m not in BILLING_MODES]
        if bad or not value:
            raise ValueError(f"{bad or 'none'}: expected some of {', '.join(BILLING_MODES)}")
        return value

    @field_validator("secret_blocks")
    @classmethod
    def _blocks(cls, value: dict[str, str]) -> dict[str, str]:
        return check_secret_blocks(value)


def redactor(credentials: Credentials | None) -> Callable[[str], str]:
    return credentials.redact if credentials else (lambda text: text)


def env_credentials(environ: Mapping[str, str], id_var: str, secret_var: str,
                    token_var: str | None = None) -> Credentials | None:
    """The SDK's standard environment variables, or None where either of the pair is unset or empty."""
    key_id, secret = environ.get(id_var, "").strip(), environ.get(secret_var, "").strip()
    if not key_id or not secret:
        return None
    token = environ.get(token_var, "").strip() or None if token_var else None
    return Credentials(key_id, secret, token, origin=f"environment variables {id_var}, {secret_var}")


@dataclass(frozen=True)
class PricedTarget:
    """One entry of the targets file that a cloud source prices."""

    id: str  # the target's id (deploy/targets.toml)
    region: str  # the provider's region id, e.g. cn-hangzhou, ap-guangzhou
    instance_type: str  # as the provider spells it, e.g. ecs.gn7i-c8g1.2xlarge, GN10Xp.2XLARGE40

    def describe(self) -> str:
        return f"target {self.id} ({self.region} {self.instance_type})"


@dataclass(frozen=True)
class Failure:
    """One thing a source could not price: the line a person reads names source, target and reason."""

    source: str  # the recipe name, e.g. alibaba
    target: str | None  # "target <id> (<region> <type>)", or None for the whole source
    kind: str  # one of the KINDS above
    reason: str  # the provider's code and message, redacted, or ours

    def line(self) -> str:
        where = f"{self.target}: " if self.target else ""
        return f"{self.source}: {where}{self.kind.replace('_', ' ')}: {self.reason}"


class SourceFailed(Exception):
    """A source that stopped (credentials refused, throttled or unreachable after retries): nothing lands."""

    def __init__(self, failure: Failure):
        super().__init__(failure.line() + "; nothing from this source was landed")
        self.failure = failure


@dataclass(frozen=True)
class CallFailed(Exception):
    """One API call that failed for good (after retries where its kind is retried)."""

    kind: str
    code: str
    message: str  # already redacted
    attempts: int = 1

    def __str__(self) -> str:
        tries = f" (after {self.attempts} attempts)" if self.attempts > 1 else ""
        return f"{self.code}: {self.message}{tries}"


Classifier = Callable[[BaseException], "tuple[str, str, str] | None"]


def call_with_retries(call: Callable[[], T], classify: Classifier, *, redact: Callable[[str], str],
                      attempts: int = 4, backoff_s: float = 1.0, sleep: Callable[[float], None] = time.sleep,
                      retry_after: RetryAfter = no_retry_after, jitter: Jitter = random.random) -> T:
    """Run `call`; retry THROTTLED/NETWORK/SERVER failures after retry.wait_s (backoff_s * 2**n with jitter, or
    the wait the failure asks for); raise CallFailed. An exception the classifier does not know (None) is a bug
    and propagates unchanged."""
    for n in range(attempts):
        try:
            return call()
        except Exception as e:  # noqa: BLE001 (classified below; unknown ones re-raised)
            got = classify(e)
            if got is None:
                raise
            kind, code, message = got
            asked = retry_after(e) if kind in RETRIED else None
            if kind in RETRIED and n + 1 < attempts and not too_long(asked):
                sleep(wait_s(n, backoff_s, asked, jitter))
                continue
            text = " ".join(redact(str(message)).split())
            if len(text) > MAX_REASON_CHARS:
                text = text[:MAX_REASON_CHARS] + "..."
            if too_long(asked):
                text += f" (asked to retry after {asked:,.0f} s, longer than costgap waits: {MAX_RETRY_AFTER_S:,.0f} s)"
            raise CallFailed(kind, redact(str(code)), text, n + 1) from None
    raise AssertionError("unreachable: attempts >= 1")


@dataclass
class CloudPrices:
    """What the SDK price sources (alibaba.AlibabaEcsPrices, tencent.TencentCvmPrices) hold and do alike:
    the injected API, the targets, config, credentials (only to redact them), the clock and the sleep,
    and per target one row per configured billing mode with one failure discipline (KINDS above)."""

    api: object  # the live SDK clients or their replay (each source names its Protocol)
    targets: list[PricedTarget]  # the entries of the targets file with this source's provider
    config: CloudConfig = field(default_factory=CloudConfig)  # each source's own subclass
    credentials: Credentials | None = None  # only to redact them from every message
    fetched_at: datetime | None = None  # default: now
    sleep: Callable[[float], None] = time.sleep  # injected so tests do not wait out the backoff
    jitter: Jitter = random.random  # the backoff's jitter (retry.wait_s); a constant in tests
    failures: list[Failure] = field(default_factory=list, init=False)  # targets that could not be priced
    skipped: Counter = field(default_factory=Counter, init=False)  # billing modes not offered

    name: ClassVar[str]  # the provider: each source sets it
    classify: ClassVar[Classifier]  # the SDK's error classifier: each source sets it (a staticmethod)
    retry_after: ClassVar[RetryAfter] = staticmethod(no_retry_after)  # the wait an SDK error asks for, if it says

    def _start(self) -> datetime:
        """A fresh run: failures and skips cleared; the time every row is effective from and read at."""
        self.failures, self.skipped = [], Counter()
        return (self.fetched_at or datetime.now(timezone.utc)).astimezone(timezone.utc).replace(microsecond=0)

    def _call(self, fn: Callable[[], T]) -> T:
        return call_with_retries(fn, self.classify, redact=redactor(self.credentials), attempts=self.config.attempts,
                                 backoff_s=self.config.backoff_s, sleep=self.sleep, retry_after=self.retry_after,
                                 jitter=self.jitter)

    def _each_mode(self, t: PricedTarget, price: Callable[[str], PriceRow | None]) -> list[PriceRow]:
        """price(mode) for every configured billing mode: None or NOT_OFFERED skips the mode, a source-wide
        failure stops the source, NOT_SOLD on the first mode fails the target once, other failures the mode."""
        out: list[PriceRow] = []
        for i, mode in enumerate(self.config.billing_modes):
            try:
                row = price(mode)
            except CallFailed as e:
                if e.kind in SOURCE_WIDE:
                    raise SourceFailed(Failure(self.name, t.describe(), e.kind, f"{mode}: {e}")) from None
                if e.kind == NOT_SOLD and i == 0:  # not sold at all: one line, not one per mode
                    self.failures.append(Failure(self.name, t.describe(), e.kind, f"every billing mode: {e}"))
                    return []
                if e.kind != NOT_OFFERED:
                    self.failures.append(Failure(self.name, t.describe(), e.kind, f"{mode}: {e}"))
                    continue
                row = None
            except PriceError as e:  # an answer that is not a usable price (e.g. no amount, zero)
                self.failures.append(Failure(self.name, t.describe(), REJECTED, f"{mode}: {e}"))
                continue
            if row is None:
                self.skipped[f"{mode} not offered"] += 1
            else:
                out.append(row)
        return out


class RecordingError(UserError):
    """A replay directory that cannot answer: no recording for a request, or a recorded field the SDK
    does not know. Not a price problem of one target, so never caught as one."""


@dataclass
class Recording:
    """Recorded API answers in a directory: `index.json` maps "<region> <Action> <Param=value ...>" (the
    request's parameters flattened with dots, sorted, empty ones left out) to a list of response files.
    Successive identical calls get successive files (the last one repeats), so a throttled-then-answered
    exchange is two files. Used by the replay clients of alibaba.py and tencent.py."""

    directory: str  # holds index.json and the response files
    served: dict = field(default_factory=dict, init=False)  # key -> calls so far

    @staticmethod
    def key(region: str, action: str, params: dict) -> str:
        flat: dict[str, str] = {}

        def walk(value, name: str) -> None:
            if isinstance(value, dict):
                for k, v in value.items():
                    walk(v, f"{name}.{k}" if name else str(k))
            elif isinstance(value, list):
                for i, v in enumerate(value, start=1):
                    walk(v, f"{name}.{i}")
            elif value is not None:
                flat[name] = json.dumps(value) if not isinstance(value, str) else value

        walk(params, "")
        return " ".join([region, action, *(f"{k}={v}" for k, v in sorted(flat.items()))])

    def answer(self, region: str, action: str, params: dict) -> tuple[Path, dict]:
        key = self.key(region, action, params)
        files = replay_entry(self.directory, key, RecordingError)
        n = self.served.get(key, 0)
        self.served[key] = n + 1
        path = Path(self.directory) / files[min(n, len(files) - 1)]
        try:
            return path, json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise RecordingError(f"{path}: cannot read the recorded response: {e}") from None


def unknown_fields(recorded, parsed, path: str = "") -> list[str]:
    """Keys of a recorded body that the SDK model dropped when parsing it: a field the SDK does not know."""
    if isinstance(recorded, dict):
        if not isinstance(parsed, dict):
            return [path or "<body>"]
        out = []
        for k, v in recorded.items():
            out += [f"{path}{k}"] if k not in parsed else unknown_fields(v, parsed[k], f"{path}{k}.")
        return out
    if isinstance(recorded, list) and isinstance(parsed, list):
        return [u for i, (a, b) in enumerate(zip(recorded, parsed)) for u in unknown_fields(a, b, f"{path}{i}.")]
    return []
