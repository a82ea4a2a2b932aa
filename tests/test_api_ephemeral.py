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


def test_the_one_shot_server_runs_as_prefect_runs_its_own(monkeypatch):
    """runtime/api.py starts Prefect's ephemeral API server itself, with Prefect's private variables
    PREFECT__SERVER_EPHEMERAL and PREFECT__SERVER_FINAL (ephemeral_server_env). This pins both to the installed
    Prefect: the command line and every private variable must be what prefect.server.api.server's
    SubprocessASGIServer runs (its Popen arguments are recorded here instead of starting a process), so a
    Prefect upgrade that renames, adds or drops one fails here rather than in a user's one-shot run."""
    from prefect.server.api import server as prefect_server

    recorded: dict = {}

    class Recorder:  # stands in for Popen inside Prefect's own call: the arguments are what is pinned
        def __init__(self, args, env=None, **_kw):
            recorded.update(args=list(args), env=dict(env or {}))

    monkeypatch.setattr(prefect_server.subprocess, "Popen", Recorder)
    monkeypatch.setattr(prefect_server.SubprocessASGIServer, "_instances", {})
    prefect_server.SubprocessASGIServer(port=4321)._run_uvicorn_command()
    theirs = recorded["args"]
    app_dir = theirs.index("--app-dir")  # where Prefect's package lies; costgap runs from the installed package
    assert api.ephemeral_server_argv(4321) == theirs[:app_dir] + theirs[app_dir + 2:]
    ours = api.ephemeral_server_env({})
    private = {k: v for k, v in recorded["env"].items() if k.startswith("PREFECT__")}
    assert private == {k: v for k, v in ours.items() if k.startswith("PREFECT__")} == {
        "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
    assert recorded["env"]["PREFECT_UI_ENABLED"] == ours["PREFECT_UI_ENABLED"]


def test_prefect_reads_the_private_variable_as_an_ephemeral_server(monkeypatch):
    """What PREFECT__SERVER_EPHEMERAL=1 does inside Prefect's app factory (the uvicorn --factory target above):
    the app runs only the services of an ephemeral server (RunInEphemeralServers), not the scheduler and the
    rest of a full server. Read from the lifespan the factory builds, without starting it."""
    import inspect

    from prefect.server.api import server as prefect_server

    def mode(env: str | None) -> bool:
        if env is None:
            monkeypatch.delenv("PREFECT__SERVER_EPHEMERAL", raising=False)
        else:
            monkeypatch.setenv("PREFECT__SERVER_EPHEMERAL", env)
        app = prefect_server.create_app(ignore_cache=True)
        lifespan = inspect.unwrap(app.router.lifespan_context)  # asynccontextmanager wraps the generator function
        return inspect.getclosurevars(lifespan).nonlocals["ephemeral"]

    assert mode("1") is True and mode(None) is False
