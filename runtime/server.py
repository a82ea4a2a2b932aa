"""The machine's local Prefect server: started by the first command that needs an API, reused by the rest.

    costgap server status          # pid, port, database, uptime
    costgap server start|stop

Without PREFECT_API_URL, every command that writes (run, ingest, prices, fx, rebuild, alerts) needs a
Prefect API for the warehouse's write slot. Starting Prefect's ephemeral server in each command cost
10-30 s a command on a quiet 2-core box (100 s on a busy one). Instead the first such command starts
Prefect's own server process (`prefect server start`) in the background, on a fixed loopback port
(COSTGAP_SERVER_PORT, default DEFAULT_PORT) and the user's PREFECT_HOME, waits for /api/health, and
records it in PREFECT_HOME/costgap-server.json; every later command finds it there and uses it at once.

- Its database is Prefect's: SQLite in PREFECT_HOME, or PREFECT_SERVER_DATABASE_CONNECTION_URL when the
  user points it at one (PostgreSQL in production: docs/deploy.md).
- A server that died (SIGKILL, reboot) or a stale record is noticed and replaced, in one line.
- Starting is serialised by a lock file beside the record: commands that start at the same moment
  start one server, not two.
- COSTGAP_API=ephemeral keeps the old one-shot behaviour (a server inside the command, gone with it),
  for CI-like single runs; a user's own PREFECT_API_URL always wins.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator
from urllib.parse import urlsplit, urlunsplit

from runtime import warm
from runtime.procs import alive, process_started

DEFAULT_PORT = 4210  # beside Prefect's own 4200, so a user's `prefect server start` keeps its port
PORT_ENV = "COSTGAP_SERVER_PORT"
MODE_ENV = "COSTGAP_API"  # "local" (the default: this machine's server) or "ephemeral" (one per command)
MODES = ("local", "ephemeral")
DATABASE_ENV = "PREFECT_SERVER_DATABASE_CONNECTION_URL"  # Prefect's own setting, read by the server
RECORD = "costgap-server.json"
LOCK = "costgap-server.lock"
LOG = "costgap-server.log"
HEALTH_TIMEOUT_S = 3.0  # a running server answers /api/health in milliseconds
LOCK_TICK_S = 10.0  # a progress line this often while another command starts the server
STOP_WAIT_S = 20.0  # SIGTERM, then SIGKILL after this long


class ServerError(RuntimeError):
    """The local server could not be started or reached; the message says what to do."""


@dataclass(frozen=True)
class Server:
    """One local server as recorded in PREFECT_HOME/costgap-server.json."""

    pid: int
    started: str | None  # the process's start time (clock ticks since boot): tells a reused pid apart
    port: int
    database: str  # the connection URL with any password masked
    since: str  # UTC, ISO 8601
    home: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def uptime_s(self, now: datetime | None = None) -> float:
        now = now or datetime.now(timezone.utc)
        return (now - datetime.fromisoformat(self.since)).total_seconds()


def mode() -> str:
    """COSTGAP_API: 'local' (default) or 'ephemeral'; anything else is a user error."""
    value = os.environ.get(MODE_ENV, "").strip().lower() or "local"
    if value not in MODES:
        from tasks.errors import UserError

        raise UserError(f"{MODE_ENV}={value!r}: expected one of {', '.join(MODES)}")
    return value


def port() -> int:
    raw = os.environ.get(PORT_ENV, "").strip()
    if not raw:
        return DEFAULT_PORT
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        from tasks.errors import UserError

        raise UserError(f"{PORT_ENV}={raw!r}: expected a TCP port number (1-65535)")
    return int(raw)


def home() -> Path:
    from prefect.settings import PREFECT_HOME

    return Path(PREFECT_HOME.value()).expanduser()


def database_url() -> str:
    """The database the server will use: the user's setting, else Prefect's SQLite file in PREFECT_HOME."""
    from prefect.settings import PREFECT_SERVER_DATABASE_CONNECTION_URL

    return os.environ.get(DATABASE_ENV) or str(PREFECT_SERVER_DATABASE_CONNECTION_URL.value())


def masked(url: str) -> str:
    """A connection URL fit to print: the password, if any, replaced by ***."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def healthy(port_: int, timeout_s: float = HEALTH_TIMEOUT_S) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port_}/api/health", timeout=timeout_s) as r:
            return r.status == 200
    except (OSError, urllib.error.URLError):
        return False


def read(home_: Path) -> Server | None:
    """The recorded server, or None (no record, or one that cannot be read: treated as stale)."""
    try:
        return Server(**json.loads((home_ / RECORD).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def running(home_: Path | None = None) -> Server | None:
    """The recorded server if its process is alive and answers its health check."""
    found = read(home_ or home())
    if found and alive(found.pid, found.started) and healthy(found.port):
        return found
    return None


@contextmanager
def _starting(home_: Path, say: Callable[[str], None]) -> Iterator[None]:
    """The start lock: one command at a time checks and starts the server; the others wait here."""
    home_.mkdir(parents=True, exist_ok=True)
    with open(home_ / LOCK, "a") as f:
        t0 = time.monotonic()
        next_tick = t0 + LOCK_TICK_S
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= next_tick:
                    next_tick += LOCK_TICK_S
                    say(f"  waiting for another costgap command that is starting the local Prefect server "
                        f"({time.monotonic() - t0:.0f} s)")
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _retire(found: Server, say: Callable[[str], None]) -> None:
    """A recorded server that is gone or does not answer: say so in one line and clear it away."""
    if alive(found.pid, found.started):
        say(f"Prefect's local server (pid {found.pid}, port {found.port}) does not answer; replacing it")
        _terminate(found.pid)
    else:
        say(f"Prefect's local server (pid {found.pid}, port {found.port}) is gone; starting a new one")
    (Path(found.home) / RECORD).unlink(missing_ok=True)


def _terminate(pid: int) -> None:
    """SIGTERM the server's process group, SIGKILL it after STOP_WAIT_S."""
    for sig, wait_s in ((signal.SIGTERM, STOP_WAIT_S), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not alive(pid, None):
                return
            time.sleep(0.1)


def start(timeout_s: float, say: Callable[[str], None], tick_s: float = 10.0) -> Server:
    """The running local server, started here if there is none (waits up to timeout_s for its health)."""
    home_ = home()
    found = running(home_)
    if found:
        return found
    with _starting(home_, say):
        found = read(home_)
        if found and alive(found.pid, found.started) and healthy(found.port):
            return found  # another command started it while this one waited for the lock
        if found:
            _retire(found, say)
        port_ = port()
        if healthy(port_):
            raise ServerError(
                f"port {port_} already answers as a Prefect server that costgap did not start (no record in "
                f"{home_ / RECORD}); use it with PREFECT_API_URL=http://127.0.0.1:{port_}/api, or set "
                f"{PORT_ENV} to a free port")
        return _launch(home_, port_, timeout_s, say, tick_s)


def _launch(home_: Path, port_: int, timeout_s: float, say: Callable[[str], None], tick_s: float) -> Server:
    database = database_url()
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": os.environ.get("PREFECT_SERVER_ANALYTICS_ENABLED",
                                                                           "false")}
    env.pop("PREFECT_API_URL", None)
    log_path = home_ / LOG
    say(f"starting Prefect's local server for this machine on port {port_} (database {masked(database)}; "
        f"log {log_path}); later commands reuse it")
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port_)],
            env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = Server(pid=proc.pid, started=process_started(proc.pid), port=port_, database=masked(database),
                    since=datetime.now(timezone.utc).isoformat(timespec="seconds"), home=str(home_))
    _write_record(home_, server)
    t0 = time.monotonic()
    next_tick = t0 + tick_s
    while not healthy(port_, timeout_s=1.0):
        code = proc.poll()
        if code is not None:
            (home_ / RECORD).unlink(missing_ok=True)
            raise ServerError(f"Prefect's local server exited with code {code} while starting; the end of "
                              f"{log_path} says why ({_last_line(log_path)})")
        waited = time.monotonic() - t0
        if waited >= timeout_s:
            _terminate(proc.pid)
            proc.wait()
            (home_ / RECORD).unlink(missing_ok=True)
            raise ServerError(f"Prefect's local server did not answer within {timeout_s:.0f} s (log {log_path}); "
                              "raise COSTGAP_API_START_TIMEOUT_S, or start a server yourself and set PREFECT_API_URL")
        if time.monotonic() >= next_tick:
            next_tick += tick_s
            say(f"  Prefect's local server is still starting ({waited:.0f} s; a fresh PREFECT_HOME creates "
                f"its database first; up to {timeout_s:.0f} s)")
        time.sleep(0.25)
    say(f"Prefect's local server ready in {time.monotonic() - t0:.1f} s at {server.url}")
    return server


def _write_record(home_: Path, server: Server) -> None:
    tmp = home_ / f".{RECORD}.{os.getpid()}"
    tmp.write_text(json.dumps(asdict(server), indent=1))
    os.replace(tmp, home_ / RECORD)


def _last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    return lines[-1][:300] if lines else "empty log"


def stop(say: Callable[[str], None]) -> Server | None:
    """Stop the recorded local server (if any) and clear its record; returns what was stopped."""
    home_ = home()
    with _starting(home_, say):
        found = read(home_)
        if found is None:
            return None
        if alive(found.pid, found.started):
            _terminate(found.pid)
        (home_ / RECORD).unlink(missing_ok=True)
        warm.stop(home_)  # it lives beside the server and leaves with it
        return found
