"""Alerts end to end: a real `prefect server` on loopback (with its automation services), costgap's
automations applied through a custom webhook block, and a small HTTP receiver on 127.0.0.1.

    .venv/bin/pytest -q -m slow tests/test_alerts_notify.py

1. `costgap alerts apply` creates the seven automations (one per kind of change), and a second apply changes nothing;
   `costgap alerts test` sends one sample of each through the block.
2. Compares land bundles in which the cheapest target changes (a -> b), a target keeps failing (c, a pool
   target without a deployment) and a file is refused; then a price refresh opens a new period for a.
   Each step delivers exactly the expected notifications (checked by content), and re-running the same
   compare delivers none (c failed again, but it was told less than a day ago).
"""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.factories import BASE_TIME, bundle_doc, write_bundle, write_raw
from tests.pool_harness import Harness

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]  # servers, workers and flows: minutes on a busy 2-core box

BLOCK = "costgap-test-hook"
WAIT_S = 60.0  # event -> trigger -> action -> webhook takes a few seconds on an idle server
ACTIONS_DONE = ["prefect.automation.action.executed", "prefect.automation.action.failed"]


class Receiver:
    """An HTTP server on 127.0.0.1 that keeps every JSON body POSTed to it."""

    def __init__(self):
        got = self.got = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                got.append(json.loads(body or b"{}"))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self, n: int, h: Harness, warehouse: Path | None = None) -> list[dict]:
        """Wait until every costgap event emitted so far (alerts_sent in `warehouse`) is stored on the server
        and each one's automation action has run (executed or failed), and n messages arrived; a message too
        many would have arrived by then. Return the messages, sorted by subject, and forget them."""
        emitted = _emitted(warehouse) if warehouse is not None else None
        deadline = time.monotonic() + WAIT_S
        seen = None
        while time.monotonic() < deadline:
            seen = _server_counts(h.api) if emitted is not None else None
            if len(self.got) >= n and (seen is None or seen == (emitted, emitted)):
                break
            time.sleep(0.25)
        out, self.got[:] = list(self.got), []
        assert len(out) == n and (seen is None or seen == (emitted, emitted)), (
            f"expected {n} notification(s), got {len(out)}: {[m.get('subject') for m in out]}; costgap events "
            f"emitted {emitted}, (stored, actions done) on the server {seen}\n{h.tail('server', 3000)}")
        print(f"received {len(out)}: {sorted(m['subject'] for m in out)}")  # shown with -s
        return sorted(out, key=lambda m: m["subject"])


def _emitted(warehouse: Path) -> int:
    """Prefect events costgap emitted into this warehouse's alerts_sent (one event may tell several changes)."""
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute("select count(distinct event_id) from alerts_sent").fetchone()[0]


def _server_counts(api: str) -> tuple[int, int]:
    """(costgap events stored on the server, automation actions that ran): each event triggers one action."""
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: api}), get_client(sync_client=True) as c:
        return tuple(c.read_events(EventFilter(event=EventNameFilter(**kw)), limit=1).total
                     for kw in ({"prefix": ["costgap."]}, {"name": ACTIONS_DONE}))


def _save_block(api: str, url: str) -> None:
    from prefect.blocks.notifications import CustomWebhookNotificationBlock
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: api}):
        CustomWebhookNotificationBlock(name="costgap test", url=url,
                                       json_data={"subject": "{{subject}}", "body": "{{body}}"}).save(BLOCK)


def _bundles(inbox, target: str, days_ago: tuple[int, ...], tokens_per_s: float) -> None:
    for i, d in enumerate(days_ago):
        write_bundle(inbox, bundle_doc(target=target, started_at=BASE_TIME - timedelta(days=d),
                                       tokens_per_s=tokens_per_s + i, seq=d))


def test_costgap_events_reach_a_webhook_once(tmp_path):
    recv = Receiver()
    inbox_a, inbox_b = tmp_path / "inbox-a", tmp_path / "inbox-b"
    targets = tmp_path / "targets.toml"
    targets.write_text("".join(
        f'[[target]]\nid = "{t}"\nprovider = "test"\nregion = "r1"\ninstance_type = "type-{t}"\n'
        f'dispatch = "import"\ninbox = "{box}"\n\n' for t, box in (("a", inbox_a), ("b", inbox_b)))
        + '[[target]]\nid = "c"\nprovider = "test"\nregion = "r1"\ninstance_type = "type-c"\n'
          'dispatch = "pool"\nwork_pool = "nowhere"\ntimeout_s = 60\n')
    prices = tmp_path / "prices.csv"
    prices.write_text("provider,region,instance_type,billing_mode,currency,price,period,effective_from,source\n"
                      + "".join(f"test,r1,type-{t},on_demand,USD,2.0,hour,2026-08-01,test: stated here\n"
                                for t in "abc"))
    wh = tmp_path / "wh.duckdb"
    where = ["--warehouse", str(wh)]
    run = ["costgap", "run", "--targets", "a,b,c", "--targets-file", str(targets), *where, "--site", str(tmp_path / "site"),
           "--results", str(tmp_path / "results")]

    with Harness(tmp_path / "harness") as h:
        _save_block(h.api, recv.url)
        first = h.run(["costgap", "alerts", "apply", "--block", f"custom-webhook/{BLOCK}"])
        assert first.stderr.count("created:") == 7, first.stderr
        again = h.run(["costgap", "alerts", "apply", "--block", BLOCK])
        assert again.stderr.count("unchanged:") == 7, again.stderr
        bad = h.run(["costgap", "alerts", "apply", "--block", "no-such-block"], check=False)
        assert bad.returncode == 2 and f"custom-webhook/{BLOCK}" in bad.stderr, bad.stderr

        h.run(["costgap", "alerts", "test", "--block", BLOCK, "--link", "https://costgap.example/"])
        samples = recv.take(7, h)
        assert all(m["body"].rstrip().endswith("Report: https://costgap.example/") for m in samples)
        assert [m["subject"].split(":")[0] for m in samples] == ["costgap"] * 7

        h.run(["costgap", "prices", "import", str(prices), "--format", "csv", *where])
        # weeks ago: a (1000 tokens/s) is cheaper than b (600); c fails from the start
        _bundles(inbox_a, "a", (40, 39, 38), 1000.0)
        _bundles(inbox_b, "b", (40, 39, 38), 600.0)
        h.run(run, check=False)
        (failed,) = recv.take(1, h, wh)
        assert failed["subject"] == "costgap: c failed (1 in a row)"
        assert "run_deployment('probe/c') failed" in failed["body"] and "Report: file://" in failed["body"]

        # this week: b runs twice as fast, so it is clearly the cheapest; a file in b's inbox is refused
        _bundles(inbox_a, "a", (3, 2, 1), 1000.0)
        _bundles(inbox_b, "b", (3, 2, 1), 2000.0)
        write_raw(inbox_b, "broken.json", "{not json")
        h.run(run, check=False)
        # one cause, one message: b's speed-up is the cheapest change's evidence, not a gap or throughput shift too
        refused, cheapest = recv.take(2, h, wh)  # sorted by subject
        assert cheapest["subject"] == "costgap: b is now the cheapest for tiny"
        assert "from a to b" in cheapest["body"] and "USD per 1M tokens" in cheapest["body"]
        assert "; a costs +" in cheapest["body"] and "; b cost +" in cheapest["body"]  # dearer vs cheapest, each window
        assert "throughput " in cheapest["body"] and "Report: file://" in cheapest["body"]
        assert refused["subject"].startswith("costgap: 1 bundle(s) from ") and "rejected" in refused["body"]

        h.run(run, check=False)  # the same compare again: c fails a third time, within the day
        recv.take(0, h, wh)

        new_prices = tmp_path / "prices-new.csv"
        new_prices.write_text(prices.read_text().splitlines()[0] + "\n"
                              "test,r1,type-a,on_demand,USD,1.5,hour,2026-11-20,test: a cut\n")
        h.run(["python", "-c", "from flows.prices import refresh_prices; refresh_prices(names=[], catalogs="
               f"[{str(new_prices)!r}], catalog_format='csv', warehouse={str(tmp_path / 'wh.duckdb')!r}, "
               f"results={str(tmp_path / 'results')!r})"])
        (price,) = recv.take(1, h, wh)
        assert price["subject"] == "costgap: the price of a changed"
        assert "2 -> 1.5 USD per hour (-25.0%)" in price["body"] and "test: a cut" in price["body"]
