"""The one-shot mode's server start (runtime/api.py, COSTGAP_API=ephemeral) when the server process fails:
it exits while starting, or never answers. Each is one line to act on (ApiUnavailable: exit 1) and leaves
no server process behind. The start that succeeds is tested by tests/test_cold_start.py (five of its ten
cold starts) and tests/test_secrets.py (a whole `costgap run` on it)."""

from __future__ import annotations

import sys

import pytest

from runtime import api


@pytest.fixture
def one_shot(monkeypatch, tmp_path):
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setattr(api, "_ephemeral_server", {})
    lines: list[str] = []
    return lines.append, lines


def test_a_server_that_exits_while_starting_is_named_with_its_exit_code(one_shot, monkeypatch):
    say, lines = one_shot
    monkeypatch.setattr(api, "ephemeral_server_argv", lambda port: [sys.executable, "-c", "raise SystemExit(5)"])
    with pytest.raises(api.ApiUnavailable, match="exited with code 5 while starting"):
        api._ephemeral(say, timeout=60)
    assert lines[0].startswith("starting Prefect's local API server (ephemeral")


def test_a_server_that_never_answers_is_stopped_at_the_timeout(one_shot, monkeypatch):
    say, lines = one_shot
    monkeypatch.setattr(api, "ephemeral_server_argv",
                        lambda port: [sys.executable, "-c", "import time; time.sleep(120)"])
    started = []
    spawn = api.subprocess.Popen

    def popen(*a, **kw):
        started.append(spawn(*a, **kw))
        return started[-1]

    monkeypatch.setattr(api.subprocess, "Popen", popen)
    with pytest.raises(api.ApiUnavailable, match=f"did not start within 1 s; raise {api.START_TIMEOUT_ENV}"):
        api._ephemeral(say, timeout=1)
    (proc,) = started
    assert proc.poll() is not None  # stopped, not left running
    assert "PREFECT_API_URL" not in api.os.environ  # nothing points at the server that never answered
