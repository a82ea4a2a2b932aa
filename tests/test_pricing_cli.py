"""`costgap prices refresh --source alibaba|tencent` and `costgap fx refresh|import` keep the exit-code
contract (cli/commands/__init__.py: 0 done, 1 internal failure, 2 input refused), driven as a user
drives them: `python -m cli.main` in a subprocess, recorded answers (tests/fixtures/*/README.md).

    .venv/bin/python -m pytest -q tests/test_pricing_cli.py
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.cloud_targets import GN7I, GN7I_BEIJING, GN10XP, targets_toml
from tests.conftest import COSTGAP, REPO
from tests.cost_support import warehouse

FIXTURES = REPO / "tests" / "fixtures"
TARGETS = targets_toml(GN7I, GN7I_BEIJING, GN10XP)
CLOUD_VARS = ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN",
              "TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY")


def _costgap(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in CLOUD_VARS}
    return subprocess.run([*COSTGAP, *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
def test_cloud_refresh_exit_codes(tmp_path):
    targets = tmp_path / "targets.toml"
    targets.write_text(TARGETS)
    wh = tmp_path / "w.duckdb"
    common = ["--targets-file", str(targets), "--warehouse", str(wh), "--results", str(tmp_path / "results")]

    ok = _costgap("prices", "refresh", "--source", "tencent", "--replay", str(FIXTURES / "tencent"), *common)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "imported: 4 rows, 4 new periods" in ok.stdout

    # one target not sold: that line on stderr, exit 1, the other target's four prices landed
    part = _costgap("prices", "refresh", "--source", "alibaba", "--replay", str(FIXTURES / "alibaba"), *common)
    assert part.returncode == 1, part.stdout + part.stderr
    assert "imported: 4 rows, 4 new periods" in part.stdout
    assert ("costgap: failed: alibaba: target alibaba-gn7i-beijing (cn-beijing ecs.gn7i-c8g1.2xlarge): not sold: "
            "every billing mode: InvalidInstanceType.ValueNotSupported") in part.stderr

    # live without credentials: refused (2) before any call, naming the variables to set
    bare = _costgap("prices", "refresh", "--source", "alibaba", *common)
    assert bare.returncode == 2, bare.stdout + bare.stderr
    assert ("--source alibaba: no credentials: set ALIBABA_CLOUD_ACCESS_KEY_ID and "
            "ALIBABA_CLOUD_ACCESS_KEY_SECRET") in bare.stderr

    # a bad sources file: refused, naming file, field and value
    bad = tmp_path / "sources.toml"
    bad.write_text('[tencent]\nbilling_modes = ["hourly"]\n')
    refused = _costgap("prices", "refresh", "--source", "tencent", "--replay", str(FIXTURES / "tencent"),
                       "--sources-file", str(bad), *common)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"{bad}: field 'tencent.billing_modes'" in refused.stderr and "hourly" in refused.stderr

    con = warehouse(wh)
    assert con.execute("select provider, count(*) from prices group by all order by all").fetchall() == [
        ("alibaba", 4), ("tencent", 4)]
    con.close()


@pytest.mark.slow
def test_fx_exit_codes(tmp_path):
    wh = ["--warehouse", str(tmp_path / "w.duckdb"), "--results", str(tmp_path / "results")]
    missing = _costgap("fx", "import", str(tmp_path / "nope.zip"), "--format", "ecb", *wh)
    assert missing.returncode == 2 and f"{tmp_path / 'nope.zip'}: no such ECB history file" in missing.stderr
    unknown = _costgap("fx", "refresh", "--source", "fed", *wh)
    assert unknown.returncode == 2 and "--source 'fed': unknown FX source" in unknown.stderr
    ok = _costgap("fx", "refresh", "--source", "ecb", "--replay", str(FIXTURES / "ecb"), *wh)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    again = _costgap("fx", "import", str(FIXTURES / "ecb" / "eurofxref-hist.zip"), "--format", "ecb", *wh)
    assert again.returncode == 0 and " 0 new, " in again.stdout  # nothing to do is 0


def test_fx_download_failure_is_exit_1(tmp_path, monkeypatch):
    """The network failing is not the user's input: one line, exit 1, nothing landed."""
    from typer.testing import CliRunner

    from cli.main import app
    from tasks.pricing import http

    def down(self, url):
        raise http.FetchError(f"{url}: request failed: [Errno -2] Name or service not known")

    monkeypatch.setattr(http.LiveClient, "get_bytes", down)
    got = CliRunner().invoke(app, ["fx", "refresh", "--source", "ecb", "--warehouse", str(tmp_path / "w.duckdb")])
    assert got.exit_code == 1, got.output
    assert "costgap: error: ecb: https://www.ecb.europa.eu/stats/eurofxref/eurofxref-hist.zip: request failed" \
        in got.output
    assert not Path(tmp_path / "w.duckdb").exists()
