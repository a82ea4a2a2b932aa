"""The Prefect API costgap talks to: PREFECT_API_URL where it is set, else this machine's local server.

    python -c "from flows.api import ensure_api; print(ensure_api())"

Three ways, in this order:
1. PREFECT_API_URL set: that server must answer its health check (a team's server, a test harness).
2. COSTGAP_API=local (the default): the machine's local Prefect server (flows/server.py), started in
   the background by the first command that needs it and reused by every later one; its URL is put
   into this process's settings and environment, so flows, clients and child processes all use it.
3. COSTGAP_API=ephemeral: Prefect's ephemeral server inside this one command, gone when it ends (the
   old default; for CI-like one-shot runs). Prefect starts it lazily and gives it 20 s
   (`server.ephemeral.startup_timeout_seconds`); on a fresh PREFECT_HOME on a busy 2-core box that
   took 19-60 s, so costgap starts that same server itself (Prefect's `SubprocessASGIServer` is one
   instance per process, so every later client call reuses it) and waits up to
   COSTGAP_API_START_TIMEOUT_S (default 300 s), saying every few seconds that it is still starting.

When no server can be had, one line says what to do (exit 1).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Callable

from flows import server as local_server
from flows import warm
from warehouse.db import env_seconds

START_TIMEOUT_S = 300.0  # a cold PREFECT_HOME took up to ~60 s under load here; 5x that before giving up
START_TIMEOUT_ENV = "COSTGAP_API_START_TIMEOUT_S"
TICK_S = 10.0  # a progress line this often while the server starts
POLL_S = 0.5  # how often the start is checked for a server process that died
HEALTH_TIMEOUT_S = 10.0  # a running server answers /health in milliseconds


class ApiUnavailable(RuntimeError):
    """No Prefect API could be reached or started; the message says what to do (exit 1)."""


def _check_remote(url: str) -> None:
    import httpx

    try:
        httpx.get(f"{url.rstrip('/')}/health", timeout=HEALTH_TIMEOUT_S).raise_for_status()
    except httpx.HTTPError as e:
        raise ApiUnavailable(f"PREFECT_API_URL={url} does not answer its health check ({type(e).__name__}: "
                             f"{e}); start that server (prefect server start) or unset PREFECT_API_URL to use "
                             "this machine's local one") from None


def ensure_api(progress: Callable[[str], None] | None = print) -> str:
    """The API URL in use; without PREFECT_API_URL, the local server (or an ephemeral one) is started first."""
    from prefect.settings import PREFECT_API_URL

    say = progress or (lambda _line: None)
    url = PREFECT_API_URL.value()
    if url:
        _check_remote(url)
        return url
    timeout = env_seconds(START_TIMEOUT_ENV, START_TIMEOUT_S, allow_zero=False)
    _make_home()
    if local_server.mode() == "ephemeral":
        return _ephemeral(say, timeout)
    try:
        found = local_server.start(timeout, say, tick_s=TICK_S)
    except local_server.ServerError as e:
        raise ApiUnavailable(str(e)) from None
    use(found.url)
    warm.spawn(local_server.home())  # later commands fork from it (flows/warm.py); this one goes on
    return found.url


def use(url: str) -> None:
    """Point this process (its Prefect settings, threads and child processes) at the API at `url`."""
    from prefect.context import refresh_global_settings_context

    os.environ["PREFECT_API_URL"] = url
    refresh_global_settings_context()


def _ephemeral(say: Callable[[str], None], timeout: float) -> str:
    """Prefect's ephemeral server, started inside this process with progress and a long timeout."""
    from prefect.settings import PREFECT_SERVER_EPHEMERAL_ENABLED

    if not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        raise ApiUnavailable("no Prefect API: PREFECT_API_URL is unset and the ephemeral server is disabled "
                             "(PREFECT_SERVER_EPHEMERAL_ENABLED); set one of them")
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    if server.running:
        return server.api_url
    # The embedded server's telemetry heartbeat writes to the same fresh SQLite file while it migrates
    # ("database is locked" tracebacks on a busy box); an explicit user setting still wins.
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    t0 = time.monotonic()
    failure: list[BaseException] = []

    def start() -> None:
        try:
            server.start(timeout=max(1, int(timeout)))
        except BaseException as e:  # handed to the waiting thread, which raises it
            failure.append(e)

    say("starting Prefect's local API server (ephemeral, for this command only: COSTGAP_API=ephemeral)")
    starter = threading.Thread(target=start, name="costgap-api-start", daemon=True)
    starter.start()
    next_tick = t0 + TICK_S
    while starter.is_alive():
        starter.join(POLL_S)
        proc = getattr(server, "server_process", None)
        code = proc.poll() if proc is not None else None
        if starter.is_alive() and code not in (None, 3):  # 3: port taken, Prefect retries on another port
            raise ApiUnavailable(f"Prefect's local API server exited with code {code} while starting; run "
                                 "`prefect server start` to see why, or set PREFECT_API_URL to a running server")
        if starter.is_alive() and time.monotonic() >= next_tick:
            next_tick += TICK_S
            say(f"  Prefect's local API is still starting ({time.monotonic() - t0:.0f} s; a fresh "
                f"PREFECT_HOME creates its database first; up to {timeout:.0f} s)")
    if failure:
        first = (str(failure[0]).strip().splitlines() or [type(failure[0]).__name__])[0][:300]
        raise ApiUnavailable(f"Prefect's local API server did not start within {timeout:.0f} s ({first}); "
                             f"raise {START_TIMEOUT_ENV}, or start a server (prefect server start) and set "
                             "PREFECT_API_URL")
    say(f"Prefect API ready in {time.monotonic() - t0:.1f} s")
    return server.api_url


def _make_home() -> None:
    """PREFECT_HOME with its parents: the server's SQLite file cannot be created in a missing folder."""
    from prefect.settings import PREFECT_HOME

    home = Path(PREFECT_HOME.value()).expanduser()
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ApiUnavailable(f"PREFECT_HOME={home}: cannot create it ({e.strerror}); set PREFECT_HOME to a "
                             "writable folder") from None
