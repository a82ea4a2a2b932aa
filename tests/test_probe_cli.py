"""End to end: `python -m tasks.probe --profile quick` in a subprocess, as a GPU host runs it.

    .venv/bin/pytest -q tests/test_probe_cli.py

Proves the probe path never imports prefect, duckdb, polars, pydantic or pandas (an import hook
records every `import` statement, and sys.modules is read at exit), that the bundle it writes
passes tasks.bundle.read_bundle, and that every task left an attempt.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.bundle import read_bundle
from tests.probe_contract import contract

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "fixtures" / "probe_quick_cpu_contract.json"  # written by the pre-move probe;
# issue 45 added its parts (numa, storage path, wait share, gpu_busy, sharing) and probe version 0.5.0
FORBIDDEN = ("prefect", "duckdb", "polars", "pydantic", "pandas")
WRAPPER = r"""
import builtins, json, runpy, sys
FORBIDDEN = set(sys.argv[1].split(","))
seen = set()
_orig = builtins.__import__
def spy(name, globals=None, locals=None, fromlist=(), level=0):
    if level == 0 and name.split(".")[0] in FORBIDDEN:
        seen.add(name)
    return _orig(name, globals, locals, fromlist, level)
builtins.__import__ = spy
sys.argv = ["tasks.probe", *sys.argv[2:]]
rc = 0
try:
    runpy.run_module("tasks.probe", run_name="__main__", alter_sys=True)
except SystemExit as e:
    rc = e.code or 0
finally:
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN)
    sys.stderr.write("IMPORT-REPORT " + json.dumps({"imported": sorted(seen), "loaded": loaded}) + "\n")
sys.exit(rc)
"""


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundles")
    data = tmp_path_factory.mktemp("data")
    proc = subprocess.run(
        [sys.executable, "-c", WRAPPER, ",".join(FORBIDDEN), "--profile", "quick", "--target",
         "local", "--out", str(out), "--data-dir", str(data)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    return proc, out, data


@pytest.mark.slow
def test_quick_probe_imports_no_warehouse_stack(quick_run):
    proc, _, _ = quick_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(l for l in proc.stderr.splitlines() if l.startswith("IMPORT-REPORT "))
    report = json.loads(line[len("IMPORT-REPORT "):])
    assert report == {"imported": [], "loaded": []}, report


@pytest.mark.slow
def test_quick_bundle_validates_and_records_every_task(quick_run):
    proc, out, data = quick_run
    path = Path(proc.stdout.strip().splitlines()[-1])
    assert path.parent == out and path.exists() and path.name == f"{path.stem}.json"
    b = read_bundle(path)
    assert b.profile == "quick" and b.target == "local" and b.schema_version == 1
    assert b.environment.cpu_cores and b.environment.torch
    tasks = {a.task for a in b.attempts}
    for t in ("environment", "gemm:fp32", "gemm:mm2048", "gemm_sustained", "gemm_sustained:fixed",
              "memory", "hostdev", "numa", "storage", "feed", "allreduce", "gpu_busy", "sharing:tiny"):
        assert t in tasks, t
    assert any(t.startswith("finetune") for t in tasks)
    metrics = {(m.benchmark, m.metric) for m in b.measurements}
    for bm in (("gemm", "fp32_tflops"), ("memory", "copy_gbps"), ("storage", "seq_read_gbps"),
               ("feed", "next_latency_ms_p95"), ("numa", "numa_nodes"), ("storage", "read4k_qd1_p99_ms"),
               ("storage", "read4k_qd32_p50_ms"), ("storage", "io_uring"), ("feed", "wait_share")):
        assert bm in metrics, bm
    share = next(a for a in b.attempts if a.task == "sharing:tiny")  # two jobs on one card: no card here
    if b.environment.gpu_count == 0:
        assert share.state == "not_applicable" and "no GPU" in share.message, share
    if b.environment.gpu_count == 0:
        assert next(a for a in b.attempts if a.task == "allreduce").state == "not_applicable"
        assert next(a for a in b.attempts if a.task == "hostdev").state == "not_applicable"
    assert list(data.iterdir()) == []  # storage files removed


@pytest.mark.slow
def test_quick_bundle_keeps_the_contract_the_probe_had_before_it_moved(quick_run):
    """Same profile, seeds and CPU host: schema and probe versions, the field names at every level,
    each benchmark's version and params. A fine-tune that a loaded box timed out lacks its measured
    fields (fewer, never others); one that finished has exactly the golden's."""
    proc, _, _ = quick_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(Path(proc.stdout.strip().splitlines()[-1]).read_text())
    if doc["environment"]["gpu_count"]:
        pytest.skip("the golden contract is a CPU host's; a GPU host measures more")
    got, want = contract(doc), json.loads(GOLDEN.read_text())
    (got_ft,), (want_ft,) = got.pop("finetune"), want.pop("finetune")
    assert got == want
    (got_head, got_fields), (want_head, want_fields) = got_ft.split(": "), want_ft.split(": ")
    assert got_head.split()[0] == want_head.split()[0]
    if got_head == want_head:
        assert got_fields == want_fields
    assert set(got_fields.split(",")) <= set(want_fields.split(","))


def test_bad_profile_is_a_usage_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tasks.probe", "--profile", "weekly", "--out",
                           str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "invalid choice: 'weekly'" in proc.stderr


@pytest.mark.slow  # the probe in a subprocess
def test_bad_skip_names_the_field(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tasks.probe", "--skip", "gpu", "--out",
                           str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "skip = ['gpu']" in proc.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # the probe in a subprocess
def test_presets_flag_runs_the_new_presets_not_applicable_on_cpu(tmp_path):
    """`--presets 8b-qlora,bert-large` on this CPU box: a valid bundle, both not_applicable with
    their reasons; an unknown preset is a usage error before anything runs."""
    hw = "gemm,gemm_sustained,memory,hostdev,numa,storage,feed,allreduce,sharing"
    proc = subprocess.run([sys.executable, "-m", "tasks.probe", "--profile", "quick", "--skip", hw,
                           "--presets", "8b-qlora,bert-large", "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    b = read_bundle(Path(proc.stdout.strip().splitlines()[-1]))
    got = {f.preset: (f.status, f.message) for f in b.finetune}
    assert set(got) == {"8b-qlora", "bert-large"}
    assert all(s == "not_applicable" and "needs a CUDA GPU" in m for s, m in got.values()), got
    bad = subprocess.run([sys.executable, "-m", "tasks.probe", "--presets", "13b", "--out", str(tmp_path / "x")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "unknown fine-tune preset '13b'" in bad.stderr


@pytest.mark.slow
def test_quick_bundle_lands_and_its_host_rules_are_judged(quick_run, tmp_path):
    """Issue 45 on this CPU host: the NUMA, storage and feed parts ran, so their verdicts are pass or fail
    (never "not measured"), and every GPU rule says "not measured", never pass."""
    from tasks.cost.well_used import NOT_MEASURED, RULES, verdicts
    from tasks.landing.land import land_paths
    from warehouse.db import connect

    proc, out, _ = quick_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    con = connect(str(tmp_path / "wh.duckdb"))
    try:
        assert land_paths(con, [str(out)]).ok
        got = {v["rule"]: v for v in verdicts(con)["local"]}
        gpu = read_bundle(Path(proc.stdout.strip().splitlines()[-1])).environment.gpu_count
    finally:
        con.close()
    for rule in RULES:
        v = got[rule.key]
        if rule.gpu and not gpu:
            assert v["verdict"] == NOT_MEASURED and v["value_text"] == "no GPU on this host", v
        elif rule.key in ("numa", "feed") or (rule.key == "await" and "tmpfs" not in v["value_text"]):
            assert v["verdict"] in ("pass", "fail") and v["figure"], v
