"""The price sources' live HTTP client (tasks/pricing/http.py LiveClient) against a real HTTP server on 127.0.0.1.

    .venv/bin/python -m pytest -q tests/test_pricing_http.py

No mock of the network: http.server in a thread answers from a script of responses per path, and records
each request and the connection it came on. Shown here: every page of a source on one kept-alive
connection, gzip asked for and decoded, a 429/503 retried after the server's Retry-After (seconds or an
HTTP date) or a jittered backoff, a wait longer than costgap's limit and a persistent error failing at
once with one line, a connection that breaks mid-answer asked again, and nothing retried that a retry
cannot mend (a 404). The waits go to an injected sleep, so the test does not sit them out.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tasks.pricing import retry
from tasks.pricing.azure import AzureRetailPrices
from tasks.pricing.http import FetchError, LiveClient


class Server:
    """Answers GETs from `script`: path -> list of (status, headers, body) served in turn, the last repeated;
    body None closes the connection without an answer. `requests`: (connection number, path, headers)."""

    def __init__(self):
        self.script: dict[str, list[tuple[int, dict, bytes | None]]] = {}
        self.requests: list[tuple[int, str, dict]] = []
        self.connections = 0
        served: dict[str, int] = {}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as a real API server

            def setup(self):
                super().setup()
                outer.connections += 1
                self.conn_no = outer.connections

            def do_GET(self):  # noqa: N802 (http.server's name)
                outer.requests.append((self.conn_no, self.path, dict(self.headers)))
                answers = outer.script[self.path]
                n = served.get(self.path, 0)
                served[self.path] = n + 1
                status, headers, body = answers[min(n, len(answers) - 1)]
                if body is None:  # the connection breaks before any answer
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if "gzip" in self.headers.get("Accept-Encoding", ""):
                    body, headers = gzip.compress(body), {**headers, "Content-Encoding": "gzip"}
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


def _json(doc) -> tuple[int, dict, bytes]:
    return 200, {"Content-Type": "application/json"}, json.dumps(doc).encode()


def _item(i: int) -> dict:
    """One Azure Retail Prices item (the fields tasks/pricing/azure.py reads), a distinct meter each."""
    return {"currencyCode": "USD", "retailPrice": 3.0 + i / 100, "unitPrice": 3.0 + i / 100, "armRegionName": "eastus",
            "armSkuName": f"Standard_NC{i}ads_H100_v5", "meterId": f"m-{i}", "meterName": f"NC{i}ads H100 v5",
            "productName": "Virtual Machines NCadsH100v5 Series", "skuName": f"NC{i}ads H100 v5",
            "serviceName": "Virtual Machines", "type": "Consumption", "unitOfMeasure": "1 Hour",
            "effectiveStartDate": "2026-01-01T00:00:00Z", "isPrimaryMeterRegion": True}


def _client(sleeps: list[float], jitter: float = 0.0, **kw) -> LiveClient:
    return LiveClient(sleep=sleeps.append, jitter=lambda: jitter, **kw)


def test_every_page_of_a_source_on_one_kept_alive_connection_gzipped(server):
    pages = 6
    for i in range(pages):
        nxt = f"{server.url}/page/{i + 1}" if i + 1 < pages else None
        server.script[f"/page/{i}"] = [_json({"Items": [_item(i)], "NextPageLink": nxt})]

    class Local(AzureRetailPrices):
        location = property(lambda self: f"{server.url}/page/0")

    with LiveClient() as client:
        rows = Local(client).fetch()
    assert len(rows) == pages
    assert [path for _, path, _ in server.requests] == [f"/page/{i}" for i in range(pages)]
    assert server.connections == 1  # one TCP (in production: TLS) handshake for every page
    assert all("gzip" in h.get("Accept-Encoding", "") for _, _, h in server.requests)  # asked for, and decoded
    assert client._client is None  # closed when the source run ended


def test_a_429_waits_for_the_servers_retry_after_in_seconds(server):
    server.script["/p"] = [(429, {"Retry-After": "7"}, b"slow down"), _json({"ok": 1})]
    sleeps: list[float] = []
    assert _client(sleeps).get_json(f"{server.url}/p") == {"ok": 1}
    assert sleeps == [7.0]
    sleeps.clear()
    server.script["/q"] = [(429, {"Retry-After": "7"}, b"slow down"), _json({"ok": 2})]
    assert _client(sleeps, jitter=0.5).get_json(f"{server.url}/q") == {"ok": 2}
    assert sleeps == [7.5]  # plus up to backoff_s (1 s) of jitter, so throttled clients do not return together


def test_a_503_waits_until_the_http_date_it_names(server):
    when = datetime.now(timezone.utc) + timedelta(seconds=30)
    server.script["/p"] = [(503, {"Retry-After": format_datetime(when, usegmt=True)}, b"maintenance"), _json({"ok": 1})]
    sleeps: list[float] = []
    assert _client(sleeps).get_json(f"{server.url}/p") == {"ok": 1}
    assert len(sleeps) == 1 and 27 <= sleeps[0] <= 30


def test_without_retry_after_the_backoff_doubles_with_jitter(server):
    server.script["/p"] = [(500, {}, b"oops")] * 3 + [_json({"ok": 1})]
    low, high = [], []
    assert _client(low, jitter=0.0).get_json(f"{server.url}/p") == {"ok": 1}
    server.script["/q"] = [(502, {}, b"bad gateway")] * 3 + [_json({"ok": 1})]
    assert _client(high, jitter=0.999).get_json(f"{server.url}/q") == {"ok": 1}
    assert low == [0.5, 1.0, 2.0] and high == pytest.approx([1.0, 2.0, 4.0], abs=0.01)  # within [d/2, d], d = 1, 2, 4 s


def test_a_persistent_server_error_fails_after_every_attempt_in_one_line(server):
    server.script["/p"] = [(503, {}, b"down")]
    sleeps: list[float] = []
    with pytest.raises(FetchError, match=r"/p: HTTP 503 Service Unavailable after 4 attempt\(s\)$"):
        _client(sleeps).get_json(f"{server.url}/p")
    assert len(sleeps) == 3 and len(server.requests) == 4


def test_a_retry_after_longer_than_costgap_waits_fails_now(server):
    server.script["/p"] = [(429, {"Retry-After": "3600"}, b"come back in an hour")]
    sleeps: list[float] = []
    with pytest.raises(FetchError, match="asked to retry after 3,600 s, longer than costgap waits \\(120 s\\)"):
        _client(sleeps).get_json(f"{server.url}/p")
    assert sleeps == [] and len(server.requests) == 1 and retry.MAX_RETRY_AFTER_S == 120


def test_a_client_error_is_not_retried(server):
    server.script["/p"] = [(404, {}, b"no such page")]
    sleeps: list[float] = []
    with pytest.raises(FetchError, match=r"/p: HTTP 404 Not Found$"):
        _client(sleeps).get_bytes(f"{server.url}/p")
    assert sleeps == [] and len(server.requests) == 1


def test_a_connection_that_breaks_mid_answer_is_asked_again(server):
    server.script["/p"] = [(200, {}, None), _json({"ok": 1})]
    sleeps: list[float] = []
    assert _client(sleeps).get_json(f"{server.url}/p") == {"ok": 1}
    assert len(server.requests) == 2 and len(sleeps) == 1


def test_nobody_listening_is_one_line_after_the_transport_retries():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    sleeps: list[float] = []
    with pytest.raises(FetchError, match=rf"127.0.0.1:{port}/x: request failed: ConnectError"):
        _client(sleeps).get_json(f"http://127.0.0.1:{port}/x")
    assert sleeps == []  # refused connections are the transport's to retry (connect_retries), at once


def test_not_json_is_named(server):
    server.script["/p"] = [(200, {"Content-Type": "text/html"}, b"<html>maintenance</html>")]
    with pytest.raises(FetchError, match="/p: not JSON"):
        LiveClient().get_json(f"{server.url}/p")


@pytest.mark.parametrize("value, seconds", [("120", 120.0), ("0", 0.0), (None, None), ("", None), ("soon", None),
                                            ("Wed, 21 Oct 2026 07:28:00 GMT", 60.0)])
def test_parse_retry_after(value, seconds):
    now = datetime(2026, 10, 21, 7, 27, tzinfo=timezone.utc)
    assert retry.parse_retry_after(value, now=now) == seconds
