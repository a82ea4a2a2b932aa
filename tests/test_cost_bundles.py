"""The cost model over bundles landed the real way (tests.factories -> tasks.landing.land), not inserted rows.

    .venv/bin/pytest -q tests/test_cost_bundles.py
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from tasks.cost.table import cost_table, gap
from tasks.landing.land import land_paths, record_prefect_attempts
from tests.cost_support import add_price
from tests.factories import BASE_TIME, bundle_doc, seal, write_bundle
from warehouse.db import connect


def test_landed_bundles_are_priced_and_costed(tmp_path):
    con = connect(str(tmp_path / "w.duckdb"))
    paths = []
    for i, (x, y) in enumerate([(1000.0, 500.0), (1100.0, 520.0), (900.0, 480.0)]):
        t = BASE_TIME + timedelta(days=i)
        paths.append(write_bundle(tmp_path / "b", bundle_doc("gpu-a", t, tokens_per_s=x, failed_attempts=int(i == 0),
                                                             seq=i)))
        paths.append(write_bundle(tmp_path / "b", bundle_doc("gpu-b", t, tokens_per_s=y, seq=10 + i)))
    summary = land_paths(con, [str(p) for p in paths])
    assert summary.ok and len(summary.landed) == 6, summary.as_text()
    record_prefect_attempts(con, [{"target": "gpu-b", "task": "finetune", "attempt": 1, "state": "crashed",
                                   "error_kind": "crash", "started_at": BASE_TIME + timedelta(days=1),
                                   "source_id": "flow-run-9", "duration_s": 3.0}])
    # deploy/targets.toml would say where each target runs; here the rows are set directly
    con.execute("update targets set provider = 'lambda', region = 'us-east-1', instance_type = 'gpu_1x_' || target,"
                " billing_mode = 'on_demand'")
    add_price(con, "lambda", "us-east-1", "gpu_1x_gpu-a", 2.0, effective_from=BASE_TIME - timedelta(days=1))
    add_price(con, "lambda", "us-east-1", "gpu_1x_gpu-b", 0.8, effective_from=BASE_TIME - timedelta(days=1))
    as_of = BASE_TIME + timedelta(days=5)
    rows = {r["target"]: r for r in cost_table(con, as_of=as_of).to_dicts()}
    a, b = rows["gpu-a"], rows["gpu-b"]
    assert (a["preset"], a["tokens_per_s"], a["runs"]) == ("tiny", 1000.0, 3)
    assert (a["attempts"], a["failed_attempts"]) == (4, 1)  # 3 completed fine-tunes + 1 failed (bundle source)
    assert (b["attempts"], b["failed_attempts"]) == (4, 1)  # 3 completed + 1 crashed (prefect source)
    assert a["cost_per_mtok"] == pytest.approx(2.0 / (3600 * 1000) * 1e6 * (1 + 0.5 * 0.25 / 0.75))
    g = gap(con, "gpu-a", "gpu-b", as_of=as_of)
    assert abs(sum(g["terms"].values()) - g["ln_ratio"]) <= 1e-9 and g["preset"] == "tiny"


def test_the_newest_runs_fine_tune_attempts_count_in_the_default_window(tmp_path):
    """A fine-tune attempt starts seconds after its run, and the default window ends at the newest run's
    start: the attempt is dated by its run (migration 065), so a first run counts its own attempts."""
    con = connect(str(tmp_path / "w.duckdb"))
    paths = []
    for i in range(2):
        doc = bundle_doc("gpu-a", BASE_TIME + timedelta(days=i), failed_attempts=1, seq=i)
        doc.pop("bundle_id")
        for a in doc["attempts"]:  # what the probe records: each attempt's own start, after the run's
            a["started_at"] = (BASE_TIME + timedelta(days=i, seconds=30 + a["attempt"])).isoformat()
        paths.append(write_bundle(tmp_path / "b", seal(doc)))
    assert land_paths(con, [str(p) for p in paths]).ok
    con.execute("update targets set provider = 'lambda', region = 'us-east-1', instance_type = 'x',"
                " billing_mode = 'on_demand'")
    add_price(con, "lambda", "us-east-1", "x", 2.0, effective_from=BASE_TIME - timedelta(days=1))
    (row,) = cost_table(con).to_dicts()  # the default window: 30 days to the newest run's start
    assert (row["runs"], row["attempts"], row["failed_attempts"]) == (2, 4, 2)
