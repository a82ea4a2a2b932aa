"""One exit-code contract for every command (cli/commands/__init__.py), driven as a user drives it.

    .venv/bin/pytest -q tests/test_exit_codes.py

0: everything landed or was already there, or nothing to do; 2: input refused, named on stderr or in
the summary; 1: an internal failure, said in one line. Never a bare traceback for the first two.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from tests.conftest import COSTGAP, REPO
from tests.factories import bundle_doc, write_bundle



def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*COSTGAP, *args], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env=env or dict(os.environ))


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("exit")
    write_bundle(root / "good", bundle_doc(seq=1))
    (root / "bad").mkdir()
    (root / "bad" / "truncated.json").write_text('{"schema_version": 1, "target": ')
    (root / "book.csv").write_text("provider,region,instance_type,billing_mode,currency,price,period,effective_from,source\n"
                                   "p,r,i,on_demand,USD,1.5,hour,2026-10-01,test\n")
    (root / "badbook.csv").write_text("provider,region,instance_type,billing_mode,currency,price,period,effective_from,source\n"
                                      "p,r,i,on_demand,USD,-1,hour,2026-10-01,test\n")
    (root / "empty-inbox").mkdir()
    (root / "targets.toml").write_text(f'[[target]]\nid = "airgap"\ndispatch = "import"\ninbox = "{root / "empty-inbox"}"\n')
    return {"root": root, "wh": root / "wh.duckdb"}


CASES = [  # (name, argv with {root} and {wh}, expected exit, text expected in stdout+stderr)
    ("ingest lands", ["ingest", "{root}/good", "--warehouse", "{wh}"], 0, "landed 1"),
    ("ingest again: nothing to do", ["ingest", "{root}/good", "--warehouse", "{wh}"], 0, "duplicates 1"),
    ("ingest a truncated bundle", ["ingest", "{root}/bad", "--warehouse", "{wh}"], 2, "rejected 1"),
    ("ingest a missing path", ["ingest", "{root}/nope", "--warehouse", "{wh}"], 2, "no such file or directory"),
    ("price import", ["prices", "import", "{root}/book.csv", "--warehouse", "{wh}", "--results", "{root}/r"], 0, "imported"),
    ("bad price file", ["prices", "import", "{root}/badbook.csv", "--warehouse", "{wh}"], 2, "field 'price'"),
    ("unknown target", ["gap", "local", "nope", "--warehouse", "{wh}"], 2, "target 'nope': unknown"),
    ("targets", ["targets", "--warehouse", "{wh}"], 0, "local"),
    ("missing warehouse", ["targets", "--warehouse", "{root}/none.duckdb"], 2, "no such file"),
    ("unknown baseline", ["report", "--warehouse", "{wh}", "--site", "{root}/site", "--baseline", "x", "--no-images"], 2,
     "--baseline 'x'"),
    ("rebuild from nowhere", ["rebuild", "--from", "{root}/nope", "--warehouse", "{wh}"], 2, "no such file"),
    ("run an unknown target", ["run", "--targets", "ghost", "--targets-file", "{root}/targets.toml"], 2, "ghost"),
    ("run a target that brings nothing", ["run", "--targets", "airgap", "--targets-file", "{root}/targets.toml",
                                          "--warehouse", "{wh}", "--site", "{root}/site2", "--results", "{root}/res"],
     1, "no bundle in inbox"),
]


@pytest.mark.slow
def test_every_command_keeps_the_exit_code_contract(world):
    for name, argv, code, text in CASES:
        args = [a.format(root=world["root"], wh=world["wh"]) for a in argv]
        r = _run(*args)
        out = r.stdout + r.stderr
        assert r.returncode == code, f"{name}: exit {r.returncode}, expected {code}\n{out[-2000:]}"
        assert text in out, f"{name}: {text!r} not in\n{out[-2000:]}"
        if code == 2:
            assert "Traceback" not in out, name


@pytest.mark.slow
def test_an_unreachable_prefect_api_is_one_line_and_exit_1(world):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    env = dict(os.environ, PREFECT_API_URL=f"http://127.0.0.1:{port}/api")
    r = _run("ingest", str(world["root"] / "good"), "--warehouse", str(world["root"] / "other.duckdb"), env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("costgap: error: PREFECT_API_URL=") and "does not answer" in last
    assert "Traceback" not in r.stderr
