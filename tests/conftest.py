"""Shared fixtures. Real DuckDB files in tmp_path; a real Prefect test server when asked for."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def warehouse_file(tmp_path: Path) -> Path:
    """Path for a fresh DuckDB warehouse file (created on first connect)."""
    return tmp_path / "wh.duckdb"


@pytest.fixture(scope="session")
def prefect_harness():
    """A real, temporary Prefect server and database for the whole test session."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """Keep tests from touching ./costgap.duckdb or ./site of the checkout."""
    for var in ("COSTGAP_WAREHOUSE", "COSTGAP_SITE", "COSTGAP_RESULTS", "COSTGAP_TARGETS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("COSTGAP_HOME", str(tmp_path / ".costgap"))
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
