"""How long a price source waits before it asks again: exponential backoff with jitter, or what the server said.

    .venv/bin/python -m pytest -q tests/test_pricing_http.py tests/test_pricing_alibaba.py

Both the SDK sources (tasks/pricing/cloud.py) and the HTTP client (tasks/pricing/http.py) wait this way:
- the n-th wait (n = 0, 1, ...) is "equal jitter" over backoff_s * 2**n: between half of it and all of it,
  so that clients throttled at the same moment do not all come back at the same moment (AWS Architecture
  Blog, "Exponential Backoff And Jitter", 2015, read 2026-12-07);
- a server that says how long to wait is obeyed: HTTP's Retry-After header (seconds, or an HTTP date;
  RFC 9110 section 10.2.3) or Alibaba Cloud's `retry_after` on its ThrottlingException (milliseconds, from
  the x-acs-retry-after header: alibabacloud_tea_openapi's Client.call_api, and darabonba's backoff sleeps
  it as milliseconds; SDK source read 2026-12-07). Its wait, plus up to backoff_s of jitter;
- a server asking for more than MAX_RETRY_AFTER_S is not waited for: the call fails now, naming the
  wait, since the next scheduled refresh is the better retry than a command hanging for an hour.
"""

from __future__ import annotations

import random
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Callable

MAX_RETRY_AFTER_S = 120.0  # Darabonba caps its own waits at 120 s (MAX_DELAY_TIME); a longer one fails the call

Jitter = Callable[[], float]  # a number in [0, 1): random.random, or a constant in tests
RetryAfter = Callable[[BaseException], "float | None"]  # the wait a failure asks for, in seconds (None: not said)


def no_retry_after(_e: BaseException) -> None:
    return None


def wait_s(n: int, backoff_s: float, retry_after_s: float | None = None, jitter: Jitter = random.random) -> float:
    """Seconds to wait before try n + 1 (n = 0 after the first failure)."""
    if retry_after_s is not None:
        return retry_after_s + backoff_s * jitter()
    step = backoff_s * 2 ** n
    return step / 2 + step / 2 * jitter()


def too_long(retry_after_s: float | None) -> bool:
    """Whether the server asked for a wait longer than this process waits (MAX_RETRY_AFTER_S)."""
    return retry_after_s is not None and retry_after_s > MAX_RETRY_AFTER_S


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """HTTP Retry-After (RFC 9110 10.2.3) in seconds: delay-seconds or an HTTP date; None if absent or unreadable."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())

