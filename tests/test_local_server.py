"""The machine's local Prefect server (runtime/server.py), driven through the CLI as a user drives it.

    .venv/bin/pytest -q tests/test_local_server.py

No PREFECT_API_URL in the commands' environment, a fresh PREFECT_HOME and a free port per test, so the
first command starts the server and the rest reuse it, as on a new machine:
1. six `costgap ingest` started at once: exactly one server process, all six land (issue 23 asked for ten;
   issue 44 sized it to six: the property is that commands racing to start the machine's server start one,
   and six commands forked within milliseconds of each other race as ten do, each waiting on the one start);
2. the server SIGKILLed between two commands: the next command says so in one line, starts a new one
   and lands; nothing landed before is lost; a stale record (dead pid) is replaced the same way;
3. `costgap server status|stop` report and stop it;
4. the warm process beside it (runtime/warm.py): commands through the `costgap` entry point fork from it and
   answer exactly as a fresh process does; killed, the next command runs fresh and starts a new one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import psutil
import pytest

from tests.conftest import COSTGAP as ENTRY, REPO
from tests.factories import bundle_doc, write_bundle
from tests.pool_harness import free_port, kill_recorded, kill_tree

pytestmark = pytest.mark.slow
COSTGAP = [sys.executable, "-m", "cli.main"]
STARTED = "starting Prefect's local server"
AT_ONCE = 6  # commands started at once on a machine with no server (issue 23: ten; issue 44: six, docstring 1.)


@pytest.fixture
def machine(tmp_path):
    """A command environment with no API URL, its own PREFECT_HOME and port; the server is stopped after."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), COSTGAP_SERVER_PORT=str(free_port()),
               COSTGAP_API="local", PREFECT_LOGGING_LEVEL="WARNING")
    yield env
    kill_recorded(tmp_path / "prefect-home")  # the server, and the warm process beside it
    for p in _servers(env["COSTGAP_SERVER_PORT"]):
        kill_tree(p.pid)


def _servers(port: str) -> list[psutil.Process]:
    """Prefect server processes listening on this test's port (the launcher, not its children)."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if "server" in cmd and "start" in cmd and "--port" in cmd and cmd[cmd.index("--port") + 1] == port:
            found.append(p)
    return found


def _costgap(env: dict, *args: str, check: bool = True, entry: list[str] = COSTGAP) -> subprocess.CompletedProcess:
    r = subprocess.run([*entry, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    if check:
        assert r.returncode == 0, f"costgap {' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr[-3000:]}"
    return r


def _landed(wh: Path) -> int:
    with duckdb.connect(str(wh), read_only=True) as con:
        return con.execute("select count(*) from runs").fetchone()[0]


def _warm_beside_this_test(env: dict) -> int:
    """A warm process for the test's PREFECT_HOME living as long as this pytest process (cli/warm_serve.py
    --beside), before any server exists: the ingests below go through the `costgap` entry point and are
    forked from it instead of each paying ~5 s of CPU for its imports. A forked command runs the same
    server-start code as a fresh one (runtime/server.py: the start lock, the record, the health wait); they
    reach it within milliseconds of each other, a tighter race than fresh processes staggered by their
    imports. The machine fixture kills it (its record) after the test."""
    from runtime import warm

    home = Path(env["PREFECT_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    with open(home / warm.LOG, "ab") as log:
        subprocess.Popen([sys.executable, "-m", warm.SERVE_MODULE, str(home), "--beside", str(os.getpid())],
                         cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                         start_new_session=True)
    return _warm_ready(home)


def test_six_commands_at_once_start_one_server_then_a_killed_one_is_replaced(machine, tmp_path):
    from runtime import warm

    wh = tmp_path / "wh.duckdb"
    bundles = [write_bundle(tmp_path / "in", bundle_doc(seq=i)) for i in range(AT_ONCE + 2)]
    warm_pid = _warm_beside_this_test(machine)
    procs = [subprocess.Popen([*ENTRY, "ingest", str(b), "--warehouse", str(wh)], cwd=REPO, env=machine,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for b in bundles[:AT_ONCE]]
    outs = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    for code, out, err in outs:
        assert code == 0, f"{out}\n{err[-3000:]}"
        assert "landed 1," in out
    assert sum(STARTED in err for _, _, err in outs) == 1  # one command started it; the others reused it
    servers = _servers(machine["COSTGAP_SERVER_PORT"])
    assert len(servers) == 1, [s.cmdline() for s in servers]
    assert _landed(wh) == AT_ONCE

    status = json.loads(_costgap(machine, "server", "status", "--json").stdout)
    assert status["state"] == "running" and status["pid"] == servers[0].pid
    assert status["port"] == int(machine["COSTGAP_SERVER_PORT"]) and status["database"].startswith("sqlite")

    # 2. SIGKILL between two commands: noticed, replaced in one line, the command lands, nothing lost
    os.kill(servers[0].pid, signal.SIGKILL)
    r = _costgap(machine, "ingest", str(bundles[AT_ONCE]), "--warehouse", str(wh), entry=ENTRY)
    gone = [ln for ln in r.stderr.splitlines() if "is gone; starting a new one" in ln]
    assert len(gone) == 1 and str(servers[0].pid) in gone[0], r.stderr
    assert _landed(wh) == AT_ONCE + 1
    (new,) = _servers(machine["COSTGAP_SERVER_PORT"])
    assert new.pid != servers[0].pid

    # a later command reuses it without a word about starting
    r = _costgap(machine, "ingest", str(bundles[AT_ONCE]), "--warehouse", str(wh), entry=ENTRY)
    assert STARTED not in r.stderr and "duplicates 1" in r.stdout
    # all of them were forked from the one warm process (its log has a line per command served)
    assert (Path(machine["PREFECT_HOME"]) / warm.LOG).read_text().count(": pid ") == AT_ONCE + 2
    assert warm.read(Path(machine["PREFECT_HOME"]))["pid"] == warm_pid

    # 3. stop; status then says not running (exit 1); a stale record with a dead pid is replaced
    assert "stopped Prefect's local server" in _costgap(machine, "server", "stop").stdout
    assert not _servers(machine["COSTGAP_SERVER_PORT"])
    assert _costgap(machine, "server", "status", check=False).returncode == 1
    record = Path(machine["PREFECT_HOME"]) / "costgap-server.json"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    record.write_text(json.dumps({"pid": dead.pid, "started": None, "port": int(machine["COSTGAP_SERVER_PORT"]),
                                  "database": "sqlite", "since": "2026-12-01T00:00:00+00:00",
                                  "home": machine["PREFECT_HOME"]}))
    r = _costgap(machine, "ingest", str(bundles[AT_ONCE + 1]), "--warehouse", str(wh))
    assert f"(pid {dead.pid}, port {machine['COSTGAP_SERVER_PORT']}) is gone" in r.stderr
    assert _landed(wh) == AT_ONCE + 2


def test_a_bad_mode_or_port_is_refused_with_exit_2(machine, tmp_path):
    bundle = write_bundle(tmp_path / "in", bundle_doc())
    r = _costgap({**machine, "COSTGAP_API": "remote"}, "ingest", str(bundle), "--warehouse",
                 str(tmp_path / "wh.duckdb"), check=False)
    assert r.returncode == 2 and "COSTGAP_API='remote'" in r.stderr
    r = _costgap({**machine, "COSTGAP_SERVER_PORT": "70000"}, "server", "start", check=False)
    assert r.returncode == 2 and "COSTGAP_SERVER_PORT='70000'" in r.stderr
    assert not _servers(machine["COSTGAP_SERVER_PORT"])


def _warm_ready(home: Path, timeout_s: float = 300.0) -> int:
    from runtime import warm

    deadline = time.monotonic() + timeout_s
    while not warm.answering(home):
        assert time.monotonic() < deadline, (home / warm.LOG).read_text()[-3000:]
        time.sleep(0.5)
    return warm.read(home)["pid"]


def test_commands_fork_from_the_warm_process_and_answer_as_a_fresh_one(machine, tmp_path):
    from runtime import warm

    entry = [str(Path(sys.executable).with_name("costgap"))]  # the entry point a person runs: cli/launch.py
    home = Path(machine["PREFECT_HOME"])
    wh = tmp_path / "wh.duckdb"
    bundles = [write_bundle(tmp_path / "in", bundle_doc(seq=i)) for i in range(2)]

    def run(*args, env=machine):
        return subprocess.run([*entry, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)

    def served() -> int:
        return (home / warm.LOG).read_text().count(": pid ")

    assert "warm" in _costgap(machine, "server", "start").stdout
    first = _warm_ready(home)
    fresh = {**machine, warm.ENV: "0"}

    r = run("ingest", str(bundles[0]), "--warehouse", str(wh))
    assert r.returncode == 0 and "landed 1," in r.stdout, r.stderr
    assert served() == 1
    # the same commands, forked and fresh: the same exit codes and the same words
    for args, code in ((("ingest", str(bundles[0]), "--warehouse", str(wh)), 0),
                       (("ingest", str(tmp_path / "nope"), "--warehouse", str(wh)), 2),
                       (("server", "nonsense"), 2)):
        forked, alone = run(*args), run(*args, env=fresh)
        assert forked.returncode == alone.returncode == code, (forked.stderr, alone.stderr)
        assert (forked.stdout, forked.stderr) == (alone.stdout, alone.stderr)
    assert served() == 4  # the three forked ones above, and the first; none of the fresh ones
    assert _landed(wh) == 1

    # a command whose logging settings differ from the warm imports' runs fresh
    r = run("ingest", str(bundles[0]), "--warehouse", str(wh), env={**machine, "PREFECT_LOGGING_LEVEL": "ERROR"})
    assert r.returncode == 0 and served() == 4

    # killed: the next command runs fresh, lands, and starts a new warm process
    os.kill(first, signal.SIGKILL)
    r = run("ingest", str(bundles[1]), "--warehouse", str(wh))
    assert r.returncode == 0 and "landed 1," in r.stdout, r.stderr
    assert _landed(wh) == 2
    assert _warm_ready(home) != first

    # it leaves with the server
    _costgap(machine, "server", "stop")
    assert not warm.answering(home) and not (home / warm.RECORD).exists()
