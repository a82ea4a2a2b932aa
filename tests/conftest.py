"""Shared fixtures. Real DuckDB files in tmp_path; a real Prefect test server when asked for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The `costgap` entry point (cli/launch.py) as a test runs it: handed to the session's warm process when
# it answers (a fork, ~0.1 s CPU), else a fresh process. Tests about a fresh process (cold starts, the
# one-shot mode) run `python -m cli.main` instead.
COSTGAP = [sys.executable, "-m", "cli.launch"]

# Set before the session's warm process imports (it serves only commands with the same logging settings).
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


@pytest.fixture
def warehouse_file(tmp_path: Path) -> Path:
    """Path for a fresh DuckDB warehouse file (created on first connect)."""
    return tmp_path / "wh.duckdb"


# One Prefect test server and one warm process for the whole run, shared by every xdist worker (issue 23:
# "a shared server for tests that only need an API"). The controlling pytest process starts both when the
# session starts, before it spawns the workers, without waiting for either: the workers collect while the
# server migrates its database and the warm process imports. Each worker waits for /api/health in its
# session fixture below. Tests that need a server of their own (a cold start, the local server, work pools
# and automations, PostgreSQL) start one themselves (tests/pool_harness.py).
SHARED_API = "COSTGAP_TEST_API_URL"  # set by the controller, inherited by the workers
SHARED_HOME = "COSTGAP_TEST_PREFECT_HOME"
SHARED_PID = "COSTGAP_TEST_SERVER_PID"
SERVER_START_S = 180  # migrations on an empty SQLite database while the workers collect: ~20 s, minutes when busy
_shared: dict = {}


def _die_with_parent() -> None:
    """In a child before exec: SIGTERM when the pytest process that started it dies (PR_SET_PDEATHSIG)."""
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)


# Under pytest-xdist (make test's three workers, make check's two) every worker, and every process it or the
# shared server and warm process start, runs torch on one thread. torch's default, a thread per core, puts two
# threads per worker on this 2-core box, and its OpenMP threads spin-wait while the box is contended: measured
# here, tests/test_finetune_search.py's trial test took 52.8 s with two threads and 10.8 s with one (44.6 and
# 21.0 CPU-s for the whole run). A run without workers (the `timed` part, a single file) keeps torch's default.
TORCH_THREADS = "1"


def pytest_configure(config):
    if getattr(config.option, "numprocesses", None) or os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.setdefault("OMP_NUM_THREADS", TORCH_THREADS)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """Under pytest-xdist, in the controlling process (it has the `dsession` plugin; a worker has
    `workerinput`): start the shared server and warm process before the workers are spawned. Without
    xdist, the first test that needs an API starts them (prefect_harness): a run of only `timed` tests
    (make test's second part) starts no server to compete with the budget they assert."""
    if session.config.pluginmanager.getplugin("dsession") is not None and SHARED_API not in os.environ:
        _start_shared()


def _start_shared() -> None:
    import tempfile

    from runtime import warm
    from runtime.api import ephemeral_server_argv, ephemeral_server_env
    from tests import prefect_template
    from tests.pool_harness import free_port

    root = Path(tempfile.mkdtemp(prefix="costgap-test-server-"))
    home = root / "prefect-home"
    home.mkdir()
    port = free_port()
    db = root / "prefect-test.db"
    if prefect_template.path().exists():  # made by an earlier session: no migrations (in the first, the server runs them)
        prefect_template.seed(db)
    # Prefect's own test server, run as prefect_test_harness runs it (SubprocessASGIServer's command line:
    # runtime/api.py, the same as costgap's one-shot mode), on a temporary SQLite database, for all workers.
    env = ephemeral_server_env({**os.environ, "PREFECT_HOME": str(home),
                                "PREFECT_SERVER_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{db}"})
    with open(root / "server.log", "ab") as log:
        server = subprocess.Popen(ephemeral_server_argv(port), cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                                  stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
    _shared.update(root=root, server=server)
    if os.environ.get(warm.ENV) != "0":
        with open(home / warm.LOG, "ab") as log:
            _shared["warm"] = subprocess.Popen(
                [sys.executable, "-m", warm.SERVE_MODULE, str(home), "--beside", str(os.getpid())],
                cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    os.environ.update({SHARED_API: f"http://127.0.0.1:{port}/api", SHARED_HOME: str(home),
                       SHARED_PID: str(server.pid)})


def pytest_unconfigure(config):
    import shutil

    for name in ("warm", "server"):
        proc = _shared.pop(name, None)
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
    root = _shared.pop("root", None)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def prefect_harness():
    """The run's shared Prefect test server (above), once it answers (started here without xdist).

    Every warehouse write takes the `warehouse-write` slot of its warehouse file (runtime/write_slot.py), so
    every test needs an API. PREFECT_API_URL is exported too, so `costgap` subprocesses use the same server
    (a test of a cold start removes it from the child's environment)."""
    from urllib.parse import urlsplit

    from runtime.api import use
    from runtime.procs import alive
    from tests.pool_harness import wait_healthy

    if SHARED_API not in os.environ:
        _start_shared()
    url, pid = os.environ[SHARED_API], int(os.environ[SHARED_PID])
    log = Path(os.environ[SHARED_HOME]).parent / "server.log"
    wait_healthy(urlsplit(url).port, lambda: not alive(pid, None), f"the session's Prefect test server (pid {pid})",
                 lambda: log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)",
                 timeout_s=SERVER_START_S, poll_s=0.25)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PREFECT_API_URL", url)  # restored when the session ends
        use(url)
        yield url


@pytest.fixture(scope="session")
def warm_commands(prefect_harness):
    """The run's one warm process (runtime/warm.py), started beside the controlling pytest process above.

    The session's PREFECT_HOME is the shared server's temp folder (nothing of the user's ~/.prefect is
    touched), and every `costgap` child that talks to the shared test server (COSTGAP above) is forked from
    a process that did the imports once, instead of paying ~4 s of CPU for them: the suite's largest cost
    on a 2-core box. Until it is ready (a few seconds), and with COSTGAP_WARM=0, commands run fresh."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PREFECT_HOME", os.environ[SHARED_HOME])  # restored when the session ends
        yield Path(os.environ[SHARED_HOME])


@pytest.fixture(autouse=True)
def _api(request):
    """Every test but a `timed` one gets the shared server and warm process (first of the autouse fixtures,
    so no test's own environment change is in force when the session fixtures export theirs)."""
    if request.node.get_closest_marker("timed") is None:
        request.getfixturevalue("warm_commands")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """Keep tests from touching ./costgap.duckdb or ./site of the checkout."""
    for var in ("COSTGAP_WAREHOUSE", "COSTGAP_SITE", "COSTGAP_RESULTS", "COSTGAP_TARGETS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("COSTGAP_HOME", str(tmp_path / ".costgap"))
    # A test that drops PREFECT_API_URL gets a one-shot server unless it asks for the machine's local one
    # (tests/test_local_server.py does): no test leaves a background server behind.
    monkeypatch.setenv("COSTGAP_API", "ephemeral")


CPU = "costgap_cpu_s"  # a test's CPU seconds (tests/conftest.py _cpu_now), recorded with its teardown report
HEAVIEST_CPU = 10  # how many tests the CPU table at the end names
_cpu_start: dict[str, float] = {}


def _cpu_now() -> float:
    """CPU seconds of this process and of its children that have been waited for (RUSAGE_CHILDREN): a test's
    servers, workers and fresh commands once it has stopped them. Not counted: commands forked from the
    session's warm process (its children) and the session's shared server, which every test uses."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _cpu_start[item.nodeid] = _cpu_now()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """The test's CPU seconds go with its teardown report (a worker's reports reach the controller under
    xdist): on this 2-core box the suite is bound by CPU, so CPU, not a noisy wall clock, says what to size."""
    if call.when == "teardown" and item.nodeid in _cpu_start:
        item.user_properties.append((CPU, round(_cpu_now() - _cpu_start.pop(item.nodeid), 2)))
    yield


SUMMARY = "costgap_summary"  # a test's headline figure: record_property(SUMMARY, "line") prints it at the end
FUZZ = "costgap_fuzz"  # record_property(FUZZ, (importer, variants tried)): summed into one line at the end
# Issue 44: the suite must stay under 10 minutes on a 2-core box, so every test over this (setup, call and
# teardown together) is named in a warning at the end of the run (.ci/run repeats it beside its timing line):
# a heavy scenario is then sized on purpose. A warning, not a failure: the box's speed varies by tens of %.
HEAVY_TEST_S = 120.0
HEAVY = "costgap: warning: test over"  # the start of each such line (.ci/run greps for it)
# `make check` (COSTGAP_CHECK=1) runs the tests not marked `slow`; one taking longer than this there is named too,
# since it probably starts a server or processes of its own and belongs in `make test` only (mark it slow).
CHECK_TEST_S = 20.0
CHECK_ENV = "COSTGAP_CHECK"


def _durations(terminalreporter) -> dict[str, float]:
    """Each test's setup + call + teardown seconds, from the reports (also those of xdist workers)."""
    total: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) in ("setup", "call", "teardown"):
                total[report.nodeid] = total.get(report.nodeid, 0.0) + report.duration
    return total


def _heavy_lines(terminalreporter) -> list[str]:
    limit, what = ((CHECK_TEST_S, "make check's limit") if os.environ.get(CHECK_ENV) == "1"
                   else (HEAVY_TEST_S, "the suite's limit"))
    slow = sorted(((s, n) for n, s in _durations(terminalreporter).items() if s > limit), reverse=True)
    hint = ("mark it `slow` if it starts a server or processes of its own" if limit == CHECK_TEST_S
            else "size it down on purpose, or say in its docstring why it needs the time (issue 44)")
    return [f"{HEAVY} {limit:.0f} s ({what}): {node} took {s:.0f} s; {hint}" for s, node in slow]


def _props_by_test(terminalreporter) -> list[tuple[str, str, object]]:
    """(nodeid, name, value) of every recorded property, once each (every phase's report carries them)."""
    seen, out = set(), []
    for reports in terminalreporter.stats.values():
        for report in reports:
            for name, value in getattr(report, "user_properties", ()):
                key = (getattr(report, "nodeid", ""), name, repr(value))
                if key not in seen:
                    seen.add(key)
                    out.append(key[:2] + (value,))
    return out


def pytest_terminal_summary(terminalreporter):
    """Print every test's headline figures (cold starts, fuzz variants, ...) after the run, also under
    pytest-xdist, where a worker's own output never reaches the terminal: they travel in the reports.
    Before them, a warning naming every test over HEAVY_TEST_S (CHECK_TEST_S under `make check`), and the
    tests that took the most CPU (CPU)."""
    heavy = _heavy_lines(terminalreporter)
    if heavy:
        terminalreporter.section("tests over the time limit")
        for line in heavy:
            terminalreporter.write_line(line, yellow=True)
    recorded = _props_by_test(terminalreporter)  # every phase's report: a fixture's teardown records after the call's
    props = [(name, value) for _, name, value in recorded if name in (SUMMARY, FUZZ)]
    cpu = sorted(((value, nodeid) for nodeid, name, value in recorded if name == CPU), reverse=True)
    if cpu:
        terminalreporter.section(f"the {min(HEAVIEST_CPU, len(cpu))} tests with the most CPU")
        terminalreporter.write_line(f"{sum(c for c, _ in cpu):.0f} CPU-s in {len(cpu)} tests (each test's process "
                                    "and the children it waited for; commands forked from the warm process and the "
                                    "shared server are not counted)")
        for c, nodeid in cpu[:HEAVIEST_CPU]:
            terminalreporter.write_line(f"{c:8.1f} CPU-s  {nodeid}")
    lines = [value for name, value in props if name == SUMMARY]
    fuzz: dict[str, int] = {}
    for name, value in props:
        if name == FUZZ:
            fuzz[value[0]] = fuzz.get(value[0], 0) + value[1]
    if fuzz:
        failed = any(r.nodeid.startswith("tests/test_fuzz_importers.py") for r in terminalreporter.getreports("failed"))
        parts = ", ".join(f"{k} {v}" for k, v in sorted(fuzz.items()))
        lines.append(f"importer fuzz: {sum(fuzz.values())} variants: "
                     f"{'SOME NOT REFUSED OR NOT EXACT (see the failures)' if failed else 'all refused or exact'} ({parts})")
    if lines:
        terminalreporter.section("costgap figures")
        for line in lines:
            terminalreporter.write_line(line)
