"""The Prefect API costgap talks to: PREFECT_API_URL where it is set, else Prefect's ephemeral server,
started here with progress output and a timeout that a cold home on a busy machine needs.

    python -c "from flows.api import ensure_api; print(ensure_api())"

Prefect starts its ephemeral server lazily, at the first client call, and gives it 20 s
(`server.ephemeral.startup_timeout_seconds`). On a fresh PREFECT_HOME the server first creates its
SQLite database and runs every migration; on this project's 2-core CI box with two busy processes
beside it that took 19-60 s, so about one cold start in three failed. costgap starts that same
server itself (Prefect's `SubprocessASGIServer` is one instance per process, so every later client
call reuses it), waits up to COSTGAP_API_START_TIMEOUT_S (default 300 s) for its health check, says
every few seconds that it is still starting, and when it truly cannot start ends with one line
that says what to do. With PREFECT_API_URL set, the server there must answer its health check.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from warehouse.db import env_seconds

START_TIMEOUT_S = 300.0  # a cold PREFECT_HOME took up to ~60 s under load here; 5x that before giving up
START_TIMEOUT_ENV = "COSTGAP_API_START_TIMEOUT_S"
TICK_S = 10.0  # a progress line this often while the server starts
HEALTH_TIMEOUT_S = 10.0  # a running server answers /health in milliseconds


class ApiUnavailable(RuntimeError):
    """No Prefect API could be reached or started; the message says what to do (exit 1)."""


def _check_remote(url: str) -> None:
    import httpx

    try:
        httpx.get(f"{url.rstrip('/')}/health", timeout=HEALTH_TIMEOUT_S).raise_for_status()
    except httpx.HTTPError as e:
        raise ApiUnavailable(f"PREFECT_API_URL={url} does not answer its health check ({type(e).__name__}: "
                             f"{e}); start that server (prefect server start) or unset PREFECT_API_URL to use a "
                             "local ephemeral one") from None


def ensure_api(progress: Callable[[str], None] | None = print) -> str:
    """The API URL in use, starting Prefect's ephemeral server first when no PREFECT_API_URL is set."""
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    say = progress or (lambda _line: None)
    url = PREFECT_API_URL.value()
    if url:
        _check_remote(url)
        return url
    if not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        raise ApiUnavailable("no Prefect API: PREFECT_API_URL is unset and the ephemeral server is disabled "
                             "(PREFECT_SERVER_EPHEMERAL_ENABLED); set one of them")
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    if server.running:
        return server.api_url
    timeout = env_seconds(START_TIMEOUT_ENV, START_TIMEOUT_S, allow_zero=False)
    t0 = time.monotonic()
    done = threading.Event()

    def tick() -> None:
        while not done.wait(TICK_S):
            say(f"  Prefect's local API is still starting ({time.monotonic() - t0:.0f} s; a fresh "
                f"PREFECT_HOME creates its database first; up to {timeout:.0f} s)")

    say("starting Prefect's local API server (ephemeral; set PREFECT_API_URL to use a running server)")
    ticker = threading.Thread(target=tick, name="costgap-api-progress", daemon=True)
    ticker.start()
    try:
        server.start(timeout=max(1, int(timeout)))
    except Exception as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        raise ApiUnavailable(f"Prefect's local API server did not start within {timeout:.0f} s ({first}); "
                             f"raise {START_TIMEOUT_ENV}, or start a server (prefect server start) and set "
                             "PREFECT_API_URL") from None
    finally:
        done.set()
        ticker.join()
    say(f"Prefect API ready in {time.monotonic() - t0:.1f} s")
    return server.api_url
