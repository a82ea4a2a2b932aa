"""Secrets: credentials planted in the environment never reach a bundle, the warehouse, a log or
the report. The real probe, `costgap ingest`, `costgap report` and the compare flow run with
them set; then all four outputs are searched for the planted value."""

from __future__ import annotations

import os
import secrets
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tasks.landing.land import land_paths, safe_uri
from tests import prefect_template
from tests.conftest import COSTGAP, REPO
from tests.factories import bundle_doc, write_bundle
from warehouse.db import connect

SECRET = "cgsecret" + secrets.token_hex(12)
# The usual places a price-API or storage credential sits in a process environment.
CREDENTIAL_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZURE_STORAGE_KEY",
                   "AZURE_CLIENT_SECRET", "GOOGLE_APPLICATION_CREDENTIALS", "COSTGAP_PRICE_API_KEY",
                   "HF_TOKEN", "COSTGAP_S3_SECRET",
                   # the cloud price SDKs' standard variables (tasks/pricing/alibaba.py, tencent.py)
                   "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN",
                   "TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY")
FAST_SKIP = "finetune,storage,gemm_sustained,feed,hostdev"  # the real probe, minus its slow parts


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({v: SECRET for v in CREDENTIAL_VARS})
    env["COSTGAP_EXTRA_NOTE"] = f"token={SECRET}"  # a COSTGAP_* variable must not leak either
    return env


def _grep_tree(root: Path) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


def _grep_warehouse(path: Path) -> list[str]:
    """Every row of every table, cast to text (DuckDB compresses strings on disk, so a byte grep
    of the file alone could miss one), plus the file bytes."""
    hits = [str(path)] if SECRET.encode() in path.read_bytes() else []
    con = connect(str(path), read_only=True)
    try:
        tables = [r[0] for r in con.execute(
            "select table_name from information_schema.tables where table_schema = 'main'").fetchall()]
        for t in tables:
            n = con.execute(f'select count(*) from "{t}" as r where cast(r as varchar) like ?',
                            [f"%{SECRET}%"]).fetchall()[0][0]
            if n:
                hits.append(f"{path}:{t} ({n} rows)")
    finally:
        con.close()
    return hits


def test_urls_lose_their_credentials():
    assert safe_uri(f"s3://AKIA:{SECRET}@bucket/r/x.json") == "s3://bucket/r/x.json"
    assert safe_uri(f"https://host/x.json?sig={SECRET}") == "https://host/x.json"
    assert safe_uri("/plain/path.json") == "/plain/path.json"


@pytest.mark.slow
def test_planted_secret_reaches_no_output(tmp_path):
    env, logs = _env(), []
    bundles = tmp_path / "bundles"
    probe = subprocess.run([sys.executable, "-m", "tasks.probe", "--profile", "quick", "--target", "local",
                            "--out", str(bundles), "--skip", FAST_SKIP], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=300)
    assert probe.returncode == 0, probe.stderr[-2000:]
    logs += [probe.stdout, probe.stderr]
    bundle = Path(probe.stdout.strip().splitlines()[-1])
    assert bundle.exists()
    wh, site = tmp_path / "wh.duckdb", tmp_path / "site"
    ingest = subprocess.run([*COSTGAP, "ingest", str(bundles), "--warehouse", str(wh)],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    logs += [ingest.stdout, ingest.stderr]
    assert ingest.returncode == 0, ingest.stdout + ingest.stderr  # a real probe bundle lands clean
    report = subprocess.run([*COSTGAP, "report", "--warehouse", str(wh),
                             "--site", str(site), "--no-images"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=300)
    logs += [report.stdout, report.stderr]
    assert report.returncode == 0, report.stderr[-2000:]
    # a URL carrying credentials is recorded without them
    con = connect(str(wh))
    write_bundle(tmp_path / "more", bundle_doc(seq=77))
    land_paths(con, [f"file://{tmp_path / 'more'}"])
    con.close()

    assert _grep_tree(bundles) == []
    assert _grep_warehouse(wh) == []
    assert _grep_tree(site) == []
    assert [i for i, text in enumerate(logs) if SECRET in text] == []


@pytest.mark.slow
def test_compare_flow_logs_hold_no_secret(tmp_path):
    """`costgap run` (the compare flow on Prefect's ephemeral API) at INFO level: its console log,
    the Prefect database holding the API's logs and artifacts, warehouse, site and results."""
    inbox = tmp_path / "inbox"
    write_bundle(inbox, bundle_doc(target="airgap", seq=5))
    targets = tmp_path / "targets.toml"
    targets.write_text(f'[[target]]\nid = "airgap"\ndispatch = "import"\ninbox = "{inbox}"\n')
    env = _env()
    env.pop("PREFECT_API_URL", None)
    env.update(PREFECT_LOGGING_LEVEL="INFO", PREFECT_HOME=str(tmp_path / "prefect-home"))
    prefect_template.seed(tmp_path / "prefect-home" / "prefect.db")  # migrated already: the logs are what is searched
    r = subprocess.run([*COSTGAP, "run", "--targets", "airgap", "--targets-file",
                        str(targets), "--warehouse", str(tmp_path / "wh.duckdb"), "--site", str(tmp_path / "site"),
                        "--results", str(tmp_path / "results")], cwd=REPO, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Beginning flow run" in r.stderr + r.stdout  # INFO logs were written, and searched
    assert SECRET not in r.stdout + r.stderr
    assert _grep_tree(tmp_path / "prefect-home") == []  # API logs, artifacts, flow run state
    db = sqlite3.connect(tmp_path / "prefect-home" / "prefect.db")
    try:
        assert db.execute("select count(*) from log").fetchall()[0][0] > 0
        assert db.execute("select count(*) from log where message like ?", [f"%{SECRET}%"]).fetchall() == [(0,)]
        assert db.execute("select count(*) from artifact where cast(data as text) like ?",
                          [f"%{SECRET}%"]).fetchall() == [(0,)]
    finally:
        db.close()
    assert _grep_warehouse(tmp_path / "wh.duckdb") == []
    assert _grep_tree(tmp_path / "site") == [] and _grep_tree(tmp_path / "results") == []


def _refused_alibaba(tmp_path: Path) -> Path:
    """The recorded Alibaba answers with every call refused by SignatureDoesNotMatch, whose real message
    quotes the string to sign, AccessKeyId included (tests/fixtures/alibaba/README.md)."""
    import json
    import shutil

    d = tmp_path / "alibaba-refused"
    shutil.copytree(REPO / "tests" / "fixtures" / "alibaba", d)
    index = json.loads((d / "index.json").read_text())
    (d / "index.json").write_text(json.dumps({k: ["errors/signature.json"] for k in index}))
    return d


@pytest.mark.slow
def test_cloud_price_credentials_reach_no_output(tmp_path):
    """`costgap prices refresh --source alibaba|tencent` with the SDKs' key variables planted: one landing,
    one refused key (the provider's message quotes it), then stdout, stderr, warehouse and results."""
    env, logs = _env(), []
    wh, results = tmp_path / "wh.duckdb", tmp_path / "results"
    targets = tmp_path / "targets.toml"
    targets.write_text('[[target]]\nid = "ali"\nprovider = "alibaba"\nregion = "cn-hangzhou"\n'
                       'instance_type = "ecs.gn7i-c8g1.2xlarge"\n'
                       '[[target]]\nid = "tc"\nprovider = "tencent"\nregion = "ap-guangzhou"\n'
                       'instance_type = "GN10Xp.2XLARGE40"\n')
    common = ["--targets-file", str(targets), "--warehouse", str(wh), "--results", str(results)]
    runs = [(["tencent", "--replay", str(REPO / "tests" / "fixtures" / "tencent")], 0),
            (["alibaba", "--replay", str(_refused_alibaba(tmp_path))], 1)]
    for args, expected in runs:
        r = subprocess.run([*COSTGAP, "prices", "refresh", "--source", *args, *common],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        logs += [r.stdout, r.stderr]
        assert r.returncode == expected, r.stdout + r.stderr
    assert "SignatureDoesNotMatch" in logs[-1] and "AccessKeyId%3D***" in logs[-1]  # the refusal, redacted
    assert [i for i, text in enumerate(logs) if SECRET in text] == []
    assert _grep_warehouse(wh) == [] and _grep_tree(results) == []


@pytest.mark.slow
def test_cloud_price_secret_blocks_reach_no_flow_log_or_artifact(tmp_path):
    """The prices flow reads the key pair from Prefect Secret blocks: neither its logs nor its artifact
    on the API, nor the warehouse or results, hold the values, even when the provider's message quotes one."""
    import asyncio

    from prefect.blocks.system import Secret
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, LogFilter, LogFilterFlowRunId

    from flows.prices import refresh_prices

    for name in ("secrettest-ali-id", "secrettest-ali-secret", "secrettest-tc-id", "secrettest-tc-secret"):
        Secret(value=SECRET).save(name, overwrite=True)
    sources = tmp_path / "sources.toml"
    sources.write_text('[daily]\nsources = []\n'
                       '[alibaba]\nbackoff_s = 0\n'
                       'secret_blocks = { key_id = "secrettest-ali-id", secret = "secrettest-ali-secret" }\n'
                       '[tencent]\nbackoff_s = 0\nimage_id = "img-487zeit5"\n'
                       'secret_blocks = { key_id = "secrettest-tc-id", secret = "secrettest-tc-secret" }\n'
                       '[tencent.zones]\n"ap-guangzhou" = "ap-guangzhou-3"\n')
    targets = tmp_path / "targets.toml"
    targets.write_text('[[target]]\nid = "ali"\nprovider = "alibaba"\nregion = "cn-hangzhou"\n'
                       'instance_type = "ecs.gn7i-c8g1.2xlarge"\n'
                       '[[target]]\nid = "tc"\nprovider = "tencent"\nregion = "ap-guangzhou"\n'
                       'instance_type = "GN10Xp.2XLARGE40"\n')
    wh, results = tmp_path / "wh.duckdb", tmp_path / "results"
    state = refresh_prices(names=["alibaba", "tencent"], warehouse=str(wh), results=str(results),
                           replay={"alibaba": str(_refused_alibaba(tmp_path)),
                                   "tencent": str(REPO / "tests" / "fixtures" / "tencent")},
                           sources_file=str(sources), targets_file=str(targets), return_state=True)
    assert state.is_failed() and "SignatureDoesNotMatch" in str(state.message)
    assert SECRET not in str(state.message)
    run_id = state.state_details.flow_run_id

    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all()  # logs are sent in batches: every one of this run's is stored before the search

    async def stored():
        async with get_client() as client:
            logs = await client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])))
            arts = await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run_id])))
        return [log.message for log in logs], [str(a.data) for a in arts]

    logs, artifacts = asyncio.run(stored())
    assert logs and artifacts  # the run logged and published its summary: both searched
    assert [m for m in logs + artifacts if SECRET in m] == []
    assert _grep_warehouse(wh) == [] and _grep_tree(results) == []
