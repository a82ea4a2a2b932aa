"""HTTP for price sources: always passed in, never a global. Live (httpx) or replayed from disk.

    costgap prices refresh --source azure-gpu --replay tests/fixtures/azure
    .venv/bin/python -m pytest -q tests/test_pricing_http.py     # the live client against a real local server

A client has two methods, `get_json(url) -> dict` and `get_bytes(url) -> bytes` (a file download, e.g.
the ECB's eurofxref-hist.zip), and is a context manager: one client serves one source run and is closed
after it. `LiveClient` keeps its connection alive across pages (the Azure catalogue is up to 500 pages: one
TLS handshake, not 500), asks for gzip, retries a failed connection in its transport, and retries a 429 or a
5xx after the wait the server asks for (Retry-After) or a jittered backoff (tasks/pricing/retry.py).
`ReplayClient` serves recorded responses from a directory holding `index.json` ({url: file}) and the
response files: tests and air-gapped hosts use it.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from tasks.pricing.base import PriceError
from tasks.pricing.retry import MAX_RETRY_AFTER_S, Jitter, parse_retry_after, too_long, wait_s

RETRIED_STATUS = frozenset({429, 500, 502, 503, 504})  # throttled, or the server's side failed: worth asking again


class FetchError(PriceError):
    """The network or the server failed (not the request): the CLI exits 1 for it, not 2."""


class HttpClient(Protocol):
    def get_json(self, url: str) -> dict: ...

    def get_bytes(self, url: str) -> bytes: ...


@dataclass
class LiveClient:
    """The live client: HTTPS GET on one kept-alive httpx.Client; `with LiveClient() as client:` closes it."""

    timeout_s: float = 60.0  # one page of the Azure API answers in ~1 s; a minute means it is down
    attempts: int = 4  # tries per URL on a 429, a 5xx or a connection that broke mid-answer
    backoff_s: float = 1.0  # waits about 1, 2, 4 s between them (jittered), unless the server says how long
    connect_retries: int = 2  # httpx's transport retries a refused or timed-out connection itself, at once
    sleep: Callable[[float], None] = time.sleep  # injected so tests do not wait out the backoff
    jitter: Jitter = random.random
    _client: object = field(default=None, init=False, repr=False)

    def __enter__(self) -> "LiveClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def get_json(self, url: str) -> dict:
        try:
            return json.loads(self._get(url, "application/json").decode("utf-8"))
        except ValueError as e:
            raise FetchError(f"{url}: not JSON: {e}") from None

    def get_bytes(self, url: str) -> bytes:
        return self._get(url, "*/*")

    def _http(self):
        import httpx

        if self._client is None:
            self._client = httpx.Client(
                transport=httpx.HTTPTransport(retries=self.connect_retries), timeout=self.timeout_s,
                headers={"User-Agent": "costgap", "Accept-Encoding": "gzip"}, follow_redirects=True)
        return self._client

    def _get(self, url: str, accept: str) -> bytes:
        import httpx

        for n in range(self.attempts):
            last = n + 1 == self.attempts
            try:
                resp = self._http().get(url, headers={"Accept": accept})
            except httpx.TransportError as e:  # after the transport's own connection retries
                if not last and isinstance(e, (httpx.ReadError, httpx.RemoteProtocolError, httpx.ReadTimeout)):
                    self.sleep(wait_s(n, self.backoff_s, None, self.jitter))  # broke mid-answer: ask again
                    continue
                raise FetchError(f"{url}: request failed: {type(e).__name__}: {e}") from None
            if resp.status_code in RETRIED_STATUS:
                asked = parse_retry_after(resp.headers.get("Retry-After"))
                if not last and not too_long(asked):
                    self.sleep(wait_s(n, self.backoff_s, asked, self.jitter))
                    continue
                wait = (f"; it asked to retry after {asked:,.0f} s, longer than costgap waits ({MAX_RETRY_AFTER_S:,.0f} s)"
                        if too_long(asked) else "")
                raise FetchError(f"{url}: HTTP {resp.status_code} {resp.reason_phrase} after {n + 1} attempt(s){wait}")
            if resp.is_error:
                raise FetchError(f"{url}: HTTP {resp.status_code} {resp.reason_phrase}")
            return resp.content
        raise AssertionError("unreachable: attempts >= 1")


@dataclass
class ReplayClient:
    """Recorded responses: `directory/index.json` maps each URL to a JSON file beside it."""

    directory: str

    def __enter__(self) -> "ReplayClient":
        return self

    def __exit__(self, *exc) -> None:
        pass

    def get_json(self, url: str) -> dict:
        path = self._file(url)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise PriceError(f"{path}: cannot read the recorded response: {e}") from None

    def get_bytes(self, url: str) -> bytes:
        path = self._file(url)
        try:
            return path.read_bytes()
        except OSError as e:
            raise PriceError(f"{path}: cannot read the recorded response: {e}") from None

    def _file(self, url: str) -> Path:
        return Path(self.directory) / replay_entry(self.directory, url)


def replay_entry(directory: str, key: str, error: type[Exception] = PriceError):
    """What a replay directory's index.json records for `key` (this client: a file for a URL;
    cloud.Recording: a list of files for an SDK request); `error` names the index when it cannot."""
    index_path = Path(directory) / "index.json"
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise error(f"{index_path}: cannot read the replay index: {e}") from None
    if not index.get(key):
        raise error(f"{index_path}: no recorded response for {key}")
    return index[key]
