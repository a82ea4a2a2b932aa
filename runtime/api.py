"""The Prefect API costgap talks to: PREFECT_API_URL where it is set, else this machine's local server.

    python -c "from runtime.api import ensure_api; print(ensure_api())"

Three ways, in this order:
1. PREFECT_API_URL set: that server must answer its health check (a team's server, a test harness).
2. COSTGAP_API=local (the default): the machine's local Prefect server (runtime/server.py), started in
   the background by the first command that needs it and reused by every later one; its URL is put
   into this process's settings and environment, so flows, clients and child processes all use it.
3. COSTGAP_API=ephemeral: Prefect's ephemeral server for this one command, gone when it ends (the
   old default; for CI-like one-shot runs). Prefect starts it lazily and gives it 20 s
   (`server.ephemeral.startup_timeout_seconds`); on a fresh PREFECT_HOME on a busy 2-core box that
   took 19-60 s, so costgap starts that same server process itself (Prefect's own command line, without
   importing Prefect's server package into the command), waits up to COSTGAP_API_START_TIMEOUT_S
   (default 300 s), saying every few seconds that it is still starting, and points this process and
   its children at it (PREFECT_API_URL) until the command exits.

When no server can be had, one line says what to do (exit 1).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from runtime import server as local_server
from runtime import warm
from warehouse.db import env_seconds

START_TIMEOUT_S = 300.0  # a cold PREFECT_HOME took up to ~60 s under load here; 5x that before giving up
START_TIMEOUT_ENV = "COSTGAP_API_START_TIMEOUT_S"
TICK_S = 10.0  # a progress line this often while the server starts
EPHEMERAL_POLL_S = 0.25  # how often the ephemeral server is asked for its health while it starts
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
    warm.spawn(local_server.home())  # later commands fork from it (runtime/warm.py); this one goes on
    return found.url


def use(url: str) -> None:
    """Point this process (its Prefect settings, threads and child processes) at the API at `url`."""
    from prefect.context import refresh_global_settings_context

    os.environ["PREFECT_API_URL"] = url
    refresh_global_settings_context()


_ephemeral_server: dict = {}  # this process's one-shot server: {"proc", "url"}


def ephemeral_server_argv(port: int) -> list[str]:
    """Prefect's ephemeral API server as Prefect itself runs it (`SubprocessASGIServer`: uvicorn on the app
    factory, lifespan on), started here without importing the server package into the command (4.6 s of
    CPU against 1.2 s for Prefect's client on this 2-core box). Its environment: ephemeral_server_env()."""
    return [sys.executable, "-m", "uvicorn", "--factory", "prefect.server.api.server:create_app", "--host",
            "127.0.0.1", "--port", str(port), "--log-level", "error", "--lifespan", "on"]


def ephemeral_server_env(base: dict | None = None) -> dict[str, str]:
    """The environment Prefect gives that server: no UI, its ephemeral set of services."""
    env = dict(os.environ if base is None else base)
    env.update(PREFECT_UI_ENABLED="0", PREFECT__SERVER_EPHEMERAL="1", PREFECT__SERVER_FINAL="1")
    env.pop("PREFECT_API_URL", None)
    return env


def one_shot_url() -> str | None:
    """The URL of this process's one-shot server (COSTGAP_API=ephemeral) while it runs, else None."""
    proc = _ephemeral_server.get("proc")
    return _ephemeral_server.get("url") if proc is not None and proc.poll() is None else None


def _stop_ephemeral() -> None:
    proc = _ephemeral_server.pop("proc", None)
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _ephemeral(say: Callable[[str], None], timeout: float) -> str:
    """An ephemeral Prefect API server for this command only, with progress and a long timeout; this
    process and its children are pointed at it, and it is stopped when the command exits."""
    import atexit

    from prefect.settings import PREFECT_SERVER_EPHEMERAL_ENABLED

    if not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        raise ApiUnavailable("no Prefect API: PREFECT_API_URL is unset and the ephemeral server is disabled "
                             "(PREFECT_SERVER_EPHEMERAL_ENABLED); set one of them")
    proc = _ephemeral_server.get("proc")
    if proc is not None and proc.poll() is None:
        return _ephemeral_server["url"]
    # The embedded server's telemetry heartbeat writes to the same fresh SQLite file while it migrates
    # ("database is locked" tracebacks on a busy box); an explicit user setting still wins.
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    say("starting Prefect's local API server (ephemeral, for this command only: COSTGAP_API=ephemeral)")
    t0 = time.monotonic()
    next_tick = t0 + TICK_S

    def spawn() -> tuple[subprocess.Popen, int]:
        port = free_port()
        child = subprocess.Popen(ephemeral_server_argv(port), env=ephemeral_server_env(),
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        _ephemeral_server.update(proc=child)
        return child, port

    atexit.register(_stop_ephemeral)
    proc, port = spawn()
    while not local_server.healthy(port, timeout_s=2):
        code = proc.poll()
        if code == 3:  # the port was taken between choosing and binding it: another one, as Prefect does
            proc, port = spawn()
            continue
        if code is not None:
            raise ApiUnavailable(f"Prefect's local API server exited with code {code} while starting; run "
                                 "`prefect server start` to see why, or set PREFECT_API_URL to a running server")
        now = time.monotonic()
        if now - t0 > timeout:
            _stop_ephemeral()
            raise ApiUnavailable(f"Prefect's local API server did not start within {timeout:.0f} s; raise "
                                 f"{START_TIMEOUT_ENV}, or start a server (prefect server start) and set "
                                 "PREFECT_API_URL")
        if now >= next_tick:
            next_tick += TICK_S
            say(f"  Prefect's local API is still starting ({now - t0:.0f} s; a fresh "
                f"PREFECT_HOME creates its database first; up to {timeout:.0f} s)")
        time.sleep(EPHEMERAL_POLL_S)
    url = f"http://127.0.0.1:{port}/api"
    _ephemeral_server["url"] = url
    use(url)
    say(f"Prefect API ready in {time.monotonic() - t0:.1f} s")
    return url


def free_port() -> int:
    """A loopback port free now (the OS picks it)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _make_home() -> None:
    """PREFECT_HOME with its parents: the server's SQLite file cannot be created in a missing folder."""
    from prefect.settings import PREFECT_HOME

    home = Path(PREFECT_HOME.value()).expanduser()
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ApiUnavailable(f"PREFECT_HOME={home}: cannot create it ({e.strerror}); set PREFECT_HOME to a "
                             "writable folder") from None
