"""The bad-input corpus (tests/corpus/): every case is refused with its expected outcome, the
message names the field, nothing of it lands, and the report escapes what it shows."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tasks.bundle import MAX_BUNDLE_BYTES
from tasks.landing.land import FACT_TABLES, land_paths
from tests.conftest import COSTGAP, REPO
from tests.factories import bundle_doc, write_bundle
from warehouse.db import connect

CORPUS = REPO / "tests" / "corpus"
MANIFEST = [c for c in json.loads((CORPUS / "manifest.json").read_text()) if (CORPUS / "cases" / c["file"]).exists()]


@pytest.fixture(scope="module")
def landed_corpus(tmp_path_factory):
    """The whole corpus landed once into a fresh warehouse (plus one good bundle as control)."""
    tmp = tmp_path_factory.mktemp("corpus")
    wh = str(tmp / "wh.duckdb")
    good = write_bundle(tmp / "good", bundle_doc(seq=4242))
    con = connect(wh)
    summary = land_paths(con, [str(CORPUS / "cases"), str(good)])
    rows = con.execute("select source_uri, kind, field, reason from quarantine").fetchall()
    facts = {t: con.execute(f"select count(*) from {t}").fetchall()[0][0] for t in FACT_TABLES}
    con.close()
    return summary, {Path(u).name: (k, f, r) for u, k, f, r in rows}, facts, wh


def test_manifest_covers_every_case_file():
    files = {p.name for p in (CORPUS / "cases").glob("*.json")}
    assert files == {c["file"] for c in MANIFEST} and len(files) >= 40


@pytest.mark.parametrize("case", MANIFEST, ids=[c["file"] for c in MANIFEST])
def test_case_refused_as_expected(landed_corpus, case):
    summary, recorded, _, _ = landed_corpus
    kind, field, reason = recorded[case["file"]]
    assert kind == case["outcome"]
    assert field.startswith(case["field"]), (field, reason)
    assert case["says"] in reason, reason
    shown = summary.rejected if kind == "rejected" else [(f, why) for f, _, why in summary.quarantined]
    assert any(Path(f).name == case["file"] and case["says"] in why for f, why in shown)


def test_nothing_of_the_corpus_lands(landed_corpus):
    summary, _, facts, _ = landed_corpus
    assert len(summary.landed) == 1  # only the control bundle
    assert facts["runs"] == 1 and facts["measurements"] == 2 and facts["telemetry"] == 0
    assert facts["attempts"] == 2 and facts["environments"] == 1


def test_500mb_file_refused_by_size_before_parsing(tmp_path, warehouse_file):
    huge = tmp_path / "huge_500mb.json"
    with open(huge, "wb") as fh:  # sparse: no disk or memory spent
        fh.write(b'{"schema_version": 1, ')
        fh.truncate(500 * 1024 * 1024)
    assert huge.stat().st_size > MAX_BUNDLE_BYTES
    con = connect(str(warehouse_file))
    s = land_paths(con, [str(huge)])
    (file, why), = s.rejected
    assert file == str(huge) and "larger than" in why and "not parsed" in why
    kind, field, raw = con.execute("select kind, field, raw from quarantine").fetchall()[0]
    assert (kind, field, raw) == ("rejected", "<file>", "")


def test_cli_over_corpus_names_every_file(landed_corpus, tmp_path):
    r = subprocess.run([*COSTGAP, "ingest", str(CORPUS / "cases"),
                        "--warehouse", str(tmp_path / "cli.duckdb")],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2  # user input refused (cli/commands/__init__.py)
    assert "Traceback" not in r.stdout + r.stderr
    first = r.stdout.splitlines()[0]
    n_q = sum(c["outcome"] == "quarantined" for c in MANIFEST)
    assert first == f"landed 0, duplicates 0, quarantined {n_q}, rejected {len(MANIFEST) - n_q}"
    for case in MANIFEST:
        assert case["file"] in r.stdout


def test_report_escapes_hostile_text(landed_corpus, tmp_path):
    from flows.report import build_site
    _, _, _, wh = landed_corpus
    doc = bundle_doc(seq=4343, environment=dict(bundle_doc()["environment"],
                                                  cpu_model="<img src=x onerror=alert(2)>"),
                     attempts=[{"task": "gemm", "attempt": 1, "state": "failed", "error_kind": "other",
                                "message": "<script>alert(3)</script>", "duration_s": 1.0},
                               {"task": "gemm", "attempt": 2, "state": "completed", "duration_s": 1.0}])
    con = connect(wh)
    assert land_paths(con, [str(write_bundle(tmp_path / "in", doc))]).ok
    con.close()
    site = tmp_path / "site"
    build_site(wh, str(site), images=False)
    pages = list(site.rglob("*.html"))
    assert pages
    for page in pages:
        html = page.read_text(encoding="utf-8")
        for raw in ("<img src=x onerror", "<script>alert", "'); drop table runs;--"):
            assert raw not in html, (page.name, raw)
