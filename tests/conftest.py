"""Shared fixtures. Real DuckDB files in tmp_path; a real Prefect test server when asked for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The `costgap` entry point (flows/launch.py) as a test runs it: handed to the session's warm process when
# it answers (a fork, ~0.1 s CPU), else a fresh process. Tests about a fresh process (cold starts, the
# one-shot mode) run `python -m flows.cli` instead.
COSTGAP = [sys.executable, "-m", "flows.launch"]

# Set before the session's warm process imports (it serves only commands with the same logging settings).
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


@pytest.fixture
def warehouse_file(tmp_path: Path) -> Path:
    """Path for a fresh DuckDB warehouse file (created on first connect)."""
    return tmp_path / "wh.duckdb"


@pytest.fixture(scope="session", autouse=True)
def prefect_harness():
    """A real, temporary Prefect server and database for the whole test session.

    Every warehouse write takes the `warehouse-write` slot (flows/write_slot.py), so every test
    needs an API. PREFECT_API_URL is exported too, so `costgap` subprocesses use the same server
    (a test of a cold start removes it from the child's environment)."""
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    before = os.environ.get("PREFECT_API_URL")
    with prefect_test_harness(server_startup_timeout=120):
        os.environ["PREFECT_API_URL"] = PREFECT_API_URL.value()
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("PREFECT_API_URL", None)
            else:
                os.environ["PREFECT_API_URL"] = before


@pytest.fixture(scope="session", autouse=True)
def warm_commands(prefect_harness, tmp_path_factory):
    """One warm process per test session (per xdist worker), beside this pytest process (flows/warm.py).

    The session's PREFECT_HOME becomes a temp folder (nothing of the user's ~/.prefect is touched), and
    every `costgap` child that talks to the session's test server (COSTGAP above) is forked from a
    process that did the imports once, instead of paying ~4 s of CPU for them: the suite's largest cost
    on a 2-core box. Until it is ready (a few seconds), and with COSTGAP_WARM=0, commands run fresh."""
    from flows import warm

    before = os.environ.get("PREFECT_HOME")
    home = tmp_path_factory.mktemp("prefect-home")
    os.environ["PREFECT_HOME"] = str(home)
    proc = None
    if os.environ.get(warm.ENV) != "0":
        with open(home / warm.LOG, "ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", warm.SERVE_MODULE, str(home), "--beside", str(os.getpid())],
                                    cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
    try:
        yield home
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if before is None:
            os.environ.pop("PREFECT_HOME", None)
        else:
            os.environ["PREFECT_HOME"] = before


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """Keep tests from touching ./costgap.duckdb or ./site of the checkout."""
    for var in ("COSTGAP_WAREHOUSE", "COSTGAP_SITE", "COSTGAP_RESULTS", "COSTGAP_TARGETS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("COSTGAP_HOME", str(tmp_path / ".costgap"))
    # A test that drops PREFECT_API_URL gets a one-shot server unless it asks for the machine's local one
    # (tests/test_local_server.py does): no test leaves a background server behind.
    monkeypatch.setenv("COSTGAP_API", "ephemeral")


SUMMARY = "costgap_summary"  # a test's headline figure: record_property(SUMMARY, "line") prints it at the end
FUZZ = "costgap_fuzz"  # record_property(FUZZ, (importer, variants tried)): summed into one line at the end


def pytest_terminal_summary(terminalreporter):
    """Print every test's headline figures (cold starts, fuzz variants, ...) after the run, also under
    pytest-xdist, where a worker's own output never reaches the terminal: they travel in the reports."""
    seen, props = set(), []  # every phase's report: a fixture's teardown records after the call's report
    for reports in terminalreporter.stats.values():
        for report in reports:
            for name, value in getattr(report, "user_properties", ()):
                key = (getattr(report, "nodeid", ""), name, repr(value))
                if name in (SUMMARY, FUZZ) and key not in seen:
                    seen.add(key)
                    props.append((name, value))
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
