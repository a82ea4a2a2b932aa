"""A real Prefect server, process work pools and workers on loopback, for tests and benchmarks.

    .venv/bin/pytest -q -m slow tests/test_pool_integration.py     # uses it
    .venv/bin/python -m tests.bench fanout                            # so does the fan-out bench

Everything it starts runs in its own session and is stopped (the whole process tree, SIGTERM then
SIGKILL) when the `Harness` context exits, on every path. Logs of each process go to files under
the harness directory; `tail(name)` shows the end of one when an assertion fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import psutil

from runtime import warm
from runtime.api import free_port  # noqa: F401  (tests take the port helper from here)
from runtime.server import healthy

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SERVER_START_S = 120  # a cold `prefect server start` (migrations, services) on a busy 2-core box


def wait_healthy(port: int, gone: Callable[[], bool], what: str, tail: Callable[[], str],
                 timeout_s: float = SERVER_START_S, poll_s: float = 0.5) -> None:
    """Block until the Prefect server on loopback `port` answers /api/health (runtime/server.py's check);
    RuntimeError with the end of its log if it exits (`gone`) or does not answer within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if healthy(port, timeout_s=2):
            return
        if gone():
            raise RuntimeError(f"{what} exited:\n{tail()}")
        time.sleep(poll_s)
    raise RuntimeError(f"{what} not healthy after {timeout_s:.0f} s:\n{tail()}")


def kill_tree(pid: int, sig: int = signal.SIGKILL) -> list[int]:
    """Signal a process and all its descendants (sessions do not matter); returns the pids hit."""
    try:
        root = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return []
    procs = root.children(recursive=True) + [root]
    for p in procs:
        try:
            p.send_signal(sig)
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=10)
    return [p.pid for p in procs]


def kill_recorded(prefect_home: Path) -> None:
    """Kill the local server and the warm process beside it by their records in this PREFECT_HOME (what
    `costgap server stop` ends, without a command's imports); a missing record is skipped."""
    import json

    from runtime import server

    for name in (server.RECORD, warm.RECORD):
        record = Path(prefect_home) / name
        if record.exists():
            kill_tree(json.loads(record.read_text())["pid"])


class Harness:
    """A temp PREFECT_HOME, a server on a free loopback port, and named background processes."""

    def __init__(self, root: Path, extra_env: dict[str, str] | None = None):
        """A server on SQLite (PREFECT_HOME's prefect.db) starts from the migrated template (tests/prefect_template.py);
        one on another database (`PREFECT_SERVER_DATABASE_CONNECTION_URL` in extra_env: PostgreSQL) migrates it."""
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.api = f"http://127.0.0.1:{self.port}/api"
        self.env = {
            **os.environ,
            "PREFECT_HOME": str(self.root / "prefect-home"),
            "PREFECT_API_URL": self.api,
            "PREFECT_UI_ENABLED": "false",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_LOGGING_LEVEL": "INFO",
            "PREFECT_WORKER_HEARTBEAT_SECONDS": "5",  # a dead worker is noticed in ~15 s, not 90; a busy box still beats in time
            # workers pick runs up within 2 s. Each poll costs the server ~30 ms of CPU: three workers polling every
            # second kept an idle harness server at 6.4 CPU-s a minute, every 5 s at 2.2 (measured here, issue 44)
            "PREFECT_WORKER_QUERY_SECONDS": "2",
            "PYTHONUNBUFFERED": "1",
            **(extra_env or {}),
        }
        self.procs: dict[str, subprocess.Popen] = {}

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> "Harness":
        if os.environ.get("COSTGAP_CHECK") == "1":  # `make check` (tests/conftest.py CHECK_ENV) runs none of these
            raise RuntimeError("this test starts a Prefect server of its own (tests/pool_harness.Harness): mark it "
                               "@pytest.mark.slow, so that `make test` runs it and `make check` does not")
        try:
            if "PREFECT_SERVER_DATABASE_CONNECTION_URL" not in self.env:
                from tests import prefect_template

                prefect_template.seed(Path(self.env["PREFECT_HOME"]) / "prefect.db")
            server = self.start("server", ["prefect", "server", "start", "--host", "127.0.0.1", "--port", str(self.port)])
            self._wait_healthy()
            if self.env.get(warm.ENV) != "0":
                Path(self.env["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)  # `costgap` commands fork from it (runtime/warm.py), once it is ready
                self.start("warm", ["python", "-m", warm.SERVE_MODULE, self.env["PREFECT_HOME"], "--beside", str(server.pid)])
        except BaseException:
            self.stop_all()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop_all()

    def _wait_healthy(self) -> None:
        wait_healthy(self.port, lambda: self.procs["server"].poll() is not None, "prefect server",
                     lambda: self.tail("server"))

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "ab")
        cmd = [str(BIN / argv[0]) if (BIN / argv[0]).exists() else argv[0], *argv[1:]]
        proc = subprocess.Popen(cmd, cwd=REPO, env={**self.env, **(env or {})}, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.procs[name] = proc
        return proc

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name, None)
        if proc is None:
            return
        if proc.poll() is None:
            kill_tree(proc.pid, signal.SIGTERM)
        kill_tree(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def stop_all(self) -> None:
        for name in [n for n in self.procs if n != "server"] + ["server"]:
            self.stop(name)

    # -- helpers ----------------------------------------------------------------------------
    def run(self, argv: list[str], env: dict[str, str] | None = None, timeout: float = 300,
            check: bool = True) -> subprocess.CompletedProcess:
        cmd = [str(BIN / argv[0]) if (BIN / argv[0]).exists() else argv[0], *argv[1:]]
        res = subprocess.run(cmd, cwd=REPO, env={**self.env, **(env or {})}, capture_output=True,
                             text=True, timeout=timeout)
        if check and res.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {res.returncode}:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
        return res

    def create_pool(self, pool: str) -> None:
        """A process work pool with Prefect's default template, as `prefect work-pool create --type process
        --overwrite` makes it, through the API from this process (a CLI start is seconds of CPU)."""
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.actions import WorkPoolCreate
        from prefect.settings import PREFECT_API_URL, temporary_settings
        from prefect.workers.process import ProcessWorker

        with temporary_settings({PREFECT_API_URL: self.api}), get_client(sync_client=True) as c:
            c.create_work_pool(WorkPoolCreate(name=pool, type="process",
                                              base_job_template=ProcessWorker.get_default_base_job_template()),
                               overwrite=True)

    def worker(self, pool: str, name: str | None = None) -> subprocess.Popen:
        """A process worker polling `pool` (the pool is created first)."""
        self.create_pool(pool)
        return self.start(name or f"worker-{pool}", ["prefect", "worker", "start", "--pool", pool,
                                                   "--type", "process", "--name", name or f"worker-{pool}"])

    def wait_workers(self, pools: list[str], timeout_s: float = 90) -> None:
        """Block until every pool has a live worker (Prefect's heartbeat rule, tasks.dispatch.fanout.worker_live)."""
        from datetime import datetime, timezone

        from prefect.client.orchestration import get_client
        from prefect.settings import PREFECT_API_URL, temporary_settings

        from tasks.dispatch.fanout import worker_live

        deadline = time.monotonic() + timeout_s
        with temporary_settings({PREFECT_API_URL: self.api}), get_client(sync_client=True) as c:
            while time.monotonic() < deadline:
                now = datetime.now(timezone.utc)
                if all(any(worker_live(w, now) for w in c.read_workers_for_work_pool(p)) for p in pools):
                    return
                time.sleep(1)
        raise RuntimeError(f"workers for {pools} never came online:\n{self.tail('worker-' + pools[0])}")

    def tail(self, name: str, chars: int = 4000) -> str:
        f = self.root / f"{name}.log"
        return f.read_text(errors="replace")[-chars:] if f.exists() else "(no log)"
