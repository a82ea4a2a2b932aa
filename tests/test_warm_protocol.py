"""The client side of the warm process's protocol (runtime/warm.py), against a stand-in listener on the
same socket: what `costgap` does when the warm process dies before a child says "pid", and when the
command it ran died of SIGKILL."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from runtime import warm
from tests.conftest import REPO


@pytest.fixture
def listener(tmp_path, monkeypatch):
    """A unix socket where `costgap` looks for this PREFECT_HOME's warm process."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("PREFECT_HOME", str(home))
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # delegate only hands off with an API
    monkeypatch.delenv(warm.ENV, raising=False)
    path = warm.socket_path(home.resolve())
    warm._private_dir(path.parent)
    path.unlink(missing_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(4)
    yield home, sock
    sock.close()
    path.unlink(missing_ok=True)


def _serve_once(sock: socket.socket, answer) -> threading.Thread:
    def run():
        conn, _ = sock.accept()
        with conn:
            answer(conn)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_a_warm_process_gone_before_any_pid_lets_the_command_run_fresh(listener):
    _, sock = listener

    def reset(conn):  # the request left unread, then closed: the client reads ECONNRESET
        pass

    t = _serve_once(sock, reset)
    assert warm.delegate(["ingest", "x"]) is None  # nothing ran there: the caller runs it here
    t.join(5)

    def read_then_close(conn):  # read, then gone before forking: end of stream, no "pid"
        req, fds = warm._recv(conn, maxfds=3)
        for fd in fds:
            os.close(fd)
        assert req["argv"] == ["ingest", "y"]

    t = _serve_once(sock, read_then_close)
    assert warm.delegate(["ingest", "y"]) is None
    t.join(5)


def test_a_command_killed_by_sigkill_kills_its_client_with_sigkill(listener):
    home, sock = listener

    def killed(conn):
        req, fds = warm._recv(conn, maxfds=3)
        for fd in fds:
            os.close(fd)
        warm._send(conn, {"pid": 1})
        warm._send(conn, {"code": 128 + signal.SIGKILL, "signal": signal.SIGKILL})
        conn.recv(1)  # until the client is gone

    t = _serve_once(sock, killed)
    client = subprocess.run([sys.executable, "-c", "import sys; from runtime import warm; "
                             "sys.exit(warm.delegate(['ingest', 'z']) or 0)"],
                            cwd=REPO, env=dict(os.environ), capture_output=True, text=True, timeout=60)
    t.join(5)
    # before the fix it raised OSError: [Errno 22] Invalid argument (no handler can be set for SIGKILL)
    assert client.returncode == -signal.SIGKILL, client.stderr
    assert client.stderr == ""
